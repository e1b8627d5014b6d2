"""A lab's worked solutions stay closed on its page until the reader opens them.

Every cell of a lab tagged ``solution`` (code or Markdown, see ``gpulab.course.solutions``) is
put in a "Worked solution" box, an HTML ``<details>`` element: closed in the readers' book,
open in the instructors' build (``python3 course.py build --solutions-open`` sets
``gpulab_solutions_open``). The Colab form title that opens a solution code cell in the
notebook is a line for Colab, not for the page: it is left out of the code shown.

MyST-NB keeps a code cell in a container (with the class ``tag_solution``) but passes a
Markdown cell's content straight into the page, with nothing to say where the cell begins or
ends. So when a lab is read, each Markdown solution cell's text is put in a
``gpulab-solution`` directive, and each code one has its title line dropped; the box's text
is not in the page's catalogue, so the Chinese edition translates it in ``ui.po``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from gpulab.course.solutions import SOLUTION_TAG, SOLUTION_TITLE, without_colab_title
from gpulab.course.translation import ui_table

ROOT = Path(__file__).resolve().parents[2]
STATIC = Path(__file__).parent / "static"
DIRECTIVE = "gpulab-solution"
#: Longer than any colon fence a solution's Markdown uses itself.
FENCE = ":" * 8
#: The CSS class of the box (the tests look for it in the built pages).
BOX_CLASS = "gpulab-solution"


def ui_messages() -> list[str]:
    """The words this extension writes into a page, for ``ui.po``."""
    return [SOLUTION_TITLE]


class solution_box(nodes.General, nodes.Element):  # noqa: N801 (docutils names nodes so)
    """A worked solution: a ``<details>`` box in HTML, its content as is elsewhere."""


def _is_solution(cell: dict) -> bool:
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def mark_solutions(text: str) -> str:
    """The notebook ``text`` (JSON) as the page shows it: Markdown solutions in the directive,
    code solutions without Colab's title line. A notebook with no solutions comes back as is.

    >>> cell = {"cell_type": "markdown", "metadata": {"tags": ["solution"]}, "source": "2n³"}
    >>> json.loads(mark_solutions(json.dumps({"cells": [cell]})))["cells"][0]["source"]
    '::::::::{gpulab-solution}\\n2n³\\n::::::::'
    """
    nb = json.loads(text)
    cells = [cell for cell in nb.get("cells", []) if _is_solution(cell)]
    if not cells:
        return text
    for cell in cells:
        source = _source(cell)
        if cell.get("cell_type") == "markdown":
            cell["source"] = f"{FENCE}{{{DIRECTIVE}}}\n{source.strip()}\n{FENCE}"
        elif cell.get("cell_type") == "code":
            cell["source"] = without_colab_title(source)
    return json.dumps(nb, ensure_ascii=False)


class SolutionDirective(SphinxDirective):
    """``{gpulab-solution}``: its content in a closed "Worked solution" box."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        box = solution_box()
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


def _read_lab(app, docname: str, source: list[str]) -> None:
    if Path(app.env.doc2path(docname)).suffix == ".ipynb":
        source[0] = mark_solutions(source[0])


def _box_code_cells(app, doctree) -> None:
    """Put each code cell tagged ``solution`` (MyST-NB's container) in a box."""
    cls = f"tag_{SOLUTION_TAG}"
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") == "cell_code" and cls in cell["classes"]:
            box = solution_box()
            cell.replace_self(box)
            box.append(cell)


def _title(translator) -> str:
    language = translator.builder.config.language
    if not language or language.startswith("en"):
        return SOLUTION_TITLE
    table = ui_table(ROOT / "locale" / language / "LC_MESSAGES" / "ui.po")
    return table.get(SOLUTION_TITLE, SOLUTION_TITLE)


def visit_box_html(self, node) -> None:
    opened = " open" if self.builder.config.gpulab_solutions_open else ""
    self.body.append(
        f'<details class="{BOX_CLASS}"{opened}>\n<summary>{html.escape(_title(self))}</summary>\n'
    )


def depart_box_html(self, node) -> None:
    self.body.append("</details>\n")


def _pass(self, node) -> None:
    pass


def _add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    # True in the instructors' build (course.py instructor_config): every solution open.
    app.add_config_value("gpulab_solutions_open", False, "html", [bool])
    app.add_node(
        solution_box,
        html=(visit_box_html, depart_box_html),
        latex=(_pass, _pass),
        text=(_pass, _pass),
        man=(_pass, _pass),
        texinfo=(_pass, _pass),
    )
    app.add_directive(DIRECTIVE, SolutionDirective)
    app.connect("source-read", _read_lab)
    app.connect("doctree-read", _box_code_cells)
    app.connect("builder-inited", _add_static)
    app.add_css_file("solution-cells.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
