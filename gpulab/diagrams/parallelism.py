"""How a model's training state and its layers are split over GPUs: ZeRO and tensor parallelism."""

from __future__ import annotations

import numpy as np

from gpulab._checks import positive_int, positive_number
from gpulab.costmodels.parallelism import sharded_memory
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.units import format_bytes

__all__ = ["draw_zero_stages", "draw_tensor_parallel"]

_PARTS = (("params_bytes", "parameters"), ("grads_bytes", "gradients"),
          ("optimizer_bytes", "optimizer state"))  # fmt: skip


def draw_zero_stages(
    n_params: float = 7.5e9,
    n_gpus: int = 64,
    *,
    weight_bytes_per_param: float = 2,
    grad_bytes_per_param: float = 2,
    optimizer_bytes_per_param: float = 12,
):
    """Per-rank training-state memory under ZeRO stages 0 to 3, stacked by what it holds.

    Every bar is :func:`gpulab.sharded_memory` for that stage; the defaults are the ZeRO
    paper's example (7.5 billion parameters, mixed precision with Adam, 64 GPUs).

    Parameters
    ----------
    n_params, n_gpus, weight_bytes_per_param, grad_bytes_per_param, optimizer_bytes_per_param
        As in :func:`gpulab.sharded_memory`.

    Returns
    -------
    fig : matplotlib Figure
    stages : list of ShardedMemory
        The four results drawn, stage 0 first.

    See also
    --------
    gpulab.sharded_memory. The chapter *Scaling out* shows this figure.
    """
    positive_number("n_params", n_params)
    stages = [
        sharded_memory(n_params, n_gpus, s, weight_bytes_per_param=weight_bytes_per_param,
                       grad_bytes_per_param=grad_bytes_per_param,
                       optimizer_bytes_per_param=optimizer_bytes_per_param)
        for s in range(4)
    ]  # fmt: skip
    fig, ax = new_figure(figsize=(7.0, 3.6))
    colors = (PALETTE["cpu"], PALETTE["gpu"], PALETTE["memory"])
    labels = ["0: replicated (DDP)", "1: optimizer sharded", "2: + gradients", "3: + parameters"]
    for i, mem in enumerate(stages):
        left = 0.0
        for (attr, name), color in zip(_PARTS, colors, strict=True):
            value = getattr(mem, attr) / 1e9
            ax.barh(i, value, left=left, color=color, edgecolor="white",
                    label=name if i == 0 else None)  # fmt: skip
            left += value
        ax.text(left, i, f"  {format_bytes(mem.total_bytes)}", va="center", fontsize=8)
    ax.set_yticks(range(4), labels)
    ax.invert_yaxis()
    ax.set_xlabel("training state per rank (GB)")
    ax.set_xlim(0, stages[0].total_bytes / 1e9 * 1.2)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(
        f"ZeRO stage, {n_params / 1e9:g}B parameters on {stages[0].n_gpus} GPUs "
        f"({weight_bytes_per_param:g} + {grad_bytes_per_param:g} + {optimizer_bytes_per_param:g} "
        "bytes per parameter)",
        fontsize=9,
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig, stages


def draw_tensor_parallel(n_gpus: int = 2, *, hidden: int = 8):
    """A two-layer MLP split over ``n_gpus``: first layer by columns, second by rows.

    Megatron-LM's split: ``Y = X·A`` with ``A`` cut into column blocks needs no
    communication (each GPU computes its slice of ``Y``); ``Z = Y·B`` with ``B`` cut into row
    blocks gives each GPU a partial sum of ``Z``, added up by one all-reduce. The drawing is
    checked by computing it: the returned partial products sum to the unsplit ``Z``.

    Parameters
    ----------
    n_gpus : int
        GPUs, 2 to 4; must divide ``4 * hidden``.
    hidden : int
        Width of ``X`` (the MLP widens to ``4 * hidden`` in between), 2 to 16.

    Returns
    -------
    fig : matplotlib Figure
    parts : dict
        ``{"z": the unsplit output, "partials": each GPU's partial Z, "y_slices": ...}``.
    """
    p = positive_int("n_gpus", n_gpus)
    h = positive_int("hidden", hidden)
    if not 2 <= p <= 4:
        raise ValueError(f"n_gpus={n_gpus!r} must be 2, 3 or 4 for a readable drawing")
    if not 2 <= h <= 16 or (4 * h) % p:
        raise ValueError(f"hidden={hidden!r} must be 2 to 16 with 4 * hidden divisible by n_gpus")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, h))
    a = rng.standard_normal((h, 4 * h))
    b = rng.standard_normal((4 * h, h))
    cols = np.split(np.arange(4 * h), p)
    y_slices = [np.maximum(x @ a[:, c], 0) for c in cols]  # GeLU/ReLU is elementwise: local
    partials = [y @ b[c, :] for y, c in zip(y_slices, cols, strict=True)]
    z = np.maximum(x @ a, 0) @ b
    fig, ax = new_figure(figsize=(8.0, 1.3 + 1.1 * p))
    blank(ax)
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.9, p * 1.2 + 0.2)
    gpu_colors = [PALETTE["cpu"], PALETTE["gpu"], PALETTE["memory"], PALETTE["prediction"]]
    for g in range(p):
        y0 = (p - 1 - g) * 1.2
        c = gpu_colors[g]
        ax.text(0.05, y0 + 0.4, f"GPU {g}", fontsize=8, va="center")
        box(ax, 0.9, y0, 1.1, 0.8, "X\n(whole)", color="#FFFFFF")
        box(ax, 2.4, y0, 1.5, 0.8, f"A[:, cols {g}]\n{h}×{4 * h // p}", color=c, text_color="w")
        box(ax, 4.3, y0, 1.3, 0.8, f"Y slice {g}\n(no comm.)", color="#FFFFFF")
        box(ax, 6.0, y0, 1.5, 0.8, f"B[rows {g}, :]\n{4 * h // p}×{h}", color=c, text_color="w")
        box(ax, 7.9, y0, 0.9, 0.8, f"Z{g}\npartial", color="#FFFFFF")
        for x0, x1 in ((2.0, 2.4), (3.9, 4.3), (5.6, 6.0), (7.5, 7.9)):
            ax.annotate("", (x1, y0 + 0.4), (x0, y0 + 0.4),
                        arrowprops=dict(arrowstyle="->", lw=0.8))  # fmt: skip
    top = (p - 1) * 1.2 + 0.8
    box(ax, 9.0, 0, 0.8, top, "all-\nreduce\n(sum)\n→ Z", color=PALETTE["tpu"], text_color="w")
    ax.text(3.15, -0.5, "column-parallel: split the output features", ha="center", fontsize=8)
    ax.text(6.75, -0.5, "row-parallel: split the input features", ha="center", fontsize=8)
    ax.text(9.4, -0.5, "one collective", ha="center", fontsize=8)
    fig.tight_layout()
    return fig, {"z": z, "partials": partials, "y_slices": y_slices}
