"""Takeaway boxes: a section's rule to carry away, styled the same on every page.

A teaching section ends in::

    :::{admonition} Takeaway
    :class: takeaway

    One sentence, imperative or law-like.
    :::

This extension only adds the stylesheet (``static/takeaways.css``), whose colours come from
the theme's variables so the box reads in its light and dark modes. ``tests/test_takeaways.py``
checks that every teaching chapter's sections end in one.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"


def _add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("builder-inited", _add_static)
    app.add_css_file("takeaways.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
