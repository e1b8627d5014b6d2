import sys
import time
import types

import pytest
import torch
import torch.utils.benchmark

import gpulab as gl


@pytest.fixture
def fake_clock(monkeypatch):
    """A clock that only the workload moves: the Timer reads it instead of the wall clock.

    Returns a list whose one entry is the time now; a workload adds its own duration to it.
    A Timer whose workload never moves the clock would measure forever, so after 60 real
    seconds (a run takes well under one) reading the clock fails the test instead.
    """
    now = [0.0]
    real = torch.utils.benchmark.Timer
    deadline = time.monotonic() + 60

    def read():
        if time.monotonic() > deadline:
            raise RuntimeError("the fake clock did not reach min_run_time_s: fn is not timed")
        return now[0]

    class FakeClockTimer(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "timer": read})

    monkeypatch.setattr(torch.utils.benchmark, "Timer", FakeClockTimer)
    return now


def test_workload_of_known_duration_is_timed_correctly(fake_clock):
    # Every call takes exactly 10 µs of fake time, so load cannot move the result: the per-call
    # median is 10 µs (rel=1e-6 absorbs float rounding), not a block's time (the Timer groups
    # calls into blocks of 100 here), and at least min_run_time_s of calls is measured.
    def ten_microseconds():
        fake_clock[0] += 10e-6

    result = gl.benchmark(ten_microseconds, min_run_time_s=0.2, label="10 µs")
    assert result.median_s == pytest.approx(10e-6, rel=1e-6)
    assert result.calls_per_block > 1 and result.runs * result.median_s >= 0.2 * (1 - 1e-6)
    assert result.iqr_s == pytest.approx(0, abs=1e-12)
    assert str(result).startswith("10 µs: median 10 µs per call (IQR ")
    assert str(result).endswith(f", {result.runs} runs)")


def test_a_real_sleep_is_never_timed_shorter_than_it_lasts():
    # sleep(10 ms) never returns early, so the median cannot fall below 10 ms (less 0.1 ms of
    # timer granularity); a busy machine only makes it later, so there is no upper bound.
    result = gl.benchmark(lambda: time.sleep(0.01), min_run_time_s=0.2, label="sleep 10 ms")
    assert result.median_s >= 0.0099
    assert str(result).startswith("sleep 10 ms: median ") and "ms per call" in str(result)


def test_rates_follow_from_the_median():
    r = gl.measure.bench.BenchResult(times_s=(0.5, 1.0, 2.0), calls_per_block=2, label="x")
    assert r.median_s == 1.0 and r.runs == 6
    assert r.flops_per_s(3e12) == 3e12 and r.tflops(3e12) == 3.0
    assert r.bytes_per_s(8e9) == 8e9 and r.gbs(8e9) == 8.0
    assert r.iqr_s == pytest.approx(0.75)
    assert str(r) == "x: median 1 s per call (IQR 750 ms, 6 runs)"


@pytest.fixture
def timing_started(monkeypatch):
    """Record, in a list, the moment the Timer starts measuring (calls made so far)."""
    started = []
    real = torch.utils.benchmark.Timer

    class SpyTimer(real):
        def blocked_autorange(self, *args, **kwargs):
            started.append(True)
            return super().blocked_autorange(*args, **kwargs)

    monkeypatch.setattr(torch.utils.benchmark, "Timer", SpyTimer)
    return started


@pytest.mark.parametrize("warmup", [0, 1, 3])
def test_warmup_calls_happen_before_timing_and_are_not_timed(timing_started, warmup):
    calls = []  # one entry per call: was the Timer measuring yet?
    result = gl.benchmark(
        lambda: calls.append(bool(timing_started)), warmup=warmup, min_run_time_s=0.01
    )
    # Exactly `warmup` calls happen before the Timer starts; the rest are its own.
    assert calls[:warmup] == [False] * warmup
    assert all(calls[warmup:]) and len(calls) - warmup >= result.runs


def test_warmup_and_timing_use_num_threads_and_threads_are_restored(timing_started):
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # differs from num_threads=1 whatever the machine has
    try:
        seen = []  # (timing started?, threads torch used) per call
        gl.benchmark(
            lambda: seen.append((bool(timing_started), torch.get_num_threads())),
            num_threads=1,
            warmup=2,
            min_run_time_s=0.01,
        )
        assert seen[:2] == [(False, 1), (False, 1)]  # warm-up under the measured threads
        assert {threads for timed, threads in seen if timed} == {1}  # and the timed calls
        assert torch.get_num_threads() == 3  # restored afterwards
    finally:
        torch.set_num_threads(before)


def test_threads_are_restored_when_the_warmup_raises():
    before = torch.get_num_threads()

    def boom():
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        gl.benchmark(boom, num_threads=1, min_run_time_s=0.01)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"min_run_time_s": 0}, ValueError, "min_run_time_s=0"),
        ({"min_run_time_s": float("inf")}, ValueError, "min_run_time_s=inf"),
        ({"min_run_time_s": "1"}, TypeError, "min_run_time_s='1'"),
        ({"warmup": -1}, ValueError, "warmup=-1"),
        ({"warmup": 1.5}, TypeError, "warmup=1.5"),
        ({"backend": "jax"}, ValueError, "backend='jax'"),
        ({"num_threads": 0}, ValueError, "num_threads=0"),
        ({"num_threads": True}, TypeError, "num_threads=True"),
        ({"repeats": 0}, ValueError, "repeats=0"),
        ({"label": 3}, TypeError, "label=3"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, error, message):
    with pytest.raises(error, match=message):
        gl.benchmark(lambda: None, **kwargs)


def test_not_callable_is_a_type_error():
    with pytest.raises(TypeError, match="not callable"):
        gl.benchmark(42)


def test_timer_context_manager_measures_a_block(capsys):
    with gl.timer("nap") as watch:
        assert str(watch) == "nap: still running"
        time.sleep(0.02)
    assert 0.02 <= watch.elapsed_s < 0.2
    assert capsys.readouterr().out.startswith("nap: ")
    with pytest.raises(TypeError, match="verbose='yes'"):
        gl.timer("x", verbose="yes")


@pytest.mark.parametrize(
    "elapsed_s, error", [(-1.0, ValueError), (float("inf"), ValueError), ("1", TypeError)]
)
def test_a_stopwatch_refuses_a_duration_that_is_not_one(elapsed_s, error):
    with pytest.raises(error, match="elapsed_s="):
        gl.measure.bench.Stopwatch("x", elapsed_s)
    assert str(gl.measure.bench.Stopwatch("x")) == "x: still running"  # NaN: not ended yet


def _fake_cupy(gpu):
    """A CuPy module whose GPU check returns ``gpu`` (or raises it) and counts stream syncs."""
    stream = types.SimpleNamespace(count=0)
    stream.synchronize = lambda: setattr(stream, "count", stream.count + 1)

    def is_available():
        if isinstance(gpu, Exception):
            raise gpu
        return gpu

    module = types.ModuleType("cupy")
    module.is_available = is_available
    module.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    return module, stream


def test_synchronize_waits_for_cupys_stream_even_if_torch_never_used_cuda(monkeypatch):
    module, stream = _fake_cupy(gpu=True)
    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)  # torch: no CUDA work
    gl.synchronize()
    assert stream.count == 1
    with gl.timer(verbose=False):  # the timer synchronizes at both ends
        pass
    assert stream.count == 3


@pytest.mark.parametrize("gpu", [False, RuntimeError("cudaErrorNoDevice")])
def test_synchronize_leaves_a_cupy_without_a_gpu_alone(monkeypatch, gpu):
    module, stream = _fake_cupy(gpu)
    monkeypatch.setitem(sys.modules, "cupy", module)
    gl.synchronize()
    assert stream.count == 0


def test_synchronize_does_not_import_cupy(monkeypatch):
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    gl.synchronize()
    assert "cupy" not in sys.modules


def test_cupy_backend_without_cupy_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupyx", None)  # import cupyx -> ImportError
    monkeypatch.setitem(sys.modules, "cupyx.profiler", None)
    with pytest.raises(RuntimeError, match="backend='cupy' needs CuPy"):
        gl.benchmark(lambda: None, backend="cupy")


@pytest.mark.cuda
def test_gpu_work_is_synchronized():
    a = torch.randn(4096, 4096, device="cuda")
    result = gl.benchmark(lambda: a @ a, min_run_time_s=0.2)
    # Without synchronisation this would report only the launch (~10 µs).
    assert result.median_s > 2 * 4096**3 / 2e15
