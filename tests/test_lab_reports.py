"""The labs' machinery kept out of their cells: measured sentences chosen from the data,
targets judged, tables, figures, the simulated stream and the trace file."""

from __future__ import annotations

import json
import threading
import time

import pytest
import torch
from torch import nn

from gpulab.costmodels.memory import estimate_step_memory
from gpulab.costmodels.roofline import Ceilings
from gpulab.labkit.accuracy_output import ACCURACY_KEY
from gpulab.labkit.batch_sweep import BatchSweep, knee
from gpulab.labkit.claims import ClaimError
from gpulab.labkit.coalescing_plot import plot_copy_patterns
from gpulab.labkit.fusion_report import FusionReport
from gpulab.labkit.lab_tables import amp_table, stream_table
from gpulab.labkit.matmul_sweep import error_table, matmul_formats, round_to_tf32
from gpulab.labkit.memory_check import MEMORY_TARGET, MemoryCheck, check_step_memory
from gpulab.labkit.networks import TinyEncoder, small_cnn
from gpulab.labkit.simulated_stream import SimulatedStream
from gpulab.labkit.speedup_claims import (
    amp_claim,
    break_even_claim,
    fusion_claim,
    thread_speedup_claim,
)
from gpulab.labkit.trace_files import save_chrome_trace
from gpulab.measure.bench import BenchResult

VARIANTS = ("unfused, as written", "fused, as written", "unfused, existing arrays",
            "fused, existing array")
ROOF = Ceilings("box", "fp32", 40e9, 10e9, overhead_s=2e-6)


# --------------------------------------------------------------------------- fusion report


def _fusion(times, fresh=0.6e-3, reused=0.4e-3) -> FusionReport:
    return FusionReport(2**20, dict(zip(VARIANTS, times, strict=True)),
                        dict(zip(VARIANTS, (2, 1, 0, 0), strict=True)), fresh, reused, 2**16,
                        2e-5, ROOF)


def test_fusion_report_rebuilds_the_as_written_times_from_their_causes(monkeypatch):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "judge")
    r = _fusion((3e-3, 1.5e-3, 2e-3, 1.1e-3))
    assert r.new_array_s == pytest.approx(0.2e-3)
    assert r.rebuilt_s("unfused, as written") == pytest.approx(2e-3 + 2 * 0.2e-3)
    assert r.rebuilt_s("fused, as written") == pytest.approx(1.1e-3 + 0.2e-3)
    text = r.verdict().text
    assert "as written, fusion was 2.00× faster" in text and "it was 1.82× faster" in text
    assert "A new array is cheap on this device" in text  # 0.2 ms against a 1.1 ms kernel
    table = str(r).splitlines()
    assert table[0].split() == ["variant", "measured", "roofline", "new", "arrays"]
    assert table[1].startswith("unfused, as written") and table[1].endswith(" 2")
    # 5 arrays of 4 MiB at 10 GB/s, plus the overhead: the roofline column.
    assert f"{(5 * 4 * 2**20 / 10e9 + 2e-6) * 1e3:.2f}ms" in table[1]


def test_fusion_report_says_when_allocation_dominates_and_refuses_a_slower_fusion(monkeypatch):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "judge")
    costly = _fusion((3e-3, 1.5e-3, 2e-3, 1.1e-3), fresh=2e-3, reused=0.4e-3)
    assert "allocation, not traffic, dominates" in costly.verdict().text
    with pytest.raises(ClaimError, match="removes 2 of 5 arrays"):
        _fusion((3e-3, 1.5e-3, 1e-3, 1.1e-3)).verdict()


def test_fusion_report_wants_all_four_variants():
    with pytest.raises(ValueError, match="times_s="):
        FusionReport(2**20, {"fused, as written": 1e-3}, dict.fromkeys(VARIANTS, 0), 1e-3,
                     1e-3, 2**16, 1e-5, ROOF)


# --------------------------------------------------------------------------- tables


def _bench(*times) -> BenchResult:
    return BenchResult(times, 1)


def test_stream_table_rates_are_bytes_over_the_median():
    table = stream_table({"triad": (_bench(0.02, 0.03, 0.04), 3e8)},
                         numpy_copy=(_bench(0.01,), 2e8)).splitlines()
    assert table[1].split() == ["triad", "300MB", "30.00ms", "33.3", "10.0"]
    assert table[2].startswith("NumPy copy") and table[2].endswith("independent check)")
    with pytest.raises(TypeError, match="results\\['copy'\\]"):
        stream_table({"copy": (0.01, 2e8)})


def test_amp_table_compares_the_second_precision_with_the_first():
    lines = amp_table({"fp32": 0.04, "amp_fp16": 0.01}, {"fp32": 2**21, "amp_fp16": 2**20})
    assert lines.splitlines()[-1] == "amp_fp16 vs fp32: 4.00x the speed, 0.50x the memory"
    with pytest.raises(ValueError, match="same two precisions"):
        amp_table({"fp32": 0.04, "amp_fp16": 0.01}, {"fp32": 1, "amp_bf16": 1})


def test_error_table_divides_by_each_formats_unit_roundoff():
    row = error_table({"bf16": 2**-9}).splitlines()[1].split()
    assert row == ["bf16", "1.95e-03", "3.91e-03", "0.50"]
    with pytest.raises(ValueError, match="'fp8'"):
        error_table({"fp8": 0.1})


# --------------------------------------------------------------------------- batch sweep


def test_the_knee_is_the_smallest_batch_at_ninety_percent_of_the_best():
    assert knee([1, 2, 4, 8, 16], [10, 50, 89, 100, 95]) == 8
    assert knee([1, 2, 4, 8, 16], [10, 50, 90, 100, 95]) == 4
    with pytest.raises(ValueError, match="same length"):
        knee([1, 2], [1.0])


def test_batch_sweep_table_marks_the_knee_and_says_when_it_lies_beyond():
    rising = BatchSweep([(1, 10.0, 2**20), (2, 20.0, 2**21), (4, 40.0, 2**22)], True)
    lines = rising.table().splitlines()
    assert "measured peak" in lines[0]
    assert lines[3].endswith("<- knee") and "<- knee" not in lines[2]
    assert lines[-1].startswith("Throughput was still rising")
    with pytest.raises(ValueError, match="rows\\[0\\] batch size"):
        BatchSweep([(0, 10.0, 1)], False)


def test_batch_sweep_figure_labels_predictions_as_such():
    import matplotlib.pyplot as plt

    sweep = BatchSweep([(1, 10.0, 2**20), (2, 20.0, 2**21), (4, 21.0, 2**22)], False)
    fig = sweep.plot({"Tesla T4, fp32": [5.0, 50.0]}, [1, 2])
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert "Tesla T4, fp32 (prediction)" in labels and "measured here (cpu)" in labels
    assert fig.axes[1].get_ylabel() == "MiB (modelled peak)"
    plt.close(fig)


# --------------------------------------------------------------------------- memory check


def _estimate():
    torch.manual_seed(0)
    return estimate_step_memory(nn.Linear(8, 4), torch.randn(2, 8), optimizer="sgd")


def test_memory_check_judges_the_target_on_a_cpu_and_reports_on_a_gpu():
    est = _estimate()
    off = [("a", est, round(est.peak_bytes / 1.05)), ("b", est, round(est.peak_bytes / 1.2))]
    with pytest.raises(ClaimError, match="every configuration within 10%"):
        MemoryCheck(off, on_gpu=False).verdict()
    verdict = MemoryCheck(off, on_gpu=True).verdict()
    assert "1 of 2 within 10%" in verdict.text
    record = verdict._repr_mimebundle_()[1][ACCURACY_KEY]
    assert record["model"] == "training memory" and record["target"] == MEMORY_TARGET
    assert record["value"] == pytest.approx(0.2, rel=0.02)  # bytes rounded
    json.dumps(record)


def test_check_step_memory_builds_token_ids_for_an_encoder_and_meets_the_target():
    configs = [("CNN", small_cnn, (32, 3, 32, 32), "sgd_momentum", "fp32"),
               ("Encoder", TinyEncoder, (16, 64), "adam", "fp32")]  # as in the lab
    check = check_step_memory(configs)
    assert [name for name, _, _ in check.rows] == ["CNN, sgd_momentum, fp32", "Encoder, adam, fp32"]
    assert check.peak_moments == [max(e.phases(), key=e.phases().get) for e in check.estimates]
    assert "all 2 within the 10% target" in check.verdict().text
    with pytest.raises(TypeError, match="configs="):
        check_step_memory("MLP")


# --------------------------------------------------------------------------- sentences


@pytest.mark.parametrize("add_x, mm_x, on_gpu, reading", [
    (1.1, 1.15, False, "Neither gained"),
    (1.1, 1.9, False, "The add gained less than the matmul"),
    (1.8, 1.5, False, "2 cores do not yet saturate"),
    (30.0, 20.0, True, "the lead on the add is the larger one"),
    (10.0, 40.0, True, "the lead on the matmul is the larger one"),
])
def test_thread_speedup_reading_follows_the_data(add_x, mm_x, on_gpu, reading):
    text = thread_speedup_claim("slow", "fast", add_x, mm_x, on_gpu=on_gpu, cores=2).text
    assert reading in text
    assert text.startswith(f"**Measured here:** fast ran the elementwise add {add_x:.1f}x")


@pytest.mark.parametrize("speedup, reading", [
    ({32: 0.5, 64: 1.2, 128: 2.0}, "slower up to n = 32 and faster from n = 64"),
    ({32: 0.5, 64: 1.2, 128: 0.9}, "It lost at n = 32, 128 and won at n = 64: no clean"),
    ({32: 0.5, 64: 0.8}, "It lost at every size tried here"),
    ({32: 1.5, 64: 2.0}, "It won even at n = 32"),
])
def test_break_even_reading_follows_the_data(speedup, reading):
    assert reading in break_even_claim("1 thread", "2 threads", speedup).text


@pytest.mark.parametrize("fused_x, reading", [
    (6.0, "less than the traffic ratio"), (9.0, "about the traffic ratio"),
    (7.3, "about the traffic ratio"), (11.5, "more than the traffic ratio"),
])
def test_fusion_reading_compares_with_the_traffic_ratio(fused_x, reading):
    assert reading in fusion_claim(10.0, fused_x, 9).text


@pytest.mark.parametrize("times, peaks, words", [
    ((0.10, 0.05), (100, 60), ("ran 2.00x as fast as fp32", "fell to 0.60x")),
    ((0.05, 0.10), (100, 110), ("was slower than fp32 (0.50x", "did not fall (1.10x)")),
    ((0.10, 0.095), (100, 100), ("ran about as fast as fp32 (1.05x)", "did not fall")),
])
def test_amp_sentence_picks_speed_and_memory_wording(times, peaks, words):
    text = amp_claim(dict(zip(("fp32", "amp_bf16"), times, strict=True)),
                     dict(zip(("fp32", "amp_bf16"), peaks, strict=True))).text
    assert text.startswith("**Measured here:** the amp_bf16 step")
    assert all(w in text for w in words)
    with pytest.raises(ValueError, match="'fp32' first"):
        amp_claim({"amp_bf16": 1.0, "fp32": 1.0}, {"amp_bf16": 1.0, "fp32": 1.0})


# --------------------------------------------------------------------------- matmul formats


def test_tf32_rounding_keeps_ten_mantissa_bits_to_nearest_even():
    ulp = 2.0**-10
    x = torch.tensor([1 + ulp / 2, 1 + 1.5 * ulp, 1 + ulp / 2 + 2**-20, -(1 + 1.5 * ulp)])
    assert round_to_tf32(x).tolist() == [1.0, 1 + 2 * ulp, 1 + ulp, -(1 + 2 * ulp)]
    r = round_to_tf32(torch.randn(1000))
    mantissa = r.view(torch.int32) & 0x7FFFFF
    assert bool(((mantissa & 0x1FFF) == 0).all())
    with pytest.raises(TypeError, match="float32"):
        round_to_tf32(torch.ones(3, dtype=torch.float64))


def test_a_cpu_sweeps_fp64_fp32_and_a_capped_bf16(capsys):
    formats, largest = matmul_formats("cpu")
    assert formats == {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16}
    assert largest == {"bf16": 256}


# --------------------------------------------------------------------------- stream, trace, figure


def test_the_simulated_stream_returns_at_once_and_runs_in_order():
    stream, done = SimulatedStream(), []
    gate = threading.Event()
    start = time.perf_counter()
    stream.launch(gate.wait)                 # the "GPU" is busy until the gate opens
    for i in range(3):
        stream.launch(lambda i=i: done.append(i))
    assert time.perf_counter() - start < 1.0 and done == []  # launching did not wait
    gate.set()
    stream.synchronize()
    assert done == [0, 1, 2]


def test_the_simulated_stream_reports_a_failed_launch_at_synchronize():
    stream = SimulatedStream()
    stream.launch(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        stream.synchronize()
    stream.launch(lambda: None)
    stream.synchronize()                     # the error was reported once; the stream lives
    with pytest.raises(TypeError, match="fn="):
        stream.launch(3)


def test_save_chrome_trace_writes_a_trace_perfetto_can_read(capsys):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(4) + 1
    path = save_chrome_trace(prof, "test_lab_reports.json")
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("name") == "aten::add" for e in events)
    assert f"Trace written to {path}" in capsys.readouterr().out
    path.unlink()
    with pytest.raises(ValueError, match="name="):
        save_chrome_trace(prof, "../elsewhere.json")


def test_copy_pattern_figure_predicts_from_the_datasheet_and_shows_measurements():
    import matplotlib.pyplot as plt

    import gpulab as gl

    fig = plot_copy_patterns({"stride 1": 1.0, "random": 0.125}, {"stride 1": 200.0,
                                                                  "random": 20.0})
    predicted, measured = fig.axes[1].lines
    t4 = gl.get_spec("T4").memory_bandwidth / 1e9
    assert list(predicted.get_ydata()) == pytest.approx([t4, t4 / 8])
    assert measured.get_label() == "this GPU (measured)"
    plt.close(fig)
    with pytest.raises(ValueError, match="measured_gbs"):
        plot_copy_patterns({"stride 1": 1.0, "random": 0.125}, {"stride 1": 1.0})


def test_numpy_rate_keeps_the_least_disturbed_round(monkeypatch):
    import gpulab.labkit.matmul_sweep as sweep

    medians = iter([0.5, 0.001, 0.2])  # a busy round, a quiet one, a busy one
    monkeypatch.setattr(sweep, "benchmark",
                        lambda fn, min_run_time_s: (fn(), BenchResult((next(medians),), 1))[1])
    assert sweep.numpy_matmul_rate(64, rounds=3) == pytest.approx(2 * 64**3 / 0.001)
    with pytest.raises(ValueError, match="rounds="):
        sweep.numpy_matmul_rate(64, rounds=0)
