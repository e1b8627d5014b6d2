"""The local CPU: its model, core count, an estimate of its peak FLOP/s, and its measured
memory bandwidth.

CPU vendors rarely publish a FLOP/s figure, so the course estimates one the way the
spec sheet does for server CPUs: cores × clock × FLOPs per cycle, where FLOPs per cycle
come from the widest vector unit the CPU advertises. The estimate is an upper bound.

See also the chapter "What a GPU is" (``book/gpu_basics.md``).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpulab._checks import (
    MAX_ARRAY_BYTES,
    MAX_RUN_TIME_S,
    at_most,
    finite_result,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.units import format_rate

__all__ = ["CpuPeak", "cpu_model", "cpu_cores", "estimate_cpu_peak", "measure_memory_bandwidth"]

#: Assumed fused multiply-add pipes per core (most x86 server and desktop cores since 2013 have
#: two; some have one, which halves the estimate).
ASSUMED_FMA_UNITS = 2


@dataclass(frozen=True)
class CpuPeak:
    """An estimate of a CPU's peak FP32 FLOP/s and how it was reached.

    Attributes
    ----------
    cores : int
        Physical cores this process may use (hyperthreads share one core's vector units,
        so they add no peak); logical CPUs where the core layout is unknown.
    clock_hz : float
        Clock frequency used in the estimate.
    vector_isa : str
        Widest vector instruction set found, e.g. ``"AVX-512"``.
    vector_bits : int
        Width of one vector register in bits.
    fma_units : int
        Fused multiply-add pipes per core (assumed, see :data:`ASSUMED_FMA_UNITS`).
    flops_per_cycle : int
        FP32 FLOPs per core per cycle: lanes × 2 (an FMA is two FLOPs) × FMA pipes.
    peak_flops : float
        cores × clock × FLOPs per cycle.
    cores_basis : str
        What ``cores`` counts, e.g. ``"physical cores"``.
    clock_basis : str
        Which clock ``clock_hz`` is, e.g. ``"max turbo, cpufreq cpuinfo_max_freq"``.
    """

    cores: int
    clock_hz: float
    vector_isa: str
    vector_bits: int
    fma_units: int
    flops_per_cycle: int
    peak_flops: float
    cores_basis: str = "cores"
    clock_basis: str = "given"

    def __post_init__(self) -> None:
        for name in ("cores", "vector_bits", "fma_units", "flops_per_cycle"):
            positive_int(name, getattr(self, name))
        positive_number("clock_hz", self.clock_hz)
        positive_number("peak_flops", self.peak_flops)
        for name in ("vector_isa", "cores_basis", "clock_basis"):
            text(name, getattr(self, name))

    @property
    def formula(self) -> str:
        """The arithmetic behind :attr:`peak_flops`, written out with what each factor is."""
        lanes = self.vector_bits // 32
        return (
            f"{self.cores} {self.cores_basis} × {self.clock_hz / 1e9:.2f} GHz "
            f"({self.clock_basis}) × {self.flops_per_cycle} FLOP/cycle ({self.vector_isa}: "
            f"{lanes} FP32 lanes × 2 for FMA × {self.fma_units} FMA units) = "
            f"{format_rate(self.peak_flops, 'FLOP/s')}"
        )


@functools.cache  # static for the life of the process; read it once
def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpuinfo_field(name: str) -> str | None:
    for line in _cpuinfo().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def cpu_model() -> str:
    """The CPU's model name, e.g. ``"AMD EPYC"``; falls back to :func:`platform.processor`."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine() or "unknown"


def _allowed_cpus() -> set[int]:
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def cpu_cores() -> int:
    """Logical CPUs this process may run on (respects CPU affinity and container limits).

    With hyperthreading this is twice the physical cores; :func:`estimate_cpu_peak` counts
    physical cores.
    """
    return len(_allowed_cpus())


def _physical_cores(cpuinfo: str, allowed: set[int]) -> int | None:
    r"""Distinct (socket, core) pairs among the logical CPUs in ``allowed``.

    Read from the ``processor``, ``physical id`` and ``core id`` fields of ``/proc/cpuinfo``;
    None when they are missing (many ARM kernels and some containers do not report them).

    Examples
    --------
    Two cores with two hyperthreads each:

    >>> text = "\n\n".join(
    ...     f"processor : {i}\nphysical id : 0\ncore id : {i % 2}" for i in range(4))
    >>> _physical_cores(text, {0, 1, 2, 3}), _physical_cores(text, {0, 2})
    (2, 1)
    """
    cores = set()
    for block in cpuinfo.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        processor = fields.get("processor", "")
        if not processor.isdigit():
            continue
        if "core id" not in fields:
            return None
        if int(processor) in allowed:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def cores_for_peak() -> tuple[int, str]:
    """Physical cores this process may use, and what was counted."""
    allowed = _allowed_cpus()
    physical = _physical_cores(_cpuinfo(), allowed)
    if physical is not None:
        return physical, "physical cores"
    return len(allowed), "logical CPUs (physical cores unknown, hyperthreads counted)"


_MAX_FREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")  # in kHz


def _clock_hz() -> tuple[float | None, str]:
    try:
        return float(_MAX_FREQ.read_text()) * 1e3, "max turbo, cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    mhz = _cpuinfo_field("cpu MHz")
    if mhz:
        return float(mhz) * 1e6, "current clock, /proc/cpuinfo cpu MHz"
    return None, ""


def _vector_unit(flags: set[str]) -> tuple[str, int]:
    if "avx512f" in flags:
        return "AVX-512", 512
    if "avx2" in flags or "avx" in flags:
        return "AVX2" if "avx2" in flags else "AVX", 256
    if "asimd" in flags or platform.machine() in ("arm64", "aarch64"):
        return "NEON", 128
    return "SSE2", 128


def estimate_cpu_peak(
    cores: int | None = None,
    clock_hz: float | None = None,
    flags: set[str] | None = None,
    fma_units: int = ASSUMED_FMA_UNITS,
) -> CpuPeak:
    """Estimate this CPU's peak FP32 FLOP/s as cores × clock × FLOPs per cycle.

    Cores are physical cores (hyperthreads share a core's FMA units and add no peak), read
    from ``/proc/cpuinfo`` for the CPUs this process may use; where the layout is unknown,
    logical CPUs, and the formula says so. The clock is the maximum turbo clock from cpufreq
    where the kernel exposes it, else the current clock from ``/proc/cpuinfo`` (virtual
    machines often show only that); the formula says which. Turbo with every core busy is
    lower than the maximum, so the estimate is an upper bound.

    Parameters
    ----------
    cores : int, optional
        Override the physical core count read from the machine.
    clock_hz : float, optional
        Override the clock read from the machine.
    flags : set of str, optional
        CPU feature flags (``/proc/cpuinfo`` "flags"); decide the vector width.
    fma_units : int
        FMA pipes per core; 2 unless you know better.

    Returns
    -------
    CpuPeak
        With the formula spelt out in :attr:`CpuPeak.formula`.

    Examples
    --------
    >>> import gpulab as gl
    >>> peak = gl.estimate_cpu_peak(cores=4, clock_hz=3e9, flags={"avx2", "fma"})
    >>> peak.peak_flops / 1e9
    384.0
    >>> print(peak.formula)  # doctest: +NORMALIZE_WHITESPACE
    4 cores × 3.00 GHz (given) × 32 FLOP/cycle
    (AVX2: 8 FP32 lanes × 2 for FMA × 2 FMA units) = 384 GFLOP/s
    """
    if cores is None:
        cores, cores_basis = cores_for_peak()
    else:
        cores, cores_basis = positive_int("cores", cores), "cores"
    fma_units = positive_int("fma_units", fma_units)
    if clock_hz is None:
        clock_hz, clock_basis = _clock_hz()
        if clock_hz is None:
            raise RuntimeError("could not read the CPU clock; pass clock_hz= (e.g. 3.0e9)")
    else:
        clock_hz, clock_basis = positive_number("clock_hz", clock_hz), "given"
    if flags is None:
        flags = set((_cpuinfo_field("flags") or _cpuinfo_field("Features") or "").split())
    elif not isinstance(flags, set | frozenset) or not all(isinstance(f, str) for f in flags):
        raise wrong_type("flags", flags, "a set of str such as {'avx2', 'fma'}")
    isa, bits = _vector_unit(flags)
    per_cycle = (bits // 32) * 2 * fma_units
    return CpuPeak(
        cores,
        clock_hz,
        isa,
        bits,
        fma_units,
        per_cycle,
        finite_result(
            cores * clock_hz * per_cycle, cores=cores, clock_hz=clock_hz, fma_units=fma_units
        ),
        cores_basis,
        clock_basis,
    )


def measure_memory_bandwidth(array_bytes: int = 256 * 2**20, min_run_time_s: float = 0.5) -> float:
    """Measure this machine's main-memory bandwidth in bytes/s with a large NumPy copy.

    Copies one array into another (``np.copyto``, one thread), large enough to spill out of
    the caches, and counts the bytes read plus the bytes written.

    Parameters
    ----------
    array_bytes : int
        Size of each of the two arrays; keep it several times the last-level cache (at most
        ``MAX_ARRAY_BYTES``, 64 GiB).
    min_run_time_s : float
        Seconds of repeated copying to take the median over (at most ``MAX_RUN_TIME_S``,
        600 s).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.measure_memory_bandwidth(array_bytes=2**20, min_run_time_s=0.05) > 1e8
    True
    """
    from gpulab.measure.bench import benchmark

    array_bytes = positive_int("array_bytes", array_bytes)
    if array_bytes < 1024:
        raise ValueError(f"array_bytes={array_bytes} is too small to measure; use >= 1024")
    at_most("array_bytes", array_bytes, MAX_ARRAY_BYTES, "bytes of one array")
    min_run_time_s = positive_number("min_run_time_s", min_run_time_s)
    at_most("min_run_time_s", min_run_time_s, MAX_RUN_TIME_S, "one measurement's run", unit="s")
    src = np.ones(array_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    result = benchmark(lambda: np.copyto(dst, src), min_run_time_s=min_run_time_s)
    return result.bytes_per_s(2 * src.nbytes)
