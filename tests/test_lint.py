"""The code is ruff-clean (the same check contributors run)."""

import subprocess
import sys


def test_ruff_is_clean(root):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "gpulab",
            "tests",
            "notebooks",
            "course.py",
            "conftest.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
