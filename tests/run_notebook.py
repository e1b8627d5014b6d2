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
    test instead of stalling it. nbclient starts and owns the kernel (an asynchronous kernel
    manager), so it notices within a second or two when the kernel dies (``DeadKernelError``)
    and shuts the kernel down however the run ends. A blocking kernel manager handed in from
    outside would not do: its client waits for output without a timeout, and a killed kernel
    then hangs the run, deaf even to SIGTERM.
    """
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3")
    client.execute(env=env, cwd=str(cwd))
    return nb


def run_with_this_checkout(
    nb: nbformat.NotebookNode, root: Path, cwd: Path, timeout_s: int = 300
) -> nbformat.NotebookNode:
    """:func:`run_notebook` with this interpreter and ``root``'s gpulab."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(root)  # the kernel imports this checkout's gpulab
    return run_notebook(nb, cwd, env, timeout_s)
