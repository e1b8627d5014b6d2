"""The rendered book, checked in a real browser (headless Chromium) with the network blocked.

The strict build from ``tests/conftest.py`` (fixture ``book_build``) is served on 127.0.0.1 and
every page built from ``book/*.md`` or ``notebooks/*.ipynb`` is opened once in one headless
Chromium; every page in ``_toc.yml`` must be among them (preface, chapters, labs, instructors'
pages, glossary, references). Every request to another host is aborted and recorded, so the
checks below show what a reader without network (or behind a firewall) gets:

* math is typeset, with no TeX errors: as SVG when the book was built (``math_svg.py``), or by
  MathJax in the page (the copy vendored in ``book/_vendor/``) where the build could not;
* every ``<img>`` has loaded, and no local asset answered 4xx/5xx;
* no script, stylesheet or font had to come from another host (math and widgets above all);
* every link to another page of the book (and its ``#anchor``) resolves;
* each widget view recorded in a lab's outputs is on its page and renders (the check is shown
  to work, and to fail when it should, on two small fixture pages);
* there are no uncaught JavaScript errors and no errors in the console;
* lab pages have a well-formed "Open in Colab" link to a notebook that exists in the repository
  (and no page has one while ``repository.url`` is the placeholder: nothing to open yet);
* sphinx-exercise solutions are collapsed until the reader clicks their toggle.

A summary of what each page loaded goes to ``test-artifacts/browser-report.json``. When a check
fails, each page it names is opened again and a full-page screenshot of what the reader sees
before clicking anything goes to ``test-artifacts/screenshots/<page>.png`` (only then: a
screenshot of every page would cost more time than the checks themselves).

Chromium comes from the system (Debian package ``chromium``), driven by the pip ``playwright``
package; no browser is ever downloaded. Without either, the tests are skipped, or they fail
when ``GPULAB_REQUIRE_BROWSER=1`` (CI). ``GPULAB_CHROMIUM`` may name another executable.
"""

from __future__ import annotations

import functools
import html as html_text
import http.server
import json
import os
import re
import shutil
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from gpulab.course.labs import is_published

pytestmark = pytest.mark.browser

REQUIRE_BROWSER = os.environ.get("GPULAB_REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LOCAL_HOST = "127.0.0.1"
LAUNCH_TIMEOUT_MS = 60_000
NAVIGATION_TIMEOUT_MS = 30_000
STEP_TIMEOUT_MS = 15_000
# Waits done inside the page (a promise that might never settle) give up after this long.
JS_WAIT_MS = 10_000
VIEWPORT = {"width": 1280, "height": 900}

COLAB = "https://colab.research.google.com"
# What the math and the widgets need; none of it may come from (or be blocked on) the network.
MATH_WIDGET_ASSET = re.compile(
    r"mathjax|require(?:js|\.min\.js|\.js)|@jupyter-widgets|html-manager|embed-amd", re.I
)
RAW_TEX = ("\\(", "\\)", "\\[", "\\]", "$$", "\\begin{")
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
#: Formulas the build typeset as SVG (book/_ext/math_svg.py).
BUILT_MATH = 'span.math[data-typeset="svg"], div.math[data-typeset="svg"]'
# Uncaught errors and console errors that come from the tool chain itself, not from the book
# (checked by substring). None now: book/_ext/lean_pages.py leaves out sphinx-thebe's scripts
# (which declared a constant twice) and starts the theme's colour mode as "auto" (it logged
# "Got invalid theme mode" on a reader's first page).
KNOWN_PAGE_ERRORS: tuple[str, ...] = ()
KNOWN_CONSOLE_ERRORS: tuple[str, ...] = KNOWN_PAGE_ERRORS
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


# --------------------------------------------------------------------------- helpers


def stylesheets(book_html: Path, rel: str) -> list[str]:
    """The stylesheets page ``rel`` is styled with, from the book's root: one bundle per page
    (``book/_ext/css_bundle.py``), counted as the files it was made from."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
    from css_bundle import linked_stylesheets

    return linked_stylesheets(book_html / rel, book_html)


def _unavailable(reason: str) -> None:
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (GPULAB_REQUIRE_BROWSER=1 requires the browser tests)")
    pytest.skip(reason)


def _find_chromium() -> str | None:
    for candidate in (
        os.environ.get("GPULAB_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)\n.*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
# Like myst's dollarmath with its defaults (spaces and digits allowed): two unescaped `$` in a
# paragraph. Display math `$$` and amsmath environments are matched separately.
_INLINE_DOLLAR = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\\n])+?(?<![\\$])\$(?!\$)")
_AMSMATH = re.compile(
    r"^\s*\\begin\{(?:equation|multline|gather|align|alignat|flalign|eqnarray)\*?\}", re.M
)


def _markdown_text(source: Path) -> str:
    """The Markdown a page is built from: the file, or a notebook's Markdown cells."""
    if source.suffix == ".ipynb":
        nb = json.loads(source.read_text(encoding="utf-8"))
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "markdown"]
        return "\n\n".join(
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
        )
    return source.read_text(encoding="utf-8")


def source_has_math(source: Path) -> bool:
    """Whether the page's source writes math (`$`, `$$`, `{math}`, amsmath), ignoring code."""
    text = _markdown_text(source)
    if re.search(r"\{math\}", text):  # role or directive; fenced ```{math} included
        return True
    text = _FENCE.sub("", text)
    text = _INLINE_CODE.sub("", text)
    return bool("$$" in text or _AMSMATH.search(text) or _INLINE_DOLLAR.search(text))


@dataclass(frozen=True)
class BookPage:
    rel: str  # path of the page under the HTML output, e.g. "book/intro.html"
    source: Path  # the file it was built from
    is_lab: bool  # built from notebooks/*.ipynb

    @property
    def name(self) -> str:
        return self.rel[: -len(".html")]


def discover_pages(html: Path, root: Path) -> list[BookPage]:
    """Every HTML page of the output that was built from book/*.md or notebooks/*.ipynb."""
    pages = []
    for path in sorted(html.rglob("*.html")):
        rel = path.relative_to(html).as_posix()
        parts = rel.split("/")
        if len(parts) != 2 or parts[1] in ("genindex.html", "search.html"):
            continue
        folder, stem = parts[0], parts[1][: -len(".html")]
        if folder == "book" and (root / "book" / f"{stem}.md").is_file():
            pages.append(BookPage(rel, root / "book" / f"{stem}.md", is_lab=False))
        elif folder == "notebooks" and (root / "notebooks" / f"{stem}.ipynb").is_file():
            pages.append(BookPage(rel, root / "notebooks" / f"{stem}.ipynb", is_lab=True))
    return pages


def _published(root: Path) -> bool:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return is_published(str((config.get("repository") or {}).get("url", "")))


def expected_colab_prefix(root: Path) -> str:
    """`https://colab.research.google.com/github/<owner>/<repo>/blob/<branch>/` from _config.yml."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = config.get("repository") or {}
    url = urlsplit(str(repo.get("url", "")).strip())
    assert url.scheme == "https" and url.hostname == "github.com", (
        f"_config.yml repository.url must be a https://github.com/<owner>/<repo> URL "
        f"(Colab opens notebooks from GitHub), got {repo.get('url')!r}"
    )
    owner_repo = url.path.strip("/").removesuffix(".git").split("/")
    assert len(owner_repo) == 2 and all(owner_repo), f"no <owner>/<repo> in {repo.get('url')!r}"
    branch = str(repo.get("branch") or "main").strip("/")
    book_path = str(repo.get("path_to_book") or "").strip("/")
    return f"{COLAB}/github/{owner_repo[0]}/{owner_repo[1]}/blob/{branch}/" + (
        f"{book_path}/" if book_path else ""
    )


# --------------------------------------------------------------------------- the page visits


@dataclass
class PageReport:
    """What one page did in the browser; the tests below assert on it."""

    rel: str
    is_lab: bool
    source_has_math: bool
    error: str | None = None  # an exception while visiting (navigation timeout, ...)
    blocked: list[list[str]] = field(default_factory=list)  # [resource type, url]
    failed_local: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    mathjax_version: str | None = None
    mathjax_state: str | None = None  # "done", "timeout", "error: ...", None: not waited for
    math_elements: int = 0
    math_untypeset: list[str] = field(default_factory=list)
    math_tex_errors: list[str] = field(default_factory=list)
    images_total: int = 0
    images_broken: list[str] = field(default_factory=list)
    widget_views: int = 0
    widgets_rendered: int = 0
    unnamed_controls: list[str] = field(default_factory=list)  # widget inputs with no name
    console_errors: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # absolute hrefs of every <a> on the page
    colab_links: list[str] = field(default_factory=list)
    solutions: list[dict[str, Any]] = field(default_factory=list)


_MATH_JS = r"""
() => {
  const els = Array.from(document.querySelectorAll("span.math, div.math"));
  const snip = (e) => (e.innerText || e.textContent || "").trim().slice(0, 80);
  return {
    version: (window.MathJax && window.MathJax.version) || null,
    total: els.length,
    untypeset: els.filter((e) => !e.querySelector("mjx-container")
                           || RAW.some((r) => (e.innerText || "").includes(r))).map(snip),
    errors: Array.from(document.querySelectorAll("mjx-merror"))
                 .map((e) => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 80))
      // an undefined macro is shown in red (TeX extension noundefined), not as an error
      .concat(Array.from(document.querySelectorAll('mjx-assistive-mml mtext[mathcolor="red"]'))
                 .map((e) => e.textContent.trim()).filter((t) => /^\\[A-Za-z]+$/.test(t))
                 .map((t) => "undefined control sequence " + t)),
  };
}
""".replace("RAW", json.dumps(RAW_TEX))

_WAIT_MATHJAX_JS = f"""
() => {{
  window.__gpulabMathJax = undefined;
  const mj = window.MathJax;
  if (!mj || !mj.startup || !mj.startup.promise) return false;
  const timer = setTimeout(() => (window.__gpulabMathJax = "timeout"), {JS_WAIT_MS});
  mj.startup.promise.then(
    () => {{ clearTimeout(timer); window.__gpulabMathJax = "done"; }},
    (e) => {{ clearTimeout(timer); window.__gpulabMathJax = "error: " + e; }});
  return true;
}}
"""

_SCROLL_TO_MATH_JS = """
() => {
  const first = document.querySelector("span.math, div.math");
  if (first) first.scrollIntoView();
}
"""

_IMAGES_JS = f"""
async () => {{
  const imgs = Array.from(document.images);
  imgs.forEach((img) => {{ img.loading = "eager"; }});
  const settled = (img) => img.complete ? Promise.resolve() : new Promise((ok) => {{
    img.addEventListener("load", ok, {{ once: true }});
    img.addEventListener("error", ok, {{ once: true }});
  }});
  await Promise.race([Promise.all(imgs.map(settled)),
                      new Promise((ok) => setTimeout(ok, {JS_WAIT_MS}))]);
  return {{
    total: imgs.length,
    broken: imgs.filter((img) => !(img.complete && img.naturalWidth > 0))
                .map((img) => img.currentSrc || img.src || img.outerHTML.slice(0, 120)),
  }};
}}
"""

# Rendered widget controls a screen reader could not name (no label, aria-label or labelledby).
_UNNAMED_CONTROLS_JS = """
() => Array.from(document.querySelectorAll(
    '.jupyter-widgets [role="slider"], .jupyter-widgets input, .jupyter-widgets select, '
    + '.jupyter-widgets textarea'))
  .filter((c) => !c.getAttribute("aria-label") && !c.getAttribute("aria-labelledby")
                 && !(c.labels && c.labels.length && c.labels[0].textContent.trim()))
  .map((c) => c.outerHTML.slice(0, 100))
"""

_WIDGETS_RENDERED_JS = (
    "() => document.querySelectorAll('.widget-subarea > .jupyter-widgets').length"
)


def _visit(context, base_url: str, page_info: BookPage, report: PageReport) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    page = context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)

    def on_response(response) -> None:
        url = urlsplit(response.url)
        if url.hostname == LOCAL_HOST and response.status >= 400 and url.path != "/favicon.ico":
            report.failed_local.append(f"HTTP {response.status} {response.url}")

    def on_request_failed(request) -> None:
        if urlsplit(request.url).hostname == LOCAL_HOST:
            report.failed_local.append(f"{request.failure} {request.url}")

    page.on("response", on_response)
    page.on("requestfailed", on_request_failed)
    page.on("pageerror", lambda exc: report.page_errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: report.console_errors.append(msg.text) if msg.type == "error" else None,
    )
    try:
        page.goto(f"{base_url}/{page_info.rel}", wait_until="load")

        # Math: typeset as SVG when the book was built (math_svg.py), or else by MathJax in the
        # page: wait until it has typeset the page (it is loaded where there is math, when the
        # first formula nears the screen: lean_pages.py; scroll there).
        math_elements = page.locator("span.math, div.math").count()
        built = page.locator(BUILT_MATH).count()
        has_math_elements = math_elements > 0
        if has_math_elements and built == math_elements:
            report.mathjax_state = "done: typeset when the book was built"
        elif report.source_has_math or has_math_elements:
            page.evaluate(_SCROLL_TO_MATH_JS)
            try:
                page.wait_for_function(
                    "() => window.MathJax && window.MathJax.startup"
                    " && window.MathJax.startup.promise"
                )
                page.evaluate(_WAIT_MATHJAX_JS)
                page.wait_for_function("() => window.__gpulabMathJax !== undefined")
                report.mathjax_state = page.evaluate("() => window.__gpulabMathJax")
            except PlaywrightTimeoutError:
                report.mathjax_state = "timeout: MathJax never loaded"
        math = page.evaluate(_MATH_JS)
        report.mathjax_version = math["version"]
        report.math_elements = math["total"]
        report.math_untypeset = math["untypeset"]
        report.math_tex_errors = math["errors"]

        # Widgets saved in the notebook: each view must become a rendered widget. The widget
        # manager loads when the first widget comes near the screen (lean_pages.py): scroll there.
        report.widget_views = page.locator(WIDGET_VIEW).count()
        if report.widget_views:
            page.evaluate(
                "(sel) => document.querySelector(sel).parentElement.scrollIntoView()", WIDGET_VIEW
            )
            try:
                page.wait_for_function(f"() => ({_WIDGETS_RENDERED_JS})() >= {report.widget_views}")
            except PlaywrightTimeoutError:
                pass
            report.widgets_rendered = page.evaluate(f"({_WIDGETS_RENDERED_JS})")
            report.unnamed_controls = page.evaluate(_UNNAMED_CONTROLS_JS)

        images = page.evaluate(_IMAGES_JS)
        report.images_total = images["total"]
        report.images_broken = images["broken"]

        report.links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        report.colab_links = page.eval_on_selector_all(
            f'a[href^="{COLAB}"]', "els => els.map(e => e.getAttribute('href'))"
        )

        report.solutions = _check_solutions(page)
    except Exception as exc:  # recorded, then reported by test_pages_load
        report.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        page.close()


def _check_solutions(page) -> list[dict[str, Any]]:
    """Each sphinx-exercise solution: hidden content before its toggle is clicked, shown after."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    results = []
    solutions = page.locator("div.solution")
    for i in range(solutions.count()):
        sol = solutions.nth(i)
        title = sol.locator(":scope > .admonition-title")
        content = sol.locator(":scope > :not(.admonition-title)")
        result: dict[str, Any] = {
            "id": sol.get_attribute("id"),
            "title": title.first.inner_text().strip()[:80] if title.count() else None,
            "dropdown": "dropdown" in (sol.get_attribute("class") or "").split(),
            "title_visible": title.count() > 0 and title.first.is_visible(),
            "content_blocks": content.count(),
            "visible_before_click": [content.nth(j).is_visible() for j in range(content.count())],
            "visible_after_click": None,
        }
        toggle = sol.locator(":scope > .admonition-title .toggle-button")
        if content.count() and toggle.count():
            toggle.first.click()
            try:
                content.first.wait_for(state="visible", timeout=STEP_TIMEOUT_MS)
            except PlaywrightTimeoutError:
                pass
            result["visible_after_click"] = [
                content.nth(j).is_visible() for j in range(content.count())
            ]
        results.append(result)
    return results


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session", autouse=True)
def chromium_executable() -> str:
    """Checked first (before the book is built) so a missing browser skips fast."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        _unavailable(f"the playwright Python package is not importable ({exc})")
    path = _find_chromium()
    if path is None:
        _unavailable(
            "no Chromium executable (looked for $GPULAB_CHROMIUM, chromium, chromium-browser, "
            "/usr/bin/chromium); install it with `apt-get install -y chromium`"
        )
    return path


@pytest.fixture(scope="module")
def book_html(book_build) -> Path:
    index = book_build.html / "index.html"
    if not index.is_file():
        pytest.fail(
            f"the book build produced no {index} (exit code {book_build.returncode}); "
            f"end of its log:\n{book_build.log[-3000:]}"
        )
    return book_build.html


@pytest.fixture(scope="module")
def base_url(book_html: Path) -> Iterator[str]:
    """The HTML output served by http.server on 127.0.0.1, on a free port, in a thread."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        timeout = 30  # seconds per connection: a stuck client cannot hang the server thread

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with served(book_html, QuietHandler, "book-http") as url:
        yield url


@contextmanager
def served(directory: Path, handler_class: type, name: str) -> Iterator[str]:
    """``directory`` served by ``handler_class`` on 127.0.0.1, on a free port, in a thread."""
    handler = functools.partial(handler_class, directory=str(directory))
    server = http.server.ThreadingHTTPServer((LOCAL_HOST, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL_HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(chromium_executable: str) -> Iterator[Any]:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        try:
            chromium = pw.chromium.launch(
                executable_path=chromium_executable,
                headless=True,
                args=CHROMIUM_ARGS,
                timeout=LAUNCH_TIMEOUT_MS,
            )
        except PlaywrightError as exc:
            _unavailable(f"Chromium at {chromium_executable} does not start: {exc}")
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def pages(book_html: Path, root: Path) -> list[BookPage]:
    found = discover_pages(book_html, root)
    assert found, f"no page under {book_html} was built from book/*.md or notebooks/*.ipynb"
    return found


def _offline_context(browser):
    """A browser context in which every request off 127.0.0.1 is aborted (not recorded)."""
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if urlsplit(route.request.url).hostname == LOCAL_HOST
            else route.abort("blockedbyclient")
        ),
    )
    return context


def _visit_all(browser, base_url: str, pages: list[BookPage]) -> dict[str, PageReport]:
    """Open each page once, with every request off 127.0.0.1 aborted and recorded."""
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    current: dict[str, PageReport] = {}  # the page being visited (one at a time)

    def block_off_host(route) -> None:
        request = route.request
        if urlsplit(request.url).hostname == LOCAL_HOST:
            route.continue_()
            return
        if "report" in current:
            current["report"].blocked.append([request.resource_type, request.url])
        route.abort("blockedbyclient")

    context.route("**/*", block_off_host)
    results: dict[str, PageReport] = {}
    try:
        for page_info in pages:
            report = PageReport(page_info.rel, page_info.is_lab, source_has_math(page_info.source))
            current["report"] = report
            _visit(context, base_url, page_info, report)
            results[page_info.rel] = report
    finally:
        current.clear()
        context.close()
    return results


@pytest.fixture(scope="module")
def reports(browser, base_url: str, pages: list[BookPage], root: Path) -> dict[str, PageReport]:
    """Every page of the book, visited once; a summary goes to test-artifacts/."""
    artifacts = root / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    # Screenshots left by an earlier run would be taken for this run's failures.
    shutil.rmtree(artifacts / "screenshots", ignore_errors=True)
    results = _visit_all(browser, base_url, pages)
    (artifacts / "browser-report.json").write_text(
        json.dumps({rel: asdict(r) for rel, r in results.items()}, indent=2), encoding="utf-8"
    )
    return results


_PAGE_AT_START = re.compile(r"[^\s:]+\.html")


@pytest.fixture(scope="module")
def screenshots(browser, base_url: str, pages: list[BookPage], root: Path):
    """For a failing check: full-page screenshots of the book pages its problems name.

    Each problem line starts with the page (``book/intro.html: ...``); each page is opened
    again, with the network blocked as in the visit, and shot as the reader first sees it.
    """
    from playwright.sync_api import Error as PlaywrightError

    known = {p.rel: p for p in pages}
    folder = root / "test-artifacts" / "screenshots"

    def take(problems: list[str]) -> list[str]:
        named = {m.group(0) for m in map(_PAGE_AT_START.match, problems) if m}
        rels = sorted(named & known.keys())
        if not rels:
            return []
        folder.mkdir(parents=True, exist_ok=True)
        context = _offline_context(browser)
        saved = []
        try:
            for rel in rels:
                shot = folder / f"{known[rel].name}.png"
                shot.parent.mkdir(parents=True, exist_ok=True)
                page = context.new_page()
                try:
                    page.goto(
                        f"{base_url}/{rel}", wait_until="networkidle", timeout=NAVIGATION_TIMEOUT_MS
                    )
                    page.screenshot(path=str(shot), full_page=True, timeout=NAVIGATION_TIMEOUT_MS)
                    saved.append(shot.relative_to(root).as_posix())
                except PlaywrightError:
                    pass  # the failure itself is reported; the screenshot is a help
                finally:
                    page.close()
        finally:
            context.close()
        return saved

    return take


# --------------------------------------------------------------------------- widget fixtures


def recorded_widget_views(notebook: Path) -> int:
    """How many widget views the notebook's recorded outputs hold."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return sum(
        WIDGET_VIEW_MIME in out.get("data", {})
        for cell in nb.get("cells", [])
        for out in cell.get("outputs", [])
    )


_MATH_LOADER = re.compile(r'<script data-near="span\.math, div\.math" data-scripts="([^"]*)"')


def _widget_fixture_html(template: str, root: Path, state: dict, views: list[dict]) -> str:
    """A built lab page with recorded widgets added as myst-nb and lean_pages.py write them:
    the widget state, and the lazy loader of the widget scripts (MathJax first where the page
    has math)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    widget_js = config["sphinx"]["config"]["nb_ipywidgets_js"]  # paths relative to _static/
    head = f'<script type="application/vnd.jupyter.widget-state+json">{json.dumps(state)}</script>'
    math = _MATH_LOADER.search(template)
    urls = json.loads(html_text.unescape(math.group(1))) if math else []
    urls += [f"../_static/{path}" for path in widget_js]
    near, scripts = html_text.escape(WIDGET_VIEW), html_text.escape(json.dumps(urls))
    head += (
        f'<script data-near="{near}" data-scripts="{scripts}" data-widgets="" defer="defer"'
        ' src="../_static/lazy-loader.js"></script>'
    )
    body = "".join(
        f'<div class="cell_output"><script type="{WIDGET_VIEW_MIME}">{json.dumps(v)}</script></div>'
        for v in views
    )
    html = template.replace("</head>", head + "</head>", 1)
    return re.sub(r"(<main[^>]*>)", lambda m: m.group(1) + body, html, count=1)


@pytest.fixture(scope="module")
def widget_fixture_reports(browser, base_url, book_html: Path, root: Path, pages):
    """Two fixture pages: one IntSlider recorded properly, and one view of a missing model."""
    pytest.importorskip("ipywidgets")
    from ipywidgets import IntSlider
    from ipywidgets.embed import embed_data

    # The template must have no recorded widgets of its own, or they would be counted too.
    lab = next((p for p in pages if p.is_lab and not recorded_widget_views(p.source)), None)
    if lab is None:
        pytest.skip("no lab page without widgets to build the widget fixture from")
    data = embed_data(views=[IntSlider(value=3, min=0, max=10, description="fixture")])
    broken_view = {**data["view_specs"][0], "model_id": "0" * 32}
    folder = book_html / "_widget_fixtures"  # same depth as notebooks/: relative paths hold
    folder.mkdir(exist_ok=True)
    template = (book_html / lab.rel).read_text(encoding="utf-8")
    fixtures = {
        "ok": _widget_fixture_html(template, root, data["manager_state"], data["view_specs"]),
        "broken": _widget_fixture_html(template, root, data["manager_state"], [broken_view]),
    }
    fixture_pages = []
    for name, html in fixtures.items():
        (folder / f"{name}.html").write_text(html, encoding="utf-8")
        fixture_pages.append(BookPage(f"_widget_fixtures/{name}.html", lab.source, is_lab=False))
    try:
        yield _visit_all(browser, base_url, fixture_pages)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fail_if(problems: list[str], what: str, screenshots=None) -> None:
    """Fail with one line per problem; with ``screenshots``, shoot the pages they name first."""
    if not problems:
        return
    message = f"{what}:\n  " + "\n  ".join(problems)
    saved = screenshots(problems) if screenshots is not None else []
    if saved:
        message += "\nscreenshots: " + ", ".join(saved)
    pytest.fail(message, pytrace=False)


# --------------------------------------------------------------------------- tests


def test_html_loads_no_script_or_style_from_a_cdn(book_html: Path) -> None:
    """MathJax, RequireJS and the widget manager come from the vendored copies, not a CDN."""
    tag = re.compile(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"((?:https?:)?//[^\"]+)\"", re.I)
    problems = [
        f"{path.relative_to(book_html)}: {url}"
        for path in sorted(book_html.rglob("*.html"))
        for url in tag.findall(path.read_text(encoding="utf-8", errors="replace"))
        if re.search(r"cdn\.jsdelivr|cdnjs|unpkg|mathjax|require|jupyter-widgets", url, re.I)
    ]
    _fail_if(problems, "pages load scripts or styles from a CDN")


def test_pages_load(reports: dict[str, PageReport], screenshots) -> None:
    _fail_if(
        [f"{r.rel}: {r.error}" for r in reports.values() if r.error],
        "pages that could not be checked in the browser",
        screenshots,
    )


def test_math_is_typeset(reports: dict[str, PageReport], screenshots) -> None:
    problems = []
    for r in reports.values():
        if not (r.source_has_math or r.math_elements):
            continue
        if r.source_has_math and not r.math_elements:
            problems.append(f"{r.rel}: the source has math but the page has no math element")
        if not (r.mathjax_state or "").startswith("done"):
            problems.append(f"{r.rel}: MathJax did not finish typesetting ({r.mathjax_state})")
        if r.math_untypeset:
            problems.append(f"{r.rel}: math left as raw TeX: {r.math_untypeset[:5]}")
        if r.math_tex_errors:
            problems.append(f"{r.rel}: TeX errors: {r.math_tex_errors[:5]}")
    _fail_if(problems, "math that a reader would not see typeset", screenshots)


def test_images_load(reports: dict[str, PageReport], screenshots) -> None:
    _fail_if(
        [f"{r.rel}: {src}" for r in reports.values() for src in r.images_broken],
        "images that did not load (naturalWidth 0)",
        screenshots,
    )


def test_math_and_widget_assets_are_not_blocked(
    reports: dict[str, PageReport], screenshots
) -> None:
    _fail_if(
        [
            f"{r.rel}: [{kind}] {url}"
            for r in reports.values()
            for kind, url in r.blocked
            if MATH_WIDGET_ASSET.search(url)
        ],
        "math or widget assets requested from the network (blocked)",
        screenshots,
    )


def test_no_script_style_or_font_from_the_network(
    reports: dict[str, PageReport], screenshots
) -> None:
    _fail_if(
        [
            f"{r.rel}: [{kind}] {url}"
            for r in reports.values()
            for kind, url in r.blocked
            if kind in ("script", "stylesheet", "font")
        ],
        "scripts, stylesheets or fonts requested from the network (blocked)",
        screenshots,
    )


def test_local_assets_load(reports: dict[str, PageReport], screenshots) -> None:
    _fail_if(
        [f"{r.rel}: {failure}" for r in reports.values() for failure in r.failed_local],
        "requests to the book's own files that failed",
        screenshots,
    )


def test_no_uncaught_javascript_errors(reports: dict[str, PageReport], screenshots) -> None:
    _fail_if(
        [
            f"{r.rel}: {err.splitlines()[0] if err else err}"
            for r in reports.values()
            for err in r.page_errors
            if not any(known in err for known in KNOWN_PAGE_ERRORS)
        ],
        "uncaught JavaScript errors",
        screenshots,
    )


def _widget_problems(reports: dict[str, PageReport], pages: list[BookPage]) -> list[str]:
    problems = []
    for page in pages:
        r = reports[page.rel]
        recorded = recorded_widget_views(page.source) if page.source.suffix == ".ipynb" else 0
        if page.is_lab and r.widget_views != recorded:
            problems.append(
                f"{r.rel}: {recorded} widget view(s) recorded in {page.source.name}, "
                f"{r.widget_views} on the page"
            )
        if r.widgets_rendered < max(r.widget_views, recorded):
            problems.append(
                f"{r.rel}: {r.widgets_rendered} of {max(r.widget_views, recorded)} saved widget "
                "views rendered"
            )
    return problems


def test_widgets_render(reports: dict[str, PageReport], pages: list[BookPage], screenshots) -> None:
    _fail_if(_widget_problems(reports, pages), "ipywidgets that did not render", screenshots)


def test_every_rendered_widget_control_has_an_accessible_name(
    reports: dict[str, PageReport], screenshots
) -> None:
    """ipywidgets 8 leaves a slider's handle unnamed; the lazy loader names it from the widget's
    visible description (book/_ext/static/lazy-loader.js)."""
    unnamed = [f"{r.rel}: {c}" for r in reports.values() for c in r.unnamed_controls]
    _fail_if(unnamed, "widget controls without an accessible name", screenshots)


def test_widget_check_passes_a_rendered_widget_and_fails_a_broken_one(
    widget_fixture_reports: dict[str, PageReport],
) -> None:
    ok = widget_fixture_reports["_widget_fixtures/ok.html"]
    broken = widget_fixture_reports["_widget_fixtures/broken.html"]
    assert ok.error is None and broken.error is None, (ok.error, broken.error)
    assert (ok.widget_views, ok.widgets_rendered) == (1, 1), asdict(ok)
    assert [b for b in ok.blocked if MATH_WIDGET_ASSET.search(b[1])] == []
    pages = [BookPage(r.rel, Path("fixture.md"), is_lab=False) for r in (ok, broken)]
    problems = _widget_problems({r.rel: r for r in (ok, broken)}, pages)
    assert problems == ["_widget_fixtures/broken.html: 0 of 1 saved widget views rendered"]


def test_every_toc_page_is_checked(pages: list[BookPage], root: Path) -> None:
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    checked = {p.name for p in pages}
    _fail_if([f for f in files if f not in checked], "pages in _toc.yml that were not visited")


def test_no_console_errors(reports: dict[str, PageReport], screenshots) -> None:
    _fail_if(
        [
            f"{r.rel}: {err.splitlines()[0] if err else err}"
            for r in reports.values()
            for err in r.console_errors
            if not any(known in err for known in KNOWN_CONSOLE_ERRORS)
        ],
        "errors in the browser console",
        screenshots,
    )


def test_internal_links_resolve(
    reports: dict[str, PageReport], book_html: Path, screenshots
) -> None:
    """Every link to a page of the book reaches a file, and its #anchor an element on it."""
    problems, ids = [], {}
    for r in reports.values():
        for href in r.links:
            url = urlsplit(href)
            if url.hostname != LOCAL_HOST:
                continue
            target = book_html / unquote(url.path).lstrip("/")
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{r.rel}: {href} (no such file)")
                continue
            if url.fragment and target.suffix == ".html":
                if target not in ids:
                    text = target.read_text(encoding="utf-8", errors="replace")
                    ids[target] = set(re.findall(r'\bid="([^"]+)"', text))
                if unquote(url.fragment) not in ids[target]:
                    problems.append(f"{r.rel}: {href} (no element with that id)")
    _fail_if(sorted(set(problems)), "links inside the book that lead nowhere", screenshots)


def test_lab_pages_have_colab_link(
    reports: dict[str, PageReport], pages: list[BookPage], root: Path, screenshots
) -> None:
    labs = [p for p in pages if p.is_lab]
    if not labs:
        pytest.skip("no lab page (notebooks/*.ipynb) in the build")
    if not _published(root):
        linked = {r.rel: r.colab_links for r in reports.values() if r.colab_links}
        _fail_if(
            [f"{rel}: {links}" for rel, links in sorted(linked.items())],
            "pages with a Colab link although repository.url is the placeholder",
            screenshots,
        )
        return
    prefix = expected_colab_prefix(root)
    problems = []
    for lab in labs:
        r = reports[lab.rel]
        notebook = lab.source.relative_to(root).as_posix()  # notebooks/<name>.ipynb
        expected = prefix + notebook
        if not r.colab_links:
            problems.append(f"{lab.rel}: no Colab launch link (expected {expected})")
        for href in r.colab_links:
            if href != expected:
                problems.append(f"{lab.rel}: Colab link {href} is not {expected}")
        if not (root / notebook).is_file():
            problems.append(f"{lab.rel}: {notebook} is not in the repository")
    _fail_if(problems, "lab pages without a well-formed Colab link", screenshots)


def test_solutions_collapsed_until_clicked(reports: dict[str, PageReport], screenshots) -> None:
    with_solutions = [r for r in reports.values() if r.solutions]
    if not with_solutions:
        pytest.skip("no page has a sphinx-exercise solution")
    problems = []
    for r in with_solutions:
        for s in r.solutions:
            where = f"{r.rel} #{s['id']} ({s['title']!r})"
            if not s["dropdown"]:
                problems.append(f"{where}: not collapsed (add `:class: dropdown`)")
            if not s["title_visible"]:
                problems.append(f"{where}: its title is not visible")
            if not s["content_blocks"]:
                problems.append(f"{where}: has no content")
                continue
            if any(s["visible_before_click"]):
                problems.append(f"{where}: content visible before the toggle is clicked")
            if s["visible_after_click"] is None:
                problems.append(f"{where}: no toggle button to click")
            elif not all(s["visible_after_click"]):
                problems.append(f"{where}: content still hidden after the toggle was clicked")
    _fail_if(problems, "solutions that a reader does not see collapsed, then opened", screenshots)


def test_a_failing_check_leaves_screenshots_of_the_pages_it_names(
    screenshots, pages: list[BookPage], root: Path
) -> None:
    page = pages[0]
    saved = screenshots([f"{page.rel}: a problem made up for this test", "no page: another"])
    assert saved == [f"test-artifacts/screenshots/{page.name}.png"]
    shot = root / saved[0]
    try:
        png = shot.read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, len(png)
    finally:
        shot.unlink()  # this page has no problem: leave no screenshot that says it had
    assert screenshots(["pages in _toc.yml that were not visited"]) == []


# --------------------------------------------------------------------------- recording tabs


def test_recording_tabs_switch_outputs_in_both_themes(browser, base_url, book_html: Path, pages):
    """The CPU/GPU tabs a lab page gets once it has a GPU recording (book/_ext/lab_recordings.py):
    one panel shows at a time, a click on a tab switches, and the tabs read in both themes."""
    from gpulab.course.recordings import cell_tabs

    lab = next(p for p in pages if p.is_lab)
    pieces = cell_tabs("fixture-cell", ["CPU", "GPU (fixture)"])
    tabs = f"{pieces[0]}<pre>cpu output</pre>{pieces[1]}<pre>gpu output</pre>{pieces[2]}"
    template = (book_html / lab.rel).read_text(encoding="utf-8")
    assert "_static/lab_recordings.css" in stylesheets(book_html, lab.rel), (
        "lab pages do not load the recordings' stylesheet"
    )
    folder = book_html / "_recording_fixtures"  # same depth as notebooks/: relative paths hold
    folder.mkdir(exist_ok=True)
    html = re.sub(r"(<main[^>]*>)", lambda m: m.group(1) + tabs, template, count=1)
    (folder / "tabs.html").write_text(html, encoding="utf-8")
    context = _offline_context(browser)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/_recording_fixtures/tabs.html", wait_until="load")
        cpu, gpu = page.get_by_text("cpu output"), page.get_by_text("gpu output")
        assert cpu.is_visible() and not gpu.is_visible()
        page.get_by_text("GPU (fixture)").click()
        assert gpu.is_visible() and not cpu.is_visible()
        for theme in ("light", "dark"):
            page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
            colours = page.evaluate(
                """() => {
                    const label = document.querySelector('.gl-rec-label');
                    let node = label, bg = 'rgba(0, 0, 0, 0)';
                    while (node && (bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent')) {
                        bg = getComputedStyle(node).backgroundColor; node = node.parentElement;
                    }
                    return [getComputedStyle(label).color, bg];
                }"""
            )
            assert colours[0] != colours[1], f"{theme} theme: tab text {colours[0]} on {colours[1]}"
    finally:
        context.close()
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- diagrams

#: The explanatory diagrams (gpulab.diagrams) are MyST figures named ``fig-<page>-diagram-*``.
DIAGRAM_NAME = re.compile(r"^:\s+name:\s+(fig-[\w-]*-diagram-[\w-]+)\s*$", re.M)
THEMES = ("light", "dark")
MIN_DIAGRAM_WIDTH_PX = 200
MIN_CAPTION_CONTRAST = 4.5  # WCAG AA for body text


def diagram_names(source: Path) -> list[str]:
    """The diagrams a chapter declares, by their MyST figure names."""
    if source.suffix != ".md":
        return []
    return DIAGRAM_NAME.findall(source.read_text(encoding="utf-8"))


_SET_THEME_JS = """
(theme) => {
  localStorage.setItem("theme", theme);
  localStorage.setItem("mode", theme);
  document.documentElement.dataset.theme = theme;
  document.documentElement.dataset.mode = theme;
}
"""

_DIAGRAM_JS = f"""
async (id) => {{
  const fig = document.getElementById(id);
  if (!fig) return {{ found: false }};
  fig.scrollIntoView();
  const img = fig.querySelector("img");
  const caption = fig.querySelector("figcaption");
  const background = (el) => {{
    for (; el; el = el.parentElement) {{
      const c = getComputedStyle(el).backgroundColor;
      if (c && c !== "transparent" && !/rgba\\(.*,\\s*0\\)$/.test(c)) return c;
    }}
    return getComputedStyle(document.documentElement).backgroundColor;
  }};
  const out = {{
    found: true, has_img: !!img,
    alt: img ? (img.getAttribute("alt") || "") : "",
    caption: caption ? caption.innerText.trim() : "",
    caption_color: caption ? getComputedStyle(caption).color : null,
    caption_background: caption ? background(caption) : null,
    page_background: background(document.body),
  }};
  if (!img) return out;
  if (!img.complete) await new Promise((ok) => {{
    img.addEventListener("load", ok, {{ once: true }});
    img.addEventListener("error", ok, {{ once: true }});
    setTimeout(ok, {JS_WAIT_MS});
  }});
  const style = getComputedStyle(img);
  const box = img.getBoundingClientRect();
  Object.assign(out, {{
    natural_width: img.naturalWidth, width: box.width, height: box.height,
    opacity: parseFloat(style.opacity), visibility: style.visibility, display: style.display,
    filter: style.filter,
  }});
  if (!img.naturalWidth) return out;
  const w = 240, h = Math.max(1, Math.round(240 * img.naturalHeight / img.naturalWidth));
  const canvas = document.createElement("canvas");
  canvas.width = w; canvas.height = h;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(img, 0, 0, w, h);
  const px = ctx.getImageData(0, 0, w, h).data;
  let minAlpha = 255, sum = 0, sumSq = 0, ink = 0;
  const n = w * h;
  for (let i = 0; i < px.length; i += 4) {{
    minAlpha = Math.min(minAlpha, px[i + 3]);
    const lum = (0.2126 * px[i] + 0.7152 * px[i + 1] + 0.0722 * px[i + 2]) / 255;
    sum += lum; sumSq += lum * lum; if (lum < 0.6) ink += 1;
  }}
  const mean = sum / n;
  Object.assign(out, {{
    min_alpha: minAlpha, luminance_std: Math.sqrt(Math.max(0, sumSq / n - mean * mean)),
    ink_fraction: ink / n,
  }});
  return out;
}}
"""


def _rgb(css: str | None) -> tuple[float, float, float] | None:
    numbers = re.findall(r"[\d.]+", css or "")
    return tuple(float(v) / 255 for v in numbers[:3]) if len(numbers) >= 3 else None


def contrast_ratio(fg: str | None, bg: str | None) -> float:
    """WCAG contrast ratio of two CSS ``rgb()`` colours (0 when either is unreadable)."""

    def luminance(rgb):
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = _rgb(fg), _rgb(bg)
    if a is None or b is None:
        return 0.0
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture(scope="module")
def diagram_reports(browser, base_url, pages) -> dict[tuple[str, str, str], dict]:
    """(page, theme, figure name) -> what the reader sees of each diagram, in both themes."""
    with_diagrams = [(p, diagram_names(p.source)) for p in pages]
    with_diagrams = [(p, names) for p, names in with_diagrams if names]
    if not with_diagrams:
        pytest.skip("no chapter declares a diagram (fig-*-diagram-*)")
    reports = {}
    for theme in THEMES:
        context = _offline_context(browser)
        try:
            for page_info, names in with_diagrams:
                page = context.new_page()
                page.set_default_timeout(STEP_TIMEOUT_MS)
                try:
                    page.goto(f"{base_url}/{page_info.rel}", wait_until="load")
                    page.evaluate(_SET_THEME_JS, theme)
                    for name in names:
                        reports[(page_info.rel, theme, name)] = page.evaluate(_DIAGRAM_JS, name)
                except Exception as exc:  # reported by the test below
                    for name in names:
                        reports.setdefault((page_info.rel, theme, name), {"error": str(exc)})
                finally:
                    page.close()
        finally:
            context.close()
    return reports


def _diagram_problems(reports: dict[tuple[str, str, str], dict]) -> list[str]:
    problems = []
    for (rel, theme, name), r in sorted(reports.items()):
        where = f"{rel} [{theme}] #{name}"
        if r.get("error") or not r.get("found"):
            problems.append(f"{where}: {r.get('error') or 'no element with that id'}")
            continue
        if not r["has_img"] or not r.get("natural_width"):
            problems.append(f"{where}: no image, or it did not load")
            continue
        if len(r["alt"]) < 40 or len(r["caption"]) < 40:
            problems.append(f"{where}: alt text or caption missing or too short")
        if r["width"] < MIN_DIAGRAM_WIDTH_PX or r["display"] == "none":
            problems.append(f"{where}: rendered {r['width']:.0f}px wide ({r['display']})")
        if r["opacity"] < 0.5 or r["visibility"] != "visible" or "invert" in r["filter"]:
            problems.append(
                f"{where}: opacity {r['opacity']}, {r['visibility']}, filter {r['filter']}"
            )
        # The PNG carries its own opaque background, so its text and lines read the same on
        # either theme; and it has something drawn on it.
        if r["min_alpha"] < 255:
            problems.append(f"{where}: transparent pixels (alpha {r['min_alpha']})")
        if not (0.005 < r["ink_fraction"] < 0.8) or r["luminance_std"] < 0.05:
            problems.append(
                f"{where}: looks blank or flooded (ink {r['ink_fraction']:.1%}, "
                f"std {r['luminance_std']:.3f})"
            )
        ratio = contrast_ratio(r["caption_color"], r["caption_background"])
        if ratio < MIN_CAPTION_CONTRAST:
            problems.append(f"{where}: caption contrast {ratio:.1f} < {MIN_CAPTION_CONTRAST}")
    return problems


def test_diagrams_render_and_are_visible_in_both_themes(diagram_reports, screenshots) -> None:
    _fail_if(_diagram_problems(diagram_reports), "diagrams a reader cannot see", screenshots)


def test_the_theme_switch_changes_the_page(diagram_reports) -> None:
    """Guards the check above: the dark pass really shows the dark theme."""
    backgrounds = {}
    for (rel, theme, _), r in diagram_reports.items():
        backgrounds.setdefault(rel, {})[theme] = r.get("page_background")
    for rel, by_theme in backgrounds.items():
        light, dark = by_theme.get("light"), by_theme.get("dark")
        assert light and dark and light != dark, f"{rel}: same page background {light} in both"
        assert contrast_ratio(light, "rgb(0, 0, 0)") > contrast_ratio(dark, "rgb(0, 0, 0)")


def test_diagram_check_fails_a_transparent_or_blank_figure() -> None:
    good = {
        "found": True, "has_img": True, "natural_width": 800, "alt": "a" * 50,
        "caption": "c" * 50, "width": 700, "display": "block", "opacity": 1.0,
        "visibility": "visible", "filter": "none", "min_alpha": 255, "ink_fraction": 0.1,
        "luminance_std": 0.3, "caption_color": "rgb(0, 0, 0)",
        "caption_background": "rgb(255, 255, 255)",
    }  # fmt: skip
    assert _diagram_problems({("p.html", "dark", "fig-x-diagram-y"): good}) == []
    for change in ({"min_alpha": 0}, {"ink_fraction": 0.0}, {"alt": ""},
                   {"caption_color": "rgb(250, 250, 250)"}, {"natural_width": 0}):  # fmt: skip
        problems = _diagram_problems({("p.html", "dark", "fig-x-diagram-y"): {**good, **change}})
        assert len(problems) == 1 and problems[0].startswith("p.html [dark]"), change
