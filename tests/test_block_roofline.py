"""A transformer block on the roofline: its operations' counts, the crossing batch, the figure,
and a kernel placed under the roof of its own precision."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpulab as gl  # noqa: E402
from gpulab.costmodels.block_ops import (  # noqa: E402
    block_ops,
    crossing_tokens,
    matmul_intensity,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _by_name(tokens, **kwargs):
    return {op.name: op for op in block_ops(tokens, **kwargs)}


def test_weight_matmul_counts_by_hand():
    ops = _by_name(8, d_model=64, n_heads=4, seq_len=16)
    mlp = ops["MLP up"]  # (8 × 64) @ (64 × 256), BF16
    assert mlp.flops == 2 * 8 * 64 * 256
    assert mlp.n_bytes == 2 * (8 * 64 + 64 * 256 + 8 * 256)
    assert mlp.intensity == pytest.approx(matmul_intensity(8, 64, 256))
    assert ops["QKV projection"].flops == 2 * 8 * 64 * 192
    assert ops["residual add 1"].n_bytes == 3 * 2 * 8 * 64
    assert ops["GELU"].flops == 8 * 8 * 256
    assert [op.name for op in block_ops(8, d_model=64, n_heads=4, seq_len=16)][:4] == [
        "LayerNorm 1", "QKV projection", "attention scores Q·Kᵀ", "softmax"]


def test_attention_counts_by_hand():
    # 2 sequences of 16 tokens, 4 heads of 16: 8 (sequence, head) pairs
    ops = _by_name(32, d_model=64, n_heads=4, seq_len=16)
    scores = ops["attention scores Q·Kᵀ"]
    assert scores.flops == pytest.approx(8 * 2 * 16 * 16 * 16)
    assert scores.n_bytes == pytest.approx(8 * 2 * (2 * 16 * 16 + 16 * 16))
    assert ops["softmax"].flops == pytest.approx(5 * 8 * 16 * 16)


def test_only_the_weight_matmuls_move_with_the_batch():
    few, many = _by_name(16), _by_name(4096)
    for name, op in few.items():
        if op.kind == "weight matmul":
            assert many[name].intensity > 50 * op.intensity
        else:
            assert many[name].intensity == pytest.approx(op.intensity)
    # about one FLOP per byte per token while the tokens are few (BF16)
    assert matmul_intensity(16, 4096, 4096) == pytest.approx(16, rel=0.01)
    assert matmul_intensity(1, 4096, 4096, "fp32") == pytest.approx(0.5, rel=0.01)


def test_crossing_tokens_is_where_the_intensity_meets_the_ridge():
    ridge = gl.Ceilings.from_spec("H100 SXM", "bf16").ridge_point
    for d_in, d_out in [(4096, 4096), (4096, 16384), (16384, 4096)]:
        t = crossing_tokens(ridge, d_in, d_out)
        assert matmul_intensity(t, d_in, d_out) == pytest.approx(ridge)
        below, above = (matmul_intensity(f * t, d_in, d_out) for f in (0.99, 1.01))
        assert below < ridge < above
        assert gl.predict_time("H100 SXM", *_cost(1.05 * t, d_in, d_out), "bf16").bound == "compute"
        assert gl.predict_time("H100 SXM", *_cost(0.95 * t, d_in, d_out), "bf16").bound == "memory"
    with pytest.raises(ValueError, match="ridge_point=500.*never reaches it"):
        crossing_tokens(500, 256, 256)  # its intensity tends to 128 FLOP/byte


def _cost(t, d_in, d_out):
    return 2 * t * d_in * d_out, 2 * (t * d_in + d_in * d_out + t * d_out)


def test_block_ops_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="tokens=0"):
        block_ops(0)
    with pytest.raises(TypeError, match="d_model='4096'"):
        block_ops(16, d_model="4096")
    with pytest.raises(ValueError, match="d_model=100 must be a multiple of n_heads=32"):
        block_ops(16, d_model=100)
    with pytest.raises(ValueError, match="precision='fp64'"):
        block_ops(16, precision="fp64")


def test_block_figure_draws_what_its_data_says():
    fig, data = gl.diagrams.draw_block_roofline("H100 SXM", tokens=(16, 256, 4096))
    assert fig.patch.get_facecolor() == (1.0, 1.0, 1.0, 1.0)
    top, bottom = fig.axes
    roof = data["ceilings"]
    assert roof.precision == "bf16" and roof.device_name == "H100 SXM5 80GB"
    line = top.get_lines()[0]
    assert max(line.get_ydata()) == pytest.approx(roof.peak_flops / 1e12)
    # every operation at every batch size, placed on the roof at its intensity
    placed = np.concatenate([c.get_offsets() for c in top.collections])
    assert len(placed) == 3 * 12
    for ops in data["ops"].values():
        for op in ops:
            here = np.isclose(placed[:, 0], op.intensity)
            assert here.any()
            assert np.allclose(placed[here, 1], roof.attainable(op.intensity) / 1e12)
    assert data["bound"][256]["MLP up"] == "memory" and data["bound"][4096]["MLP up"] == "compute"
    assert set(data["crossing"]) == {"QKV projection", "output projection", "MLP up", "MLP down"}
    # the bottom panel's ridge line is the roof's ridge point
    ridge_lines = [ln for ln in bottom.get_lines() if np.allclose(ln.get_ydata(), roof.ridge_point)]
    assert ridge_lines
    with pytest.raises(ValueError, match=r"tokens=\(256, 16\)"):
        gl.diagrams.draw_block_roofline("H100 SXM", tokens=(256, 16))
    with pytest.raises(TypeError, match="tokens=16"):
        gl.diagrams.draw_block_roofline("H100 SXM", tokens=16)


# ------------------------------------------------------ each kernel under its own precision


def test_a_point_sits_under_the_roof_of_its_own_precision():
    bf16, fp32 = (gl.Ceilings.from_spec("H100 SXM", p) for p in ("bf16", "fp32"))
    add = gl.RooflinePoint("FP32 add", 1e6, 12e6, precision="fp32")
    mm = gl.RooflinePoint("BF16 matmul", 2 * 4096.0**3, 6 * 4096.0**2, precision="bf16")
    ax = gl.plot_roofline([bf16, fp32], [add, mm])
    offsets = [c.get_offsets()[0] for c in ax.collections if len(c.get_offsets()) == 1]
    # the compute-bound BF16 matmul on the BF16 flat roof, not the FP32 one
    assert np.allclose(offsets[-1], [mm.intensity, bf16.peak_flops / 1e9])
    # order of the roofs does not matter: each point finds its own
    ax = gl.plot_roofline([fp32, bf16], [mm])
    offsets = [c.get_offsets()[0] for c in ax.collections if len(c.get_offsets()) == 1]
    assert np.allclose(offsets[-1], [mm.intensity, bf16.peak_flops / 1e9])
    # an FP32 kernel under BF16 roofs only is refused, naming the point and the precisions
    with pytest.raises(ValueError, match=r"points\[0\]='FP32 add' computes in fp32, but the "
                       r"roofs are in bf16"):
        gl.plot_roofline([bf16], [add])
    half = gl.RooflinePoint("FP16 matmul", 2 * 4096.0**3, 6 * 4096.0**2, precision="fp16")
    with pytest.raises(ValueError, match=r"points\[1\]='FP32 add'.*roofs are in fp16"):
        gl.plot_roofline("T4", [half, add], precision="fp16")
    gl.plot_roofline(["T4", gl.Ceilings.from_spec("T4", "fp32")], [half, add], precision="fp16")
    with pytest.raises(ValueError, match="precision='int4'"):
        gl.RooflinePoint("x", 1, 1, precision="int4")
