"""Timelines: pipeline-parallel schedules (GPipe, 1F1B) and a data loader feeding training.

:func:`simulate_pipeline` takes how long each stage's forward and backward of one
micro-batch last and returns when every forward and backward starts and ends, and the
bubble: the share of ``stages × step time`` the stages sit idle. :func:`draw_pipeline_gantt`
draws two schedules on the same time axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpulab._checks import (
    choice,
    fraction,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
)
from gpulab.diagrams._draw import PALETTE, new_figure

__all__ = [
    "PipelineOp",
    "PipelineSchedule",
    "SCHEDULES",
    "simulate_pipeline",
    "stage_times_from_measurement",
    "draw_pipeline_gantt",
    "draw_input_pipeline",
]

#: Pipeline schedules :func:`simulate_pipeline` knows.
SCHEDULES = ("gpipe", "1f1b")


@dataclass(frozen=True)
class PipelineOp:
    """One forward (``kind="F"``) or backward (``"B"``) of one micro-batch on one stage."""

    stage: int
    microbatch: int
    kind: str
    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        non_negative_int("stage", self.stage)
        non_negative_int("microbatch", self.microbatch)
        choice("kind", self.kind, ("F", "B"))
        start = non_negative_number("start_s", self.start_s)
        if non_negative_number("end_s", self.end_s) < start:
            raise ValueError(f"end_s={self.end_s!r} must not be before start_s={start!r}")


@dataclass(frozen=True)
class PipelineSchedule:
    """A simulated pipeline step.

    Attributes
    ----------
    schedule : str
        ``"gpipe"`` or ``"1f1b"``.
    ops : tuple of PipelineOp
        Every forward and backward with its start and end, in seconds from the step's start.
    step_s : float
        When the last backward ends.
    bubble : float
        ``1 - busy / (n_stages · step_s)``: the idle share of the stages' time.
    peak_in_flight : tuple of int
        Per stage, the most micro-batches whose activations it holds at once (forward done,
        backward not yet): ``m`` for GPipe, at most ``n_stages - stage`` for 1F1B.
    """

    schedule: str
    n_stages: int
    n_microbatches: int
    ops: tuple
    step_s: float
    bubble: float
    peak_in_flight: tuple

    def __post_init__(self) -> None:
        choice("schedule", self.schedule, SCHEDULES)
        positive_int("n_stages", self.n_stages)
        positive_int("n_microbatches", self.n_microbatches)
        if not isinstance(self.ops, tuple) or not all(
            isinstance(op, PipelineOp) for op in self.ops
        ):
            raise ValueError(f"ops={self.ops!r:.60} must be a tuple of PipelineOp")
        non_negative_number("step_s", self.step_s)
        fraction("bubble", self.bubble, allow_one=False)
        if not isinstance(self.peak_in_flight, tuple):
            raise ValueError(f"peak_in_flight={self.peak_in_flight!r} must be a tuple of ints")
        for i, v in enumerate(self.peak_in_flight):
            non_negative_int(f"peak_in_flight[{i}]", v)


def _per_stage(name: str, values, n_stages: int | None = None) -> list[float]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{name}={values!r} must be a sequence of seconds, one per stage")
    out = [positive_number(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name}={values!r} must hold one time per stage (at least one)")
    if n_stages is not None and len(out) != n_stages:
        raise ValueError(f"{name} has {len(out)} entries; forward_s has {n_stages}: one per stage")
    return out


def _order(schedule: str, stage: int, p: int, m: int) -> list[tuple[str, int]]:
    if schedule == "gpipe":  # all forwards, then all backwards
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(p - stage - 1, m)  # 1F1B: fill the pipe, then one forward, one backward
    order = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [("F", warmup + i), ("B", i)]
    return order + [("B", i) for i in range(m - warmup, m)]


def simulate_pipeline(
    forward_s, backward_s, n_microbatches: int, *, schedule: str = "gpipe", comm_s: float = 0.0
) -> PipelineSchedule:
    """When each stage runs each micro-batch's forward and backward, and the bubble.

    A stage runs its operations in the schedule's order, each as soon as its input is there:
    a forward needs the previous stage's forward of that micro-batch (plus ``comm_s`` for the
    transfer), a backward the next stage's backward (plus ``comm_s``), or on the last stage
    its own forward.

    Parameters
    ----------
    forward_s, backward_s : sequence of float
        Per stage, seconds for one micro-batch's forward and backward.
    n_microbatches : int
        Micro-batches per step, ``m``.
    schedule : {"gpipe", "1f1b"}
        GPipe: all forwards, then all backwards. 1F1B: after ``p - 1 - stage`` warm-up
        forwards, alternate one forward and one backward.
    comm_s : float
        Seconds to send one micro-batch's activations (or their gradients) between stages.

    Returns
    -------
    PipelineSchedule

    Examples
    --------
    With ``p`` equal stages and no transfer time both schedules idle ``(p-1)/(m+p-1)``:

    >>> import gpulab as gl
    >>> s = gl.simulate_pipeline([1.0] * 4, [2.0] * 4, 8, schedule="1f1b")
    >>> round(s.bubble, 4), round(gl.pipeline_bubble(4, 8), 4), s.peak_in_flight
    (0.2727, 0.2727, (4, 3, 2, 1))
    """
    fwd = _per_stage("forward_s", forward_s)
    p = len(fwd)
    bwd = _per_stage("backward_s", backward_s, p)
    m = positive_int("n_microbatches", n_microbatches)
    choice("schedule", schedule, SCHEDULES)
    comm = non_negative_number("comm_s", comm_s)
    orders = [_order(schedule, s, p, m) for s in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    nxt = [0] * p
    ops = []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while nxt[s] < len(orders[s]):
                kind, i = orders[s][nxt[s]]
                if kind == "F":
                    dep = 0.0 if s == 0 else done.get(("F", s - 1, i))
                    ready = dep if s == 0 or dep is None else dep + comm
                else:
                    dep = done.get(("F", s, i)) if s == p - 1 else done.get(("B", s + 1, i))
                    ready = None if dep is None else dep + (0.0 if s == p - 1 else comm)
                if ready is None:
                    break
                start = max(free[s], ready)
                end = start + (fwd[s] if kind == "F" else bwd[s])
                done[(kind, s, i)] = end
                free[s] = end
                ops.append(PipelineOp(s, i, kind, start, end))
                nxt[s] += 1
                progressed = True
        if not progressed:  # cannot happen for the two schedules; guards a future one
            raise RuntimeError(f"schedule {schedule!r} deadlocked")
    step = max(op.end_s for op in ops)
    busy = m * (sum(fwd) + sum(bwd))
    peaks = []
    for s in range(p):
        held = best = 0
        for kind, _ in orders[s]:
            held += 1 if kind == "F" else -1
            best = max(best, held)
        peaks.append(best)
    ops.sort(key=lambda o: (o.stage, o.start_s))
    return PipelineSchedule(schedule, p, m, tuple(ops), step, 1 - busy / (p * step), tuple(peaks))


def stage_times_from_measurement(
    step_s: float,
    bubble: float,
    n_microbatches: int,
    *,
    n_stages: int = 2,
    backward_ratio: float = 2.0,
) -> dict[str, object]:
    """Per-micro-batch stage times that reproduce a measured pipeline step and bubble.

    The distributed lab records, per ``m``, the step time and each stage's idle share
    (averaged over the stages). Assuming equal stages, each stage computes
    ``(1 - bubble) · step_s`` per step, so ``(1 - bubble) · step_s / m`` per micro-batch,
    split into forward and backward as ``1 : backward_ratio``. What the equal-stage GPipe
    schedule leaves unexplained is put on the transfers between stages: ``comm_s`` per
    transfer (``2 (p - 1)`` on the critical path), never below 0.

    Returns
    -------
    dict
        ``forward_s`` and ``backward_s`` (lists, one per stage), ``comm_s``, and
        ``exact``: False when the measured bubble is below the equal-stage model's (then no
        transfer time reproduces it, and ``comm_s`` is 0).

    Examples
    --------
    >>> import gpulab as gl
    >>> t = gl.stage_times_from_measurement(0.1, 0.4, 4)
    >>> [round(x * 1e3, 2) for x in (t["forward_s"][0], t["backward_s"][0], t["comm_s"])]
    [5.0, 10.0, 12.5]
    """
    step = positive_number("step_s", step_s)
    idle = fraction("bubble", bubble, allow_one=False)
    m = positive_int("n_microbatches", n_microbatches)
    p = positive_int("n_stages", n_stages)
    ratio = positive_number("backward_ratio", backward_ratio)
    per_micro = (1 - idle) * step / m
    fwd = per_micro / (1 + ratio)
    slack = step - (m + p - 1) * per_micro
    comm = slack / (2 * (p - 1)) if p > 1 else 0.0
    return {
        "forward_s": [fwd] * p,
        "backward_s": [per_micro - fwd] * p,
        "comm_s": max(comm, 0.0),
        "exact": comm >= 0 or p == 1,
    }


def _check_schedule(name: str, value) -> PipelineSchedule:
    if not isinstance(value, PipelineSchedule):
        raise ValueError(f"{name}={value!r:.60} must be a PipelineSchedule (simulate_pipeline)")
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
    if isinstance(schedules, (str, bytes)) or not isinstance(schedules, Sequence) or not schedules:
        raise ValueError(f"schedules={schedules!r:.60} must be a non-empty list of schedules")
    scheds = [_check_schedule(f"schedules[{i}]", s) for i, s in enumerate(schedules)]
    if measured_bubble is not None:
        measured_bubble = fraction("measured_bubble", measured_bubble)
    if not isinstance(title, str):
        raise ValueError(f"title={title!r} must be a str")
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
        Seconds one loader takes to produce one batch.
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
