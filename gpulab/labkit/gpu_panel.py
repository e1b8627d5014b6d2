"""The "measure your GPU" panel's arithmetic: from the times a page measured with WebGPU to
rates, the reader's own roofline, the roofline model's error per kernel, and a bench report.

The book's panel (``book/_ext/measure_gpu.py``) runs the WGSL kernels of
``book/_ext/static/measure-gpu.wgsl`` on the reader's GPU in a worker, which sends the raw
measurement here, to this module running on Pyodide in the same worker (:func:`panel_json`).
The page itself computes nothing: what a kernel's FLOPs and bytes are (:func:`kernel_work`),
the medians and spreads, the ceilings and the predictions are all this module's, so the page
and CPython give the same answer for the same times.

The kernels:

* ``copy``: ``dst = src`` over a buffer, 16 bytes per thread: bytes read plus bytes written
  per second, the bandwidth roof;
* ``fma_f32`` (and ``fma_f16`` where the adapter has ``shader-f16``): 16 independent chains
  of fused multiply-adds per thread, 2 FLOPs each: the compute roof;
* ``matmul``: an ``n x n`` FP32 matrix product in 16 x 16 tiles through workgroup memory,
  ``2 n**3`` FLOPs over at least ``3 * 4 * n**2`` bytes (each matrix crosses memory once);
* ``dispatch``: one workgroup that adds one to a counter: the fixed cost of a dispatch.

See also the chapters "What a GPU is" (``book/gpu_basics.md``) and "Memory bandwidth and
the roofline" (``book/memory_bandwidth.md``).
"""

from __future__ import annotations

import html
import json
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from gpulab._checks import choice, wrong_type
from gpulab._schema import schema_errors
from gpulab._version import __version__
from gpulab.costmodels.roofline import Ceilings
from gpulab.labkit.svgchart import Series, line_chart
from gpulab.units import format_bytes, format_duration, format_rate

__all__ = [
    "EXAMPLE",
    "KERNELS",
    "TIMING",
    "KernelResult",
    "bench_report",
    "kernel_work",
    "panel_json",
    "panel_report",
    "summarize",
]

#: The kernels, in the order the panel runs them, with what the reader sees them called.
KERNELS = {
    "copy": "copy",
    "fma_f32": "FMA chain, FP32",
    "fma_f16": "FMA chain, FP16",
    "matmul": "tiled matmul, FP32",
    "dispatch": "empty dispatch",
}
#: How the page timed the kernels, in words.
TIMING = {
    "timestamp-query": "GPU timestamps (timestamp-query)",
    "wall-clock": "wall-clock time around the queue's completion (the adapter offers no "
    "timestamp-query)",
}
#: Registry devices drawn beside the reader's roofline (their FP32 datasheet ceilings).
BESIDE = ("Tesla T4", "A100 80GB SXM4")
#: Fewer timed blocks than this give no median worth reporting.
MIN_SAMPLES = 3
_BYTES = {"fp32": 4, "fp16": 2}
SCHEMA = "data/bench_report.schema.json"


def kernel_work(name: str, params: Mapping) -> tuple[float, float]:
    """The FLOPs a kernel does and the bytes it must move, from its parameters.

    Parameters
    ----------
    name : str
        One of :data:`KERNELS`.
    params : mapping
        What the page sent: ``bytes`` (copy: read plus written); ``threads``, ``iterations``
        and ``chains`` (FMA chains); ``n`` (matmul); nothing for the dispatch.

    Returns
    -------
    (float, float)
        FLOPs and bytes of one dispatch.

    Examples
    --------
    >>> kernel_work("matmul", {"n": 256})
    (33554432.0, 786432.0)
    >>> kernel_work("fma_f32", {"threads": 4096, "iterations": 64, "chains": 16})
    (8388608.0, 16384.0)
    """
    choice("name", name, tuple(KERNELS))
    if not isinstance(params, Mapping):
        raise wrong_type("params", params, "a mapping of the kernel's parameters")
    if name == "copy":
        return 0.0, float(params["bytes"])
    if name in ("fma_f32", "fma_f16"):
        threads = float(params["threads"])
        return 2.0 * threads * params["iterations"] * params["chains"], 4.0 * threads
    if name == "matmul":
        n = float(params["n"])
        return 2.0 * n**3, 3.0 * _BYTES["fp32"] * n**2
    return 0.0, 0.0


@dataclass(frozen=True)
class KernelResult:
    """One kernel as the panel measured it.

    Attributes
    ----------
    name : str
        A key of :data:`KERNELS`.
    params : dict
        Its size, as the page chose it from the adapter's limits.
    median_s, iqr_s : float
        Median seconds of one dispatch over the timed blocks, and their interquartile range.
    samples : int
        Timed blocks (after the warm-up blocks).
    flops, n_bytes : float
        Work of one dispatch (:func:`kernel_work`).
    """

    name: str
    params: dict
    median_s: float
    iqr_s: float
    samples: int
    flops: float
    n_bytes: float

    @property
    def label(self) -> str:
        """What the reader sees the kernel called."""
        return KERNELS[self.name]

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte, or None for a kernel without both."""
        return self.flops / self.n_bytes if self.flops and self.n_bytes else None

    @property
    def rate(self) -> float:
        """FLOP/s for arithmetic, B/s for the copy, dispatches/s for the empty dispatch."""
        work = self.flops or self.n_bytes or 1.0
        return work / self.median_s

    @property
    def unit(self) -> str:
        return "FLOP/s" if self.flops else ("B/s" if self.n_bytes else "dispatches/s")


def _spread(times: list[float]) -> tuple[float, float]:
    """Median and interquartile range (linear interpolation, as NumPy's percentile)."""
    if len(times) == 1:
        return times[0], 0.0
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return statistics.median(times), q3 - q1


def summarize(measurement: Mapping) -> tuple[list[KernelResult], list[dict]]:
    """The kernels that ran, checked their results and were timed; and those that did not.

    Returns
    -------
    (list of KernelResult, list of dict)
        The timed kernels in :data:`KERNELS` order, and ``{"name", "reason"}`` for each kernel
        that was skipped, failed its check or has fewer than :data:`MIN_SAMPLES` timed blocks
        (its times never count).

    Examples
    --------
    >>> timed, left_out = summarize(EXAMPLE)
    >>> [r.name for r in timed], left_out[0]["name"]
    (['copy', 'fma_f32', 'matmul', 'dispatch'], 'fma_f16')
    """
    results, left_out = [], [dict(s) for s in measurement.get("skipped", ())]
    for entry in measurement.get("kernels", ()):
        name = choice("kernel name", entry["name"], tuple(KERNELS))
        times = [float(t) for t in entry.get("times_s", ()) if t and t > 0]
        if not entry.get("checked"):
            left_out.append({"name": name, "reason": f"wrong result: {entry.get('check')}"})
        elif len(times) < MIN_SAMPLES:
            left_out.append({"name": name, "reason": f"only {len(times)} timed block(s)"})
        else:
            median, iqr = _spread(times)
            flops, n_bytes = kernel_work(name, entry["params"])
            results.append(KernelResult(name, dict(entry["params"]), median, iqr, len(times),
                                        flops, n_bytes))  # fmt: skip
    results.sort(key=lambda r: list(KERNELS).index(r.name))
    return results, left_out


def adapter_name(measurement: Mapping) -> str:
    """The adapter as the browser names it: description, else vendor and architecture.

    >>> adapter_name({"adapter": {"vendor": "google", "architecture": "swiftshader"}})
    'google swiftshader'
    """
    adapter = measurement.get("adapter") or {}
    parts = [adapter.get("vendor", ""), adapter.get("architecture", "")]
    described = adapter.get("description", "").strip()
    joined = " ".join(p for p in parts if p).strip()
    if described:
        return f"{described} ({joined})" if joined else described
    return joined or "an unnamed WebGPU adapter"


def browser_name(user_agent: str) -> str:
    """``"Chrome 156"`` from a user-agent string (the product and its major version).

    >>> browser_name("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    ...              "HeadlessChrome/156.0.0.0 Safari/537.36")
    'HeadlessChrome 156'
    """
    for product in ("Edg", "Firefox", "HeadlessChrome", "Chrome", "Version"):
        found = re.search(rf"\b{product}/(\d+)", user_agent or "")
        if found:
            name = {"Edg": "Edge", "Version": "Safari"}.get(product, product)
            return f"{name} {found.group(1)}"
    return (user_agent or "an unnamed browser")[:80]


def ceilings(results: list[KernelResult], device_name: str) -> Ceilings | None:
    """The reader's measured roofs: FP32 FMA peak, copy bandwidth, dispatch cost.

    None when the FP32 chain or the copy did not give a time.

    Examples
    --------
    >>> roof = ceilings(summarize(EXAMPLE)[0], "example")
    >>> roof.measured, round(roof.ridge_point, 6), roof.overhead_s
    (True, 10.0, 1e-05)
    """
    by = {r.name: r for r in results}
    if "fma_f32" not in by or "copy" not in by:
        return None
    return Ceilings(
        device_name, "fp32", by["fma_f32"].rate, by["copy"].rate, measured=True,
        note="measured in this browser with WebGPU: FP32 FMA chains, a copy, an empty dispatch",
        overhead_s=by["dispatch"].median_s if "dispatch" in by else 0.0,
    )  # fmt: skip


def _chart(roof: Ceilings, results: list[KernelResult]) -> str:
    from gpulab.hardware.specs import get_spec

    beside = [Ceilings.from_spec(get_spec(name), "fp32") for name in BESIDE]
    placed = [r for r in results if r.intensity]
    lo = min([0.05, *(r.intensity / 3 for r in placed)])
    hi = max([1e3, *(r.intensity * 3 for r in placed)])
    xs = tuple(lo * (hi / lo) ** (k / 120) for k in range(121))
    series = [Series(f"{roof.device_name[:28]} (measured)", *_line(roof, xs))]
    series += [Series(f"{c.device_name} (datasheet)", *_line(c, xs), dashed=True) for c in beside]
    points = [(r.intensity, r.rate, r.label) for r in placed]
    return line_chart(
        series, x_label="arithmetic intensity (FLOP/byte)", y_label="FLOP/s",
        x_log=True, y_log=True, point=points[0] if points else None, points=points[1:],
        y_format=lambda v: format_rate(v, "FLOP/s"),
        width=760,
        title=f"Roofline measured in this browser on {roof.device_name}, FP32, beside the "
        f"datasheet rooflines of {' and '.join(BESIDE)}",
    )  # fmt: skip


def _line(roof: Ceilings, xs: tuple[float, ...]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    points = tuple(sorted({*xs, roof.ridge_point}))
    return points, tuple(roof.attainable(x) for x in points)


def _errors(roof: Ceilings | None, results: list[KernelResult]) -> dict[str, float]:
    """measured / predicted - 1 for every kernel with work, on the reader's own ceilings."""
    if roof is None:
        return {}
    return {
        r.name: r.median_s / roof.predict(r.flops, r.n_bytes).time_s - 1
        for r in results
        if r.flops or r.n_bytes
    }


def _rate(r: KernelResult) -> str:
    if r.unit == "dispatches/s":
        return f"{r.rate:,.0f} dispatches/s"
    return format_rate(r.rate, r.unit)


def _size(r: KernelResult) -> str:
    p = r.params
    if r.name == "copy":
        return f"{format_bytes(p['bytes'])} moved"
    if r.name.startswith("fma"):
        return f"{p['threads']:,} threads x {p['iterations']:,} steps x {p['chains']} chains"
    if r.name == "matmul":
        return f"n = {p['n']:,}"
    return "1 workgroup"


def panel_report(measurement: Mapping | str) -> dict:
    """What the panel shows for one measurement, and its bench report.

    Parameters
    ----------
    measurement : mapping or JSON string
        What the page's worker measured: ``adapter`` (vendor, architecture, description),
        ``browser`` (the user agent), ``date``, ``timing`` (a key of :data:`TIMING`),
        ``kernels`` (each: ``name``, ``params``, ``checked``, ``check``, ``times_s``: seconds
        per dispatch of each timed block) and ``skipped``.

    Returns
    -------
    dict
        ``html`` (the result the panel shows), ``numbers`` (rates, the ceilings and the
        model's error per kernel, SI units) and ``report`` (:func:`bench_report`).

    Examples
    --------
    >>> out = panel_report(EXAMPLE)
    >>> round(out["numbers"]["rate[copy]"] / 1e9, 1), round(out["numbers"]["ridge"], 2)
    (100.0, 10.0)
    >>> round(out["numbers"]["error[matmul]"], 3)
    0.0
    """
    if isinstance(measurement, str):
        measurement = json.loads(measurement)
    if not isinstance(measurement, Mapping):
        raise wrong_type("measurement", measurement, "a mapping (the page's measurement)")
    timing = choice("timing", measurement.get("timing"), tuple(TIMING))
    results, left_out = summarize(measurement)
    device = adapter_name(measurement)
    roof = ceilings(results, device)
    errors = _errors(roof, results)
    esc = html.escape
    head = (
        f"MEASURED in this browser ({browser_name(measurement.get('browser', ''))}) on "
        f"{device}, {measurement.get('date', '')}, with WebGPU; timed with {TIMING[timing]}; "
        f"each kernel's result was checked before its time counted. A measurement of your "
        f"GPU through the browser, which adds its own checks and scheduling: a native "
        f"program can do better."
    )
    trip = measurement.get("round_trip_s")
    if timing == "wall-clock" and trip:
        head += (
            f" Each timed block includes one round trip to the GPU ({format_duration(trip)} "
            f"for an empty submission), spread over the block's dispatches."
        )
    rows = [("kernel", "size", "median per dispatch", "IQR", "rate", "FLOP/byte",
             "roofline (your ceilings)", "model error")]  # fmt: skip
    for r in results:
        predicted = roof.predict(r.flops, r.n_bytes).time_s if roof and r.name in errors else None
        rows.append((
            r.label, _size(r), format_duration(r.median_s),
            f"{100 * r.iqr_s / r.median_s:.0f}%", _rate(r),
            f"{r.intensity:.3g}" if r.intensity else "—",
            format_duration(predicted) if predicted else "—",
            f"{100 * errors[r.name]:+.0f}%" if r.name in errors else "—",
        ))  # fmt: skip
    lines = []
    if roof is not None:
        lines.append(f"Your ceilings: {roof}.")
        lines.append(
            "Model error = measured time / roofline time - 1, the roofline being "
            "per-dispatch cost + max(FLOPs / peak, bytes / bandwidth) on the ceilings above; "
            "the copy and the FP32 chain set those ceilings, so their errors are the share "
            "of their time the dispatch cost explains. The copy does no arithmetic, so it is "
            "not a point on the chart: its bandwidth is the slanted roof."
        )
    else:
        lines.append("No roofline: the copy or the FP32 chain gave no checked time.")
    lines += [f"Not measured: {KERNELS[s['name']]}: {s['reason']}." for s in left_out]
    table = "".join(
        "<tr>" + "".join(f"<{tag}>{esc(c)}</{tag}>" for c in row) + "</tr>"
        for tag, row in [("th", rows[0]), *(("td", row) for row in rows[1:])]
    )
    parts = [f'<p class="gl-gpu-head">{esc(head)}</p>',
             f'<div class="gl-calc-table"><table>{table}</table></div>',
             f'<pre class="gl-calc-text">{esc(chr(10).join(lines))}</pre>']  # fmt: skip
    if roof is not None:
        parts.append(f'<div class="gl-calc-chart">{_chart(roof, results)}</div>')
    numbers: dict[str, float | None] = {f"rate[{r.name}]": r.rate for r in results}
    numbers.update({f"median_s[{r.name}]": r.median_s for r in results})
    numbers.update({f"error[{k}]": v for k, v in errors.items()})
    if roof is not None:
        numbers.update(peak_flops=roof.peak_flops, memory_bandwidth=roof.memory_bandwidth,
                       ridge=roof.ridge_point, overhead_s=roof.overhead_s)  # fmt: skip
    return {
        "html": "".join(parts),
        "numbers": numbers,
        "report": bench_report(measurement, results, left_out),
    }


def bench_report(measurement: Mapping, results: list[KernelResult], left_out: list[dict]) -> dict:
    """The measurement as a report in the course's bench report schema (for the gallery).

    Checked against ``gpulab/data/bench_report.schema.json`` before it is returned, as
    :func:`gpulab.measure.bench_report.validate_report` checks (that module needs NumPy,
    which the page does not have).
    """
    import platform

    device = adapter_name(measurement)
    browser = measurement.get("browser", "")
    timing = measurement["timing"]
    names = {"copy": ("copy", None), "fma_f32": ("fma", "fp32"), "fma_f16": ("fma", "fp16"),
             "matmul": ("matmul", "fp32"), "dispatch": ("dispatch", None)}  # fmt: skip
    entries = []
    for r in results:
        name, dtype = names[r.name]
        entries.append({
            "name": name, "dtype": dtype, "params": {**r.params, "timing": timing},
            "unit": r.unit, "value": r.rate, "median_s": r.median_s, "iqr_s": r.iqr_s,
            "runs": r.samples * int(_dispatches(measurement, r.name)), "samples": r.samples,
        })  # fmt: skip
    report = {
        "schema_version": 1,
        "provenance": {
            "device": f"{device} (webgpu); {browser_name(browser)}",
            "kind": "webgpu", "name": device, "torch": None, "python": platform.python_version(),
            "gpulab": __version__, "date": measurement.get("date", ""), "browser": browser,
            "adapter": dict(measurement.get("adapter") or {}), "timing": timing,
        },
        "notes": f"MEASURED in a web browser with WebGPU by the book's panel; timed with "
                 f"{TIMING[timing]}; every kernel's result checked before its time counted.",
        "quick": True,
        "device_type": "webgpu",
        "results": entries,
        "skipped": [{"name": s["name"], "reason": s["reason"]} for s in left_out],
        "reference": {"kind": "none", "label": "a browser does not name the GPU's exact part, "
                      "so no datasheet entry is matched"},
    }  # fmt: skip
    schema = json.loads(resources.files("gpulab").joinpath(SCHEMA).read_text("utf-8"))
    problems = [f"{'/'.join(map(str, w))}: {m}" for w, m in schema_errors(report, schema)]
    if problems:
        raise ValueError(f"the panel's report does not match {SCHEMA}: {'; '.join(problems)}")
    return report


def _dispatches(measurement: Mapping, name: str) -> int:
    for entry in measurement.get("kernels", ()):
        if entry["name"] == name:
            return max(1, int(entry.get("dispatches_per_block", 1)))
    return 1


def panel_json(measurement: str) -> str:
    """:func:`panel_report` from and to JSON: what the page's worker calls on Pyodide."""
    return json.dumps(panel_report(measurement))


def _example() -> dict:
    """A made-up measurement whose numbers are easy to check by hand (for docs and tests)."""
    per = 1e-3  # the copy: 1 ms plus a 10 us dispatch cost; the FMA chains: 0.5 ms
    times = [per * f for f in (0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03)]
    matmul_n = 192  # compute-bound (32 FLOP/byte): 2 n^3 FLOPs at 1 TFLOP/s, plus 10 us
    matmul_s = 2 * matmul_n**3 / 1e12 + 1e-5
    return {
        "adapter": {"vendor": "example", "architecture": "made-up", "description": ""},
        "browser": "Mozilla/5.0 HeadlessChrome/156.0.0.0", "date": "2026-12-06",
        "timing": "wall-clock",
        "kernels": [
            {"name": "copy", "params": {"bytes": 1.01e8}, "checked": True, "check": "ok",
             "times_s": [t + 1e-5 for t in times], "dispatches_per_block": 10},
            {"name": "fma_f32", "params": {"threads": 1000, "iterations": 15625, "chains": 16},
             "checked": True, "check": "ok", "times_s": [t * 0.5 for t in times]},
            {"name": "matmul", "params": {"n": matmul_n}, "checked": True, "check": "ok",
             "times_s": [matmul_s] * 5},
            {"name": "dispatch", "params": {}, "checked": True, "check": "ok",
             "times_s": [1e-5] * 5, "dispatches_per_block": 64},
        ],
        "skipped": [{"name": "fma_f16", "reason": "the adapter does not offer shader-f16"}],
    }  # fmt: skip


#: A made-up measurement (100 GB/s, 1 TFLOP/s, 10 us per dispatch), for examples and tests.
EXAMPLE = _example()
