"""Workshop agendas built from the labs' own metadata, not typed by hand.

Each lab records how long it took to run (``run_time_s`` per device class, written by
``python -m gpulab record``). An agenda gives every chapter in it a short talk (or reading
time), then its lab: the recorded run time plus a working-time allowance for reading the
lab, answering its exercises and asking questions. Breaks come whenever a session would
run past ``session_max_min``; a day of six hours or more gets a lunch break. Labs are taken
in course order until the time runs out, and the agenda says which labs did not fit.

>>> from gpulab import course
>>> from gpulab.course.workshop import make_agenda
>>> lab = course.LabInfo(path=__import__("pathlib").Path("notebooks/x_lab.ipynb"), title="X",
...                  chapter="book/x", needs="any", run_time_s={"cpu": 40.0})
>>> agenda = make_agenda([lab], minutes=90, name="Taster")
>>> [(s.kind, s.minutes) for s in agenda.slots]
[('welcome', 10), ('chapter', 15), ('lab', 21), ('wrap-up', 10)]
>>> agenda.spare_minutes
34
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab.course.labs import LabInfo, list_labs

__all__ = [
    "COLAB_CLASS",
    "STANDARD_FORMATS",
    "Agenda",
    "Slot",
    "lab_minutes",
    "labs_in_course_order",
    "make_agenda",
    "standard_agendas",
]

# Name and length in minutes of the three workshop formats the guide plans.
STANDARD_FORMATS = (("90-minute taster", 90), ("Half day", 210), ("Full day", 390))

DEFAULTS = {
    "reading_min": 15,  # a short talk on the chapter, or time to read its key sections
    "working_min": 20,  # per lab, on top of its run time: reading it, exercises, questions
    "welcome_min": 10,  # welcome and the pre-flight check
    "wrap_up_min": 10,
    "session_max_min": 90,  # no session longer than this without a break
    "break_min": 15,
    "lunch_min": 45,
    "lunch_from_min": 360,  # agendas at least this long get a lunch break
}


@dataclass(frozen=True)
class Slot:
    """One line of an agenda.

    Attributes
    ----------
    start_min : int
        Minutes from the start of the workshop.
    minutes : int
        Length of the slot.
    kind : str
        ``"welcome"``, ``"chapter"``, ``"lab"``, ``"break"``, ``"lunch"`` or ``"wrap-up"``.
    title : str
        What happens, as shown in the agenda.
    lab : LabInfo or None
        The lab a ``"chapter"`` or ``"lab"`` slot belongs to.
    note : str
        Where the length comes from (for lab slots: the recorded run time).
    """

    start_min: int
    minutes: int
    kind: str
    title: str
    lab: LabInfo | None = None
    note: str = ""

    @property
    def end_min(self) -> int:
        return self.start_min + self.minutes


@dataclass(frozen=True)
class Agenda:
    """A timed plan for one workshop; see :func:`make_agenda`."""

    name: str
    minutes: int
    slots: tuple[Slot, ...]
    covered: tuple[LabInfo, ...]
    left_out: tuple[LabInfo, ...]
    device: str
    working_min: int
    reading_min: int

    @property
    def used_minutes(self) -> int:
        """Minutes from the start to the end of the last slot."""
        return self.slots[-1].end_min if self.slots else 0

    @property
    def spare_minutes(self) -> int:
        """Minutes of the workshop's length the agenda leaves unplanned."""
        return self.minutes - self.used_minutes

    def to_markdown(self, link_prefix: str = "") -> str:
        """The agenda as a Markdown table, then what was left out and the spare time.

        Parameters
        ----------
        link_prefix : str
            Prefix from the page showing the agenda to the repository root, for the links
            to labs and chapters (``"../"`` from a page in ``book/``).
        """
        rows = ["| Time | Minutes | What |", "|---|---|---|"]
        for slot in self.slots:
            what = slot.title
            if slot.lab is not None and slot.kind == "lab":
                what = f"Lab: [{slot.lab.title}]({link_prefix}notebooks/{slot.lab.path.name})"
            elif slot.lab is not None and slot.kind == "chapter":
                what = f"Chapter: [{slot.title}]({link_prefix}{slot.lab.chapter}.md)"
            if slot.note:
                what += f" ({slot.note})"
            rows.append(
                f"| {_clock(slot.start_min)}–{_clock(slot.end_min)} | {slot.minutes} | {what} |"
            )
        lines = ["\n".join(rows), ""]
        if self.left_out:
            names = ", ".join(lab.title for lab in self.left_out)
            lines.append(
                f"Does not fit in {self.minutes} minutes: {len(self.left_out)} lab(s) ({names}); "
                "set them as homework or plan a longer format."
            )
        else:
            lines.append(f"All {len(self.covered)} lab(s) of the course fit.")
        if self.spare_minutes:
            lines.append(
                f"{self.spare_minutes} of {self.minutes} minutes are left unplanned: use them for "
                "the chapters' exercises and the labs' *Try it* questions, or finish early."
            )
        return "\n".join(lines[:2]) + "\n" + " ".join(lines[2:])


#: The device class a workshop plans for unless told otherwise: Colab's free GPU.
COLAB_CLASS = "cuda:Tesla T4"


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def lab_minutes(lab: LabInfo, device: str = COLAB_CLASS, working_min: int = 20) -> tuple[int, str]:
    """Minutes to plan for one lab and a note saying where the run time comes from.

    The run time recorded on the device class ``device`` (``"cuda:Tesla T4"``,
    :func:`gpulab.course.recordings.device_class`) is used when there is one: a recording on
    another GPU class is not (a T4's time says little about an H100's). Otherwise the CPU
    record, and the note says that the class has no recording (a CPU run is the slower one,
    so the plan errs on the long side).

    Examples
    --------
    >>> from gpulab import course
    >>> from pathlib import Path
    >>> lab = course.LabInfo(Path("x.ipynb"), "X", "book/x", "any",
    ...                      run_time_s={"cpu": 130.0, "cuda:H100 SXM5 80GB": 20.0})
    >>> lab_minutes(lab, device="cuda:Tesla T4", working_min=20)
    (23, 'run 2.2 min as recorded on CPU; no GPU (Tesla T4) record yet, + 20 min working time')
    >>> lab_minutes(lab, device="cuda:H100 SXM5 80GB", working_min=20)
    (21, 'run 20 s as recorded on GPU (H100 SXM5 80GB), + 20 min working time')
    """
    from gpulab.course.recordings import class_label

    _check_minutes("working_min", working_min, allow_zero=True)
    wanted = class_label(device)  # refuses a bare "cuda": a GPU's class names it
    kind = device if device in lab.run_time_s else "cpu"
    seconds = lab.run_time_s.get(kind)
    if seconds is None:
        return working_min, f"run time not recorded yet; {working_min} min working time"
    where = class_label(kind)
    missing = f"; no {wanted} record yet" if kind != device else ""
    shown = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"
    note = f"run {shown} as recorded on {where}{missing}, + {working_min} min working time"
    return math.ceil(seconds / 60) + working_min, note


def _check_minutes(name: str, value, allow_zero: bool = False) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        allowed = "a whole number of 0 or more" if allow_zero else "a positive whole number"
        raise ValueError(f"{name}={value!r} must be {allowed} of minutes")


def make_agenda(
    labs: Sequence[LabInfo],
    minutes: int,
    *,
    name: str = "",
    device: str = COLAB_CLASS,
    chapter_titles: dict[str, str] | None = None,
    closing: LabInfo | None = None,
    **allowances: int,
) -> Agenda:
    """Plan a workshop of ``minutes`` minutes covering as many of ``labs`` as fit, in order.

    Parameters
    ----------
    labs : sequence of LabInfo
        The labs in course order (see :func:`labs_in_course_order`).
    minutes : int
        Length of the workshop.
    name : str
        Shown as the agenda's title.
    device : str
        The device class the seats will use (:data:`COLAB_CLASS`, Colab's T4, by default);
        its recorded run time is used where a lab has one, the CPU record otherwise.
    chapter_titles : dict, optional
        Chapter title by chapter path (``"book/gpu_basics"``); default: the path.
    closing : LabInfo, optional
        A lab kept for the closing session (the capstone): its time is reserved first, the
        other labs fill what is left in order, and it comes last, before the wrap-up.
    **allowances : int
        Override any of :data:`DEFAULTS` (minutes): ``reading_min``, ``working_min``,
        ``welcome_min``, ``wrap_up_min``, ``session_max_min``, ``break_min``, ``lunch_min``,
        ``lunch_from_min``.

    Returns
    -------
    Agenda

    Raises
    ------
    ValueError
        For a length or allowance that is not a positive whole number, an unknown
        allowance, no labs, or a length too short for even the first lab.
    """
    _check_minutes("minutes", minutes)
    unknown = sorted(set(allowances) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown allowance(s) {unknown}; allowed: {', '.join(DEFAULTS)}")
    opts = {**DEFAULTS, **allowances}
    for key, value in opts.items():
        _check_minutes(key, value, allow_zero=key not in ("session_max_min",))
    if not labs:
        raise ValueError("labs=[] is empty: an agenda needs at least one lab")
    titles = chapter_titles or {}
    reserved = 0
    if closing is not None:
        if not isinstance(closing, LabInfo):
            raise ValueError(f"closing={closing!r} must be a LabInfo (see list_labs)")
        labs = [lab for lab in labs if lab.path != closing.path]
        closing_min, closing_note = lab_minutes(closing, device, opts["working_min"])
        reserved = opts["break_min"] + opts["reading_min"] + closing_min
        need = opts["welcome_min"] + reserved + opts["wrap_up_min"]
        if need > minutes:
            raise ValueError(
                f"minutes={minutes} is too short for the closing session ({closing.title!r}): "
                f"with the welcome, a break and the wrap-up it needs {need}"
            )

    slots: list[Slot] = []

    def add(minutes_: int, kind: str, title: str, lab=None, note="") -> None:
        start = slots[-1].end_min if slots else 0
        slots.append(Slot(start, minutes_, kind, title, lab, note))

    add(opts["welcome_min"], "welcome", "Welcome; every seat runs the pre-flight check")
    session, lunch_taken, covered = opts["welcome_min"], False, []
    for i, lab in enumerate(labs):
        lab_min, note = lab_minutes(lab, device, opts["working_min"])
        block = opts["reading_min"] + lab_min
        pause, kind = 0, ""
        if covered and session + block > opts["session_max_min"]:
            now = slots[-1].end_min
            if not lunch_taken and minutes >= opts["lunch_from_min"] and now >= 0.35 * minutes:
                pause, kind = opts["lunch_min"], "lunch"
            else:
                pause, kind = opts["break_min"], "break"
        if slots[-1].end_min + pause + block + reserved + opts["wrap_up_min"] > minutes:
            if not covered and closing is None:
                need = opts["welcome_min"] + block + opts["wrap_up_min"]
                raise ValueError(
                    f"minutes={minutes} is too short: the welcome, the first lab "
                    f"({lab.title!r}, {block} min with its chapter) and the wrap-up need {need}"
                )
            left_out = tuple(labs[i:])
            break
        if pause:
            add(pause, kind, "Lunch" if kind == "lunch" else "Break")
            lunch_taken = lunch_taken or kind == "lunch"
            session = 0
        add(opts["reading_min"], "chapter", titles.get(lab.chapter, lab.chapter), lab)
        add(lab_min, "lab", lab.title, lab, note)
        session += block
        covered.append(lab)
    else:
        left_out = ()
    if closing is not None:
        if covered:
            add(opts["break_min"], "break", "Break")
        add(opts["reading_min"], "chapter", titles.get(closing.chapter, closing.chapter), closing)
        add(closing_min, "lab", closing.title, closing, f"closing session; {closing_note}")
        covered.append(closing)
    add(opts["wrap_up_min"], "wrap-up", "Wrap-up: takeaways, questions, what to try next")
    return Agenda(
        name=name or f"{minutes}-minute workshop",
        minutes=minutes,
        slots=tuple(slots),
        covered=tuple(covered),
        left_out=left_out,
        device=device,
        working_min=opts["working_min"],
        reading_min=opts["reading_min"],
    )


def standard_agendas(
    labs: Sequence[LabInfo], closing: LabInfo | None = None, **kwargs
) -> list[Agenda]:
    """The three formats of :data:`STANDARD_FORMATS`, each made with :func:`make_agenda`.

    ``closing`` (the capstone lab) closes the half day and the full day; the taster keeps to
    the first chapters and leaves it out.
    """
    return [
        make_agenda(labs, minutes, name=name, closing=closing if minutes >= 210 else None, **kwargs)
        for name, minutes in STANDARD_FORMATS
    ]


def labs_in_course_order(root: str | Path = ".") -> list[LabInfo]:
    """The labs under ``root/notebooks`` in the order ``root/_toc.yml`` lists them.

    Labs missing from the table of contents come last, in file-name order.
    """
    import yaml

    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    order = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    labs = list_labs(root / "notebooks")

    def position(lab: LabInfo) -> int:
        entry = f"notebooks/{lab.path.stem}"
        return order.index(entry) if entry in order else len(order)

    return sorted(labs, key=position)
