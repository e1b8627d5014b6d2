import pytest

import gpulab as gl


def test_memory_bound_prediction_uses_bandwidth():
    p = gl.predict_time("A100 80GB", flops=1e9, bytes_moved=12e9)
    assert p.bound == "memory"
    assert p.time_s == pytest.approx(12e9 / 2039e9)
    assert p.compute_s == pytest.approx(1e9 / 19.5e12)
    assert "PREDICTION" in str(p) and "not measured" in str(p)


def test_compute_bound_prediction_uses_peak_of_the_dtype():
    n = 8192
    flops, nbytes = 2 * n**3, 3 * 2 * n * n
    p = gl.predict_time("H100 SXM", flops, nbytes, dtype="bf16")
    assert p.bound == "compute" and p.time_s == pytest.approx(flops / 989.5e12)


def test_attainable_is_the_minimum_of_the_two_roofs():
    spec = gl.get_spec("T4")
    assert gl.attainable_flops(spec, 0.25) == pytest.approx(0.25 * 320e9)
    assert gl.attainable_flops(spec, 1e6) == pytest.approx(8.1e12)
    ridge = spec.ridge_point
    assert gl.attainable_flops(spec, ridge) == pytest.approx(spec.peak("fp32"))


def test_arithmetic_intensity_and_errors():
    assert gl.arithmetic_intensity(100, 50) == 2
    with pytest.raises(ValueError, match="bytes_moved=0"):
        gl.arithmetic_intensity(1, 0)
    with pytest.raises(ValueError, match="intensity=-1"):
        gl.attainable_flops("T4", -1)
    with pytest.raises(ValueError, match="no bf16 figure"):
        gl.predict_time("T4", 1, 1, dtype="bf16")
    with pytest.raises(ValueError, match="no memory bandwidth"):
        no_bandwidth = gl.DeviceSpec("x", "v", "a", 2020, "gpu", None, "", None, {"fp32": 1.0})
        gl.predict_time(no_bandwidth, 1, 1)
