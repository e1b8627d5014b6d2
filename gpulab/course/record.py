"""Re-execute a lab and record its provenance: ``python -m gpulab record LAB.ipynb``.

This is how every committed lab output is produced — on a CPU-only machine for the CPU
recording, on a GPU for the GPU recording. It runs the notebook top to bottom, fills the
cell tagged ``provenance`` with the device, software and date, and stores the run time and
provenance per device class (:func:`gpulab.course.recordings.device_class`: the spec
registry's row name of a GPU) in the lab's ``gpulab`` metadata.

Every lab runs in a temporary copy of its folder, so a lab that fails leaves its outputs and
the files beside it as they were. On a CPU the outputs are then written back into the lab
itself, and the files the lab wrote or changed beside itself are copied back (deleted ones
are not deleted). On any other device the executed copy is saved as the recording of its
device class (``notebooks/recordings/cuda/h100-sxm5-80gb/NAME_lab.ipynb``,
:func:`gpulab.course.recordings.recording_path`), so that two GPUs never overwrite each
other's recording or run time, and the files
beside the lab keep their CPU versions; the lab keeps its CPU outputs, so that strict nbval on
CPU-only machines still checks them.

``python -m gpulab record --all`` (:func:`record_all`) checks every lab's first cells and the
free disk space before it runs any, prints an estimated run time per lab, records every lab
it can, and ends with a table of what happened to each (:func:`outcome_table`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpulab.course.labs import PROVENANCE_TAG, first_cell_problems
from gpulab.course.recordings import (
    RECORDINGS_FOLDER,
    class_label,
    device_class,
    estimate_run_time,
    lab_estimate,
    recording_path,
)
from gpulab.labkit.claims import TIMING_CLAIMS_ENV
from gpulab.measure.provenance import provenance, provenance_line
from gpulab.units import format_bytes, format_duration

__all__ = [
    "DISK_MARGIN",
    "DISK_RESERVE_BYTES",
    "LabOutcome",
    "RecordingError",
    "estimate_run_time",
    "outcome_table",
    "record_all",
    "record_notebook",
]

#: A recording may be larger than the lab it comes from (new figures, longer outputs, side
#: files): :func:`record_all` asks for this many times the labs' present size on disk ...
DISK_MARGIN = 2.0
#: ... and this much besides (the bench report, files the kernel and its libraries cache).
DISK_RESERVE_BYTES = 50_000_000


class RecordingError(RuntimeError):
    """A lab failed while being recorded; the message names the lab and the cell.

    ``cell`` is the index of the cell that failed (as Jupyter numbers them, from 0, markdown
    cells included), or None where no cell was running; ``error`` is the error in one line
    (``"ValueError: broken on purpose"``). Also raised by :func:`record_all` when its checks
    refuse to start, with ``cell`` None.
    """

    def __init__(self, message: str, *, cell: int | None = None, error: str = ""):
        super().__init__(message)
        self.cell = cell
        self.error = error or message


#: Status of a lab that :func:`record_all` did not start: its estimate would have taken the
#: run past its time budget (``--budget-s``).
NOT_STARTED = "not started (budget)"

#: The clock :func:`record_all` reads (seconds; replaced in tests).
_clock = time.perf_counter


@dataclass(frozen=True)
class LabOutcome:
    """What happened to one lab in :func:`record_all`: a row of its closing table.

    ``status`` is ``"recorded"``, ``"failed"`` or :data:`NOT_STARTED` (the run's time
    budget would not have covered it); ``run_time_s`` is the wall-clock time the attempt took
    (kernel start included; 0 for a lab not started); ``cell`` and ``error`` say where and
    how a failed lab failed; ``record`` is a recorded lab's provenance
    (:func:`record_notebook`).
    """

    lab: str
    status: str
    run_time_s: float
    cell: int | None = None
    error: str = ""
    record: dict | None = None

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def not_started(self) -> bool:
        return self.status == NOT_STARTED


@contextmanager
def _kernel_environment():
    """What the lab's kernel inherits: this interpreter first on PATH (kernel specs launch
    "python" from PATH), OpenMP threads that wait passively unless told otherwise (as in
    the test suite, ``conftest.py``: spinning waiters made a loaded 2-core machine 10-30x
    slower, measured), and every claim judged, those on timings included (a recording stops
    on a miss, whoever started it: ``gpulab.labkit.claims``). All are restored afterwards."""
    old = {key: os.environ.get(key) for key in ("PATH", "OMP_WAIT_POLICY", TIMING_CLAIMS_ENV)}
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + (old["PATH"] or "")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ[TIMING_CLAIMS_ENV] = "judge"
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_notebook(path: str | Path, timeout_s: int = 900, kernel_name: str = "python3") -> dict:
    """Execute the lab at ``path`` on this machine and stamp its provenance.

    Parameters
    ----------
    path : path
        The ``.ipynb`` file.
    timeout_s : int
        Seconds any one cell may run before the recording fails (nothing hangs).
    kernel_name : str
        Jupyter kernel to run it with.

    Returns
    -------
    dict
        The provenance record, with ``run_time_s`` and ``path`` (where the outputs went) added.
    """
    import nbformat

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise FileNotFoundError(f"path={str(path)!r} is not a notebook file (.ipynb)")
    nb = nbformat.read(path, as_version=4)
    marked = provenance_cells(nb, path)
    record = provenance()
    kind = record["kind"]
    record["device_class"] = where = device_class(kind, record.get("name"))
    target = recording_path(path, where)
    with tempfile.TemporaryDirectory(prefix="gpulab-record-") as tmp:
        work = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, work, ignore=_NOT_COPIED)
        copied = _digests(work)
        elapsed = _execute(nb, path, work, timeout_s, kernel_name)  # a failure stops here
        if kind == "cpu":  # the CPU recording keeps what the lab wrote beside itself
            _copy_back(work, path.parent, lab_name=path.name, copied=copied)

    record["run_time_s"] = round(elapsed, 1)
    text = f"**Provenance.** {provenance_line(record)} Run time: {elapsed:.0f} s."
    marked[0].source = text
    _stamp(nb, where, record)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    if target != path:  # the lab itself keeps its CPU outputs and learns of this recording
        lab = nbformat.read(path, as_version=4)
        _stamp(lab, where, record)
        nbformat.write(lab, path)
    return {**record, "path": str(target)}


#: What the working copy of a lab's folder leaves out: other devices' recordings, and
#: Jupyter's checkpoints.
_NOT_COPIED = shutil.ignore_patterns(RECORDINGS_FOLDER, ".ipynb_checkpoints")


def _digests(folder: Path) -> dict[Path, str]:
    """Each file under ``folder`` (relative path) and the SHA-256 of its bytes."""
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }


def _copy_back(work: Path, folder: Path, lab_name: str, copied: dict[Path, str]) -> None:
    """Copy the files the lab created or changed in its working copy back into ``folder``.

    ``copied`` holds the working copy's digests from before the run: a file the run left as it
    found it is not copied, so an edit made in ``folder`` meanwhile (another lab, say) stays.
    """
    for relative, digest in sorted(_digests(work).items()):
        if relative == Path(lab_name) or copied.get(relative) == digest:
            continue  # the lab itself is written by record_notebook, with its provenance
        dest = folder / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(work / relative, dest)


def _execute(nb, path: Path, folder: Path, timeout_s: int, kernel_name: str) -> float:
    """Run ``nb`` with ``folder`` as its working folder; seconds taken, or a RecordingError."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    running = [None]  # the index of the cell being run, for errors that name no cell

    def note_cell(cell, cell_index, **_):
        running[0] = cell_index

    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(folder.resolve())}},
        store_widget_state=True,
        on_cell_execute=note_cell,
    )
    start = time.perf_counter()
    with _kernel_environment():
        try:
            client.execute()
        except CellExecutionError as exc:
            index = _failed_cell(nb)
            index = running[0] if index is None else index
            error = f"{exc.ename}: {exc.evalue}"
        except CellTimeoutError:
            index = running[0]
            error = f"CellTimeoutError: the cell ran for more than timeout_s={timeout_s} s"
        except DeadKernelError as exc:
            index = running[0]
            error = f"DeadKernelError: {exc}"
        else:
            return time.perf_counter() - start
    where = f"cell {index}" if index is not None else "a cell"
    raise RecordingError(
        f"{path}: {where} failed while recording ({error}); nothing was written to the notebook",
        cell=index,
        error=error,
    )


def _stamp(nb, device_class: str, record: dict) -> None:
    meta = nb.metadata.setdefault("gpulab", {})
    meta.setdefault("run_time_s", {})[device_class] = record["run_time_s"]
    meta.setdefault("recorded", {})[device_class] = record


def provenance_cells(nb, path: Path) -> list:
    """The one cell tagged ``provenance``, checked before anything runs."""
    marked = [c for c in nb.cells if PROVENANCE_TAG in c.get("metadata", {}).get("tags", [])]
    if len(marked) != 1:
        raise ValueError(f"{path} needs exactly one markdown cell tagged {PROVENANCE_TAG!r}")
    return marked


def _failed_cell(nb) -> int | None:
    """Index of the first code cell whose outputs hold an error, as Jupyter numbers cells."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(
            o.get("output_type") == "error" for o in cell.get("outputs", [])
        ):
            return index
    return None


def _report_name(report: dict) -> str:
    """``results/`` file name for a bench report: date, then the device in lowercase words."""
    words = re.findall(r"[a-z0-9]+", report["provenance"]["device"].split(";")[0].lower())
    return f"{report['provenance']['date']}-{'-'.join(words[:8]) or 'device'}.json"


def _estimate_lines(estimates: dict, device_class: str) -> list[str]:
    """The table ``record --all`` starts with: each lab's estimate on this class and its basis."""
    rows = [(name, e.shown(), e.basis) for name, e in estimates.items()]
    known = [e for e in estimates.values() if e.seconds is not None]
    modelled = sum(not e.recorded for e in known)
    partial = sum(not e.complete for e in known)
    unknown = len(estimates) - len(known)
    total = sum(e.seconds for e in known)
    shown = "-" if not known else format_duration(total)
    shown = f">= {shown}" if known and (partial or unknown) else shown
    notes = [f"{modelled} lab(s) estimated by the model"] if modelled else []
    if partial:
        notes.append(f"{partial} of them a lower bound")
    if unknown:
        notes.append(f"{unknown} lab(s) without an estimate")
    rows.append(("total", shown, "; ".join(notes)))
    width = max(len(name) for name, _, _ in rows)
    lines = [f"Estimated run times on this machine ({class_label(device_class)}):"]
    lines += [f"  {name:<{width}}  {time_:>9}  {note}".rstrip() for name, time_, note in rows]
    return lines


def _folder_bytes(folder: Path) -> int:
    """Bytes of the working copy of ``folder`` that each lab runs in (see ``_NOT_COPIED``)."""
    total = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in (RECORDINGS_FOLDER, ".ipynb_checkpoints")]
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _same_filesystem(a: Path, b: Path) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


def _disk_problems(folder: Path, labs: list[Path]) -> list[str]:
    """Where the disk is too full for the recordings; see :data:`DISK_MARGIN`."""
    lab_bytes = sum(lab.stat().st_size for lab in labs)
    copy_bytes = _folder_bytes(folder)  # one working copy at a time, removed after each lab
    tmp = Path(tempfile.gettempdir())
    needs = {folder: DISK_MARGIN * lab_bytes + DISK_RESERVE_BYTES, tmp: float(copy_bytes)}
    if _same_filesystem(folder, tmp):
        needs = {folder: sum(needs.values())}
    problems = []
    for where, needed in needs.items():
        free = shutil.disk_usage(where).free
        if free < needed:
            parts = (
                f"{DISK_MARGIN:g} x the labs' {format_bytes(lab_bytes)} for their recordings, "
                f"{format_bytes(DISK_RESERVE_BYTES)} to spare"
                if where == folder
                else ""
            )
            if where == tmp or len(needs) == 1:
                copy = f"a {format_bytes(copy_bytes)} working copy of {folder} in {tmp}"
                parts = f"{parts}, {copy}" if parts else copy
            problems.append(
                f"not enough free disk space in {where}: about {format_bytes(needed)} needed "
                f"({parts}), {format_bytes(free)} free; free some space, or record fewer "
                "labs at a time (python -m gpulab record LAB.ipynb ...)"
            )
    return problems


def outcome_table(outcomes: list[LabOutcome]) -> str:
    """The table :func:`record_all` ends with: lab, status, run time, first error and its cell.

    Examples
    --------
    >>> print(outcome_table([LabOutcome("a_lab.ipynb", "recorded", 12.3),
    ...     LabOutcome("b_lab.ipynb", "failed", 4.0, 2, "ValueError: broken on purpose")]))
    lab          status    run time  first error
    a_lab.ipynb  recorded    12.3 s
    b_lab.ipynb  failed       4.0 s  cell 2: ValueError: broken on purpose
    2 labs: 1 recorded, 1 failed
    """
    rows = [("lab", "status", "run time", "first error")]
    for o in outcomes:
        error = o.error.strip().splitlines()[0] if o.error.strip() else ""
        error = error if len(error) <= 100 else error[:99] + "…"
        where = f"cell {o.cell}: " if o.cell is not None else ""
        time_ = "-" if o.not_started else f"{o.run_time_s:.1f} s"
        rows.append((o.lab, o.status, time_, f"{where}{error}" if error else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        f"{lab:<{widths[0]}}  {status:<{widths[1]}}  {time_:>{widths[2]}}  {error}".rstrip()
        for lab, status, time_, error in rows
    ]
    failed = sum(o.failed for o in outcomes)
    waiting = sum(o.not_started for o in outcomes)
    summary = f"{len(outcomes)} labs: {len(outcomes) - failed - waiting} recorded, {failed} failed"
    if waiting:
        summary += f", {waiting} {NOT_STARTED}"
    lines.append(summary)
    return "\n".join(lines)


def record_all(
    notebooks: str | Path = "notebooks",
    *,
    results: str | Path | None = "results",
    timeout_s: int = 900,
    budget_s: float | None = None,
    start_at: str | None = None,
    stop_before: str | None = None,
    compile_s: dict[str, float] | None = None,
    progress=print,
) -> list[LabOutcome]:
    """Record every lab in ``notebooks`` on this machine, then write a bench report.

    Before any lab runs, every lab's first cells are checked (the setup cell, the provenance
    cell: :func:`gpulab.course.labs.first_cell_problems`) and so is the free disk space (the
    labs' size times :data:`DISK_MARGIN`, plus :data:`DISK_RESERVE_BYTES`, plus the working
    copy of the folder each lab runs in); any problem refuses the whole run, listing every
    problem found, in seconds rather than after the labs before it. Then an estimated run
    time per lab on this machine's device class is printed, with the total: its recording
    on this class where there is one, else the model's ESTIMATE
    (:func:`gpulab.course.recordings.lab_estimate`).

    The labs then run one after another. A lab that fails is reported and left exactly as
    it was (its file, its outputs and the files beside it), and the next lab runs. Last,
    ``python -m gpulab bench`` measures this machine and its report goes into ``results``
    (skipped when ``results`` is None), and the table of :func:`outcome_table` is printed.

    With a time budget, a lab is started only if the time since the run began plus the
    lab's estimate stays within the budget; a lab whose estimate is unknown or only a lower
    bound is started only as the first lab of the run. The first lab that does not fit, and
    every lab after it, is reported :data:`NOT_STARTED`, the bench is left for the run that
    records the last labs, and the progress names the command that goes on from there
    (``start_at``). The bench, too, runs within the budget only: when its time on this
    device class is not known from an earlier report (:func:`gpulab.course.recordings.
    bench_estimate`) or does not fit, the progress names the command that runs it alone. A
    machine that caps each command at ten minutes records the course in a few commands:
    ``python -m gpulab record --all --plan --limit-s 600`` prints them
    (:mod:`gpulab.course.record_plan`).

    Parameters
    ----------
    notebooks : path
        The folder of labs (``*_lab.ipynb``).
    results : path or None
        Folder for the bench report; None skips the bench.
    timeout_s : int
        Seconds any one cell may run before its lab fails.
    budget_s : float, optional
        Seconds this run may take: above 0, at most a day
        (:data:`gpulab._checks.MAX_RECORDING_BUDGET_S`). None: no limit.
    start_at : str, optional
        The first lab to record (its file name, with or without ``.ipynb``); the labs before
        it in name order are left alone. None: from the first lab.
    stop_before : str, optional
        The first lab not to record (as ``start_at``): it and the labs after it are left
        alone, and so is the bench. None: to the last lab.
    compile_s : dict, optional
        Measured seconds per compile for the model's estimates
        (:func:`gpulab.course.run_time_model.parse_compile_costs`).
    progress : callable
        Called with each line of progress (``print``).

    Returns
    -------
    list of LabOutcome
        One per lab, in the order they ran; ``any(o.failed for o in ...)`` says whether one
        failed, ``any(o.not_started for o in ...)`` whether the budget left one out.

    Raises
    ------
    RecordingError
        When the checks refuse to start (nothing has run or changed), or when the bench
        fails after the labs (their table is printed first).
    """
    import json

    import nbformat

    from gpulab._checks import MAX_RECORDING_BUDGET_S, at_most, positive_int, positive_number
    from gpulab._checks import path as check_path
    from gpulab._checks import text as check_text

    began = _clock()
    folder = check_path("notebooks", notebooks, kind="dir")
    timeout_s = positive_int("timeout_s", timeout_s)
    if budget_s is not None:
        positive_number("budget_s", budget_s)
        at_most("budget_s", budget_s, MAX_RECORDING_BUDGET_S, "one recording run", unit="s")
        budget_s = float(budget_s)
    labs = sorted(folder.glob("*_lab.ipynb"))
    if not labs:
        raise ValueError(f"notebooks={str(notebooks)!r} holds no labs (*_lab.ipynb)")
    names = [lab.name for lab in labs]

    def position(name: str, value) -> int:
        wanted = Path(value if value.endswith(".ipynb") else f"{value}.ipynb").name
        if wanted not in names:
            raise ValueError(
                f"{name}={value!r} is not a lab in {folder}; one of: {', '.join(names)}"
            )
        return names.index(wanted)

    first = 0
    if check_text("start_at", start_at, optional=True) is not None:
        first = position("start_at", start_at)
    end = len(labs)
    if check_text("stop_before", stop_before, optional=True) is not None:
        end = position("stop_before", stop_before)
        if end <= first:
            raise ValueError(
                f"stop_before={stop_before!r} must come after start_at={start_at!r} in name "
                f"order: no lab would be recorded"
            )
    labs = labs[first:end]
    if compile_s is not None and not isinstance(compile_s, dict):
        raise TypeError(
            f"compile_s={compile_s!r} must be a dict of measured seconds per compile "
            "(parse_compile_costs('triton=2.5')) or None"
        )
    problems = []
    for lab in labs:
        found = first_cell_problems(nbformat.read(lab, as_version=4))
        problems += [f"{lab}: {problem}" for problem in found]
    problems += _disk_problems(folder, labs)
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise RecordingError(f"no lab was recorded; fix these first:\n{listed}")

    here = provenance()
    this_class = device_class(here["kind"], here.get("name"))
    estimates = {lab.name: lab_estimate(lab, this_class, compile_s) for lab in labs}
    for line in _estimate_lines(estimates, this_class):
        progress(line)
    outcomes = []
    for lab in labs:
        if budget_s is not None:
            estimate = estimates[lab.name]
            elapsed = _clock() - began
            fits = not outcomes if not estimate.complete else elapsed + estimate.seconds <= budget_s
            if outcomes and outcomes[-1].not_started or not fits:
                if not (outcomes and outcomes[-1].not_started):
                    progress(
                        f"budget: {format_duration(elapsed)} spent, {lab.name} is estimated "
                        f"at {estimate.shown()}, past the {format_duration(budget_s)} "
                        f"budget; go on with: python -m gpulab record --all --start-at "
                        f"{lab.name}" + (f" --stop-before {names[end]}" if end < len(names) else "")
                    )
                outcomes.append(LabOutcome(lab.name, NOT_STARTED, 0.0))
                continue
        progress(f"recording {lab.name} ...")
        start = _clock()
        try:
            record = record_notebook(lab, timeout_s=timeout_s)
        except RecordingError as exc:
            outcome = LabOutcome(lab.name, "failed", _clock() - start, exc.cell, exc.error)
        except Exception as exc:  # noqa: BLE001 - one broken lab must not stop the others
            error = f"{type(exc).__name__}: {exc}"
            outcome = LabOutcome(lab.name, "failed", _clock() - start, None, error)
        else:
            elapsed = _clock() - start
            outcome = LabOutcome(lab.name, "recorded", elapsed, record=record)
        outcomes.append(outcome)
        if outcome.failed:
            where = f"cell {outcome.cell}" if outcome.cell is not None else "before any cell ran"
            progress(f"  failed ({where}: {outcome.error}); the lab is left as it was")
        else:
            progress(f"  {outcome.record['device']}: {outcome.record['run_time_s']} s")
    bench_error = None
    if outcomes and outcomes[-1].not_started:
        progress("the bench is left for the run that records the last labs")
    elif end < len(names):
        progress(f"the bench is left for the run that records the last labs ({names[-1]})")
    elif results is not None:
        from gpulab.course.recordings import bench_estimate
        from gpulab.measure.bench_report import run_bench

        out_dir = check_path("results", results)
        bench = bench_estimate(out_dir, this_class)
        elapsed = _clock() - began
        if budget_s is not None and not (bench.complete and elapsed + bench.seconds <= budget_s):
            progress(
                f"budget: {format_duration(elapsed)} spent and the bench is estimated at "
                f"{bench.shown()} ({bench.basis}), so it does not run within the "
                f"{format_duration(budget_s)} budget; run it alone: python -m gpulab bench "
                f"--out {out_dir}/<date>-<device>.json"
            )
        else:
            progress("measuring the standard benchmarks (python -m gpulab bench) ...")
            try:
                start = _clock()
                report = run_bench(notes="recorded with python -m gpulab record --all")
                report["run_time_s"] = round(_clock() - start, 1)
                out_dir.mkdir(parents=True, exist_ok=True)
                out = out_dir / _report_name(report)
                out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
                progress(f"  wrote {out}")
            except Exception as exc:  # noqa: BLE001 - the table of the labs comes first
                bench_error = exc
    for line in outcome_table(outcomes).splitlines():
        progress(line)
    if bench_error is not None:
        raise RecordingError(
            f"the labs are done (table above), but python -m gpulab bench failed: "
            f"{type(bench_error).__name__}: {bench_error}"
        ) from bench_error
    return outcomes
