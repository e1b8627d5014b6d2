"""The warm-up before the kernel gym: six small kernels, from a one-line map to a prefix sum.

Each step is a :class:`~gpulab.kernels.gym_tasks.Task` graded by
:func:`gpulab.kernels.gym.grade_kernel`, on a few tiny shapes (one element, sizes a block
does not divide) so that the drawing of which thread touched which element
(:func:`gpulab.diagrams.draw_touches`, from the simulator's record) fits on a line:

1. ``map``: one thread per element, exactly as many threads as elements;
2. ``guard``: blocks of 8 threads, so the last block overhangs the array;
3. ``pool``: a mean over three neighbours, through shared memory;
4. ``dot``: a dot product, the products summed in shared memory;
5. ``conv``: a 1-D convolution with a 3-tap filter, a tile and its halo in shared memory;
6. ``scan``: an inclusive prefix sum in log2(n) steps with barriers.

The lab grades a step and draws its record with :func:`gpulab.diagrams.warmup.grade`.

See also the lab "Kernel warm-up" (``notebooks/kernel_warmup_lab.ipynb``) and the chapter
"Inside a fast kernel" (``book/kernels.md``).

Examples
--------
>>> from gpulab.kernels import gym, gym_warmup
>>> def triple(a, out):
...     out[cuda.threadIdx.x] = 3 * a[cuda.threadIdx.x]
>>> gym.grade_kernel(triple, gym_warmup.TASKS["map"], quiet=True).passed
True
"""

from __future__ import annotations

import numpy as np

from gpulab.kernels.gym_tasks import Target, Task, get_task, unwritten_like

__all__ = ["CONV_TAPS", "TASKS", "WARMUP_BLOCK", "get_warmup_task"]

WARMUP_BLOCK = 8  #: threads per block where a step launches several blocks
CONV_TAPS = 3  #: the convolution filter's length
_F32 = np.float32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _random(rng, n: int) -> np.ndarray:
    return rng.integers(-4, 5, n).astype(_F32)  # small integers: sums are exact


def _loads(array: str):
    def measure(counts, shape) -> float:
        row = counts.by_array.get((array, "load"))
        return row["accesses"] if row else 0

    return measure


def _task(name, title, args, shapes, inputs, reference, launch, targets=()) -> Task:
    return Task(
        name=name,
        title=title,
        args=args,
        shapes=shapes,
        describe=lambda s: f"n = {s[0]}",
        inputs=inputs,
        outputs=("out",),
        reference=reference,
        launch=launch,
        targets=tuple(targets),
        rtol=1e-6,
        atol=1e-6,
        torch_op=None,
        gpu_shape=shapes[-1],
    )


def _map() -> Task:
    return _task(
        "map", "A one-line map: out = 3 a", ("a", "out"), ((1,), (5,), (12,)),
        lambda s, rng: {"a": _random(rng, s[0]), "out": unwritten_like(s[0])},
        lambda a: {"out": 3.0 * a["a"].astype(np.float64)},
        lambda s: (1, s[0]),
    )  # fmt: skip


def _guard() -> Task:
    return _task(
        "guard", "Blocks and a guard: out = 3 a for any n", ("a", "out", "n"),
        ((1,), (13,), (20,)),
        lambda s, rng: {"a": _random(rng, s[0]), "out": unwritten_like(s[0]), "n": s[0]},
        lambda a: {"out": 3.0 * a["a"].astype(np.float64)},
        lambda s: (_cdiv(s[0], WARMUP_BLOCK), WARMUP_BLOCK),
    )  # fmt: skip


def _pool_reference(a: dict) -> dict:
    x = np.concatenate([[0.0], a["a"].astype(np.float64), [0.0]])
    return {"out": (x[:-2] + x[1:-1] + x[2:]) / 3.0}


def _pool() -> Task:
    return _task(
        "pool", "Pooling through shared memory: the mean of three neighbours",
        ("a", "out", "n"), ((1,), (2,), (12,)),
        lambda s, rng: {"a": _random(rng, s[0]), "out": unwritten_like(s[0]), "n": s[0]},
        _pool_reference,
        lambda s: (1, s[0]),
        [Target(
            "global loads of a", _loads("a"), lambda s: s[0], True,
            "a is read {value:.0f} times from global memory where {goal:.0f} would do: let "
            "each thread copy its element into a shared array, call cuda.syncthreads(), then "
            "read the neighbours from the shared array",
        )],
    )  # fmt: skip


def _dot() -> Task:
    def inputs(s, rng):
        return {"a": _random(rng, s[0]), "b": _random(rng, s[0]), "out": unwritten_like(1),
                "n": s[0]}  # fmt: skip

    def stores(counts, shape) -> float:
        row = counts.by_array.get(("out", "store"))
        return row["accesses"] if row else 0

    return _task(
        "dot", "A dot product: products summed in shared memory", ("a", "b", "out", "n"),
        ((1,), (7,), (12,)), inputs,
        lambda a: {"out": np.array([a["a"].astype(np.float64) @ a["b"]])},
        lambda s: (1, s[0]),
        [Target(
            "stores to out", stores, lambda s: 1, True,
            "out[0] is written {value:.0f} times where {goal:.0f} would do: let each thread "
            "put its product in a shared array, call cuda.syncthreads(), and let thread 0 add "
            "the products and write out[0] once",
        )],
    )  # fmt: skip


def _conv_reference(a: dict) -> dict:
    x, w = a["a"].astype(np.float64), a["w"].astype(np.float64)
    padded = np.concatenate([x, np.zeros(CONV_TAPS - 1)])
    return {"out": sum(w[j] * padded[j : j + len(x)] for j in range(CONV_TAPS))}


def _conv() -> Task:
    def inputs(s, rng):
        return {"a": _random(rng, s[0]), "w": _random(rng, CONV_TAPS),
                "out": unwritten_like(s[0]), "n": s[0]}  # fmt: skip

    def goal(s) -> int:  # each block: its tile and the halo past it, once
        return s[0] + (CONV_TAPS - 1) * _cdiv(s[0], WARMUP_BLOCK)

    return _task(
        "conv", "A 1-D convolution: a tile and its halo in shared memory",
        ("a", "w", "out", "n"), ((1,), (9,), (20,)), inputs, _conv_reference,
        lambda s: (_cdiv(s[0], WARMUP_BLOCK), WARMUP_BLOCK),
        [Target(
            "global loads of a", _loads("a"), goal, True,
            "a is read {value:.0f} times from global memory where {goal:.0f} would do (each "
            f"block's {WARMUP_BLOCK} elements and the {CONV_TAPS - 1} past them, once): load "
            "the tile and its halo into a shared array, call cuda.syncthreads(), then read the "
            "taps from the shared array",
        )],
    )  # fmt: skip


def _scan() -> Task:
    return _task(
        "scan", "A prefix sum: log2(n) steps with barriers", ("a", "out", "n"),
        ((1,), (5,), (16,)),
        lambda s, rng: {"a": _random(rng, s[0]), "out": unwritten_like(s[0]), "n": s[0]},
        lambda a: {"out": np.cumsum(a["a"].astype(np.float64))},
        lambda s: (1, s[0]),
        [Target(
            "global loads of a", _loads("a"), lambda s: s[0], True,
            "a is read {value:.0f} times from global memory where {goal:.0f} would do: copy a "
            "into a shared array once, then let thread i add the element `step` places "
            "before it, step = 1, 2, 4, ..., reading into a local variable, cuda.syncthreads(), "
            "then writing, cuda.syncthreads()",
        )],
    )  # fmt: skip


TASKS: dict[str, Task] = {t.name: t for t in (_map(), _guard(), _pool(), _dot(), _conv(),
                                              _scan())}  # fmt: skip


def get_warmup_task(name) -> Task:
    """The warm-up :class:`Task` called ``name`` (or ``name`` itself when it is a Task).

    Raises
    ------
    TypeError, ValueError
        ``name`` is not a str, or not a warm-up step (one of :data:`TASKS`).
    """
    if isinstance(name, Task):
        return name
    if not isinstance(name, str):
        return get_task(name)  # its TypeError names the parameter
    if name not in TASKS:
        raise ValueError(f"name={name!r} is not a warm-up step; choose one of {list(TASKS)}")
    return TASKS[name]
