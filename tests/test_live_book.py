"""The live calculators in the rendered book, driven in headless Chromium with the network blocked.

The book is served on 127.0.0.1 (the fixtures of ``tests/test_browser.py``) and every request
to another host is aborted, so Pyodide and the package zip must come from the book itself.

* Pages without a calculator load nothing more; pages with one load Pyodide only once the
  reader touches a calculator.
* On each page with a calculator, inputs are changed with the keyboard and the mouse, and the
  page's result is what CPython computes for the inputs the form holds.
* A table of inputs (every calculator's defaults and examples) runs through the page's Python
  and through CPython: the same HTML and the same numbers.
* Without JavaScript, each calculator shows its build-time result and one sentence saying why;
  opened as a file (where browsers refuse to start Python), it says how to serve the book.
* On lab pages, each recorded ipywidget calculator is followed by a note linking to its live
  version.

Timings (first touch to first result, per update) and the bytes the calculators add go to
``test-artifacts/live-calculators.json``; they are recorded, not asserted (the machine is shared).
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest

from gpulab.labkit.calculators import CALCULATORS, run
from tests import test_browser as browser_checks
from tests.test_browser import KNOWN_PAGE_ERRORS, LOCAL_HOST, STEP_TIMEOUT_MS, _offline_context

# The rendered book's fixtures, shared with the other browser checks (a module scope each).
chromium_executable = browser_checks.chromium_executable
book_html = browser_checks.book_html
base_url = browser_checks.base_url
browser = browser_checks.browser

pytestmark = pytest.mark.browser

# A cold start of Pyodide on the loaded 2-core machine took about 4 s when measured; this
# bound is for a broken page, which never answers, not a performance check.
FIRST_RESULT_TIMEOUT_MS = 90_000
CALC = re.compile(r'data-calculator="(\w+)"')
NO_JS_SENTENCE = "This calculator needs a browser with JavaScript"


def _text_of(report_html: str) -> str:
    match = re.search(r'<pre class="gl-calc-text">(.*?)</pre>', report_html, re.S)
    return html_lib.unescape(match.group(1)) if match else ""


@pytest.fixture(scope="module")
def calculator_pages(book_html: Path) -> dict[str, list[str]]:
    """Page (relative to the HTML root) → the calculators on it."""
    pages = {}
    for path in sorted((book_html / "book").glob("*.html")):
        names = CALC.findall(path.read_text(encoding="utf-8"))
        if names:
            pages[path.relative_to(book_html).as_posix()] = names
    return pages


def test_every_calculator_is_live_in_a_chapter(calculator_pages):
    placed = [name for names in calculator_pages.values() for name in names]
    assert sorted(placed) == sorted(CALCULATORS), calculator_pages


def test_pages_without_a_calculator_get_nothing_more(book_html: Path, calculator_pages):
    # The Chinese edition (zh/) has its calculators on the same pages.
    with_calculator = {*calculator_pages, *(f"zh/{rel}" for rel in calculator_pages)}
    problems = []
    for path in sorted(book_html.rglob("*.html")):
        rel = path.relative_to(book_html).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        live = "live-calculators" in text or "_static/live/" in text
        if (rel in with_calculator) != live:
            problems.append(f"{rel}: calculator {rel in with_calculator}, script {live}")
    assert not problems, problems


def _calculator_state(page, name: str) -> dict:
    return page.evaluate(
        """(name) => {
            const calc = document.getElementById("calc-" + name);
            return {computed: Number(calc.dataset.computed || 0),
                    values: JSON.parse(calc.dataset.values || "{}"),
                    numbers: JSON.parse(calc.dataset.numbers || "{}"),
                    text: (calc.querySelector(".gl-calc-text") || {}).textContent || "",
                    error: (calc.querySelector(".gl-calc-error") || {}).textContent || "",
                    status: calc.querySelector(".gl-calc-status").textContent};
        }""",
        name,
    )


def _wait_for_update(page, name: str, before: int, timeout_ms: int = STEP_TIMEOUT_MS) -> dict:
    page.wait_for_function(
        "([name, n]) => Number(document.getElementById('calc-' + name).dataset.computed || 0) > n",
        arg=[name, before],
        timeout=timeout_ms,
    )
    page.wait_for_timeout(50)  # a change queued behind this one settles
    return _calculator_state(page, name)


def _assert_matches_cpython(name: str, state: dict, how: str) -> None:
    expected = run(name, state["values"])
    assert expected["ok"], (name, how, state["values"], expected["html"])
    assert not state["error"], (name, how, state["error"])
    assert state["text"] == _text_of(expected["html"]), (name, how)
    assert state["numbers"] == pytest.approx(expected["numbers"], rel=1e-12), (name, how)


@pytest.fixture(scope="module")
def live_runs(browser, base_url: str, calculator_pages, root: Path):
    """Each page with calculators: inputs changed by keyboard and mouse, results recorded."""
    context = _offline_context(browser)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    results = {"pages": {}, "requests_before_touch": {}}
    try:
        for rel, names in calculator_pages.items():
            page = context.new_page()
            live_requests = []
            page.on(
                "request",
                lambda r, seen=live_requests: (
                    seen.append(r.url) if "/_static/live/" in r.url else 0
                ),
            )
            errors = []
            page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            page.goto(f"{base_url}/{rel}", wait_until="load")
            results["requests_before_touch"][rel] = list(live_requests)
            page_result = {"calculators": {}, "errors": errors}
            for index, name in enumerate(names):
                page_result["calculators"][name] = _drive(page, name, first=index == 0)
            page_result["timings"] = page.evaluate("() => window.gpulabLive.timings")
            page_result["bytes"] = page.evaluate(
                """() => performance.getEntriesByType("resource")
                      .filter((e) => /live-calculators|_static\\/live\\//.test(e.name))
                      .map((e) => [e.name.replace(location.origin, ""), e.encodedBodySize])"""
            )
            results["pages"][rel] = page_result
            page.close()
    finally:
        context.close()
    artifacts = root / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "live-calculators.json").write_text(json.dumps(results, indent=2), "utf-8")
    return results


def _drive(page, name: str, first: bool) -> dict:
    """Change the calculator's inputs: keyboard on a number, mouse on a slider or a box."""
    calc = CALCULATORS[name]
    numeric = [f for f in calc.fields if f.kind != "select"]
    checked = []
    # Keyboard: Tab into a number or slider, then the arrow key steps it.
    field = numeric[0]
    control = page.locator(f"#calc-{name}-{field.name}")
    control.scroll_into_view_if_needed()
    control.focus()
    before = _calculator_state(page, name)
    assert before["computed"] == 0
    page.keyboard.press("ArrowUp" if field.kind == "number" else "ArrowRight")
    timeout = FIRST_RESULT_TIMEOUT_MS if first else STEP_TIMEOUT_MS
    state = _wait_for_update(page, name, 0, timeout)
    assert state["values"][field.name] != calc.defaults()[field.name], (name, state["values"])
    _assert_matches_cpython(name, state, "keyboard")
    checked.append(("keyboard", field.name, state["values"][field.name]))
    # Mouse: a click on a slider a fifth of the way along, or a triple click into a number
    # box (selecting its text) and a new value typed.
    slider = next((f for f in numeric if f.kind == "range"), None)
    done = state["computed"]
    if slider is not None:
        box = page.locator(f"#calc-{name}-{slider.name}").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.2, box["y"] + box["height"] / 2)
        target = slider.name
    else:
        target = numeric[-1].name
        page.locator(f"#calc-{name}-{target}").click(click_count=3)
        page.keyboard.type(str(numeric[-1].maximum // 2 if numeric[-1].integer else 2.5))
    state = _wait_for_update(page, name, done)
    _assert_matches_cpython(name, state, "mouse")
    checked.append(("mouse", target, state["values"][target]))
    # A menu chosen, and an example row of the table set through the form.
    done = state["computed"]
    for key, value in calc.examples[0].items():
        control = page.locator(f"#calc-{name}-{key}")
        if control.evaluate("el => el.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
    state = _wait_for_update(page, name, done)
    for key, value in calc.examples[0].items():
        assert str(state["values"][key]) == value, (name, key, state["values"])
    _assert_matches_cpython(name, state, "example")
    checked.append(("form", "example 1", state["numbers"]))
    return {"checked": checked, "status": state["status"]}


def test_calculators_follow_keyboard_and_mouse_with_cpythons_numbers(live_runs, calculator_pages):
    """The assertions run while driving (``_drive``); here, that every calculator was driven."""
    driven = {n for p in live_runs["pages"].values() for n in p["calculators"]}
    assert driven == {n for names in calculator_pages.values() for n in names}
    for rel, result in live_runs["pages"].items():
        errors = [e for e in result["errors"] if not any(k in e for k in KNOWN_PAGE_ERRORS)]
        assert not errors, (rel, errors)
        assert result["timings"]["firstResultMs"] is not None, rel


def test_python_loads_only_when_a_calculator_is_touched(live_runs):
    for rel, requests in live_runs["requests_before_touch"].items():
        assert requests == [], f"{rel} loaded {requests} before any calculator was touched"
    for rel, result in live_runs["pages"].items():
        loaded = [url for url, _ in result["bytes"]]
        assert any(url.endswith("pyodide.asm.wasm") for url in loaded), (rel, loaded)
        assert any(url.endswith("gpulab-live.zip") for url in loaded), (rel, loaded)


def test_the_page_and_cpython_give_the_same_numbers_for_a_table_of_inputs(
    browser, base_url, calculator_pages
):
    table = [
        (name, values)
        for name, calc in CALCULATORS.items()
        for values in (calc.defaults(), *calc.examples, {})
    ]
    table += [("occupancy", {"threads_per_block": "1024", "registers_per_thread": "255"}),
              ("roofline", {"device": "Tesla T4", "precision": "fp8"}),  # no fp8 peak: error
              ("kv_cache", {"seq_len": "not a number"})]  # fmt: skip
    context = _offline_context(browser)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{next(iter(calculator_pages))}", wait_until="load")
        page.evaluate("() => window.gpulabLive.ready()")
        in_page = page.evaluate(
            "async (table) => { const out = []; for (const [name, values] of table)"
            " out.push(await window.gpulabLive.run(name, values)); return out; }",
            table,
        )
    finally:
        context.close()
    assert len(in_page) == len(table)
    for (name, values), got in zip(table, in_page, strict=True):
        expected = run(name, values)
        assert got["ok"] == expected["ok"], (name, values, got["html"])
        assert got["html"] == expected["html"], (name, values)
        assert got["numbers"] == pytest.approx(expected["numbers"], rel=1e-12), (name, values)
    assert sum(not r["ok"] for r in in_page) == 2  # the two bad rows are refused in both


def test_without_javascript_the_build_time_result_and_one_sentence_show(
    browser, base_url, calculator_pages
):
    context = browser.new_context(java_script_enabled=False)
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if LOCAL_HOST in route.request.url.split("/")[2]
            else route.abort("blockedbyclient")
        ),
    )
    try:
        page = context.new_page()
        for rel, names in calculator_pages.items():
            page.goto(f"{base_url}/{rel}", wait_until="load")
            for name in names:
                state = _calculator_state_static(page, name)
                expected = run(name, CALCULATORS[name].defaults())
                assert state["status"].startswith(NO_JS_SENTENCE), (rel, name, state["status"])
                assert state["status"].count(". ") == 0, state["status"]  # one sentence
                assert state["text"] == _text_of(expected["html"]), (rel, name)
                assert state["visible"] and state["all_disabled"], (rel, name, state)
    finally:
        context.close()


def test_a_page_opened_as_a_file_says_how_to_serve_the_book(browser, book_html, calculator_pages):
    """Browsers refuse a ``file://`` page's module import and fetch: the page says so up front."""
    context = browser.new_context()
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith("file:")
            else route.abort("blockedbyclient")
        ),
    )
    try:
        page = context.new_page()
        rel, names = next(iter(calculator_pages.items()))
        page.goto((book_html / rel).as_uri(), wait_until="load")
        for name in names:
            state = _calculator_state_static(page, name)
            assert state["status"].startswith("This page was opened as a file"), state["status"]
            assert "python3 -m http.server -d _build/html" in state["status"]
            assert state["text"] == _text_of(run(name, CALCULATORS[name].defaults())["html"])
            assert state["visible"] and state["all_disabled"], (rel, name, state)
    finally:
        context.close()


def _calculator_state_static(page, name: str) -> dict:
    calc = page.locator(f"#calc-{name}")
    controls = calc.locator("select, input")
    return {
        "status": calc.locator(".gl-calc-status").inner_text().strip(),
        "text": calc.locator(".gl-calc-text").text_content(),
        "visible": calc.locator(".gl-calc-result").is_visible(),
        "all_disabled": all(controls.nth(i).is_disabled() for i in range(controls.count())),
    }


def test_lab_widgets_that_cannot_respond_link_to_their_live_version(book_html: Path, root: Path):
    widget_of = {c.widget: name for name, c in CALCULATORS.items() if c.widget}
    call = re.compile(r"\bgl\.(" + "|".join(widget_of) + r")\(")
    expected, found = [], []
    for notebook in sorted((root / "notebooks").glob("*_lab.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and call.search(source):
                expected.append((notebook.stem, widget_of[call.search(source).group(1)]))
        page = (book_html / "notebooks" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        for href in re.findall(r'class="gl-dead-widget">[^<]*<a [^>]*href="([^"]+)"', page):
            found.append((notebook.stem, href.rsplit("#calc-", 1)[-1]))
            assert href.startswith("../book/") and "#calc-" in href, href
    assert expected and sorted(found) == sorted(expected)
