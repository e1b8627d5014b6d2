"""How the suite runs on several pytest-xdist workers: which tests share a worker, in which
order the work is handed out, and how waiting threads behave.

``python3 course.py test`` runs pytest with ``-n auto`` (one worker per core) and
``--dist loadgroup`` (pyproject.toml). Tests are handed out one at a time, except groups,
which one worker runs start to end, in order:

* every test that uses the ``book_build`` fixture (``tests/test_book.py``,
  ``tests/test_browser.py``): the book is built once, on that worker;
* the cells of one notebook (nbval): they run one after another in one kernel;
* a whole run of a lab in one test (the ``lab_run`` mark: ``tests/test_rehearsal.py``),
  a group of its own so that it is handed out first, by its lab's run time.

Groups go out first, longest first (the book, then the labs by their recorded CPU run
time), so that the many short tests fill in around them at the end. This file sits at the
repository root so that it applies to ``tests/``, ``notebooks/`` and the doctests alike,
whichever of them a run names.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

from gpulab.labkit.claims import TIMING_CLAIMS_ENV, UNJUDGED_TIMING_CLAIM

# Workers, the kernels and book build they start, and torchrun's ranks all share the cores,
# each with as many torch (OpenMP) threads as there are cores. OpenMP's default wait policy
# spins while a thread waits for the others; with more threads than cores the spinning
# threads take the cores from the ones they wait for, and a CPU training step took 10-25x
# longer (measured on the 2-core machine: 2 processes of 2 threads, ~27 s instead of ~3 s).
# Passive waiting changes no result, only how idle threads wait. Set here, at the start of
# each pytest process, before torch is imported, so every process started from it inherits it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Triton's interpreter must be chosen before anything imports Triton (torch.compile does),
# or its library is compiled for a GPU that is not there (gpulab/kernels/triton_kernels.py).
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# The labs run here beside the other tests, which share the cores: a claim on timings
# (``gl.claim(..., timings=True)``) that the data refuse measures that load, not the course,
# so it is printed, not judged, and reported as a warning (``_report_unjudged_claims``). A
# recording (``python -m gpulab record``) judges it: it sets the variable back to "judge".
os.environ.setdefault(TIMING_CLAIMS_ENV, "print")

# Recordings made on other devices (gpulab.course.recordings) hold that device's outputs:
# the book shows them, but nbval on this machine would compare them with its own.
# The scripts a lab writes for torchrun (notebooks/dist_lab/, notebooks/par_lab/, ignored by
# git) are the lab's output, tested by running the lab; two of them share a module name
# (common.py), which pytest's collection refuses.
collect_ignore_glob = ["notebooks/recordings/*", "notebooks/*_lab/*"]

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
        elif (mark := item.get_closest_marker("lab_run")) is not None:
            lab = Path(mark.args[0])
            group_of[id(item)] = (_recorded_cpu_run_time_s(lab), item.nodeid)
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


def report_unjudged_claims(item) -> list[str]:
    """Warn of each claim on timings a lab's cell printed instead of judging; return them.

    ``item`` is a test; an nbval cell keeps the outputs of its run in ``test_outputs``.
    """
    lines = []
    for output in getattr(item, "test_outputs", None) or ():
        text = output.get("text", "") if output.get("output_type") == "stream" else ""
        text = "".join(text) if isinstance(text, list) else text
        lines += [line for line in text.splitlines() if line.startswith(UNJUDGED_TIMING_CLAIM)]
    for line in lines:  # judged when the lab is recorded
        warnings.warn(f"{item.nodeid}: {line}", stacklevel=1)
    return lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    report_unjudged_claims(item)
