"""Worked solutions closed until the learner opens them, in Jupyter, in Colab and in the book.

A lab's worked solutions are its cells tagged ``solution`` (see :mod:`gpulab.course.student`).
Each one is closed in every place a learner reads the lab:

* **Jupyter** (JupyterLab, Notebook 7, VS Code): the cell metadata ``jupyter.source_hidden``
  (and ``outputs_hidden`` for a code cell) collapses it behind a bar the reader clicks;
* **Colab**, which ignores that metadata: a solution code cell opens with a form title,
  ``# @title Worked solution { display-mode: "form" }`` (metadata ``cellView: "form"``), so
  Colab shows the title and hides the code until it is double-clicked. The title is a
  comment: the cell runs exactly as before;
* **the book**: the extension ``book/_ext/solution_cells.py`` puts every cell tagged
  ``solution`` in a closed "Worked solution" box; the instructors' build
  (``python3 course.py build --solutions-open``) shows them open.

``python -m gpulab stamp`` applies :func:`close_solutions` to every lab, so the metadata is the
same in all of them; :func:`open_solution_problems` says what a lab still shows open.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpulab.course.labs import rewrite_labs

__all__ = [
    "COLAB_TITLE",
    "SOLUTION_TITLE",
    "close_lab_solutions",
    "close_solutions",
    "open_solution_problems",
    "without_colab_title",
]

SOLUTION_TAG = "solution"
#: The label of a closed worked solution (the book's box, Colab's form title).
SOLUTION_TITLE = "Worked solution"
#: First line of a solution code cell: Colab's form title, in the form view (code hidden).
COLAB_TITLE = f'# @title {SOLUTION_TITLE} {{ display-mode: "form" }}'
# Colab accepts "#@title" and "# @title"; any earlier title line is replaced, not stacked.
_TITLE_LINE = re.compile(r"^#\s*@title\b")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _is_solution(cell: dict) -> bool:
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def without_colab_title(source: str) -> str:
    r"""``source`` without a leading Colab ``# @title`` line (what the cell shows in the book).

    Examples
    --------
    >>> without_colab_title(COLAB_TITLE + "\n# Exercise 1: FLOPs?\nanswer = 2")
    '# Exercise 1: FLOPs?\nanswer = 2'
    >>> without_colab_title("answer = 2")
    'answer = 2'
    """
    first, newline, rest = source.partition("\n")
    return rest if _TITLE_LINE.match(first.strip()) else source


def _closed(cell: dict) -> dict:
    """The closed form of the solution cell ``cell`` (a new dict; the input is left alone)."""
    meta = {key: value for key, value in cell.get("metadata", {}).items()}
    hidden = {"source_hidden": True}
    if cell.get("cell_type") == "code":
        hidden["outputs_hidden"] = True
        meta["cellView"] = "form"
    meta["jupyter"] = {**meta.get("jupyter", {}), **hidden}
    out = {**cell, "metadata": meta}
    if cell.get("cell_type") == "code":
        body = without_colab_title(_source(cell))
        out["source"] = f"{COLAB_TITLE}\n{body}".splitlines(keepends=True)
    return out


def close_solutions(nb: dict) -> bool:
    """Close every worked solution of the notebook ``nb`` (a notebook as a dict), in place.

    A cell tagged ``solution`` gets ``jupyter.source_hidden`` (and ``outputs_hidden`` for
    code); a code one also gets Colab's form title as its first line and
    ``cellView: "form"``. Running it twice changes nothing the second time. Returns whether
    ``nb`` changed.

    Examples
    --------
    >>> nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["solution"]},
    ...                  "source": "# Exercise 1: FLOPs?\\nanswer = 2", "outputs": []}]}
    >>> close_solutions(nb), close_solutions(nb)
    (True, False)
    >>> print("".join(nb["cells"][0]["source"]))
    # @title Worked solution { display-mode: "form" }
    # Exercise 1: FLOPs?
    answer = 2
    >>> nb["cells"][0]["metadata"]["jupyter"]
    {'source_hidden': True, 'outputs_hidden': True}
    """
    changed = False
    for index, cell in enumerate(nb["cells"]):
        if not _is_solution(cell):
            continue
        closed = _closed(cell)
        if closed["metadata"] != cell.get("metadata") or _source(closed) != _source(cell):
            nb["cells"][index] = closed
            changed = True
    return changed


def open_solution_problems(nb: dict) -> list[str]:
    """What keeps a worked solution of ``nb`` open somewhere; empty when all are closed.

    Examples
    --------
    >>> nb = {"cells": [{"cell_type": "markdown", "metadata": {"tags": ["solution"]},
    ...                  "source": "*Solution.* 2 FLOPs."}]}
    >>> open_solution_problems(nb)
    ['cell 0 (markdown): jupyter.source_hidden is not set']
    >>> _ = close_solutions(nb)
    >>> open_solution_problems(nb)
    []
    """
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if not _is_solution(cell):
            continue
        kind = cell.get("cell_type")
        meta = cell.get("metadata", {})
        where = f"cell {index} ({kind})"
        hidden = meta.get("jupyter", {})
        if hidden.get("source_hidden") is not True:
            problems.append(f"{where}: jupyter.source_hidden is not set")
        if kind == "code":
            if hidden.get("outputs_hidden") is not True:
                problems.append(f"{where}: jupyter.outputs_hidden is not set")
            if not _source(cell).startswith(COLAB_TITLE + "\n"):
                problems.append(f"{where}: does not start with Colab's title {COLAB_TITLE!r}")
            if meta.get("cellView") != "form":
                problems.append(f"{where}: cellView is not 'form'")
    return problems


def close_lab_solutions(root: str | Path = ".") -> list[Path]:
    """Close the worked solutions of every lab in ``root/notebooks``; return those changed."""
    return rewrite_labs(root, close_solutions)
