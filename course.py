#!/usr/bin/env python3
"""Install what the course needs, build the book, run the tests.

    python3 course.py build    # install everything (first time), build the book into _build/html
                               # and its Chinese edition into _build/html/zh
    python3 course.py test     # install everything (first time), run the whole test suite
    python3 course.py install  # install everything, nothing more

    python3 course.py build --edition en       # one edition only (en or zh)
    python3 course.py translations             # refresh the Chinese edition's catalogues
                                               # (locale/zh_CN) from the English sources

    python3 course.py lighthouse               # Lighthouse on every page of both editions
                                               # (the test suite checks three of them)

    python3 course.py build --solutions-open   # instructors' copy, every worked solution
                                               # expanded: _build/instructor/_build/html

Everything after ``test`` goes to pytest, e.g. ``python3 course.py test -k specs -x``
(``python3 course.py test -- ARGS`` says the same). The suite runs on one pytest worker per
CPU core (pytest-xdist); ``-n 0`` runs it in one process. Any other unknown argument is an
error.

The course runs in the virtual environment or conda environment that runs this script, if it
is one; otherwise in ``.venv``, made the first time with access to the packages already in
the Python that runs this script (so an existing torch is reused) and rebuilt when it is
unusable (no interpreter, an interpreter that does not start, no pip of its own: what a
creation that stopped half-way leaves). A conda environment counts only when it is the
activated one and not conda's ``base``: installing into ``base`` (often activated without
being asked for) would change the conda installation itself.

torch is installed only when missing: a CUDA build where an NVIDIA GPU is present, the CPU
build otherwise (PyTorch's CPU index, falling back to the default index). Where a GPU is
present, the CuPy wheel matching torch's CUDA major version is added. Once the requirements
are installed, a stamp (a hash of requirements.txt and pyproject.toml) in the environment
skips the installation, so later runs need no network until those files change, or until
torch or the course package is uninstalled from it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import venv
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP_NAME = ".gpulab-requirements.sha256"
# The instructors' build: a copy of _config.yml with one override, written next to it (the
# config's relative paths, such as local_extensions, are resolved from its folder).
INSTRUCTOR_CONFIG = ROOT / "_config.instructor.yml"
INSTRUCTOR_OUTPUT = ROOT / "_build" / "instructor"  # jupyter-book adds _build/html below it
# sphinx-togglebutton collapses what matches this selector (its default is
# ".toggle, .admonition.dropdown"); leaving sphinx-exercise solutions out shows them expanded.
SOLUTIONS_OPEN_SELECTOR = ".toggle, .admonition.dropdown:not(.solution)"
# The Chinese edition (locale/README.md): built with its own copy of _config.yml into
# _build/zh/_build/html, then copied into the English output as _build/html/zh.
ZH_OUTPUT = ROOT / "_build" / "zh"
ZH_HTML = ROOT / "_build" / "html" / "zh"
ZH_LANGUAGE = "zh_CN"
ZH_TITLE = "gpulab：GPU 如何加速深度学习训练"
GETTEXT_OUTPUT = ROOT / "_build" / "i18n"  # jupyter-book adds _build/gettext below it
GETTEXT_TEMPLATES = GETTEXT_OUTPUT / "_build" / "gettext"
EDITIONS = ("en", "zh", "both")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INSTALL_TIMEOUT_S = 3600
BUILD_TIMEOUT_S = 1800
# The chapters' build-time outputs are cached, keyed by their code alone. What they show also
# comes from the package, the labs' recordings and the benchmark reports (read and glued at
# build time), which that key does not cover: a cache older than any of these is dropped
# before a build. The cache is where myst-nb puts it when _config.yml names none (beside the
# HTML output, _build/html); the instructors' build is pointed at the same one.
BUILD_CACHE = ROOT / "_build" / ".jupyter_cache"
CACHE_INPUTS = ("gpulab", "notebooks", "results", "_config.yml")
TEST_TIMEOUT_S = 3600
# npm's Lighthouse for tests/test_lighthouse.py (package.json and lockfile there).
LIGHTHOUSE_DIR = ROOT / "tests" / "lighthouse"
LIGHTHOUSE_STAMP_NAME = ".gpulab-lockfile.sha256"
LIGHTHOUSE_TEST = "tests/test_lighthouse.py"
# npm's MathJax, with which the build typesets the formulas as SVG (book/_ext/math_svg.py).
MATH_RENDERER_DIR = ROOT / "book" / "_ext" / "node"
PROBE_TIMEOUT_S = 120
IMPORT_PROBE_TIMEOUT_S = 300  # a first ``import torch`` can take minutes on a cold disk
# pytest-xdist: one worker per core. Which tests share a worker (the book build and the
# browser check; the cells of one notebook) is set in pyproject.toml and tests/conftest.py.
PARALLEL_PYTEST_ARGS = ["-n", "auto"]
# Run by an environment's Python: its prefix, and where its pip comes from.
VENV_PROBE = "import sys, pip; print(sys.prefix); print(pip.__file__)"
# Whether an environment can build the course package (``-e .``) with no download:
# setuptools >= 64 (PEP 660 editable installs), with its own bdist_wheel from 70.1 on.
BUILD_BACKEND_PROBE = """\
import setuptools
version = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
assert version >= (64, 0), version
if version < (70, 1):
    import wheel
"""
BUILD_BACKEND_REQUIREMENT = "setuptools>=70.1"
# Whether what the stamp vouches for is still there: torch and the course package, found
# (not imported: that takes seconds) outside the current folder, which is not the environment.
# A folder left behind by an uninstall is a namespace package, with no origin.
INSTALLED_PROBE = """\
import importlib.metadata, importlib.util, sys
sys.path = [p for p in sys.path if p not in ("", ".")]
torch = importlib.util.find_spec("torch")
assert torch is not None and torch.origin, "torch is not installed"
importlib.metadata.distribution("gpulab")
"""


def say(message: str) -> None:
    print(f"[course] {message}", flush=True)


# --------------------------------------------------------------------------- environments


@dataclass(frozen=True)
class Environment:
    """Where the course's packages go.

    ``python`` is ``None`` for the project's own ``.venv`` (made or repaired on demand).
    """

    python: Path | None
    prefix: Path  # the requirements stamp lives here
    description: str


def _same_path(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def is_conda_base(prefix: Path, environ: Mapping[str, str]) -> bool:
    """Whether ``prefix`` is a conda (or mamba) installation's root, its ``base`` environment."""
    if environ.get("CONDA_DEFAULT_ENV") == "base" and _same_path(
        environ.get("CONDA_PREFIX", ""), prefix
    ):
        return True
    if (prefix / "condabin").is_dir():  # only the root of a conda installation has it
        return True
    roots = [environ.get("CONDA_ROOT"), environ.get("MAMBA_ROOT_PREFIX")]
    if environ.get("CONDA_EXE"):  # <root>/bin/conda or <root>\Scripts\conda.exe
        roots.append(str(Path(environ["CONDA_EXE"]).parent.parent))
    return any(root and _same_path(root, prefix) for root in roots)


def conda_env_name(prefix: Path, environ: Mapping[str, str]) -> str | None:
    """The name of the activated conda environment that ``prefix`` is, if it is one and not base.

    ``CONDA_PREFIX`` alone proves nothing: a shell keeps it (often conda's ``base``, activated
    at every login) while another Python runs this script.
    """
    conda_prefix = environ.get("CONDA_PREFIX")
    if not conda_prefix or not _same_path(conda_prefix, prefix):
        return None  # this interpreter is not the activated environment's
    if not (prefix / "conda-meta").is_dir():
        return None  # not a conda environment at all
    if is_conda_base(prefix, environ):
        return None
    return environ.get("CONDA_DEFAULT_ENV") or prefix.name


def choose_environment(
    prefix: Path | None = None,
    base_prefix: Path | None = None,
    environ: Mapping[str, str] | None = None,
    executable: Path | None = None,
) -> Environment:
    """The environment the course installs into (defaults: the running interpreter's)."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    base_prefix = Path(sys.base_prefix) if base_prefix is None else base_prefix
    environ = os.environ if environ is None else environ
    executable = Path(sys.executable) if executable is None else executable
    if not _same_path(prefix, base_prefix):
        return Environment(executable, prefix, f"the active virtual environment {prefix}")
    name = conda_env_name(prefix, environ)
    if name is not None:
        return Environment(executable, prefix, f"the active conda environment {name!r}")
    return Environment(None, VENV, f"the course's own environment {VENV}")


def venv_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _is_inside(child: str | os.PathLike, parent: Path) -> bool:
    try:
        return Path(child).resolve().is_relative_to(parent.resolve())
    except OSError:
        return False


def venv_problem(path: Path) -> str | None:
    """Why the virtual environment at ``path`` cannot be used as it is; ``None`` if it can."""
    if not path.exists():
        return "it does not exist"
    if not (path / "pyvenv.cfg").is_file():
        return "it has no pyvenv.cfg (its creation stopped half-way)"
    python = venv_python(path)
    if not python.exists():  # also a link to an interpreter that was removed
        return f"{python} is missing or a broken link"
    try:
        proc = subprocess.run(
            [str(python), "-c", VENV_PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} does not run ({exc})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{python} does not run, or finds no pip ({last})"
    lines = proc.stdout.splitlines()
    if len(lines) != 2 or not _same_path(lines[0], path):
        return f"{python} does not belong to it (its sys.prefix is {lines[:1]})"
    if not _is_inside(lines[1], path):
        return "pip is not installed in it (its creation stopped before pip)"
    return None


def create_venv(path: Path, clear: bool) -> None:
    venv.EnvBuilder(with_pip=True, system_site_packages=True, clear=clear).create(path)


def ensure_venv(path: Path = VENV, create: Callable[[Path, bool], None] = create_venv) -> Path:
    """The interpreter of the virtual environment at ``path``, made or rebuilt when unusable."""
    problem = venv_problem(path)
    if problem is None:
        return venv_python(path)
    exists = path.exists()
    if exists:
        say(f"rebuilding the virtual environment in {path}: {problem}")
    else:
        say(f"creating a virtual environment in {path}")
    try:
        create(path, exists)
    except Exception as exc:  # e.g. Debian without the python3-venv package
        sys.exit(
            f"[course] could not create {path}: {exc}. Install your system's venv "
            "package (Debian/Ubuntu: apt install python3-venv) or run this script "
            "from an activated virtual environment."
        )
    problem = venv_problem(path)
    if problem is not None:
        sys.exit(
            f"[course] the virtual environment in {path} is still unusable: {problem}. "
            "Install your system's venv package (Debian/Ubuntu: apt install python3-venv) "
            "or run this script from an activated virtual environment."
        )
    return venv_python(path)


# --------------------------------------------------------------------------- installing


def run(cmd: list[str | Path], timeout: int, check: bool = True, **kwargs) -> int:
    env = dict(os.environ, **kwargs.pop("env", {}))
    cwd = kwargs.pop("cwd_override", ROOT)
    bin_dir = str(Path(cmd[0]).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")  # kernels find this env's python
    try:
        proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        sys.exit(f"[course] gave up after {timeout} s: {' '.join(map(str, cmd))}")
    if check and proc.returncode != 0:
        sys.exit(f"[course] failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc.returncode


def _probe(python: Path, code: str, what: str) -> subprocess.CompletedProcess | None:
    """Run ``code`` with ``python``; ``None``, after saying why, if it hung or could not start."""
    try:
        return subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=IMPORT_PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        why = f"did not finish in {IMPORT_PROBE_TIMEOUT_S} s"
    except OSError as exc:
        why = f"could not be run ({exc})"
    say(f"gave up checking for {what} with {python} (it {why}): taken as missing")
    return None


def python_has(python: Path, code: str, what: str = "a module") -> bool:
    """Whether ``code`` runs without error in ``python``; a probe that hangs counts as no."""
    proc = _probe(python, code, what)
    return proc is not None and proc.returncode == 0


def torch_cuda_major(python: Path) -> str | None:
    """The CUDA major version torch was built for (``"12"``); ``None`` for a CPU build, or if
    torch cannot be imported or its import hangs."""
    proc = _probe(python, "import torch; print(torch.version.cuda or '')", "torch's CUDA version")
    version = proc.stdout.strip() if proc is not None and proc.returncode == 0 else ""
    return version.split(".")[0] if version else None


def has_nvidia_gpu() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_torch(python: Path) -> None:
    if python_has(python, "import torch", "torch"):
        return
    pip = [python, "-m", "pip", "install"]
    if has_nvidia_gpu():
        say("installing torch (CUDA build: an NVIDIA GPU is present)")
        run([*pip, "torch"], INSTALL_TIMEOUT_S)
        return
    say("installing torch (CPU build: no NVIDIA GPU found)")
    quick = ["--timeout", "20", "--retries", "1"]
    if run([*pip, *quick, "torch", "--index-url", TORCH_CPU_INDEX], INSTALL_TIMEOUT_S, check=False):
        say("PyTorch's CPU index is not reachable; installing torch from the default index")
        run([*pip, "torch"], INSTALL_TIMEOUT_S)


def ensure_cupy(python: Path) -> None:
    """Add the CuPy wheel for torch's CUDA major version, on GPU machines only."""
    if not has_nvidia_gpu() or python_has(python, "import cupy", "CuPy"):
        return
    major = torch_cuda_major(python)
    if major is None:
        say("torch reports no CUDA version, so CuPy is not installed; install a CUDA build first")
        return
    say(f"installing cupy-cuda{major}x to match torch's CUDA {major}")
    run([python, "-m", "pip", "install", f"cupy-cuda{major}x"], INSTALL_TIMEOUT_S)


#: The CUDA majors numba-cuda ships libraries for: the extras ``kernels-cu12`` and
#: ``kernels-cu13`` of pyproject.toml, one of which a GPU machine gets (torch's major).
NUMBA_CUDA_MAJORS = ("12", "13")


def ensure_numba_cuda(python: Path, no_isolation: list[str]) -> None:
    """Add Numba's CUDA target (numba-cuda, with the CUDA libraries of torch's CUDA major:
    NVVM, NVRTC, nvJitLink) on GPU machines only; Numba's own ``numba.cuda`` is deprecated
    and a pip machine has no NVVM for it."""
    if not has_nvidia_gpu() or python_has(python, "import numba_cuda", "numba-cuda"):
        return
    major = torch_cuda_major(python)
    if major not in NUMBA_CUDA_MAJORS:
        say(
            f"torch reports CUDA {major or 'none'}, for which numba-cuda has no libraries "
            f"(it has them for CUDA {' and '.join(NUMBA_CUDA_MAJORS)}), so Numba's CUDA target "
            "is not installed; the kernels lab says what it skips"
        )
        return
    say(f"installing numba-cuda for CUDA {major} (the extra kernels-cu{major}) to match torch")
    run(
        [python, "-m", "pip", "install", *no_isolation, "-e", f".[kernels-cu{major}]"],
        INSTALL_TIMEOUT_S,
    )


def build_isolation_args(python: Path) -> list[str]:
    """``["--no-build-isolation"]`` once ``python`` can build the course package by itself.

    With build isolation pip downloads setuptools into a throw-away environment for every
    ``-e .``, which fails offline. The environment gets its own setuptools instead (once,
    while the first installation is online anyway); if even that fails, isolation stays.
    """
    what = "setuptools"
    if python_has(python, BUILD_BACKEND_PROBE, what):
        return ["--no-build-isolation"]
    say(f"installing {BUILD_BACKEND_REQUIREMENT} so that later installs build offline")
    pip = [python, "-m", "pip", "install", BUILD_BACKEND_REQUIREMENT]
    if run(pip, INSTALL_TIMEOUT_S, check=False) == 0 and python_has(
        python, BUILD_BACKEND_PROBE, what
    ):
        return ["--no-build-isolation"]
    return []


def requirements_digest(root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((root / name).read_bytes())
    return digest.hexdigest()


def ensure_requirements(python: Path, stamp: Path, root: Path = ROOT) -> bool:
    """Install torch and requirements.txt into ``python``'s environment, unless ``stamp`` says
    they are installed already for the current requirements and torch and the course package
    are still there (an uninstall since leaves the stamp behind). Returns whether it installed.
    """
    digest = requirements_digest(root)
    if (
        stamp.is_file()
        and stamp.read_text().strip() == digest
        and python_has(python, INSTALLED_PROBE, "torch and gpulab")
    ):
        return False
    ensure_torch(python)
    no_isolation = build_isolation_args(python)
    say("installing the course's requirements (requirements.txt)")
    run(
        [python, "-m", "pip", "install", *no_isolation, "-r", root / "requirements.txt"],
        INSTALL_TIMEOUT_S,
    )
    ensure_cupy(python)
    ensure_numba_cuda(python, no_isolation)
    stamp.write_text(digest + "\n")
    return True


def ensure_environment() -> Path:
    """The interpreter the course runs in, with everything installed."""
    env = choose_environment()
    python = env.python if env.python is not None else ensure_venv(VENV)
    ensure_requirements(python, env.prefix / STAMP_NAME)
    ensure_lighthouse()
    ensure_math_renderer()
    return python


def ensure_lighthouse(folder: Path = LIGHTHOUSE_DIR) -> bool:
    """Install npm's Lighthouse for tests/test_lighthouse.py (``npm ci`` from its lockfile).

    Skipped, with a sentence, where npm is missing (the test then skips, or fails in CI); done
    again only when the lockfile changes. Returns whether it installed.
    """
    return ensure_npm_folder(
        folder, "Lighthouse for the page check", "the Lighthouse check is skipped (or fails in CI)"
    )


def ensure_math_renderer(folder: Path = MATH_RENDERER_DIR) -> bool:
    """Install MathJax for the build (book/_ext/math_svg.py), which typesets the formulas as SVG;
    without it the pages leave them to MathJax in the reader's browser."""
    return ensure_npm_folder(
        folder, "MathJax for the build", "formulas are typeset in the reader's browser instead"
    )


def ensure_npm_folder(folder: Path, what: str, otherwise: str) -> bool:
    """``npm ci`` in ``folder`` from its lockfile, again only when the lockfile changes; where
    npm is missing or fails, a sentence saying ``otherwise``. Returns whether it installed."""
    lock = folder / "package-lock.json"
    stamp = folder / "node_modules" / LIGHTHOUSE_STAMP_NAME
    digest = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else ""
    if not digest or (stamp.is_file() and stamp.read_text().strip() == digest):
        return False
    npm = shutil.which("npm")
    if npm is None:
        say(f"npm is not installed: {otherwise} (Debian: apt-get install npm)")
        return False
    say(f"installing {what} (npm ci in {folder.relative_to(ROOT)})")
    command = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"]
    if run(command, INSTALL_TIMEOUT_S, check=False, cwd_override=folder) != 0:
        say(f"npm ci failed: {otherwise}")
        return False
    stamp.write_text(digest + "\n")
    return True


# --------------------------------------------------------------------------- commands


def instructor_config(config: dict) -> dict:
    """``config`` (the parsed ``_config.yml``) with every worked solution shown expanded.

    The chapters' build-time outputs are reused from the readers' build cache.
    """
    sphinx = dict(config.get("sphinx") or {})
    sphinx["config"] = {
        **(sphinx.get("config") or {}),
        "togglebutton_selector": SOLUTIONS_OPEN_SELECTOR,
        # The labs' worked solutions (book/_ext/solution_cells.py) open too.
        "gpulab_solutions_open": True,
        # No Chinese edition is built beside the instructors' copy: no link to one.
        "gpulab_language_switch": False,
    }
    execute = {**(config.get("execute") or {}), "cache": str(BUILD_CACHE)}
    return {**config, "sphinx": sphinx, "execute": execute}


def _mtimes(path: Path) -> list[float]:
    if path.is_file():
        return [path.stat().st_mtime]
    return [
        p.stat().st_mtime
        for p in path.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
    ]


def drop_stale_build_cache(
    cache: Path = BUILD_CACHE, inputs: tuple[str, ...] = CACHE_INPUTS, root: Path = ROOT
) -> bool:
    """Remove the chapters' execution cache if anything in ``inputs`` changed after it.

    A chapter whose code did not change is served from the cache, so the test is against the
    oldest execution the cache holds (``executed/``), not the last build. Returns whether the
    cache was removed.
    """
    if not cache.exists():
        return False
    cached = min(_mtimes(cache / "executed") or _mtimes(cache) or [0.0])
    changed = [name for name in inputs if (root / name).exists()
               and max(_mtimes(root / name), default=0.0) > cached]  # fmt: skip
    if not changed:
        return False
    say(f"{', '.join(changed)} changed since the chapters last ran: running them again")
    shutil.rmtree(cache)
    # Sphinx's record of the pages it read goes too: with it, a page whose text is unchanged
    # would not be read again, and so would keep its old outputs.
    for doctrees in (
        cache.parent / ".doctrees",
        INSTRUCTOR_OUTPUT / "_build" / ".doctrees",
        ZH_OUTPUT / "_build" / ".doctrees",
    ):
        shutil.rmtree(doctrees, ignore_errors=True)
    return True


# --------------------------------------------------------------------------- building

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FAILED_PAGE = re.compile(r"^(?P<page>\S.*?): WARNING: Executing notebook failed: \w+", re.M)
_FAILED_SOURCE = re.compile(
    r"An error occurred while executing the following cell:\n-+\n(?P<source>.*?)\n-+\n", re.S
)
_FAILED_AT = re.compile(r"^Cell In\[(?P<cell>\d+)\], line (?P<line>\d+)", re.M)
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception|Interrupt)\b.*)$")


def _page_name(page: str) -> str:
    """``page`` relative to the repository when it lies inside it."""
    try:
        return str(Path(page).resolve().relative_to(ROOT))
    except (OSError, ValueError):
        return page


def failed_cells(log: str) -> list[str]:
    """One line per failing chapter cell in a build's ``log``: page, cell and error.

    myst-nb logs a failing cell as ``<page>: WARNING: Executing notebook failed: ...``
    followed by the cell's source and its traceback, which end with the error; the
    traceback's ``Cell In[n], line k`` names the code cell (the n-th run, so the n-th code
    cell of the page) and the line of it that failed.
    """
    text = _ANSI.sub("", log)
    starts = list(_FAILED_PAGE.finditer(text))
    lines = []
    for start, after in zip(starts, [*starts[1:], None], strict=False):
        block = text[start.end() : after.start() if after else None]
        block = block.split("[mystnb.exec]", 1)[0]
        errors = [m.group(1) for line in block.splitlines() if (m := _ERROR_LINE.match(line))]
        # the cell's own error comes last; nbclient's CellExecutionError wraps it
        error = next((e for e in reversed(errors) if not e.startswith("CellExecutionError")), "")
        where = _page_name(start.group("page"))
        at, source = _FAILED_AT.search(block), _FAILED_SOURCE.search(block)
        if at:
            where += f", code cell {at.group('cell')}"
            cell_lines = source.group("source").splitlines() if source else []
            line = int(at.group("line"))
            if 0 < line <= len(cell_lines):
                where += f" (line {line}: {cell_lines[line - 1].strip()})"
        lines.append(f"{where}: {error or 'see the log above'}")
    return lines


def run_logged(cmd: list[str | Path], timeout: int) -> tuple[int, str]:
    """Run ``cmd`` like :func:`run`, showing its output as it comes; return (status, output)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(cmd[0]).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    output: list[str] = []

    def echo() -> None:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            output.append(line)

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit(f"[course] gave up after {timeout} s: {' '.join(map(str, cmd))}")
    reader.join(timeout=10)
    return proc.returncode, "".join(output)


def run_build(cmd: list[str | Path]) -> int:
    """Run a book build; if chapter cells failed, end by naming each (page, cell, error)."""
    status, log = run_logged(cmd, BUILD_TIMEOUT_S)
    failures = failed_cells(log) if status else []
    if failures:
        say("the build failed because a chapter cell raised an error:")
        for failure in failures:
            print(f"  {failure}", flush=True)
    return status


def edition_config(config: dict, language: str) -> dict:
    """``config`` (the parsed ``_config.yml``) for the edition in ``language``.

    The edition reuses the English build's execution cache (the chapters' code is the same),
    and searches with Sphinx's Chinese word splitter (jieba).
    """
    sphinx = dict(config.get("sphinx") or {})
    extra = {"language": language}
    titled = {}
    if language.startswith("zh"):
        extra["html_search_language"] = "zh"
        titled["title"] = ZH_TITLE
    sphinx["config"] = {**(sphinx.get("config") or {}), **extra}
    execute = {**(config.get("execute") or {}), "cache": str(BUILD_CACHE)}
    return {**config, **titled, "sphinx": sphinx, "execute": execute}


def jupyter_book_command(python: Path) -> list:
    code = "from jupyter_book.cli.main import main; main()"
    return [python, "-c", code, "build", ROOT, "--warningiserror", "--nitpick", "--keep-going"]


def edition_config_path(output: Path) -> Path:
    """Where the configuration of a build into ``output`` is written while it runs: beside
    _config.yml (its relative paths, such as local_extensions, are resolved from its folder),
    one file per output, so that two builds at once do not share one."""
    return ROOT / f"_config.{output.name}.yml"


def _with_config(config: dict, command: list, output: Path) -> int:
    """Build with ``command`` and ``config`` written beside _config.yml, into ``output``."""
    import yaml  # installed with jupyter-book, which a build needs anyway

    path = edition_config_path(output)
    # In the order written: the widget scripts must load in _config.yml's order (RequireJS first).
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), "utf-8")
    try:
        return run_build([*command, "--config", path, "--path-output", output])
    finally:
        path.unlink(missing_ok=True)


def _config() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def build_chinese(python: Path) -> int:
    """The Chinese edition into _build/zh/_build/html, then copied to _build/html/zh."""
    say("building the Chinese edition into _build/html/zh (warnings are errors)")
    config = edition_config(_config(), ZH_LANGUAGE)
    code = _with_config(config, jupyter_book_command(python), ZH_OUTPUT)
    built = ZH_OUTPUT / "_build" / "html"
    if code == 0 and built.is_dir():
        shutil.rmtree(ZH_HTML, ignore_errors=True)
        shutil.copytree(built, ZH_HTML)
    return code


def extract_messages(python: Path) -> int:
    """The English messages as gettext templates in _build/i18n/_build/gettext, one per page,
    plus ``ui.pot`` for the sentences the book's extensions write (the live calculators, the
    labs' "Worked solution" boxes and "Recorded outputs" notes, the self-check widget) and
    ``selfchecks.pot`` for the chapters' self-check questions (``gpulab.course.selfchecks``).

    Only what authors wrote is extracted (a cell's output is not offered for translation,
    ``book/_ext/generated_text.py``, but a figure's caption is), from the chapters as the
    English build ran them: its execution cache is reused.
    """
    say("extracting the English messages (gettext) into _build/i18n/_build/gettext")
    config = edition_config(_config(), "en")
    code = "from jupyter_book.cli.main import main; main()"
    command = [python, "-c", code, "build", ROOT, "--keep-going", "--builder", "custom",
               "--custom-builder", "gettext"]  # fmt: skip
    status = _with_config(config, command, GETTEXT_OUTPUT)
    if status != 0:
        return status
    ui = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from live_calculators import ui_messages\n"
        "from solution_cells import ui_messages as solution_messages\n"
        "from lab_recordings import ui_messages as recording_messages\n"
        "from selfcheck import ui_messages as selfcheck_messages\n"
        "from gpulab.course.translation import write_template\n"
        "write_template([*ui_messages(), *solution_messages(), *recording_messages(),\n"
        "                *selfcheck_messages()], sys.argv[2])\n"
    )
    status = run([python, "-c", ui, ROOT / "book" / "_ext", GETTEXT_TEMPLATES / "ui.pot"],
                 BUILD_TIMEOUT_S, check=False)  # fmt: skip
    if status != 0:
        return status
    # The chapters' self-check questions: their templates, read by running the chapters' cells.
    questions = (
        "import sys\nfrom gpulab.course.selfchecks import write_template\n"
        "write_template(*sys.argv[1:])\n"
    )
    return run([python, "-c", questions, ROOT / "book", GETTEXT_TEMPLATES / "selfchecks.pot"],
               BUILD_TIMEOUT_S, check=False)  # fmt: skip


def update_translations(python: Path) -> int:
    """Extract the English messages and merge them into locale/zh_CN (sphinx-intl), then tidy
    every catalogue: no obsolete (``#~``) entries, no ``python-format`` flag on prose (both make
    ``msgfmt -c`` refuse a catalogue; ``gpulab.course.translation.tidy_catalogue``)."""
    code = extract_messages(python)
    if code != 0:
        return code
    say("merging them into locale/zh_CN: changed messages become fuzzy (shown in English)")
    update = "from sphinx_intl.commands import main; main()"
    code = run(
        [python, "-c", update, "update", "-p", GETTEXT_TEMPLATES, "-l", ZH_LANGUAGE, "-d",
         ROOT / "locale"],
        BUILD_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    if code != 0:
        return code
    say("dropping obsolete entries and python-format flags from the catalogues")
    tidy = (
        "import sys\n"
        "from gpulab.course.translation import catalogue_paths, tidy_catalogue\n"
        "for path in catalogue_paths(sys.argv[1]):\n"
        "    tidy_catalogue(path)\n"
    )
    return run([python, "-c", tidy, ROOT], BUILD_TIMEOUT_S, check=False)


def build(python: Path, solutions_open: bool = False, edition: str = "both") -> int:
    drop_stale_build_cache(BUILD_CACHE)
    cmd = jupyter_book_command(python)
    if not solutions_open:
        code = 0
        if edition in ("en", "both"):
            say("building the book into _build/html (warnings are errors)")
            code = run_build(cmd)
        if edition in ("zh", "both"):
            code = build_chinese(python) or code
        return code

    import yaml  # installed with jupyter-book, which this build needs anyway

    output = INSTRUCTOR_OUTPUT.relative_to(ROOT)
    say(f"building the instructors' book, solutions shown, into {output}/_build/html")
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    INSTRUCTOR_CONFIG.write_text(
        yaml.safe_dump(instructor_config(config), sort_keys=False), encoding="utf-8"
    )
    try:
        return run_build([*cmd, "--config", INSTRUCTOR_CONFIG, "--path-output", INSTRUCTOR_OUTPUT])
    finally:
        INSTRUCTOR_CONFIG.unlink(missing_ok=True)


def pytest_command(python: Path, pytest_args: list[str]) -> list[str | Path]:
    """pytest on one worker per core; the user's arguments come last, so ``-n 0`` wins."""
    parallel = [] if "no:xdist" in pytest_args else PARALLEL_PYTEST_ARGS
    return [python, "-m", "pytest", *parallel, *pytest_args]


def test(python: Path, pytest_args: list[str]) -> int:
    say("running the test suite")
    return run(pytest_command(python, pytest_args), TEST_TIMEOUT_S, check=False)


def lighthouse(python: Path) -> int:
    """Lighthouse on every page of _toc.yml in both editions (the suite checks a sample)."""
    say("building the book and running Lighthouse on every page (both editions)")
    command = [python, "-m", "pytest", "-n", "0", LIGHTHOUSE_TEST, "-s"]
    return run(command, TEST_TIMEOUT_S, check=False, env={"GPULAB_LIGHTHOUSE": "all"})


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command and its options; for ``test``, everything after it is pytest's."""
    parser = argparse.ArgumentParser(
        prog="course.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "command", choices=("build", "test", "install", "translations", "lighthouse")
    )
    parser.add_argument(
        "--edition",
        choices=EDITIONS,
        default="both",
        help="build: the English edition (en), the Chinese one (zh) or both (the default)",
    )
    parser.add_argument(
        "--solutions-open",
        action="store_true",
        help="build: the instructors' copy, worked solutions expanded",
    )
    ours, pytest_args = argv, []
    if argv[:1] == ["test"]:
        ours, pytest_args = argv[:1], argv[1:]
        if pytest_args[:1] == ["--"]:
            pytest_args = pytest_args[1:]
        elif "--solutions-open" in pytest_args:
            parser.error("--solutions-open goes with the build command only")
    args = parser.parse_args(ours)  # an unknown argument is an error here
    if args.solutions_open and args.command != "build":
        parser.error("--solutions-open goes with the build command only")
    if args.edition != "both" and args.command != "build":
        parser.error("--edition goes with the build command only")
    args.pytest_args = pytest_args
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    python = ensure_environment()
    if args.command == "build":
        return build(python, solutions_open=args.solutions_open, edition=args.edition)
    if args.command == "translations":
        return update_translations(python)
    if args.command == "test":
        return test(python, args.pytest_args)
    if args.command == "lighthouse":
        return lighthouse(python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
