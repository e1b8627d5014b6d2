"""Every lab's CUDA branches, rehearsed on the CPU under a fake T4 and a fake H100.

Each lab runs to the end in a kernel where ``tests/rehearsal/fake_cuda.py`` is installed
(see its docstring for what the rehearsal does and cannot do): ``gl.best_device()`` is
``cuda``, so every ``if device.type == "cuda"`` branch runs, on CPU-sized problems. The
outputs are not compared with the recorded ones (timings and sizes differ); what is checked
is that no cell raises and that the lab really took its GPU branch (the device report
names the fake GPU). A measured claim that the rehearsal's CPU timings do not support is
printed, not raised, and reported here as a warning: ``tests/test_claims_on_gpus.py``
judges every claim with the course's models for a T4 and an H100.

Run one by hand: ``python tests/test_rehearsal.py notebooks/capstone_lab.ipynb T4``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from rehearsal.fake_cuda import UNJUDGED_CLAIM
from run_notebook import run_notebook

ROOT = Path(__file__).resolve().parents[1]
REHEARSAL = ROOT / "tests" / "rehearsal"
LABS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GPUS = {"T4": "Tesla T4", "H100": "NVIDIA H100 80GB HBM3"}
# A cell's limit: the slowest lab cell takes about 20 s on the CPU; the fake tensors route
# every operator through Python, a few times slower.
CELL_TIMEOUT_S = 300


def rehearsal_env(gpu: str) -> dict[str, str]:
    """The environment of a rehearsal kernel (and of any process it starts, torchrun's ranks)."""
    path = os.pathsep.join(
        [str(REHEARSAL), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    # every refused claim is the rehearsal's to print (UNJUDGED_CLAIM), those on timings too
    return dict(os.environ, GPULAB_REHEARSAL=gpu, PYTHONPATH=path, GPULAB_TIMING_CLAIMS="judge")


def rehearse(lab: Path, gpu: str) -> nbformat.NotebookNode:
    """Run ``lab`` to its end in a rehearsal kernel for ``gpu``; return the executed notebook."""
    nb = nbformat.read(lab, as_version=4)
    return run_notebook(nb, lab.parent, rehearsal_env(gpu), timeout_s=CELL_TIMEOUT_S)


def _text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") or str(out.get("data", {}).get("text/plain", "")))
            parts.append(str(out.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_the_rehearsal_gpu_behaves_as_a_real_one_where_a_cpu_run_would_hide_a_bug(gpu):
    """The checks in ``tests/rehearsal/check_fake_cuda.py``, in a rehearsal process."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(REHEARSAL / "check_fake_cuda.py")],
        env=rehearsal_env(gpu),
        capture_output=True,
        text=True,
        timeout=120,  # a few seconds of work; a hang is a failure, not a stuck suite
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    passed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok ")]
    assert len(passed) >= 13, done.stdout


@pytest.mark.parametrize("gpu", sorted(GPUS))
@pytest.mark.parametrize(
    "lab", [pytest.param(p, marks=pytest.mark.lab_run(p), id=p.stem) for p in LABS]
)
def test_the_lab_runs_to_its_end_on_the_rehearsal_gpu(lab, gpu):
    nb = rehearse(lab, gpu)
    text = _text(nb)
    assert GPUS[gpu] in text, f"{lab.name}: the device report does not name {GPUS[gpu]}"
    for line in text.splitlines():
        if line.startswith(UNJUDGED_CLAIM):  # judged by the models in test_claims_on_gpus.py
            warnings.warn(f"{lab.name} on a rehearsal {gpu}: {line}", stacklevel=1)


if __name__ == "__main__":
    lab_path, gpu_name = Path(sys.argv[1]).resolve(), sys.argv[2]
    start = time.perf_counter()
    executed = rehearse(lab_path, gpu_name)
    print(f"{lab_path.name} on a rehearsal {gpu_name}: {time.perf_counter() - start:.1f} s")
