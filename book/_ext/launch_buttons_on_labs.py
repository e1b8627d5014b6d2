"""Keep the "launch" (Colab) buttons on lab pages only.

sphinx-book-theme adds launch buttons to every page that is a notebook, and a chapter
written as a MyST Markdown notebook counts as one. Colab cannot open ``.md`` files, so on a
chapter page the button would lead to an error; the chapters link to their labs instead.
"""

from __future__ import annotations

from pathlib import Path

LAUNCH_ICON = "fas fa-rocket"


def _drop_launch_buttons(app, pagename, templatename, context, doctree):
    if Path(app.env.doc2path(pagename)).suffix == ".ipynb":
        return
    buttons = context.get("header_buttons")
    if buttons:
        buttons[:] = [b for b in buttons if b.get("icon") != LAUNCH_ICON]


def setup(app):
    # After sphinx-book-theme's own handler (default priority 500) has added the buttons.
    app.connect("html-page-context", _drop_launch_buttons, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
