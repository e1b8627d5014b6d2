"""The Colab install route: gpulab built as a wheel works outside the repository.

On Colab the labs' first cell pip-installs gpulab into an environment that already has torch.
This test does the same offline: it builds the wheel from this checkout, installs it (without
dependencies) into a fresh virtual environment in a temporary folder, lets that environment see
the dependencies of the one running the tests (torch, NumPy, IPython...) through a ``.pth``
line placed after its own site-packages, and from another folder runs ``setup_lab()``,
``doctor()`` and a lab's first cell. It checks that ``gpulab`` came from the wheel, not from
the repository, and that the data files the package needs were packaged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from site import getsitepackages

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300

CHECK = r"""
import json, sys
from pathlib import Path
from IPython.core.inputtransformer2 import TransformerManager

import gpulab as gl

info = gl.setup_lab()
report = gl.doctor()
cell = json.loads(Path(sys.argv[1]).read_text())["cells"]
setup = next(c for c in cell if c["cell_type"] == "code")
namespace = {}
exec(TransformerManager().transform_cell("".join(setup["source"])), namespace)
print(json.dumps({
    "file": gl.__file__,
    "lab_gl": namespace["gl"].__file__,
    "doctor": type(report).__name__,
    "spec": gl.get_spec("T4").name,  # the device registry is package data
    "trace": gl.measure.gpu_trace.read_trace("a100_alexnet").device,  # so are the GPU traces
}))
"""


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment holding gpulab from a wheel built from this checkout."""
    work = tmp_path_factory.mktemp("wheel-install")
    build = _run(
        [
            sys.executable,
            *("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"),
            *("-w", str(work / "dist"), str(ROOT)),
        ],
        cwd=work,
    )
    if build.returncode != 0:
        pytest.skip(f"cannot build the wheel here (offline, no setuptools?): {build.stderr[-800:]}")
    (wheel,) = (work / "dist").glob("gpulab-*.whl")
    env_dir = work / "venv"
    try:
        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"cannot create a virtual environment here: {err}")
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=work,
        ).stdout.strip()
    )
    # The test environment's packages, after the new environment's own (so its gpulab wins).
    # site.getsitepackages() also lists the base interpreter's when the test environment
    # itself was created with --system-site-packages.
    (site / "zz_test_environment.pth").write_text("".join(p + "\n" for p in getsitepackages()))
    install = _run(
        [
            sys.executable,
            *("-m", "pip", "--python", str(python), "install"),
            # --force-reinstall: through the .pth line pip sees the test environment's own
            # gpulab (an editable install of the same version) and would skip the wheel.
            *("--no-deps", "--no-index", "--force-reinstall", str(wheel)),
        ],
        cwd=work,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    return python


def test_wheel_installs_and_runs_a_lab_setup_from_another_folder(installed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(ROOT / "notebooks" / "gpu_basics_lab.ipynb", elsewhere / "lab.ipynb")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = _run([str(installed), "-c", CHECK, "lab.ipynb"], cwd=elsewhere, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    env_dir = installed.parents[1].resolve()
    for key in ("file", "lab_gl"):
        module = Path(result[key]).resolve()
        assert env_dir in module.parents, f"gpulab imported from {module}, not the new environment"
        assert ROOT not in module.parents, f"gpulab imported from the repository: {module}"
    assert result["doctor"] == "DeviceInfo" and "gpulab doctor" in proc.stdout
    assert f"torch               {torch.__version__}" in proc.stdout  # the environment's torch
    assert result["spec"] == "Tesla T4"
    assert result["trace"] == "NVIDIA A100-PG509-200"
