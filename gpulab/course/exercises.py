"""Find the exercises of a chapter and of a lab, and their worked solutions.

Chapters write exercises as sphinx-exercise directives::

    :::{exercise}
    :label: gpu-basics-ex1
    ...
    :::

    :::{solution} gpu-basics-ex1          (or ````{solution-start} gpu-basics-ex1 ... solution-end)
    :class: dropdown
    ...

Labs follow the convention of :mod:`gpulab.course.student`: a code cell tagged ``solution`` holds
``answer = ...`` and the next code cell calls ``gl.check``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gpulab.course.solutions import without_colab_title

__all__ = [
    "ChapterExercise",
    "LabExercise",
    "chapter_exercises",
    "exercise_question",
    "lab_exercises",
]

# An opening fence of a directive: ``:::{name} args`` or ```` ```{name} args ````.
_DIRECTIVE = re.compile(r"^\s*(?::{3,}|`{3,})\{(?P<name>[a-z-]+)\}[ \t]*(?P<arg>[^\n]*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[a-z-]+):[ \t]*(?P<value>[^\n]*)$")


@dataclass(frozen=True)
class ChapterExercise:
    """One ``{exercise}`` of a chapter and what is known about its solution.

    Attributes
    ----------
    label : str
        The exercise's ``:label:`` (empty when it has none).
    line : int
        Line number of the directive in the chapter's source (1-based).
    has_solution : bool
        A ``{solution}`` or ``{solution-start}`` names this label.
    solution_collapsed : bool
        That solution has ``:class: dropdown``.
    """

    label: str
    line: int
    has_solution: bool
    solution_collapsed: bool


@dataclass(frozen=True)
class LabExercise:
    """One exercise of a lab: its ``solution`` code cell and the check after it."""

    cell_index: int
    question: str
    checked: bool


def _directives(text: str) -> list[tuple[str, str, dict[str, str], int]]:
    """(name, argument, options, line) of every directive that opens in ``text``."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        options = {}
        for following in lines[i + 1 :]:
            opt = _OPTION.match(following)
            if not opt:
                break
            options[opt["key"]] = opt["value"].strip()
        found.append((m["name"], m["arg"].strip(), options, i + 1))
    return found


def chapter_exercises(path: str | Path) -> list[ChapterExercise]:
    """The exercises of the MyST chapter at ``path``, each with its solution's state.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> page = pathlib.Path(tempfile.mkdtemp()) / "ch.md"
    >>> _ = page.write_text(":::{exercise}\\n:label: ch-ex1\\nQ\\n:::\\n\\n"
    ...                     ":::{solution} ch-ex1\\n:class: dropdown\\nA\\n:::\\n")
    >>> chapter_exercises(page)
    [ChapterExercise(label='ch-ex1', line=1, has_solution=True, solution_collapsed=True)]
    """
    directives = _directives(Path(path).read_text(encoding="utf-8"))
    solutions: dict[str, bool] = {}
    for name, arg, options, _ in directives:
        if name in ("solution", "solution-start") and arg:
            collapsed = "dropdown" in options.get("class", "").split()
            solutions[arg] = solutions.get(arg, False) or collapsed
    return [
        ChapterExercise(
            label=options.get("label", ""),
            line=line,
            has_solution=options.get("label", "") in solutions,
            solution_collapsed=solutions.get(options.get("label", ""), False),
        )
        for name, _, options, line in directives
        if name == "exercise"
    ]


_QUESTION = re.compile(r"^#\s*Exercise\b.*$")


def exercise_question(source: str) -> str | None:
    r"""The question line of a lab's solution cell: its first line, ``# Exercise N: ...``.

    A Colab form title above it (``# @title Worked solution ...``) is skipped.

    Only this line stays in a student copy. Comments below it explain the worked answer,
    so they go with it.

    Examples
    --------
    >>> exercise_question("# Exercise 2: the T4's ridge point.\n# peak / bandwidth\nanswer = 1")
    "# Exercise 2: the T4's ridge point."
    >>> exercise_question('# @title Worked solution\n# Exercise 1: FLOPs?\nanswer = 2')
    '# Exercise 1: FLOPs?'
    >>> exercise_question("# 2 FLOPs per element\nanswer = 2") is None
    True
    """
    source = without_colab_title(source.lstrip("\n"))
    first = source.lstrip("\n").splitlines()[0].strip() if source.strip() else ""
    return first if _QUESTION.match(first) else None


def lab_exercises(path: str | Path) -> list[LabExercise]:
    """The exercises of the lab notebook at ``path``: its ``solution``-tagged code cells.

    ``question`` is the cell's ``# Exercise N: ...`` first line (what the student copy
    keeps; empty when missing); ``checked``
    says whether the next code cell calls ``check(``.
    """
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]

    def source(cell) -> str:
        src = cell.get("source", "")
        return "".join(src) if isinstance(src, list) else src

    found = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or "solution" not in cell.get("metadata", {}).get(
            "tags", []
        ):
            continue
        after = next((c for c in cells[i + 1 :] if c.get("cell_type") == "code"), None)
        checked = after is not None and "check(" in source(after)
        found.append(LabExercise(i, exercise_question(source(cell)) or "", checked))
    return found
