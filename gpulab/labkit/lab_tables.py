"""The labs' tables of measurements: aligned columns from timings, so a cell shows the
measuring and one call prints the result.

See also ``tests/test_lab_tables.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpulab._checks import positive_number, wrong_type
from gpulab.measure.bench import BenchResult

__all__ = ["amp_table", "stream_table"]


def _iqr_percent(r: BenchResult) -> float:
    return 100 * r.iqr_s / r.median_s


def _result(name: str, value) -> BenchResult:
    if not isinstance(value, BenchResult):
        raise wrong_type(name, value, "a BenchResult (from gl.benchmark)")
    return value


def stream_table(results: Mapping[str, tuple[BenchResult, float]],
                 numpy_copy: tuple[BenchResult, float] | None = None) -> str:
    """STREAM-style kernels: bytes per call, median time, IQR and GB/s, one row each.

    Parameters
    ----------
    results : mapping
        ``name -> (BenchResult, bytes moved per call)``.
    numpy_copy : (BenchResult, float), optional
        The independent NumPy copy on the CPU and its bytes per call, shown last.

    Examples
    --------
    >>> from gpulab.measure.bench import BenchResult
    >>> r = BenchResult((0.01, 0.01, 0.011), 1, "copy")
    >>> print(stream_table({"copy": (r, 2e8)}))
    kernel        bytes/call      median  IQR %     GB/s
    copy               200MB     10.00ms    5.0     20.0
    """
    rows = dict(results)
    if numpy_copy is not None:
        rows["NumPy copy"] = numpy_copy
    lines = [f"{'kernel':<12}{'bytes/call':>12}{'median':>12}{'IQR %':>7}{'GB/s':>9}"]
    for name, (r, nbytes) in rows.items():
        r = _result(f"results[{name!r}]", r)
        positive_number(f"bytes of {name!r}", nbytes)
        note = "   (CPU, one thread, independent check)" if name == "NumPy copy" else ""
        lines.append(f"{name:<12}{nbytes / 1e6:>10.0f}MB{r.median_s * 1e3:>10.2f}ms"
                     f"{_iqr_percent(r):>7.1f}{r.gbs(nbytes):>9.1f}{note}")
    return "\n".join(lines)


def amp_table(times_s: Mapping[str, float], peaks_bytes: Mapping[str, float]) -> str:
    """Each precision's step time and peak memory, then the second against the first.

    Examples
    --------
    >>> print(amp_table({"fp32": 0.05, "amp_bf16": 0.1}, {"fp32": 2**24, "amp_bf16": 2**23}))
         fp32:    50.00 ms per step, peak memory  16.00 MiB
     amp_bf16:   100.00 ms per step, peak memory   8.00 MiB
    amp_bf16 vs fp32: 0.50x the speed, 0.50x the memory
    """
    if not isinstance(times_s, Mapping) or len(times_s) != 2 or set(times_s) != set(peaks_bytes):
        raise ValueError(f"times_s={times_s!r} and peaks_bytes={peaks_bytes!r} must hold the "
                         "same two precisions")
    lines = []
    for label, t in times_s.items():
        positive_number(f"times_s[{label!r}]", t)
        positive_number(f"peaks_bytes[{label!r}]", peaks_bytes[label])
        lines.append(f"{label:>9}: {t * 1e3:8.2f} ms per step, peak memory "
                     f"{peaks_bytes[label] / 2**20:6.2f} MiB")
    base, other = list(times_s)
    lines.append(f"{other} vs {base}: {times_s[base] / times_s[other]:.2f}x the speed, "
                 f"{peaks_bytes[other] / peaks_bytes[base]:.2f}x the memory")
    return "\n".join(lines)
