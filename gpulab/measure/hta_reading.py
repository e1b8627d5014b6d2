"""A second reading of a GPU trace, by HolisticTraceAnalysis, set beside the course's own.

HolisticTraceAnalysis (PyPI ``HolisticTraceAnalysis``, MIT, from Meta) reads PyTorch
profiler traces into pandas tables and computes, among much else, a trace's idle and
compute time and its communication–computation overlap. The course reads the same traces
with the standard library (:mod:`gpulab.measure.gpu_trace`); :func:`compare_with_hta` runs
both and checks that they agree, so a lab's numbers do not rest on one reader.

They differ by design in one way: HolisticTraceAnalysis rounds each event's start and
duration down to a whole microsecond (it says so when it reads a trace recorded in
nanoseconds, https://github.com/pytorch/pytorch/pull/122425), so each piece of GPU work can
lose up to about a microsecond. Shares of the window may therefore differ by up to
``n_work × 1 µs / window``, and that is the tolerance of the comparison.

HolisticTraceAnalysis is an optional install (``pip install -e .[traces]``): it pulls in
pandas, plotly and JupyterLab. Without it, :func:`compare_with_hta` says so in a sentence and
the course's own reading stands alone.

See also the lab ``notebooks/gpu_trace_lab.ipynb``.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from gpulab.measure.gpu_trace import GpuTrace, kernel_kind, read_trace, time_breakdown

__all__ = ["HtaComparison", "compare_with_hta", "hta_available"]

#: What to install for the second reading (the package's extra, and the PyPI packages).
INSTALL = "pip install HolisticTraceAnalysis psutil"

#: The most a piece of GPU work loses to HolisticTraceAnalysis's rounding, in seconds.
ROUNDING_S = 1e-6

#: HolisticTraceAnalysis reports the overlap as a percentage rounded to two decimals, so any
#: share may differ by half its last digit as well.
REPORTED_DIGIT = 0.5e-4


def hta_available() -> bool:
    """Whether HolisticTraceAnalysis and what it imports (psutil) are installed here.

    Examples
    --------
    >>> isinstance(hta_available(), bool)
    True
    """
    return all(importlib.util.find_spec(m) is not None for m in ("hta", "psutil", "pandas"))


def _hta_shares(trace: GpuTrace) -> dict[str, float]:
    """Idle, compute and overlap shares of ``trace`` as HolisticTraceAnalysis reads them."""
    from hta.trace_analysis import TraceAnalysis  # optional: pandas, plotly, JupyterLab

    quiet = [logging.getLogger(n) for n in ("hta", "")]
    levels = [lg.level for lg in quiet]
    with tempfile.TemporaryDirectory() as folder:  # one rank: the file alone in a folder
        shutil.copy(trace.path, Path(folder) / trace.path.name)
        try:
            for lg in quiet:
                lg.setLevel(logging.ERROR)
            with warnings.catch_warnings():  # 0/0 for the overlap of a trace without NCCL
                warnings.simplefilter("ignore")  # and its pandas deprecation notices
                analysis = TraceAnalysis(trace_dir=folder)
                temporal = analysis.get_temporal_breakdown(visualize=False)
                overlap = analysis.get_comm_comp_overlap(visualize=False)
        finally:
            for lg, level in zip(quiet, levels, strict=True):
                lg.setLevel(level)
    row = temporal.iloc[0]
    window = float(row["kernel_time(us)"])
    ratio = float(overlap.iloc[0]["comp_comm_overlap_pctg"]) / 100
    return {
        "window_s": window * 1e-6,
        "idle": float(row["idle_time(us)"]) / window,
        "compute": float(row["compute_time(us)"]) / window,
        "overlap": 0.0 if math.isnan(ratio) else ratio,
    }


@dataclass(frozen=True)
class HtaComparison:
    """The course's reading of a trace beside HolisticTraceAnalysis's (:func:`compare_with_hta`).

    Attributes
    ----------
    trace : str
        The trace's name.
    ours : dict of str to float
        Idle, compute and overlap shares read by :mod:`gpulab.measure.gpu_trace`.
    theirs : dict of str to float, or None
        The same read by HolisticTraceAnalysis; None when it is not installed.
    tolerance : dict of str to float
        How far each share may differ: the rounding of each piece of GPU work that counts
        in it, over the time the share is taken of.

    Examples
    --------
    >>> shares = {"idle": 0.5, "compute": 0.3, "overlap": 0.1}
    >>> c = HtaComparison("t", shares, None, dict.fromkeys(shares, 0.01))
    >>> c.agree, c.largest_difference
    (True, 0.0)
    >>> print(c.text().split(",")[0])
    HolisticTraceAnalysis is not installed here (with psutil and pandas
    """

    trace: str
    ours: dict
    theirs: dict | None
    tolerance: dict

    @property
    def largest_difference(self) -> float:
        """The largest difference between the two readings' shares (0 without HTA)."""
        if self.theirs is None:
            return 0.0
        return max(abs(self.ours[k] - self.theirs[k]) for k in self.ours)

    @property
    def agree(self) -> bool:
        """Whether each share agrees within its :attr:`tolerance` (True without HTA)."""
        if self.theirs is None:
            return True
        return all(abs(self.ours[k] - self.theirs[k]) <= self.tolerance[k] for k in self.ours)

    def text(self) -> str:
        """The comparison as Markdown: a table, or a sentence when HTA is missing."""
        if self.theirs is None:
            return (
                "HolisticTraceAnalysis is not installed here (with psutil and pandas, which "
                "it imports), so this trace was read by gpulab alone: "
                f"`{INSTALL}` adds the second reading."
            )
        rows = "\n".join(
            f"| {label} | {100 * self.ours[k]:.2f}% | {100 * self.theirs[k]:.2f}% "
            f"| {100 * self.tolerance[k]:.2f} |"
            for k, label in (("idle", "GPU idle, of the window"),
                             ("compute", "compute kernels, of the window"),
                             ("overlap", "communication under computation")))
        return (
            f"| {self.trace} | gpulab | HolisticTraceAnalysis | allowed difference (points) |"
            f"\n|---|---:|---:|---:|\n{rows}\n\n{self.verdict()}"
        )

    def verdict(self) -> str:
        """One sentence: whether the readings agree, or that there is one reading only."""
        if self.theirs is None:
            return "Only gpulab's reading of this trace is available here."
        verdict = "agree" if self.agree else "DISAGREE"
        return (f"The two readings {verdict} within what HolisticTraceAnalysis's rounding of "
                "each event down to a whole microsecond allows.")

    def _repr_markdown_(self) -> str:
        return self.text()


def _overlap_tolerance(trace: GpuTrace, breakdown) -> float:
    """The rounding's bound on the overlap share: the work that touches communication."""
    comm_s = breakdown.by_kind_s["communication"]
    if comm_s == 0:
        return 0.0
    work = trace.gpu_work
    comm = [(e.start_s, e.end_s) for e in work if kernel_kind(e.name) == "communication"]
    touching = sum(
        1 for e in work
        if kernel_kind(e.name) in ("compute", "communication")
        and any(e.start_s < b and a < e.end_s for a, b in comm)
    )
    return touching * ROUNDING_S / comm_s


def compare_with_hta(trace) -> HtaComparison:
    """Read ``trace`` with HolisticTraceAnalysis too, and compare the two readings.

    Parameters
    ----------
    trace : GpuTrace or str or pathlib.Path
        A trace (:func:`~gpulab.measure.gpu_trace.read_trace`), its file, or a shipped
        trace's name.

    Returns
    -------
    HtaComparison
        Shown as a table in a notebook; ``theirs`` is None, and the text says so, when
        HolisticTraceAnalysis is not installed.

    Examples
    --------
    >>> c = compare_with_hta("a100_ddp_nccl")
    >>> c.agree, round(100 * c.ours["overlap"])
    (True, 15)
    """
    if not isinstance(trace, GpuTrace):
        trace = read_trace(trace)
    ours_b = time_breakdown(trace)
    ours = {"idle": ours_b.idle_share, "compute": ours_b.share("compute"),
            "overlap": ours_b.overlap_share}
    rounding = ours_b.n_work * ROUNDING_S / ours_b.window_s
    tolerance = {
        "idle": rounding + REPORTED_DIGIT,
        "compute": rounding + REPORTED_DIGIT,
        "overlap": _overlap_tolerance(trace, ours_b) + REPORTED_DIGIT,
    }
    theirs = _hta_shares(trace) if hta_available() else None
    if theirs is not None:
        theirs.pop("window_s")
    return HtaComparison(trace.name, ours, theirs, tolerance)
