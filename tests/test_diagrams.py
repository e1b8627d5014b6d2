"""The explanatory diagrams: each refuses bad input by name and draws what its data says."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpulab as gl  # noqa: E402
from gpulab.diagrams import recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _opaque_white(fig) -> bool:
    return fig.patch.get_facecolor() == (1.0, 1.0, 1.0, 1.0)


# --------------------------------------------------------------------------- ring all-reduce


@pytest.mark.parametrize("p, n", [(2, 2), (4, 4), (4, 10), (5, 7)])
def test_ring_chunks_add_up_to_the_allreduced_result(p, n):
    values = np.random.default_rng(p * n).normal(size=(p, n))
    steps = gl.costmodels.comms.simulate_ring_allreduce(values)
    assert len(steps) == 2 * (p - 1) + 1
    assert [s.phase for s in steps].count("reduce-scatter") == p - 1
    for row in steps[-1].buffers:
        np.testing.assert_allclose(row, values.sum(axis=0))
    assert (steps[-1].contributions == p).all()
    # After the reduce-scatter each rank holds the full sum of exactly one chunk.
    after_rs = steps[p - 1]
    assert sorted((after_rs.contributions == p).sum(axis=0).tolist()) == [1] * p
    # Each step every rank sends exactly one chunk to its right-hand neighbour.
    for step in steps[1:]:
        assert sorted(src for src, _, _ in step.sends) == list(range(p))
        assert all(dst == (src + 1) % p for src, dst, _ in step.sends)


def test_ring_drawing_is_the_simulation():
    fig, steps = gl.diagrams.draw_ring_allreduce(4, seed=3)
    assert _opaque_white(fig) and len(fig.axes) == 7
    # The numbers written in the last panel are the all-reduced chunks.
    last = [t.get_text() for t in fig.axes[-1].texts if t.get_text().replace(".", "").isdigit()]
    assert [float(t) for t in last] == steps[-1].buffers.ravel().tolist()
    np.testing.assert_allclose(steps[-1].buffers[0], steps[0].buffers.sum(axis=0))


@pytest.mark.parametrize(
    "values, error, match",
    [([1, 2, 3], ValueError, "2-D"), ([[1.0, 2.0]], ValueError, "at least 2 ranks"),
     ([[1.0], [2.0]], ValueError, "columns"), ([[1.0, np.nan], [1.0, 2.0]], ValueError, "finite"),
     ("ab", TypeError, "values")],
)  # fmt: skip
def test_ring_refuses_bad_values(values, error, match):
    with pytest.raises(error, match=match):
        gl.costmodels.comms.simulate_ring_allreduce(values)


@pytest.mark.parametrize("bad, error", [(1, ValueError), (9, ValueError), (2.5, TypeError),
                                        (True, TypeError)])  # fmt: skip
def test_draw_ring_refuses_bad_sizes(bad, error):
    with pytest.raises(error, match="n_gpus"):
        gl.diagrams.draw_ring_allreduce(bad)


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (2.5, TypeError), ("1", TypeError)])
def test_draw_ring_refuses_a_bad_seed(seed, error):
    with pytest.raises(error, match="seed="):
        gl.diagrams.draw_ring_allreduce(3, seed=seed)


def test_tree_vs_ring_curves_are_the_cost_model():
    fig, curves = gl.diagrams.draw_tree_vs_ring("InfiniBand HDR", n_gpus=64)
    link = gl.interconnect("InfiniBand HDR")
    kw = dict(alpha_s=link.latency_s, bandwidth_bytes_per_s=link.bandwidth)
    drawn = zip(curves["sizes_bytes"], curves["ring_s"], curves["tree_s"], strict=True)
    for n, ring, tree in drawn:
        assert ring == gl.allreduce_time(n, 64, algorithm="ring", **kw)
        assert tree == gl.allreduce_time(n, 64, algorithm="tree", **kw)
    # Small messages favour the tree (fewer steps), large ones the ring (fewer bytes).
    assert curves["tree_s"][0] < curves["ring_s"][0]
    assert curves["ring_s"][-1] < curves["tree_s"][-1]
    drawn = fig.axes[0].lines[0].get_ydata()
    np.testing.assert_array_equal(drawn, curves["ring_s"])


def test_tree_vs_ring_needs_a_link_with_a_latency():
    with pytest.raises(ValueError, match="link=.*no latency"):
        gl.diagrams.draw_tree_vs_ring("PCIe Gen4")
    with pytest.raises(ValueError, match="n_gpus"):
        gl.diagrams.draw_tree_vs_ring(n_gpus=1)


# --------------------------------------------------------------------------- ZeRO, TP


def test_zero_bars_equal_sharded_memory():
    fig, stages = gl.diagrams.draw_zero_stages(7.5e9, 64)
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 12  # 4 stages x 3 parts
    for s in range(4):
        expected = gl.sharded_memory(
            7.5e9, 64, s, weight_bytes_per_param=2, grad_bytes_per_param=2,
            optimizer_bytes_per_param=12,
        )
        assert stages[s] == expected
        parts = [bar.get_width() * 1e9 for bar in bars if round(bar.get_y() + 0.4) == s]
        assert sum(parts) == pytest.approx(expected.total_bytes)
    assert [round(m.total_bytes / 1e9, 2) for m in stages] == [120.0, 31.41, 16.64, 1.88]


def test_zero_refuses_bad_input():
    with pytest.raises(ValueError, match="n_gpus"):
        gl.diagrams.draw_zero_stages(1e9, 0)
    with pytest.raises(ValueError, match="n_params"):
        gl.diagrams.draw_zero_stages(0)


def test_tensor_parallel_partials_sum_to_the_unsplit_output():
    fig, parts = gl.diagrams.draw_tensor_parallel(4, hidden=8)
    np.testing.assert_allclose(sum(parts["partials"]), parts["z"])
    assert len(parts["y_slices"]) == 4 and parts["y_slices"][0].shape == (3, 8)
    assert any("all-" in t.get_text() for t in fig.axes[0].texts)
    with pytest.raises(ValueError, match="hidden"):
        gl.diagrams.draw_tensor_parallel(3, hidden=2)  # 8 columns do not split 3 ways
    with pytest.raises(ValueError, match="n_gpus"):
        gl.diagrams.draw_tensor_parallel(5)


# --------------------------------------------------------------------------- pipelines


@pytest.mark.parametrize("schedule", gl.costmodels.parallelism.SCHEDULES)
@pytest.mark.parametrize("p, m", [(2, 1), (2, 4), (4, 8), (3, 7)])
def test_bubble_equals_the_formula_for_equal_stages(schedule, p, m):
    s = gl.simulate_pipeline([1.0] * p, [2.0] * p, m, schedule=schedule)
    assert s.bubble == pytest.approx(gl.pipeline_bubble(p, m), abs=1e-12)
    assert s.step_s == pytest.approx((m + p - 1) * 3.0)
    assert len(s.ops) == 2 * p * m
    for stage in range(p):  # a stage never runs two things at once
        ops = [o for o in s.ops if o.stage == stage]
        assert all(a.end_s <= b.start_s + 1e-12 for a, b in zip(ops[:-1], ops[1:], strict=True))
    expected_peak = (m,) * p if schedule == "gpipe" else tuple(min(m, p - i) for i in range(p))
    assert s.peak_in_flight == expected_peak


def test_dependencies_hold_with_transfer_time():
    s = gl.simulate_pipeline([1.0, 2.0, 1.5], [2.0, 3.0, 2.5], 4, schedule="1f1b", comm_s=0.25)
    end = {(o.kind, o.stage, o.microbatch): o.end_s for o in s.ops}
    for o in s.ops:
        if o.kind == "F" and o.stage > 0:
            assert o.start_s >= end[("F", o.stage - 1, o.microbatch)] + 0.25 - 1e-12
        if o.kind == "B" and o.stage < 2:
            assert o.start_s >= end[("B", o.stage + 1, o.microbatch)] + 0.25 - 1e-12


def _recorded_pipeline_rows():
    rows = recorded.pipeline_measurements(ROOT)
    if rows is None:
        pytest.skip("no recorded pipeline measurements in this checkout")
    return rows


def test_gantt_bubble_matches_the_measured_one_when_fed_the_measured_times():
    """Within 0.5 percentage points: the lab's table prints the bubble rounded to 1%."""
    rows = _recorded_pipeline_rows()
    checked = 0
    for row in rows:
        times = gl.stage_times_from_measurement(row["step_s"], row["bubble"], row["m"])
        if not times["exact"]:  # measured bubble below the equal-stage model: said so
            assert row["bubble"] < gl.pipeline_bubble(2, row["m"])
            continue
        sched = gl.simulate_pipeline(times["forward_s"], times["backward_s"], row["m"],
                                     comm_s=times["comm_s"])  # fmt: skip
        fig, bubbles = gl.diagrams.draw_pipeline_gantt([sched], measured_bubble=row["bubble"])
        assert bubbles[0] == pytest.approx(row["bubble"], abs=0.005)
        assert sched.step_s == pytest.approx(row["step_s"], rel=1e-9)
        checked += 1
    assert checked >= 1


def test_gantt_bubble_matches_a_measurement_exactly():
    times = gl.stage_times_from_measurement(0.0843, 0.30, 8)
    sched = gl.simulate_pipeline(times["forward_s"], times["backward_s"], 8, comm_s=times["comm_s"])
    assert times["exact"] and sched.bubble == pytest.approx(0.30, abs=1e-9)
    fig, bubbles = gl.diagrams.draw_pipeline_gantt([sched], measured_bubble=0.30)
    assert bubbles == [sched.bubble]
    idle = [b for b in fig.axes[0].patches if b.get_width() == pytest.approx(sched.step_s)]
    assert len(idle) == 2  # one idle background bar per stage, under the work
    assert "30% measured" in fig.axes[0].get_title(loc="left")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [(dict(forward_s=[1.0], backward_s=[1.0, 2.0]), ValueError, "backward_s"),
     (dict(forward_s=[0.0], backward_s=[1.0]), ValueError, r"forward_s\[0\]"),
     (dict(forward_s="1", backward_s=[1.0]), TypeError, "forward_s"),
     (dict(forward_s=[1.0], backward_s=[1.0], n_microbatches=0), ValueError, "n_microbatches"),
     (dict(forward_s=[1.0], backward_s=[1.0], schedule="zb"), ValueError, "schedule"),
     (dict(forward_s=[1.0], backward_s=[1.0], comm_s=-1.0), ValueError, "comm_s")],
)  # fmt: skip
def test_simulate_pipeline_refuses_bad_input(kwargs, error, match):
    kwargs = {"n_microbatches": 2, **kwargs}
    with pytest.raises(error, match=match):
        gl.simulate_pipeline(**kwargs)


def test_gantt_refuses_what_is_not_a_schedule():
    with pytest.raises(ValueError, match="schedules"):
        gl.diagrams.draw_pipeline_gantt([])
    with pytest.raises(TypeError, match=r"schedules\[0\]"):
        gl.diagrams.draw_pipeline_gantt([42])
    with pytest.raises(TypeError, match="schedules=42"):
        gl.diagrams.draw_pipeline_gantt(42)
    s = gl.simulate_pipeline([1.0], [1.0], 1)
    with pytest.raises(ValueError, match="measured_bubble"):
        gl.diagrams.draw_pipeline_gantt(s, measured_bubble=1.5)


def test_recorded_pipeline_reader_prefers_the_json(tmp_path):
    (tmp_path / "notebooks" / "dist_lab").mkdir(parents=True)
    data = {"world": 2, "rows": [{"m": 4, "bubble": 0.25, "step_s": 0.08, "loss": 1.0}]}
    (tmp_path / "notebooks" / "dist_lab" / "pipeline.json").write_text(json.dumps(data))
    assert recorded.pipeline_measurements(tmp_path) == data["rows"]
    assert recorded.pipeline_measurements(tmp_path / "nowhere") is None


# --------------------------------------------------------------------------- input pipeline


def test_input_pipeline_timelines_follow_the_measurements():
    fig, lanes = gl.diagrams.draw_input_pipeline(
        0.064, 0.0576, 0.186, 0.092, n_workers=4, n_batches=6
    )
    starts = [a for a, _, _ in lanes["fixed"]["compute"]]
    assert np.diff(starts) == pytest.approx([0.092] * 5)
    for case in ("starved", "fixed"):
        assert all(b - a == pytest.approx(0.0576) for a, b, _ in lanes[case]["compute"])
    loads = [s for lane, spans in lanes["fixed"].items() if lane != "compute" for s in spans]
    assert len(loads) == 6  # one load per batch
    for lane, spans in lanes["fixed"].items():  # a worker loads one batch at a time
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans[:-1], spans[1:], strict=True)), lane
    with pytest.raises(ValueError, match="starved_step_s"):
        gl.diagrams.draw_input_pipeline(0.064, 0.0576, 0.05, 0.092)
    with pytest.raises(ValueError, match="n_workers"):
        gl.diagrams.draw_input_pipeline(0.064, 0.0576, 0.186, 0.092, n_workers=0)


def test_input_pipeline_reader_reads_the_recorded_lab():
    rates = recorded.input_pipeline_measurements(ROOT)
    if rates is None:
        pytest.skip("the mini-batch lab has no recorded input-pipeline rates")
    assert rates["batch_size"] > 0 and rates["load_s"] > 0
    assert rates["in_memory"] > rates["workers"] > rates["starved"] > 0


# --------------------------------------------------------------------------- kernels


def test_launch_mapping_uses_thread_map_and_the_registry():
    fig, mapping = gl.diagrams.draw_launch_mapping(1000, 256, spec="T4")
    assert mapping["n_blocks"] == 4 and mapping["idle_threads"] == 24
    assert mapping["warps_per_block"] == 256 // gl.kernels.simulator.WARP_SIZE
    assert mapping["sm_count"] == gl.get_spec("T4").sm_count
    for bad, match in ((dict(n=0), "n"), (dict(block=2000), "block"), (dict(spec="Z9"), "spec")):
        with pytest.raises(ValueError, match=match):
            gl.diagrams.draw_launch_mapping(**{"n": 10, "block": 4, **bad})


def test_tile_loads_count_reuse():
    counts = gl.kernels.tiling.tile_loads(12, 4)
    assert (counts["a_loads"] == 3).all() and (counts["b_loads"] == 3).all()
    # Loads times reuse per load = n uses of each element, as in the naive kernel.
    assert 3 * counts["reuse_per_load"] == counts["naive_loads"]
    # 4 does not divide 10: 3 x 3 blocks, the last tiles overhang, each element read 3 times
    counts = gl.kernels.tiling.tile_loads(10, 4)
    assert (counts["a_loads"] == 3).all() and (counts["b_loads"] == 3).all()
    assert counts["global_loads"] == 2 * 10**2 * 3
    with pytest.raises(ValueError, match="n=300"):
        gl.kernels.tiling.tile_loads(300, 4)
    fig, drawn = gl.diagrams.draw_tiling(8, 2, block=(1, 2))
    green = [p for p in fig.axes[0].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(green) == 8 // 2  # the block's row of A tiles
    with pytest.raises(ValueError, match="block"):
        gl.diagrams.draw_tiling(8, 2, block=(4, 0))
    fig, drawn = gl.diagrams.draw_tiling(10, 4, block=(2, 2))  # the corner tile is cut off
    corner = [p for p in fig.axes[2].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert [(p.get_width(), p.get_height()) for p in corner] == [(2, 2)]
    with pytest.raises(ValueError, match="block"):
        gl.diagrams.draw_tiling(8, 2, block=(1,))
    with pytest.raises(TypeError, match="block"):
        gl.diagrams.draw_tiling(8, 2, block=(True, 0))
    with pytest.raises(TypeError, match="block"):
        gl.diagrams.draw_tiling(8, 2, block="x")


# --------------------------------------------------------------------------- hardware


def test_training_memory_bar_stacks_the_models_parts_against_the_gpu():
    act = 32 * gl.layer_activation_bytes(1, 4096, 4096, 32)
    fig, est = gl.diagrams.draw_training_memory(7_000_000_000, activations_bytes=act)
    assert est == gl.estimate_training_memory(7_000_000_000, precision="amp_bf16",
                                              activations_bytes=round(act))  # fmt: skip
    ax = fig.axes[0]
    parts = [est.params_bytes, est.grads_bytes, est.optimizer_bytes, est.activations_bytes]
    # One bar, its four segments end to end at the estimate's parts (GB).
    assert [b.get_width() for b in ax.patches] == pytest.approx([p / 1e9 for p in parts])
    assert [b.get_x() for b in ax.patches] == pytest.approx(
        [sum(parts[:i]) / 1e9 for i in range(4)]
    )
    # The GPU's memory, from the registry, is marked beside the bar, not across it.
    h100 = gl.get_spec("H100 SXM").memory_bytes / 1e9
    marks = [line for line in ax.lines if set(line.get_xdata()) == {h100}]
    assert len(marks) == 2 and all(min(abs(y) for y in m.get_ydata()) >= 0.3 for m in marks)
    _, alone = gl.diagrams.draw_training_memory(10**9, gpu=None)
    assert alone.total_bytes == 16 * 10**9
    with pytest.raises(TypeError, match="n_params"):
        gl.diagrams.draw_training_memory(1e9)
    with pytest.raises(ValueError, match="spec|gpu"):
        gl.diagrams.draw_training_memory(10**9, gpu="Z9000")


def test_ladder_values_equal_the_registry():
    spec = gl.get_spec("H100 SXM")
    fig, levels = gl.diagrams.draw_memory_ladder(spec)
    by_name = {lv.level: lv for lv in levels}
    device = by_name["device memory (HBM3)"]
    assert (device.capacity_bytes, device.bandwidth_bytes_per_s) == (
        spec.memory_bytes,
        spec.memory_bandwidth,
    )
    assert by_name["registers"].capacity_bytes == 65536 * 4 * spec.sm_count
    assert by_name["host memory over PCIe"].bandwidth_bytes_per_s == (
        gl.interconnect("PCIe Gen5").bandwidth
    )
    network = levels[-1]
    assert network.bandwidth_bytes_per_s == gl.interconnect("InfiniBand NDR").bandwidth
    assert all(lv.source_url.startswith("https://") for lv in levels)
    # Every published figure is a bar, at its value; the others say why in words.
    from gpulab.diagrams.hardware import LADDER_GAPS

    attrs = ("capacity_bytes", "bandwidth_bytes_per_s", "latency_cycles")
    for ax, attr in zip(fig.axes, attrs, strict=True):
        values = [getattr(lv, attr) for lv in levels]
        assert sorted(b.get_width() for b in ax.patches) == sorted(v for v in values if v)
        gaps = [t.get_text() for t in ax.texts if t.get_text() == LADDER_GAPS[attr]]
        assert len(gaps) == values.count(None), attr
    assert "not published" not in {t.get_text() for ax in fig.axes for t in ax.texts}
    # Latencies: a published measurement with its page; each rung down is slower.
    timed = [lv for lv in levels if lv.latency_cycles]
    assert [lv.level for lv in timed] == ["shared memory / L1", "L2 cache", "device memory (HBM3)"]
    assert all(lv.latency_source_url.startswith("https://github.com/") for lv in timed)
    assert [lv.latency_cycles for lv in timed] == sorted(lv.latency_cycles for lv in timed)
    # Each level is slower than the one above it, where both are published.
    bws = [lv.bandwidth_bytes_per_s for lv in levels if lv.bandwidth_bytes_per_s]
    assert bws == sorted(bws, reverse=True)


def test_ladder_refuses_a_gpu_without_figures():
    with pytest.raises(ValueError, match="spec=.*memory ladder has figures for"):
        gl.hardware.memory_ladder.memory_ladder("T4")
    with pytest.raises(ValueError, match="spec"):
        gl.hardware.memory_ladder.memory_ladder("Z9000")


def test_sm_anatomy_counts_come_from_the_per_sm_table():
    fig, drawn = gl.diagrams.draw_sm_anatomy("T4", "H100 SXM")
    for a, name in zip(drawn, ("T4", "H100 SXM"), strict=True):
        arch = gl.sm_architecture(name)
        assert a["partitions"] == arch.warp_schedulers_per_sm
        assert a["partitions"] * a["lanes_per_partition"] == arch.fp32_lanes_per_sm
        assert a["partitions"] * a["tensor_cores_per_partition"] == arch.tensor_cores_per_sm
        assert a["partitions"] * a["register_bytes_per_partition"] == arch.registers_per_sm * 4
        assert a["l1_shared_bytes"] == arch.l1_shared_per_sm_bytes
        assert a["sm_count"] == gl.get_spec(name).sm_count
    # What is drawn: one scheduler box, and the lanes, per partition.
    for ax, a in zip(fig.axes, drawn, strict=True):
        texts = [t.get_text() for t in ax.texts]
        assert texts.count("warp\nscheduler") == a["partitions"]
        assert texts.count("Tensor\nCore") == a["partitions"] * a["tensor_cores_per_partition"]
        lanes = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb(
            gl.COLORS["gpu"])]  # fmt: skip
        assert len(lanes) == a["partitions"] * a["lanes_per_partition"]
    assert len(gl.diagrams.draw_sm_anatomy("A100 80GB", None)[1]) == 1
    with pytest.raises(ValueError, match="other="):
        gl.diagrams.draw_sm_anatomy("T4", "Xeon 8380")
    with pytest.raises(ValueError, match="spec="):
        gl.diagrams.draw_sm_anatomy("Z9000")
    with pytest.raises(TypeError, match="other=42"):
        gl.diagrams.draw_sm_anatomy("T4", 42)


def test_cpu_vs_gpu_says_it_is_qualitative():
    fig, drawn = gl.diagrams.draw_cpu_vs_gpu()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum("qualitative" in t for t in texts) == 2
    assert drawn["gpu_alus"] > 10 * drawn["cpu_cores"]
    with pytest.raises(ValueError, match="style"):
        gl.diagrams.draw_cpu_vs_gpu("photo")


def test_every_diagram_has_an_opaque_white_background():
    figures = [
        gl.diagrams.draw_ring_allreduce()[0], gl.diagrams.draw_tree_vs_ring()[0],
        gl.diagrams.draw_zero_stages()[0], gl.diagrams.draw_tensor_parallel()[0],
        gl.diagrams.draw_launch_mapping()[0], gl.diagrams.draw_tiling()[0],
        gl.diagrams.draw_memory_ladder()[0], gl.diagrams.draw_cpu_vs_gpu()[0],
        gl.diagrams.draw_pipeline_gantt([gl.simulate_pipeline([1.0], [1.0], 1)])[0],
        gl.diagrams.draw_input_pipeline(0.06, 0.05, 0.2, 0.1)[0],
    ]  # fmt: skip
    assert all(_opaque_white(fig) for fig in figures)


def test_shared_memory_bandwidth_is_the_peak_its_banks_give():
    # 128 bytes per clock per SM (32 banks x 4 bytes) at the clock the FP32 peak implies.
    spec = gl.get_spec("H100 SXM")
    shared = gl.hardware.memory_ladder.memory_ladder(spec)[1]
    lanes = gl.sm_architecture(spec).fp32_lanes_per_sm
    clock_hz = spec.peak_flops["fp32"] / (2 * spec.sm_count * lanes)
    assert 1.9e9 < clock_hz < 2.0e9  # H100 SXM's boost clock is 1.98 GHz
    assert shared.bandwidth_bytes_per_s == pytest.approx(128 * spec.sm_count * clock_hz)


# --------------------------------------------------------------------------- fusion


def _gelu_by_hand(x):
    import torch

    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def test_fusion_bytes_are_eager_cost_s():
    import torch

    n = 2**20
    fig, traffic = gl.diagrams.draw_fusion(_gelu_by_hand, n, spec="H100 SXM")
    x = torch.empty(n)
    # Per kernel, what eager_cost counts for that one operation; in all, what it counts for
    # the whole function run eagerly on a real tensor.
    assert sum(k["bytes"] for k in traffic["kernels"]) == traffic["eager_bytes"]
    assert traffic["eager_bytes"] == gl.eager_cost(lambda: _gelu_by_hand(x))[1] == 18 * 4 * n
    assert [k["op"] for k in traffic["kernels"]] == [
        "mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"
    ]  # fmt: skip
    assert gl.eager_cost(lambda: x * 0.5)[1] == traffic["kernels"][0]["bytes"] == 8 * n
    assert traffic["fused_bytes"] == 2 * 4 * n
    assert all(k["write_bytes"] == 4 * n for k in traffic["kernels"])
    # The times are the roofline's for those bytes, and the drawing prints them.
    h100 = gl.get_spec("H100 SXM")
    assert traffic["eager_s"] == gl.predict_time(h100, 0, traffic["eager_bytes"]).time_s
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(gl.format_bytes(traffic["eager_bytes"]) in t for t in texts) == 1
    assert sum(t.startswith("read ") for t in texts) == 9  # eight eager kernels, one fused
    assert any("No recorded measurement" in t for t in texts)
    assert _opaque_white(fig)


def test_fusion_in_half_precision_moves_half_the_bytes():
    full = gl.costmodels.flops.fusion_traffic(_gelu_by_hand, 1024)
    half = gl.costmodels.flops.fusion_traffic(_gelu_by_hand, 1024, precision="bf16")
    assert half["eager_bytes"] * 2 == full["eager_bytes"]
    assert half["fused_bytes"] * 2 == full["fused_bytes"]


def test_fusion_prints_the_measurement_it_is_given():
    fig, traffic = gl.diagrams.draw_fusion(
        _gelu_by_hand, 1024, measured={"eager_s": 0.05, "fused_s": 0.005}
    )
    assert traffic["measured"] == {"eager_s": 0.05, "fused_s": 0.005}
    assert any("10.0× faster" in t.get_text() for t in fig.axes[0].texts)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [(dict(fn=42), TypeError, "fn="), (dict(fn=lambda x, y: x + y), TypeError, "fn="),
     (dict(fn=lambda x: x if x.sum() > 0 else -x), ValueError, "fn="),
     (dict(n_elem=0), ValueError, "n_elem"), (dict(precision="fp8"), ValueError, "precision"),
     (dict(spec="Xeon 8380"), ValueError, "spec"),
     (dict(measured={"eager_s": 1.0}), ValueError, "measured"),
     (dict(measured={"eager_s": 1.0, "fused_s": -1.0}), ValueError, "measured"),
     (dict(measured={"eager_s": 1.0, "fused_s": float("nan")}), ValueError, "measured"),
     (dict(measured={"eager_s": 1.0, "fused_s": "1"}), TypeError, "measured"),
     (dict(measured=[1.0, 2.0]), TypeError, "measured"),
     (dict(title=3), TypeError, "title=3")],
)  # fmt: skip
def test_fusion_refuses_bad_input(kwargs, error, match):
    kwargs = {"fn": _gelu_by_hand, "n_elem": 64, **kwargs}
    with pytest.raises(error, match=match):
        gl.diagrams.draw_fusion(**kwargs)


def test_fusion_reader_reads_the_recorded_lab(tmp_path):
    assert recorded.fusion_measurements(tmp_path) is None
    times = recorded.fusion_measurements(ROOT)
    if times is None:
        pytest.skip("the frameworks lab has no recorded fusion measurement")
    assert times["eager_s"] > times["fused_s"] > 0


# --------------------------------------------------------------------------- dispatcher


def test_dispatch_log_is_what_the_backend_receives():
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 3)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    fig, log = gl.diagrams.draw_dispatch(lambda: torch.nn.functional.cross_entropy(layer(x), y))
    assert [c["op"] for c in log["forward"]][:2] == ["t", "addmm"]
    assert {c["op"]: c["library"] for c in log["forward"]}["addmm"] == "cuBLAS"
    assert "mm" in [c["op"] for c in log["backward"]]
    calls = log["forward"] + log["backward"]
    assert all(c["view"] == (c["op"] in {"t", "view", "detach"}) for c in calls)
    # One box per call, dashed where it is a view.
    boxes = [p for p in fig.axes[0].patches if p.get_height() == pytest.approx(0.6)]
    assert len(boxes) == len(calls)
    assert sum(p.get_linestyle() == "--" for p in boxes) == sum(c["view"] for c in calls)
    assert _opaque_white(fig)


def test_dispatch_refuses_what_is_not_a_loss():
    import torch

    with pytest.raises(TypeError, match="forward="):
        gl.diagrams.dispatch_log(42)
    with pytest.raises(TypeError, match="forward=.*not float"):
        gl.diagrams.dispatch_log(lambda: 3.0)
    with pytest.raises(ValueError, match="forward=.*requires grad"):
        gl.diagrams.dispatch_log(lambda: torch.ones(3).sum())
    with pytest.raises(ValueError, match="forward=.*one-element"):
        gl.diagrams.dispatch_log(lambda: torch.ones(3, requires_grad=True) * 2)
    with pytest.raises(TypeError, match="title"):
        gl.diagrams.draw_dispatch(lambda: torch.ones(1, requires_grad=True).sum(), title=3)
