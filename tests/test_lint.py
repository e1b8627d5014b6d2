"""The code is ruff-clean (the same check contributors run)."""

import shutil
import subprocess
import sys


def test_ruff_is_clean(root):
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    proc = subprocess.run(
        [*cmd, "check", "gpulab", "tests", "course.py"], cwd=root, capture_output=True,
        text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
