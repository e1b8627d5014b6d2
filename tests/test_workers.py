"""The grouping that lets the suite run on pytest-xdist workers (``conftest.py`` at the root)."""

import importlib.util
import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def grouping(root):
    spec = importlib.util.spec_from_file_location("root_conftest", root / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeItem:
    """What the grouping reads of a collected test: its path, id and fixtures."""

    def __init__(self, nodeid: str, path: Path, fixturenames=(), lab_run: Path | None = None):
        self.nodeid, self.path, self.fixturenames = nodeid, path, list(fixturenames)
        self.marks = []
        self.lab_run = lab_run  # a test marked lab_run(path): a whole run of that lab

    def add_marker(self, mark):
        self.marks.append(mark)

    def get_closest_marker(self, name):
        if name == "lab_run" and self.lab_run is not None:
            return pytest.mark.lab_run(self.lab_run).mark
        return None

    @property
    def group(self):
        (mark,) = [m.mark for m in self.marks if m.mark.name == "xdist_group"] or [None]
        return mark and mark.kwargs["name"]


def notebook(tmp_path, name, run_time_s):
    path = tmp_path / name
    path.write_text(json.dumps({"metadata": {"gpulab": {"run_time_s": {"cpu": run_time_s}}}}))
    return path


def test_groups_stay_whole_and_go_first_longest_first(grouping, tmp_path):
    short = notebook(tmp_path, "short_lab.ipynb", 8.6)
    long = notebook(tmp_path, "long_lab.ipynb", 74.6)
    unit = tmp_path / "test_unit.py"
    items = [
        FakeItem("tests/test_unit.py::test_a", unit),
        FakeItem("tests/test_book.py::test_builds", unit, ["root", "book_build"]),
        FakeItem("notebooks/short_lab.ipynb::Cell 0", short),
        FakeItem("notebooks/short_lab.ipynb::Cell 1", short),
        FakeItem("tests/test_unit.py::test_b", unit),
        FakeItem("notebooks/long_lab.ipynb::Cell 0", long),
        FakeItem("notebooks/long_lab.ipynb::Cell 1", long),
        FakeItem("tests/test_browser.py::test_math", unit, ["book_html", "book_build"]),
        FakeItem("tests/test_rehearsal.py::test_run[short_lab-T4]", unit, lab_run=short),
    ]
    grouping._group_for_workers(items)
    assert [(item.nodeid.split("/")[-1], item.group) for item in items] == [
        ("test_book.py::test_builds", "book"),
        ("test_browser.py::test_math", "book"),
        ("long_lab.ipynb::Cell 0", "notebooks/long_lab.ipynb"),
        ("long_lab.ipynb::Cell 1", "notebooks/long_lab.ipynb"),
        ("short_lab.ipynb::Cell 0", "notebooks/short_lab.ipynb"),
        ("short_lab.ipynb::Cell 1", "notebooks/short_lab.ipynb"),
        # a whole lab run is a group of its own, scheduled by its lab's run time
        ("test_rehearsal.py::test_run[short_lab-T4]", items[-3].nodeid),
        ("test_unit.py::test_a", None),
        ("test_unit.py::test_b", None),
    ]


def test_auto_workers_follow_the_cores_up_to_a_cap(grouping, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    for cores, workers in [(1, 1), (2, 2), (16, grouping.MAX_AUTO_WORKERS)]:
        monkeypatch.setattr(
            grouping.os, "sched_getaffinity", lambda pid, n=cores: set(range(n)), raising=False
        )
        assert grouping.pytest_xdist_auto_num_workers(None) == workers
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert grouping.pytest_xdist_auto_num_workers(None) is None  # xdist reads it itself
