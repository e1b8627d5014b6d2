"""Timelines of pipeline steps as they ran (or as simulated): GPipe, 1F1B, interleaved, ZB-H1.

:func:`draw_schedule_runs` draws, one panel per schedule, every forward (``F``), backward
(``B``, for ZB-H1 the input gradient only) and weight-gradient pass (``W``) of every rank on
one time axis, from the operations a lab recorded (``rank, kind, chunk, micro-batch, start,
end``) or from :func:`gpulab.costmodels.pipeline_schedules.simulate_orders`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulab._checks import text, wrong_type
from gpulab.diagrams._draw import PALETTE, new_figure

__all__ = ["draw_schedule_runs"]

_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B", "zb-h1": "ZB-H1"}
_KIND_COLORS = {"F": PALETTE["cpu"], "B": PALETTE["gpu"], "W": PALETTE["memory"]}


def _ops(name: str, value) -> list[tuple]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise wrong_type(name, value, "a non-empty list of (rank, kind, chunk, mb, start, end)")
    out = []
    for i, op in enumerate(value):
        if not isinstance(op, Sequence) or len(op) != 6 or op[1] not in _KIND_COLORS:
            raise ValueError(
                f"{name}[{i}]={op!r} must be (rank, 'F'|'B'|'W', chunk, mb, start, end)"
            )
        out.append((int(op[0]), op[1], int(op[2]), int(op[3]), float(op[4]), float(op[5])))
    return out


def draw_schedule_runs(runs: dict, *, title: str = ""):
    """One Gantt panel per schedule; each rank a row, each pass a box labelled ``F1``, ``B1``...

    Parameters
    ----------
    runs : dict
        Panel label (a schedule name, ``"gpipe"``, ``"1f1b"``, ``"interleaved"`` or
        ``"zb-h1"``, or any text) to a list of operations
        ``(rank, kind, chunk, microbatch, start_s, end_s)``. Boxes too narrow for a label
        are drawn without one.
    title : str
        Figure title.

    Returns
    -------
    fig : matplotlib Figure
    bubbles : dict
        Per panel, the idle share of the ranks' time as drawn: ``1 - busy / (ranks · step)``.
    """
    if not isinstance(runs, dict) or not runs:
        raise wrong_type("runs", runs, "a non-empty dict of schedule name to operations")
    text("title", title)
    panels = {str(k): _ops(f"runs[{k!r}]", v) for k, v in runs.items()}
    longest = max(op[5] for ops in panels.values() for op in ops)
    ranks = max(op[0] for ops in panels.values() for op in ops) + 1
    fig, axes = new_figure(
        len(panels), 1, figsize=(8.0, (0.45 * ranks + 0.9) * len(panels)), squeeze=False
    )
    bubbles = {}
    for ax, (name, ops) in zip(axes[:, 0], panels.items(), strict=True):
        step = max(op[5] for op in ops)
        busy = sum(op[5] - op[4] for op in ops)
        bubbles[name] = 1 - busy / (ranks * step) if step > 0 else 0.0
        ax.barh(range(ranks), [step] * ranks, height=0.7, color=PALETTE["idle"], alpha=0.6)
        chunks = max(op[2] for op in ops) + 1
        for rank, kind, chunk, mb, start, end in ops:
            ax.barh(
                rank,
                end - start,
                left=start,
                height=0.7,
                color=_KIND_COLORS[kind],
                edgecolor="white",
                linewidth=0.6,
                alpha=1.0 if chunk == 0 else 0.7,
            )
            if end - start > longest / 45:  # a label only where it fits
                label = f"{kind}{mb}" if chunks == 1 else f"{kind}{mb}.{chunk}"
                ax.text((start + end) / 2, rank, label, ha="center", va="center", fontsize=5,
                        color="white")  # fmt: skip
        ax.set_yticks(range(ranks), [f"rank {r}" for r in range(ranks)])
        ax.invert_yaxis()
        ax.set_xlim(0, longest * 1.01)
        ax.set_title(
            f"{_NAMES.get(name, name)}: step {step * 1e3:.0f} ms, idle {bubbles[name]:.0%}",
            fontsize=9,
            loc="left",
        )
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time in the step (s)")
    import matplotlib.patches as mpatches

    handles = [
        mpatches.Patch(color=_KIND_COLORS[k], label=label)
        for k, label in (
            ("F", "forward"),
            ("B", "backward (input gradient)"),
            ("W", "weight gradient"),
        )
    ]
    handles.append(mpatches.Patch(color=PALETTE["idle"], label="idle"))
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig, bubbles
