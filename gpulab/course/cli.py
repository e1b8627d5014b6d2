"""Command line of the course tools: ``python -m gpulab record | stamp | student``.

``python -m gpulab`` hands these commands over to :func:`main` here, so the learner's
commands (doctor, specs, bench) work without the ``gpulab[course]`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMMANDS = ("record", "stamp", "student")
#: What the course tools import beyond gpulab's own dependencies (the ``course`` extra).
EXTRA_MODULES = ("nbformat", "nbclient", "yaml", "jsonschema")


def _record(args: argparse.Namespace) -> int:
    from gpulab.course.record import RecordingError, record_all, record_notebook

    if args.all == bool(args.notebooks):
        print("python -m gpulab record: name the labs to record, or give --all", file=sys.stderr)
        return 2
    try:
        if args.all:  # a failed lab is in the closing table; the exit status says so too
            outcomes = record_all(args.folder, timeout_s=args.timeout)
            return 1 if any(outcome.failed for outcome in outcomes) else 0
        for path in args.notebooks:
            rec = record_notebook(path, timeout_s=args.timeout)
            print(f"recorded {path} into {rec['path']}: {rec['device']}, {rec['run_time_s']} s")
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def _stamp(args: argparse.Namespace) -> int:
    from gpulab.course.labs import stamp_setup_cells

    changed = stamp_setup_cells(Path(args.root))
    print(f"setup cells updated in {len(changed)} lab(s)")
    return 0


def _student(args: argparse.Namespace) -> int:
    from gpulab.course.student import write_student_copies

    written = write_student_copies(args.outdir, args.notebooks)
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
        "then a bench report into results/ and a table; exit status 1 if a lab failed",
    )
    record.add_argument("--folder", type=Path, default=Path("notebooks"))
    record.add_argument("--timeout", type=int, default=900, help="seconds per cell at most")
    stamp = sub.add_parser("stamp", help="(course) rewrite the labs' setup cells from _config.yml")
    stamp.add_argument("--root", default=".", help="the course repository root")
    student = sub.add_parser("student", help="(course) copies of the labs without solutions")
    student.add_argument("outdir", type=Path, help="folder for the student copies")
    student.add_argument("--notebooks", type=Path, default=Path("notebooks"))


def run(args: argparse.Namespace) -> int:
    """Run the course command that ``args`` (parsed with :func:`add_commands`) names."""
    handlers = {"record": _record, "stamp": _stamp, "student": _student}
    try:
        return handlers[args.command](args)
    except ModuleNotFoundError as exc:
        if exc.name not in EXTRA_MODULES:
            raise
        print(
            f"python -m gpulab {args.command} is a course tool and needs {exc.name}, which is "
            "not installed. Install the course tools with: pip install 'gpulab[course]'",
            file=sys.stderr,
        )
        return 2
