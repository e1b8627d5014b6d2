"""One look for every figure in the course, and the plots the chapters share.

Measured values are drawn solid; predictions (from the spec registry and a cost model)
are hatched and say "prediction" in the legend, so the two can never be confused.
:func:`plot_extrapolation` is the case studies' figure "from our measurement to the
full-scale prediction": measured here, predicted by the time-to-train model, and published,
on one logarithmic time axis with the assumptions written under it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.patches
import numpy as np

from gpulab._checks import (
    MAX_PLOTTED,
    at_most,
    axes,
    choice,
    finite_number,
    flag,
    positive_number,
    sentences,
    wrong_type,
)
from gpulab._checks import text as check_text
from gpulab.hardware.specs import DeviceSpec, list_specs
from gpulab.palette import COLORS
from gpulab.units import format_duration

__all__ = [
    "COLORS",
    "COURSE_STYLE",
    "course_style",
    "use_course_style",
    "plot_spec_trend",
    "plot_measured_vs_predicted",
    "plot_extrapolation",
    "tidy_point_labels",
]


#: The course's matplotlib settings (:func:`use_course_style` applies them).
COURSE_STYLE = {
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


#: Backends that only write files: in a notebook, ``plt.show()`` with one of them shows nothing.
_FILE_BACKENDS = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})


def _show_figures_in_the_notebook() -> None:
    """In a Jupyter kernel, show figures inline even where ``MPLBACKEND`` names a file backend.

    ipykernel chooses the inline backend only when ``MPLBACKEND`` is unset. Where it says
    ``Agg`` (as on many CI machines and containers), ``plt.show()`` shows nothing, and a lab's
    figures would be missing from its outputs. A backend that draws somewhere (``widget``,
    a desktop window) is left as it is, and so is a terminal's IPython or plain Python.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):  # not a Jupyter kernel
        return
    if mpl.get_backend().lower() in _FILE_BACKENDS:
        shell.run_line_magic("matplotlib", "inline")


def use_course_style() -> None:
    """Apply the course's matplotlib style for the rest of the session (PNG output).

    In a notebook, figures are shown inline as PNG (with a text entry, ``<Figure ...>``),
    whatever backend ``MPLBACKEND`` chose, so a lab's outputs are the same everywhere.
    """
    mpl.rcParams.update(COURSE_STYLE)
    _show_figures_in_the_notebook()
    try:  # inside Jupyter: PNG figures (nbval compares SVG text, never PNG)
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except ImportError:
        pass


@contextmanager
def course_style():
    """The course's matplotlib style inside a ``with`` block only."""
    with mpl.rc_context(COURSE_STYLE):
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
    elif (
        isinstance(specs, (str, DeviceSpec))
        or not isinstance(specs, Sequence)
        or not all(isinstance(s, DeviceSpec) for s in specs)
    ):
        raise wrong_type(
            "specs", specs, "a sequence of DeviceSpec (gl.get_spec finds them), or None"
        )
    elif not specs:
        raise ValueError("specs=[] is empty: give the devices to plot, or None for all")
    axes("ax", ax)
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
        One bar each; values at most ``MAX_PLOTTED`` (1e100).
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
            raise wrong_type(name, seq, "a sequence with one entry per bar")
    flag("log", log)
    flag("legend", legend)
    if not len(labels) == len(values) == len(predicted):
        raise ValueError(
            f"labels, values and predicted must have the same length, not {len(labels)}, "
            f"{len(values)} and {len(predicted)}"
        )
    for i, value in enumerate(values):
        if log:
            positive_number(f"values[{i}]", value)
        elif finite_number(f"values[{i}]", value) < 0:
            raise ValueError(f"values[{i}]={value!r} must be 0 or more")
        at_most(f"values[{i}]", value, MAX_PLOTTED, "a number a figure's axis holds")
    for i, is_pred in enumerate(predicted):
        if not isinstance(is_pred, (bool, np.bool_)):
            raise wrong_type(f"predicted[{i}]", is_pred, "True or False")
    if not isinstance(unit, str):
        raise wrong_type("unit", unit, "a str such as 'GFLOP/s'")
    axes("ax", ax)
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
    axes("ax", ax, optional=False)
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


_MINUTE, _HOUR, _DAY, _YEAR = 60.0, 3600.0, 86400.0, 365.25 * 86400.0
_PARAMETER = {"measured": "measured", "prediction": "predictions", "published": "published"}


def _labelled_values(name: str, value) -> None:
    """A TypeError unless ``value`` is a mapping with str labels (its values are checked
    where they are read, each by its label)."""
    if not isinstance(value, Mapping):
        raise wrong_type(name, value, "a mapping of label (str) to value")
    for label in value:
        if not isinstance(label, str):
            raise TypeError(
                f"{name}={dict(value)!r} must have str labels, not {type(label).__name__} "
                f"({label!r})"
            )


def plot_extrapolation(
    measured: Mapping[str, float],
    predictions: Mapping[str, float],
    assumptions: Sequence[str],
    *,
    published: Mapping[str, float] | None = None,
    xlabel: str = "time to train",
    durations: bool = True,
    title: str | None = None,
    ax=None,
):
    """The course's figure "from our measurement to the full-scale prediction".

    Horizontal bars on a log scale, one per entry, in the order given: what was measured
    here (solid), what the model predicts (hatched, "prediction" in the legend) and,
    optionally, published results (solid, another colour). Each bar is labelled with its
    value, and the assumptions behind the predictions are written under the axes.

    Parameters
    ----------
    measured, predictions, published : mapping of label to value
        Values in seconds when ``durations`` is true, else in the unit of ``xlabel``.
    assumptions : sequence of str
        One short sentence each; shown on the figure.
    xlabel : str
        Axis label.
    durations : bool
        Values are seconds: label bars "13.5 min", "2.1 days" and mark minutes, hours,
        days and years on the axis.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    flag("durations", durations)
    axes("ax", ax)
    check_text("xlabel", xlabel)
    check_text("title", title, optional=True)
    for parameter, value in (("measured", measured), ("predictions", predictions)):
        _labelled_values(parameter, value)
    if published is not None:
        _labelled_values("published", published)
    published = {} if published is None else dict(published)
    groups = [
        ("measured", dict(measured)),
        ("prediction", dict(predictions)),
        ("published", published),
    ]
    bars = [
        (label, positive_number(f"{_PARAMETER[kind]}[{label!r}]", v), kind)
        for kind, group in groups
        for label, v in group.items()
    ]
    if not bars:
        raise ValueError("nothing to plot: measured, predictions and published are all empty")
    sentences("assumptions", assumptions)

    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from gpulab.labkit.plotting import COLORS

    style = {
        "measured": dict(color=COLORS["cpu"], hatch=None, name="measured here"),
        "prediction": dict(
            color=COLORS["prediction"],
            hatch="//",
            name="PREDICTION (model + datasheet, not measured)",
        ),
        "published": dict(color="#8C8C8C", hatch=None, name="published result (cited)"),
    }
    if ax is None:
        ax = plt.subplots(figsize=(8, 0.42 * len(bars) + 2.4))[1]
    for i, (_, value, kind) in enumerate(bars):
        ax.barh(
            i,
            value,
            color=style[kind]["color"],
            hatch=style[kind]["hatch"],
            edgecolor="white",
            zorder=3,
        )
        text = format_duration(value) if durations else f"{value:.3g}"
        ax.annotate(
            text, (value, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8
        )
    ax.set_yticks(range(len(bars)), [label for label, _, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    low, high = min(v for _, v, _ in bars), max(v for _, v, _ in bars)
    ax.set_xlim(low / 3, high * 20)  # room for the value labels
    if durations:
        marks = [
            (1.0, "1 s"),
            (_MINUTE, "1 min"),
            (_HOUR, "1 h"),
            (_DAY, "1 day"),
            (30 * _DAY, "1 month"),
            (_YEAR, "1 year"),
            (10 * _YEAR, "10 years"),
        ]
        shown = [(v, t) for v, t in marks if low / 3 <= v <= high * 20]
        if len(shown) >= 2:
            ax.set_xticks([v for v, _ in shown], [t for _, t in shown])
            ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    kinds = [k for k, group in groups if group]
    handles = [
        mpl.patches.Patch(
            facecolor=style[k]["color"],
            hatch=style[k]["hatch"],
            edgecolor="white",
            label=style[k]["name"],
        )
        for k in kinds
    ]
    # Legend and assumptions sit at fixed distances (in points) under the axes' label.
    below = mpl.transforms.offset_copy(ax.transAxes, fig=ax.figure, y=-34, units="points")
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0, 0),
        bbox_transform=below,
        ncol=len(handles),
        fontsize=8,
    )
    if assumptions:
        text = "Assumptions behind the predictions:\n" + "\n".join(f"• {a}" for a in assumptions)
        ax.annotate(
            text,
            xy=(0, 0),
            xycoords="axes fraction",
            xytext=(0, -58),
            textcoords="offset points",
            va="top",
            ha="left",
            fontsize=8,
        )
    return ax
