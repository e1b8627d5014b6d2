import pytest

import gpulab as gl


def test_memory_bound_prediction_uses_bandwidth():
    p = gl.predict_time("A100 80GB", flops=1e9, n_bytes=12e9)
    assert p.bound == "memory"
    assert p.time_s == pytest.approx(12e9 / 2039e9)
    assert p.compute_s == pytest.approx(1e9 / 19.5e12)
    assert "PREDICTION" in str(p) and "not measured" in str(p)


def test_compute_bound_prediction_uses_peak_of_the_precision():
    n = 8192
    flops, nbytes = 2 * n**3, 3 * 2 * n * n
    p = gl.predict_time("H100 SXM", flops, nbytes, precision="bf16")
    assert p.bound == "compute" and p.time_s == pytest.approx(flops / 989.5e12)


def test_attainable_is_the_minimum_of_the_two_roofs():
    spec = gl.get_spec("T4")
    assert gl.attainable_flops(spec, 0.25) == pytest.approx(0.25 * 320e9)
    assert gl.attainable_flops(spec, 1e6) == pytest.approx(8.1e12)
    ridge = spec.ridge_point
    assert gl.attainable_flops(spec, ridge) == pytest.approx(spec.peak("fp32"))


def test_arithmetic_intensity_and_errors():
    assert gl.arithmetic_intensity(100, 50) == 2
    with pytest.raises(ValueError, match="n_bytes=0"):
        gl.arithmetic_intensity(1, 0)
    with pytest.raises(ValueError, match="intensity=-1"):
        gl.attainable_flops("T4", -1)
    with pytest.raises(ValueError, match="precision='bf16': Tesla T4 has no bf16 figure"):
        gl.predict_time("T4", 1, 1, precision="bf16")
    with pytest.raises(ValueError, match="no memory bandwidth"):
        no_bandwidth = gl.hardware.specs.DeviceSpec(
            "x", "v", "a", 2020, "gpu", None, "", None, {"fp32": 1.0}
        )
        gl.predict_time(no_bandwidth, 1, 1)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (("T4", float("nan"), 1), {}, ValueError, "flops=nan"),
        (("T4", 1, float("inf")), {}, ValueError, "n_bytes=inf"),
        (("T4", -1, 1), {}, ValueError, "flops=-1"),
        (("T4", "1e9", 1), {}, TypeError, "flops='1e9'"),
        (("T4", True, 1), {}, TypeError, "flops=True"),
        (("T4", 1, 1), {"precision": "fp64"}, ValueError, "precision='fp64'"),
        (("T4", 1, 1), {"precision": "amp_bf16"}, ValueError, "precision='amp_bf16'"),
        (("Z9000", 1, 1), {}, ValueError, "spec='Z9000': no device called 'Z9000'.*close names"),
        ((42, 1, 1), {}, TypeError, "spec=42"),
    ],
)
def test_predict_time_names_a_bad_argument(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        gl.predict_time(*args, **kwargs)


@pytest.mark.parametrize(
    "intensity, error",
    [
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        (-1.0, ValueError),
        ("10", TypeError),
        (True, TypeError),
    ],
)
def test_attainable_and_readout_refuse_an_impossible_intensity(intensity, error):
    with pytest.raises(error, match="intensity="):
        gl.attainable_flops("T4", intensity)
    with pytest.raises(error, match="intensity="):
        gl.roofline_readout("T4", intensity)


def test_unknown_devices_list_close_registry_names():
    with pytest.raises(ValueError, match="spec='A100 90GB'.*close names: .*A100"):
        gl.attainable_flops("A100 90GB", 1.0)
    with pytest.raises(ValueError, match="spec='A100'.*fits several devices"):
        gl.Ceilings.from_spec("A100")


def test_prediction_reads_as_a_duration_and_checks_its_fields():
    p = gl.predict_time("T4", flops=1e9, n_bytes=1e9)
    assert str(p).endswith(": 3.12 ms, memory-bound")
    with pytest.raises(ValueError, match="time_s=-1"):
        gl.costmodels.roofline.Prediction("T4", "fp32", -1, 0, 0, "memory")
    with pytest.raises(ValueError, match="bound='latency'"):
        gl.costmodels.roofline.Prediction("T4", "fp32", 1, 1, 0, "latency")


def test_arithmetic_intensity_refuses_non_finite_counts():
    with pytest.raises(ValueError, match="flops=inf"):
        gl.arithmetic_intensity(float("inf"), 1)
    with pytest.raises(ValueError, match="n_bytes=nan"):
        gl.arithmetic_intensity(1, float("nan"))


def test_valid_but_extreme_counts_do_not_return_infinity():
    tiny = gl.Ceilings("slow", "fp32", peak_flops=1e-300, memory_bandwidth=1e-300)
    with pytest.raises(ValueError, match="overflow"):
        tiny.predict(1e308, 1.0)
    with pytest.raises(ValueError, match="overflow"):
        gl.arithmetic_intensity(1e308, 1e-300)


def test_the_least_disturbed_ceilings_take_each_roof_at_its_best():
    from gpulab.costmodels.roofline import Ceilings

    busy = Ceilings("cpu", "fp32", 40e9, 9e9, overhead_s=8e-6, note="one thread")
    quiet = Ceilings("cpu", "fp32", 60e9, 8e9, overhead_s=5e-6, note="one thread")
    best = Ceilings.least_disturbed(busy, quiet)
    assert (best.peak_flops, best.memory_bandwidth, best.overhead_s) == (60e9, 9e9, 5e-6)
    assert best.note == "one thread (least disturbed of 2 measurements)"
    assert Ceilings.least_disturbed(busy) == busy
    # A busy moment made matmuls "beat" the roofline by 30-40%: the higher peak fixes that.
    assert best.predict(2e9, 1e6).time_s < busy.predict(2e9, 1e6).time_s
    with pytest.raises(ValueError, match="one device in one precision"):
        Ceilings.least_disturbed(busy, Ceilings("gpu", "fp32", 1e12, 1e11))
    with pytest.raises(TypeError, match="others"):
        Ceilings.least_disturbed(busy, "quiet")


def test_the_difference_of_two_measurements_is_the_larger_relative_gap_of_the_roofs():
    from gpulab.costmodels.roofline import Ceilings

    quiet = Ceilings("cpu", "fp32", 60e9, 8e9, overhead_s=5e-6)
    busy = Ceilings("cpu", "fp32", 40e9, 7e9, overhead_s=50e-6)
    # Peak: 20/60; bandwidth: 1/8. The overhead, ten times larger, is not compared.
    assert quiet.difference(busy) == pytest.approx(1 / 3)
    assert busy.difference(quiet) == pytest.approx(1 / 3)
    assert quiet.difference(quiet) == 0.0
    bandwidth_only = Ceilings("cpu", "fp32", 60e9, 4e9)
    assert quiet.difference(bandwidth_only) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="one device in one precision"):
        quiet.difference(Ceilings("gpu", "fp32", 60e9, 8e9))
    with pytest.raises(ValueError, match=r"T4 fp32 \(datasheet\)"):
        quiet.difference(Ceilings.from_spec("T4", "fp32"))
    with pytest.raises(ValueError, match=r"cpu fp32 \(measured\) and cpu fp32 \(datasheet\)"):
        quiet.difference(Ceilings("cpu", "fp32", 60e9, 8e9, measured=False))
    with pytest.raises(TypeError, match="other"):
        quiet.difference("busy")
