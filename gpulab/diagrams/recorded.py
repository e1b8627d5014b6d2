"""Read the measurements the labs recorded, for the chapters' diagrams.

The book is built without running the labs, so a chapter reads what a lab left behind: a
record the lab attached to one of its recorded outputs (output metadata ``gpulab_record``),
a result file the lab wrote next to itself when it was run in this checkout, or else the
text the lab printed in its recorded outputs. Each reader returns ``None`` when neither is there,
and the chapter says so instead of drawing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = [
    "RECORD_KEY",
    "course_root",
    "fusion_measurements",
    "input_pipeline_measurements",
    "output_record",
    "pipeline_measurements",
]

RECORD_KEY = "gpulab_record"


def course_root() -> Path | None:
    """The course repository holding this page: the first folder with ``_toc.yml`` and
    ``notebooks/``, looking up from the working directory, then beside the package."""
    here = Path.cwd().resolve()
    package_parent = Path(__file__).resolve().parents[2]
    for folder in (here, *here.parents, package_parent):
        if (folder / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
            return folder
    return None


def _outputs(notebook: Path) -> list[tuple[str, str]]:
    """(source, printed text) of every code cell of a notebook."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        text = "".join(
            "".join(o.get("text", "")) if isinstance(o.get("text"), list) else o.get("text", "")
            for o in cell.get("outputs", [])
            if o.get("output_type") == "stream"
        )
        source = cell["source"]
        cells.append(("".join(source) if isinstance(source, list) else source, text))
    return cells


def output_record(notebook: Path, name: str):
    """The value a lab attached as ``metadata["gpulab_record"][name]`` to a recorded output.

    A lab does it with ``display(..., metadata={"gpulab_record": {name: value}})`` in the
    cell that measured ``value``; ``None`` when the notebook or the record is missing.
    """
    notebook = Path(notebook)
    if not notebook.is_file():
        return None
    for cell in json.loads(notebook.read_text(encoding="utf-8")).get("cells", []):
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get(RECORD_KEY, {})
            if name in record:
                return record[name]
    return None


_PIPE_ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)ms\s+(\d+)%\s+\d+%\s+([-\d.e]+)\s*$", re.M)


def pipeline_measurements(root) -> list[dict] | None:
    """The distributed lab's pipeline rows: ``m``, ``step_s``, ``bubble`` (and more if given).

    Read from the record the lab attached to its recorded outputs (the rows of GPipe, with
    per-stage, per-micro-batch ``forward_s`` and ``backward_s``); else from
    ``notebooks/dist_lab/pipeline.json`` when the lab has been run in this checkout (it is not
    kept in the repository); else from the table an older recording printed (step time to
    0.1 ms, bubble to 1%). ``None`` when none exists.
    """
    root = Path(root)
    recorded = output_record(root / "notebooks" / "distributed_lab.ipynb", "pipeline")
    if recorded and recorded.get("rows"):
        return recorded["rows"]
    result = root / "notebooks" / "dist_lab" / "pipeline.json"
    if result.is_file():
        return json.loads(result.read_text(encoding="utf-8"))["rows"]
    lab = root / "notebooks" / "distributed_lab.ipynb"
    if not lab.is_file():
        return None
    for _, text in _outputs(lab):
        if "bubble measured" in text:
            rows = [
                {"m": int(m), "step_s": float(ms) / 1e3, "bubble": int(pct) / 100,
                 "loss": float(loss)}
                for m, ms, pct, loss in _PIPE_ROW.findall(text)
            ]  # fmt: skip
            return rows or None
    return None


_RATE = re.compile(r"^(.+?)\s{2,}([\d,]+) samples/s$", re.M)


def input_pipeline_measurements(root) -> dict | None:
    """The mini-batch lab's starved-then-fixed input pipeline, from its recorded outputs.

    Returns
    -------
    dict or None
        ``in_memory``, ``starved``, ``workers`` (samples/s measured), ``n_workers``,
        ``batch_size`` and ``load_s`` (the simulated load time per sample, from the
        ceiling the lab printed), or ``None`` when the lab holds no such output.
    """
    lab = Path(root) / "notebooks" / "minibatches_lab.ipynb"
    if not lab.is_file():
        return None
    for source, text in _outputs(lab):
        if "starved" not in text or "ceiling set by loading alone" not in text:
            continue
        rates = {name.strip(): float(v.replace(",", "")) for name, v in _RATE.findall(text)}
        ceiling = re.search(r"loading alone: ([\d,]+) samples/s", text)
        batch = re.search(r"batch_size=(\d+)", source)
        workers = re.search(r"num_workers=(\d+), prefetch", text)
        picked = {
            key: next((v for k, v in rates.items() if word in k), None)
            for key, word in (("in_memory", "in memory"), ("starved", "starved"),
                              ("workers", "prefetch"))
        }  # fmt: skip
        if None in picked.values() or not (ceiling and batch and workers):
            return None
        return {
            **picked,
            "n_workers": int(workers.group(1)),
            "batch_size": int(batch.group(1)),
            "load_s": 1 / float(ceiling.group(1).replace(",", "")),
        }
    return None


_FUSED_ROW = re.compile(r"^(eager|fused):\s+([\d.]+) ms \(", re.M)


def fusion_measurements(root) -> dict | None:
    """The frameworks lab's eager and ``torch.compile``-fused GELU times, from its recording.

    Returns
    -------
    dict or None
        ``eager_s`` and ``fused_s`` (medians the lab printed to 0.01 ms), or ``None`` when
        the lab holds no such output (not recorded, or ``torch.compile`` was not usable).
    """
    lab = Path(root) / "notebooks" / "frameworks_lab.ipynb"
    if not lab.is_file():
        return None
    for _, text in _outputs(lab):
        times = {name: float(ms) / 1e3 for name, ms in _FUSED_ROW.findall(text)}
        if set(times) == {"eager", "fused"} and all(times.values()):
            return {"eager_s": times["eager"], "fused_s": times["fused"]}
    return None
