"""Shared fixtures: the repository root and one book build per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["fake_gpu"]  # tests/fake_gpu.py: fixtures that make torch report a GPU

ROOT = Path(__file__).resolve().parents[1]
BOOK_BUILD_TIMEOUT_S = 1500


@dataclass(frozen=True)
class BookBuild:
    """The outcome of ``jupyter-book build``: exit code, log and the HTML folder."""

    returncode: int
    log: str
    html: Path


def _jupyter_book() -> list[str]:
    # The CLI of Jupyter Book 1.x, run with this interpreter so it uses the same environment.
    return [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build"]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def book_build() -> BookBuild:
    """Build the book once per session, strictly (warnings are errors, references checked)."""
    cmd = [*_jupyter_book(), str(ROOT), "--warningiserror", "--nitpick", "--keep-going"]
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning")
    # Kernel specs launch "python" from PATH: make it this interpreter, as course.py does.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BOOK_BUILD_TIMEOUT_S,
        env=env,
    )
    return BookBuild(proc.returncode, proc.stdout + proc.stderr, ROOT / "_build" / "html")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` run only where torch sees a CUDA GPU; elsewhere they skip."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
