"""Which tests share a pytest-xdist worker, and in which order the work is handed out.

``python3 course.py test`` runs pytest with ``-n auto`` (one worker per core) and
``--dist loadgroup`` (pyproject.toml). Tests are handed out one at a time, except groups,
which one worker runs start to end, in order:

* every test that uses the ``book_build`` fixture (``tests/test_book.py``,
  ``tests/test_browser.py``): the book is built once, on that worker;
* the cells of one notebook (nbval): they run one after another in one kernel.

Groups go out first, longest first (the book, then the labs by their recorded CPU run
time), so that the many short tests fill in around them at the end. This file sits at the
repository root so that it applies to ``tests/``, ``notebooks/`` and the doctests alike,
whichever of them a run names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

BOOK_GROUP = "book"
# ``-n auto`` uses one worker per core, up to this many: past it the book group (about two
# minutes on its own) bounds the run anyway, and every worker collects the whole suite and
# shares the one GPU, if there is one, with the others.
MAX_AUTO_WORKERS = 4


def _recorded_cpu_run_time_s(notebook: Path) -> float:
    try:
        meta = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]["gpulab"]
        return float(meta["run_time_s"]["cpu"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _group_for_workers(items: list[pytest.Item]) -> None:
    """Mark the groups that must stay on one worker, and put them first, longest first."""
    group_of: dict[int, tuple[float, str]] = {}  # id(item) -> (sort key, group)
    run_time_s: dict[Path, float] = {}
    for item in items:
        if "book_build" in getattr(item, "fixturenames", ()):
            group_of[id(item)] = (float("inf"), BOOK_GROUP)
        elif item.path.suffix == ".ipynb":  # an nbval cell: its notebook is one group
            if item.path not in run_time_s:
                run_time_s[item.path] = _recorded_cpu_run_time_s(item.path)
            group_of[id(item)] = (run_time_s[item.path], item.nodeid.split("::")[0])
    for item in items:
        if id(item) in group_of:
            item.add_marker(pytest.mark.xdist_group(name=group_of[id(item)][1]))
    # A stable sort: each group keeps its own order; ungrouped tests stay as collected.
    items.sort(key=lambda item: -group_of.get(id(item), (0.0, ""))[0])


# First, before pytest-xdist's worker reads the xdist_group marks into the test ids.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    _group_for_workers(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own setting wins
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_AUTO_WORKERS))
