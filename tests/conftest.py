"""Shared fixtures: the repository root and one book build per test session.

Under pytest-xdist the tests that use the book build share one worker (``conftest.py`` at the
repository root groups them), so the book is built once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

pytest_plugins = ["fake_gpu"]  # tests/fake_gpu.py: fixtures that make torch report a GPU

ROOT = Path(__file__).resolve().parents[1]
BOOK_BUILD_TIMEOUT_S = 1500

try:  # POSIX: a lock held by one worker while it builds; released if it dies
    import fcntl
except ImportError:  # Windows: the xdist group alone keeps the build on one worker
    fcntl = None


@dataclass(frozen=True)
class BookBuild:
    """The outcome of ``jupyter-book build``: exit code, log and the HTML folder.

    ``zh_returncode`` and ``zh_log`` are the Chinese edition's, built after the English one
    into ``html / "zh"`` as ``python3 course.py build`` does (None when the English failed).
    """

    returncode: int
    log: str
    html: Path
    zh_returncode: int | None = None
    zh_log: str = ""


def _jupyter_book() -> list[str]:
    # The CLI of Jupyter Book 1.x, run with this interpreter so it uses the same environment.
    return [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build"]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def _course():
    """``course.py`` as a module (its edition settings are the build's own)."""
    spec = importlib.util.spec_from_file_location("course_for_tests", ROOT / "course.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def course_module():
    """``course.py`` as a module: its settings and commands, as the README's commands run them."""
    return _course()


def _jupyter_book_run(extra: list[str]) -> subprocess.CompletedProcess:
    cmd = [*_jupyter_book(), str(ROOT), "--warningiserror", "--nitpick", "--keep-going", *extra]
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning")
    # Kernel specs launch "python" from PATH: make it this interpreter, as course.py does.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=BOOK_BUILD_TIMEOUT_S, env=env
    )


def _build_chinese(course) -> subprocess.CompletedProcess:
    """The Chinese edition, as ``python3 course.py build`` makes it, into _build/html/zh."""
    import yaml

    config = course.edition_config(course._config(), course.ZH_LANGUAGE)
    path = course.edition_config_path(course.ZH_OUTPUT)
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), "utf-8")
    try:
        proc = _jupyter_book_run(["--config", str(path), "--path-output", str(course.ZH_OUTPUT)])
    finally:
        path.unlink(missing_ok=True)
    shutil.rmtree(course.ZH_HTML, ignore_errors=True)
    if proc.returncode == 0:
        shutil.copytree(course.ZH_OUTPUT / "_build" / "html", course.ZH_HTML)
    return proc


def _build_book() -> BookBuild:
    proc = _jupyter_book_run([])
    html = ROOT / "_build" / "html"
    if proc.returncode != 0:
        return BookBuild(proc.returncode, proc.stdout + proc.stderr, html)
    zh = _build_chinese(_course())
    return BookBuild(
        proc.returncode, proc.stdout + proc.stderr, html, zh.returncode, zh.stdout + zh.stderr
    )


@pytest.fixture(scope="session")
def book_build(tmp_path_factory) -> BookBuild:
    """Build the book once per session, strictly (warnings are errors, references checked).

    Under pytest-xdist every test that uses this fixture is in one group, so one worker
    builds. Should another worker need it anyway (``--dist load``), it waits on a lock and
    reads that build's outcome instead of building into the same folder at the same time.
    """
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _build_book()
    shared = tmp_path_factory.getbasetemp().parent  # one folder for all workers of this run
    outcome = shared / "book-build.json"
    with open(shared / "book-build.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if outcome.is_file():
            saved = json.loads(outcome.read_text(encoding="utf-8"))
            return BookBuild(**{**saved, "html": Path(saved["html"])})
        build = _build_book()
        outcome.write_text(json.dumps({**asdict(build), "html": str(build.html)}), "utf-8")
        return build


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
