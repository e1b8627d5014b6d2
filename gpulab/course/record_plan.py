"""A plan for recording every lab in commands that each fit a time limit.

``python -m gpulab record --all --plan --limit-s 600`` prints it without running anything: the
labs in the order ``record --all`` runs them (name order), packed into as few commands as
keep each command's estimated time within the limit, and the bench last, in a command that
has room for it. Each command is ``record --all --start-at LAB --stop-before NEXT --budget-s
LIMIT``, so
:func:`gpulab.course.record.record_all` itself stops before a lab that would take it past
the limit and names the command that goes on from there: a wrong estimate costs a command,
never an overrun.

The estimates are :func:`gpulab.course.recordings.lab_estimate`'s: a recording of the
same device class, else the model's ESTIMATE. A lab whose time is unknown (never recorded)
or only a lower bound (compiles of unmeasured cost) gets a command of its own, and so does
one estimated past the limit: the plan says so rather than pretend it fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpulab.course.recordings import class_label, lab_estimate
from gpulab.course.run_time_model import RunTimeEstimate
from gpulab.units import format_duration

__all__ = ["BENCH", "PlannedCommand", "plan_lines", "plan_recording"]

#: The bench's name in a plan (``python -m gpulab bench``, run by ``record --all`` last).
BENCH = "bench"


@dataclass(frozen=True)
class PlannedCommand:
    """One command of a plan: the labs it is expected to record (and the bench, last),
    their estimates, and the command line."""

    labs: tuple[str, ...]
    estimates: tuple[RunTimeEstimate, ...]
    command: str

    @property
    def seconds(self) -> float | None:
        """The estimated total, or None where a part is unknown or a lower bound."""
        if not all(e.complete for e in self.estimates):
            return None
        return sum(e.seconds for e in self.estimates)

    @property
    def known_s(self) -> float:
        """The seconds that are known (a lower bound where :attr:`seconds` is None)."""
        return sum(e.seconds or 0.0 for e in self.estimates)


def _command(first: str, stop: str | None, limit_s: float, folder: str, costs: str) -> str:
    where = "" if folder == "notebooks" else f" --folder {folder}"
    until = f" --stop-before {stop}" if stop else ""
    given = f" --compile-s {costs}" if costs else ""
    return (
        f"python -m gpulab record --all{where} --start-at {first}{until} "
        f"--budget-s {limit_s:g}{given}"
    )


def plan_recording(
    labs: list[Path],
    device_class: str,
    limit_s: float,
    *,
    costs: dict[str, float] | None = None,
    bench: RunTimeEstimate | None = None,
    folder: str = "notebooks",
) -> list[PlannedCommand]:
    """Pack ``labs`` (in the order given) and the bench into commands of at most ``limit_s``.

    Parameters
    ----------
    labs : list of Path
        The labs, in the order ``record --all`` runs them.
    device_class : str
        The class of the device that will record them.
    limit_s : float
        Seconds one command may take.
    costs : dict, optional
        Measured seconds per compile (:func:`gpulab.course.run_time_model.parse_compile_costs`).
    bench : RunTimeEstimate, optional
        The bench's estimate (:func:`gpulab.course.recordings.bench_estimate`); None leaves
        the bench out of the plan.
    folder : str
        The labs' folder as the commands name it.

    Returns
    -------
    list of PlannedCommand
        In order; every lab is in exactly one, and the bench, if planned, in the last.
    """
    from gpulab._checks import MAX_RECORDING_BUDGET_S, at_most, positive_number

    positive_number("limit_s", limit_s)
    at_most("limit_s", limit_s, MAX_RECORDING_BUDGET_S, "one recording command", unit="s")
    groups: list[list[tuple[str, RunTimeEstimate]]] = []
    for lab in labs:
        estimate = lab_estimate(lab, device_class, costs)
        alone = not estimate.complete or estimate.seconds > limit_s
        last = groups[-1] if groups else None
        fits = (
            last is not None
            and not alone
            and all(e.complete for _, e in last)
            and sum(e.seconds for _, e in last) + estimate.seconds <= limit_s
        )
        if fits:
            last.append((lab.name, estimate))
        else:
            groups.append([(lab.name, estimate)])
    given = ",".join(f"{name}={seconds:g}" for name, seconds in (costs or {}).items())
    firsts = [group[0][0] for group in groups]
    commands = [
        PlannedCommand(
            tuple(name for name, _ in group),
            tuple(e for _, e in group),
            _command(first, stop, limit_s, folder, given),
        )
        for group, first, stop in zip(groups, firsts, [*firsts[1:], None], strict=True)
    ]
    if bench is None:
        return commands
    last = commands[-1] if commands else None
    if (
        last is not None
        and bench.complete
        and last.seconds is not None
        and last.seconds + bench.seconds <= limit_s
    ):
        commands[-1] = PlannedCommand((*last.labs, BENCH), (*last.estimates, bench), last.command)
    else:
        out = "results/<date>-<device>.json"
        commands.append(PlannedCommand((BENCH,), (bench,), f"python -m gpulab bench --out {out}"))
    return commands


def plan_lines(commands: list[PlannedCommand], device_class: str, limit_s: float) -> list[str]:
    """The plan as printed: one block per command, each lab with its estimate and basis."""
    lines = [
        f"Plan for {class_label(device_class)}: {len(commands)} command(s) of at most "
        f"{format_duration(limit_s)} each (estimates: a recording of this class where there "
        "is one, else an ESTIMATE from the model of gpulab.course.run_time_model)."
    ]
    for number, command in enumerate(commands, 1):
        if command.seconds is not None:
            total = f"estimated {format_duration(command.seconds)}"
        elif command.known_s:
            total = f"at least {format_duration(command.known_s)}, fit not known"
        else:
            total = "time not known"
        lines.append(f"{number}. {command.command}   # {total}")
        width = max(len(name) for name in command.labs)
        for name, estimate in zip(command.labs, command.estimates, strict=True):
            lines.append(f"     {name:<{width}}  {estimate.shown():>9}  {estimate.basis}")
        if command.seconds is not None and command.seconds > limit_s:
            lines.append("     estimated past the limit on its own: record it where commands "
                         "may run longer (--budget-s), or expect it to stop")  # fmt: skip
    return lines
