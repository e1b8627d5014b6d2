"""The course's figure "from our measurement to the full-scale prediction".

:func:`plot_extrapolation` draws what was measured here (solid bars), what the time-to-train
model predicts (hatched, labelled PREDICTION) and published results (their own colour), on
one logarithmic time axis, with the assumptions behind the predictions written under it. The
predictions themselves come from :mod:`gpulab.training_time`.

See also the case-study chapters (``book/case_resnet.md``, ``book/case_bert.md``,
``book/case_alphago.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpulab import _checks
from gpulab._checks import choice, positive_number, sentences
from gpulab.units import format_duration

__all__ = ["plot_extrapolation"]

_MINUTE, _HOUR, _DAY, _YEAR = 60.0, 3600.0, 86400.0, 365.25 * 86400.0
_PARAMETER = {"measured": "measured", "prediction": "predictions", "published": "published"}


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
    choice("durations", durations, (True, False))
    _checks.text("xlabel", xlabel)
    _checks.text("title", title, optional=True)
    for parameter, value in (("measured", measured), ("predictions", predictions)):
        if not isinstance(value, Mapping):
            raise ValueError(f"{parameter}={value!r} must be a mapping of label to value")
    if published is not None and not isinstance(published, Mapping):
        raise ValueError(f"published={published!r} must be a mapping of label to value")
    published = dict(published or {})
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

    from gpulab.plotting import COLORS

    style = {
        "measured": dict(color=COLORS["cpu"], hatch=None, name="measured here"),
        "prediction": dict(
            color=COLORS["prediction"],
            hatch="//",
            name="PREDICTION (model + datasheet, not measured)",
        ),
        "published": dict(color="#8C8C8C", hatch=None, name="published result (cited)"),
    }
    ax = ax or plt.subplots(figsize=(8, 0.42 * len(bars) + 2.4))[1]
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
