"""Command line of the course tools: ``python -m gpulab record | stamp | student``.

``python -m gpulab`` hands these commands over to :func:`main` here, so the learner's
commands (doctor, specs, bench) work without the ``gpulab[course]`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpulab._checks import MAX_RECORDING_BUDGET_S
from gpulab._usage import USAGE_STATUS, UsageError, existing_folder, writable_folder

COMMANDS = ("record", "stamp", "student")
#: What the course tools import beyond gpulab's own dependencies (the ``course`` extra).
EXTRA_MODULES = ("nbformat", "nbclient", "yaml", "jsonschema")


def _read_notebook(path: Path):
    """The notebook at ``path``; a :class:`UsageError` if it is not a readable notebook."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # nbformat raises JSON, schema and version errors alike
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"{path} is not a valid notebook ({reason})") from None


def _lab_notebook(path: Path):
    """The notebook at ``path``, read, if it is a lab that can be recorded."""
    from gpulab.course.record import provenance_cells

    if path.suffix != ".ipynb" or not path.is_file():
        state = "does not exist" if not path.exists() else "is not a notebook file (.ipynb)"
        raise UsageError(f"{path} {state}; name a lab's file, e.g. notebooks/roofline_lab.ipynb")
    nb = _read_notebook(path)
    try:
        provenance_cells(nb, path)
    except ValueError as err:
        raise UsageError(f"{err}; is it a lab of this course?") from None
    return nb


def _record(args: argparse.Namespace) -> int:
    from gpulab.course.record import RecordingError, record_all, record_notebook
    from gpulab.course.run_time_model import parse_compile_costs

    if args.all == bool(args.notebooks):
        raise UsageError("name the labs to record, or give --all")
    if args.timeout < 1:
        raise UsageError(
            f"--timeout {args.timeout} must be a positive number of seconds per cell, "
            "e.g. --timeout 900"
        )
    with_all = ("budget_s", "start_at", "stop_before", "plan", "compile_s")
    if not args.all and any(getattr(args, name) not in (None, False) for name in with_all):
        raise UsageError(
            "--budget-s, --start-at, --stop-before, --plan and --compile-s go with --all"
        )
    if (args.plan or args.device_class is not None) != (args.limit_s is not None) or (
        args.device_class is not None and not args.plan
    ):
        raise UsageError(
            "--plan needs --limit-s (seconds one command may take), e.g. --plan --limit-s 600; "
            "--limit-s and --device-class go with --plan"
        )
    if args.limit_s is not None and not 0 < args.limit_s <= MAX_RECORDING_BUDGET_S:
        raise UsageError(
            f"--limit-s {args.limit_s:g} must be a number of seconds above 0 and at most "
            f"{MAX_RECORDING_BUDGET_S:g} (a day), e.g. --limit-s 600"
        )
    try:
        costs = parse_compile_costs(args.compile_s)
    except ValueError as err:
        raise UsageError(str(err).replace("compile_s=", "--compile-s ", 1)) from None
    if args.budget_s is not None and not 0 < args.budget_s <= MAX_RECORDING_BUDGET_S:
        raise UsageError(
            f"--budget-s {args.budget_s:g} must be a number of seconds above 0 and at most "
            f"{MAX_RECORDING_BUDGET_S:g} (a day), e.g. --budget-s 540"
        )
    if args.all:
        folder = existing_folder("--folder", args.folder, "labs (*_lab.ipynb)")
        labs = sorted(folder.glob("*_lab.ipynb"))
        if not labs:
            raise UsageError(
                f"--folder {folder} holds no labs (*_lab.ipynb); give the labs' folder"
            )
        for lab in labs:
            _read_notebook(lab)
        names = [lab.name for lab in labs]
        start = args.start_at
        if (
            start is not None
            and Path(start if start.endswith(".ipynb") else f"{start}.ipynb").name not in names
        ):
            raise UsageError(
                f"--start-at {start} is not a lab in {folder}; give one of: {', '.join(names)}"
            )
        stop = args.stop_before
        if stop is not None and (
            Path(stop if stop.endswith(".ipynb") else f"{stop}.ipynb").name not in names
        ):
            raise UsageError(
                f"--stop-before {stop} is not a lab in {folder}; give one of: {', '.join(names)}"
            )
        if args.plan:
            return _plan(args, labs, costs)
    for path in args.notebooks:
        _lab_notebook(path)
    try:
        if args.all:  # a failed lab is in the closing table; the exit status says so too
            outcomes = record_all(
                args.folder,
                timeout_s=args.timeout,
                budget_s=args.budget_s,
                start_at=args.start_at,
                stop_before=args.stop_before,
                compile_s=costs,
            )
            return 1 if any(o.failed or o.not_started for o in outcomes) else 0
        for path in args.notebooks:
            rec = record_notebook(path, timeout_s=args.timeout)
            print(f"recorded {path} into {rec['path']}: {rec['device']}, {rec['run_time_s']} s")
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def _plan(args: argparse.Namespace, labs: list[Path], costs: dict) -> int:
    """``record --all --plan --limit-s N``: print the commands, run nothing."""
    from gpulab.course.record_plan import plan_lines, plan_recording
    from gpulab.course.recordings import bench_estimate, class_kind, device_class
    from gpulab.measure.provenance import provenance

    if args.device_class is None:
        here = provenance()
        where = device_class(here["kind"], here.get("name"))
    else:
        where = args.device_class
        if ":" not in where and where not in ("cpu", "mps"):
            where = f"cuda:{where}"
        try:
            if class_kind(where) == "cuda":
                where = device_class("cuda", where.partition(":")[2])
        except ValueError as err:
            raise UsageError(str(err).replace("device_class=", "--device-class ", 1)) from None
    if args.start_at is not None:
        names = [lab.name for lab in labs]
        start = args.start_at if args.start_at.endswith(".ipynb") else f"{args.start_at}.ipynb"
        labs = labs[names.index(Path(start).name) :]
    bench = bench_estimate(Path("results"), where)
    commands = plan_recording(
        labs, where, args.limit_s, costs=costs, bench=bench, folder=str(args.folder)
    )
    for line in plan_lines(commands, where, args.limit_s):
        print(line)
    return 0


def _stamp(args: argparse.Namespace) -> int:
    from gpulab.course.collapsed import collapse_lab_machinery
    from gpulab.course.labs import stamp_setup_cells
    from gpulab.course.solutions import close_lab_solutions

    root = existing_folder("--root", Path(args.root), "the course repository")
    if not (root / "_config.yml").is_file():
        raise UsageError(
            f"--root {root} is not the course repository (it has no _config.yml); "
            "give the folder that holds _config.yml and notebooks/"
        )
    changed = stamp_setup_cells(root)
    print(f"setup cells updated in {len(changed)} lab(s)")
    closed = close_lab_solutions(root)
    print(f"worked solutions closed in {len(closed)} lab(s)")
    folded = collapse_lab_machinery(root)
    print(f"setup cells and scripts collapsed in {len(folded)} lab(s)")
    return 0


def _student(args: argparse.Namespace) -> int:
    from gpulab.course.student import write_student_copies

    notebooks = existing_folder("--notebooks", args.notebooks, "labs (*.ipynb)")
    labs = sorted(notebooks.glob("*.ipynb"))
    if not labs:
        raise UsageError(f"--notebooks {notebooks} holds no notebooks; give the labs' folder")
    for lab in labs:
        _read_notebook(lab)
    if args.outdir.resolve() == notebooks.resolve():
        raise UsageError(
            f"{args.outdir} is the labs' own folder: the copies would overwrite the solutions; "
            "give another folder"
        )
    writable_folder("outdir", args.outdir)
    written = write_student_copies(args.outdir, notebooks)
    print(f"wrote {len(written)} student cop{'y' if len(written) == 1 else 'ies'} to {args.outdir}")
    return 0


def add_commands(sub) -> None:
    """Add the course commands to ``sub``, an argparse sub-parser collection."""
    record = sub.add_parser("record", help="(course) re-execute labs in place, with provenance")
    record.add_argument("notebooks", nargs="*", type=Path)
    record.add_argument(
        "--all",
        action="store_true",
        help="every lab in --folder (checked first; a failing lab does not stop the others), "
        "then a bench report into results/ and a table; exit status 1 if a lab failed or "
        "was not started",
    )
    record.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="with --all: start no lab whose estimate would take the run past this many "
        "seconds; those are listed as not started, with the --start-at that goes on",
    )
    record.add_argument(
        "--start-at",
        default=None,
        metavar="LAB",
        help="with --all: begin at this lab (file name), leaving the labs before it alone",
    )
    record.add_argument(
        "--stop-before",
        default=None,
        metavar="LAB",
        help="with --all: end before this lab (file name), leaving it, the labs after it and "
        "the bench alone",
    )
    record.add_argument(
        "--plan",
        action="store_true",
        help="with --all and --limit-s: run nothing; print the commands that record every lab "
        "and the bench, each estimated to fit the limit",
    )
    record.add_argument(
        "--limit-s", type=float, default=None, help="with --plan: seconds one command may take"
    )
    record.add_argument(
        "--device-class",
        default=None,
        metavar="CLASS",
        help="with --plan: plan for this device class (e.g. 'cuda:H100 SXM5 80GB', a registry "
        "name) instead of this machine's",
    )
    record.add_argument(
        "--compile-s",
        default=None,
        metavar="COSTS",
        help="with --all: measured seconds per compile for the estimates of labs never "
        "recorded on this GPU class, e.g. triton=2.5,numba=0.8,inductor=30",
    )
    record.add_argument("--folder", type=Path, default=Path("notebooks"))
    record.add_argument("--timeout", type=int, default=900, help="seconds per cell at most")
    stamp = sub.add_parser(
        "stamp",
        help="(course) rewrite the labs' setup cells from _config.yml, close their solutions, "
        "collapse their setup cells and scripts",
    )
    stamp.add_argument("--root", default=".", help="the course repository root")
    student = sub.add_parser("student", help="(course) copies of the labs without solutions")
    student.add_argument("outdir", type=Path, help="folder for the student copies")
    student.add_argument("--notebooks", type=Path, default=Path("notebooks"))


def run(args: argparse.Namespace) -> int:
    """Run the course command that ``args`` (parsed with :func:`add_commands`) names.

    A bad argument (:class:`~gpulab._usage.UsageError`) or a missing course extra is one
    line on stderr and exit status 2.
    """
    handlers = {"record": _record, "stamp": _stamp, "student": _student}
    try:
        return handlers[args.command](args)
    except UsageError as err:
        print(f"python -m gpulab {args.command}: {err}", file=sys.stderr)
        return USAGE_STATUS
    except ModuleNotFoundError as exc:
        if exc.name not in EXTRA_MODULES:
            raise
        print(
            f"python -m gpulab {args.command} is a course tool and needs {exc.name}, which is "
            "not installed. Install the course tools from the course's checkout with: "
            "pip install -e '.[course]'",
            file=sys.stderr,
        )
        return USAGE_STATUS
