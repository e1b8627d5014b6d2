"""Keyboard tab stops on scrollable code, worked out without stalling the page's first seconds.

The theme makes each code block, output and table that scrolls sideways focusable, so that a
keyboard can scroll it: when the page has loaded it measures every such element. Measuring an
element inside a closed ``<details>`` (a lab's hidden cell source, a worked solution) makes the
browser lay out that hidden content first, one block after another; on a lab page with long
hidden scripts that was the page's largest task: about 0.1 s of this machine's CPU, 0.4 s or
more on the phone Lighthouse simulates (``tests/test_lighthouse.py``).

This extension changes the theme's script, as the build writes it, to leave closed
``<details>`` alone, and adds ``tab-stops.js``, which measures what a ``<details>`` holds when
the reader opens it. The change is made on the exact text of the theme's function: a theme whose
script differs fails the build with a warning naming this file, not silently.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

SCRIPT = "tab-stops.js"
THEME_SCRIPT = "_static/scripts/pydata-sphinx-theme.js"
#: The theme's per-element update (pydata-sphinx-theme 0.16-0.17, minified), and its change.
MEASURE = (
    ".forEach(e=>{e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1})"
)
MEASURE_OPEN_ONLY = (
    '.forEach(e=>{e.closest("details:not([open])")||'
    "(e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1)})"
)


def patched(script: str) -> str | None:
    """The theme's ``script`` measuring open content only; None if its text is not the one
    this extension knows.

    >>> patched("a" + MEASURE + "b") == "a" + MEASURE_OPEN_ONLY + "b"
    True
    >>> patched(MEASURE_OPEN_ONLY) == MEASURE_OPEN_ONLY, patched("other") is None
    (True, True)
    """
    if MEASURE_OPEN_ONLY in script:
        return script
    if script.count(MEASURE) != 1:
        return None
    return script.replace(MEASURE, MEASURE_OPEN_ONLY)


def _write(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / THEME_SCRIPT
    if not path.is_file():
        return
    script = patched(path.read_text(encoding="utf-8"))
    if script is None:
        logger.warning(
            f"{THEME_SCRIPT}: the theme's tab-stop code is not the one book/_ext/tab_stops.py "
            "changes (a new theme version?); hidden content is measured on load"
        )
        return
    path.write_text(script, encoding="utf-8")


def setup(app):
    # Its folder, book/_ext/static, is on the static path through lean_pages.py.
    app.add_js_file(SCRIPT, loading_method="defer")
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
