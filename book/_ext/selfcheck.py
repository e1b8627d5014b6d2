"""Load the self-check questions' script and stylesheet on the pages that have a question.

A chapter's "Check yourself" cells (``gpulab.labkit.selfcheck.selfcheck``) write HTML forms
into the page; ``static/selfcheck.js`` checks the reader's answers there with no kernel, and
``static/selfcheck.css`` styles them in the theme's light and dark modes. Pages without a
question load neither.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"
MARKER = 'class="gl-selfcheck"'
SCRIPT, STYLESHEET = "selfcheck.js", "selfcheck.css"


def has_selfcheck(body: str) -> bool:
    """Whether a page's HTML body holds a self-check question.

    >>> has_selfcheck('<div class="gl-selfcheck" id="gl-sc-x">')
    True
    >>> has_selfcheck("<p>gl-selfcheck</p>")
    False
    """
    return MARKER in body


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
    app.connect("html-page-context", _add_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
