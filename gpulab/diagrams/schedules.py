"""Timelines drawn: pipeline-parallel schedules (GPipe, 1F1B) and a data loader feeding training.

:func:`draw_pipeline_gantt` draws schedules simulated by
:func:`gpulab.costmodels.parallelism.simulate_pipeline` on one time axis;
:func:`draw_input_pipeline` draws a loader and the training steps it feeds.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulab._checks import (
    MAX_PLOTTED,
    at_most,
    fraction,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.costmodels.parallelism import PipelineSchedule
from gpulab.diagrams._draw import PALETTE, new_figure

__all__ = ["draw_pipeline_gantt", "draw_input_pipeline"]


def _check_schedule(name: str, value) -> PipelineSchedule:
    if not isinstance(value, PipelineSchedule):
        raise TypeError(
            f"{name}={value!r:.60} must be a PipelineSchedule (simulate_pipeline), "
            f"not {type(value).__name__}"
        )
    return value


def draw_pipeline_gantt(schedules, *, measured_bubble: float | None = None, title: str = ""):
    """Gantt charts of simulated pipeline schedules, one panel each, on one time axis.

    Parameters
    ----------
    schedules : sequence of PipelineSchedule
        From :func:`simulate_pipeline`, e.g. GPipe and 1F1B for the same stage times.
    measured_bubble : float, optional
        A measured idle share to print beside each panel's simulated one.
    title : str
        Figure title.

    Returns
    -------
    fig : matplotlib Figure
    bubbles : list of float
        Each panel's bubble, as drawn (the idle grey).

    See also
    --------
    simulate_pipeline. The chapter *Scaling out* shows this figure.
    """
    if isinstance(schedules, PipelineSchedule):
        schedules = [schedules]
    if isinstance(schedules, (str, bytes)) or not isinstance(schedules, Sequence):
        raise wrong_type("schedules", schedules, "a non-empty list of schedules")
    if not schedules:
        raise ValueError(f"schedules={schedules!r:.60} must be a non-empty list of schedules")
    scheds = [_check_schedule(f"schedules[{i}]", s) for i, s in enumerate(schedules)]
    if measured_bubble is not None:
        measured_bubble = fraction("measured_bubble", measured_bubble)
    text("title", title)
    longest = max(s.step_s for s in scheds)
    height = sum(0.45 * s.n_stages + 0.9 for s in scheds)
    fig, axes = new_figure(len(scheds), 1, figsize=(8.0, height), squeeze=False)
    for ax, s in zip(axes[:, 0], scheds, strict=True):
        ax.barh(range(s.n_stages), [s.step_s] * s.n_stages, left=0, height=0.7,
                color=PALETTE["idle"], alpha=0.6)  # fmt: skip
        for op in s.ops:
            forward = op.kind == "F"
            ax.barh(op.stage, op.end_s - op.start_s, left=op.start_s, height=0.7,
                    color=PALETTE["cpu"] if forward else PALETTE["gpu"], edgecolor="white",
                    linewidth=0.6)  # fmt: skip
            ax.text((op.start_s + op.end_s) / 2, op.stage, f"{op.kind}{op.microbatch}",
                    ha="center", va="center", fontsize=6, color="white")  # fmt: skip
        ax.set_yticks(range(s.n_stages), [f"stage {i}" for i in range(s.n_stages)])
        ax.invert_yaxis()
        ax.set_xlim(0, longest * 1.01)
        name = {"gpipe": "GPipe", "1f1b": "1F1B"}[s.schedule]
        label = f"{name}, m = {s.n_microbatches}: bubble {s.bubble:.0%} (simulated)"
        if measured_bubble is not None:
            label += f", {measured_bubble:.0%} measured"
        label += f"; activations held per stage at most {max(s.peak_in_flight)}"
        ax.set_title(label, fontsize=9, loc="left")
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time in the step (s)")
    import matplotlib.patches as mpatches

    fig.legend(
        handles=[mpatches.Patch(color=PALETTE["cpu"], label="forward"),
                 mpatches.Patch(color=PALETTE["gpu"], label="backward"),
                 mpatches.Patch(color=PALETTE["idle"], alpha=0.6, label="idle (bubble)")],
        loc="lower center", ncol=3, fontsize=8, frameon=False,
    )  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig, [s.bubble for s in scheds]


def draw_input_pipeline(
    load_s: float,
    compute_s: float,
    starved_step_s: float,
    fixed_step_s: float,
    *,
    n_workers: int = 4,
    n_batches: int = 6,
):
    """A data loader feeding training, starved (one loader) and fixed (parallel workers).

    Parameters
    ----------
    load_s : float
        Seconds one loader takes to produce one batch. Each time is at most ``MAX_PLOTTED``
        (1e100 s), which a figure's axis holds.
    compute_s : float
        Seconds one training step takes on a batch already in memory.
    starved_step_s, fixed_step_s : float
        Seconds per step measured with one loader in the loop, and with ``n_workers`` workers
        prefetching; each at least ``compute_s``.
    n_workers : int
        Loader workers in the fixed case.
    n_batches : int
        Steps drawn.

    Returns
    -------
    fig : matplotlib Figure
    timelines : dict
        ``{"starved": {...}, "fixed": {...}}``: per lane (name), the (start, end, what)
        intervals drawn (``what``: ``"load"``, ``"load k"``, ``"step"`` or ``"other"``, the
        rest of a measured step); compute intervals are ``compute_s`` long and start
        ``*_step_s`` apart.
    """
    load = positive_number("load_s", load_s)
    compute = positive_number("compute_s", compute_s)
    starved = positive_number("starved_step_s", starved_step_s)
    fixed = positive_number("fixed_step_s", fixed_step_s)
    workers = positive_int("n_workers", n_workers)
    n = positive_int("n_batches", n_batches)
    for name, seconds in (("load_s", load), ("compute_s", compute), ("starved_step_s", starved),
                          ("fixed_step_s", fixed)):  # fmt: skip
        at_most(name, seconds, MAX_PLOTTED, "a number a figure's axis holds", unit="s")
    for name, step in (("starved_step_s", starved), ("fixed_step_s", fixed)):
        if step < compute:
            raise ValueError(
                f"{name}={step!r} is shorter than compute_s={compute!r}: a step cannot take "
                "less than its computation"
            )
    if workers > 16 or n > 32:
        raise ValueError(f"n_workers={workers} and n_batches={n} must be at most 16 and 32")
    timelines: dict[str, dict[str, list]] = {"starved": {}, "fixed": {}}
    # Starved: the loop loads a batch (load_s), then trains on it (compute_s); whatever else
    # the measured step holds (start-up, collation, sharing the CPU) is drawn as "other".
    lanes = timelines["starved"]
    loop = []
    for k in range(n):
        t0, t1 = k * starved, (k + 1) * starved - compute
        loop.append((t0, min(t0 + load, t1), "load"))
        if t0 + load < t1:
            loop.append((t0 + load, t1, "other"))
    lanes["loading in the loop"] = loop
    lanes["compute"] = [((k + 1) * starved - compute, (k + 1) * starved, "step")
                        for k in range(n)]  # fmt: skip
    # Fixed: worker w loads batches w, w + n_workers, ... back to back, at most n_workers
    # batches ahead of the training step; compute starts batch k every fixed_step_s.
    lanes = timelines["fixed"]
    first = load
    for w in range(workers):
        spans, free = [], 0.0
        for k in range(w, n, workers):
            start = max(free, first + (k - workers) * fixed)
            spans.append((start, start + load, f"load {k}"))
            free = start + load
        lanes[f"worker {w}"] = spans
    lanes["compute"] = [(first + k * fixed, first + k * fixed + compute, "step") for k in range(n)]
    end = max(n * starved, first + n * fixed)
    fig, axes = new_figure(2, 1, figsize=(8.0, 1.2 + 0.4 * (workers + 3)), sharex=True,
                           gridspec_kw={"height_ratios": [2, workers + 1]})  # fmt: skip
    for ax, (case, lanes), step in zip(axes, timelines.items(), (starved, fixed), strict=True):
        names = list(lanes)
        for row, lane in enumerate(names):
            for start, stop, what in lanes[lane]:
                color = {"step": PALETTE["gpu"], "other": PALETTE["idle"]}.get(
                    what, PALETTE["memory"]
                )
                ax.barh(row, stop - start, left=start, height=0.6, color=color,
                        edgecolor="white", linewidth=0.5)  # fmt: skip
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        busy = compute / step
        what = "one loader" if case == "starved" else f"{workers} workers prefetching"
        ax.set_title(f"{case}: {what}; step {step * 1e3:.0f} ms, compute busy {busy:.0%}",
                     fontsize=9, loc="left")  # fmt: skip
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlim(0, end)
    axes[-1].set_xlabel("time (s)")
    import matplotlib.patches as mpatches

    fig.legend(
        handles=[mpatches.Patch(color=PALETTE["memory"], label="loading a batch"),
                 mpatches.Patch(color=PALETTE["gpu"], label="training step"),
                 mpatches.Patch(color=PALETTE["idle"], label="rest of the measured step")],
        loc="lower center", ncol=3, fontsize=8, frameon=False,
    )  # fmt: skip
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig, timelines
