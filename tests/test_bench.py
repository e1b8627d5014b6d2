import time

import pytest
import torch

import gpulab as gl


def test_workload_of_known_duration_is_timed_correctly():
    result = gl.benchmark(lambda: time.sleep(0.01), min_run_time=0.2, label="sleep 10 ms")
    assert 0.0099 <= result.median_s < 0.013  # sleep never returns early; overshoot is small
    assert result.runs >= 10 and result.calls_per_block >= 1
    assert result.iqr_s >= 0 and result.iqr_s < 0.003
    assert "sleep 10 ms: median" in str(result)


def test_rates_follow_from_the_median():
    r = gl.BenchResult(times_s=(0.5, 1.0, 2.0), calls_per_block=2, label="x")
    assert r.median_s == 1.0 and r.runs == 6
    assert r.flops_per_s(3e12) == 3e12 and r.tflops(3e12) == 3.0
    assert r.bytes_per_s(8e9) == 8e9 and r.gbs(8e9) == 8.0
    assert r.iqr_s == pytest.approx(0.75)


def test_warmup_calls_happen_before_timing():
    calls = []
    result = gl.benchmark(lambda: calls.append(1), warmup=3, min_run_time=0.01)
    assert len(calls) >= 3 + result.runs


def test_threads_are_restored_and_used():
    before = torch.get_num_threads()
    gl.benchmark(lambda: torch.ones(8) + 1, num_threads=1, min_run_time=0.01)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_run_time": 0}, "min_run_time=0"),
        ({"warmup": -1}, "warmup=-1"),
        ({"backend": "jax"}, "backend='jax'"),
        ({"num_threads": 0}, "num_threads=0"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gl.benchmark(lambda: None, **kwargs)


def test_not_callable_is_a_type_error():
    with pytest.raises(TypeError, match="not callable"):
        gl.benchmark(42)


def test_timer_context_manager_measures_a_block(capsys):
    with gl.timer("nap") as watch:
        time.sleep(0.02)
    assert 0.02 <= watch.elapsed_s < 0.2
    assert capsys.readouterr().out.startswith("nap: ")


def test_cupy_backend_without_cupy_says_what_to_do():
    pytest.importorskip("torch")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="backend='cupy' needs CuPy"):
            gl.benchmark(lambda: None, backend="cupy")
    else:
        pytest.skip("CuPy is installed; the message for a missing CuPy cannot be shown")


@pytest.mark.cuda
def test_gpu_work_is_synchronized():
    a = torch.randn(4096, 4096, device="cuda")
    result = gl.benchmark(lambda: a @ a, min_run_time=0.2)
    # Without synchronisation this would report only the launch (~10 µs).
    assert result.median_s > 2 * 4096**3 / 2e15
