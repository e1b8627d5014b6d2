"""One transformer block on the roofline, with the tokens per step as the knob."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab._checks import positive_number, wrong_type
from gpulab.costmodels.block_ops import block_ops, crossing_tokens
from gpulab.costmodels.roofline import Ceilings
from gpulab.diagrams._draw import PALETTE, new_figure
from gpulab.hardware.specs import resolve_spec

__all__ = ["draw_block_roofline"]

#: Colour of each kind of operation.
_KIND_COLORS = {
    "weight matmul": PALETTE["gpu"],
    "attention matmul": PALETTE["prediction"],
    "elementwise": PALETTE["memory"],
}
#: Shapes of the weight matmuls (d_in, d_out) in units of d_model and d_ff, for the crossing.
_WEIGHT_SHAPES = {
    "QKV projection": ("d", "3d"),
    "output projection": ("d", "d"),
    "MLP up": ("d", "ff"),
    "MLP down": ("ff", "d"),
}


def _tokens(value) -> tuple[float, ...]:
    wanted = "a sequence of tokens per step, each above 0, in increasing order"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise wrong_type("tokens", value, wanted)
    out = tuple(positive_number(f"tokens[{i}]", t) for i, t in enumerate(value))
    if any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(f"tokens={value!r} must be {wanted}")
    return out


def draw_block_roofline(
    spec="H100 SXM",
    tokens: Sequence[float] = (16, 256, 4096),
    *,
    precision: str = "bf16",
    d_model: int = 4096,
    n_heads: int = 32,
    seq_len: int = 2048,
):
    """A transformer block's operations on one device's roofline, at several batch sizes.

    Top: the datasheet roofline of ``spec`` in ``precision`` (every operation computes in
    it, so all sit under that one roof), with each operation of
    :func:`gpulab.costmodels.block_ops.block_ops` at its intensity for each entry of
    ``tokens``: the weight matmuls move right and climb onto the flat roof as the batch
    grows; attention's matmuls and the elementwise operations stay where they are. Bottom:
    intensity against tokens per step, with the ridge point and the tokens from which each
    weight matmul is compute-bound.

    Parameters
    ----------
    spec : DeviceSpec or str
        Registry device whose datasheet roofline is drawn (a prediction).
    tokens : sequence of float
        Tokens per step at which the operations are placed, increasing.
    precision : str
        Format of the operations and of the roof (default BF16).
    d_model, n_heads, seq_len
        The block's shape, as for :func:`~gpulab.costmodels.block_ops.block_ops` (MLP width
        ``4 · d_model``).

    Returns
    -------
    fig : matplotlib Figure
    data : dict
        ``ceilings`` (the roof), ``ridge_point`` (FLOP/byte), ``ops`` (tokens → list of
        BlockOp), ``bound`` (tokens → {op name: "compute" or "memory"}) and ``crossing``
        ({weight matmul name: tokens per step from which it is compute-bound}).

    Examples
    --------
    >>> fig, data = draw_block_roofline("H100 SXM", tokens=(16, 4096))
    >>> data["bound"][16]["MLP up"], data["bound"][4096]["MLP up"]
    ('memory', 'compute')
    >>> data["bound"][4096]["softmax"]
    'memory'
    >>> 300 < min(data["crossing"].values()) < 350
    True
    """
    import numpy as np

    entry = resolve_spec("spec", spec)
    steps = _tokens(tokens)
    roof = Ceilings.from_spec(entry, precision)
    ridge = roof.ridge_point
    shape = {"d": d_model, "3d": 3 * d_model, "ff": 4 * d_model}
    crossing = {
        name: crossing_tokens(ridge, shape[a], shape[b], precision)
        for name, (a, b) in _WEIGHT_SHAPES.items()
    }
    ops = {t: block_ops(t, d_model=d_model, n_heads=n_heads, seq_len=seq_len,
                        precision=precision) for t in steps}  # fmt: skip
    bound = {t: {op.name: "compute" if op.intensity >= ridge else "memory" for op in ops[t]}
             for t in steps}  # fmt: skip

    fig, (top, bottom) = new_figure(2, 1, figsize=(7.5, 9.0))
    # Top: the roof, and every operation at every batch size.
    low, high = 0.05, 1e4
    x = np.logspace(np.log10(low), np.log10(high), 400)
    top.plot(x, np.minimum(roof.peak_flops, x * roof.memory_bandwidth) / 1e12, "--",
              color=PALETTE["text"], lw=1.5,
              label=f"{entry.name} {precision.upper()} (datasheet: prediction)")  # fmt: skip
    top.axvline(ridge, color=PALETTE["idle"], lw=1, zorder=0)
    sizes = np.linspace(25, 90, len(steps))
    for kind, color in _KIND_COLORS.items():
        for size, t in zip(sizes, steps, strict=True):
            mine = [op for op in ops[t] if op.kind == kind]
            top.scatter([op.intensity for op in mine],
                         [roof.attainable(op.intensity) / 1e12 for op in mine],
                         s=size, facecolor="white", edgecolor=color, linewidth=1.5, zorder=4,
                         label=kind if t == steps[0] else None)  # fmt: skip
    last = ops[steps[-1]]
    for t in steps:
        mlp = next(op for op in ops[t] if op.name == "MLP up")
        top.annotate(f"{t:,.0f} tokens", (mlp.intensity, roof.attainable(mlp.intensity) / 1e12),
                      xytext=(4, -12), textcoords="offset points", fontsize=8,
                      color=_KIND_COLORS["weight matmul"])  # fmt: skip
    named = {"softmax": "softmax", "LayerNorm 1": "LayerNorm, GELU",
             "residual add 1": "residual add", "attention scores Q·Kᵀ": "Q·Kᵀ, P·V"}
    for op in last:
        if op.name in named:
            top.annotate(named[op.name], (op.intensity, roof.attainable(op.intensity) / 1e12),
                          xytext=(-6, 8), textcoords="offset points", fontsize=8,
                          ha="right")  # fmt: skip
    top.set_xscale("log")
    top.set_yscale("log")
    top.set_xlim(low, high)
    top.set_xlabel("arithmetic intensity (FLOP/byte)")
    top.set_ylabel("attainable (TFLOP/s)")
    top.set_title(f"one block's operations on the {precision.upper()} roof", fontsize=10)
    top.legend(loc="lower right", fontsize=8)

    # Bottom: intensity against the tokens per step.
    grid = np.logspace(0, np.log10(max(4 * steps[-1], 16384)), 200)
    for name in _WEIGHT_SHAPES:
        values = [next(op for op in block_ops(t, d_model=d_model, n_heads=n_heads,
                                              seq_len=seq_len, precision=precision)
                       if op.name == name).intensity for t in grid]  # fmt: skip
        bottom.plot(grid, values, color=_KIND_COLORS["weight matmul"], lw=1.2,
                   label="weight matmuls (4)" if name == "QKV projection" else None)  # fmt: skip
    for op in last:
        if op.kind != "weight matmul" and op.name in named:
            bottom.axhline(op.intensity, color=_KIND_COLORS[op.kind], lw=1.2)
            below = op.name == "softmax"  # under its line, clear of LayerNorm's label
            bottom.text(grid[0] * 1.2, op.intensity / 1.15 if below else op.intensity * 1.12,
                        named[op.name], fontsize=8, va="top" if below else "baseline",
                       color=_KIND_COLORS[op.kind])  # fmt: skip
    bottom.axhline(ridge, color=PALETTE["text"], ls="--", lw=1)
    bottom.text(grid[-1] / 1.2, ridge * 1.12, f"ridge point {ridge:.0f} FLOP/byte",
               fontsize=8, ha="right")  # fmt: skip
    first = min(crossing.values())
    bottom.axvline(first, color=PALETTE["idle"], lw=1, zorder=0)
    bottom.text(first * 1.15, 0.3, f"compute-bound from\n≈{first:.0f} tokens per step",
               fontsize=8)  # fmt: skip
    bottom.set_xscale("log")
    bottom.set_yscale("log")
    bottom.set_ylim(0.1, 1e4)
    bottom.set_xlabel("tokens per step (batch × sequence length)")
    bottom.set_ylabel("arithmetic intensity (FLOP/byte)")
    bottom.set_title("the batch moves only the weight matmuls", fontsize=10)
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig, {"ceilings": roof, "ridge_point": ridge, "ops": ops, "bound": bound,
                 "crossing": crossing}
