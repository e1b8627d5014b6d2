"""Timing done right: synchronize the device, warm up, repeat, report median and spread.

``benchmark`` wraps :class:`torch.utils.benchmark.Timer` (which synchronizes CUDA around
every measurement block and picks a block size so timer overhead is negligible) or, for
CuPy code, :func:`cupyx.profiler.benchmark` (which times with CUDA events). ``timer`` is
the one-line context manager for coarse timings such as a whole training run.

See also the chapter "What a GPU is" (``book/gpu_basics.md``) and its lab.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from gpulab._checks import (
    MAX_REPEATS,
    MAX_RUN_TIME_S,
    MAX_THREADS,
    at_most,
    choice,
    flag,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.units import format_duration

__all__ = ["BenchResult", "Stopwatch", "benchmark", "timer", "synchronize"]

_BACKENDS = ("torch", "cupy")


@dataclass(frozen=True)
class BenchResult:
    """Per-call times of one benchmarked function, with summary statistics.

    Attributes
    ----------
    times_s : tuple of float
        Seconds per call, one entry per measured block (each block averages
        ``calls_per_block`` calls, so the timer's own overhead stays negligible).
    calls_per_block : int
        Calls averaged into each entry of ``times_s``.
    label : str
        What was measured.
    backend : str
        ``"torch"`` or ``"cupy"``: which timing tool produced the numbers.
    """

    times_s: tuple[float, ...]
    calls_per_block: int
    label: str = ""
    backend: str = "torch"

    def __post_init__(self) -> None:
        if isinstance(self.times_s, (str, bytes)) or not hasattr(self.times_s, "__len__"):
            raise wrong_type("times_s", self.times_s, "a sequence of seconds")
        if len(self.times_s) == 0:
            raise ValueError("times_s=() is empty: at least one measured block is needed")
        for i, t in enumerate(self.times_s):
            non_negative_number(f"times_s[{i}]", t)
        positive_int("calls_per_block", self.calls_per_block)
        text("label", self.label)
        choice("backend", self.backend, _BACKENDS)

    @property
    def median_s(self) -> float:
        """Median seconds per call."""
        return statistics.median(self.times_s)

    @property
    def iqr_s(self) -> float:
        """Interquartile range of the seconds per call (the spread)."""
        q1, q3 = np.percentile(self.times_s, [25, 75])
        return float(q3 - q1)

    @property
    def runs(self) -> int:
        """Total number of calls measured."""
        return len(self.times_s) * self.calls_per_block

    def flops_per_s(self, flops: float) -> float:
        """FLOP/s achieved if one call performs ``flops`` floating-point operations."""
        return flops / self.median_s

    def tflops(self, flops: float) -> float:
        """Like :meth:`flops_per_s`, in TFLOP/s (10¹² FLOP/s)."""
        return self.flops_per_s(flops) / 1e12

    def bytes_per_s(self, n_bytes: float) -> float:
        """Bytes/s achieved if one call moves ``n_bytes`` bytes to or from memory."""
        return n_bytes / self.median_s

    def gbs(self, n_bytes: float) -> float:
        """Like :meth:`bytes_per_s`, in GB/s (10⁹ bytes/s)."""
        return self.bytes_per_s(n_bytes) / 1e9

    def __str__(self) -> str:
        label = f"{self.label}: " if self.label else ""
        return (
            f"{label}median {format_duration(self.median_s)} per call "
            f"(IQR {format_duration(self.iqr_s)}, {self.runs} runs)"
        )


def _cupy_gpu(cupy) -> bool:
    """Whether an imported CuPy sees a GPU; False for a CuPy that cannot reach one."""
    try:
        return bool(cupy.is_available())
    except Exception:  # a wheel for the wrong CUDA, or no driver: nothing to wait for
        return False


def synchronize() -> None:
    """Wait until every queued GPU operation has finished; no-op on a CPU.

    Waits for torch's CUDA (or Apple MPS) queue, and for CuPy's current stream when CuPy has
    been imported and sees a GPU (CuPy work is queued whether or not torch ever used CUDA).
    CuPy is never imported here: code that has not imported it has queued nothing on it.
    """
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            torch.mps.synchronize()
    cupy = sys.modules.get("cupy")
    if cupy is not None and _cupy_gpu(cupy):
        # Not guarded: an error here is a failed kernel, which must surface.
        cupy.cuda.get_current_stream().synchronize()


def benchmark(
    fn: Callable[[], object],
    *,
    label: str = "",
    min_run_time_s: float = 0.2,
    warmup: int = 1,
    num_threads: int | None = None,
    backend: str = "torch",
    repeats: int = 20,
) -> BenchResult:
    """Time ``fn()`` correctly: warm up, synchronize, repeat, keep every sample.

    Parameters
    ----------
    fn : callable
        Called with no arguments; wrap arguments in a lambda.
    label : str
        Name shown when the result is printed.
    min_run_time_s : float
        Seconds of measurement to collect at least (``backend="torch"``), at most
        ``MAX_RUN_TIME_S`` (600 s).
    warmup : int
        Calls made before timing starts (lazy initialisation, autotuning, caches), with the
        same ``num_threads`` as the timed calls; at most ``MAX_REPEATS``.
    num_threads : int, optional
        CPU threads torch may use while warming up and timing (at most
        ``MAX_THREADS``); default: what torch uses now
        (note that ``torch.utils.benchmark.Timer`` on its own would default to one thread).
        Restored afterwards.
    backend : {"torch", "cupy"}
        ``"torch"``: :class:`torch.utils.benchmark.Timer`, which synchronizes CUDA.
        ``"cupy"``: :func:`cupyx.profiler.benchmark`, which times on the GPU with CUDA events.
    repeats : int
        Timed calls for ``backend="cupy"``, at most ``MAX_REPEATS``.

    Returns
    -------
    BenchResult

    Examples
    --------
    >>> import time, gpulab as gl
    >>> r = gl.benchmark(lambda: time.sleep(0.002), min_run_time_s=0.05)
    >>> 0.0019 < r.median_s < 0.01
    True

    See also
    --------
    timer : a coarse, one-shot timing as a context manager.
    """
    if not callable(fn):
        raise TypeError(f"fn={fn!r} is not callable; pass a function, e.g. lambda: a @ b")
    choice("backend", backend, _BACKENDS)
    min_run_time_s = at_most(
        "min_run_time_s",
        positive_number("min_run_time_s", min_run_time_s),
        MAX_RUN_TIME_S,
        "a benchmark's longest run",
        unit="s",
    )
    warmup = at_most(
        "warmup", non_negative_int("warmup", warmup), MAX_REPEATS, "warm-up calls of a benchmark"
    )
    repeats = at_most(
        "repeats", positive_int("repeats", repeats), MAX_REPEATS, "timed calls of a benchmark"
    )
    text("label", label)
    if num_threads is not None:
        num_threads = at_most(
            "num_threads", positive_int("num_threads", num_threads), MAX_THREADS, "CPU threads"
        )
    if backend == "cupy":
        return _benchmark_cupy(fn, label, warmup, repeats)

    import torch
    from torch.utils import benchmark as tbench

    threads = torch.get_num_threads() if num_threads is None else num_threads
    before = torch.get_num_threads()
    torch.set_num_threads(threads)  # warm up as the Timer will measure: same threads
    try:
        for _ in range(warmup):
            fn()
        synchronize()
    finally:
        torch.set_num_threads(before)
    timer_ = tbench.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads, label=label)
    measurement = timer_.blocked_autorange(min_run_time=min_run_time_s)
    return BenchResult(tuple(measurement.times), measurement.number_per_run, label, "torch")


def _benchmark_cupy(
    fn: Callable[[], object], label: str, warmup: int, repeats: int
) -> BenchResult:
    try:
        from cupyx.profiler import benchmark as cupy_benchmark
    except ImportError as exc:
        raise RuntimeError(
            "backend='cupy' needs CuPy with a CUDA GPU; use backend='torch' otherwise"
        ) from exc
    result = cupy_benchmark(fn, repeats=repeats, n_warmup=warmup)
    gpu_times = np.asarray(result.gpu_times)[0]
    return BenchResult(tuple(float(t) for t in gpu_times), 1, label, "cupy")


@dataclass
class Stopwatch:
    """What :func:`timer` yields; ``elapsed_s`` is filled in when the block ends."""

    label: str = ""
    elapsed_s: float = float("nan")

    def __post_init__(self) -> None:
        text("label", self.label)
        # NaN means "still running"; anything else is a duration.
        is_nan = isinstance(self.elapsed_s, float) and math.isnan(self.elapsed_s)
        if not is_nan:
            non_negative_number("elapsed_s", self.elapsed_s)

    def __str__(self) -> str:
        label = f"{self.label}: " if self.label else ""
        if math.isnan(self.elapsed_s):
            return f"{label}still running"
        return f"{label}{format_duration(self.elapsed_s)}"


def timer(label: str = "", *, verbose: bool = True):
    """Time a block once, synchronizing the GPU at both ends.

    One measurement, no repeats: for things that take seconds (a training run, an
    epoch). For anything short use :func:`benchmark`.

    Examples
    --------
    >>> import time, gpulab as gl
    >>> with gl.timer("nap", verbose=False) as t:
    ...     time.sleep(0.01)
    >>> t.elapsed_s >= 0.01
    True
    """
    text("label", label)
    flag("verbose", verbose)
    return _timed(label, verbose)


@contextmanager
def _timed(label: str, verbose: bool) -> Iterator[Stopwatch]:
    watch = Stopwatch(label)
    synchronize()
    start = time.perf_counter()
    try:
        yield watch
    finally:
        synchronize()
        watch.elapsed_s = time.perf_counter() - start
        if verbose:
            print(watch)
