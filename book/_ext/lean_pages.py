"""Light pages: each page loads what it shows, and the heavy scripts only where they are used.

A reader on a phone or a slow link pays for every byte a page loads before it can be read.
Jupyter Book's theme and extensions load the same scripts on every page; this extension,
run after all of them, trims each page (``tests/test_lean_pages.py``,
``tests/test_lighthouse.py``):

* **Stylesheets**: one file per page (``css_bundle.py``), with ``basic.css`` in it rather than
  ``@import``-ed through the theme's ``theme.css``: one request before the first paint, not
  seventeen.
* **Icons**: the theme's Font Awesome JavaScript (1.5 MB) is not loaded; the theme's CSS draws
  the same icons with its icon fonts (``templates/layout.html``), cut to the glyphs the book
  uses (``icon_fonts.py``).
* **Preloads**: the theme's two scripts are not preloaded at high priority: they run after
  the page is parsed, and the first paint does not wait for them.
* **Search**: the search index and Sphinx's search scripts load on ``search.html`` only, where
  the search box sends the reader (the theme's search-as-you-type is off).
* **Thebe** (live code through a remote kernel) is not used by the course: its scripts, which
  also declared the same constant twice (a console error on every page), are left out.
* **Math**: typeset as SVG when the book is built (``math_svg.py``), so no page loads MathJax
  (1.3 MB) for its formulas. Where the build cannot (no Node), MathJax loads only on a page
  with math in it, by ``lazy-loader.js`` after the page has loaded, when the first formula
  comes within a screen of view (it then typesets the whole page).
* **Widgets**: on a lab page with recorded ipywidgets, the widget manager (4.4 MB, with
  RequireJS and ``offline-glue/``) is loaded the same way, when the first widget comes near;
  pages without widgets never load it.
* **Images** after the first load when the reader scrolls to them (``loading="lazy"``).
* **Render-blocking scripts**: Sphinx's and the theme's small scripts in the head
  (:data:`DEFERRED`) run deferred, after the page is parsed, as they wait for that anyway.
* Each script appears once (two extensions add sphinx-togglebutton's setting twice), and the
  viewport tag too (docutils writes one beside the layout's).
* **Code**: tokens that look like plain text are plain text, not one element each
  (``plain_code.py``).
* **Markup for assistive technology** (``accessible_markup``, ``contrast.css``): bibliography
  entries are list items, tables with an empty corner have row headers, and links on the
  exercises' tinted boxes are dark enough to read.
* **Hidden content**: the theme measures only what is shown for its keyboard tab stops
  (``tab_stops.py``); a hidden cell's toggle is named by its visible text ("Show code cell
  source"), not by a different ``aria-label``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from markupsafe import Markup
from math_svg import typesets_at_build

HERE = Path(__file__).parent
STATIC = HERE / "static"
TEMPLATES = HERE / "templates"
LAZY_LOADER = "lazy-loader.js"
CONTRAST_CSS = "contrast.css"
#: Head scripts that only act once the page is parsed: loaded with ``defer``, in their order.
DEFERRED = (
    "doctools.js",
    "sphinx_highlight.js",
    "clipboard.min.js",
    "copybutton.js",
    "sphinx-book-theme.js",
    "togglebutton.js",
    "design-tabs.js",
    "translations.js",  # the Chinese edition's: it calls doctools.js, so it follows it
)
#: Where the lazy loader looks for what needs MathJax and the widget manager.
MATH_SELECTOR = "span.math, div.math"
WIDGET_SELECTOR = 'script[type="application/vnd.jupyter.widget-view+json"]'
#: The theme's preload macro: its Font Awesome script and its script preloads, with comments.
_PRELOAD_TAGS = re.compile(
    r"[ \t]*<!--[^>]*-->\s*|<script defer src=\"[^\"]*fontawesome\.js[^\"]*\"></script>\s*"
    r"|<link rel=\"preload\" as=\"script\"[^>]*>\s*"
)
_THEME_CSS = re.compile(r'<link href="([^"]*)styles/theme\.css[^"]*"')
_WIDGET_VIEW = 'type="application/vnd.jupyter.widget-view+json"'
#: What MathJax typesets (Sphinx's math nodes, and TeX delimiters in cell outputs).
_MATH_MARKERS = ('class="math', "\\(", "\\[", "$$", "\\begin{")
_VIEWPORT = re.compile(r'<meta name="viewport"[^>]*>\s*')
_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
_ROW_FIRST_CELL = re.compile(
    r"(<tbody>\s*<tr[^>]*>\s*|</tr>\s*<tr[^>]*>\s*)<td>(.*?)</td>", re.DOTALL
)
_HIDDEN_TOGGLE = '<summary aria-label="Toggle hidden content">'
_IMG = re.compile(r"<img(?![^>]*\sloading=)")


def _filename(script) -> str:
    return str(getattr(script, "filename", script) or "")


def _body_of(script) -> str:
    return str((getattr(script, "attributes", None) or {}).get("body", ""))


def lean_scripts(scripts: list, *, widget_scripts: list[str]) -> list:
    """``scripts`` without Thebe's, MathJax's, the widget manager's and repeats (the two heavy
    ones come back through the lazy loader).

    >>> lean_scripts(["a.js", "sphinx-thebe.js", "a.js", "../mathjax/tex.js", "w.js"],
    ...              widget_scripts=["w.js"])
    ['a.js']
    """
    kept, seen = [], set()
    for script in scripts:
        name, body = _filename(script), _body_of(script)
        key = (name, body)
        if key in seen or "sphinx-thebe" in name or "THEBE_JS_URL" in body:
            continue
        if "mathjax" in name.lower() or name.removeprefix("_static/") in widget_scripts:
            continue
        seen.add(key)
        kept.append(script)
    return kept


def deferred(script):
    """``script`` loaded with ``defer`` if it is one of :data:`DEFERRED` (and loads at once)."""
    name = _filename(script).rsplit("/", 1)[-1]
    attributes = dict(getattr(script, "attributes", None) or {})
    if name not in DEFERRED or "defer" in attributes or "async" in attributes:
        return script
    return type(script)(script.filename, priority=script.priority, **attributes, defer="defer")


def has_math(body: str) -> bool:
    """Whether a page's HTML ``body`` has anything for MathJax to typeset.

    >>> has_math('<span class="math">\\\\(x\\\\)</span>'), has_math("<p>x</p>")
    (True, False)
    """
    return any(marker in body for marker in _MATH_MARKERS)


def toggles_named_by_their_text(body: str) -> str:
    """``body`` without the ``aria-label`` that myst-nb gives a hidden cell's toggle: its
    visible text ("Show code cell source") then names it, as a screen reader user hears it and
    a voice control user says it.

    >>> toggles_named_by_their_text('<summary aria-label="Toggle hidden content">')
    '<summary>'
    """
    return body.replace(_HIDDEN_TOGGLE, "<summary>")


def accessible_markup(body: str) -> str:
    """``body`` with three kinds of generated markup that screen readers (and axe) trip on
    made plain: a bibliography entry's deprecated ``doc-biblioentry`` role becomes a list
    item of its list; and in a table whose top-left header is empty, each row's first cell is
    that row's header (a reader hears "Peak FP32, H100 SXM: 67.0", not a bare number).

    >>> accessible_markup('<div class="citation" id="a" role="doc-biblioentry">')
    '<div class="citation" id="a" role="listitem">'
    >>> accessible_markup('<table><thead><tr><th class="head"><p></p></th><th>A</th></tr>'
    ...                   '</thead><tbody><tr class="row-even"><td><p>x</p></td><td>1</td></tr>'
    ...                   '</tbody></table>')  # doctest: +NORMALIZE_WHITESPACE
    '<table><thead><tr><th class="head"><p></p></th><th>A</th></tr></thead><tbody><tr
    class="row-even"><th scope="row"><p>x</p></th><td>1</td></tr></tbody></table>'
    """
    body = body.replace('role="doc-biblioentry"', 'role="listitem"')
    return _TABLE.sub(_rows_headed, body)


def _rows_headed(table: re.Match) -> str:
    text = table.group(0)
    head = re.search(r"<thead>\s*<tr[^>]*>\s*<th[^>]*>\s*(?:<p>\s*</p>)?\s*</th>", text)
    if not head:
        return text
    return _ROW_FIRST_CELL.sub(
        lambda row: f'{row.group(1)}<th scope="row">{row.group(2)}</th>', text
    )


def lazy_images(body: str) -> str:
    """Every ``<img>`` after the first gets ``loading="lazy"`` (the first may be on screen).

    >>> lazy_images('<img src="a.png"><img src="b.png"><img loading="eager" src="c.png">')
    '<img src="a.png"><img loading="lazy" src="b.png"><img loading="eager" src="c.png">'
    """
    count = 0

    def mark(match: re.Match) -> str:
        nonlocal count
        count += 1
        return match.group(0) if count == 1 else '<img loading="lazy"'

    return _IMG.sub(mark, body)


def without_import_chain(pre_assets: str) -> Markup:
    """The theme's first stylesheets with ``basic.css`` linked directly: the theme's
    ``theme.css`` only ``@import``-s it, one more round trip before the page can paint.

    >>> str(without_import_chain('<link href="../_static/styles/theme.css?digest=1" rel="x" />'))
    '<link href="../_static/basic.css" rel="x" />'
    """
    return Markup(_THEME_CSS.sub(r'<link href="\1basic.css"', str(pre_assets)))


def without_preloads(preloads: str) -> Markup:
    """The theme's preload tags without its Font Awesome script and its script preloads.

    >>> str(without_preloads('<!-- x -->\\n<script defer src="a/fontawesome.js?d=1"></script>\\n'
    ...                      '<link rel="preload" as="script" href="b.js" />\\n'))
    ''
    """
    return Markup(_PRELOAD_TAGS.sub("", str(preloads)).strip())


def one_viewport(metatags: str) -> str:
    """The page's meta tags without docutils' viewport tag: Sphinx's layout writes one already.

    >>> one_viewport('<meta name="viewport" content="width=device-width, initial-scale=1" />\\n'
    ...              '<meta name="description" content="x" />')
    '<meta name="description" content="x" />'
    """
    return _VIEWPORT.sub("", metatags)


def _page(app, pagename, templatename, context, doctree) -> None:
    context["lean_preloads"] = without_preloads
    if "metatags" in context:
        context["metatags"] = one_viewport(context["metatags"])
    context["lean_pre_assets"] = without_import_chain
    if "script_files" not in context:
        return
    body = context.get("body", "")
    widget_js = (
        list((app.config.nb_ipywidgets_js or {}).keys())
        if hasattr(app.config, "nb_ipywidgets_js")
        else []
    )
    scripts = context["script_files"]
    loads_widgets = any(_filename(s).removeprefix("_static/") in widget_js for s in scripts)
    mathjax = [_filename(s) for s in scripts if "mathjax" in _filename(s).lower()]
    math = has_math(body)
    scripts[:] = [deferred(s) for s in lean_scripts(scripts, widget_scripts=widget_js)]
    if not math:
        scripts[:] = [s for s in scripts if not _body_of(s).startswith("window.MathJax")]
    pathto = context["pathto"]
    math_urls = [pathto(name, 1) for name in mathjax] if math else []
    if math_urls and not typesets_at_build(app):
        _lazy(app, math_urls, MATH_SELECTOR)
    if loads_widgets and _WIDGET_VIEW in body:
        # MathJax first where there is math: the offline glue adapts widgets to it.
        urls = math_urls + [pathto("_static/" + name, 1) for name in widget_js]
        _lazy(app, urls, WIDGET_SELECTOR, **{"data-widgets": ""})
    context["css_files"][:] = [
        css for css in context["css_files"] if "sphinx-thebe" not in _filename(css)
    ]
    if body:
        context["body"] = accessible_markup(toggles_named_by_their_text(lazy_images(body)))


def _lazy(app, urls: list[str], near: str, **attributes: str) -> None:
    attributes = {"data-scripts": json.dumps(urls), "data-near": near, **attributes}
    app.add_js_file(LAZY_LOADER, loading_method="defer", **attributes)


def _paths(app, config) -> None:
    if str(TEMPLATES) not in map(str, config.templates_path):
        config.templates_path.append(str(TEMPLATES))


def _add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.setup_extension("css_bundle")
    app.setup_extension("icon_fonts")
    app.setup_extension("tab_stops")
    app.setup_extension("plain_code")
    app.setup_extension("math_svg")
    app.connect("config-inited", _paths)
    app.connect("builder-inited", _add_static)
    app.add_css_file(CONTRAST_CSS)
    # After every other extension has added its scripts to the page (myst-nb, mathjax, ...).
    app.connect("html-page-context", _page, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
