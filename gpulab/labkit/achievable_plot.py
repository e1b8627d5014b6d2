"""Achievable against datasheet matrix-multiply throughput, across vendors, as one figure.

The rows come from :func:`gpulab.costmodels.published_gpu.published_gpu_measurements`
(the best matrix multiply others measured on each accelerator) and the peaks from the spec
registry; an accelerator whose registry row has no dense peak in the precision is left out
and named by :func:`achievable_matmul_rows`.
"""

from __future__ import annotations

from gpulab._checks import axes, choice
from gpulab.costmodels.published_gpu import published_gpu_measurements
from gpulab.hardware.specs import get_spec

__all__ = ["achievable_matmul_rows", "plot_achievable_matmul"]

_VENDOR_COLORS = {"NVIDIA": "#55A868", "AMD": "#C44E52", "Intel": "#4C72B0"}


def achievable_matmul_rows(precision: str = "bf16"):
    """``(plotted, left_out)``: rows with a registry peak as ``(row, spec, fraction)``, best
    fraction first, and the rows whose registry entry has no dense peak in ``precision``.

    Examples
    --------
    >>> from gpulab.labkit.achievable_plot import achievable_matmul_rows
    >>> plotted, left_out = achievable_matmul_rows("bf16")
    >>> plotted[0][1].name, round(plotted[0][2], 3)
    ('Gaudi 2', 0.969)
    >>> sorted(m.spec for m in left_out)
    ['B300', 'MI355X']
    """
    choice("precision", precision, ("bf16", "fp8"))
    plotted, left_out = [], []
    for m in published_gpu_measurements(family="matmul"):
        if m.precision != precision:
            continue
        spec = get_spec(m.spec)
        peak = spec.peak_flops.get(precision)
        if peak:
            plotted.append((m, spec, m.value * 1e12 / peak))
        else:
            left_out.append(m)
    plotted.sort(key=lambda item: -item[2])
    return plotted, left_out


def plot_achievable_matmul(precision: str = "bf16", ax=None):
    """Datasheet peak (outline) and best measured matrix multiply (filled), per accelerator.

    Parameters
    ----------
    precision : {"bf16", "fp8"}
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    plotted, _ = achievable_matmul_rows(precision)
    axes("ax", ax)
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(8, 0.45 * len(plotted) + 1.2))[1]
    for i, (m, spec, fraction) in enumerate(plotted):
        color = _VENDOR_COLORS.get(spec.vendor, "#8172B2")
        peak = spec.peak(precision) / 1e12
        ax.barh(i, peak, color="none", edgecolor=color, linewidth=1.2)
        ax.barh(i, m.value, color=color, alpha=0.85)
        ax.annotate(f"{fraction:.0%}", (peak, i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)  # fmt: skip
    ax.set_yticks(range(len(plotted)))
    ax.set_yticklabels([m.device for m, _, _ in plotted], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"Dense {precision.upper()} matrix multiply (TFLOP/s)")
    ax.set_xlim(0, max(spec.peak(precision) for _, spec, _ in plotted) / 1e12 * 1.12)
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor="none", edgecolor="grey", label="datasheet peak (registry)"),
        Patch(facecolor="grey", label="best measured (published)"),
    ]
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    return ax
