"""Re-execute a lab and record its provenance: ``python -m gpulab record LAB.ipynb``.

This is how every committed lab output is produced — on a CPU-only machine for the CPU
recording, on a GPU for the GPU recording. It runs the notebook top to bottom, fills the
cell tagged ``provenance`` with the device, software and date, and stores the run time and
provenance per device kind in the lab's ``gpulab`` metadata.

On a CPU the outputs are written back into the lab itself. On any other device the lab runs
in a temporary copy of its folder (so the files it writes beside itself keep their CPU
versions) and the executed copy is saved as ``notebooks/recordings/<kind>/NAME_lab.ipynb``
(:mod:`gpulab.course.recordings`); the lab keeps its CPU outputs, so that strict nbval on
CPU-only machines still checks them.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from gpulab.course.labs import PROVENANCE_TAG
from gpulab.course.recordings import RECORDINGS_FOLDER, recording_path
from gpulab.measure.provenance import provenance, provenance_line

__all__ = ["RecordingError", "record_all", "record_notebook"]


class RecordingError(RuntimeError):
    """A lab failed while being recorded; the message names the lab and the cell."""


@contextmanager
def _kernel_environment():
    """What the lab's kernel inherits: this interpreter first on PATH (kernel specs launch
    "python" from PATH), and OpenMP threads that wait passively unless told otherwise (as in
    the test suite, ``conftest.py``: spinning waiters made a loaded 2-core machine 10-30x
    slower, measured). Both are restored afterwards."""
    old = {key: os.environ.get(key) for key in ("PATH", "OMP_WAIT_POLICY")}
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + (old["PATH"] or "")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_notebook(path: str | Path, timeout_s: int = 900, kernel_name: str = "python3") -> dict:
    """Execute the lab at ``path`` on this machine and stamp its provenance.

    Parameters
    ----------
    path : path
        The ``.ipynb`` file.
    timeout_s : int
        Seconds any one cell may run before the recording fails (nothing hangs).
    kernel_name : str
        Jupyter kernel to run it with.

    Returns
    -------
    dict
        The provenance record, with ``run_time_s`` and ``path`` (where the outputs went) added.
    """
    import nbformat

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise FileNotFoundError(f"path={str(path)!r} is not a notebook file (.ipynb)")
    nb = nbformat.read(path, as_version=4)
    marked = _provenance_cells(nb, path)
    record = provenance()
    kind = record["kind"]
    target = recording_path(path, kind)
    if kind == "cpu":
        elapsed = _execute(nb, path, path.parent, timeout_s, kernel_name)
    else:
        with tempfile.TemporaryDirectory(prefix="gpulab-record-") as tmp:
            work = Path(tmp) / path.parent.name
            ignore = shutil.ignore_patterns(RECORDINGS_FOLDER, ".ipynb_checkpoints")
            shutil.copytree(path.parent, work, ignore=ignore)
            elapsed = _execute(nb, path, work, timeout_s, kernel_name)

    record["run_time_s"] = round(elapsed, 1)
    text = f"**Provenance.** {provenance_line(record)} Run time: {elapsed:.0f} s."
    marked[0].source = text
    _stamp(nb, kind, record)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    if target != path:  # the lab itself keeps its CPU outputs and learns of this recording
        lab = nbformat.read(path, as_version=4)
        _stamp(lab, kind, record)
        nbformat.write(lab, path)
    return {**record, "path": str(target)}


def _execute(nb, path: Path, folder: Path, timeout_s: int, kernel_name: str) -> float:
    """Run ``nb`` with ``folder`` as its working folder; seconds taken, or a RecordingError."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(folder.resolve())}},
        store_widget_state=True,
    )
    start = time.perf_counter()
    with _kernel_environment():
        try:
            client.execute()
        except CellExecutionError as exc:
            index = _failed_cell(nb)
            where = f"cell {index}" if index is not None else "a cell"
            raise RecordingError(
                f"{path}: {where} failed while recording ({exc.ename}: {exc.evalue}); "
                "nothing was written to the notebook"
            ) from None
    return time.perf_counter() - start


def _stamp(nb, kind: str, record: dict) -> None:
    meta = nb.metadata.setdefault("gpulab", {})
    meta.setdefault("run_time_s", {})[kind] = record["run_time_s"]
    meta.setdefault("recorded", {})[kind] = record


def _provenance_cells(nb, path: Path) -> list:
    """The one cell tagged ``provenance``, checked before anything runs."""
    marked = [c for c in nb.cells if PROVENANCE_TAG in c.get("metadata", {}).get("tags", [])]
    if len(marked) != 1:
        raise ValueError(f"{path} needs exactly one markdown cell tagged {PROVENANCE_TAG!r}")
    return marked


def _failed_cell(nb) -> int | None:
    """Index of the first code cell whose outputs hold an error, as Jupyter numbers cells."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(
            o.get("output_type") == "error" for o in cell.get("outputs", [])
        ):
            return index
    return None


def _report_name(report: dict) -> str:
    """``results/`` file name for a bench report: date, then the device in lowercase words."""
    words = re.findall(r"[a-z0-9]+", report["provenance"]["device"].split(";")[0].lower())
    return f"{report['provenance']['date']}-{'-'.join(words[:8]) or 'device'}.json"


def record_all(
    notebooks: str | Path = "notebooks",
    *,
    results: str | Path | None = "results",
    timeout_s: int = 900,
    progress=print,
) -> list[dict]:
    """Record every lab in ``notebooks`` on this machine, then write a bench report.

    Every lab's provenance cell is checked before the first one runs, so a lab that could
    not be stamped fails in seconds, not after the others. The labs then run one after
    another; the first that fails stops the run with a :class:`RecordingError` naming the
    lab and the cell, and the labs after it are left as they were. Last,
    ``python -m gpulab bench`` measures this machine and its report goes into ``results``
    (skipped when ``results`` is None).

    Returns
    -------
    list of dict
        The provenance records of the labs, in the order they ran.
    """
    import json

    import nbformat

    from gpulab._checks import path as check_path
    from gpulab._checks import positive_int

    folder = check_path("notebooks", notebooks, kind="dir")
    timeout_s = positive_int("timeout_s", timeout_s)
    labs = sorted(folder.glob("*_lab.ipynb"))
    if not labs:
        raise ValueError(f"notebooks={str(notebooks)!r} holds no labs (*_lab.ipynb)")
    for lab in labs:
        _provenance_cells(nbformat.read(lab, as_version=4), lab)
    records = []
    for lab in labs:
        progress(f"recording {lab.name} ...")
        record = record_notebook(lab, timeout_s=timeout_s)
        progress(f"  {record['device']}: {record['run_time_s']} s")
        records.append(record)
    if results is not None:
        from gpulab.measure.bench_report import run_bench

        out_dir = check_path("results", results)
        progress("measuring the standard benchmarks (python -m gpulab bench) ...")
        report = run_bench(notes="recorded with python -m gpulab record --all")
        out_dir.mkdir(parents=True, exist_ok=True)
        out = out_dir / _report_name(report)
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        progress(f"  wrote {out}")
    return records
