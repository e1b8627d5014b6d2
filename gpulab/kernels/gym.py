"""The kernel gym's grader: run a learner's kernel, check it, count it, say what to change.

:func:`grade_kernel` takes a kernel written in Numba's CUDA kernel language and the name of a
gym task (:mod:`gpulab.kernels.gym_tasks`). It runs the kernel in the course's simulator in
strict mode on every shape of the task, awkward ones included, compares each result with a
reference computed by NumPy, and compares the counts of the last shape with the task's
targets. What it finds is one report: a line per shape, a line per target, and one sentence
on what to change first. A bug in the kernel (a wrong result, a race, an index out of bounds,
a barrier some threads never reach, an exception) is reported as a sentence, never as a
traceback from inside the simulator.

On a machine where Numba can compile for a CUDA GPU, ``time_on_gpu=True`` also compiles the
kernel, checks it on the task's GPU shape and times it against torch's own operation: a
measurement, labelled with the device and the date.

See also the chapter "Inside a fast kernel" (``book/kernels.md``) and the gym labs.

Examples
--------
>>> from gpulab.kernels import gym
>>> def copy(src, dst, n):  # one element per thread: three quarters of dst stay unwritten
...     i = cuda.grid(1)
...     if i < n:
...         dst[i] = src[i]
>>> report = gym.grade_kernel(copy, "copy", quiet=True)
>>> report.passed, report.first_problem.split(":")[0]
(False, 'wrong result for n = 1000')
"""

from __future__ import annotations

import datetime
import textwrap
import traceback
import types
from dataclasses import dataclass, field

import numpy as np

from gpulab._checks import flag
from gpulab.kernels.faults import EndlessError, KernelFault
from gpulab.kernels.gym_tasks import Task, get_task, unwritten
from gpulab.kernels.simulator import KernelCounts, code_names, kernel_function, simulate

__all__ = [
    "GpuTiming",
    "GradeReport",
    "ShapeResult",
    "TargetResult",
    "grade_kernel",
    "time_kernel_on_gpu",
    "time_on_gpu_line",
]

_SEED = 0
WRAP = 76  #: characters per line of a report: an output box of the book is about 78 wide
#: Wall-clock seconds one simulated launch of a gym shape may run before the grader calls the
#: kernel endless: the slowest worked kernel needs about one on a busy CPU.
GRADE_TIME_LIMIT_S = 5.0


@dataclass(frozen=True)
class ShapeResult:
    """The outcome on one shape: ``ok``, and the sentence that says what went wrong."""

    shape: str
    ok: bool
    problem: str = ""


@dataclass(frozen=True)
class TargetResult:
    """One count against its target on the task's count shape."""

    name: str
    value: float
    goal: float
    at_most: bool
    met: bool
    advice: str
    percent: bool = False


@dataclass(frozen=True)
class GradeReport:
    """What :func:`grade_kernel` found.

    Attributes
    ----------
    task : str
        The task's name.
    kernel : str
        The kernel's name ('' when none was given).
    shapes : tuple of ShapeResult
        Correctness on each shape.
    targets : tuple of TargetResult
        Counts on the count shape against the targets (empty unless every shape was right).
    counts : KernelCounts or None
        The simulator's counts on the count shape.
    gpu : str
        The GPU timing, labelled as a measurement ('' when not timed).
    blocks : int
        Blocks in the launch of the count shape (for counts per block).
    block : tuple of int
        Threads per block of that launch, ``(x, y, z)`` (for the thread of a count).
    """

    task: str
    kernel: str
    shapes: tuple[ShapeResult, ...]
    targets: tuple[TargetResult, ...]
    counts: KernelCounts | None
    gpu: str = ""
    lines: tuple[str, ...] = field(default=(), repr=False)
    blocks: int = 0
    block: tuple[int, ...] = ()

    @property
    def answered(self) -> bool:
        return bool(self.kernel)

    @property
    def correct(self) -> bool:
        """Right on every shape."""
        return self.answered and all(s.ok for s in self.shapes)

    @property
    def passed(self) -> bool:
        """Right on every shape and every target met."""
        return self.correct and all(t.met for t in self.targets)

    @property
    def score(self) -> float | None:
        """Shapes right and targets met, over all of them (None when not answered)."""
        if not self.answered:
            return None
        checks = [s.ok for s in self.shapes] + [t.met for t in self.targets]
        return sum(checks) / len(checks)

    @property
    def first_problem(self) -> str:
        """The one sentence on what to change first ('' when the kernel passes)."""
        for s in self.shapes:
            if not s.ok:
                return s.problem
        for t in self.targets:
            if not t.met:
                return t.advice
        return ""

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _kernel_function(kernel):
    """The kernel's Python function (from a dispatcher, or a factory that takes ``cuda``)."""
    return kernel_function(kernel)


def _signature_problem(kernel, task: Task) -> str:
    code = kernel.__code__
    names = code.co_varnames[: code.co_argcount]
    if len(names) != len(task.args):
        return (
            f"{kernel.__name__} takes {len(names)} arguments ({', '.join(names)}); the "
            f"{task.name} task launches it with {len(task.args)}: {', '.join(task.args)}"
        )
    return ""


def _where_in_kernel(exc: BaseException, kernel) -> str:
    """``line 3 of copy (`x = y`)`` for the deepest frame of the learner's code."""
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
    mine = [f for f in frames if f.f_code.co_filename == kernel.__code__.co_filename]
    if not mine:
        return "in the kernel"
    import linecache

    f = mine[-1]
    line = f.f_lineno - f.f_code.co_firstlineno + 1
    text = linecache.getline(f.f_code.co_filename, f.f_lineno).split("  #")[0].strip()
    return f"at line {line} of {f.f_code.co_name}" + (f" (`{text}`)" if text else "")


def _uses_exp(kernel) -> bool:
    """Whether the kernel's code (or a function it calls by name) refers to ``exp``."""
    names = code_names(kernel.__code__)
    if "exp" in names:
        return True
    for name in names:
        func = getattr(kernel.__globals__.get(name), "py_func", kernel.__globals__.get(name))
        if isinstance(func, types.FunctionType) and "exp" in code_names(func.__code__):
            return True
    return False


_EXP_HINT = "exp() of a large number overflows: subtract the row's maximum first"


def _exception_sentence(exc: BaseException, kernel) -> str:
    where = _where_in_kernel(exc, kernel)
    first = (str(exc).strip().splitlines() or [""])[0]
    sentence = f"the kernel raised {type(exc).__name__} {where}" + (f": {first}" if first else "")
    if isinstance(exc, OverflowError) and _uses_exp(kernel):
        sentence += f"; {_EXP_HINT}"
    elif isinstance(exc, ZeroDivisionError):
        sentence += ("; on a GPU a division by zero gives inf or nan instead: guard the divisor "
                     "(an `if` on it, or a small epsilon added)")  # fmt: skip
    return sentence


def _where(name: str, index) -> str:
    return f"{name}[{', '.join(str(int(i)) for i in index)}]"


def _mismatch(name: str, got: np.ndarray, expected: np.ndarray, task: Task,
              fp_errors: frozenset = frozenset(), kernel=None) -> str:  # fmt: skip
    """The sentence on what is wrong in one output ('' when it is right).

    ``fp_errors`` are the floating-point errors NumPy saw while the kernel ran
    (``"divide by zero"``, ``"overflow"``, ``"invalid value"``): a non-finite result is
    blamed on what actually happened.
    """
    never = unwritten(got)
    got64 = got.astype(np.float64)
    expected = np.broadcast_to(np.asarray(expected, dtype=np.float64), got.shape)
    bad = ~np.isclose(got64, expected, rtol=task.rtol, atol=task.atol) | never
    if not bad.any():
        return ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    where = _where(name, first)
    said = f"{int(bad.sum())} of {bad.size} elements of {name} are wrong"
    if never.any():
        i = tuple(int(j) for j in np.argwhere(never)[0])
        return (
            f"{said}; {int(never.sum())} were never written, the first {_where(name, i)}: "
            "check that every element has a thread (grid x block x elements per thread covers "
            "them all)"
        )
    if not np.isfinite(got64[bad]).all():
        value = f"{said}, {where} is {got64[first]} (expected {expected[first]:.4g})"
        if "divide by zero" in fp_errors:
            return (f"{value}: a division by zero gave inf or nan; guard the divisor (an `if` "
                    "on it, or a small epsilon added)")  # fmt: skip
        if "overflow" in fp_errors and kernel is not None and _uses_exp(kernel):
            return (f"{value}: a value overflowed {got.dtype}; exp() of a large number does: "
                    "subtract the row's maximum first")  # fmt: skip
        if "overflow" in fp_errors:
            return f"{value}: a value overflowed {got.dtype}; scale the values down first"
        if "invalid value" in fp_errors:
            return (f"{value}: an operation without a result (0/0, inf - inf, a square root "
                    "of a negative number) gave nan")  # fmt: skip
        return f"{value}: a non-finite value"
    return f"{said}, the first {where} ({got64[first]:.4g}, expected {expected[first]:.4g})"


def _read_before_written(kernel, task: Task, args: dict, fresh: dict, grid, block) -> str:
    """The sentence for outputs the kernel reads before writing ('' when it does not).

    The gym fills outputs with a marker NaN, so ``C[i, j] += x`` on an output no thread
    set first leaves the marker in place, as if the element were never written. Run
    again with the outputs set to zero: an element that is no longer the marker was
    written, on top of whatever it held (on a GPU: garbage).
    """
    again = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in fresh.items()}
    for name in task.outputs:
        again[name] = np.zeros_like(again[name])
    try:
        with np.errstate(all="ignore"):
            simulate(kernel, grid, block, *[again[a] for a in task.args], count=False,
                     strict=True, time_limit_s=GRADE_TIME_LIMIT_S)  # fmt: skip
    except Exception:  # noqa: BLE001 - the first run's sentence stands
        return ""
    for name in task.outputs:
        never = unwritten(args[name])
        accumulated = never & (again[name] != 0)
        if accumulated.any():
            i = tuple(int(j) for j in np.argwhere(accumulated)[0])
            return (
                f"{_where(name, i)} is read before any thread writes it (an accumulation "
                f"such as `{name}[...] += ...` into an output that holds garbage on a GPU): "
                "sum into a local variable that starts at 0 and write the output once at the end"
            )
    return ""


def _run_shape(kernel, task: Task, shape: tuple, rng, count: bool):
    """(problem sentence or '', counts or None, whether the kernel seemed endless)."""
    args = task.inputs(shape, rng)
    fresh = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    expected = task.reference({k: (v.copy() if isinstance(v, np.ndarray) else v)
                               for k, v in args.items()})  # fmt: skip
    grid, block = task.launch(shape)
    label = task.describe(shape)
    seen: set[str] = set()

    def note(kind: str, _flag: int) -> None:
        seen.add(kind)

    try:
        # floating-point errors show in the result; they are noted, and said in a sentence
        with np.errstate(all="call", call=note):
            counts = simulate(kernel, grid, block, *[args[a] for a in task.args],
                              count=count, strict=True,
                              time_limit_s=GRADE_TIME_LIMIT_S)  # fmt: skip
    except KernelFault as exc:
        return f"{label}: {str(exc).rstrip('.')}", None, isinstance(exc, EndlessError)
    except RecursionError:
        return f"the kernel recursed without end for {label}", None, False
    except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as a sentence
        return f"{label}: {_exception_sentence(exc, kernel)}", None, False
    for name in task.outputs:
        wrong = _mismatch(name, args[name], expected[name], task, frozenset(seen), kernel)
        if wrong and "never written" in wrong:
            wrong = _read_before_written(kernel, task, args, fresh, grid, block) or wrong
        if wrong:
            return f"wrong result for {label}: {wrong}", None, False
    return "", counts, False


def grade_kernel(kernel, task, *, time_on_gpu: bool = False, quiet: bool = False) -> GradeReport:
    """Run ``kernel`` on the gym task ``task`` in the simulator; check it, count it, advise.

    Parameters
    ----------
    kernel : function or None
        The kernel, in Numba's CUDA kernel language (a plain function, or what
        ``numba.cuda.jit`` returned). None means "not written yet": the report says so.
        A launch that runs longer than ``GRADE_TIME_LIMIT_S`` seconds is stopped and
        reported as endless, and the shapes after it are not run.
    task : str or Task
        The task's name, one of ``gpulab.kernels.gym_tasks.TASKS``, or a task of one's own
        (:func:`gpulab.kernels.gym_tasks.custom_task` makes one from a reference function).
    time_on_gpu : bool
        Also compile the kernel with Numba and time it against torch where a CUDA GPU is
        available (a measurement); elsewhere the report says it was not timed.
    quiet : bool
        Do not print the report; only return it.

    Returns
    -------
    GradeReport
        ``passed`` when the kernel is right on every shape and meets every target.

    Raises
    ------
    TypeError
        ``kernel`` is not a function, ``task`` not a name, a flag not True or False.
    ValueError
        ``task`` is not a gym task.
    """
    task = get_task(task)
    flag("time_on_gpu", time_on_gpu)
    flag("quiet", quiet)
    if kernel is None:
        lines = (f"Kernel gym, task {task.name!r}: no kernel yet; write it above, set answer "
                 "to it, run this cell again.",)  # fmt: skip
        report = GradeReport(task.name, "", (), (), None, lines=lines)
        if not quiet:
            print(report)
        return report
    kernel = _kernel_function(kernel)
    rng = np.random.default_rng(_SEED)
    results, counts = [], None
    wrong_signature = _signature_problem(kernel, task)
    endless = False
    for i, shape in enumerate(task.shapes):
        last = i == len(task.shapes) - 1
        if wrong_signature:
            problem, c = wrong_signature, None
        elif endless:  # one endless launch is enough to wait for
            problem, c = "not run: the kernel did not end on an earlier shape", None
        else:
            problem, c, endless = _run_shape(kernel, task, shape, rng, count=last)
        results.append(ShapeResult(task.describe(shape), not problem, problem))
        if last:
            counts = c
    targets = []
    if counts is not None and all(r.ok for r in results):
        shape = task.count_shape
        for t in task.targets:
            value, goal = float(t.measure(counts, shape)), float(t.goal(shape))
            targets.append(TargetResult(
                t.name, value, goal, t.at_most, t.met(value, goal),
                t.advice.format(value=value, goal=goal), t.percent,
            ))  # fmt: skip
    gpu = ""
    if time_on_gpu and all(r.ok for r in results):
        gpu = time_on_gpu_line(kernel, task)
    lines = [f"Kernel gym: {kernel.__name__} on task {task.name!r}"]
    for r in results:
        lines.append(f"  {'right' if r.ok else 'WRONG'}  {r.shape}")
    if targets:
        lines.append(f"  counts for {task.describe(task.count_shape)} "
                     "(counted by the simulator, not times):")  # fmt: skip
        for t in targets:
            sign = "<=" if t.at_most else ">="
            lines.append(f"  {'met   ' if t.met else 'MISSED'} {t.name}: "
                         f"{_fmt(t.value, t.percent)} (target {sign} "
                         f"{_fmt(t.goal, t.percent)})")  # fmt: skip
    grid, block = task.launch(task.count_shape)
    blocks = grid if isinstance(grid, int) else int(np.prod(grid))
    block = tuple(block) if isinstance(block, tuple) else (block,)
    block = (*block, 1, 1)[:3]
    if targets and counts.barriers:
        per_block = counts.barriers // blocks
        lines.append(
            f"  also counted: {per_block} barrier{'' if per_block == 1 else 's'} per block"
        )
    if gpu:
        lines.append(f"  {gpu}")
    report = GradeReport(task.name, kernel.__name__, tuple(results), tuple(targets), counts,
                         gpu, ())  # fmt: skip
    verdict = (
        "Passed: right on every shape, every target met."
        if report.passed
        else f"To change first: {report.first_problem}."
    )
    lines.append(textwrap.fill(verdict, width=WRAP, subsequent_indent="  "))
    report = GradeReport(report.task, report.kernel, report.shapes, report.targets,
                         counts, gpu, tuple(lines), blocks, block)  # fmt: skip
    if not quiet:
        print(report)
    return report


def _fmt(value: float, percent: bool = False) -> str:
    if percent:
        return f"{value:.0%}"
    return f"{int(value):,}" if value == int(value) else f"{value:,.2f}"


# --------------------------------------------------------------------------- on a GPU


def time_on_gpu_line(kernel, task) -> str:
    """Compile ``kernel`` with Numba, check it and time it against torch on the GPU.

    Returns one line: the two median times, labelled as measured, with the device, the
    shape and the date; or why nothing was timed (no GPU, or Numba cannot compile here).
    """
    from gpulab.kernels import cuda_kernels as ck

    task = get_task(task)
    if task.torch_op is None:
        return "GPU timing: not measured (a task of one's own has no torch operation to time)"
    if not ck.numba_cuda_available():
        return f"GPU timing: not measured here ({ck.numba_cuda_missing_reason()})"
    return time_kernel_on_gpu(kernel, task).line


@dataclass(frozen=True)
class GpuTiming:
    """A kernel and torch timed on one GPU: measurements, with where and when."""

    kernel_s: float
    torch_s: float
    device: str
    shape: str
    date: str

    @property
    def line(self) -> str:
        return (
            f"measured on {self.device}, {self.shape}, {self.date}: your kernel "
            f"{self.kernel_s * 1e3:.3f} ms, torch {self.torch_s * 1e3:.3f} ms "
            f"(median; torch / yours = {self.torch_s / self.kernel_s:.2f})"
        )


def time_kernel_on_gpu(
    kernel, task, *, device: str = "cuda", min_run_time_s: float = 0.2
) -> GpuTiming:
    """Time ``kernel`` (compiled by Numba) and torch's operation on the task's GPU shape.

    The kernel's result is checked against torch's first; a wrong one raises.

    Parameters
    ----------
    kernel : function
        The kernel in Numba's CUDA kernel language.
    task : str or Task
        The gym task.
    device : str
        Where the tensors live: ``"cuda"`` (the tests pass ``"cpu"`` with a stand-in for
        Numba).
    min_run_time_s : float
        Seconds of measurement for each of the two timings, at least.

    Raises
    ------
    RuntimeError
        Numba cannot compile for a GPU here, or the compiled kernel's result is wrong.
    """
    import torch

    from gpulab.kernels import cuda_kernels as ck
    from gpulab.measure.bench import benchmark

    task = get_task(task)
    kernel = _kernel_function(kernel)
    compiled = ck.compile_for_gpu(kernel)
    shape = task.gpu_shape
    host = task.inputs(shape, np.random.default_rng(_SEED))
    tensors = {k: torch.from_numpy(v).to(device) if isinstance(v, np.ndarray) else v
               for k, v in host.items()}  # fmt: skip
    grid, block = task.launch(shape)
    out = tensors[task.outputs[0]]
    # converted once here, not by every launch inside the timed calls (tens of us each)
    launch_args = ck.as_cuda_arrays([tensors[a] for a in task.args])
    launch = compiled[grid, block]

    def run():
        if task.name == "reduce":
            out.zero_()
        launch(*launch_args)

    run()
    torch.cuda.synchronize()
    expected = task.torch_op(tensors)
    if not torch.allclose(out.double().reshape(expected.shape), expected.double(),
                          rtol=1e-3, atol=1e-3):  # fmt: skip
        raise RuntimeError(
            f"the compiled kernel's result for {task.describe(shape)} differs from torch's"
        )
    ours = benchmark(run, min_run_time_s=min_run_time_s, label=f"{kernel.__name__} (Numba)")
    theirs = benchmark(lambda: task.torch_op(tensors), min_run_time_s=min_run_time_s,
                       label="torch")  # fmt: skip
    return GpuTiming(
        kernel_s=ours.median_s,
        torch_s=theirs.median_s,
        device=torch.cuda.get_device_name(),
        shape=task.describe(shape),
        date=datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
    )
