"""Load the self-check questions' script and stylesheet on the pages that have a question,
and show the questions of the Chinese edition in Chinese.

A chapter's "Check yourself" cells (``gpulab.labkit.selfcheck.selfcheck``) write HTML forms
into the page; ``static/selfcheck.js`` checks the reader's answers there with no kernel, and
``static/selfcheck.css`` styles them in the theme's light and dark modes. Pages without a
question load neither.

A cell's output is the same in both editions (the English). For a translated edition, this
extension renders each question of the page again (:func:`translate_questions`): the chapter's
questions are computed as the book computes them (``gpulab.course.selfchecks``), and their
templates and the widget's words are translated from ``locale/<language>/LC_MESSAGES/``
``selfchecks.po`` and ``ui.po``, the figures filled in afterwards.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

from gpulab.labkit.selfcheck import WIDGET_TEXT

ROOT = Path(__file__).resolve().parents[2]
STATIC = Path(__file__).parent / "static"
MARKER = 'class="gl-selfcheck"'
SCRIPT, STYLESHEET = "selfcheck.js", "selfcheck.css"
#: The catalogue of the chapters' questions, beside ``ui.po``.
CATALOGUE = "selfchecks.po"
_LABEL = re.compile(r'<div class="gl-selfcheck" id="gl-sc-([a-z0-9-]+)"')


def ui_messages() -> list[str]:
    """The words of the widget itself (labels, the tolerance, the script's replies), for
    ``ui.po``; the questions go to ``selfchecks.po``."""
    return list(WIDGET_TEXT)


def has_selfcheck(body: str) -> bool:
    """Whether a page's HTML body holds a self-check question.

    >>> has_selfcheck('<div class="gl-selfcheck" id="gl-sc-x">')
    True
    >>> has_selfcheck("<p>gl-selfcheck</p>")
    False
    """
    return MARKER in body


def translator(language: str | None, root: Path = ROOT):
    """``text -> text`` in ``language`` for the questions (``None`` for English)."""
    if not language or language.lower().startswith("en"):
        return None
    from gpulab.course.selfchecks import translator as from_catalogues

    folder = root / "locale" / language / "LC_MESSAGES"
    return from_catalogues([folder / "ui.po", folder / CATALOGUE])


def translate_questions(doctree: nodes.Node, source: Path, _) -> int:
    """Render each question in ``doctree`` (a page read from ``source``) again, translated
    by ``_``; the number of questions rendered."""
    raws = [n for n in doctree.findall(nodes.raw) if has_selfcheck(n.astext())]
    if not raws:
        return 0
    from gpulab.course.selfchecks import page_checks

    checks = {check.label: check for check in page_checks(source)}
    done = 0
    for raw in raws:
        found = _LABEL.search(raw.astext())
        check = checks.get(found.group(1)) if found else None
        if check is None:
            continue
        translated = raw.astext().replace(check.to_html(), check.to_html(_))
        if translated != raw.astext():
            raw.replace_self(nodes.raw("", translated, format="html", classes=raw["classes"]))
            done += 1
    return done


def _translate(app, doctree) -> None:
    _ = translator(app.config.language)
    source = Path(app.env.doc2path(app.env.docname))
    if _ is not None and source.suffix == ".md":
        translate_questions(doctree, source, _)


def _add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def _add_assets(app, pagename, templatename, context, doctree) -> None:
    # Added during html-page-context, a file goes to this page only (Sphinx >= 3.5).
    if doctree is not None and has_selfcheck(context.get("body", "")):
        app.add_js_file(SCRIPT, defer="defer")
        app.add_css_file(STYLESHEET)


def setup(app):
    app.connect("builder-inited", _add_static)
    app.connect("doctree-read", _translate)
    app.connect("html-page-context", _add_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
