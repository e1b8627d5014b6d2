"""Shared drawing helpers: an opaque white figure in the course style, labelled boxes."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.patches
import matplotlib.pyplot as plt

from gpulab.labkit.plotting import COLORS, COURSE_STYLE

#: Colours of the diagrams: the course's palette plus a neutral grey for idle or waiting time.
PALETTE = {
    **COLORS,
    "memory": "#DD8452",
    "control": "#937860",
    "idle": "#BFBFBF",
    "text": "#222222",
}


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=(7.0, 4.0), **kwargs):
    """A figure in the course style with an opaque white background (readable on any theme)."""
    with mpl.rc_context({**COURSE_STYLE, "axes.grid": False}):
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **kwargs)
    fig.patch.set_facecolor("white")
    fig.patch.set_alpha(1.0)
    return fig, axes


def blank(ax) -> None:
    """An axes used as a drawing canvas: no ticks, no frame, no grid."""
    ax.set_axis_off()


def box(ax, x, y, w, h, label="", *, color="#FFFFFF", text_color=None, fontsize=8, **kwargs):
    """A filled rectangle with a centred label; returns the patch."""
    patch = mpl.patches.Rectangle(
        (x, y), w, h, facecolor=color, edgecolor=kwargs.pop("edgecolor", "#333333"),
        linewidth=kwargs.pop("linewidth", 0.8), **kwargs
    )  # fmt: skip
    ax.add_patch(patch)
    if label:
        ax.text(
            x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=fontsize,
            color=text_color or PALETTE["text"], clip_on=False,
        )  # fmt: skip
    return patch
