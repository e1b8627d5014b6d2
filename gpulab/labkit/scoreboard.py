"""A scoreboard for speeding code up one fix at a time: predicted against measured.

Each fix is measured against the step before it (the last one kept), next to the speed-up
a cost model predicted for it. Fixes that do not help can be measured and reverted; fixes
that only apply on a GPU can be listed with their prediction alone, labelled as such.

See also the chapter *Capstone* and ``notebooks/capstone_lab``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab._checks import flag, positive_number, text, wrong_type
from gpulab.measure.bench import BenchResult

__all__ = ["Scoreboard", "ScoreboardRow"]


@dataclass(frozen=True)
class ScoreboardRow:
    """One fix on a :class:`Scoreboard`.

    Attributes
    ----------
    name : str
    predicted : float or None
        Predicted speed-up of this fix over the step before it.
    measured : BenchResult or None
        The timing with this fix; None for a fix not run here (a prediction only).
    speedup : float or None
        Measured speed-up over the last kept step.
    total : float or None
        Measured speed-up over the baseline.
    kept : bool
        Whether later fixes build on this one.
    note : str
    """

    name: str
    predicted: float | None
    measured: BenchResult | None
    speedup: float | None
    total: float | None
    kept: bool
    note: str = ""

    def __post_init__(self) -> None:
        text("name", self.name)
        _bench_result("measured", self.measured)
        for name in ("predicted", "speedup", "total"):
            if getattr(self, name) is not None:
                positive_number(name, getattr(self, name))
        flag("kept", self.kept)
        text("note", self.note, optional=True)


def _bench_result(name: str, value) -> None:
    if value is not None and not isinstance(value, BenchResult):
        raise wrong_type(name, value, "a BenchResult (gl.benchmark) or None")


class Scoreboard:
    """Predicted against measured speed-up, fix by fix, starting from a measured baseline.

    Examples
    --------
    >>> import gpulab as gl
    >>> from gpulab.labkit.scoreboard import Scoreboard
    >>> def timed(s):  # a measured result of s seconds per step
    ...     return gl.measure.bench.BenchResult((s,), 1, "")
    >>> board = Scoreboard(timed(0.10))
    >>> round(board.add("batch the samples", timed(0.04), predicted=2.0).speedup, 2)
    2.5
    >>> board.add("bf16 autocast", timed(0.05), predicted=1.1, keep=False).kept
    False
    >>> _ = board.add("pinned memory", predicted=1.05, note="GPU only")
    >>> round(board.total_speedup, 2), board.current_s
    (2.5, 0.04)
    """

    def __init__(self, baseline: BenchResult, label: str = "baseline"):
        if not isinstance(baseline, BenchResult):
            raise wrong_type("baseline", baseline, "a BenchResult (gl.benchmark)")
        text("label", label)
        self.baseline = baseline
        self.rows: list[ScoreboardRow] = [ScoreboardRow(label, None, baseline, None, 1.0, True, "")]

    @property
    def current_s(self) -> float:
        """Median seconds per step of the last kept, measured step."""
        kept = [r for r in self.rows if r.kept and r.measured is not None]
        return kept[-1].measured.median_s

    @property
    def total_speedup(self) -> float:
        """Baseline time over the current (last kept) time."""
        return self.baseline.median_s / self.current_s

    def add(
        self,
        name: str,
        measured: BenchResult | None = None,
        *,
        predicted: float | None = None,
        keep: bool = True,
        note: str = "",
    ) -> ScoreboardRow:
        """Record one fix, measured against the last kept step.

        Parameters
        ----------
        name : str
        measured : BenchResult, optional
            Timing with the fix; omit for a fix that can only be predicted here.
        predicted : float, optional
            The speed-up a model predicted (above 0).
        keep : bool
            Whether later fixes build on this one (ignored without a measurement).
        note : str
        """
        text("name", name)
        text("note", note, optional=True)
        _bench_result("measured", measured)
        if predicted is not None:
            predicted = positive_number("predicted", predicted)
        flag("keep", keep)
        if measured is None and predicted is None:
            raise ValueError(f"{name!r}: give a measurement, a prediction or both")
        speedup = total = None
        if measured is not None:
            speedup = self.current_s / measured.median_s
            total = self.baseline.median_s / measured.median_s
        row = ScoreboardRow(
            name, predicted, measured, speedup, total, keep and bool(measured), note
        )
        self.rows.append(row)
        return row

    def table(self) -> str:
        """A plain-text table: time per step (median, IQR), predicted and measured speed-up."""
        lines = [
            f"{'step':<34}{'ms/step':>9}{'IQR':>8}{'predicted':>11}{'measured':>10}"
            f"{'total':>8}  note",
        ]
        for r in self.rows:
            ms = f"{r.measured.median_s * 1e3:9.2f}" if r.measured else f"{'-':>9}"
            iqr = f"{r.measured.iqr_s * 1e3:8.2f}" if r.measured else f"{'-':>8}"
            pred = f"{r.predicted:10.2f}x" if r.predicted is not None else f"{'-':>11}"
            meas = f"{r.speedup:9.2f}x" if r.speedup is not None else f"{'-':>10}"
            tot = f"{r.total:7.2f}x" if r.total is not None else f"{'-':>8}"
            note = r.note if r.kept or r.measured is None else f"reverted. {r.note}".strip()
            lines.append(f"{r.name[:33]:<34}{ms}{iqr}{pred}{meas}{tot}  {note}")
        return "\n".join(lines)

    def plot(self, ax=None):
        """Predicted (hatched) and measured (solid) speed-up of each fix, on a log axis."""
        import numpy as np

        from gpulab.labkit.plotting import COLORS

        if ax is None:
            import matplotlib.pyplot as plt

            ax = plt.subplots(figsize=(8, 0.5 * len(self.rows) + 1.5))[1]
        rows = self.rows[1:]
        y = np.arange(len(rows))
        for i, r in enumerate(rows):
            if r.predicted is not None:
                ax.barh(
                    i - 0.2,
                    r.predicted,
                    height=0.4,
                    color=COLORS["prediction"],
                    hatch="//",
                    edgecolor="white",
                    zorder=3,
                )
            if r.speedup is not None:
                ax.barh(
                    i + 0.2,
                    r.speedup,
                    height=0.4,
                    zorder=3,
                    color=COLORS["cpu"] if r.kept else "#BBBBBB",
                )
        ax.axvline(1, color="grey", lw=1)
        ax.set_yticks(y, [r.name for r in rows])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("speed-up of this fix over the step before it")
        import matplotlib as mpl

        handles = [
            mpl.patches.Patch(
                facecolor=COLORS["prediction"],
                hatch="//",
                edgecolor="white",
                label="predicted by a model",
            ),
            mpl.patches.Patch(color=COLORS["cpu"], label="measured here, kept"),
            mpl.patches.Patch(color="#BBBBBB", label="measured here, reverted"),
        ]
        ax.legend(
            handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, fontsize=8
        )
        return ax
