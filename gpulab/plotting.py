"""One look for every figure in the course, and the plots the chapters share.

Measured values are drawn solid; predictions (from the spec registry and a cost model)
are hatched and say "prediction" in the legend, so the two can never be confused.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.patches
import numpy as np

from gpulab._checks import choice, finite_number, positive_number
from gpulab.specs import DeviceSpec, list_specs

__all__ = [
    "COLORS",
    "course_style",
    "use_course_style",
    "plot_spec_trend",
    "plot_measured_vs_predicted",
    "tidy_point_labels",
]

COLORS = {"cpu": "#4C72B0", "gpu": "#55A868", "tpu": "#C44E52", "prediction": "#8172B2"}

_STYLE = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.frameon": False,
    "font.size": 10,
}


def use_course_style() -> None:
    """Apply the course's matplotlib style for the rest of the session (PNG output)."""
    mpl.rcParams.update(_STYLE)
    try:  # inside Jupyter: PNG figures (nbval compares SVG text, never PNG)
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except ImportError:
        pass


@contextmanager
def course_style():
    """The course's matplotlib style inside a ``with`` block only."""
    with mpl.rc_context(_STYLE):
        yield


def _peak_for(spec: DeviceSpec, which: str) -> float | None:
    if which == "fp32":
        return spec.peak_flops.get("fp32")
    if which == "tensor":  # best 16-bit tensor figure: what deep-learning training uses
        return spec.peak_flops.get("bf16") or spec.peak_flops.get("fp16")
    if which == "bandwidth":
        return spec.memory_bandwidth
    raise ValueError(f"which={which!r} is not known; use 'fp32', 'tensor' or 'bandwidth'")


def plot_spec_trend(which: str = "fp32", specs: Sequence[DeviceSpec] | None = None, ax=None):
    """Scatter a registry figure against release year, CPUs and GPUs/TPUs apart, log scale.

    Parameters
    ----------
    which : {"fp32", "tensor", "bandwidth"}
        Peak FP32 FLOP/s, peak 16-bit tensor FLOP/s, or memory bandwidth.
    specs : sequence of DeviceSpec, optional
        Default: the whole registry. Devices without the figure are left out.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    choice("which", which, ("fp32", "tensor", "bandwidth"))
    if specs is None:
        specs = list_specs()
    elif isinstance(specs, (str, DeviceSpec)) or not isinstance(specs, Sequence):
        raise ValueError(f"specs={specs!r} must be a sequence of DeviceSpec, or None")
    elif not all(isinstance(s, DeviceSpec) for s in specs):
        raise ValueError("specs must hold only DeviceSpec entries (gl.get_spec finds them)")
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots()[1]
    scale, unit = (1e9, "GB/s") if which == "bandwidth" else (1e12, "TFLOP/s")
    for kind in ("cpu", "gpu", "tpu"):
        points = [(s, _peak_for(s, which)) for s in specs if s.kind == kind]
        points = [(s, v) for s, v in points if v]
        if not points:
            continue
        ax.scatter(
            [s.year for s, _ in points],
            [v / scale for _, v in points],
            color=COLORS[kind],
            label=kind.upper(),
            s=40,
            zorder=3,
        )
        for s, v in points:
            ax.annotate(
                s.name.split(" (")[0],
                (s.year, v / scale),
                fontsize=7,
                xytext=(4, 2),
                textcoords="offset points",
            )
    ax.set_yscale("log")
    titles = {
        "fp32": "Peak FP32",
        "tensor": "Peak 16-bit tensor (dense)",
        "bandwidth": "Peak memory bandwidth",
    }
    ax.set_ylabel(f"{titles[which]} ({unit})")
    ax.set_xlabel("Year")
    ax.legend(loc="upper left")
    return ax


def plot_measured_vs_predicted(
    labels: Sequence[str],
    values: Sequence[float],
    predicted: Sequence[bool],
    *,
    unit: str,
    ax=None,
    log: bool = True,
    legend: bool = True,
):
    """Horizontal bars: measurements solid, predictions hatched and labelled as such.

    Parameters
    ----------
    labels, values : sequences
        One bar each.
    predicted : sequence of bool
        True where the value is a prediction rather than a measurement.
    unit : str
        Axis label, e.g. ``"GFLOP/s"``.
    log : bool
        Logarithmic value axis (then every value must be above 0).
    legend : bool
        Draw the "measured" / "prediction" key below the axes.
    """
    for name, seq in (("labels", labels), ("values", values), ("predicted", predicted)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (Sequence, np.ndarray)):
            raise ValueError(f"{name}={seq!r} must be a sequence with one entry per bar")
    if not len(labels) == len(values) == len(predicted):
        raise ValueError("labels, values and predicted must have the same length")
    for i, value in enumerate(values):
        if log:
            positive_number(f"values[{i}]", value)
        elif finite_number(f"values[{i}]", value) < 0:
            raise ValueError(f"values[{i}]={value!r} must be 0 or more")
    for i, flag in enumerate(predicted):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"predicted[{i}]={flag!r} must be True or False")
    if not isinstance(unit, str):
        raise ValueError(f"unit={unit!r} must be a str such as 'GFLOP/s'")
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.2))[1]
    for i, (value, is_pred) in enumerate(zip(values, predicted, strict=True)):
        ax.barh(
            i,
            value,
            color=COLORS["prediction"] if is_pred else COLORS["cpu"],
            hatch="//" if is_pred else None,
            edgecolor="white",
            zorder=3,
        )
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(unit)
    if not legend:
        return ax
    handles = [
        mpl.patches.Patch(color=COLORS["cpu"], label="measured here"),
        mpl.patches.Patch(
            facecolor=COLORS["prediction"],
            hatch="//",
            edgecolor="white",
            label="prediction (datasheet + roofline, not measured)",
        ),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8)
    return ax


def tidy_point_labels(ax, fontsize: float = 8) -> None:
    """Make the point labels of a scatter plot readable.

    Merges the labels of (nearly) coinciding points ("A / B"), then moves each label to the
    first spot around its point that covers no other label or point. Call it after the
    figure's layout is final (after ``tight_layout``), since it works in pixels.
    """
    fontsize = positive_number("fontsize", fontsize)
    if not hasattr(ax, "texts") or not hasattr(ax, "figure"):
        raise ValueError(f"ax={ax!r} must be a matplotlib Axes")
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = sorted(ax.texts, key=lambda t: (-t.xy[1], t.xy[0]))
    points = [tuple(ax.transData.transform(t.xy)) for t in texts]  # in pixels
    radius = 5 * fig.dpi / 72  # about one marker
    kept = []  # (label, its point)
    for text, (x, y) in zip(texts, points, strict=True):
        twin = next((k for k, (kx, ky) in kept if abs(kx - x) + abs(ky - y) < radius), None)
        if twin is None:
            kept.append((text, (x, y)))
        else:
            twin.set_text(f"{twin.get_text()} / {text.get_text()}")
            text.remove()
    spots = [
        ((4, 2), "left", "bottom"),
        ((4, -2), "left", "top"),
        ((-4, 2), "right", "bottom"),
        ((-4, -2), "right", "top"),
    ]
    frame = ax.get_window_extent(renderer)
    placed = []
    for text, own in kept:
        text.set_fontsize(fontsize)
        for offset, ha, va in spots:
            text.xyann = offset
            text.set_horizontalalignment(ha)
            text.set_verticalalignment(va)
            box = text.get_window_extent(renderer)
            covers_point = any(
                box.x0 - radius < x < box.x1 + radius and box.y0 - radius < y < box.y1 + radius
                for x, y in points
                if abs(x - own[0]) + abs(y - own[1]) >= radius
            )
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1
            if inside and not covers_point and not any(box.overlaps(p) for p in placed):
                break
        placed.append(text.get_window_extent(renderer))
