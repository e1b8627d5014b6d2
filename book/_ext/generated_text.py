"""Text a cell generated is not offered for translation: it stays as the code wrote it.

The Chinese edition (``locale/README.md``) translates what authors wrote. A cell's output
(printed lines, claims, generated tables, a recorded measurement) is computed, and changes
whenever a lab is re-recorded or the package changes; translated, it would go stale without
anyone seeing it. So every text node inside a cell's output is marked not translatable before
Sphinx extracts or applies translations, and each Chinese page with outputs says that such
text is in English (``language_switch``). A figure's caption and legend are the exception:
the author writes them in the cell's metadata, and they are translated like any prose.

A lab's provenance line (the Markdown cell tagged ``provenance``) is generated too: ``python
-m gpulab record`` writes it, with the device, the date and the run time of each recording.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform

from gpulab.course.labs import PROVENANCE_TAG

#: MyST-NB's container for a code cell's outputs.
OUTPUT_ELEMENT = "cell_code_output"


class KeepGeneratedTextUntranslated(SphinxTransform):
    """Mark every text element in a cell's outputs ``translatable = False``."""

    # Before Sphinx's own i18n transform (priority 20), which reads the flag.
    default_priority = 15

    def apply(self, **kwargs) -> None:
        written = _generated_markdown(Path(self.document.get("source", "")))
        if written:
            for paragraph in self.document.findall(nodes.paragraph):
                if paragraph.rawsource.strip() in written:
                    paragraph["translatable"] = False
        for container in self.document.findall(nodes.container):
            if container.get("nb_element") != OUTPUT_ELEMENT:
                continue
            for node in container.findall(nodes.TextElement):
                # Inline nodes are never offered on their own, and Sphinx removes any inline
                # that carries the flag (with its place in a link), so leave them unmarked.
                if not isinstance(node, nodes.Inline) and not _in_caption(node, container):
                    node["translatable"] = False


def _generated_markdown(source: Path) -> set[str]:
    """The text of a notebook's Markdown cells that a tool wrote (the provenance line)."""
    if source.suffix != ".ipynb" or not source.is_file():
        return set()
    cells = json.loads(source.read_text(encoding="utf-8")).get("cells", [])
    return {
        "".join(cell.get("source", "")).strip()
        for cell in cells
        if cell.get("cell_type") == "markdown"
        and PROVENANCE_TAG in cell.get("metadata", {}).get("tags", [])
    }


def _in_caption(node: nodes.Node, container: nodes.Element) -> bool:
    """Whether ``node`` is (in) a figure's caption or legend, below ``container``."""
    while node is not None and node is not container:
        if isinstance(node, nodes.caption | nodes.legend):
            return True
        node = node.parent
    return False


def setup(app):
    app.add_transform(KeepGeneratedTextUntranslated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
