"""The chapters' self-check questions, read from their sources: for the translations.

Each chapter's "Check yourself" section holds code cells that call
:func:`gpulab.labkit.selfcheck.selfcheck` with templates and the figures that fill them. The
Chinese edition translates the templates in ``locale/zh_CN/LC_MESSAGES/selfchecks.po``:
``python3 course.py translations`` extracts them with :func:`messages` into
``selfchecks.pot``, and the book's ``selfcheck`` extension renders each question of a Chinese
page again, translated, with :func:`page_checks`.

The cells are run here as the book runs them: every code cell of the chapter up to its last
self-check, in order, in one namespace that starts with ``import gpulab as gl``.

Run ``python -m gpulab.course.selfchecks [chapter.md ...]`` to print every question of the
chapters in English (default: all of ``book/``).
"""

from __future__ import annotations

import ast
import re
import sys
from contextlib import contextmanager
from pathlib import Path

from gpulab.labkit.selfcheck import SelfCheck

__all__ = ["cells", "messages", "page_checks", "translator", "write_template"]

#: A MyST code cell: its options (``:tags: [...]``) and its code.
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_OPTION = re.compile(r"^:")  # an option line, or the continuation of one


def cells(source: str) -> list[str]:
    """The code of every code cell of a chapter's MyST ``source`` up to its last self-check
    cell, in order (the self-checks use what the chapter computed before them).

    >>> cells("```{code-cell} ipython3\\nx = 1\\n```\\n"
    ...       "```{code-cell} ipython3\\n:tags: [remove-input]\\n\\nselfcheck('a')\\n```\\n"
    ...       "```{code-cell} ipython3\\ny = 2\\n```\\n")
    ['x = 1', "selfcheck('a')"]
    """
    found = []
    for match in _CELL.finditer(source):
        lines = match.group(1).splitlines()
        if lines and lines[0].strip() == "---":  # a YAML block of options
            end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
            lines = lines[end + 1 :]
        while lines and (_OPTION.match(lines[0]) or not lines[0].strip()):
            lines.pop(0)
        found.append("\n".join(lines).strip())
    last = max((i for i, code in enumerate(found) if "selfcheck(" in code), default=-1)
    return found[: last + 1]


def _run(code: str, namespace: dict, where: str) -> object:
    """Run a cell as Jupyter does: the value of its last expression, if it ends in one."""
    tree = ast.parse(code, filename=where)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, where, "exec"), namespace)  # noqa: S102 - the course's own chapters
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), where, "eval"), namespace)  # noqa: S307


def page_checks(path: str | Path) -> list[SelfCheck]:
    """Every self-check question of the chapter at ``path``, computed as the book computes it.

    Raises
    ------
    ValueError
        A self-check cell that does not end in a question.
    """
    path = Path(path).resolve()
    namespace: dict = {"__name__": "__selfcheck__"}
    exec("import gpulab as gl", namespace)  # noqa: S102
    found = []
    with _quiet(path.parent):
        for i, code in enumerate(cells(path.read_text(encoding="utf-8")), 1):
            value = _run(code, namespace, f"{path.name}, code cell {i}")
            if "selfcheck(" not in code:
                continue
            if not isinstance(value, SelfCheck):
                raise ValueError(
                    f"{path}: code cell {i} calls selfcheck but does not end in its question "
                    f"(it ends in {type(value).__name__})"
                )
            found.append(value)
    return found


@contextmanager
def _quiet(folder: Path):
    """In the chapter's folder (its relative paths), no printed output and no figure windows,
    while a chapter's cells run."""
    import contextlib
    import io
    import os

    saved = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "Agg"
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(folder):
            yield
    finally:
        if saved is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = saved
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


def messages(book: str | Path) -> list[tuple[str, str]]:
    """``(chapter, message)`` for every text of every chapter's self-checks a translation
    gives (:attr:`SelfCheck.messages`), chapters in name order, each message once."""
    found: dict[str, str] = {}
    for path in sorted(Path(book).glob("*.md")):
        if "selfcheck(" not in path.read_text(encoding="utf-8"):
            continue
        for check in page_checks(path):
            for message in check.messages:
                found.setdefault(message, path.stem)
    return [(chapter, message) for message, chapter in found.items()]


def write_template(book: str | Path, path: str | Path) -> Path:
    """``selfchecks.pot``: every chapter's self-check texts (:func:`messages`), each with its
    chapter as its location, for ``sphinx-intl update``."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalogue = Catalog(project="gpulab", charset="utf-8")
    for chapter, message in messages(book):
        catalogue.add(message, locations=[(f"book/{chapter}.md", 0)])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        write_po(handle, catalogue, omit_header=False, include_lineno=False)
    return path


def translator(catalogues: list[str | Path]):
    """``text -> text`` from the translated, non-fuzzy messages of ``catalogues`` (``.po``);
    a text none of them translates comes back as it is."""
    from gpulab.course.translation import ui_table

    table: dict[str, str] = {}
    for catalogue in catalogues:
        table.update(ui_table(catalogue))
    return lambda text: table.get(text, text)


def main(argv: list[str] | None = None) -> int:
    """Print every question of the given chapters (default: the book's), in English."""
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or sorted(Path("book").glob("*.md"))
    for path in paths:
        if "selfcheck(" in path.read_text(encoding="utf-8"):
            for check in page_checks(path):
                print(f"# {path.stem}: {check.label}\n{check}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
