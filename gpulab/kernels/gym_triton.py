"""The kernel gym's Triton steps: a vector add, the online softmax and an attention block.

A Triton kernel works on a block of elements per program, so the course's simulator, which
runs CUDA threads, does not count it. :func:`grade_triton` runs the learner's ``@triton.jit``
kernel with the task's launch on the task's shapes (awkward ones included) and compares the
results with NumPy's: in Triton's interpreter on a CPU (``TRITON_INTERPRET=1``, set by
:mod:`gpulab.kernels.triton_kernels` where there is no GPU), compiled on a GPU, where it
also times the kernel against torch (a measurement, labelled with the device and the date).

Every tensor the kernel sees sits between two guard zones filled with a marker value: a
store without a mask overwrites it, and the report says so. In the interpreter every load is
also checked: a lane that the mask leaves on and that reads outside its tensors is reported
even where the store is masked (so the wrong values never reach the output); compiled on a
GPU, such a load reads the marker and shows in the result. A stray pointer far beyond the
guards is not caught by a store check (on a CPU it writes the interpreter's own memory).

On a GPU of compute capability below 8.0 (Turing, Volta), which has no TF32, the grader sets
Triton's default precision of ``tl.dot`` on FP32 tiles (``TRITON_F32_DEFAULT``) to
``"ieee"`` while it runs the learner's kernel, and says so when the kernel still fails on
TF32.

See also the chapter "Inside a fast kernel" (``book/kernels.md``) and the gym labs.
"""

from __future__ import annotations

import contextlib
import datetime
import inspect
import math
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpulab._checks import flag, wrong_type
from gpulab.kernels.gym import WRAP

__all__ = [
    "TRITON_TASKS",
    "TritonReport",
    "TritonTask",
    "custom_triton_task",
    "grade_triton",
    "triton_modules",
]

_GUARD_VALUE = 12345.0  # what lies just outside every tensor the kernel sees
_SEED = 0


@dataclass(frozen=True)
class TritonTask:
    """One Triton step: signature, launch, shapes, inputs and the NumPy reference.

    Attributes
    ----------
    name, title : str
        The key and a heading.
    args : tuple of str
        The kernel's parameters before its ``tl.constexpr`` ones.
    constants : dict
        The ``tl.constexpr`` parameters and their values.
    shapes : tuple of tuple
        The shapes graded.
    describe : callable
        ``describe(shape) -> str``.
    inputs : callable
        ``inputs(shape, rng) -> dict`` of NumPy arrays (tensors) and scalars.
    outputs : tuple of str
        The tensors the kernel writes.
    reference : callable
        ``reference(inputs) -> dict`` of expected outputs.
    grid : callable
        ``grid(shape) -> tuple``: programs launched.
    guard : int
        Elements of guard zone on each side of every tensor.
    torch_op : callable
        ``torch_op(tensors) -> tensor``: torch's own operation, for timing on a GPU.
    gpu_shape : tuple
        The shape timed on a GPU.
    compiled_tolerance : float
        Relative and absolute tolerance where the kernel is compiled for a GPU: ``tl.dot``
        on FP32 tiles uses TF32 there (10 bits of mantissa), not FP32 as the interpreter.
    """

    name: str
    title: str
    args: tuple[str, ...]
    constants: dict
    shapes: tuple[tuple, ...]
    describe: Callable[[tuple], str]
    inputs: Callable[[tuple, np.random.Generator], dict]
    outputs: tuple[str, ...]
    reference: Callable[[dict], dict]
    grid: Callable[[tuple], tuple]
    guard: int
    torch_op: Callable[[dict], object]
    gpu_shape: tuple
    compiled_tolerance: float = 1e-4


def _random(rng, *shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


ADD_BLOCK = 128
SOFTMAX_BLOCK = 64  # narrower than most rows: the kernel must loop over a row's blocks
ATTENTION_BLOCK, ATTENTION_D = 16, 16  # tl.dot needs 16 or more on a GPU


def _add_task() -> TritonTask:
    return TritonTask(
        name="triton_add",
        title="Triton: a vector add",
        args=("x_ptr", "y_ptr", "out_ptr", "n"),
        constants={"BLOCK": ADD_BLOCK},
        shapes=((1,), (1000,), (4097,)),
        describe=lambda s: f"n = {s[0]}",
        inputs=lambda s, rng: {
            "x_ptr": _random(rng, s[0]),
            "y_ptr": _random(rng, s[0]),
            "out_ptr": np.zeros(s[0], np.float32),
            "n": s[0],
        },
        outputs=("out_ptr",),
        reference=lambda a: {"out_ptr": a["x_ptr"] + a["y_ptr"]},
        grid=lambda s: (math.ceil(s[0] / ADD_BLOCK),),
        guard=ADD_BLOCK,
        torch_op=lambda t: t["x_ptr"] + t["y_ptr"],
        gpu_shape=(2**24,),
    )


def _softmax_task() -> TritonTask:
    return TritonTask(
        name="triton_online_softmax",
        title="Triton: the online softmax, a row in blocks",
        args=("x_ptr", "out_ptr", "n_cols", "row_stride"),
        constants={"BLOCK": SOFTMAX_BLOCK},
        shapes=((1, 1), (3, 100), (5, 200)),
        describe=lambda s: f"{s[0]} x {s[1]}",
        inputs=lambda s, rng: {
            "x_ptr": _random(rng, *s, scale=100.0),
            "out_ptr": np.zeros(s, np.float32),
            "n_cols": s[1],
            "row_stride": s[1],
        },
        outputs=("out_ptr",),
        reference=lambda a: {"out_ptr": _softmax_rows(a["x_ptr"])},
        grid=lambda s: (s[0],),
        guard=SOFTMAX_BLOCK,
        torch_op=lambda t: t["x_ptr"].softmax(dim=1),
        gpu_shape=(4096, 4096),
    )


def _attention_task() -> TritonTask:
    d = ATTENTION_D

    def reference(a):
        q, k, v = (a[x].astype(np.float64) for x in ("q_ptr", "k_ptr", "v_ptr"))
        return {"o_ptr": _softmax_rows(q @ k.T * a["scale"]) @ v}

    return TritonTask(
        name="triton_attention",
        title="Triton: an attention block with the online softmax",
        args=("q_ptr", "k_ptr", "v_ptr", "o_ptr", "n", "scale"),
        constants={"D": d, "BLOCK_M": ATTENTION_BLOCK, "BLOCK_N": ATTENTION_BLOCK},
        shapes=((1,), (37,), (64,)),
        describe=lambda s: f"n = {s[0]}, d = {d}",
        inputs=lambda s, rng: {
            "q_ptr": _random(rng, s[0], d),
            "k_ptr": _random(rng, s[0], d),
            "v_ptr": _random(rng, s[0], d),
            "o_ptr": np.zeros((s[0], d), np.float32),
            "n": s[0],
            "scale": 1.0 / math.sqrt(d),
        },
        outputs=("o_ptr",),
        reference=reference,
        grid=lambda s: (math.ceil(s[0] / ATTENTION_BLOCK),),
        guard=ATTENTION_BLOCK * d,
        torch_op=lambda t: __import__("torch").nn.functional.scaled_dot_product_attention(
            t["q_ptr"][None], t["k_ptr"][None], t["v_ptr"][None]
        )[0],
        gpu_shape=(4096,),
        compiled_tolerance=2e-2,  # TF32 in tl.dot: as tests/test_kernels_triton.py allows
    )


TRITON_TASKS: dict[str, TritonTask] = {
    t.name: t for t in (_add_task(), _softmax_task(), _attention_task())
}


def custom_triton_task(
    name: str,
    reference,
    *,
    args,
    arrays: dict,
    outputs,
    sizes,
    grid,
    constants: dict | None = None,
    dtypes: dict | None = None,
    guard: int = 0,
    title: str = "",
) -> TritonTask:
    """A Triton gym task of one's own, from a NumPy reference function.

    Parameters are those of :func:`gpulab.kernels.gym_tasks.reference_parts`, and:

    grid : callable
        ``grid(**size) -> tuple``: the programs launched.
    constants : dict or None
        The kernel's ``tl.constexpr`` parameters and their values (after ``args``).
    guard : int
        Elements of guard zone on each side of every tensor (0: the largest constant, at
        least 64).
    title : str
        A heading ('' gives the name).

    The task is not timed on a GPU (it has no torch operation to compare with).

    Examples
    --------
    >>> import numpy as np
    >>> from gpulab.kernels import gym_triton
    >>> task = gym_triton.custom_triton_task(
    ...     "twice", lambda x_ptr, n: 2 * x_ptr, args=("x_ptr", "out_ptr", "n"),
    ...     arrays={"x_ptr": ("n",), "out_ptr": ("n",)}, outputs=("out_ptr",),
    ...     sizes=[{"n": 1}, {"n": 300}], grid=lambda n: ((n + 127) // 128,),
    ...     constants={"BLOCK": 128}, dtypes={"x_ptr": np.float64, "out_ptr": np.float64})
    >>> task.describe(task.shapes[-1]), task.grid(task.shapes[-1])
    ('n = 300', (3,))
    """
    from gpulab.kernels.gym_tasks import reference_parts

    parts = reference_parts(name, reference, args=args, arrays=arrays, outputs=outputs,
                            sizes=sizes, dtypes=dtypes)  # fmt: skip
    constants = dict(constants or {})
    if not callable(grid):
        raise wrong_type("grid", grid, "a function of the sizes -> tuple of programs")
    ints = [v for v in constants.values() if isinstance(v, int) and not isinstance(v, bool)]
    return TritonTask(
        name=name,
        title=title or name,
        args=parts["args"],
        constants=constants,
        shapes=parts["shapes"],
        describe=parts["describe"],
        inputs=parts["inputs"],
        outputs=tuple(outputs),
        reference=parts["reference"],
        grid=parts["launch_of"](grid),
        guard=int(guard) or max([64, *ints]),
        torch_op=None,
        gpu_shape=parts["shapes"][-1],
    )


@dataclass(frozen=True)
class TritonReport:
    """What :func:`grade_triton` found: a line per shape, and the verdict."""

    task: str
    kernel: str
    problems: tuple[str, ...]
    lines: tuple[str, ...]
    gpu: str = ""

    @property
    def answered(self) -> bool:
        return bool(self.kernel)

    @property
    def passed(self) -> bool:
        return self.answered and not any(self.problems)

    @property
    def score(self) -> float | None:
        """Shapes right over shapes graded (None when not answered)."""
        if not self.answered:
            return None
        return sum(not p for p in self.problems) / len(self.problems)

    @property
    def first_problem(self) -> str:
        return next((p for p in self.problems if p), "")

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _guarded(array: np.ndarray, guard: int, device: str):
    """A torch tensor with ``array``'s values, inside a buffer with guard zones around it."""
    import torch

    t = torch.from_numpy(np.ascontiguousarray(array))
    buf = torch.full((array.size + 2 * guard,), _GUARD_VALUE, dtype=t.dtype, device=device)
    view = buf[guard : guard + array.size].view(array.shape)
    view.copy_(t)
    return buf, view


class _LoadWatch:
    """While active, checks every load of Triton's interpreter against the tensors' bytes.

    ``outside`` holds, for the first load with a lane outside every tensor, the name of
    the tensor whose guard zone it read (or ''), and the number of such lanes.
    """

    def __init__(self, tensors: dict) -> None:
        self.ranges = [(name, t.data_ptr(), t.data_ptr() + t.numel() * t.element_size())
                       for name, t in tensors.items()]  # fmt: skip
        self.zones = {}
        self.outside: tuple[str, int] | None = None

    def check(self, ptrs: np.ndarray, mask: np.ndarray) -> None:
        if self.outside is not None:
            return
        address = np.asarray(ptrs).astype(np.uint64).ravel()
        active = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)).ravel()
        inside = np.zeros(address.shape, dtype=bool)
        for _, start, end in self.ranges:
            inside |= (address >= start) & (address < end)
        bad = active & ~inside
        if bad.any():
            first = int(address[bad][0])
            near = min(self.ranges, key=lambda r: min(abs(first - r[1]), abs(first - r[2])))
            self.outside = (near[0], int(bad.sum()))

    @contextlib.contextmanager
    def active(self):
        """Patch the interpreter's masked load for the duration (the interpreter only)."""
        from triton.runtime import interpreter

        builder = interpreter.InterpreterBuilder
        original = builder.create_masked_load
        watch = self

        def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
            watch.check(ptrs.data, mask.data)
            return original(self, ptrs, mask, other, *args, **kwargs)

        builder.create_masked_load = create_masked_load
        try:
            yield self
        finally:
            builder.create_masked_load = original


def _signature_problem(kernel, name: str, task: TritonTask) -> str:
    """The sentence for a kernel whose parameters are not the task's ('' when they are)."""
    try:
        params = list(inspect.signature(getattr(kernel, "fn", kernel)).parameters)
    except (TypeError, ValueError):  # a stand-in without a Python signature
        return ""
    wanted = [*task.args, *task.constants]
    if params == wanted:
        return ""
    constants = ", ".join(f"{k}={v}" for k, v in task.constants.items())
    return (
        f"{name} takes ({', '.join(params)}), but the {task.name} task launches it as "
        f"{name}[grid]({', '.join(task.args)}{', ' if constants else ''}{constants}): give it "
        "these parameters, in this order"
    )


_TF32_WORDS = ("tf32", "input_precision")


@contextlib.contextmanager
def _fp32_dot_default(device: str):
    """``TRITON_F32_DEFAULT=ieee`` while a kernel is compiled for a GPU without TF32
    (compute capability below 8.0), unless it is set already; nothing elsewhere."""
    if device != "cuda" or "TRITON_F32_DEFAULT" in os.environ:
        yield
        return
    from gpulab.kernels import triton_kernels as tk

    if tk.dot_input_precision() != "ieee":
        yield
        return
    os.environ["TRITON_F32_DEFAULT"] = "ieee"
    try:
        yield
    finally:
        os.environ.pop("TRITON_F32_DEFAULT", None)


def _run_shape(kernel, task: TritonTask, shape, rng, device: str) -> str:
    """The problem sentence for one shape ('' when right)."""
    host = task.inputs(shape, rng)
    buffers, tensors = {}, {}
    for name, value in host.items():
        if isinstance(value, np.ndarray):
            buffers[name], tensors[name] = _guarded(value, task.guard, device)
        else:
            tensors[name] = value
    label = task.describe(shape)
    watch = _LoadWatch({k: v for k, v in tensors.items() if k in buffers})
    try:
        with watch.active() if device == "cpu" else contextlib.nullcontext():
            kernel[task.grid(shape)](*[tensors[a] for a in task.args], **task.constants)
    except Exception as exc:  # noqa: BLE001 - the learner's bug, said in a sentence
        first = (str(exc).strip().splitlines() or [""])[-1]
        said = f"{label}: the kernel raised {type(exc).__name__}: {first}"
        if device == "cuda" and any(w in str(exc).lower() for w in _TF32_WORDS):
            said += (
                " (tl.dot on FP32 tiles defaults to TF32, which this GPU lacks below compute "
                "capability 8.0: pass input_precision=\"ieee\" to tl.dot)"
            )
        return said
    for name, buf in buffers.items():
        zone = np.concatenate([buf[: task.guard].cpu().numpy(), buf[-task.guard :].cpu().numpy()])
        if not (zone == _GUARD_VALUE).all():
            return (
                f"{label}: the kernel stored outside {name} (past its end or before its start): "
                "mask the store (mask=offsets < n) so that lanes past the end write nothing"
            )
    if watch.outside is not None:
        name, lanes = watch.outside
        return (
            f"{label}: the kernel loaded outside {name} (past its end or before its start) "
            f"in {lanes} lane{'' if lanes == 1 else 's'}: mask the load (mask=offsets < n, "
            "with other= a value that leaves the result alone, such as -inf for a maximum "
            "or 0.0 for a sum), even where the store is masked"
        )
    expected = task.reference(host)
    for name in task.outputs:
        got = tensors[name].cpu().numpy().astype(np.float64)
        tol = 1e-4 if device == "cpu" else task.compiled_tolerance
        bad = ~np.isclose(got, expected[name], rtol=tol, atol=tol / 10)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            where = f"{name}[{', '.join(str(i) for i in first)}]"
            guard = " (the guard value: a load past the end, without a mask?)"
            return (
                f"{label}: {int(bad.sum())} of {bad.size} elements of {name} are wrong, the "
                f"first {where} ({got[first]:.4g}, expected {expected[name][first]:.4g})"
                + (guard if np.isclose(got[first], _GUARD_VALUE, rtol=0.5) else "")
            )
    return ""


class _Missing:
    """Stands in for ``triton`` and ``triton.language`` where Triton did not import, so that
    a lab's ``@triton.jit`` kernels still define (as this stand-in) and the grader can say
    that the step is skipped, instead of a NameError."""

    def __getattr__(self, name: str):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self


_MISSING = _Missing()


def triton_modules():
    """``(triton, triton.language)``, or stand-ins where Triton is not available.

    Import :mod:`gpulab.kernels.triton_kernels` first (this does): without a GPU it sets
    ``TRITON_INTERPRET=1`` before Triton is imported.

    Examples
    --------
    >>> from gpulab.kernels import gym_triton
    >>> triton, tl = gym_triton.triton_modules()
    >>> callable(triton.jit)
    True
    """
    from gpulab.kernels import triton_kernels as tk

    if not tk.triton_available():
        return _MISSING, _MISSING
    import triton
    import triton.language as tl

    return triton, tl


def grade_triton(kernel, task, *, quiet: bool = False) -> TritonReport:
    """Run a ``@triton.jit`` kernel on a gym task's shapes and check it against NumPy.

    Parameters
    ----------
    kernel : triton.JITFunction or None
        The learner's kernel; None means "not written yet".
    task : str or TritonTask
        One of :data:`TRITON_TASKS`, or a task of one's own (:func:`triton_task` makes one
        from a reference function).
    quiet : bool
        Do not print the report.

    Returns
    -------
    TritonReport
        ``passed`` when every shape is right. On a GPU the report also holds the kernel's
        time against torch's (measured).

    Where Triton is not available the report says so and why, and is not answered.
    """
    from gpulab.kernels import triton_kernels as tk

    if isinstance(task, TritonTask):
        spec = task
    elif not isinstance(task, str):
        raise wrong_type("task", task, f"a Triton task name, one of {sorted(TRITON_TASKS)}, "
                         "or a TritonTask")  # fmt: skip
    elif task not in TRITON_TASKS:
        raise ValueError(f"task={task!r} is not a Triton gym task; one of {sorted(TRITON_TASKS)}")
    else:
        spec = TRITON_TASKS[task]
    flag("quiet", quiet)
    head = f"Kernel gym, task {spec.name!r}"
    if kernel is None:
        line = f"{head}: no kernel yet; write it above, set answer to it, run this cell again."
        report = TritonReport(spec.name, "", (), (line,))
        if not quiet:
            print(report)
        return report
    if kernel is _MISSING or not tk.triton_available():
        lines = (head, f"Skipped: {tk.triton_missing_reason()}")
        report = TritonReport(spec.name, "", (), lines)
        if not quiet:
            print(report)
        return report
    if not hasattr(kernel, "__getitem__"):
        raise wrong_type("kernel", kernel, "a Triton kernel (a function under @triton.jit)")
    name = getattr(getattr(kernel, "fn", kernel), "__name__", "kernel")
    device = "cpu" if tk.interpreted() else "cuda"
    rng = np.random.default_rng(_SEED)
    wrong_signature = _signature_problem(kernel, name, spec)
    if wrong_signature:
        problems = tuple(wrong_signature for _ in spec.shapes)
    else:
        with _fp32_dot_default(device):
            problems = tuple(_run_shape(kernel, spec, s, rng, device) for s in spec.shapes)
    where = "interpreted on the CPU" if device == "cpu" else "compiled on the GPU"
    lines = [f"Kernel gym: {name} on task {spec.name!r}, {where}"]
    lines += [f"  {'WRONG' if p else 'right'}  {spec.describe(s)}" for p, s in zip(
        problems, spec.shapes, strict=True)]  # fmt: skip
    gpu = ""
    if device == "cuda" and not any(problems) and spec.torch_op is not None:
        gpu = _time_on_gpu(kernel, spec)
        lines.append(f"  {gpu}")
    first = next((p for p in problems if p), "")
    verdict = "Passed: right on every shape." if not first else f"To change first: {first}."
    lines.append(textwrap.fill(verdict, width=WRAP, subsequent_indent="  "))
    report = TritonReport(spec.name, name, problems, tuple(lines), gpu)
    if not quiet:
        print(report)
    return report


def _time_on_gpu(kernel, spec: TritonTask) -> str:
    """The kernel and torch timed on the task's GPU shape: one line, labelled measured."""
    import torch

    from gpulab.measure.bench import benchmark

    host = spec.inputs(spec.gpu_shape, np.random.default_rng(_SEED))
    t = {k: torch.from_numpy(v).cuda() if isinstance(v, np.ndarray) else v
         for k, v in host.items()}  # fmt: skip
    grid = spec.grid(spec.gpu_shape)
    ours = benchmark(lambda: kernel[grid](*[t[a] for a in spec.args], **spec.constants),
                     min_run_time_s=0.2)  # fmt: skip
    theirs = benchmark(lambda: spec.torch_op(t), min_run_time_s=0.2)
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return (
        f"measured on {torch.cuda.get_device_name()}, {spec.describe(spec.gpu_shape)}, {date}: "
        f"your kernel {ours.median_s * 1e3:.3f} ms, torch {theirs.median_s * 1e3:.3f} ms "
        "(median)"
    )
