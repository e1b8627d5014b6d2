"""The GPU trace lab's tables, figures and sentences, made from what a trace holds.

Each function takes what :mod:`gpulab.measure.gpu_trace` read from a trace and returns
Markdown (a :class:`~gpulab.labkit.claims.Claim`, displayed by Jupyter) or a figure, so the
lab's cells stay one call long and every number they show comes from the trace. The
sentences state only what the trace holds, and refuse (through :func:`claim`) a wording
the numbers do not support.

See also the lab ``notebooks/gpu_trace_lab.ipynb``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpulab._checks import axes, positive_int, wrong_type
from gpulab.labkit.claims import Claim, claim
from gpulab.measure.gpu_trace import (
    GpuTrace,
    LaunchedKernel,
    LaunchStats,
    OperatorRow,
    TimeBreakdown,
    operator_kernels,
    trace_sources,
)
from gpulab.units import format_duration

__all__ = [
    "Table",
    "breakdown_sentence",
    "comparison_table",
    "kernels_table",
    "launch_sentence",
    "launched_sentence",
    "launched_table",
    "operators_sentence",
    "operators_table",
    "plot_gpu_time",
    "plot_launches",
    "sources_table",
]

#: Colours of the kinds of GPU work in the figures (idle is light grey).
KIND_COLORS = {
    "compute": "#55A868",
    "communication": "#C44E52",
    "communication + compute": "#8172B2",
    "memory": "#4C72B0",
    "idle": "#DDDDDD",
}


@dataclass(frozen=True)
class Table:
    """A table of a trace's numbers: Markdown for a notebook, HTML for the built book.

    The book renders a cell's Markdown output as CommonMark, which has no tables, so the
    table is also offered as HTML (which notebook front ends and the book both prefer).

    Attributes
    ----------
    text : str
        The table in Markdown (GitHub's pipe syntax): a header, a rule, the rows. Cells
        may hold code spans and links, not pipes.

    Examples
    --------
    >>> t = Table(chr(10).join(["| a | n |", "|---|---:|", "| `x` | 1 |"]))
    >>> print(t._repr_html_().replace("<t", chr(10) + "<t"))  # doctest: +NORMALIZE_WHITESPACE
    <table>
    <thead>
    <tr>
    <th style="text-align:left">a</th>
    <th style="text-align:right">n</th></tr></thead>
    <tbody>
    <tr>
    <td style="text-align:left"><code>x</code></td>
    <td style="text-align:right">1</td></tr></tbody></table>
    """

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        lines = [ln.strip().strip("|").split("|") for ln in self.text.strip().splitlines()]
        header, rule, rows = lines[0], lines[1], lines[2:]
        align = ["right" if c.strip().endswith(":") else "left" for c in rule]

        def cells(row: list[str], tag: str) -> str:
            return "".join(f'<{tag} style="text-align:{a}">{_inline_html(c.strip())}</{tag}>'
                           for c, a in zip(row, align, strict=True))

        body = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows)
        return f"<table><thead><tr>{cells(header, 'th')}</tr></thead><tbody>{body}</tbody></table>"

    def __str__(self) -> str:
        return self.text


def _inline_html(text: str) -> str:
    """A table cell's Markdown (code spans, links) as HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]*)`", r"<code>\1</code>", out)
    return re.sub(r"\[([^\]]*)\]\(([^)\s]*)\)", r'<a href="\2">\1</a>', out)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def sources_table() -> Table:
    """Where each trace the course ships comes from, as a Markdown table.

    Examples
    --------
    >>> print(sources_table().text.splitlines()[0])
    | trace | GPU | run | recorded | source |
    """
    rows = [
        f"| `{s.name}` | {s.device} | {s.run} | {s.recorded} | [{s.tag} "
        f"(commit {s.commit[:10]})]({s.source}), {s.license.split(' (')[0]} |"
        for s in trace_sources()
    ]
    return Table("| trace | GPU | run | recorded | source |\n|---|---|---|---|---|\n"
                 + "\n".join(rows))


def _rows(name: str, rows, kind: type) -> list:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise wrong_type(name, rows, f"a list of {kind.__name__}")
    for row in rows:
        if not isinstance(row, kind):
            raise wrong_type(name, rows, f"a list of {kind.__name__}")
    return list(rows)


def operators_table(rows: Sequence[OperatorRow]) -> Table:
    """Operators' calls, host time and launched GPU work, as a Markdown table.

    Examples
    --------
    >>> print(operators_table([OperatorRow("aten::relu", 2, 4e-5, 0, 0.0)]).text)
    | operator | calls | host time | kernels launched | kernel time |
    |---|---:|---:|---:|---:|
    | `aten::relu` | 2 | 40 µs | 0 | – |
    """
    rows = _rows("rows", rows, OperatorRow)
    body = "\n".join(
        f"| `{r.operator}` | {r.calls} | {format_duration(r.host_s)} | {r.kernels} | "
        f"{format_duration(r.kernel_s) if r.kernels else '–'} |"
        for r in rows
    )
    return Table("| operator | calls | host time | kernels launched | kernel time |\n"
                 "|---|---:|---:|---:|---:|\n" + body)


def operators_sentence(trace: GpuTrace, rows: Sequence[OperatorRow]) -> Claim:
    """What a profile's operators did: launched kernels on a GPU, or were the work on a CPU.

    Examples
    --------
    >>> rows = [OperatorRow("aten::addmm", 2, 3e-4, 0, 0.0)]
    >>> t = GpuTrace("mine", None, "CPU only", ())
    >>> print(operators_sentence(t, rows))  # doctest: +NORMALIZE_WHITESPACE
    This profile holds no GPU work (CPU only): its 2 calls of `aten::addmm` launched no
    kernel, so their 300 µs on the host were the arithmetic itself.
    """
    if not isinstance(trace, GpuTrace):
        raise wrong_type("trace", trace, "a GpuTrace")
    rows = _rows("rows", rows, OperatorRow)
    launched = sum(r.kernels for r in rows)
    calls = " and ".join(f"{r.calls} calls of `{r.operator}`" for r in rows)
    host = sum(r.host_s for r in rows)
    if not trace.has_gpu_work:
        return claim(
            f"This profile holds no GPU work ({trace.device}): its {calls} launched no "
            f"kernel, so their {format_duration(host)} on the host were the arithmetic itself.",
            launched == 0, reason="a CPU profile records operators only")
    gpu = sum(r.kernel_s for r in rows)
    return claim(
        f"On {trace.device}, the {calls} launched {launched} GPU kernels, copies or fills, "
        f"which ran {format_duration(gpu)} on the GPU; the {format_duration(host)} the host "
        "spent in the operators went to preparing and launching that work, not to the "
        "arithmetic.",
        launched > 0, reason="operators on a GPU launch their work as kernels")


def launched_sentence(trace: GpuTrace, operator: str) -> Claim:
    """What each call of ``operator`` launched in a GPU trace: kernels counted by name.

    Examples
    --------
    >>> from gpulab.measure.gpu_trace import read_trace
    >>> print(launched_sentence(read_trace("a100_alexnet"), "aten::relu_"))
    ... # doctest: +NORMALIZE_WHITESPACE
    The 14 calls of `aten::relu_` launched 14 pieces of GPU work:
    `vectorized_elementwise_kernel` ×14.
    """
    if not isinstance(trace, GpuTrace):
        raise wrong_type("trace", trace, "a GpuTrace")
    rows = operator_kernels(trace, operator)
    calls = len({r.call for r in rows})
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.kernel] = counts.get(r.kernel, 0) + 1
    named = ", ".join(f"`{k}` ×{n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    n_calls = sum(1 for e in trace.of("cpu_op") if e.name == operator)
    missing = (f" (the work of {n_calls - calls} of them is not in the trace: they ran in "
               "the last, cut-off, profiler step or launched nothing)" if calls < n_calls else "")
    return claim(
        f"The {n_calls} calls of `{operator}` launched {len(rows)} pieces of GPU work"
        f"{missing}: {named}.",
        bool(rows), reason="the operator launched GPU work in this trace")


def launched_table(rows: Sequence[LaunchedKernel], calls: int = 2) -> Table:
    """The kernels of an operator's first ``calls`` calls, with their correlation ids.

    Examples
    --------
    >>> k = LaunchedKernel(0, "cudaLaunchKernel", 5123, "vectorized_elementwise_kernel",
    ...                    "compute", 1.45e-4)
    >>> print(launched_table([k]).text.splitlines()[2])
    | 0 | `cudaLaunchKernel` | 5123 | `vectorized_elementwise_kernel` | compute | 145 µs |
    """
    rows = _rows("rows", rows, LaunchedKernel)
    positive_int("calls", calls)
    shown = [r for r in rows if r.call < calls]
    body = "\n".join(
        f"| {r.call} | `{r.runtime_call}` | {r.correlation} | `{r.kernel}` | {r.kind} | "
        f"{format_duration(r.duration_s)} |" for r in shown)
    return Table("| call | host's runtime call | correlation id | GPU kernel | kind | time |\n"
                 "|---:|---|---:|---|---|---:|\n" + body)


def kernels_table(rows) -> Table:
    """The top kernels (:func:`~gpulab.measure.gpu_trace.top_kernels`) as a Markdown table."""
    from gpulab.measure.gpu_trace import KernelTime

    rows = _rows("rows", rows, KernelTime)
    body = "\n".join(
        f"| `{r.name}` | {r.kind} | {r.calls} | {format_duration(r.total_s)} | "
        f"{_pct(r.share)} |" for r in rows)
    return Table("| kernel | kind | calls | GPU time | share of GPU work |\n"
                 "|---|---|---:|---:|---:|\n" + body)


def breakdown_sentence(trace: GpuTrace, b: TimeBreakdown) -> Claim:
    """Where a trace's GPU time went, in one paragraph generated from the breakdown.

    Examples
    --------
    >>> b = TimeBreakdown(0.01, 0.006, {"compute": 0.004, "communication": 0.003,
    ...                   "memory": 0.0}, 0.001, 50, {})
    >>> t = GpuTrace("x", None, "GPU", (), steps=2)
    >>> print(breakdown_sentence(t, b))  # doctest: +NORMALIZE_WHITESPACE
    Over 2 whole profiler steps (10 ms from the first kernel to the end of the last), the
    GPU was idle 40.0% of the time. Compute kernels ran 40.0% of it, communication 30.0%
    and memory copies 0.0%; 33.3% of the communication time ran while compute kernels ran
    too.
    """
    if not isinstance(trace, GpuTrace) or not isinstance(b, TimeBreakdown):
        raise wrong_type("trace, b", (trace, b), "a GpuTrace and its TimeBreakdown")
    steps = (f"{trace.steps} whole profiler steps" if trace.steps >= 2
             else "the whole trace")
    overlap = (f"; {_pct(b.overlap_share)} of the communication time ran while compute "
               "kernels ran too" if b.by_kind_s.get("communication") else
               "; no communication kernel ran")
    total = b.idle_s + sum(b.exclusive_s.values()) if b.exclusive_s else b.window_s
    return claim(
        f"Over {steps} ({format_duration(b.window_s)} from the first kernel to the end of the "
        f"last), the GPU was idle {_pct(b.idle_share)} of the time. Compute kernels ran "
        f"{_pct(b.share('compute'))} of it, communication {_pct(b.share('communication'))} "
        f"and memory copies {_pct(b.share('memory'))}{overlap}.",
        abs(total - b.window_s) <= 1e-9 * b.window_s + 1e-12,
        reason="idle and busy time must add up to the window")


def launch_sentence(trace: GpuTrace, s: LaunchStats) -> Claim:
    """The host's launch time against the kernels' time, from a trace's launch statistics.

    Examples
    --------
    >>> s = LaunchStats((5e-6, 5e-6, 5e-6), (2e-6, 1e-3, 4e-6), (1e-5, 1e-5, 2e-5))
    >>> print(launch_sentence(GpuTrace("x", None, "GPU", ()), s))  # doctest: +NORMALIZE_WHITESPACE
    In `x`, a launch call took the host 5 µs (median) and a launched kernel ran 4 µs
    (median); 2 of the 3 kernels ran for less time than their launch took.
    """
    if not isinstance(trace, GpuTrace) or not isinstance(s, LaunchStats):
        raise wrong_type("trace, s", (trace, s), "a GpuTrace and its LaunchStats")
    return claim(
        f"In `{trace.name}`, a launch call took the host {format_duration(s.median_launch_s)} "
        f"(median) and a launched kernel ran {format_duration(s.median_kernel_s)} (median); "
        f"{s.shorter_than_launch} of the {s.n} kernels ran for less time than their launch "
        "took.",
        0 <= s.shorter_than_launch <= s.n, reason="a count of the kernels matched")


def comparison_table(comparison) -> Table | Claim:
    """HolisticTraceAnalysis's reading beside the course's (:mod:`~gpulab.measure.hta_reading`).

    A table of the three shares and the difference each may have, or, without
    HolisticTraceAnalysis, the sentence that says it is missing.
    """
    from gpulab.measure.hta_reading import HtaComparison

    if not isinstance(comparison, HtaComparison):
        raise wrong_type("comparison", comparison, "an HtaComparison (compare_with_hta)")
    if comparison.theirs is None:
        return claim(comparison.text())
    return Table(comparison.text().split("\n\n")[0])


def plot_gpu_time(breakdowns: Mapping[str, TimeBreakdown], ax=None):
    """One horizontal bar per trace: its window split into work kinds and idle time.

    Parameters
    ----------
    breakdowns : dict of str to TimeBreakdown
        A label per trace, and its :func:`~gpulab.measure.gpu_trace.time_breakdown`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if not isinstance(breakdowns, Mapping) or not breakdowns or not all(
            isinstance(b, TimeBreakdown) for b in breakdowns.values()):
        raise wrong_type("breakdowns", breakdowns, "a dict of label to TimeBreakdown")
    ax = axes("ax", ax) or plt.subplots(figsize=(8.0, 1.2 + 0.8 * len(breakdowns)))[1]
    labels = list(breakdowns)
    kinds = [*KIND_COLORS]
    for i, label in enumerate(labels):
        b = breakdowns[label]
        parts = {k: b.exclusive_s.get(k, 0.0) for k in kinds[:-1]}
        parts["memory"] += sum(v for k, v in b.exclusive_s.items() if k not in parts)
        parts["idle"] = b.idle_s
        left = 0.0
        for kind, seconds in parts.items():
            share = seconds / b.window_s
            ax.barh(i, 100 * share, left=100 * left, color=KIND_COLORS[kind],
                    label=kind if i == 0 else None, edgecolor="white", linewidth=0.5)
            left += share
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the traced window (%)")
    ax.set_title("Where the GPU's time went (memory includes other overlaps)")
    ax.legend(ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.35), fontsize=8)
    return ax


def plot_launches(stats: Mapping[str, LaunchStats], ax=None):
    """Each launched kernel's time against its launch call's time, log–log, per trace.

    Points under the diagonal are kernels that ran for less time than the host took to
    launch them: a GPU fed such kernels one by one waits for its host.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if not isinstance(stats, Mapping) or not stats or not all(
            isinstance(s, LaunchStats) for s in stats.values()):
        raise wrong_type("stats", stats, "a dict of label to LaunchStats")
    ax = axes("ax", ax) or plt.subplots()[1]
    lo, hi = float("inf"), 0.0
    for label, s in stats.items():
        x = [1e6 * v for v in s.launch_s]
        y = [1e6 * v for v in s.kernel_s]
        ax.scatter(x, y, s=8, alpha=0.5, label=f"{label} ({s.n} kernels)")
        lo, hi = min(lo, *x, *y), max(hi, *x, *y)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="kernel time = launch time")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("host's launch call (µs)")
    ax.set_ylabel("kernel's time on the GPU (µs)")
    ax.set_title("Launching against running, per kernel")
    ax.legend(fontsize=8)
    return ax
