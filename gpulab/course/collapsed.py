"""A lab's machinery cells stay folded, and its visible code cells stay short.

Two kinds of code cell in a lab are machinery a learner need not read to follow the idea:

* the **setup cell** (tagged ``setup``, written by ``python -m gpulab stamp``), which installs
  gpulab where it is missing and reports the device in one line;
* a ``%%writefile`` cell, a script the lab writes and then runs (a ``torchrun`` worker); the
  Markdown cell before it says what the script does.

Both are collapsed with their output left open: the tag ``hide-input`` folds the code on the
book's page (Jupyter Book shows a "Show code cell source" toggle) and the metadata
``jupyter.source_hidden`` folds it in JupyterLab, Notebook 7 and VS Code.
``python -m gpulab stamp`` applies :func:`collapse_machinery` to every lab.

Every other code cell a learner sees (all but these and the worked solutions, which
:mod:`gpulab.course.solutions` closes) holds at most :data:`MAX_VISIBLE_LINES` non-blank
lines: what teaches is the measurement and one call that reports it; formatting, judging,
retries and metadata live in the package. :func:`long_visible_cells` lists the cells over it.
"""

from __future__ import annotations

from pathlib import Path

from gpulab.course.labs import rewrite_labs

__all__ = [
    "HIDE_INPUT_TAG",
    "MAX_VISIBLE_LINES",
    "collapse_lab_machinery",
    "collapse_machinery",
    "is_machinery",
    "long_visible_cells",
    "machinery_problems",
]

#: Jupyter Book's tag that folds a cell's code and leaves its output open.
HIDE_INPUT_TAG = "hide-input"
#: The most non-blank lines a learner-visible code cell holds.
MAX_VISIBLE_LINES = 25
_SETUP_TAG = "setup"
_SOLUTION_TAG = "solution"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def is_machinery(cell: dict) -> bool:
    """Whether ``cell`` is a setup cell or a ``%%writefile`` script (shown collapsed).

    Examples
    --------
    >>> is_machinery({"cell_type": "code", "metadata": {"tags": ["setup"]}, "source": "x"})
    True
    >>> is_machinery({"cell_type": "code", "metadata": {}, "source": "%%writefile a.py\\nx=1"})
    True
    >>> is_machinery({"cell_type": "code", "metadata": {}, "source": "x = 1"})
    False
    """
    if cell.get("cell_type") != "code":
        return False
    return _SETUP_TAG in _tags(cell) or _source(cell).lstrip().startswith("%%writefile")


def _is_collapsed(cell: dict) -> bool:
    hidden = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True
    return hidden and HIDE_INPUT_TAG in _tags(cell)


def collapse_machinery(nb: dict) -> bool:
    """Fold the code of every machinery cell of ``nb`` (a notebook as a dict), in place.

    Adds the tag ``hide-input`` and ``jupyter.source_hidden``; the output stays open (the
    setup cell's one-line device report, a script's "Writing ..." line). Running it twice
    changes nothing the second time. Returns whether ``nb`` changed.

    Examples
    --------
    >>> nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["setup"]},
    ...                  "source": "info = gl.setup_lab()", "outputs": []}]}
    >>> collapse_machinery(nb), collapse_machinery(nb)
    (True, False)
    >>> nb["cells"][0]["metadata"]
    {'tags': ['setup', 'hide-input'], 'jupyter': {'source_hidden': True}}
    """
    changed = False
    for cell in nb["cells"]:
        if not is_machinery(cell) or _is_collapsed(cell):
            continue
        meta = cell.setdefault("metadata", {})
        tags = meta.setdefault("tags", [])
        if HIDE_INPUT_TAG not in tags:
            tags.append(HIDE_INPUT_TAG)
        meta["jupyter"] = {**meta.get("jupyter", {}), "source_hidden": True}
        changed = True
    return changed


def machinery_problems(nb: dict) -> list[str]:
    """What leaves a machinery cell of ``nb`` open or unexplained; empty when none does.

    A machinery cell must be collapsed (:func:`collapse_machinery`), and a ``%%writefile``
    script follows a Markdown cell that says what the script does.

    Examples
    --------
    >>> script = {"cell_type": "code", "metadata": {}, "source": "%%writefile a.py\\nx = 1"}
    >>> print(*machinery_problems({"cells": [script]}), sep="\\n")
    cell 0: the code is not collapsed (python -m gpulab stamp folds it)
    cell 0: no Markdown cell before the script says what it does
    >>> intro = {"cell_type": "markdown", "metadata": {}, "source": "This script adds."}
    >>> nb = {"cells": [intro, script]}
    >>> _ = collapse_machinery(nb)
    >>> machinery_problems(nb)
    []
    """
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if not is_machinery(cell):
            continue
        if not _is_collapsed(cell):
            problems.append(
                f"cell {index}: the code is not collapsed (python -m gpulab stamp folds it)"
            )
        if _SETUP_TAG in _tags(cell):
            continue
        before = nb["cells"][index - 1] if index else {}
        if before.get("cell_type") != "markdown" or not _source(before).strip():
            problems.append(f"cell {index}: no Markdown cell before the script says what it does")
    return problems


def _non_blank_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def long_visible_cells(nb: dict, limit: int = MAX_VISIBLE_LINES) -> list[tuple[int, int]]:
    """The learner-visible code cells of ``nb`` over ``limit`` non-blank lines.

    Worked solutions (tagged ``solution``) and collapsed machinery cells are not counted; a
    ``%%writefile`` cell that is not collapsed is.

    Parameters
    ----------
    nb : dict
        The notebook, as read by ``json`` or ``nbformat``.
    limit : int
        The most non-blank lines a visible cell may hold.

    Returns
    -------
    list of (int, int)
        ``(cell index, non-blank lines)`` for each cell over the limit, in order.

    Examples
    --------
    >>> long_cell = {"cell_type": "code", "metadata": {}, "source": "x = 1\\n\\n" * 30}
    >>> solution = {**long_cell, "metadata": {"tags": ["solution"]}}
    >>> long_visible_cells({"cells": [long_cell, solution]})
    [(0, 30)]
    >>> long_visible_cells({"cells": [long_cell]}, limit=30)
    []
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit={limit!r} must be an int (non-blank lines)")
    if limit < 1:
        raise ValueError(f"limit={limit!r} must be at least 1 line")
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code" or _SOLUTION_TAG in _tags(cell):
            continue
        if is_machinery(cell) and _is_collapsed(cell):
            continue
        lines = _non_blank_lines(_source(cell))
        if lines > limit:
            found.append((index, lines))
    return found


def collapse_lab_machinery(root: str | Path = ".") -> list[Path]:
    """Collapse the machinery cells of every lab in ``root/notebooks``; return those changed."""
    return rewrite_labs(root, collapse_machinery)
