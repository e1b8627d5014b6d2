"""Kernels of the chapter "Inside a fast kernel": the simulator that counts them, the kernels,
and the launch arithmetic.

* :mod:`gpulab.kernels.simulator`: runs kernels written in Numba's CUDA language on a CPU,
  thread by thread, and counts memory sectors, bank conflicts and active lanes
  (:func:`simulate`, :func:`launch`, :func:`thread_map`);
* :mod:`gpulab.kernels.occupancy`: occupancy of an SM and the waves of a tiled matmul;
* :mod:`gpulab.kernels.tiling`: global-memory loads of a tiled matmul, counted;
* :mod:`gpulab.kernels.cuda_kernels`: thread-level kernels in Numba's CUDA kernel
  language (copies with a stride, matrix multiplies with and without shared-memory tiles,
  a shared-memory transpose). The simulator runs and counts them on any CPU;
  ``numba.cuda.jit`` compiles the same functions for an NVIDIA GPU.
* :mod:`gpulab.kernels.triton_kernels`: block-level kernels in Triton (vector add, fused
  softmax, tiled matmul, fused bias + GELU). They run under Triton's interpreter
  (``TRITON_INTERPRET=1``) on a CPU and are compiled on a GPU.
* :mod:`gpulab.kernels.faults`: the bugs strict simulation reports (races, out-of-bounds
  indices, barriers not every thread reaches, unsupported parts of CUDA);
* the kernel gym: :mod:`gpulab.kernels.gym_tasks` (what each task's kernel must compute and
  count), :mod:`gpulab.kernels.gym` (``grade_kernel``: run, check, count, advise) and
  :mod:`gpulab.kernels.gym_triton` (``grade_triton`` for the Triton steps). The worked
  solutions are in the gym labs, not here.

``import gpulab`` imports none of them.
"""

from __future__ import annotations

from gpulab._lazy import submodule_loader

_MODULES = (
    "cuda_kernels",
    "faults",
    "gym",
    "gym_tasks",
    "gym_triton",
    "occupancy",
    "simulator",
    "tiling",
    "triton_kernels",
)


__getattr__, __dir__ = submodule_loader(__name__, _MODULES)
