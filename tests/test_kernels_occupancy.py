"""Occupancy and wave predictions against values worked out by hand from the per-SM table.

CUDA's own answers, from ``cuda_occupancy.h``, are in test_kernels_occupancy_reference.py.
"""

import sys

import pytest

import gpulab as gl


@pytest.mark.parametrize(
    "spec, threads, regs, shared, blocks, warps, limiter",
    [
        # T4: 32 warps, 16 blocks per SM; 256 threads = 8 warps -> 4 blocks by warps.
        ("Tesla T4", 256, 32, 0, 4, 32, "warps"),
        # 32 threads per block: 1 warp each, 16 block slots -> 16 of 32 warps.
        ("Tesla T4", 32, 32, 0, 16, 16, "blocks"),
        # A100, 64 registers: 2048 per warp -> 32 warps -> 4 blocks of 8.
        ("A100 80GB SXM4", 256, 64, 0, 4, 32, "registers"),
        # 33 registers: 1,056 per warp, allocated as 1,280; each of the 4 register files of
        # 16,384 holds 12 such warps, 48 per SM -> 16 blocks of 3 warps (not 65,536 / 1,280
        # = 51 warps -> 17 blocks: a warp's registers come from one file).
        ("A100 80GB SXM4", 96, 33, 0, 16, 48, "registers"),
        # 22,950 B + 1,024 reserved = 23,974, allocated in 128-byte units as 24,064:
        # 167,936 // 24,064 = 6 blocks (not 167,936 // 23,974 = 7).
        ("A100 80GB SXM4", 256, 32, 22950, 6, 48, "shared memory"),
        # T4: 6,500 B allocated in 256-byte units as 6,656 -> 65,536 // 6,656 = 9 blocks.
        ("Tesla T4", 32, 32, 6500, 9, 9, "shared memory"),
        # 255 registers round to 8192 per warp -> 8 warps -> 1 block of 8.
        ("A100 80GB SXM4", 256, 255, 0, 1, 8, "registers"),
        # 48 KB + 1 KB reserved per block in 164 KB -> 3 blocks.
        ("A100 80GB SXM4", 128, 32, 48 * 1024, 3, 12, "shared memory"),
        # H100: 228 KB per SM; 32 KB + 1 KB per block -> 6 blocks.
        ("H100 SXM5 80GB", 256, 32, 32 * 1024, 6, 48, "shared memory"),
        # T4: 64 KB per SM, 32 KB per block -> 2 blocks of 8 warps.
        ("Tesla T4", 256, 32, 32 * 1024, 2, 16, "shared memory"),
    ],
)
def test_occupancy_by_hand(spec, threads, regs, shared, blocks, warps, limiter):
    occ = gl.occupancy(spec, threads, regs, shared)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (blocks, warps, limiter)
    assert occ.fraction == warps / occ.max_warps_per_sm


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(threads_per_block=2048), "threads_per_block=2048"),
        (dict(registers_per_thread=256), "registers_per_thread=256"),
        (dict(shared_per_block_bytes=65 * 1024), "shared_per_block_bytes=66560"),
        (dict(threads_per_block=0), "threads_per_block=0"),
    ],
)
def test_impossible_configurations_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gl.occupancy("T4", **kwargs)


def test_waves_step_with_n():
    # A100: 108 SMs. n = 1280 -> 100 tiles (1 wave); 1408 -> 121 tiles (2 waves, the
    # second nearly empty) so the time doubles for 10 % more n.
    small, big = gl.matmul_waves("A100 80GB SXM4", 1280), gl.matmul_waves("A100 80GB SXM4", 1408)
    assert (small.tiles, small.waves, big.tiles, big.waves) == (100, 1, 121, 2)
    assert big.time_s / small.time_s == pytest.approx(2 * 1408 / 1280)
    assert big.efficiency < 0.6 < small.efficiency
    # A tile count that fills whole waves loses nothing.
    full = gl.matmul_waves("Tesla T4", 128 * 20, tile=128)  # 400 tiles = 10 waves of 40
    assert full.efficiency == pytest.approx(1.0)
    assert "prediction" in full.label or "predicted" in full.label


def test_waves_need_a_gpu_with_an_sm_count_and_a_known_peak():
    with pytest.raises(ValueError, match="precision='bf16'"):
        gl.matmul_waves("T4", 1024, precision="bf16")
    with pytest.raises(ValueError, match="spec="):
        gl.matmul_waves("Xeon 8380", 1024)
    with pytest.raises(TypeError, match="precision=16"):
        gl.matmul_waves("T4", 1024, precision=16)
    with pytest.raises(TypeError, match="tile=128.0"):
        gl.matmul_waves("T4", 1024, tile=128.0)


def test_occupancy_calculator_follows_its_controls():
    pytest.importorskip("ipywidgets")
    box = gl.occupancy_calculator("A100 80GB SXM4", threads_per_block=256, registers_per_thread=64)
    text = box.children[-1].outputs[0]["text"]
    assert "32 of 64 warps" in text and "limited by registers" in text
    regs = next(c for c in box.children[:-1] if c.description == "Registers/thread")
    regs.value = 32
    assert "64 of 64 warps" in box.children[-1].outputs[0]["text"]
    device = next(c for c in box.children[:-1] if c.description == "Device")
    device.value = "Tesla T4"
    assert "32 of 32 warps" in box.children[-1].outputs[0]["text"]


def test_occupancy_calculator_without_ipywidgets(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    assert gl.occupancy_calculator("T4") is None
    out = capsys.readouterr().out
    assert out.startswith("The interactive occupancy calculator needs ipywidgets")
    assert gl.occupancy("T4").summary() in out
