import pytest

import gpulab as gl


def test_pipeline_bubble_formula():
    assert gl.pipeline_bubble(1, 1) == 0  # one stage never waits
    assert gl.pipeline_bubble(2, 1) == pytest.approx(0.5)
    assert gl.pipeline_bubble(4, 4) == pytest.approx(3 / 7)
    # more micro-batches, smaller bubble
    bubbles = [gl.pipeline_bubble(8, m) for m in (1, 2, 8, 64)]
    assert bubbles == sorted(bubbles, reverse=True)
    with pytest.raises(ValueError, match="n_microbatches=0"):
        gl.pipeline_bubble(2, 0)
    with pytest.raises(TypeError, match="n_stages=2.0"):
        gl.pipeline_bubble(2.0, 4)


def test_amdahl():
    assert gl.amdahl_speedup(1, 0.3) == pytest.approx(1)
    assert gl.amdahl_speedup(10**9, 0.1) == pytest.approx(10, rel=1e-6)  # at most 1/s
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="serial_fraction="):
            gl.amdahl_speedup(4, bad)
    for bad in ("0.1", True):
        with pytest.raises(TypeError, match="serial_fraction="):
            gl.amdahl_speedup(4, bad)
    with pytest.raises(ValueError, match="n_gpus=0"):
        gl.amdahl_speedup(0, 0.1)


def test_sharded_memory_stages():
    # 1M params, FP32 + Adam: 4 + 4 + 8 = 16 bytes each, 4 ranks
    mem = [gl.sharded_memory(1e6, 4, stage) for stage in range(4)]
    assert [m.total_bytes for m in mem] == pytest.approx([16e6, 10e6, 7e6, 4e6])
    two = mem[2]
    assert (two.params_bytes, two.grads_bytes, two.optimizer_bytes) == pytest.approx(
        (4e6, 1e6, 2e6)
    )
    assert mem[3].n_gpus == 4 and mem[3].stage == 3
    assert gl.sharded_memory(1e6, 1, 3).total_bytes == pytest.approx(16e6)  # one rank: no shards
    for bad_stage in (4, -1):
        with pytest.raises(ValueError, match="stage="):
            gl.sharded_memory(1e6, 4, bad_stage)
        with pytest.raises(ValueError, match="stage="):
            gl.costmodels.parallelism.ShardedMemory(1.0, 1.0, 1.0, 4, bad_stage)
    for bad_stage in (1.0, "3", True, float("nan")):
        with pytest.raises(TypeError, match="stage="):
            gl.sharded_memory(1e6, 4, bad_stage)
    with pytest.raises(ValueError, match="optimizer_bytes_per_param=nan"):
        gl.sharded_memory(1e6, 4, 1, optimizer_bytes_per_param=float("nan"))
    with pytest.raises(ValueError, match="n_params=inf"):
        gl.sharded_memory(float("inf"), 4, 1)


def test_sharded_memory_splits_as_zero_does_and_refuses_two_splits_at_once():
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, mixed precision with Adam, 64 GPUs:
    120 GB replicated, 31.4 GB at stage 1 (P_os), 16.6 GB at stage 2, 1.9 GB at stage 3."""
    paper = [120.0, 31.4, 16.6, 1.9]
    for precision in ("amp_fp16", "amp_bf16"):
        got = [gl.sharded_memory(7.5e9, 64, s, precision=precision).total_bytes for s in range(4)]
        assert [round(b / 1e9, 1) for b in got] == paper
    zero = gl.costmodels.memory.zero_bytes_per_param("amp_bf16", "adam")
    assert zero == {"parameters": 2, "gradients": 2, "optimizer states": 12}
    # The single-GPU split sums to the same 16 bytes but puts the master copy in "parameters":
    one_gpu = gl.bytes_per_param("amp_bf16", "adam")
    assert sum(one_gpu.values()) == sum(zero.values()) == 16
    by_hand = dict(
        weight_bytes_per_param=one_gpu["parameters"],
        grad_bytes_per_param=one_gpu["gradients"],
        optimizer_bytes_per_param=one_gpu["optimizer states"],
    )
    misread = gl.sharded_memory(7.5e9, 64, 1, **by_hand).total_bytes
    assert round(misread / 1e9, 1) == 60.9  # the number the docstrings warn of: not the paper's
    # Without mixed precision both splits agree, and precision=None keeps FP32 + Adam
    for optimizer in ("sgd", "sgd_momentum", "adam", "adamw"):
        for precision in ("fp32", "bf16"):
            assert gl.costmodels.memory.zero_bytes_per_param(
                precision, optimizer
            ) == gl.bytes_per_param(precision, optimizer)
    assert gl.sharded_memory(1e6, 4, 1) == gl.sharded_memory(1e6, 4, 1, precision="fp32")
    assert gl.sharded_memory(1e6, 4, 2, precision="amp_fp16", optimizer="sgd").total_bytes == (
        pytest.approx(1e6 * (2 + 2 / 4 + 4 / 4))
    )
    with pytest.raises(ValueError, match=r"precision='amp_bf16' and weight_bytes_per_param=4"):
        gl.sharded_memory(7.5e9, 64, 1, precision="amp_bf16", **by_hand)
    with pytest.raises(ValueError, match=r"optimizer='adam' and grad_bytes_per_param=2"):
        gl.sharded_memory(7.5e9, 64, 1, optimizer="adam", grad_bytes_per_param=2)
    with pytest.raises(ValueError, match=r"precision='fp8' is not known"):
        gl.sharded_memory(7.5e9, 64, 1, precision="fp8")
    with pytest.raises(ValueError, match=r"optimizer='lion' is not known"):
        gl.sharded_memory(7.5e9, 64, 1, optimizer="lion")


def test_scaling_curve_is_dp_step_time_per_count():
    # Weak scaling worked by hand from the documented model: NVLink 3 moves 300 GB/s and has
    # no published latency, so a ring all-reduce of 3 GB takes 2(p-1)/p x 10 ms; a tenth of
    # the 0.1 s step (10 ms) hides it; total = compute + max(0, comm - 10 ms). Exact values,
    # so rel=1e-9 only absorbs float rounding.
    curve = gl.scaling_curve(0.1, 3e9, [1, 2, 4, 8], link="NVLink 3", overlap=0.1)
    assert [s.n_gpus for s in curve] == [1, 2, 4, 8]
    assert [s.comm_s for s in curve] == pytest.approx([0, 0.010, 0.015, 0.0175], rel=1e-9)
    assert [s.exposed_comm_s for s in curve] == pytest.approx([0, 0, 0.005, 0.0075], abs=1e-12)
    assert [s.total_s for s in curve] == pytest.approx([0.1, 0.1, 0.105, 0.1075], rel=1e-9)
    assert [s.speedup for s in curve] == pytest.approx([1, 2, 4 / 1.05, 8 / 1.075], rel=1e-9)
    # More GPUs never make a step shorter or more efficient; efficiency stays at most 1 and
    # falls towards 0.1 / (0.1 + 20 ms - 10 ms), never below, as the ring's 2(p-1)/p nears 2.
    many = gl.scaling_curve(0.1, 3e9, [1, 2, 4, 8, 64, 1024], link="NVLink 3", overlap=0.1)
    totals, efficiency = [s.total_s for s in many], [s.efficiency for s in many]
    assert totals == sorted(totals) and efficiency == sorted(efficiency, reverse=True)
    assert efficiency[0] == 1 and all(s.speedup <= s.n_gpus for s in many)
    assert efficiency[-1] == pytest.approx(0.1 / (0.09 + 0.02 * 1023 / 1024), rel=1e-9)
    assert efficiency[-1] > 0.1 / 0.11
    # The counts keep the order given; a per-message latency adds 2(p-1) x alpha.
    latency = gl.scaling_curve(0.1, 3e9, [8, 2], link="NVLink 3", overlap=0.1, alpha_s=1e-3)
    assert [s.n_gpus for s in latency] == [8, 2]
    assert [s.comm_s for s in latency] == pytest.approx([0.0315, 0.012], rel=1e-9)
    # With all of the all-reduce hidden behind compute, scaling is perfect.
    hidden = gl.scaling_curve(0.1, 3e9, [2, 8], link="NVLink 3", overlap=0.5)
    assert [s.efficiency for s in hidden] == [1, 1]
    for bad, error, match in (
        ([1, 0], ValueError, r"n_gpus\[1\]=0"),
        ([], ValueError, r"n_gpus=\[\]"),
        (8, TypeError, "n_gpus=8"),
        ([2.0], TypeError, r"n_gpus\[0\]=2.0"),
        ([2.5], TypeError, r"n_gpus\[0\]=2.5"),
    ):
        with pytest.raises(error, match=match):
            gl.scaling_curve(0.2, 1e8, bad, link="NVLink 3")


def test_stage_times_refuse_a_bubble_of_one_or_more():
    for bad in (1.0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="bubble="):
            gl.stage_times_from_measurement(0.1, bad, 4)
    for bad in ("0.5", True):
        with pytest.raises(TypeError, match="bubble="):
            gl.stage_times_from_measurement(0.1, bad, 4)
