"""Kernels of the chapter "Inside a fast kernel", written once and run in two places.

* :mod:`gpulab.kernels.cuda_kernels`: thread-level kernels in Numba's CUDA kernel
  language (copies with a stride, matrix multiplies with and without shared-memory tiles,
  a shared-memory transpose). :func:`gpulab.simulate` runs and counts them on any CPU;
  ``numba.cuda.jit`` compiles the same functions for an NVIDIA GPU.
* :mod:`gpulab.kernels.triton_kernels`: block-level kernels in Triton (vector add, fused
  softmax, tiled matmul, fused bias + GELU). They run under Triton's interpreter
  (``TRITON_INTERPRET=1``) on a CPU and are compiled on a GPU.

Neither module is imported by ``import gpulab``.
"""
