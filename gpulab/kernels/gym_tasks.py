"""The kernel gym's tasks: what each kernel must compute, how it is launched, what it should count.

Each :class:`Task` fixes a kernel's signature and launch (grid and block as functions of the
problem's shape), the shapes it is graded on (awkward ones included: 1, sizes that the block
does not divide, tall and wide), how its inputs are made, a reference result computed with
NumPy, and the counts it should reach on one *count shape*, each with the sentence that
says what to change when it does not. :func:`gpulab.kernels.gym.grade_kernel` runs them.

The tasks follow the chapter "Inside a fast kernel" (``book/kernels.md``) and its gym labs;
the worked solutions live with the labs, not in this package.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpulab.kernels.simulator import WARP_SIZE, KernelCounts

__all__ = [
    "TASKS",
    "UNWRITTEN_BITS",
    "UNWRITTEN_BITS_64",
    "unwritten",
    "unwritten_like",
    "Target",
    "Task",
    "attention_bytes",
    "coarse_task",
    "custom_task",
    "get_task",
    "reference_parts",
]

_F32 = np.float32


@dataclass(frozen=True)
class Target:
    """A count a kernel should reach on its task's count shape.

    Attributes
    ----------
    name : str
        What is counted, e.g. ``"sectors per warp load of src"``.
    measure : callable
        ``measure(counts, shape) -> float``.
    goal : callable
        ``goal(shape) -> float``: the target value.
    at_most : bool
        True when the count should be at most the goal, False when at least.
    advice : str
        One sentence for when the target is missed; ``{value}`` and ``{goal}`` are filled in.
    percent : bool
        The count is a fraction, shown as a percentage.
    """

    name: str
    measure: Callable[[KernelCounts, tuple], float]
    goal: Callable[[tuple], float]
    at_most: bool
    advice: str
    percent: bool = False

    def met(self, value: float, goal: float) -> bool:
        """Whether ``value`` reaches ``goal`` (a relative slack of 1e-9 for rounding)."""
        slack = 1e-9 * max(1.0, abs(goal))
        return value <= goal + slack if self.at_most else value >= goal - slack


@dataclass(frozen=True)
class Task:
    """One step of the gym: a kernel's contract and what it should count.

    Attributes
    ----------
    name, title : str
        The key (``"copy"``) and a heading.
    args : tuple of str
        The kernel's parameters, in order.
    shapes : tuple of tuple
        Problem shapes the kernel is graded on; the last is the count shape.
    describe : callable
        ``describe(shape) -> str``, e.g. ``"n = 33"``.
    inputs : callable
        ``inputs(shape, rng) -> dict`` of every argument (outputs filled with NaN, so that
        an element the kernel never writes shows).
    outputs : tuple of str
        The arguments the kernel writes and the grader compares.
    reference : callable
        ``reference(args) -> dict`` of the expected outputs, from NumPy.
    launch : callable
        ``launch(shape) -> (grid, block)``.
    targets : tuple of Target
        Counts to reach on the count shape.
    rtol, atol : float
        Tolerances of the comparison (sums in another order round differently).
    torch_op : callable or None
        ``torch_op(tensors) -> tensor``: what torch computes for the same task, for timing
        on a GPU against the kernel's first output (None for a task of one's own).
    gpu_shape : tuple
        The shape timed on a GPU.
    """

    name: str
    title: str
    args: tuple[str, ...]
    shapes: tuple[tuple, ...]
    describe: Callable[[tuple], str]
    inputs: Callable[[tuple, np.random.Generator], dict]
    outputs: tuple[str, ...]
    reference: Callable[[dict], dict]
    launch: Callable[[tuple], tuple]
    targets: tuple[Target, ...]
    rtol: float
    atol: float
    torch_op: Callable[[dict], object] | None
    gpu_shape: tuple

    @property
    def count_shape(self) -> tuple:
        """The shape whose counts are compared with the targets."""
        return self.shapes[-1]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _per_request(counts: KernelCounts, array: str, kind: str) -> float:
    row = counts.by_array.get((array, kind))
    return row["sectors"] / row["requests"] if row else 0.0


def _efficiency(counts: KernelCounts, array: str, kind: str) -> float:
    row = counts.by_array.get((array, kind))
    return row["ideal_sectors"] / row["sectors"] if row and row["sectors"] else 0.0


def _accesses(counts: KernelCounts, array: str, kind: str) -> int:
    row = counts.by_array.get((array, kind))
    return row["accesses"] if row else 0


def _requests(counts: KernelCounts, array: str, kind: str) -> int:
    row = counts.by_array.get((array, kind))
    return row["requests"] if row else 1


def _shared_loads(counts: KernelCounts) -> int:
    return sum(
        row["accesses"]
        for (_, kind), row in counts.by_array.items()
        if kind == "load" and row["space"] == "shared"
    )


#: What an output holds before the kernel runs: a NaN with its own bit pattern, so that an
#: element no thread wrote can be told from a NaN the kernel computed (0/0, inf - inf).
UNWRITTEN_BITS = 0x7FC0BEEF
#: The same marker for float64 outputs.
UNWRITTEN_BITS_64 = 0x7FF8_0000_BEEF_BEEF
_MARKERS = {np.dtype(np.float32): (np.uint32, UNWRITTEN_BITS),
            np.dtype(np.float64): (np.uint64, UNWRITTEN_BITS_64)}  # fmt: skip


def _nan(*shape, dtype=_F32) -> np.ndarray:
    """An output of ``shape`` that holds the marker of unwritten elements (zeros for a
    dtype without one: integers)."""
    dtype = np.dtype(dtype)
    if dtype not in _MARKERS:
        return np.zeros(shape, dtype)
    bits, marker = _MARKERS[dtype]
    return np.full(shape, marker, dtype=bits).view(dtype)


def unwritten_like(*shape, dtype=_F32) -> np.ndarray:
    """An output of ``shape`` filled with the marker of unwritten elements (as the tasks
    make theirs).

    Examples
    --------
    >>> from gpulab.kernels.gym_tasks import unwritten, unwritten_like
    >>> unwritten(unwritten_like(2)).tolist()
    [True, True]
    """
    return _nan(*shape, dtype=dtype)


def unwritten(array: np.ndarray) -> np.ndarray:
    """Where ``array`` still holds the marker of an output no thread wrote (all False for a
    dtype without a marker).

    Examples
    --------
    >>> import numpy as np
    >>> from gpulab.kernels.gym_tasks import unwritten, unwritten_like
    >>> out = unwritten_like(3, dtype=np.float64); out[1] = 2.0
    >>> unwritten(out).tolist(), unwritten(np.full(2, np.nan, np.float32)).tolist()
    ([True, False, True], [False, False])
    """
    marker = _MARKERS.get(array.dtype)
    if marker is None:
        return np.zeros(array.shape, dtype=bool)
    return np.ascontiguousarray(array).view(marker[0]) == marker[1]


def _random(rng, *shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(_F32)


# --------------------------------------------------------------------------- 1. copy

COPY_BLOCK, COPY_ITEMS = 128, 4  # threads per block, elements per thread


def _coalesce_advice(what: str) -> str:
    return (
        f"each warp {what} touches {{value:.0f}} sectors where {{goal:.0f}} would do: make "
        "neighbouring threads touch neighbouring addresses (element j of thread i at "
        f"i + j x the number of threads in the grid, not at {COPY_ITEMS} i + j)"
    )


def _copy_task() -> Task:
    def launch(shape):
        return _cdiv(shape[0], COPY_BLOCK * COPY_ITEMS), COPY_BLOCK

    return Task(
        name="copy",
        title="A copy, four elements per thread",
        args=("src", "dst", "n"),
        shapes=((1,), (100,), (1000,), (2048,)),
        describe=lambda s: f"n = {s[0]}",
        inputs=lambda s, rng: {"src": _random(rng, s[0]), "dst": _nan(s[0]), "n": s[0]},
        outputs=("dst",),
        reference=lambda a: {"dst": a["src"].copy()},
        launch=launch,
        targets=(
            Target(
                "sectors per warp load of src",
                lambda c, s: _per_request(c, "src", "load"),
                lambda s: 4,
                True,
                _coalesce_advice("load"),
            ),
            Target(
                "sectors per warp store to dst",
                lambda c, s: _per_request(c, "dst", "store"),
                lambda s: 4,
                True,
                _coalesce_advice("store"),
            ),
        ),
        rtol=0.0,
        atol=0.0,
        torch_op=lambda t: t["src"].clone(),
        gpu_shape=(2**24,),
    )


# --------------------------------------------------------------------------- 2. transpose

TRANSPOSE_TILE = 32


def _transpose_task() -> Task:
    t = TRANSPOSE_TILE

    def inputs(s, rng):
        rows, cols = s
        return {"a": _random(rng, rows, cols), "out": _nan(cols, rows), "rows": rows, "cols": cols}

    return Task(
        name="transpose",
        title="A transpose through shared memory",
        args=("a", "out", "rows", "cols"),
        shapes=((1, 1), (33, 70), (70, 33), (64, 64)),
        describe=lambda s: f"{s[0]} x {s[1]}",
        inputs=inputs,
        outputs=("out",),
        reference=lambda a: {"out": a["a"].T.copy()},
        launch=lambda s: ((_cdiv(s[1], t), _cdiv(s[0], t)), (t, t)),
        targets=(
            Target(
                "sectors per warp load of a",
                lambda c, s: _per_request(c, "a", "load"),
                lambda s: 4,
                True,
                "each warp load of a touches {value:.0f} sectors where {goal:.0f} would do: let "
                "threadIdx.x run along a row of a (its last index)",
            ),
            Target(
                "sectors per warp store to out",
                lambda c, s: _per_request(c, "out", "store"),
                lambda s: 4,
                True,
                "each warp store to out touches {value:.0f} sectors where {goal:.0f} would do: "
                "read the tile into shared memory, then let threadIdx.x run along a row of out",
            ),
            Target(
                "extra shared-memory passes (bank conflicts)",
                lambda c, s: c.bank_conflicts,
                lambda s: 0,
                True,
                "{value:.0f} extra passes from bank conflicts: a warp reading a column of a "
                "32-wide tile hits one bank 32 times; pad the tile to (32, 33)",
            ),
        ),
        rtol=0.0,
        atol=0.0,
        torch_op=lambda t: t["a"].t().contiguous(),
        gpu_shape=(8192, 8192),
    )


# --------------------------------------------------------------------------- 3. reduction

REDUCE_BLOCK = 128


def _reduce_task() -> Task:
    def inputs(s, rng):
        return {"x": _random(rng, s[0]), "out": np.zeros(1, dtype=_F32), "n": s[0]}

    def blocks(s):
        return _cdiv(s[0], REDUCE_BLOCK)

    return Task(
        name="reduce",
        title="A sum reduction",
        args=("x", "out", "n"),
        shapes=((1,), (100,), (1000,), (1024,)),
        describe=lambda s: f"n = {s[0]}",
        inputs=inputs,
        outputs=("out",),
        reference=lambda a: {"out": np.array([a["x"].astype(np.float64).sum()])},
        launch=lambda s: (blocks(s), REDUCE_BLOCK),
        targets=(
            Target(
                "atomic adds",
                lambda c, s: c.global_atomics,
                blocks,
                True,
                "{value:.0f} atomic adds to one address where one per block ({goal:.0f}) would "
                "do: sum each block's elements in shared memory first, then let thread 0 add "
                "the block's total",
            ),
            Target(
                "active lanes per memory request",
                lambda c, s: c.active_fraction,
                lambda s: 0.5,
                False,
                "only {value:.0%} of the lanes are active per request (at least {goal:.0%} is "
                "reachable): let threads 0 to s - 1 add element tid + s (s halving each step) "
                "instead of every (2 s)-th thread adding its neighbour, so whole warps idle "
                "instead of most lanes of every warp",
                percent=True,
            ),
        ),
        rtol=1e-5,
        atol=1e-5,
        torch_op=lambda t: t["x"].sum(),
        gpu_shape=(2**24,),
    )


# --------------------------------------------------------------------------- 4, 5. matmul

MATMUL_TILE = 16
COARSE_ROWS = 4  # outputs per thread in the register-tiled matmul (a column of them)


def _matmul_loads(s, tile: int) -> int:
    """Global loads of a tiled matmul: A read once per column of blocks, B once per row."""
    m, n, k = s
    return m * k * _cdiv(n, tile) + k * n * _cdiv(m, tile)


def _matmul_inputs(s, rng):
    m, n, k = s
    return {
        "A": _random(rng, m, k),
        "B": _random(rng, k, n),
        "C": _nan(m, n),
        "M": m,
        "N": n,
        "K": k,
    }


def _global_loads_target(tile: int) -> Target:
    return Target(
        "global loads",
        lambda c, s: c.global_loads,
        lambda s: _matmul_loads(s, tile),
        True,
        "{value:,.0f} global loads where {goal:,.0f} would do (M K ceil(N/T) + K N ceil(M/T)): "
        f"stage {tile} x {tile} tiles of A and B in shared memory and let every thread of the "
        "block read them from there",
    )


#: Matmul shapes (M, N, K) a grader runs: one element, non-multiples of the tile, tall, wide.
_MATMUL_SHAPES = ((1, 1, 1), (20, 33, 7), (40, 9, 24), (32, 32, 32))


def _describe_mnk(shape) -> str:
    return f"M, N, K = {shape[0]}, {shape[1]}, {shape[2]}"


def _matmul_reference(arrays) -> dict:
    return {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}


def _matmul_task() -> Task:
    t = MATMUL_TILE
    return Task(
        name="matmul",
        title="A tiled matmul for any shape",
        args=("A", "B", "C", "M", "N", "K"),
        shapes=_MATMUL_SHAPES,
        describe=_describe_mnk,
        inputs=_matmul_inputs,
        outputs=("C",),
        reference=_matmul_reference,
        launch=lambda s: ((_cdiv(s[1], t), _cdiv(s[0], t)), (t, t)),
        targets=(
            _global_loads_target(t),
            Target(
                "extra shared-memory passes (bank conflicts)",
                lambda c, s: c.bank_conflicts,
                lambda s: 0,
                True,
                "{value:.0f} extra passes from bank conflicts: let threadIdx.x pick the column "
                "of the shared tile, so a warp reads along a row (or one word, a broadcast)",
            ),
        ),
        rtol=1e-4,
        atol=1e-4,
        torch_op=lambda t: t["A"] @ t["B"],
        gpu_shape=(2048, 2048, 2048),
    )


def coarse_task(rows_per_thread: int = COARSE_ROWS) -> Task:
    """The register-tiled matmul task with ``rows_per_thread`` outputs per thread.

    ``TASKS["matmul_coarse"]`` is ``coarse_task(4)``: blocks of 16 x 4 threads. Another
    ``R`` gives blocks of 16 x (16 / R) and the target ``K (1 + 1/R)`` shared-memory loads
    per output; pass the task itself to :func:`gpulab.kernels.gym.grade_kernel`.

    Parameters
    ----------
    rows_per_thread : int
        ``R``, the outputs each thread computes: 1, 2, 4, 8 or 16 (a divisor of the tile,
        16).

    Examples
    --------
    >>> from gpulab.kernels.gym_tasks import coarse_task
    >>> task = coarse_task(8)
    >>> task.name, task.launch((32, 32, 32))[1], task.targets[1].goal((32, 32, 32))
    ('matmul_coarse_r8', (16, 2), 36.0)
    """
    from gpulab._checks import positive_int

    r = positive_int("rows_per_thread", rows_per_thread)
    t = MATMUL_TILE
    if t % r:
        raise ValueError(
            f"rows_per_thread={rows_per_thread!r} must divide the tile, {t}: 1, 2, 4, 8 or 16"
        )

    def shared_per_output(c, s):
        m, n, _ = s
        return _shared_loads(c) / (m * n)

    return Task(
        name="matmul_coarse" if r == COARSE_ROWS else f"matmul_coarse_r{r}",
        title=f"Register tiles: {'four' if r == 4 else r} outputs per thread",
        args=("A", "B", "C", "M", "N", "K"),
        shapes=_MATMUL_SHAPES,
        describe=_describe_mnk,
        inputs=_matmul_inputs,
        outputs=("C",),
        reference=_matmul_reference,
        launch=lambda s: ((_cdiv(s[1], t), _cdiv(s[0], t)), (t, t // r)),
        targets=(
            _global_loads_target(t),
            Target(
                "shared-memory loads per output element",
                shared_per_output,
                lambda s: _cdiv(s[2], t) * t * (1 + 1 / r),
                True,
                "{value:.0f} shared-memory loads per output where {goal:.0f} would do: load "
                f"sB[k, tx] once into a register and use it for all {r} of the thread's "
                f"outputs (one load of B and one of A per multiply-add becomes 1 + 1/{r})",
            ),
        ),
        rtol=1e-4,
        atol=1e-4,
        torch_op=lambda t: t["A"] @ t["B"],
        gpu_shape=(2048, 2048, 2048),
    )


# --------------------------------------------------------------------------- 6. softmax


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_task(name: str, title: str, reads: int) -> Task:
    def inputs(s, rng):
        rows, cols = s
        # values up to a few hundred: exp() of them overflows unless the maximum is taken off
        x = _random(rng, rows, cols, scale=100.0)
        return {"x": x, "out": _nan(rows, cols), "rows": rows, "cols": cols}

    one_pass = (
        "keep a running maximum m and a running sum d in one pass: for each x, "
        "m_new = max(m, x), d = d exp(m - m_new) + exp(x - m_new)"
    )
    targets = [
        Target(
            "global loads per element of x",
            lambda c, s: _accesses(c, "x", "load") / (s[0] * s[1]),
            lambda s: reads,
            True,
            "x is read {value:.0f} times per element where {goal:.0f} would do: "
            + (
                one_pass
                if reads == 2
                else "read the row once for its maximum, once for the "
                "sum of exponentials and once to write the output"
            ),
        ),
        Target(
            "active lanes per warp load of x",
            lambda c, s: _accesses(c, "x", "load") / (WARP_SIZE * _requests(c, "x", "load")),
            lambda s: 1.0,
            False,
            "only {value:.0%} of a warp's lanes load x: let lane j of the warp read columns "
            "j, j + 32, j + 64, ... of the row, so that all 32 lanes work",
            percent=True,
        ),
        Target(
            "sector efficiency of the loads of x",
            lambda c, s: _efficiency(c, "x", "load"),
            lambda s: 1.0,
            False,
            "the loads of x use {value:.0%} of the bytes they move: let lane j of the warp read "
            "columns j, j + 32, j + 64, ... so that a warp reads 32 neighbouring floats at once",
            percent=True,
        ),
    ]
    return Task(
        name=name,
        title=title,
        args=("x", "out", "rows", "cols"),
        shapes=((1, 1), (3, 100), (5, 33), (4, 256)),
        describe=lambda s: f"{s[0]} x {s[1]}",
        inputs=inputs,
        outputs=("out",),
        reference=lambda a: {"out": _softmax_rows(a["x"])},
        launch=lambda s: (s[0], WARP_SIZE),
        targets=tuple(targets),
        rtol=1e-4,
        atol=1e-6,
        torch_op=lambda t: t["x"].softmax(dim=1),
        gpu_shape=(4096, 4096),
    )


# --------------------------------------------------------------------------- 7. attention

ATTENTION_ROWS = 32  # query rows per block (one per thread), and keys per tile
ATTENTION_D = 8  # head dimension


def attention_bytes(n: int, d: int = ATTENTION_D, rows: int = ATTENTION_ROWS) -> dict:
    """Bytes of global memory an attention forward pass moves, FP32, counted two ways.

    Parameters
    ----------
    n, d : int
        Sequence length and head dimension.
    rows : int
        Query rows per block of the tiled kernel.

    Returns
    -------
    dict
        ``"tiled"``: Q read and O written once, K and V read once per block of query rows;
        ``"three_kernels"``: at least what ``S = Q K^T``, ``P = softmax(S)``, ``O = P V`` move
        when each kernel reads its inputs and writes its output once (S and P, n x n, are
        written and read back).

    Examples
    --------
    >>> from gpulab.kernels.gym_tasks import attention_bytes
    >>> attention_bytes(64)
    {'tiled': 12288, 'three_kernels': 73728}
    """
    blocks = _cdiv(n, rows)
    tiled = 4 * (2 * n * d + 2 * n * d * blocks)
    three = 4 * ((2 * n * d + n * n) + (2 * n * n) + (n * n + n * d + n * d))
    return {"tiled": tiled, "three_kernels": three}


def _attention_reference(a: dict) -> dict:
    q, k, v = (a[x].astype(np.float64) for x in ("Q", "K", "V"))
    return {"O": _softmax_rows(q @ k.T / math.sqrt(q.shape[1])) @ v}


def _attention_task() -> Task:
    d = ATTENTION_D

    def inputs(s, rng):
        n = s[0]
        return {
            "Q": _random(rng, n, d, scale=2.0),
            "K": _random(rng, n, d, scale=2.0),
            "V": _random(rng, n, d),
            "O": _nan(n, d),
            "n": n,
            "d": d,
        }

    return Task(
        name="attention",
        title="Tiled attention with the online softmax",
        args=("Q", "K", "V", "O", "n", "d"),
        shapes=((1,), (37,), (64,)),
        describe=lambda s: f"n = {s[0]}, d = {d}",
        inputs=inputs,
        outputs=("O",),
        reference=_attention_reference,
        launch=lambda s: (_cdiv(s[0], ATTENTION_ROWS), ATTENTION_ROWS),
        targets=(
            Target(
                "bytes moved (sectors x 32)",
                lambda c, s: c.global_bytes,
                lambda s: attention_bytes(s[0])["tiled"],
                True,
                "{value:,.0f} bytes moved where {goal:,.0f} would do: load the tiles of Q, K and "
                "V with neighbouring threads on neighbouring elements (element e = j x 32 + tid "
                "of the tile), and write O the same way from shared memory",
            ),
        ),
        rtol=1e-4,
        atol=1e-5,
        torch_op=lambda t: __import__("torch").nn.functional.scaled_dot_product_attention(
            t["Q"][None], t["K"][None], t["V"][None]
        )[0],
        gpu_shape=(4096,),
    )


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        _copy_task(),
        _transpose_task(),
        _reduce_task(),
        _matmul_task(),
        coarse_task(),
        _softmax_task("softmax", "A row softmax, three reads", 3),
        _softmax_task("online_softmax", "The online softmax, two reads", 2),
        _attention_task(),
    )
}


def get_task(task) -> Task:
    """The :class:`Task` named ``task`` (or ``task`` itself when it is one)."""
    if isinstance(task, Task):
        return task
    if not isinstance(task, str):
        from gpulab._checks import wrong_type

        raise wrong_type("task", task, f"a task name, one of {sorted(TASKS)}")
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not a gym task; choose one of {sorted(TASKS)}")
    return TASKS[task]


# --------------------------------------------------------------------------- tasks of one's own


def reference_parts(name, reference, *, args, arrays, outputs, sizes, dtypes=None) -> dict:
    """The parts of a task made from a reference function: shapes, inputs, reference.

    :func:`custom_task` (CUDA, the simulator) and
    :func:`gpulab.kernels.gym_triton.custom_triton_task` (Triton) share them.

    Parameters
    ----------
    name : str
        The task's name.
    reference : callable
        ``reference(**inputs)`` with NumPy arrays and sizes, every argument of the kernel
        but its outputs, by name; returns the output (one) or a dict of outputs by name.
    args : sequence of str
        The kernel's parameters in order: names of ``arrays`` and of ``sizes``.
    arrays : dict
        Each array argument's shape, as a tuple of ints and size names: ``{"x": ("n",)}``.
    outputs : sequence of str
        The arrays the kernel writes (filled with a marker NaN before it runs, so that an
        element no thread writes is found).
    sizes : sequence of dict
        The problem sizes graded, ``[{"n": 1}, {"n": 1000}]``; the last is the count shape.
    dtypes : dict or None
        An array's dtype by name (float32 where not given; float64 and integers too).

    Returns
    -------
    dict
        ``shapes``, ``describe``, ``inputs``, ``reference`` and ``args`` for a task.

    Raises
    ------
    TypeError, ValueError
        A part of the spec that is missing or does not fit the others, named.
    """
    from gpulab._checks import positive_int, wrong_type

    if not isinstance(name, str) or not name:
        raise wrong_type("name", name, "a non-empty str")
    if not callable(reference):
        raise wrong_type("reference", reference, "a function of the inputs, by name")
    if not isinstance(arrays, dict) or not arrays:
        raise wrong_type("arrays", arrays, 'a dict of shapes, e.g. {"x": ("n",)}')
    if isinstance(sizes, dict) or not isinstance(sizes, (list, tuple)) or not sizes:
        raise wrong_type("sizes", sizes, 'a list of dicts of sizes, e.g. [{"n": 1}, {"n": 33}]')
    keys = list(sizes[0]) if isinstance(sizes[0], dict) else None
    for s in sizes:
        if not isinstance(s, dict) or list(s) != keys:
            raise ValueError(f"sizes={sizes!r}: each must be a dict with the keys {keys}")
        for k, v in s.items():
            positive_int(f"sizes[{k!r}]", v)
    args, outputs = tuple(args), tuple(outputs)
    for a in args:
        if a not in arrays and a not in keys:
            raise ValueError(f"args: {a!r} is neither an array ({sorted(arrays)}) nor a size "
                             f"({keys})")  # fmt: skip
    for o in outputs:
        if o not in arrays or o not in args:
            raise ValueError(f"outputs: {o!r} must be an array argument, one of "
                             f"{[a for a in args if a in arrays]}")  # fmt: skip
    dtypes = {k: np.dtype(v) for k, v in (dtypes or {}).items()}
    for k in dtypes:
        if k not in arrays:
            raise ValueError(f"dtypes: {k!r} is not an array, one of {sorted(arrays)}")
    for k, shape in arrays.items():
        for d in shape:
            if not (isinstance(d, int) or d in keys):
                raise ValueError(f"arrays[{k!r}]: {d!r} is neither an int nor a size ({keys})")

    def shape_of(array: str, size: dict) -> tuple:
        return tuple(size[d] if isinstance(d, str) else d for d in arrays[array])

    def as_size(shape: tuple) -> dict:
        return dict(zip(keys, shape, strict=True))

    def inputs(shape, rng):
        size = as_size(shape)
        made = {}
        for a in args:
            if a not in arrays:
                made[a] = size[a]
                continue
            dtype = dtypes.get(a, np.dtype(_F32))
            if a in outputs:
                made[a] = _nan(*shape_of(a, size), dtype=dtype)
            elif dtype.kind == "f":
                made[a] = rng.standard_normal(shape_of(a, size)).astype(dtype)
            else:
                made[a] = rng.integers(0, 10, shape_of(a, size)).astype(dtype)
        return made

    def expected(made: dict) -> dict:
        given = {k: v for k, v in made.items() if k not in outputs}
        result = reference(**given)
        if not isinstance(result, dict):
            result = {outputs[0]: result}
        missing = [o for o in outputs if o not in result]
        if missing:
            raise ValueError(f"reference: returned no value for {missing}")
        return {o: np.asarray(result[o], dtype=np.float64) for o in outputs}

    return {
        "shapes": tuple(tuple(s.values()) for s in sizes),
        "describe": lambda shape: ", ".join(f"{k} = {v}" for k, v in as_size(shape).items()),
        "inputs": inputs,
        "reference": expected,
        "args": args,
        "launch_of": lambda fn: (lambda shape: fn(**as_size(shape))),
    }


def custom_task(
    name: str,
    reference,
    *,
    args,
    arrays: dict,
    outputs,
    sizes,
    launch,
    dtypes: dict | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    title: str = "",
) -> Task:
    """A gym task of one's own, from a NumPy reference function; graded like the others.

    Parameters are those of :func:`reference_parts`, and:

    launch : callable
        ``launch(**size) -> (grid, block)``.
    rtol, atol : float
        Tolerances of the comparison with the reference.
    title : str
        A heading ('' gives the name).

    The task has no count targets and no torch operation to be timed against.

    Examples
    --------
    >>> import numpy as np
    >>> from gpulab.kernels import gym, gym_tasks
    >>> task = gym_tasks.custom_task(
    ...     "twice", lambda x, n: 2 * x, args=("x", "out", "n"),
    ...     arrays={"x": ("n",), "out": ("n",)}, outputs=("out",),
    ...     sizes=[{"n": 1}, {"n": 70}], launch=lambda n: ((n + 31) // 32, 32),
    ...     dtypes={"x": np.float64, "out": np.float64})
    >>> def twice(x, out, n):
    ...     i = cuda.grid(1)
    ...     if i < n:
    ...         out[i] = 2 * x[i]
    >>> gym.grade_kernel(twice, task, quiet=True).passed
    True
    """
    parts = reference_parts(name, reference, args=args, arrays=arrays, outputs=outputs,
                            sizes=sizes, dtypes=dtypes)  # fmt: skip
    if not callable(launch):
        raise TypeError(f"launch={launch!r} must be a function of the sizes -> (grid, block)")
    return Task(
        name=name,
        title=title or name,
        args=parts["args"],
        shapes=parts["shapes"],
        describe=parts["describe"],
        inputs=parts["inputs"],
        outputs=tuple(outputs),
        reference=parts["reference"],
        launch=parts["launch_of"](launch),
        targets=(),
        rtol=float(rtol),
        atol=float(atol),
        torch_op=None,
        gpu_shape=parts["shapes"][-1],
    )
