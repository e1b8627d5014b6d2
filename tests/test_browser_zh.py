"""The Chinese edition in a real browser (headless Chromium), with the network blocked.

Every Chinese page is opened once, as ``tests/test_browser.py`` opens the English ones, and
gets the same checks: it loads, its images, math and recorded widgets show, nothing comes
from the network, no script fails. Then the language switch is followed both ways, a live
calculator is seen labelled and ready in Chinese, and the page is seen set in a CJK font (CI
installs one, ``.ci/run``).
"""

# ruff: noqa: F811 - the fixtures imported from test_browser are the tests' parameters

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest
import test_browser as en
from test_browser import (  # noqa: F401 - fixtures, used as the tests' parameters
    STEP_TIMEOUT_MS,
    _offline_context,
    base_url,
    book_html,
    browser,
    chromium_executable,
    discover_pages,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def zh_pages(book_build, book_html: Path, root: Path) -> list:
    assert book_build.zh_returncode == 0, book_build.zh_log[-3000:]
    found = discover_pages(book_html / "zh", root)
    assert len(found) == len(discover_pages(book_html, root)) > 30
    return found


@pytest.fixture(scope="module")
def zh_reports(browser, base_url: str, zh_pages: list) -> dict:
    return en._visit_all(browser, base_url + "/zh", zh_pages)


def test_chinese_pages_load_offline_with_their_images_math_and_widgets(zh_reports, zh_pages):
    en.test_pages_load(zh_reports, None)
    en.test_images_load(zh_reports, None)
    en.test_math_is_typeset(zh_reports, None)
    en.test_local_assets_load(zh_reports, None)
    en.test_no_script_style_or_font_from_the_network(zh_reports, None)
    en.test_no_uncaught_javascript_errors(zh_reports, None)
    en.test_no_console_errors(zh_reports, None)
    en._fail_if(en._widget_problems(zh_reports, zh_pages), "ipywidgets that did not render")


@contextlib.contextmanager
def _offline_page(browser, url: str):
    """A page at ``url`` in a context with every request off 127.0.0.1 aborted."""
    context = _offline_context(browser)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(url)
        yield page
    finally:
        context.close()


def _switch(page) -> None:
    with page.expect_navigation():
        page.click(".gl-language-switch a")


def test_the_language_switch_goes_both_ways(browser, base_url: str):
    with _offline_page(browser, f"{base_url}/book/gpu_basics.html") as page:
        assert page.evaluate("document.documentElement.lang") == "en"
        _switch(page)
        assert page.url == f"{base_url}/zh/book/gpu_basics.html"
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        assert "GPU 是什么" in page.title()
        _switch(page)
        assert page.url == f"{base_url}/book/gpu_basics.html"


def test_a_live_calculator_is_ready_and_labelled_in_chinese(browser, base_url: str):
    with _offline_page(browser, f"{base_url}/zh/book/memory_bandwidth.html") as page:
        calc = page.locator("#calc-roofline")
        calc.scroll_into_view_if_needed()
        assert calc.locator(".gl-calc-title").inner_text() == "屋顶线模型探索器"
        page.wait_for_function(
            "() => !document.querySelector('#calc-roofline select, #calc-roofline input')"
            ".disabled"
        )
        assert calc.locator(".gl-calc-status").inner_text().startswith("改动任意一个值")
        assert calc.locator(".gl-calc-result").inner_text().strip()  # the build-time result


def test_chinese_text_is_set_in_a_cjk_font(browser, base_url: str):
    if shutil.which("fc-list") is None:
        pytest.skip("no fontconfig (fc-list) to ask for a CJK font")
    fonts = subprocess.run(
        ["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    if not fonts:
        message = "no CJK font installed (.ci/run installs fonts-wqy-microhei)"
        if en.REQUIRE_BROWSER:
            pytest.fail(message)
        pytest.skip(message)
    with _offline_page(browser, f"{base_url}/zh/book/gpu_basics.html") as page:
        # A character the font lacks is drawn as an empty box of one fixed width; real glyphs
        # of different characters differ in their ink. Compare two characters' pixels.
        drawn = page.evaluate(
            """() => {
              const c = document.createElement("canvas"); c.width = 64; c.height = 64;
              const g = c.getContext("2d");
              const font = getComputedStyle(document.querySelector("h1")).fontFamily;
              const ink = (ch) => { g.clearRect(0, 0, 64, 64); g.font = "48px " + font;
                g.fillText(ch, 4, 52);
                return Array.from(g.getImageData(0, 0, 64, 64).data).filter((v, i) => i % 4 == 3
                  && v > 0).length; };
              return [ink("线"), ink("一")];
            }"""
        )
        assert drawn[0] > 0 and drawn[0] != drawn[1], drawn


def test_a_self_check_answers_in_chinese(browser, base_url: str):
    """The page's script replies in the Chinese page's words (its data-text-* attributes)."""
    with _offline_page(browser, f"{base_url}/zh/book/memory_bandwidth.html") as page:
        page.wait_for_selector(".gl-selfcheck.gl-sc-live")
        box = page.locator("#gl-sc-mb-a100-ridge")
        box.scroll_into_view_if_needed()
        assert box.locator(".gl-sc-submit").inner_text() == "核对"
        box.locator("input").fill("10")
        box.locator("input").press("Enter")
        result = box.locator(".gl-sc-result").inner_text()
        assert result.startswith("还差一点：10 偏低（与答案的差距不在 5% 以内）。"), result
        assert "提示：" in result
        box.locator("input").fill("大约一百")
        box.locator("input").press("Enter")
        typed = box.locator(".gl-sc-result").inner_text()
        assert typed == "请输入一个数（单位 FLOP/byte），例如 12.5。"
        choice = page.locator("#gl-sc-mb-matvec-bound")
        choice.locator("input[type=radio]").nth(0).check()
        choice.locator(".gl-sc-submit").click()
        assert choice.locator(".gl-sc-result").inner_text() == "正确。"
