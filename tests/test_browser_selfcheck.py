"""The chapters' self-check questions, used as a reader uses them, in headless Chromium.

The built book (fixture ``book_build``) is served on 127.0.0.1 with every other host blocked,
as in tests/test_browser.py, whose browser and server fixtures this module shares. On the
memory-bandwidth chapter a reader types a right answer with the keyboard and presses Enter
(accepted), a wrong one (refused, with the hint), opens the worked solution from the
keyboard, and picks an option of a choice question. The questions must read in the dark
theme, show a visible focus ring, and still make sense with JavaScript off.
"""

from __future__ import annotations

import re

import pytest
import test_browser as shared
from test_browser import (
    _SET_THEME_JS,
    MIN_CAPTION_CONTRAST,
    STEP_TIMEOUT_MS,
    VIEWPORT,
    _offline_context,
    contrast_ratio,
)
from test_chapters import chapters

import gpulab as gl
from gpulab.labkit.selfcheck import format_answer

pytestmark = pytest.mark.browser

# The fixtures of the book's browser checks: the built book, served offline, and Chromium.
book_html, base_url, browser = shared.book_html, shared.base_url, shared.browser
chromium_executable = shared.chromium_executable  # autouse: skips early without a browser

PAGE = "book/memory_bandwidth.html"
RIDGE = "#gl-sc-mb-a100-ridge"  # a number question: the A100's BF16 ridge point
BOUND = "#gl-sc-mb-matvec-bound"  # a choice question: what limits a matrix-vector product
QUESTION = re.compile(r'<div class="gl-selfcheck" id="gl-sc-([a-z0-9-]+)"')
SCRIPT = re.compile(r'<script[^>]+src="[^"]*_static/selfcheck\.js[^"]*"')


@pytest.fixture
def page(browser, base_url):
    context = _offline_context(browser)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    tab = context.new_page()
    tab.goto(f"{base_url}/{PAGE}", wait_until="load")
    tab.wait_for_selector(".gl-selfcheck.gl-sc-live")  # the script has set the questions up
    yield tab
    context.close()


def _ridge_a100() -> float:
    return gl.Ceilings.from_spec("A100 80GB", "bf16").ridge_point


def test_each_teaching_chapter_page_has_its_questions_and_only_they_load_the_script(
    book_html, root
):
    for chapter in chapters(root):
        built = (book_html / f"{chapter}.html").read_text(encoding="utf-8")
        labels = QUESTION.findall(built)
        assert len(labels) >= 4, f"{chapter}: {len(labels)} questions in the built page"
        assert len(set(labels)) == len(labels), f"{chapter}: repeated ids {labels}"
        assert SCRIPT.search(built), f"{chapter}: selfcheck.js is not loaded"
        styles = shared.stylesheets(book_html, f"{chapter}.html")
        assert "_static/selfcheck.css" in styles, f"{chapter}: selfcheck.css is not loaded"
    for other in ("book/intro.html", "book/glossary.html"):
        built = (book_html / other).read_text(encoding="utf-8")
        styles = shared.stylesheets(book_html, other)
        assert not SCRIPT.search(built) and "_static/selfcheck.css" not in styles, other


def test_a_right_answer_typed_with_the_keyboard_is_accepted(page):
    box = page.locator(RIDGE)
    typed = format_answer(_ridge_a100(), digits=3)  # what a reader computes: "153"
    box.locator("input").focus()
    page.keyboard.type(typed)
    page.keyboard.press("Enter")
    result = box.locator(".gl-sc-result")
    assert result.inner_text().startswith(f"Right: {typed} is within 5% of the answer")
    assert "gl-sc-right" in box.get_attribute("class")
    assert result.get_attribute("aria-live") == "polite"
    # A reader's rounding of the datasheet figures stays inside the tolerance: 312 / 2.04.
    box.locator("input").fill("")
    box.locator("input").focus()
    page.keyboard.type(f"{312e12 / 2.04e12:.1f}")
    page.keyboard.press("Enter")
    assert result.inner_text().startswith("Right")


def test_a_wrong_answer_is_refused_with_the_hint_and_the_solution_opens(page):
    box = page.locator(RIDGE)
    hint = box.locator(".gl-sc-hint")
    assert hint.get_attribute("open") is None
    box.locator("input").focus()
    page.keyboard.type(f"{_ridge_a100() * 0.5:.0f}")
    page.keyboard.press("Enter")
    result = box.locator(".gl-sc-result").inner_text()
    assert result.startswith("Not quite:") and "too low" in result
    hint_text = box.locator(".gl-sc-hint p").inner_text()
    assert f"Hint: {hint_text}" in result
    assert hint.get_attribute("open") is not None and "gl-sc-wrong" in box.get_attribute("class")
    # Something that is not a number is neither right nor wrong.
    box.locator("input").fill("about a hundred")
    page.keyboard.press("Enter")
    assert box.locator(".gl-sc-result").inner_text().startswith("Type a number")
    # The worked solution, opened from the keyboard, shows the computed answer.
    solution = box.locator(".gl-sc-solution")
    assert not solution.locator(".gl-sc-answer").is_visible()
    solution.locator("summary").focus()
    page.keyboard.press("Enter")
    answer = solution.locator(".gl-sc-answer")
    assert answer.is_visible()
    assert answer.inner_text() == f"Answer: {format_answer(_ridge_a100())} FLOP/byte"


def test_a_choice_question_is_answered_from_the_keyboard(page):
    box = page.locator(BOUND)
    options = box.locator("input[type=radio]")
    labels = [box.locator(".gl-sc-option").nth(i).inner_text().strip() for i in range(2)]
    assert labels == ["memory bandwidth", "compute (FLOP/s)"]
    options.nth(0).focus()
    page.keyboard.press("ArrowDown")  # moves to, and selects, the second option: wrong
    assert options.nth(1).is_checked()
    page.keyboard.press("Enter")
    assert box.locator(".gl-sc-result").inner_text().startswith("Not this one.")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    assert box.locator(".gl-sc-result").inner_text() == "Right."


def test_keyboard_focus_is_visible(page):
    box = page.locator(RIDGE)
    box.locator("input").focus()
    page.keyboard.press("Tab")  # to the Check button
    focused = page.evaluate(
        """() => {
            const el = document.activeElement, s = getComputedStyle(el);
            return [el.className, s.outlineStyle, parseFloat(s.outlineWidth)];
        }"""
    )
    assert focused[0] == "gl-sc-submit" and focused[1] != "none" and focused[2] >= 2, focused


_COLOURS_JS = """
(id) => {
  const box = document.querySelector(id);
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = getComputedStyle(el).backgroundColor;
      if (c && c !== "transparent" && !/rgba\\(.*,\\s*0\\)$/.test(c)) return c;
    }
    return getComputedStyle(document.documentElement).backgroundColor;
  };
  const pair = (sel) => {
    const el = box.querySelector(sel);
    return [getComputedStyle(el).color, background(el)];
  };
  return {
    question: pair(".gl-sc-question"), tolerance: pair(".gl-sc-tolerance"),
    input: pair(".gl-sc-input"), button: pair(".gl-sc-submit"), result: pair(".gl-sc-result"),
    summary: pair(".gl-sc-hint summary"), box: background(box),
  };
}
"""


def test_questions_read_in_the_light_and_dark_themes(page):
    box = page.locator(RIDGE)
    box.locator("input").fill("1")
    box.locator("input").press("Enter")  # a result line to read as well
    backgrounds = {}
    for theme in ("light", "dark"):
        page.evaluate(_SET_THEME_JS, theme)
        colours = page.evaluate(_COLOURS_JS, RIDGE)
        backgrounds[theme] = colours.pop("box")
        for part, (fg, bg) in colours.items():
            ratio = contrast_ratio(fg, bg)
            assert ratio >= MIN_CAPTION_CONTRAST, f"{theme}: {part} {fg} on {bg} ({ratio:.1f})"
    assert contrast_ratio(backgrounds["light"], "rgb(0, 0, 0)") > contrast_ratio(
        backgrounds["dark"], "rgb(0, 0, 0)"
    ), backgrounds


def test_without_javascript_the_question_still_reads(browser, base_url):
    context = browser.new_context(viewport=VIEWPORT, java_script_enabled=False)
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if "127.0.0.1" in route.request.url
            else route.abort("blockedbyclient")
        ),
    )
    try:
        tab = context.new_page()
        tab.set_default_timeout(STEP_TIMEOUT_MS)
        tab.goto(f"{base_url}/{PAGE}", wait_until="load")
        box = tab.locator(RIDGE)
        assert box.locator(".gl-sc-question").is_visible()
        assert box.locator(".gl-sc-tolerance").is_visible()
        assert box.locator(".gl-sc-nojs").is_visible()
        assert not box.locator("form").is_visible()  # no dead input box
        box.locator(".gl-sc-solution summary").click()  # <details> opens with no script
        assert box.locator(".gl-sc-answer").is_visible()
    finally:
        context.close()
