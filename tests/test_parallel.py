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
    with pytest.raises(ValueError, match="optimizer_bytes=nan"):
        gl.sharded_memory(1e6, 4, 1, optimizer_bytes=float("nan"))
    with pytest.raises(ValueError, match="n_params=inf"):
        gl.sharded_memory(float("inf"), 4, 1)


def test_scaling_curve_is_dp_step_time_per_count():
    curve = gl.scaling_curve(0.2, 1e8, [1, 2, 4], link="NVLink 3", overlap=0.1)
    for step, p in zip(curve, [1, 2, 4], strict=True):
        assert step == gl.dp_step_time(0.2, 1e8, p, link="NVLink 3", overlap=0.1)
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
