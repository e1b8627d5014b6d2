"""Run a notebook to its end in a kernel started with a given environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat


def run_notebook(
    nb: nbformat.NotebookNode, cwd: Path, env: dict[str, str], timeout_s: int = 300
) -> nbformat.NotebookNode:
    """Execute ``nb`` in place in a kernel started in ``cwd`` with ``env``; return it.

    ``timeout_s`` bounds each cell (nbclient's ``timeout``), so a cell that hangs fails the
    test instead of stalling it; the kernel is shut down however the run ends.
    """
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(cwd))
    try:
        NotebookClient(nb, km=km, timeout=timeout_s).execute()
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    return nb


def run_with_this_checkout(
    nb: nbformat.NotebookNode, root: Path, cwd: Path, timeout_s: int = 300
) -> nbformat.NotebookNode:
    """:func:`run_notebook` with this interpreter and ``root``'s gpulab."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(root)  # the kernel imports this checkout's gpulab
    return run_notebook(nb, cwd, env, timeout_s)
