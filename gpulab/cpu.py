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
        Cores this process may use.
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
    """

    cores: int
    clock_hz: float
    vector_isa: str
    vector_bits: int
    fma_units: int
    flops_per_cycle: int
    peak_flops: float

    @property
    def formula(self) -> str:
        """The arithmetic behind :attr:`peak_flops`, written out."""
        lanes = self.vector_bits // 32
        return (
            f"{self.cores} cores × {self.clock_hz / 1e9:.2f} GHz × "
            f"{self.flops_per_cycle} FLOP/cycle ({self.vector_isa}: {lanes} FP32 lanes × 2 "
            f"for FMA × {self.fma_units} FMA units) = {self.peak_flops / 1e9:.1f} GFLOP/s"
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


def cpu_cores() -> int:
    """Cores this process may run on (respects CPU affinity and container limits)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _clock_hz() -> float | None:
    max_freq = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    try:
        return float(max_freq.read_text()) * 1e3  # the file is in kHz
    except (OSError, ValueError):
        pass
    mhz = _cpuinfo_field("cpu MHz")
    return float(mhz) * 1e6 if mhz else None


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

    Parameters
    ----------
    cores, clock_hz : optional
        Override what is read from the machine (``/proc/cpuinfo``, cpufreq).
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
    >>> gl.estimate_cpu_peak(cores=4, clock_hz=3e9, flags={"avx2", "fma"}).peak_flops / 1e9
    384.0
    """
    cores = cpu_cores() if cores is None else cores
    if cores < 1:
        raise ValueError(f"cores={cores} must be at least 1")
    if fma_units < 1:
        raise ValueError(f"fma_units={fma_units} must be at least 1")
    clock_hz = _clock_hz() if clock_hz is None else clock_hz
    if clock_hz is None:
        raise RuntimeError("could not read the CPU clock; pass clock_hz= (e.g. 3.0e9)")
    if clock_hz <= 0:
        raise ValueError(f"clock_hz={clock_hz} must be positive")
    if flags is None:
        flags = set((_cpuinfo_field("flags") or _cpuinfo_field("Features") or "").split())
    isa, bits = _vector_unit(flags)
    per_cycle = (bits // 32) * 2 * fma_units
    return CpuPeak(cores, clock_hz, isa, bits, fma_units, per_cycle, cores * clock_hz * per_cycle)


def measure_memory_bandwidth(array_bytes: int = 256 * 2**20, min_run_time: float = 0.5) -> float:
    """Measure this machine's main-memory bandwidth in bytes/s with a large NumPy copy.

    Copies one array into another (``np.copyto``), large enough to spill out of the caches,
    and counts the bytes read plus the bytes written.

    Parameters
    ----------
    array_bytes : int
        Size of each of the two arrays; keep it several times the last-level cache.
    min_run_time : float
        Seconds of repeated copying to take the median over.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.measure_memory_bandwidth(array_bytes=2**20, min_run_time=0.05) > 1e8
    True
    """
    from gpulab.bench import benchmark

    if array_bytes < 1024:
        raise ValueError(f"array_bytes={array_bytes} is too small to measure; use >= 1024")
    src = np.ones(array_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    result = benchmark(lambda: np.copyto(dst, src), min_run_time=min_run_time)
    return result.bytes_per_s(2 * src.nbytes)
