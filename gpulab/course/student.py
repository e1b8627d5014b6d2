"""Student copies of the labs: the worked solutions taken out, everything else kept.

The course's convention for exercises in a lab (see :mod:`gpulab.labkit.answers`):

* a code cell tagged ``solution`` holds the worked answer as ``answer = ...``. Its first line,
  ``# Exercise N: <question>``, stays in the student copy; the rest of the cell (the
  worked answer and the comments explaining it) is replaced by
  ``answer = None  # your answer here``;
* the next code cell calls ``gl.check(answer, expected=...)``. It stays, but its recorded
  output (which would say "Correct: ... expected ...") is cleared;
* markdown cells tagged ``solution`` explain a solution and are removed.

A student copy runs to the end: each check cell prints "Not answered yet" until the learner
fills in ``answer``.

``python -m gpulab student OUTDIR`` writes a copy of every lab in ``notebooks/`` to
``OUTDIR``.
"""

from __future__ import annotations

from pathlib import Path

from gpulab.course.exercises import exercise_question

__all__ = ["SOLUTION_TAG", "STUDENT_ANSWER", "student_copy", "write_student_copies"]

SOLUTION_TAG = "solution"
STUDENT_ANSWER = "answer = None  # your answer here"


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _clear_outputs(cell) -> None:
    cell["outputs"] = []
    cell["execution_count"] = None


def _calls_check(cell) -> bool:
    return cell.get("cell_type") == "code" and "check(" in cell.get("source", "")


def student_copy(nb):
    """Return a student copy of the notebook ``nb`` (an ``nbformat`` v4 notebook).

    The input is not modified. Code cells tagged ``solution`` keep their
    ``# Exercise N:`` question line and get ``answer = None``; markdown cells tagged
    ``solution`` are dropped; the outputs of solution cells and of the check cell after
    each are cleared. The notebook's ``gpulab`` metadata gains ``"student_copy": true``.

    Raises
    ------
    ValueError
        If a ``solution`` code cell does not assign ``answer`` (the convention is broken,
        and the student copy would not say what to fill in).

    Examples
    --------
    >>> import nbformat
    >>> from gpulab.course.student import student_copy
    >>> nb = nbformat.v4.new_notebook()
    >>> worked = "# Exercise 1: how many FLOPs?\\n# 2 per term\\nanswer = 2 * 8**3"
    >>> nb.cells = [nbformat.v4.new_code_cell(worked, metadata={"tags": ["solution"]}),
    ...             nbformat.v4.new_code_cell("gl.check(answer, expected=1024)")]
    >>> print(student_copy(nb).cells[0].source)
    # Exercise 1: how many FLOPs?
    answer = None  # your answer here
    """
    import copy

    import nbformat

    out = copy.deepcopy(nb)
    cells = []
    clear_next_check = False
    for index, cell in enumerate(out.cells):
        tags = _tags(cell)
        if SOLUTION_TAG in tags:
            if cell.cell_type == "markdown":
                continue
            if cell.cell_type == "code":
                if "answer" not in cell.source:
                    raise ValueError(
                        f"cell {index} is tagged {SOLUTION_TAG!r} but does not assign `answer`; "
                        "a solution code cell must hold `answer = ...`"
                    )
                question = exercise_question(cell.source)
                cell.source = "\n".join([*([question] if question else []), STUDENT_ANSWER])
                # The learner's own cell: open, no "Worked solution" form (see solutions.py).
                cell.metadata.pop("cellView", None)
                cell.metadata.pop("jupyter", None)
                _clear_outputs(cell)
                clear_next_check = True
        elif clear_next_check and cell.cell_type == "code":
            if _calls_check(cell):
                _clear_outputs(cell)
            clear_next_check = False
        cells.append(cell)
    out.cells = cells
    out.metadata.setdefault("gpulab", {})["student_copy"] = True
    nbformat.validate(out)
    return out


def write_student_copies(outdir: str | Path, notebooks: str | Path = "notebooks") -> list[Path]:
    """Write a student copy of every lab in ``notebooks`` to ``outdir``; return the paths.

    Parameters
    ----------
    outdir : path
        Folder for the copies (created if missing). It must not be the labs' own folder:
        the copies would overwrite the instructor versions.
    notebooks : path
        The folder of lab notebooks.
    """
    import nbformat

    notebooks, outdir = Path(notebooks), Path(outdir)
    if not notebooks.is_dir():
        raise FileNotFoundError(f"notebooks={str(notebooks)!r} is not a directory of labs")
    if outdir.resolve() == notebooks.resolve():
        raise ValueError(
            f"outdir={str(outdir)!r} is the labs' own folder; choose another folder "
            "so the solutions are not overwritten"
        )
    labs = sorted(notebooks.glob("*.ipynb"))
    if not labs:
        raise FileNotFoundError(f"no lab notebooks (*.ipynb) in {notebooks}")
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in labs:
        copy = student_copy(nbformat.read(path, as_version=4))
        target = outdir / path.name
        nbformat.write(copy, target)
        written.append(target)
    return written
