#!/usr/bin/env python3
"""Install what the course needs, build the book, run the tests.

    python3 course.py build    # install everything (first time), build the book into _build/html
    python3 course.py test     # install everything (first time), run the whole test suite

    python3 course.py build --solutions-open   # instructors' copy, every worked solution
                                               # expanded: _build/instructor/_build/html

Extra arguments after ``test`` go to pytest, e.g. ``python3 course.py test -k specs``.

Both use a virtual environment in ``.venv`` (made with access to the packages already in
the Python that runs this script, so an existing torch is reused), unless this script is
already running inside a virtual environment or conda, in which case that one is used.

torch is installed only when missing: a CUDA build where an NVIDIA GPU is present, the
CPU build otherwise (PyTorch's CPU index, falling back to the default index). Where a GPU is
present, the CuPy wheel matching torch's CUDA major version is added.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import venv
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
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INSTALL_TIMEOUT_S = 3600
BUILD_TIMEOUT_S = 1800
TEST_TIMEOUT_S = 3600


def say(message: str) -> None:
    print(f"[course] {message}", flush=True)


def in_virtual_env() -> bool:
    return sys.prefix != sys.base_prefix or "CONDA_PREFIX" in os.environ


def environment_python() -> Path:
    """The interpreter the course runs in, creating ``.venv`` the first time."""
    if in_virtual_env():
        return Path(sys.executable)
    python = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        say(f"creating a virtual environment in {VENV.relative_to(ROOT)}")
        try:
            venv.EnvBuilder(with_pip=True, system_site_packages=True).create(VENV)
        except Exception as exc:  # e.g. Debian without the python3-venv package
            sys.exit(f"[course] could not create {VENV}: {exc}. Install your system's venv "
                     "package (Debian/Ubuntu: apt install python3-venv) or run this script "
                     "from an activated virtual environment.")
    return python


def run(cmd: list[str | Path], timeout: int, check: bool = True, **kwargs) -> int:
    env = dict(os.environ, **kwargs.pop("env", {}))
    bin_dir = str(Path(cmd[0]).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")  # kernels find this env's python
    try:
        proc = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        sys.exit(f"[course] gave up after {timeout} s: {' '.join(map(str, cmd))}")
    if check and proc.returncode != 0:
        sys.exit(f"[course] failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc.returncode


def python_has(python: Path, code: str) -> bool:
    proc = subprocess.run([str(python), "-c", code], capture_output=True, timeout=300)
    return proc.returncode == 0


def torch_cuda_major(python: Path) -> str | None:
    proc = subprocess.run(
        [str(python), "-c", "import torch; print(torch.version.cuda or '')"],
        capture_output=True, text=True, timeout=300,
    )
    version = proc.stdout.strip()
    return version.split(".")[0] if proc.returncode == 0 and version else None


def has_nvidia_gpu() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_torch(python: Path) -> None:
    if python_has(python, "import torch"):
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
    if not has_nvidia_gpu() or python_has(python, "import cupy"):
        return
    major = torch_cuda_major(python)
    if major is None:
        say("torch is a CPU build, so CuPy is not installed; install a CUDA build of torch first")
        return
    say(f"installing cupy-cuda{major}x to match torch's CUDA {major}")
    run([python, "-m", "pip", "install", f"cupy-cuda{major}x"], INSTALL_TIMEOUT_S)


def requirements_digest() -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_environment() -> Path:
    python = environment_python()
    stamp = Path(sys.prefix if in_virtual_env() else VENV) / STAMP_NAME
    digest = requirements_digest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return python
    ensure_torch(python)
    say("installing the course's requirements (requirements.txt)")
    run([python, "-m", "pip", "install", "-r", ROOT / "requirements.txt"], INSTALL_TIMEOUT_S)
    ensure_cupy(python)
    stamp.write_text(digest + "\n")
    return python


def instructor_config(config: dict) -> dict:
    """``config`` (the parsed ``_config.yml``) with every worked solution shown expanded.

    The chapters' build-time outputs are reused from the readers' build cache.
    """
    sphinx = dict(config.get("sphinx") or {})
    sphinx["config"] = {**(sphinx.get("config") or {}),
                        "togglebutton_selector": SOLUTIONS_OPEN_SELECTOR}
    execute = {**(config.get("execute") or {}),
               "cache": str(ROOT / "_build" / ".jupyter_cache")}
    return {**config, "sphinx": sphinx, "execute": execute}


def build(python: Path, solutions_open: bool = False) -> int:
    code = "from jupyter_book.cli.main import main; main()"
    cmd = [python, "-c", code, "build", ROOT, "--warningiserror", "--nitpick", "--keep-going"]
    if not solutions_open:
        say("building the book into _build/html (warnings are errors)")
        return run(cmd, BUILD_TIMEOUT_S, check=False)

    import yaml  # installed with jupyter-book, which this build needs anyway

    output = INSTRUCTOR_OUTPUT.relative_to(ROOT)
    say(f"building the instructors' book, solutions shown, into {output}/_build/html")
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    INSTRUCTOR_CONFIG.write_text(yaml.safe_dump(instructor_config(config)), encoding="utf-8")
    try:
        return run([*cmd, "--config", INSTRUCTOR_CONFIG, "--path-output", INSTRUCTOR_OUTPUT],
                   BUILD_TIMEOUT_S, check=False)
    finally:
        INSTRUCTOR_CONFIG.unlink(missing_ok=True)


def test(python: Path, pytest_args: list[str]) -> int:
    say("running the test suite")
    return run([python, "-m", "pytest", *pytest_args], TEST_TIMEOUT_S, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("build", "test", "install"))
    parser.add_argument("--solutions-open", action="store_true",
                        help="build: the instructors' copy, worked solutions expanded")
    args, pytest_args = parser.parse_known_args()
    if args.solutions_open and args.command != "build":
        parser.error("--solutions-open goes with the build command only")
    python = ensure_environment()
    if args.command == "build":
        return build(python, solutions_open=args.solutions_open)
    if args.command == "test":
        return test(python, pytest_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
