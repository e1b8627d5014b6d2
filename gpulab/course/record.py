"""Re-execute a lab in place and record its provenance: ``python -m gpulab record LAB.ipynb``.

This is how every committed lab output is produced — on a CPU-only machine for the CPU
record, on a GPU for the GPU record. It runs the notebook top to bottom in its own folder,
writes the outputs back, fills the cell tagged ``provenance`` with the device, software
and date, and stores the run time per device kind in the notebook's ``gpulab`` metadata.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from gpulab.course.labs import PROVENANCE_TAG
from gpulab.provenance import provenance, provenance_line

__all__ = ["record_notebook"]


@contextmanager
def _this_python_first_on_path():
    """Kernel specs launch "python" from PATH: make that the interpreter running gpulab."""
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        yield
    finally:
        os.environ["PATH"] = old


def record_notebook(path: str | Path, timeout: int = 900, kernel_name: str = "python3") -> dict:
    """Execute the notebook at ``path`` in place and stamp its provenance.

    Parameters
    ----------
    path : path
        The ``.ipynb`` file.
    timeout : int
        Seconds any one cell may run before the recording fails (nothing hangs).
    kernel_name : str
        Jupyter kernel to run it with.

    Returns
    -------
    dict
        The provenance record, with ``run_time_s`` added.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise FileNotFoundError(f"path={str(path)!r} is not a notebook file (.ipynb)")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(path.parent.resolve())}},
        store_widget_state=True,
    )
    start = time.perf_counter()
    with _this_python_first_on_path():
        client.execute()
    elapsed = time.perf_counter() - start

    record = provenance()
    record["run_time_s"] = round(elapsed, 1)
    text = f"**Provenance.** {provenance_line(record)} Run time: {elapsed:.0f} s."
    marked = [c for c in nb.cells if PROVENANCE_TAG in c.get("metadata", {}).get("tags", [])]
    if len(marked) != 1:
        raise ValueError(f"{path} needs exactly one markdown cell tagged {PROVENANCE_TAG!r}")
    marked[0].source = text
    meta = nb.metadata.setdefault("gpulab", {})
    meta.setdefault("run_time_s", {})[record["kind"]] = round(elapsed, 1)
    meta.setdefault("recorded", {})[record["kind"]] = record
    nbformat.write(nb, path)
    return record
