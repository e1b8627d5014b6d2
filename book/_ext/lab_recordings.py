"""Show every recording of a lab on its page: which devices ran it, and their outputs in tabs.

A lab page is built from the lab notebook, whose outputs are the CPU recording. This
extension opens the page with a note listing each recording with its provenance (or saying
that there is no GPU recording yet), and, where ``notebooks/recordings/`` holds recordings
made on other device classes (``gpulab.course.recordings``: each GPU of the spec registry its
own), puts the outputs of each code cell whose source is unchanged in a tab per class, beside
the CPU's. The tabs are plain HTML and CSS
(radio buttons): no script, so they work offline and in both colour themes.

The note is added after Sphinx has translated the page, so its sentences are not in the page's
catalogue: the Chinese edition translates them in ``ui.po`` (:func:`ui_messages`), each
translated first and then filled in with its values (a label, a date, a count).
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes

from gpulab.course.recordings import (
    SUMMARY_MESSAGES,
    cell_tabs,
    lab_recordings,
    outputs_html,
    recordings_summary,
)

HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell"}
STATIC = Path(__file__).parent / "static"
ROOT = Path(__file__).resolve().parents[2]
TITLE = "Recorded outputs"
NO_OUTPUT = "(No output on this device.)"
TABS = "Each output below has a tab per recording."
#: What a note says of cells whose code changed since a recording: (one cell, several cells),
#: for cells that show the CPU output only and for cells that have no tab for one recording.
CPU_ONLY = (
    "1 cell changed since the {label} recording and shows the CPU output only.",
    "{count} cells changed since the {label} recording and show the CPU output only.",
)
NO_TAB = (
    "1 cell changed since the {label} recording and has no tab for it.",
    "{count} cells changed since the {label} recording and have no tab for it.",
)
EVERY_CPU_ONLY = (
    "1 cell changed since every recording and shows the CPU output only.",
    "{count} cells changed since every recording and show the CPU output only.",
)


def ui_messages() -> list[str]:
    """The sentences this extension writes into a lab page, for ``ui.po``."""
    return [TITLE, *SUMMARY_MESSAGES, TABS, *CPU_ONLY, *NO_TAB, *EVERY_CPU_ONLY, NO_OUTPUT]


def _same(text: str) -> str:
    return text


def _translator(app):
    """``text -> text`` in the edition's language (``ui.po``); the identity in English."""
    language = app.config.language
    if not language or language.startswith("en"):
        return _same
    from live_calculators import translator  # book/_ext: the same table the calculators use

    app.env.note_dependency(str(ROOT / "locale" / language / "LC_MESSAGES" / "ui.po"))
    return translator(language)


def _lab_source(app, docname: str) -> Path | None:
    path = Path(app.env.doc2path(docname))
    return path if path.suffix == ".ipynb" and path.stem.endswith("_lab") else None


def _inline(text: str) -> list[nodes.Node]:
    """Text with `code` spans, as docutils nodes."""
    parts = text.split("`")
    return [nodes.literal(text=p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def _note(lines: list[str], _=_same) -> nodes.admonition:
    note = nodes.admonition(classes=["note", "gl-recordings-note"])
    note += nodes.title(text=_(TITLE))
    for line in lines:
        note += nodes.paragraph("", "", *_inline(line))
    return note


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _same_code(a: dict | None, b: dict | None) -> bool:
    return (
        bool(a and b)
        and a["cell_type"] == b["cell_type"] == "code"
        and ("".join(a["source"]) == "".join(b["source"]))
    )


def _add_tabs(doctree, lab: Path, others: list, _=_same) -> dict[str, set[int]]:
    """Wrap each recorded cell's outputs in tabs: the CPU's, then each recording's whose cell
    has the same code.

    Returns
    -------
    dict
        For each recording in ``others``, by its label: the indices of the shown cells whose
        code changed since that recording (they have no tab for it).
    """
    cpu = _cells(lab)
    other_cells = [_cells(recording.path) for recording in others]
    changed: dict[str, set[int]] = {recording.label: set() for recording in others}
    for cell_node in list(doctree.findall(nodes.container)):
        if cell_node.get("nb_element") != "cell_code":
            continue
        index = cell_node["cell_index"]
        cpu_cell = cpu[index] if index < len(cpu) else None
        tags = set((cpu_cell or {}).get("metadata", {}).get("tags", []))
        if cpu_cell is None or tags & HIDDEN_OUTPUT_TAGS:
            continue
        panels = []
        for recording, cells in zip(others, other_cells, strict=True):
            other = cells[index] if index < len(cells) else None
            if _same_code(cpu_cell, other):
                panels.append((recording.label, outputs_html(other)))
            else:
                changed[recording.label].add(index)
        if not panels or (not any(html for _, html in panels) and not cpu_cell.get("outputs")):
            continue
        output = next(
            (n for n in cell_node.children if n.get("nb_element") == "cell_code_output"), None
        )
        if output is None:  # no output on the CPU: say so in its tab
            output = nodes.paragraph(text=_(NO_OUTPUT))
            cell_node += output
        labels = ["CPU"] + [label for label, _html in panels]
        pieces = cell_tabs(f"gl-rec-{index}", labels, name=_(TITLE))
        wrapper = nodes.container(classes=["gl-recordings-cell"])
        position = cell_node.index(output)
        cell_node.remove(output)
        wrapper += nodes.raw("", pieces[0], format="html")
        wrapper += output
        for piece, (_label, html) in zip(pieces[1:-1], panels, strict=True):
            wrapper += nodes.raw("", piece + html, format="html")
        wrapper += nodes.raw("", pieces[-1], format="html")
        cell_node.insert(position, wrapper)
    return changed


def _sentence(cells: set[int], label: str, forms: tuple[str, str], _=_same) -> list[str]:
    """``["2 cells changed since ..."]`` from ``forms`` (one cell, several), translated and
    filled in; [] for no cells."""
    if not cells:
        return []
    form = forms[0] if len(cells) == 1 else forms[1]
    return [_(form).format(count=len(cells), label=label)]


def _changed_sentences(changed: dict[str, set[int]], _=_same) -> str:
    """What the note says about cells whose code changed since a recording ("" if none did).

    Each cell counts once per recording it changed since, and once among those that show the
    CPU output only, however many recordings it changed since.

    >>> _changed_sentences({"GPU (H100)": {3, 5}})
    '2 cells changed since the GPU (H100) recording and show the CPU output only.'
    """
    if not changed:
        return ""
    if len(changed) == 1:
        ((label, cells),) = changed.items()
        return " ".join(_sentence(cells, label, CPU_ONLY, _))
    sentences = []
    for label, cells in changed.items():
        sentences += _sentence(cells, label, NO_TAB, _)
    sentences += _sentence(set.intersection(*changed.values()), "", EVERY_CPU_ONLY, _)
    return " ".join(sentences)


def _add_recordings(app, doctree) -> None:
    lab = _lab_source(app, app.env.docname)
    if lab is None:
        return
    found = lab_recordings(lab)
    others = [recording for kind, recording in found.items() if kind != "cpu"]
    for recording in others:
        app.env.note_dependency(str(recording.path.resolve()))
    _ = _translator(app)
    lines = recordings_summary(found, _)
    if others:
        changed = _changed_sentences(_add_tabs(doctree, lab, others, _), _)
        lines.append(f"{_(TABS)} {changed}".strip())
    section = doctree.next_node(nodes.section)
    if section is None:
        return
    section.insert(1, _note(lines, _))  # right under the page's title


def _add_static(app) -> None:
    app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("builder-inited", _add_static)
    app.connect("doctree-read", _add_recordings)
    app.add_css_file("lab_recordings.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
