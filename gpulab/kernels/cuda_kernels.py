"""Thread-level kernels in Numba's CUDA kernel language: one source, CPU simulator or GPU.

Each function here is a CUDA kernel written in Python the way ``numba.cuda.jit`` expects.
:func:`gpulab.simulate` runs it on a CPU and counts its memory accesses; on a machine with
an NVIDIA GPU and Numba, :func:`compile_for_gpu` compiles the very same function.
Kernels whose shared-memory tile size is a compile-time constant come from a factory
(``tiled_matmul(16)``), as in CUDA C++ where the tile is a template parameter.

The CUDA C++ listings in the chapter "Inside a fast kernel" are the same kernels.

Examples
--------
>>> import numpy as np, gpulab as gl
>>> from gpulab.kernels import cuda_kernels as ck
>>> a = np.arange(16, dtype=np.float32).reshape(4, 4)
>>> out = np.zeros_like(a)
>>> counts = gl.simulate(ck.transpose_shared(4, padded=True), (1, 1), (4, 4), a, out, 4)
>>> bool((out == a.T).all()), counts.bank_conflicts
(True, 0)
"""

from __future__ import annotations

import functools
import importlib.util

try:  # numba-cuda's redirect of ``numba.cuda`` to its own target, which a .pth file sets up
    import _numba_cuda_redirector  # noqa: F401 - only when Python starts: not after a %pip
except ImportError:
    pass
try:  # only for compiling on a GPU; the simulator supplies its own ``cuda``
    from numba import cuda, float32
except ImportError:  # pragma: no cover - Numba is optional
    cuda = None
    from numpy import float32

__all__ = [
    "as_cuda_arrays",
    "compile_for_gpu",
    "copy_gather",
    "copy_strided",
    "install_hint",
    "matmul_naive",
    "not_run",
    "time_launch",
    "numba_cuda_available",
    "numba_cuda_missing_reason",
    "tiled_matmul",
    "transpose_shared",
]


def copy_strided(src, dst, stride):
    """``dst[i] = src[(i * stride) % len(src)]``: thread i reads ``stride`` elements apart.

    Stride 1 is coalesced: a warp's 32 neighbouring threads read 32 neighbouring floats.
    """
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[(i * stride) % src.shape[0]]


def copy_gather(src, dst, index):
    """``dst[i] = src[index[i]]``: a gather through an index array (random when it is)."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[index[i]]


def matmul_naive(A, B, C, n):  # noqa: N803 - matrix names as in the chapter
    """``C = A @ B`` for n x n matrices, one thread per element of C, no reuse."""
    row, col = cuda.grid(2)[1], cuda.grid(2)[0]
    if row < n and col < n:
        acc = float32(0.0)
        for k in range(n):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def tiled_matmul(tile: int, *, barrier: bool = True):
    """``C = A @ B`` with ``tile`` x ``tile`` tiles of A and B staged in shared memory.

    Launch with ``block=(tile, tile)`` and the grid rounded up,
    ``grid=(ceil(n / tile), ceil(n / tile))``; any ``n`` works. Where a tile overhangs the
    matrices' edge its elements outside them are loaded as zeros (adding nothing to a dot
    product), and only threads inside C store. Each element of A and B is read from global
    memory ``ceil(n / tile)`` times instead of ``n`` times: ``2 n² ceil(n / tile)`` loads in
    all (``gpulab.kernels.tiling.tile_loads``). ``barrier=False`` leaves out the two
    ``syncthreads``: the bug the chapter demonstrates.

    Examples
    --------
    >>> import numpy as np, gpulab as gl
    >>> n, t = 10, 4  # 4 x 4 tiles do not divide 10: a grid of 3 x 3 blocks
    >>> A = np.arange(n * n, dtype=np.float32).reshape(n, n) / 100
    >>> B = np.ones((n, n), dtype=np.float32)
    >>> C = np.zeros((n, n), dtype=np.float32)
    >>> c = gl.simulate(tiled_matmul(t), (3, 3), (t, t), A, B, C, n)
    >>> bool(np.allclose(C, A @ B)), c.global_loads == 2 * n**2 * 3
    (True, True)
    """

    def kernel(A, B, C, n):  # noqa: N803
        sA = cuda.shared.array((tile, tile), float32)  # noqa: N806
        sB = cuda.shared.array((tile, tile), float32)  # noqa: N806
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        acc = float32(0.0)
        for t in range((n + tile - 1) // tile):  # ceil(n / tile) tiles along k
            ka = t * tile + tx  # the column of A and the row of B this thread loads
            kb = t * tile + ty
            if row < n and ka < n:
                sA[ty, tx] = A[row, ka]
            else:
                sA[ty, tx] = float32(0.0)  # outside A: a zero adds nothing to the sum
            if kb < n and col < n:
                sB[ty, tx] = B[kb, col]
            else:
                sB[ty, tx] = float32(0.0)
            if barrier:  # a constant of the closure: every thread takes the same branch
                cuda.syncthreads()  # the whole tile is loaded before anyone reads it
            for k in range(tile):
                acc += sA[ty, k] * sB[k, tx]
            if barrier:
                cuda.syncthreads()  # everyone is done with it before it is overwritten
        if row < n and col < n:  # every thread reached the barriers; those inside C store
            C[row, col] = acc

    kernel.__name__ = f"tiled_matmul_{tile}" + ("" if barrier else "_no_barrier")
    return kernel


def transpose_shared(tile: int, *, padded: bool):
    """``out = a.T`` through a ``tile`` x ``tile`` shared-memory tile.

    A warp writes a row of the tile and reads a column. Without padding the column's 32
    words sit in the same bank (a 32-way conflict); one extra column (``tile + 1``) moves
    each row by one bank, and the conflict disappears. Launch with ``block=(tile, tile)``
    and ``grid=(n // tile, n // tile)``.
    """
    width = tile + 1 if padded else tile

    def kernel(a, out, n):
        s = cuda.shared.array((tile, width), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        bx, by = cuda.blockIdx.x * tile, cuda.blockIdx.y * tile
        s[ty, tx] = a[by + ty, bx + tx]  # coalesced read of a row of a
        cuda.syncthreads()
        out[bx + ty, by + tx] = s[tx, ty]  # coalesced write; the tile is read by column

    kernel.__name__ = f"transpose_{'padded' if padded else 'unpadded'}_{tile}"
    return kernel


def numba_cuda_available() -> bool:
    """Whether Numba is installed, sees a CUDA GPU, and can compile and run a kernel on it.

    A driver alone is not enough: Numba compiles kernels with NVVM, which comes with the CUDA
    toolkit, not the driver, and a machine may have one without the other. So the first call
    compiles a one-line kernel and runs it once; the answer is kept for the rest of the
    session. :func:`numba_cuda_missing_reason` says why the answer is no.

    Examples
    --------
    >>> from gpulab.kernels import cuda_kernels as ck
    >>> ck.numba_cuda_available() == (ck.numba_cuda_missing_reason() == "")
    True
    """
    return _numba_cuda_status()[0]


def numba_cuda_missing_reason() -> str:
    """Why :func:`numba_cuda_available` is False, in one sentence ('' where it is True).

    Examples
    --------
    >>> from gpulab.kernels import cuda_kernels as ck
    >>> isinstance(ck.numba_cuda_missing_reason(), str)
    True
    """
    return _numba_cuda_status()[1]


def _one(out):  # the smallest kernel there is: thread 0 writes one number
    if cuda.grid(1) == 0:
        out[0] = 1.0


def _compile_trivial_kernel() -> None:
    """Compile :func:`_one` for the GPU at hand and run it once; raise what Numba raises."""
    import numpy as np

    kernel = cuda.jit("void(float32[:])")(_one)  # a signature: compiled here, not at launch
    out = cuda.to_device(np.zeros(1, dtype=np.float32))
    kernel[1, 1](out)
    cuda.synchronize()
    if out.copy_to_host()[0] != 1.0:
        raise RuntimeError("a one-line kernel ran but did not write its result")


def _torch_cuda_major() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    version = torch.version.cuda
    return version.split(".")[0] if version else None


def install_hint() -> str:
    """The command that installs Numba's CUDA target for this machine's CUDA, in words.

    numba-cuda (Numba's own ``numba.cuda`` is deprecated in its favour) with the CUDA
    libraries of torch's CUDA major: NVVM to compile, nvJitLink to link for a driver older
    than those libraries. The extras ``kernels-cu12`` and ``kernels-cu13`` of the course
    package name the same requirement.

    Examples
    --------
    >>> from gpulab.kernels import cuda_kernels as ck
    >>> "numba-cuda[cu" in ck.install_hint()
    True
    """
    major = _torch_cuda_major()
    extra = f"cu{major}" if major in ("12", "13") else "cu12 or cu13, your CUDA's major"
    return (
        f'pip install "numba-cuda[{extra}]>=0.22" and restart Python (on Colab: '
        "Runtime > Restart session), then run the lab again"
    )


def _numba_cuda_installed() -> bool:
    """Whether the numba-cuda package (not only Numba's own, deprecated target) is here."""
    return importlib.util.find_spec("numba_cuda") is not None


def _remedy(message: str) -> str:
    """What to do about a failed compile-and-run of the probe kernel, from Numba's message."""
    lower = message.lower()
    if not _numba_cuda_installed():
        return (
            "Numba's own CUDA target is deprecated and needs a CUDA toolkit's NVVM no newer "
            f"than the driver: {install_hint()}"
        )
    if "unsupported_ptx_version" in lower or "ptx version" in lower:
        return (
            "the driver is older than the CUDA libraries that compiled the kernel, and "
            "nvJitLink 12.3 or later, which links for it, is missing: reinstall with "
            f"{install_hint()}, or update the NVIDIA driver"
        )
    if "nvvm" in lower:
        return (
            "Numba compiles with NVVM, which comes with the CUDA toolkit, not the driver: "
            f"{install_hint()}"
        )
    return f"check numba-cuda's installation for this CUDA version: {install_hint()}"


@functools.cache
def _numba_cuda_status() -> tuple[bool, str]:
    """(available, reason), worked out once: the driver first, then a compile and a run."""
    if cuda is None:
        if _torch_cuda_major() is not None:  # a CUDA build of torch: a GPU machine
            return False, f"Numba is not installed: {install_hint()}"
        return False, "Numba is not installed (pip install numba)"
    try:
        driver = bool(cuda.is_available())
    except Exception as exc:  # noqa: BLE001 - a broken driver means "no"
        return False, f"Numba could not ask the CUDA driver for a GPU ({_first_line(exc)})"
    if not driver:
        return False, "Numba sees no CUDA GPU (no NVIDIA GPU here, or no CUDA driver for it)"
    try:
        _compile_trivial_kernel()
    except Exception as exc:  # noqa: BLE001 - any failure here would fail the lab's launches
        return False, (
            f"Numba sees a CUDA GPU but cannot compile a kernel for it ({_first_line(exc)}); "
            f"{_remedy(str(exc))}"
        )
    return True, ""


def not_run(what: str) -> str:
    """One sentence for a cell that runs Numba kernels on a GPU and cannot here.

    ``what`` says what the cell does instead. Without a GPU that is all there is to say;
    on a GPU where Numba cannot run a kernel, the sentence says so and points to the
    remedy that :func:`numba_cuda_missing_reason` gives, so that no GPU cell is skipped
    without a word.

    Examples
    --------
    >>> from gpulab.kernels import cuda_kernels as ck
    >>> sentence = ck.not_run("predictions only")
    >>> sentence == "" if ck.numba_cuda_available() else sentence.endswith(": predictions only.")
    True
    """
    if not isinstance(what, str):
        raise TypeError(f"what={what!r} must be a str saying what the cell does instead")
    if numba_cuda_available():
        return ""
    if _numba_cuda_status()[1].startswith("Numba sees a CUDA GPU"):
        where = "This GPU cannot run Numba's kernels yet (section 0 says why and what to install)"
    else:
        where = "No GPU with Numba here"
    return f"{where}: {what}."


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def compile_for_gpu(kernel):
    """``numba.cuda.jit(kernel)``: the same function, compiled for the GPU.

    Raises
    ------
    RuntimeError
        Where Numba cannot compile for a GPU here, with the reason
        (check :func:`numba_cuda_available` first).
    """
    if not numba_cuda_available():
        raise RuntimeError(
            f"compiling for a GPU is not possible here: {numba_cuda_missing_reason()}"
        )
    return cuda.jit(kernel)


def time_launch(kernel, grid, block, *args, min_run_time_s: float = 0.2, label: str = ""):
    """Time ``kernel[grid, block](*args)`` on the GPU with :func:`gpulab.benchmark`.

    Numba turns each argument that is another library's GPU array (a torch CUDA tensor, a
    CuPy array) into a view of its own through ``cuda.as_cuda_array`` at every launch, a
    fixed cost per argument that a fast kernel's time would include. Here each is turned
    into that view once, before the timing, so the timed calls launch the kernel alone.
    The views share the tensors' memory: what the kernel writes, the tensors hold.

    Parameters
    ----------
    kernel : callable
        A kernel of this module (compiled here with :func:`compile_for_gpu`) or one
        compiled already.
    grid, block : int or tuple of int
        The launch configuration.
    *args
        The kernel's arguments: GPU arrays and scalars.
    min_run_time_s, label
        As for :func:`gpulab.benchmark`.

    Returns
    -------
    gpulab.BenchResult

    Raises
    ------
    RuntimeError
        Where Numba cannot run a kernel on a GPU here, with the reason.
    """
    from gpulab.measure.bench import benchmark

    compiled = kernel if hasattr(kernel, "py_func") else compile_for_gpu(kernel)
    views = as_cuda_arrays(args)
    launch = compiled[grid, block]
    return benchmark(lambda: launch(*views), min_run_time_s=min_run_time_s, label=label)


def as_cuda_arrays(values) -> list:
    """The values with each GPU array (a torch CUDA tensor, a CuPy array: anything with
    ``__cuda_array_interface__``) seen as a Numba device array over the same memory.

    A Numba launch converts such an array through ``cuda.as_cuda_array`` on every call, tens
    of microseconds each, which a timing of a short kernel on a fast GPU would count;
    converted once, before the timed calls, the launches pass device arrays. Anything else
    (a scalar, a CPU tensor) is returned as it is.
    """
    return [cuda.as_cuda_array(v) if hasattr(v, "__cuda_array_interface__") else v
            for v in values]
