"""Reading a PyTorch profiler trace: where a GPU's time went, and what launched each kernel.

``torch.profiler`` (its Kineto back end) writes a trace as Chrome-trace JSON: one event per
operator the host ran (category ``cpu_op``), per CUDA runtime call (``cuda_runtime``: the
host launching a kernel, copying, synchronizing) and per piece of GPU work (``kernel``,
``gpu_memcpy``, ``gpu_memset``). A runtime call and the GPU work it started share a
**correlation id** (``args["correlation"]``), and a runtime call runs inside the operator
that made it, on the same host thread; that is how a trace says which kernels
``aten::relu`` launched.

This module reads such a trace with the standard library only (:func:`read_trace`; it
records one with :func:`record_trace`) and computes from it:

* :func:`time_breakdown`: the GPU's busy and idle time over the traced window, by kind of
  work (compute, communication, memory) and how much communication overlapped computation;
* :func:`top_kernels`: the kernels that took the most GPU time;
* :func:`launch_stats`: the host's time to launch each kernel against the kernel's own time;
* :func:`operator_kernels`: the kernels each call of an operator launched;
* :func:`operator_table`: an operator's calls, host time and kernels, on a CPU or a GPU trace.

The kinds of GPU work follow HolisticTraceAnalysis (``hta.utils.utils.get_kernel_type``,
tag v0.5.0), so its readings and these can be compared (:mod:`gpulab.measure.hta_reading`):
a kernel named ``nccl...Kernel...`` is communication; a copy or a fill (``Memcpy``,
``Memset``, ``dma``) is memory; a name with ``Sync`` in it is other; everything else is
compute. The traces the course ships (:data:`TRACES`) are real runs on A100s, taken from
HolisticTraceAnalysis's test data; their provenance is in ``gpulab/data/gpu_traces.json``.

See also the lab ``notebooks/gpu_trace_lab.ipynb``.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from gpulab._checks import choice, flag, function, positive_int, text, wrong_type
from gpulab._checks import path as checked_path

__all__ = [
    "KERNEL_KINDS",
    "TRACES",
    "GpuTrace",
    "TraceEvent",
    "kernel_kind",
    "operator_kernels",
    "operator_table",
    "read_trace",
    "record_trace",
    "time_breakdown",
    "top_kernels",
    "launch_stats",
    "trace_sources",
]

#: The kinds of GPU work a trace is split into (:func:`kernel_kind`).
KERNEL_KINDS = ("compute", "communication", "memory", "other")

_DATA = Path(__file__).resolve().parents[1] / "data"
_MANIFEST = _DATA / "gpu_traces.json"

#: The traces the course ships, by name: ``gpulab/data/traces/<name>/`` (one rank each).
TRACES = ("a100_ddp_nccl", "a100_alexnet")

#: The event categories that are GPU work (HolisticTraceAnalysis: a stream other than -1).
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")

_COMM = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
_NOT_COMPUTE = re.compile(r".*(Memcpy|Sync)|Memset")

#: Runtime calls that start GPU work for an operator.
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


def kernel_kind(name: str) -> str:
    """The kind of GPU work a kernel's name says it is: one of :data:`KERNEL_KINDS`.

    Examples
    --------
    >>> kernel_kind("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)")
    'communication'
    >>> kernel_kind("Memcpy DtoD (Device -> Device)")
    'memory'
    >>> kernel_kind("ampere_sgemm_32x32_sliced1x4_tn")
    'compute'
    """
    if not isinstance(name, str):
        raise wrong_type("name", name, "a kernel's name (str)")
    if _COMM.match(name):
        return "communication"
    if _MEMORY.match(name):
        return "memory"
    if _NOT_COMPUTE.match(name):
        return "other"
    return "compute"


def short_kernel_name(name: str, width: int = 60) -> str:
    """A kernel's name without its namespaces, template arguments and parameters.

    Examples
    --------
    >>> short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::"
    ...                   "AUnaryFunctor<float>>(int, float*)")
    'vectorized_elementwise_kernel'
    >>> short_kernel_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_nn>(P)")
    'cutlass_80_tensorop_s1688gemm_256x64_nn'
    >>> short_kernel_name("Memcpy DtoD (Device -> Device)")
    'Memcpy DtoD (Device -> Device)'
    """
    if _MEMORY.match(name):
        return name[:width]
    bare = name.removeprefix("void ")
    cut = min([i for i in (bare.find("<"), bare.find("(")) if i >= 0], default=len(bare))
    head = bare[:cut].rsplit("::", 1)[-1]
    if head == "Kernel" and bare[cut:cut + 1] == "<":  # cutlass::Kernel<the_real_name>
        head = re.split(r"[<>,(]", bare[cut + 1:], maxsplit=1)[0].rsplit("::", 1)[-1]
    return (head or bare)[:width]


@dataclass(frozen=True)
class TraceEvent:
    """One complete event (``"ph": "X"``) of a trace, in seconds.

    Attributes
    ----------
    name, category : str
        The event's name (an operator, a runtime call, a kernel) and its ``cat``.
    start_s, duration_s : float
        Start on the trace's clock, and duration, in seconds.
    thread : int or str
        The host thread (``tid``) or, for GPU work, the stream's row.
    correlation : int or None
        The id shared by a runtime call and the GPU work it started.
    """

    name: str
    category: str
    start_s: float
    duration_s: float
    thread: int | str
    correlation: int | None = None

    @property
    def end_s(self) -> float:
        """When the event ended, in seconds on the trace's clock."""
        return self.start_s + self.duration_s


@dataclass(frozen=True)
class GpuTrace:
    """A PyTorch profiler trace, read (:func:`read_trace`).

    Attributes
    ----------
    name : str
        The shipped trace's name, or the file's name.
    path : pathlib.Path
        The trace file.
    device : str
        The GPU the trace's rank used (``deviceProperties``), or ``"CPU only"``.
    events : tuple of TraceEvent
        Its complete events, in order of start.
    rank, world_size : int
        The rank this trace is, of how many (1 for a run on one device).
    steps : int
        How many whole profiler steps (``ProfilerStep#N``) the GPU work kept covers.
    dropped : int
        How many pieces of GPU work were left out because the host launched them in the
        last, cut-off, profiler step (see :func:`read_trace`).
    """

    name: str
    path: Path
    device: str
    events: tuple[TraceEvent, ...]
    rank: int = 0
    world_size: int = 1
    steps: int = 0
    dropped: int = 0

    def of(self, *categories: str) -> list[TraceEvent]:
        """The events of the given categories, in order of start."""
        return [e for e in self.events if e.category in categories]

    @property
    def gpu_work(self) -> list[TraceEvent]:
        """Kernels, copies and fills that ran on the GPU."""
        return self.of(*GPU_CATEGORIES)

    @property
    def has_gpu_work(self) -> bool:
        """Whether any work ran on a GPU (a CPU-only profile has operators only)."""
        return bool(self.gpu_work)


def _source(name_or_path) -> tuple[str, Path]:
    if isinstance(name_or_path, str) and name_or_path in TRACES:
        folder = _DATA / "traces" / name_or_path
        (path,) = sorted(folder.glob("*.json*"))
        return name_or_path, path
    if not isinstance(name_or_path, (str, Path)):
        raise wrong_type("trace", name_or_path, f"a trace file's path or one of {TRACES}")
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(
            f"trace={str(name_or_path)!r} is neither a trace file nor a shipped trace; "
            f"use a path to a profiler's .json or .json.gz, or one of {', '.join(TRACES)}"
        )
    return path.name.split(".json")[0], path


def read_trace(trace, *, last_step: bool = False) -> GpuTrace:
    """Read a PyTorch profiler trace (Chrome-trace JSON, plain or gzipped).

    A profiler with a schedule records steps (``ProfilerStep#N``) and stops in the middle
    of the last one: the GPU work launched in that step is cut off. When a trace has two
    steps or more, that work is left out (as HolisticTraceAnalysis does), unless
    ``last_step`` is True.

    Parameters
    ----------
    trace : str or pathlib.Path
        A file written by ``prof.export_chrome_trace(path)`` or by
        ``torch.profiler.tensorboard_trace_handler``, or the name of a trace the course
        ships (one of :data:`TRACES`).
    last_step : bool, default False
        Keep the GPU work of the last profiler step.

    Returns
    -------
    GpuTrace

    Raises
    ------
    TypeError
        If ``trace`` is not a path or a name.
    ValueError
        If it is neither a file nor a shipped trace, or the file holds no trace events.

    Examples
    --------
    >>> t = read_trace("a100_alexnet")
    >>> t.device, len(t.of("kernel")), t.has_gpu_work
    ('NVIDIA A100-PG509-200', 79, True)
    """
    flag("last_step", last_step)
    name, path = _source(trace)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"trace={str(path)!r} is not a profiler trace (JSON): {err}") from None
    raw = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ValueError(f"trace={str(path)!r} has no 'traceEvents' list: not a profiler trace")
    events = []
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e:
            continue
        args = e.get("args") or {}
        events.append(TraceEvent(
            name=str(e.get("name", "")),
            category=str(e.get("cat", "")),
            start_s=float(e["ts"]) * 1e-6,
            duration_s=float(e["dur"]) * 1e-6,
            thread=e.get("tid", 0),
            correlation=args.get("correlation"),
        ))
    events.sort(key=lambda ev: ev.start_s)
    events, steps, dropped = _complete_steps(events, last_step)
    info = data.get("distributedInfo") or {}
    device = "CPU only"
    work = [e for e in raw if isinstance(e, dict) and e.get("cat") in GPU_CATEGORIES]
    if work:
        ids = {(e.get("args") or {}).get("device", 0) for e in work}
        props = {p.get("id"): p.get("name") for p in data.get("deviceProperties") or []}
        device = ", ".join(str(props.get(i, f"GPU {i}")) for i in sorted(ids))
    return GpuTrace(name, path, device, tuple(events), int(info.get("rank", 0)),
                    int(info.get("world_size", 1)), steps, dropped)


_STEP = re.compile(r"ProfilerStep\s*#\s*\d+$")


def _complete_steps(events: list[TraceEvent], last_step: bool):
    """Drop the GPU work the host launched during the last profiler step.

    The profiler stops in the middle of its last step, so that step's GPU work is cut off;
    HolisticTraceAnalysis leaves it out when a trace has two steps or more, and so does
    this. Returns the events kept, how many steps they cover, and how many were dropped.
    """
    starts = [e.start_s for e in events if _STEP.match(e.name)]
    if last_step or len(starts) < 2:
        return events, len(starts), 0
    cut = max(starts)
    launched = {e.correlation for e in events
                if e.category not in GPU_CATEGORIES and e.correlation is not None
                and e.start_s < cut}
    kept = [e for e in events if e.category not in GPU_CATEGORIES or e.correlation in launched]
    return kept, len(starts) - 1, len(events) - len(kept)


def record_trace(fn, path, *, repeats: int = 3, device=None) -> GpuTrace:
    """Profile ``repeats`` calls of ``fn`` with ``torch.profiler``, save the trace, read it.

    The profiler records the host's operators, and on a CUDA GPU the runtime calls and the
    kernels too (``ProfilerActivity.CUDA``, where this build of torch supports it). One
    untimed call runs first, so that one-time work (allocations, cuBLAS's set-up) stays
    out of the trace.

    Parameters
    ----------
    fn : callable
        The work to profile, called with no arguments (for example one training step).
    path : str or pathlib.Path
        Where to write the trace (Chrome-trace JSON; open it in https://ui.perfetto.dev).
    repeats : int, default 3
        Calls profiled.
    device : torch.device or str, optional
        Where ``fn`` runs (:func:`~gpulab.measure.device.torch_device`); GPU activity is
        recorded on a CUDA device only.

    Returns
    -------
    GpuTrace

    Examples
    --------
    >>> import tempfile, torch
    >>> x = torch.ones(8, 8)
    >>> t = record_trace(lambda: torch.relu(x @ x), tempfile.mkdtemp() + "/t.json",
    ...                  repeats=2, device="cpu")
    >>> sum(e.name == "aten::relu" for e in t.of("cpu_op")), t.has_gpu_work
    (2, False)
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from gpulab.measure.bench import synchronize
    from gpulab.measure.device import torch_device

    function("fn", fn)
    out = checked_path("path", path)
    positive_int("repeats", repeats)
    device = torch_device(device)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda" and ProfilerActivity.CUDA in torch.profiler.supported_activities():
        activities.append(ProfilerActivity.CUDA)
    fn()
    synchronize()
    with profile(activities=activities) as prof:
        for _ in range(repeats):
            fn()
        synchronize()
    out.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(out))
    return read_trace(out)


def _checked_trace(trace) -> GpuTrace:
    if isinstance(trace, GpuTrace):
        return trace
    if isinstance(trace, (str, Path)):
        return read_trace(trace)
    raise wrong_type("trace", trace, "a GpuTrace (gl.measure.gpu_trace.read_trace) or a path")


def _merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intervals merged so that none overlap, in order."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def _length(intervals: Sequence[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def _intersection(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """Time that two lists of merged intervals share."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class TimeBreakdown:
    """Where a GPU's time went over a trace's window (:func:`time_breakdown`).

    Attributes
    ----------
    window_s : float
        From the start of the first GPU work to the end of the last.
    busy_s : float
        Time any GPU work ran (overlapping work counted once).
    by_kind_s : dict of str to float
        Time each kind of work (:data:`KERNEL_KINDS`) ran, overlaps within a kind counted
        once; kinds can overlap one another, so these can sum to more than ``busy_s``.
    overlap_s : float
        Time communication and computation ran at once.
    n_work : int
        How many kernels, copies and fills ran.
    exclusive_s : dict of str to float
        The busy time split by which kinds ran together: ``"compute"`` alone,
        ``"communication + compute"``... (kinds joined by `` + `` in the order of
        :data:`KERNEL_KINDS`, communication first). The values sum to ``busy_s``.

    Examples
    --------
    >>> b = TimeBreakdown(10.0, 6.0, {"compute": 4.0, "communication": 3.0}, 1.0, 5,
    ...                   {"compute": 3.0, "communication + compute": 1.0, "communication": 2.0})
    >>> b.idle_s, b.share("compute"), b.idle_share, b.overlap_share
    (4.0, 0.4, 0.4, 0.3333333333333333)
    """

    window_s: float
    busy_s: float
    by_kind_s: dict
    overlap_s: float
    n_work: int
    exclusive_s: dict

    @property
    def idle_s(self) -> float:
        """Time in the window when no GPU work ran."""
        return self.window_s - self.busy_s

    @property
    def idle_share(self) -> float:
        """Idle time over the window."""
        return self.idle_s / self.window_s

    def share(self, kind: str) -> float:
        """One kind's time (:data:`KERNEL_KINDS`) over the window."""
        choice("kind", kind, KERNEL_KINDS)
        return self.by_kind_s.get(kind, 0.0) / self.window_s

    @property
    def overlap_share(self) -> float:
        """The part of communication time hidden under computation (0 without any)."""
        comm = self.by_kind_s.get("communication", 0.0)
        return self.overlap_s / comm if comm else 0.0


def _no_gpu_work(trace: GpuTrace) -> ValueError:
    return ValueError(
        f"trace {trace.name!r} ({trace.device}) holds no GPU work: a CPU profile records "
        "operators, not kernels; use operator_table for it, or a trace from a GPU run"
    )


def time_breakdown(trace) -> TimeBreakdown:
    """Split a trace's GPU time into compute, communication, memory and idle.

    The window runs from the first piece of GPU work to the end of the last (as
    HolisticTraceAnalysis's temporal breakdown does); overlapping work is counted once.

    Parameters
    ----------
    trace : GpuTrace or str or pathlib.Path
        A trace (:func:`read_trace`), its file, or a shipped trace's name.

    Returns
    -------
    TimeBreakdown

    Raises
    ------
    ValueError
        If the trace holds no GPU work (a CPU-only profile).

    Examples
    --------
    >>> b = time_breakdown("a100_ddp_nccl")
    >>> round(100 * b.share("compute")), round(100 * b.overlap_share)
    (18, 15)
    """
    trace = _checked_trace(trace)
    work = trace.gpu_work
    if not work:
        raise _no_gpu_work(trace)
    everything = _merged((e.start_s, e.end_s) for e in work)
    kinds = {k: _merged((e.start_s, e.end_s) for e in work if kernel_kind(e.name) == k)
             for k in KERNEL_KINDS}
    return TimeBreakdown(
        window_s=everything[-1][1] - everything[0][0],
        busy_s=_length(everything),
        by_kind_s={k: _length(v) for k, v in kinds.items()},
        overlap_s=_intersection(kinds["compute"], kinds["communication"]),
        n_work=len(work),
        exclusive_s=_exclusive(kinds),
    )


#: The order kinds are named in when they run together.
_TOGETHER_ORDER = ("communication", "compute", "memory", "other")


def _exclusive(kinds: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    """Busy time by the set of kinds running, from each kind's merged intervals."""
    edges = sorted((t, step, k) for k, spans in kinds.items() for a, b in spans
                   for t, step in ((a, 1), (b, -1)))
    running = dict.fromkeys(kinds, 0)
    out: dict[str, float] = {}
    for (t, step, kind), nxt in zip(edges, edges[1:] + [None], strict=True):
        running[kind] += step
        if nxt is None or nxt[0] <= t:
            continue
        label = " + ".join(k for k in _TOGETHER_ORDER if running.get(k, 0) > 0)
        if label:
            out[label] = out.get(label, 0.0) + nxt[0] - t
    return out


@dataclass(frozen=True)
class KernelTime:
    """One kernel's GPU time in a trace (a row of :func:`top_kernels`).

    Attributes
    ----------
    name : str
        Its short name (no namespaces, template arguments or parameters).
    kind : str
        One of :data:`KERNEL_KINDS`.
    calls : int
        How many times it ran.
    total_s : float
        Its time, summed over the calls.
    share : float
        ``total_s`` over the time of all the trace's GPU work.
    """

    name: str
    kind: str
    calls: int
    total_s: float
    share: float


def top_kernels(trace, n: int = 5) -> list[KernelTime]:
    """The ``n`` kernels (by full name) that took the most GPU time, longest first.

    Examples
    --------
    >>> top = top_kernels("a100_alexnet", n=2)
    >>> [(k.name, k.kind, k.calls) for k in top]  # doctest: +NORMALIZE_WHITESPACE
    [('Memcpy HtoD (Pageable -> Device)', 'memory', 16),
     ('ampere_sgemm_32x32_sliced1x4_tn', 'compute', 6)]
    """
    trace = _checked_trace(trace)
    positive_int("n", n)
    work = trace.gpu_work
    if not work:
        raise _no_gpu_work(trace)
    totals: dict[str, list] = {}
    for e in work:
        row = totals.setdefault(e.name, [0, 0.0])
        row[0] += 1
        row[1] += e.duration_s
    everything = sum(e.duration_s for e in work)
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][1])[:n]
    return [KernelTime(short_kernel_name(name), kernel_kind(name), calls, t, t / everything)
            for name, (calls, t) in ranked]


@dataclass(frozen=True)
class LaunchStats:
    """The host's launch calls against the kernels they launched (:func:`launch_stats`).

    Attributes
    ----------
    launch_s, kernel_s : tuple of float
        Per launched kernel: the host's time in the launch call, and the kernel's time.
    delay_s : tuple of float
        Per launched kernel: from the start of the launch call to the start of the kernel
        (the time it waited in the queue, and the launch itself).

    Examples
    --------
    >>> s = LaunchStats((5e-6, 5e-6, 5e-6), (2e-6, 1e-3, 4e-6), (1e-5, 1e-5, 2e-5))
    >>> s.n, s.shorter_than_launch, round(s.median_launch_s * 1e6)
    (3, 2, 5)
    """

    launch_s: tuple[float, ...]
    kernel_s: tuple[float, ...]
    delay_s: tuple[float, ...]

    @property
    def n(self) -> int:
        """How many launched kernels were matched to their launch call."""
        return len(self.kernel_s)

    @property
    def median_launch_s(self) -> float:
        """The median time the host spent in one launch call."""
        return median(self.launch_s)

    @property
    def median_kernel_s(self) -> float:
        """The median time one launched kernel ran."""
        return median(self.kernel_s)

    @property
    def shorter_than_launch(self) -> int:
        """How many kernels ran for less time than the host took to launch them."""
        return sum(k < c for k, c in zip(self.kernel_s, self.launch_s, strict=True))

    @property
    def total_launch_s(self) -> float:
        """The host's time in launch calls, summed."""
        return sum(self.launch_s)

    @property
    def total_kernel_s(self) -> float:
        """The launched kernels' time, summed."""
        return sum(self.kernel_s)


def launch_stats(trace) -> LaunchStats:
    """Each kernel launch's host time against the kernel's time, matched by correlation id.

    Examples
    --------
    >>> s = launch_stats("a100_alexnet")
    >>> s.n, s.shorter_than_launch
    (79, 13)
    """
    trace = _checked_trace(trace)
    kernels = {e.correlation: e for e in trace.of("kernel") if e.correlation is not None}
    if not kernels:
        raise _no_gpu_work(trace)
    pairs = [(c, kernels[c.correlation]) for c in trace.of("cuda_runtime")
             if c.name in LAUNCH_CALLS and c.correlation in kernels]
    return LaunchStats(
        launch_s=tuple(c.duration_s for c, _ in pairs),
        kernel_s=tuple(k.duration_s for _, k in pairs),
        delay_s=tuple(k.start_s - c.start_s for c, k in pairs),
    )


@dataclass(frozen=True)
class LaunchedKernel:
    """A kernel an operator's call launched (a row of :func:`operator_kernels`).

    Attributes
    ----------
    call : int
        Which call of the operator (0 for the first in the trace).
    runtime_call : str
        The host's runtime call that launched it (``cudaLaunchKernel``...).
    correlation : int
        The id the runtime call and the kernel share.
    kernel : str
        The kernel's short name.
    kind : str
        One of :data:`KERNEL_KINDS`.
    duration_s : float
        The kernel's time.
    """

    call: int
    runtime_call: str
    correlation: int
    kernel: str
    kind: str
    duration_s: float


def _inside(calls: list[TraceEvent], op: TraceEvent) -> list[TraceEvent]:
    """The events of ``calls`` (sorted by start) that ran inside ``op`` on its thread."""
    starts = [c.start_s for c in calls]
    lo, hi = bisect_left(starts, op.start_s), bisect_right(starts, op.end_s)
    return [c for c in calls[lo:hi] if c.thread == op.thread and c.end_s <= op.end_s + 1e-9]


def _operator_calls(trace: GpuTrace, operator: str) -> list[TraceEvent]:
    text("operator", operator)
    calls = [e for e in trace.of("cpu_op") if e.name == operator]
    if not calls:
        names = sorted({e.name for e in trace.of("cpu_op") if e.name.startswith("aten::")})
        near = [n for n in names if operator.split("::")[-1].rstrip("_") in n][:6]
        raise ValueError(
            f"operator={operator!r} does not run in trace {trace.name!r}; "
            + (f"operators with a similar name: {', '.join(near)}" if near
               else f"it has {len(names)} aten operators, e.g. {', '.join(names[:6])}")
        )
    return calls


def operator_kernels(trace, operator: str) -> list[LaunchedKernel]:
    """The GPU kernels each call of ``operator`` launched, found by correlation id.

    A runtime call made inside the operator's call, on its thread, shares a correlation id
    with the kernel it launched. Nested operators count (``aten::linear`` calls
    ``aten::addmm``, whose kernels are therefore ``aten::linear``'s too).

    Parameters
    ----------
    trace : GpuTrace or str or pathlib.Path
    operator : str
        An operator's name as the profiler records it, e.g. ``"aten::relu_"``.

    Returns
    -------
    list of LaunchedKernel
        One row per kernel, in order of launch; empty for a CPU profile.

    Examples
    --------
    >>> [(k.call, k.kernel) for k in operator_kernels("a100_alexnet", "aten::addmm")][:2]
    [(0, 'ampere_sgemm_32x32_sliced1x4_tn'), (0, 'globalKernel')]
    """
    trace = _checked_trace(trace)
    calls = _operator_calls(trace, operator)
    runtime = trace.of("cuda_runtime")
    work = {e.correlation: e for e in trace.gpu_work if e.correlation is not None}
    rows = []
    for i, op in enumerate(calls):
        for rt in _inside(runtime, op):
            k = work.get(rt.correlation)
            if k is not None:
                rows.append(LaunchedKernel(i, rt.name, rt.correlation,
                                           short_kernel_name(k.name), kernel_kind(k.name),
                                           k.duration_s))
    return rows


@dataclass(frozen=True)
class OperatorRow:
    """One operator in a trace (a row of :func:`operator_table`).

    Attributes
    ----------
    operator : str
    calls : int
        How many times it ran.
    host_s : float
        The host's time in it, summed over the calls (its children included).
    kernels : int
        How many GPU kernels, copies and fills it launched (0 on a CPU).
    kernel_s : float
        Their GPU time, summed.
    """

    operator: str
    calls: int
    host_s: float
    kernels: int
    kernel_s: float


def operator_table(trace, operators: Sequence[str]) -> list[OperatorRow]:
    """Calls, host time and launched GPU work of each of ``operators`` in a trace.

    On a CPU profile the operator's host time is the arithmetic and it launches nothing;
    on a GPU trace its host time is mostly launching, and the work is in its kernels.

    Examples
    --------
    >>> [(r.operator, r.calls, r.kernels) for r in operator_table(
    ...     "a100_alexnet", ["aten::relu_", "aten::addmm"])]
    [('aten::relu_', 14, 14), ('aten::addmm', 6, 14)]
    """
    trace = _checked_trace(trace)
    if isinstance(operators, str) or not isinstance(operators, Sequence) or not operators:
        raise wrong_type("operators", operators, "a non-empty list of operator names (str)")
    rows = []
    for op in operators:
        calls = _operator_calls(trace, op)
        launched = operator_kernels(trace, op) if trace.has_gpu_work else []
        rows.append(OperatorRow(op, len(calls), sum(c.duration_s for c in calls),
                                len(launched), sum(k.duration_s for k in launched)))
    return rows


@dataclass(frozen=True)
class TraceSource:
    """Where a shipped trace comes from (an entry of ``gpulab/data/gpu_traces.json``)."""

    name: str
    device: str
    run: str
    recorded: str
    file: str
    source: str
    repository: str
    tag: str
    commit: str
    license: str
    sha256: str


def trace_sources() -> list[TraceSource]:
    """The provenance of each shipped trace (:data:`TRACES`), in that order.

    Examples
    --------
    >>> [s.tag for s in trace_sources()]
    ['v0.5.0', 'v0.5.0']
    """
    entries = json.loads(_MANIFEST.read_text(encoding="utf-8"))["traces"]
    by_name = {e["name"]: TraceSource(**e) for e in entries}
    return [by_name[name] for name in TRACES]
