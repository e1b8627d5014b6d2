import numpy as np
import pytest

import gpulab as gl


def test_peak_formula_avx512_two_fma_units():
    peak = gl.estimate_cpu_peak(cores=2, clock_hz=2.6e9, flags={"avx512f", "avx2", "fma"})
    assert peak.vector_isa == "AVX-512" and peak.flops_per_cycle == 64
    assert peak.peak_flops == pytest.approx(2 * 2.6e9 * 64)
    assert "2 cores × 2.60 GHz × 64 FLOP/cycle" in peak.formula


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
    "kwargs, name", [({"cores": 0}, "cores=0"), ({"clock_hz": -1.0}, "clock_hz=-1.0")]
)
def test_bad_inputs_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gl.estimate_cpu_peak(**{"cores": 1, "clock_hz": 1e9, **kwargs})


def test_this_machine_estimate_is_plausible():
    peak = gl.estimate_cpu_peak()
    assert peak.cores == gl.cpu_cores() >= 1
    assert 1e9 < peak.peak_flops < 1e14


def test_measured_matmul_stays_below_the_estimated_peak():
    # The estimate is an upper bound: a real float32 matmul must not beat it.
    import torch

    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    achieved = gl.benchmark(lambda: a @ b, min_run_time=0.2).flops_per_s(2 * n**3)
    assert achieved < gl.estimate_cpu_peak().peak_flops


def test_memory_bandwidth_is_measured_and_plausible():
    bw = gl.measure_memory_bandwidth(array_bytes=64 * 2**20, min_run_time=0.2)
    assert 5e8 < bw < 2e12  # bytes/s: above an old laptop, below any DDR/HBM system
    with pytest.raises(ValueError, match="array_bytes=10"):
        gl.measure_memory_bandwidth(array_bytes=10)


def test_cpu_model_is_named():
    assert isinstance(gl.cpu_model(), str) and gl.cpu_model()
    assert np.isfinite(gl.cpu_cores())
