"""Light pages and their heads: ``book/_ext/lean_pages.py`` and ``book/_ext/page_meta.py``.

The functions are checked on small inputs; the built book (``book_build``) is checked for what
each page loads before any interaction and what its head says. ``tests/test_lighthouse.py``
measures the result in a browser; ``tests/test_browser.py`` checks that math and widgets still
render with the network blocked.
"""

from __future__ import annotations

import doctest
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docutils.core import publish_doctree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import css_bundle  # noqa: E402
import icon_fonts  # noqa: E402
import lean_pages  # noqa: E402
import math_svg  # noqa: E402
import page_meta  # noqa: E402
import plain_code  # noqa: E402
import tab_stops  # noqa: E402

from gpulab.course.labs import PLACEHOLDER_REPOSITORY_URL  # noqa: E402


@pytest.mark.parametrize(
    "module", [lean_pages, page_meta, css_bundle, icon_fonts, plain_code, tab_stops, math_svg]
)
def test_the_examples_in_the_docstrings_hold(module) -> None:
    failed, tried = doctest.testmod(module)
    assert tried > 0 and failed == 0


def test_the_description_is_the_first_paragraph_of_prose() -> None:
    doctree = publish_doctree(
        "Title\n=====\n\nShort.\n\n::\n\n   code long enough to be taken for prose, but code\n\n"
        "This page teaches how a GPU moves data, and why bandwidth limits most kernels in "
        "practice; it then measures it.\n\nSecond paragraph.\n"
    )
    text = page_meta.first_paragraph(doctree)
    assert text.startswith("This page teaches how a GPU moves data")
    short = page_meta.shorten(text, 60)
    assert len(short) <= 60 and short.endswith("…") and " " not in short[-2:]


def test_the_published_address_comes_from_the_configuration() -> None:
    assert page_meta.published_base("", PLACEHOLDER_REPOSITORY_URL) is None
    assert page_meta.published_base("", "https://github.com/Ann/gpu.git") == (
        "https://ann.github.io/gpu/"
    )
    assert page_meta.published_base("https://book.example/", PLACEHOLDER_REPOSITORY_URL) == (
        "https://book.example/"
    )
    assert page_meta.waiting_items(None) == list(page_meta.SEO_WAITING)


def test_head_scripts_are_deferred_and_heavy_ones_dropped() -> None:
    from sphinx.builders.html._assets import _JavaScript

    scripts = [
        _JavaScript("_static/documentation_options.js"),
        _JavaScript("_static/doctools.js"),
        _JavaScript(None, body='const THEBE_JS_URL = "x"'),
        _JavaScript("_static/../mathjax-3.2.2/tex-chtml-full.js", defer="defer"),
        _JavaScript("_static/../requirejs-2.3.4/require.js"),
        _JavaScript("_static/doctools.js"),
    ]
    kept = lean_pages.lean_scripts(scripts, widget_scripts=["../requirejs-2.3.4/require.js"])
    assert [s.filename for s in kept] == ["_static/documentation_options.js", "_static/doctools.js"]
    deferred = [lean_pages.deferred(s) for s in kept]
    assert [s.attributes.get("defer") for s in deferred] == [None, "defer"]


def test_a_bundle_keeps_its_sources_urls_working_from_its_own_folder() -> None:
    css = 'a{background:url("../img/x.png?v=1#s")}b{src:url(https://cdn/x.woff2)}'
    moved = css_bundle.rebase_urls(css, "_static/styles/theme.css", "_static/styles/bundle-1.css")
    assert moved == css
    moved = css_bundle.rebase_urls(css, "_static/styles/theme.css", "_static/bundle.css")
    assert 'url("img/x.png?v=1#s")' in moved and "url(https://cdn/x.woff2)" in moved


def test_code_loses_only_spans_that_look_like_plain_text() -> None:
    """Unwrapping changes no character of the code and keeps every coloured token."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    source = 'def f(x, y=2):\n    return {"a": x ** y}  # c\n'
    block = highlight(source, PythonLexer(), HtmlFormatter())
    classes = plain_code.plain_classes("a11y-high-contrast-light", "a11y-high-contrast-dark")
    lean = plain_code.unwrap(block, classes)
    text = lambda h: html.unescape(re.sub(r"<[^>]+>", "", h))  # noqa: E731
    assert text(lean) == text(block) and len(lean) < len(block)
    spans = lambda h: re.findall(r'<span class="([^"]+)">', h)  # noqa: E731
    assert set(spans(lean)) == set(spans(block)) - classes
    assert {"k", "nf", "s2", "c1"} <= set(spans(lean)) and not set(spans(lean)) & classes
    # A style that colours names keeps them.
    assert "n" not in plain_code.plain_classes("a11y-high-contrast-light", "monokai", "tango")


def test_the_icon_table_is_read_from_the_themes_stylesheet() -> None:
    table, direct = icon_fonts.icon_table(
        '.fa-github:before{content:"\\f09b"}.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}'
        '.x:after{content:"\\f107";font-family:Font Awesome}.fa-lg{font-size:1.2em}'
    )
    assert table == {"fa-github": {0xF09B}, "fa-bars": {0xF0C9}, "fa-navicon": {0xF0C9}}
    assert direct == {0xF107}


def test_the_theme_script_is_changed_only_where_this_book_knows_it() -> None:
    theme = "function I(){const e=()=>{document.querySelectorAll(s)" + tab_stops.MEASURE + "}}"
    changed = tab_stops.patched(theme)
    assert changed is not None and 'closest("details:not([open])")' in changed
    assert tab_stops.patched(changed) == changed
    assert tab_stops.patched(theme.replace("scrollWidth", "offsetWidth")) is None


# --------------------------------------------------------------------------- the built book


def _head(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    return text[: text.index("</head>")]


@pytest.fixture(scope="module")
def built_pages(book_build) -> dict[str, Path]:
    html = book_build.html
    if book_build.returncode != 0 or not (html / "index.html").is_file():
        pytest.fail(f"the book build failed; end of its log:\n{book_build.log[-3000:]}")
    pages = {}
    for folder in ("book", "notebooks", "zh/book", "zh/notebooks"):
        for page in sorted((html / folder).glob("*.html")):
            pages[page.relative_to(html).as_posix()] = page
    assert len(pages) > 20, sorted(pages)
    return pages


def test_no_page_loads_font_awesome_js_thebe_or_the_search_index(built_pages) -> None:
    heavy = ("fontawesome.js", "sphinx-thebe", "THEBE_JS_URL", "searchindex.js", "searchtools.js")
    found = [f"{rel}: {h}" for rel, page in built_pages.items() for h in heavy if h in _head(page)]
    assert not found, found


def test_mathjax_and_the_widget_manager_load_later_and_only_where_needed(built_pages) -> None:
    problems = []
    for rel, page in built_pages.items():
        head, body = _head(page), page.read_text(encoding="utf-8")
        scripts = " ".join(
            " ".join(json.loads(html.unescape(urls)))
            for tag in re.findall(r"<script [^>]*lazy-loader\.js[^>]*>", head)
            for urls in re.findall(r'data-scripts="([^"]*)"', tag)
        )
        if re.search(r'<script[^>]*src="[^"]*(mathjax|embed-amd|require\.js)', head):
            problems.append(f"{rel}: MathJax or the widget manager loads with the page")
        if "mathjax" in scripts and not lean_pages.has_math(body.split("</head>", 1)[1]):
            problems.append(f"{rel}: MathJax on a page without math")
        has_views = 'type="application/vnd.jupyter.widget-view+json"' in body
        if has_views != ("embed-amd" in scripts):
            problems.append(f"{rel}: recorded widgets {has_views}, widget manager loader "
                            f"{'embed-amd' in scripts}")  # fmt: skip
    assert not problems, "\n".join(problems)


def test_every_page_has_a_description_an_icon_and_no_relative_hreflang(built_pages) -> None:
    problems = []
    for rel, page in built_pages.items():
        head = _head(page)
        description = re.search(r'<meta name="description" content="([^"]+)"', head)
        # A title-based one (a page with no prose) can be short in Chinese: 10 characters.
        if not description or len(description.group(1).strip()) < 10:
            problems.append(f"{rel}: no meta description")
        if 'rel="icon"' not in head:
            problems.append(f"{rel}: no icon")
        for href in re.findall(r'<link rel="(?:alternate|canonical)"[^>]*href="([^"]+)"', head):
            if not href.startswith("https://"):
                problems.append(f"{rel}: a relative address in the head: {href}")
    assert not problems, "\n".join(problems)


def test_chinese_pages_are_described_in_chinese(built_pages) -> None:
    head = _head(built_pages["zh/book/kernels.html"])
    description = re.search(r'<meta name="description" content="([^"]+)"', head).group(1)
    assert re.search(r"[\u4e00-\u9fff]", description), description


def _edition_root(html: Path, rel: str) -> Path:
    return html / "zh" if rel.startswith("zh/") else html


def test_each_page_links_one_stylesheet_made_from_the_files_as_built(built_pages) -> None:
    """One request before the first paint, holding each source as it was last written (the
    theme rewrites pygments.css when the build ends: a bundle written before it would give
    code the wrong colours)."""
    html = next(iter(built_pages.values())).parents[1]
    problems, seen = [], set()
    for rel, page in built_pages.items():
        links = re.findall(r'<link rel="stylesheet"[^>]*href="([^"]+)"', _head(page))
        if len(links) != 1 or "/_static/styles/bundle-" not in f"/{links[0]}":
            problems.append(f"{rel}: {len(links)} stylesheet links {links[:3]}")
            continue
        bundle = (page.parent / links[0]).resolve()
        sources = css_bundle.sources_of(bundle)
        for needed in ("_static/basic.css", "_static/styles/pydata-sphinx-theme.css",
                       "_static/pygments.css"):  # fmt: skip
            if needed not in sources:
                problems.append(f"{rel}: {needed} is not in {bundle.name}")
        if bundle in seen:
            continue
        seen.add(bundle)
        root = _edition_root(html, rel)
        text = bundle.read_text(encoding="utf-8")
        pygments_css = (root / "_static" / "pygments.css").read_text(encoding="utf-8")
        if pygments_css.strip() not in text:
            problems.append(f"{bundle.name}: its pygments.css is not the one the build wrote")
        for url in re.findall(r"""url\(\s*["']?([^"')]+)""", text):
            if url.startswith(("data:", "http", "//", "#")):
                continue
            if not (bundle.parent / url.split("?")[0].split("#")[0]).is_file():
                problems.append(f"{bundle.name}: url({url}) points at no file")
    assert not problems, "\n".join(sorted(set(problems))[:20])


def test_every_icon_the_pages_use_has_its_glyph_in_small_fonts(built_pages) -> None:
    from fontTools.ttLib import TTFont

    html = next(iter(built_pages.values())).parents[1]
    for root in (html, html / "zh"):
        fonts = root / icon_fonts.FONT_DIR
        cmaps = {name: set(TTFont(fonts / name).getBestCmap()) for name in icon_fonts.FONTS}
        every = set().union(*cmaps.values())
        needed = icon_fonts.needed(root)
        # The menu, search, GitHub (a brand) and the admonitions' "note" circle.
        assert {0xF0C9, 0xF002, 0xF09B, 0xF05A} <= needed
        assert 0xF09B in cmaps["fa-brands-400.woff2"] and 0xF0C9 in cmaps["fa-solid-900.woff2"]
        theme = {name: set(TTFont(fonts / name.replace(".woff2", ".ttf")).getBestCmap())
                 for name in icon_fonts.FONTS}  # fmt: skip
        drawable = needed & set().union(*theme.values())
        assert drawable <= every, sorted(map(hex, drawable - every))
        size = sum((fonts / name).stat().st_size for name in icon_fonts.FONTS)
        assert size < 20_000, f"{root}: icon fonts weigh {size:,} bytes"


def test_code_blocks_hidden_toggles_and_tab_stops_in_the_built_pages(built_pages) -> None:
    html = next(iter(built_pages.values())).parents[1]
    problems = []
    for rel, page in built_pages.items():
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r'<div class="highlight"><pre>(.*?)</pre>', text, re.DOTALL)
        if any('<span class="n">' in block or '<span class="p">' in block for block in blocks):
            problems.append(f"{rel}: highlighted code still wraps names or punctuation")
        if 'aria-label="Toggle hidden content"' in text:
            problems.append(f"{rel}: a toggle named otherwise than by its text")
        if "doc-biblioentry" in text:
            problems.append(f"{rel}: a deprecated ARIA role (doc-biblioentry)")
        for table in re.findall(r"<table\b.*?</table>", text, re.DOTALL):
            corner = re.search(r"<thead>\s*<tr[^>]*>\s*<th[^>]*>\s*(<p>\s*</p>)?\s*</th>", table)
            if corner and re.search(r"<tbody>\s*<tr[^>]*>\s*<td>", table):
                problems.append(f"{rel}: a table with an empty corner and no row headers")
        if _head(page).count('name="viewport"') != 1:
            problems.append(f"{rel}: not exactly one viewport tag")
        if "tab-stops.js" not in _head(page):
            problems.append(f"{rel}: tab-stops.js is not loaded")
    for root in (html, html / "zh"):
        theme = (root / tab_stops.THEME_SCRIPT).read_text(encoding="utf-8")
        if tab_stops.MEASURE_OPEN_ONLY not in theme or tab_stops.MEASURE in theme:
            problems.append(f"{root}: the theme's script measures hidden content")
    assert not problems, "\n".join(problems[:20])


def test_the_colour_theme_is_settled_before_the_first_paint(built_pages) -> None:
    """The theme's script would otherwise set it after loading, restyling the whole page."""
    head = _head(built_pages["book/kernels.html"])
    script = head[head.index('<script data-cfasync="false">') :].split("</script>", 1)[0]
    assert "prefers-color-scheme: dark" in script and "root.dataset.theme" in script
    assert head.index("data-cfasync") < head.index('rel="stylesheet"')


# --------------------------------------------------------------------------- math as SVG


@pytest.fixture(scope="module")
def node_with_mathjax() -> str:
    found = math_svg.node()
    if found is None:
        from tests.test_browser import _unavailable

        _unavailable("Node or npm's mathjax-full is missing (python3 course.py install)")
    return found


def _render(node: str, page: Path) -> subprocess.CompletedProcess:
    command = [node, str(math_svg.RENDERER), str(page)]
    return subprocess.run(
        command, cwd=math_svg.NODE_DIR, capture_output=True, text=True, timeout=120
    )


def test_the_renderer_typesets_each_kind_of_formula_and_stops_at_a_bad_one(
    node_with_mathjax, tmp_path
) -> None:
    node = 'class="math notranslate nohighlight"'
    page = tmp_path / "page.html"
    page.write_text(
        f"<html><head><title>t</title></head><body><p>Inline <span {node}>\\(a_i &lt; b\\)</span>"
        f'</p><div {node} id="eq">\n\\[\\frac{{n}}{{\\beta}}\\]</div>'
        f"<div {node}>\\begin{{align}}x &amp;= 1\\\\ y &amp;= 2\\end{{align}}</div></body></html>",
        encoding="utf-8",
    )
    done = _render(node_with_mathjax, page)
    assert done.returncode == 0, done.stderr
    assert "typeset 3 formulas on 1 pages" in done.stdout
    text = page.read_text(encoding="utf-8")
    assert text.count('data-typeset="svg"') == 3 and "\\(" not in text and "\\[" not in text
    assert 'id="eq"' in text and text.count("<mjx-assistive-mml") == 3
    assert 'display="true"' in text  # the two display formulas, which keep their TeX
    assert 'data-tex="\\frac{n}{\\beta}"' in text and "x &amp;= 1" in text
    assert text.count('id="MJX-SVG-global-cache"') == 1 and text.count("MJX-SVG-styles") == 1
    assert "<mi>a</mi>" in text or "<mi>a" in text  # the MathML a screen reader reads
    # Run again: a typeset page is left as it is.
    again = _render(node_with_mathjax, page)
    assert again.returncode == 0 and page.read_text(encoding="utf-8") == text

    bad = tmp_path / "bad.html"
    bad.write_text(f"<body><span {node}>\\(\\frac{{1}}\\)</span></body>", encoding="utf-8")
    failed = _render(node_with_mathjax, bad)
    assert failed.returncode != 0 and "\\\\frac{1}" in failed.stderr and "bad.html" in failed.stderr


def test_every_formula_is_typeset_when_the_book_is_built(node_with_mathjax, built_pages) -> None:
    """No page loads MathJax for its formulas; each formula is SVG with MathML beside it."""
    problems, typeset = [], 0
    for rel, page in built_pages.items():
        text = page.read_text(encoding="utf-8")
        nodes = re.findall(r'<(?:span|div) class="math notranslate nohighlight"[^>]*>', text)
        if 'data-near="span.math, div.math"' in _head(page):
            problems.append(f"{rel}: MathJax is loaded for the formulas")
        if not nodes:
            continue
        plain = [n for n in nodes if 'data-typeset="svg"' not in n]
        if plain:
            problems.append(f"{rel}: {len(plain)} of {len(nodes)} formulas left as TeX")
        if text.count('id="MJX-SVG-global-cache"') != 1 or text.count("<mjx-assistive-mml") < len(
            nodes
        ):
            problems.append(f"{rel}: no glyph cache, or formulas without MathML")
        typeset += len(nodes)
    assert not problems, "\n".join(problems[:20])
    assert typeset > 500, f"only {typeset} formulas in the built book"
