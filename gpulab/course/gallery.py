"""The benchmark gallery: every report in ``results/`` as a table and a figure.

Course tooling (``gpulab.course``): the book's gallery page renders the reports that
``python -m gpulab bench`` wrote, each checked against the report schema first.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpulab.measure.bench_report import MIN_SAMPLES_FOR_SPREAD, validate_report
from gpulab.units import format_rate

__all__ = ["MIN_SAMPLES_FOR_SPREAD", "gallery_table", "load_reports", "plot_reports"]


#: The units the gallery's figure draws (on one GFLOP/s or GB/s axis).
RATE_UNITS = ("FLOP/s", "B/s")


def load_reports(folder: str | Path = "results") -> list[dict]:
    """Every ``*.json`` report in ``folder``, validated, oldest first then by device.

    A report that breaks the schema raises ``ValueError`` naming its file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"folder={str(folder)!r} is not a directory of reports")
    reports = []
    for path in sorted(folder.glob("*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON: {exc}") from exc
        validate_report(report, source=str(path))
        report["_file"] = path.name
        reports.append(report)
    return sorted(reports, key=lambda r: (r["provenance"]["date"], r["provenance"]["device"]))


def _label(entry: dict) -> str:
    name = {
        "matmul": "matmul",
        "copy": "memory copy",
        "h2d": "host→device",
        "d2h": "device→host",
        "train_step": "training step",
        "fma": "FMA chains",
        "dispatch": "empty dispatch",
    }[entry["name"]]
    if entry["name"] == "matmul":
        return f"{name} {entry['dtype'].upper()} (n={entry['params']['n']})"
    if entry["name"] in ("fma", "dispatch"):  # the book's WebGPU panel
        return f"{name} {entry['dtype'].upper()}" if entry["dtype"] else name
    if entry["name"] in ("h2d", "d2h"):
        return f"{name} ({entry['params']['host_memory']})"
    if entry["name"] == "train_step":
        return f"{name} ({entry['params']['model']}, batch {entry['params']['batch']})"
    return f"{name} ({entry['params']['bytes'] / 2**20:.0f} MiB)"


def _promised(entry: dict, reference: dict) -> float | None:
    """The reference figure for one measurement, where the reference has one."""
    if entry["name"] == "matmul":
        return (reference.get("peak_flops") or {}).get(entry["dtype"])
    if entry["name"] == "copy":
        return reference.get("memory_bandwidth")
    return None


def _human(value: float, unit: str) -> str:
    if unit in ("samples/s", "dispatches/s"):
        return f"{value:,.0f} {unit}"
    return format_rate(value, unit)


def gallery_table(reports: list[dict]) -> str:
    """A Markdown table: every measurement of every report beside its reference figure.

    The device and date are given on the first row of each report.
    """
    rows = [
        "| Device, date | Measurement | Measured (median) | Spread (IQR) | Reference "
        "| Measured / reference |",
        "|---|---|---|---|---|---|",
    ]
    for report in reports:
        ref = report["reference"]
        device = report["provenance"]["device"].split(";")[0]
        for i, entry in enumerate(report["results"]):
            promised = _promised(entry, ref)
            spread = (
                f"{100 * entry['iqr_s'] / entry['median_s']:.0f}%"
                if entry["samples"] >= MIN_SAMPLES_FOR_SPREAD
                else f"— ({entry['samples']} sample{'s' if entry['samples'] > 1 else ''})"
            )
            if promised:
                ref_text = f"{_human(promised, entry['unit'])} ({ref['kind']})"
                ratio = f"{100 * entry['value'] / promised:.0f}%"
            else:
                ref_text, ratio = "—", "—"
            where = f"**{device}**, {report['provenance']['date']}" if i == 0 else ""
            rows.append(
                f"| {where} | {_label(entry)} | {_human(entry['value'], entry['unit'])} "
                f"| {spread} | {ref_text} | {ratio} |"
            )
    return "\n".join(rows)


def plot_reports(reports: list[dict]):
    """One panel per report: each rate measured, beside its reference where there is one.

    Measured bars are solid; reference bars are hatched and labelled with their kind
    (``datasheet`` or ``estimate``), so a promise never reads as a measurement.
    """
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from gpulab.labkit.plotting import COLORS

    if not reports:
        raise ValueError("reports=[] is empty: nothing to plot")
    bars = [max(1, sum(e["unit"] in RATE_UNITS for e in r["results"])) for r in reports]
    fig, axes = plt.subplots(
        len(reports),
        1,
        figsize=(8, 1.2 + 0.55 * sum(bars) + 0.5 * len(reports)),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": bars},
    )
    for ax, report in zip(axes[:, 0], reports, strict=True):
        ref = report["reference"]
        rows = [(e, _promised(e, ref)) for e in report["results"] if e["unit"] in RATE_UNITS]
        labels = []
        for i, (entry, promised) in enumerate(rows):
            scale = 1e9
            ax.barh(2 * i, entry["value"] / scale, color=COLORS["cpu"], zorder=3)
            if promised:
                ax.barh(
                    2 * i + 0.8,
                    promised / scale,
                    color=COLORS["prediction"],
                    hatch="//",
                    edgecolor="white",
                    zorder=3,
                )
            labels.append((2 * i + 0.4, _label(entry)))
        ax.set_yticks([y for y, _ in labels], [text for _, text in labels], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("GFLOP/s (matmul) or GB/s (copy, transfers)")
        ax.set_title(
            f"{report['provenance']['device'].split(';')[0]}, {report['provenance']['date']}",
            fontsize=9,
        )
    handles = [
        mpl.patches.Patch(color=COLORS["cpu"], label="measured (median)"),
        mpl.patches.Patch(
            facecolor=COLORS["prediction"],
            hatch="//",
            edgecolor="white",
            label="reference: datasheet peak or CPU estimate (not measured)",
        ),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8)
    return fig
