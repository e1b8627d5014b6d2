"""A command-line mistake is one line saying what is wrong and what to do, with exit status 2.

Each case runs ``python -m gpulab`` as a learner or instructor would, in a fresh process, and
checks that it stops at once: no traceback, no measuring, nothing written.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A folder no one can create files in (sysfs refuses new entries, even to root).
UNWRITABLE = Path("/sys/gpulab-no-such-folder")


def _setup(tmp: Path) -> None:
    """The files the cases point at: a plain file, broken notebooks, a folder of labs."""
    (tmp / "afile").write_text("not a folder\n")
    (tmp / "empty").mkdir()
    (tmp / "broken").mkdir()
    (tmp / "broken" / "y_lab.ipynb").write_text("{")
    (tmp / "notjson.ipynb").write_text("not json\n")
    (tmp / "nocells.ipynb").write_text("{}")
    cell = {"cell_type": "code", "id": "c1", "metadata": {}, "source": "1", "outputs": [],
            "execution_count": None}  # fmt: skip
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp / "notalab.ipynb").write_text(json.dumps(notebook))
    (tmp / "labs").mkdir()
    (tmp / "labs" / "x_lab.ipynb").write_text(json.dumps(notebook))


CASES = {
    "record_not_a_notebook": (["record", "NotALab"], "NotALab does not exist"),
    "record_a_text_file": (["record", "afile"], "afile is not a notebook file"),
    "record_notebook_without_cells": (["record", "nocells.ipynb"], "is not a valid notebook"),
    "record_notebook_not_json": (["record", "notjson.ipynb"], "is not a valid notebook"),
    "record_notebook_not_a_lab": (["record", "notalab.ipynb"], "is it a lab of this course"),
    "record_all_missing_folder": (
        ["record", "--all", "--folder", "/nonexistent"],
        "--folder /nonexistent does not exist",
    ),
    "record_all_folder_is_a_file": (["record", "--all", "--folder", "afile"], "afile is a file"),
    "record_all_folder_without_labs": (["record", "--all", "--folder", "empty"], "holds no labs"),
    "record_all_broken_lab": (
        ["record", "--all", "--folder", "broken"],
        "broken/y_lab.ipynb is not a valid notebook",
    ),
    "record_zero_timeout": (["record", "--timeout", "0", "notalab.ipynb"], "--timeout 0 must"),
    "record_negative_timeout": (["record", "--all", "--timeout", "-5"], "--timeout -5 must"),
    "record_nothing": (["record"], "name the labs to record, or give --all"),
    "stamp_missing_root": (["stamp", "--root", "/nonexistent"], "--root /nonexistent does not"),
    "stamp_root_not_the_course": (["stamp", "--root", "empty"], "has no _config.yml"),
    "student_onto_a_file": (["student", "afile", "--notebooks", "labs"], "afile is a file"),
    "student_under_a_file": (
        ["student", "afile/out", "--notebooks", "labs"],
        "cannot write into outdir afile/out: afile is not a folder",
    ),
    "student_unwritable": (
        ["student", str(UNWRITABLE), "--notebooks", "labs"],
        "cannot write into outdir",
    ),
    "student_missing_labs": (["student", "out", "--notebooks", "/nonexistent"], "does not exist"),
    "student_no_labs": (["student", "out", "--notebooks", "empty"], "holds no notebooks"),
    "student_broken_lab": (
        ["student", "out", "--notebooks", "broken"],
        "broken/y_lab.ipynb is not a valid notebook",
    ),
    "student_into_the_labs": (["student", "labs", "--notebooks", "labs"], "labs' own folder"),
    "bench_out_a_folder": (["bench", "--quick", "--out", "empty"], "--out empty is a folder"),
    "bench_out_under_a_file": (
        ["bench", "--quick", "--out", "afile/r.json"],
        "cannot write --out afile/r.json: afile is not a folder",
    ),
    # a file of the system's, not one the test made: the message names it, not "file exists"
    "bench_out_under_a_system_file": (
        ["bench", "--quick", "--out", "/proc/version/x.json"],
        "/proc/version is not a folder",
    ),
    "bench_out_unwritable": (
        ["bench", "--quick", "--out", str(UNWRITABLE / "r.json")],
        "cannot write --out",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_command_line_mistake_is_one_line_and_exit_status_2(tmp_path, case):
    argv, says = CASES[case]
    if str(UNWRITABLE) in " ".join(argv) and not Path("/sys/kernel").is_dir():
        pytest.skip("needs Linux's /sys as a folder that refuses new files")
    if "/proc/version/x.json" in argv and not Path("/proc/version").is_file():
        pytest.skip("needs Linux's /proc/version, a file")
    _setup(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.run(
        [sys.executable, "-m", "gpulab", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"python -m gpulab {argv[0]}: ")
    assert says in lines[0]
    assert "measuring" not in proc.stdout  # bench checks --out before it measures
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
