"""A scoreboard for speeding code up one fix at a time: predicted against measured.

Each fix is measured against the step before it (the last one kept), next to the speed-up
a cost model predicted for it. Fixes that do not help can be measured and reverted; fixes
that only apply on a GPU can be listed with their prediction alone, labelled as such.

See also the chapter *Capstone* and ``notebooks/capstone_lab``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab._checks import axes, flag, fraction, non_negative_int, positive_number, text, wrong_type
from gpulab.measure.bench import BenchResult

__all__ = ["NoiseTest", "Scoreboard", "ScoreboardRow", "faster_beyond_noise"]

#: Fewest timed blocks per side for :func:`faster_beyond_noise` to judge at all: with three
#: each, even a complete separation has a one-sided p-value of 1/20.
MIN_RUNS = 4


@dataclass(frozen=True)
class NoiseTest:
    """Whether a change made a step faster by more than its run-to-run noise.

    Attributes
    ----------
    faster : bool
        True when the one-sided test rejects "no faster" at level ``alpha``.
    p_value : float
        One-sided Mann-Whitney U p-value (normal approximation with tie correction) for
        "the new timings are no smaller than the old ones"; 1.0 when there are too few runs.
    alpha : float
        The level the decision used.
    n_before, n_after : int
        Timed blocks on each side.

    Raises
    ------
    ValueError
        When ``faster`` does not agree with the test: it is true exactly when both sides
        were judged and ``p_value`` is below ``alpha``.
    """

    faster: bool
    p_value: float
    alpha: float
    n_before: int
    n_after: int

    def __post_init__(self) -> None:
        flag("faster", self.faster)
        fraction("p_value", self.p_value)
        fraction("alpha", self.alpha, allow_zero=False, allow_one=False)
        non_negative_int("n_before", self.n_before)
        non_negative_int("n_after", self.n_after)
        if self.faster != (self.judged and self.p_value < self.alpha):
            raise ValueError(
                f"faster={self.faster!r} does not agree with p_value={self.p_value!r}, "
                f"alpha={self.alpha!r} and {self.n_before} and {self.n_after} runs "
                f"({MIN_RUNS} each are needed to judge)"
            )

    @property
    def judged(self) -> bool:
        """Whether both sides had enough timed runs (:data:`MIN_RUNS`) for the test to judge."""
        return min(self.n_before, self.n_after) >= MIN_RUNS

    def __str__(self) -> str:
        runs = f"{self.n_before} and {self.n_after} runs"
        if not self.judged:
            return f"too few runs to tell from the noise ({runs}; {MIN_RUNS} each needed)"
        verdict = "faster beyond the noise" if self.faster else "not faster beyond the noise"
        sign = "<" if self.faster else ">="
        return f"{verdict} (Mann-Whitney U, p = {self.p_value:.3f} {sign} {self.alpha}, {runs})"


def faster_beyond_noise(before: BenchResult, after: BenchResult, *, alpha: float = 0.05):
    """Test whether ``after``'s timings are smaller than ``before``'s beyond their spread.

    A keep-or-revert decision compares two sets of timed blocks, not two medians: on a
    shared machine a median can move by its interquartile range from one run to the next.
    The test is a one-sided Mann-Whitney U test (rank sum) on the blocks' times, which
    assumes nothing about their distribution; its p-value is the chance of seeing ``after``
    rank this low if the change made no difference.

    Parameters
    ----------
    before, after : BenchResult
        Timings of the step without and with the change (``gl.benchmark``).
    alpha : float
        Level of the test, between 0 and 1 (default 0.05).

    Returns
    -------
    NoiseTest

    Examples
    --------
    >>> import gpulab as gl
    >>> def timed(*s):
    ...     return gl.measure.bench.BenchResult(s, 1, "")
    >>> faster_beyond_noise(timed(10, 11, 12, 13, 14), timed(5, 6, 7, 8)).faster
    True
    >>> print(faster_beyond_noise(timed(10, 11, 12, 13), timed(9, 12, 10, 13)))
    not faster beyond the noise (Mann-Whitney U, p = 0.384 >= 0.05, 4 and 4 runs)
    """
    for name, value in (("before", before), ("after", after)):
        if not isinstance(value, BenchResult):
            raise wrong_type(name, value, "a BenchResult (gl.benchmark)")
    positive_number("alpha", alpha)
    if alpha >= 1:
        raise ValueError(f"alpha={alpha!r} must be below 1 (a level such as 0.05)")
    old, new = list(before.times_s), list(after.times_s)
    if min(len(old), len(new)) < MIN_RUNS:
        return NoiseTest(False, 1.0, alpha, len(old), len(new))
    # U counts the pairs in which the new time is the smaller (ties count a half).
    u = sum((b < a) + 0.5 * (b == a) for a in old for b in new)
    n1, n2 = len(old), len(new)
    n = n1 + n2
    counts: dict[float, int] = {}
    for t in old + new:
        counts[t] = counts.get(t, 0) + 1
    ties = sum(c**3 - c for c in counts.values())
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return NoiseTest(False, 1.0, alpha, n1, n2)
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)  # with a continuity correction
    p = 0.5 * math.erfc(z / math.sqrt(2))
    return NoiseTest(p < alpha, p, alpha, n1, n2)


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
    def current(self) -> BenchResult:
        """The timing of the last kept, measured step: what the next fix is tested against."""
        return [r for r in self.rows if r.kept and r.measured is not None][-1].measured

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

        axes("ax", ax)
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
