from pathlib import Path

import numpy as np
import pytest

import gpulab as gl
from gpulab.measure import cpu


def test_peak_formula_avx512_two_fma_units():
    peak = gl.estimate_cpu_peak(cores=2, clock_hz=2.6e9, flags={"avx512f", "avx2", "fma"})
    assert peak.vector_isa == "AVX-512" and peak.flops_per_cycle == 64
    assert peak.peak_flops == pytest.approx(2 * 2.6e9 * 64)
    assert peak.formula == (
        "2 cores × 2.60 GHz (given) × 64 FLOP/cycle "
        "(AVX-512: 16 FP32 lanes × 2 for FMA × 2 FMA units) = 333 GFLOP/s"
    )


@pytest.mark.parametrize(
    "flags, per_cycle", [({"avx2", "fma"}, 32), ({"avx"}, 32), ({"sse2"}, 16), (set(), 16)]
)
def test_vector_width_sets_flops_per_cycle(flags, per_cycle):
    assert gl.estimate_cpu_peak(cores=1, clock_hz=1e9, flags=flags).flops_per_cycle == per_cycle


def test_one_fma_unit_halves_the_estimate():
    two = gl.estimate_cpu_peak(cores=1, clock_hz=1e9, flags={"avx2"})
    one = gl.estimate_cpu_peak(cores=1, clock_hz=1e9, flags={"avx2"}, fma_units=1)
    assert one.peak_flops == two.peak_flops / 2


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        ({"cores": 0}, ValueError, "cores=0"),
        ({"cores": True}, TypeError, "cores=True"),
        ({"clock_hz": -1.0}, ValueError, "clock_hz=-1.0"),
        ({"clock_hz": float("nan")}, ValueError, "clock_hz=nan"),
        ({"fma_units": 0}, ValueError, "fma_units=0"),
        ({"flags": "avx2"}, TypeError, "flags='avx2'"),
        ({"flags": {"avx2", 42}}, TypeError, "flags="),
    ],
)
def test_bad_inputs_are_named(kwargs, error, name):
    with pytest.raises(error, match=name):
        gl.estimate_cpu_peak(**{"cores": 1, "clock_hz": 1e9, **kwargs})


def _cpuinfo(cores: int, threads_per_core: int, mhz: float = 2600.0) -> str:
    """/proc/cpuinfo of one socket: logical CPU i is thread i // cores of core i % cores."""
    blocks = []
    for i in range(cores * threads_per_core):
        blocks.append(
            f"processor\t: {i}\nmodel name\t: Test CPU\ncpu MHz\t\t: {mhz}\n"
            f"physical id\t: 0\nsiblings\t: {cores * threads_per_core}\n"
            f"core id\t\t: {i % cores}\ncpu cores\t: {cores}\nflags\t\t: fpu avx2 fma ht\n"
        )
    return "\n".join(blocks)


@pytest.fixture
def fake_machine(monkeypatch, tmp_path):
    """Replace /proc/cpuinfo, the CPUs this process may use and cpufreq's max clock."""

    def install(cpuinfo: str, allowed: set[int], max_khz: int | None = None):
        monkeypatch.setattr(cpu, "_cpuinfo", lambda: cpuinfo)
        monkeypatch.setattr(cpu, "_allowed_cpus", lambda: set(allowed))
        max_freq = tmp_path / "cpuinfo_max_freq"
        if max_khz is not None:
            max_freq.write_text(f"{max_khz}\n")
        monkeypatch.setattr(cpu, "_MAX_FREQ", max_freq)

    return install


def test_hyperthreads_are_not_counted_as_cores(fake_machine):
    # 2 physical cores with 2 hyperthreads each: 4 logical CPUs, but 2 cores' FMA units.
    fake_machine(_cpuinfo(cores=2, threads_per_core=2), allowed={0, 1, 2, 3})
    peak = gl.estimate_cpu_peak()
    assert gl.measure.cpu.cpu_cores() == 4 and peak.cores == 2
    assert peak.peak_flops == pytest.approx(2 * 2.6e9 * 32)
    assert peak.formula.startswith("2 physical cores × 2.60 GHz (current clock,")


def test_only_the_cores_this_process_may_use_count(fake_machine):
    # CPUs 0 and 2 are the two hyperthreads of core 0: one core.
    fake_machine(_cpuinfo(cores=2, threads_per_core=2), allowed={0, 2})
    assert gl.estimate_cpu_peak().cores == 1
    fake_machine(_cpuinfo(cores=2, threads_per_core=2), allowed={0, 1})
    assert gl.estimate_cpu_peak().cores == 2


def test_without_core_ids_logical_cpus_are_counted_and_the_formula_says_so(fake_machine):
    no_ids = "\n".join(f"processor\t: {i}\ncpu MHz\t\t: 2000.0\n" for i in range(4))
    fake_machine(no_ids, allowed={0, 1, 2, 3})
    peak = gl.estimate_cpu_peak(flags={"avx2"})
    assert peak.cores == 4
    assert "4 logical CPUs (physical cores unknown, hyperthreads counted)" in peak.formula


def test_the_formula_names_the_clock_it_used(fake_machine):
    fake_machine(_cpuinfo(cores=2, threads_per_core=1, mhz=1800.0), allowed={0, 1})
    current = gl.estimate_cpu_peak()
    assert current.clock_hz == 1.8e9 and "(current clock, /proc/cpuinfo cpu MHz)" in current.formula
    fake_machine(_cpuinfo(cores=2, threads_per_core=1), allowed={0, 1}, max_khz=3_500_000)
    turbo = gl.estimate_cpu_peak()
    assert turbo.clock_hz == 3.5e9
    assert "3.50 GHz (max turbo, cpufreq cpuinfo_max_freq)" in turbo.formula


def _this_machines_flags() -> set[str]:
    return set((cpu._cpuinfo_field("flags") or "").split())


def test_this_machine_estimate_follows_from_its_cpuinfo():
    peak = gl.estimate_cpu_peak()
    logical = gl.measure.cpu.cpu_cores()
    # Cores: never more than the logical CPUs; x86 SMT is at most 2-way, so at least half.
    assert 1 <= peak.cores <= logical
    if peak.cores_basis == "physical cores":
        assert peak.cores >= logical / 2
    # FLOPs per cycle: set by the widest vector unit /proc/cpuinfo lists, 2 FMA pipes each.
    flags = _this_machines_flags()
    if flags:
        lanes = 16 if "avx512f" in flags else 8 if {"avx2", "avx"} & flags else 4
        assert peak.flops_per_cycle == lanes * 2 * 2
    # Clock: 0.4 GHz is an idle laptop's reading; no CPU ships above 7 GHz.
    assert 0.4e9 <= peak.clock_hz <= 7e9
    assert peak.peak_flops == pytest.approx(peak.cores * peak.clock_hz * peak.flops_per_cycle)


def test_measured_matmul_stays_below_the_estimated_peak():
    # The estimate is an upper bound: a real float32 matmul must not beat it. It should reach
    # a few percent of it even on a machine shared with other jobs (1% is the margin).
    import torch

    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    achieved = gl.benchmark(lambda: a @ b, min_run_time_s=0.2).flops_per_s(2 * n**3)
    peak = gl.estimate_cpu_peak().peak_flops
    assert 0.01 * peak < achieved < peak


def _last_level_cache_bytes() -> int:
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip()
        sizes.append(int(text[:-1]) * 1024 if text.endswith("K") else int(text))
    return max(sizes, default=32 * 2**20)


@pytest.fixture
def fake_clock(monkeypatch):
    """The Timer reads a clock that only the workload moves (see tests/test_bench.py)."""
    import time

    import torch.utils.benchmark

    now = [0.0]
    deadline = time.monotonic() + 60  # a workload that never moves the clock fails, not hangs

    def read():
        if time.monotonic() > deadline:
            raise RuntimeError("the fake clock did not reach min_run_time_s")
        return now[0]

    class FakeClockTimer(torch.utils.benchmark.Timer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "timer": read})

    monkeypatch.setattr(torch.utils.benchmark, "Timer", FakeClockTimer)
    return now


def test_memory_bandwidth_counts_the_bytes_read_and_written(fake_clock, monkeypatch):
    # Each copy takes exactly 8 ms of fake time, so the arithmetic is checked exactly
    # (rel=1e-6 is float rounding): 2 x 40 MiB (read + written) per 8 ms = 10.49 GB/s.
    copies = []
    real_copyto = np.copyto

    def copy_in_8_ms(dst, src, *args, **kwargs):
        copies.append((dst.nbytes, src.nbytes, np.shares_memory(dst, src)))
        real_copyto(dst, src, *args, **kwargs)
        fake_clock[0] += 8e-3

    monkeypatch.setattr(np, "copyto", copy_in_8_ms)
    bw = gl.measure_memory_bandwidth(array_bytes=40 * 2**20, min_run_time_s=0.2)
    assert bw == pytest.approx(2 * 40 * 2**20 / 8e-3, rel=1e-6)
    # Every copy moved one whole array into another; 0.2 s of copies is at least 25 of them.
    assert len(copies) >= 25 and set(copies) == {(40 * 2**20, 40 * 2**20, False)}


def test_memory_bandwidth_is_measured_and_plausible():
    # Arrays 4x the last-level cache so the copy streams from DRAM.
    array_bytes = max(64 * 2**20, 4 * _last_level_cache_bytes())
    bw = gl.measure_memory_bandwidth(array_bytes=array_bytes, min_run_time_s=0.2)
    # np.copyto runs on one thread. One core's DRAM bandwidth is bounded by the cache misses
    # it can keep in flight: tens of GB/s on current CPUs, so under 100 GB/s; load only
    # lowers it. The lower bound, 0.5 GB/s, is 40x under the 20 GB/s this test measures on
    # an idle 2-core EPYC box and 10x under the 5 GB/s it measures with six other processes
    # streaming memory on those two cores: only a broken copy (e.g. element by element in
    # Python) or a machine loaded far beyond that falls below it.
    assert 5e8 < bw < 1e11
    with pytest.raises(ValueError, match="array_bytes=10"):
        gl.measure_memory_bandwidth(array_bytes=10)
    with pytest.raises(ValueError, match="min_run_time_s=0"):
        gl.measure_memory_bandwidth(min_run_time_s=0)


def test_cpu_model_is_named(fake_machine, monkeypatch):
    # The model is the "model name" field exactly, not x86's numeric "model" field listed
    # just before it; without that field (many ARM kernels) platform's answer is used.
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n" + _cpuinfo(1, 1)
    fake_machine(x86.replace("Test CPU", "  AMD EPYC 7763 64-Core Processor "), allowed={0})
    assert gl.measure.cpu.cpu_model() == "AMD EPYC 7763 64-Core Processor"
    import platform

    fake_machine("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n", allowed={0})
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert gl.measure.cpu.cpu_model() == "aarch64"
    fake_machine("", allowed={0})
    monkeypatch.setattr(platform, "machine", lambda: "")
    assert gl.measure.cpu.cpu_model() == "unknown"


def test_cpu_cores_follows_this_process_affinity():
    # cpu_cores counts the CPUs the scheduler lets this thread use (taskset, containers), not
    # the machine's: pinned to one CPU it must say 1. Restored afterwards.
    import os

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    allowed = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(allowed)})
        assert gl.measure.cpu.cpu_cores() == 1
    finally:
        os.sched_setaffinity(0, allowed)
    assert gl.measure.cpu.cpu_cores() == len(allowed)
