"""The publishing workflow (``.github/workflows/publish.yml``), checked without running it.

It must run the README's test command, build the book and publish ``_build/html`` (with the
Pyodide runtime the live calculators need) to GitHub Pages on every push to main, and pass
zizmor, a linter for GitHub Actions workflows from PyPI (``requirements.txt``), with no
finding: every action pinned to a commit, least permissions, no credentials left behind.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "publish.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_it_runs_the_readmes_test_command(workflow):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = re.search(r"## Quickstart.*?```bash\n(.*?)```", readme, re.S).group(1)
    test_command = next(line.split("#")[0].strip() for line in quickstart.splitlines()
                        if " test" in line)  # fmt: skip
    runs = [step.get("run", "").strip() for step in _steps(workflow)]
    assert test_command == "python3 course.py test" and test_command in runs
    assert "python3 course.py build" in runs  # the book it publishes, pyodide files included


def test_it_publishes_the_book_on_every_push_to_main(workflow):
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads on: as True
    assert triggers["push"]["branches"] == ["main"]
    uploads = [s for s in _steps(workflow) if "upload-pages-artifact" in s.get("uses", "")]
    assert [s["with"]["path"] for s in uploads] == ["_build/html"]
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "test" and "refs/heads/main" in deploy["if"]
    assert any("deploy-pages" in s.get("uses", "") for s in deploy["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}


def test_every_action_is_pinned_to_a_commit(workflow):
    for step in _steps(workflow):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def _zizmor() -> str | None:
    beside = Path(sys.executable).with_name("zizmor")
    return str(beside) if beside.is_file() else shutil.which("zizmor")


def test_zizmor_finds_nothing():
    zizmor = _zizmor()
    assert zizmor, "zizmor is not installed (it is in requirements.txt: pip install zizmor)"
    proc = subprocess.run(
        [zizmor, "--offline", "--persona=pedantic", "--no-progress", str(WORKFLOW)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_fails_a_workflow_with_an_unpinned_action(tmp_path):
    """Guards the check above: the linter does fail a bad workflow."""
    zizmor = _zizmor()
    assert zizmor
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    pinned = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
    text = WORKFLOW.read_text(encoding="utf-8")
    assert pinned in text
    bad.write_text(text.replace(pinned, "actions/checkout@v4"), encoding="utf-8")
    proc = subprocess.run([zizmor, "--offline", "--no-progress", str(bad)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and "unpinned-uses" in proc.stdout + proc.stderr
