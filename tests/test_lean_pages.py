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
import sys
from pathlib import Path

import pytest
from docutils.core import publish_doctree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import lean_pages  # noqa: E402
import page_meta  # noqa: E402

from gpulab.course.labs import PLACEHOLDER_REPOSITORY_URL  # noqa: E402


@pytest.mark.parametrize("module", [lean_pages, page_meta])
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
