"""A tiny CUDA grid simulator: run a kernel written in CUDA's thread model on the CPU.

A CUDA kernel is one function that every thread runs; each thread finds its work from
``blockIdx``, ``blockDim`` and ``threadIdx``. ``launch`` runs such a function for every
(block, thread) pair, one after another, so the indexing can be seen and tested on a
machine without a GPU. It is for learning, not speed: a real GPU runs the threads at once.

See also the chapter "What a GPU is" (``book/gpu_basics.md``), "Grids, blocks and threads".
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpulab._checks import non_negative_int, positive_int

__all__ = ["Dim3", "ThreadContext", "launch", "thread_map"]

_MAX_THREADS_PER_BLOCK = 1024  # the CUDA limit on every GPU since compute capability 2.0


@dataclass(frozen=True)
class Dim3:
    """CUDA's ``dim3``: a size or an index in up to three dimensions (integers of 0 or more)."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            non_negative_int(axis, getattr(self, axis))

    @classmethod
    def of(cls, value: int | tuple[int, ...] | Dim3, name: str) -> Dim3:
        """A size from an int, a tuple of 1 to 3 ints or a Dim3, each at least 1."""
        if isinstance(value, Dim3):
            dims = (value.x, value.y, value.z)
        elif isinstance(value, (tuple, list)):
            dims = tuple(value)
        else:
            dims = (value,)
        ok = 1 <= len(dims) <= 3
        try:
            ok = ok and all(positive_int(name, d) for d in dims)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name}={value!r} must be 1 to 3 positive integers, e.g. 4 or (4, 2)")
        return cls(*dims)

    @property
    def size(self) -> int:
        return self.x * self.y * self.z


@dataclass(frozen=True)
class ThreadContext:
    """What one thread can see: CUDA's built-in variables."""

    blockIdx: Dim3  # noqa: N815 - CUDA's names, kept so kernels read like CUDA C
    threadIdx: Dim3  # noqa: N815
    blockDim: Dim3  # noqa: N815
    gridDim: Dim3  # noqa: N815

    def __post_init__(self) -> None:
        for name in ("blockIdx", "threadIdx", "blockDim", "gridDim"):
            if not isinstance(getattr(self, name), Dim3):
                raise ValueError(f"{name}={getattr(self, name)!r} must be a Dim3")

    @property
    def global_x(self) -> int:
        """``blockIdx.x * blockDim.x + threadIdx.x``: the usual 1-D element index."""
        return self.blockIdx.x * self.blockDim.x + self.threadIdx.x


def _indices(dims: Dim3):
    for z, y, x in itertools.product(range(dims.z), range(dims.y), range(dims.x)):
        yield Dim3(x, y, z)


def launch(kernel: Callable[..., None], grid, block, *args) -> None:
    """Run ``kernel(ctx, *args)`` for every thread of every block: ``kernel<<<grid, block>>>``.

    Parameters
    ----------
    kernel : callable
        ``kernel(ctx, *args)``; ``ctx`` is a :class:`ThreadContext`. Writes its results
        into array arguments, as a CUDA kernel does.
    grid, block : int or tuple of int
        Blocks in the grid and threads per block (at most 1024 threads per block).

    Examples
    --------
    >>> import numpy as np, gpulab as gl
    >>> def add(ctx, a, b, out, n):
    ...     i = ctx.global_x
    ...     if i < n:
    ...         out[i] = a[i] + b[i]
    >>> a, b, out = np.arange(5.0), np.ones(5), np.zeros(5)
    >>> gl.launch(add, 2, 4, a, b, out, 5)
    >>> out
    array([1., 2., 3., 4., 5.])
    """
    if not callable(kernel):
        raise ValueError(f"kernel={kernel!r} must be a function kernel(ctx, *args)")
    grid_dim, block_dim = Dim3.of(grid, "grid"), Dim3.of(block, "block")
    if block_dim.size > _MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"block={block!r} has {block_dim.size} threads; CUDA allows at most "
            f"{_MAX_THREADS_PER_BLOCK} per block"
        )
    for block_idx in _indices(grid_dim):
        for thread_idx in _indices(block_dim):
            kernel(ThreadContext(block_idx, thread_idx, block_dim, grid_dim), *args)


def thread_map(n: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Which block and which thread handle each of ``n`` elements in a 1-D launch.

    The launch uses ``ceil(n / block)`` blocks, the usual choice; threads past ``n`` idle.

    Returns
    -------
    block_of, thread_of : ndarray of int
        ``block_of[i]`` and ``thread_of[i]`` are the block and thread that handle element i.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.thread_map(6, 4)
    (array([0, 0, 0, 0, 1, 1]), array([0, 1, 2, 3, 0, 1]))
    """
    n = positive_int("n", n)
    block = positive_int("block", block)  # launch() checks the upper limit
    block_of = np.full(n, -1)
    thread_of = np.full(n, -1)

    def record(ctx: ThreadContext) -> None:
        i = ctx.global_x
        if i < n:
            block_of[i], thread_of[i] = ctx.blockIdx.x, ctx.threadIdx.x

    launch(record, -(-n // block), block)
    return block_of, thread_of
