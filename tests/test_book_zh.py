"""The Chinese edition as built: strict, complete, linked to the English, searchable in Chinese.

``book_build`` (``tests/conftest.py``) builds the English book and then the Chinese edition
into ``_build/html/zh`` exactly as ``python3 course.py build`` does.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from test_book import RAW_MARKUP, visible_prose

from gpulab.course.translated_pages import absent_messages
from gpulab.course.translation import LOCALE_DIR

ZH = "zh"


@pytest.fixture(scope="module")
def zh_html(book_build) -> Path:
    assert book_build.returncode == 0, book_build.log[-3000:]
    assert book_build.zh_returncode == 0, (
        "the Chinese edition did not build (warnings are errors); end of its log:\n"
        + book_build.zh_log[-4000:]
    )
    return book_build.html / ZH


def _pages(html: Path) -> list[str]:
    return sorted(
        p.relative_to(html).as_posix()
        for folder in ("book", "notebooks")
        for p in (html / folder).glob("*.html")
    )


def test_the_chinese_edition_builds_with_no_warnings(book_build, zh_html):
    warnings = [line for line in book_build.zh_log.splitlines() if "WARNING:" in line
                and "IPKernelApp" not in line]  # fmt: skip
    assert not warnings, "\n".join(warnings[:20])


def test_every_english_page_has_its_chinese_page(book_build, zh_html):
    english, chinese = _pages(book_build.html), _pages(zh_html)
    assert english and chinese == english
    for page in chinese:
        assert '<html lang="zh-CN"' in (zh_html / page).read_text(encoding="utf-8"), page


def test_each_page_links_to_its_counterpart_both_ways(book_build, zh_html):
    switch = re.compile(r'<p class="gl-language-switch"><a href="([^"]+)" hreflang="([^"]+)"')
    for page in _pages(book_build.html):
        for html, other, lang in ((book_build.html, zh_html, "zh-CN"), (zh_html, None, "en")):
            path = html / page
            found = switch.search(path.read_text(encoding="utf-8"))
            assert found and found.group(2) == lang, page
            target = (path.parent / found.group(1)).resolve()
            expected = (other or book_build.html) / page
            assert target == expected.resolve() and target.is_file(), (page, found.group(1))


def test_pages_read_in_chinese_with_no_raw_markup(zh_html):
    leaks = []
    for page in _pages(zh_html):
        prose = visible_prose((zh_html / page).read_text(encoding="utf-8"))
        for match in RAW_MARKUP.finditer(prose):
            leaks.append(f"{page}: ...{match.string[match.start() - 40 : match.end() + 40]}")
        # Emphasis that stopped rendering next to Chinese text shows its asterisks.
        leaks += [f"{page}: ...{m.group(0)}" for m in re.finditer(r".{0,20}\*\*.{0,20}", prose)]
    assert not leaks, "\n".join(leaks[:30])
    basics = (zh_html / "book" / "gpu_basics.html").read_text(encoding="utf-8")
    assert "GPU 是什么" in basics and "线程束" in basics


def test_glued_values_appear_in_translated_paragraphs(book_build, zh_html):
    # The ResNet chapter's parameter count is glued into a paragraph that is translated.
    english = (book_build.html / "book" / "case_resnet.html").read_text(encoding="utf-8")
    chinese = (zh_html / "book" / "case_resnet.html").read_text(encoding="utf-8")
    count = re.search(r'has <span class="pasted-text">([\d,]+)</span> parameters', english)
    assert count, "the English paragraph with the parameter count"
    assert f'<span class="pasted-text">{count.group(1)}</span> 个参数' in chinese


def test_pages_with_generated_text_say_it_is_in_english(book_build, zh_html, root, monkeypatch):
    monkeypatch.syspath_prepend(str(root / "book" / "_ext"))
    from language_switch import GENERATED_IN_ENGLISH

    for page in _pages(zh_html):
        chinese = (zh_html / page).read_text(encoding="utf-8")
        has_output = 'class="cell_output' in chinese or "pasted-inline" in chinese
        noted = chinese.count("gl-generated-english")
        assert noted == (1 if has_output else 0), page
        assert "gl-generated-english" not in (book_build.html / page).read_text(encoding="utf-8")
    accuracy = (zh_html / "book" / "model_accuracy.html").read_text(encoding="utf-8")
    assert GENERATED_IN_ENGLISH in accuracy


def test_lab_pages_show_the_recorded_outputs_note_in_chinese(book_build, zh_html, root):
    labs = sorted(p.stem for p in (root / "notebooks").glob("*_lab.ipynb"))
    assert labs
    for lab in labs:
        chinese = (zh_html / "notebooks" / f"{lab}.html").read_text(encoding="utf-8")
        english = (book_build.html / "notebooks" / f"{lab}.html").read_text(encoding="utf-8")
        assert '<p class="admonition-title">Recorded outputs</p>' in english, lab
        assert '<p class="admonition-title">录制的输出</p>' in chinese, lab
        assert "Recorded outputs" not in chinese, lab
        assert "outputs recorded on" not in chinese and "：输出于 " in chinese, lab
        assert ("No GPU recording yet" in english) == ("还没有 GPU 录制" in chinese), lab
        assert "No GPU recording yet" not in chinese, lab


def test_chinese_search_splits_chinese_words(zh_html):
    text = (zh_html / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    terms = index["terms"]
    # jieba splits Chinese text into words (线程束 into 线程 and 束), each a term of its own.
    assert "线程" in terms and "显存" in terms and "吞吐量" in terms
    assert index["titles"][index["docnames"].index("book/gpu_basics")] == "GPU 是什么"


def test_the_calculators_are_labelled_in_chinese(zh_html):
    page = (zh_html / "book" / "memory_bandwidth.html").read_text(encoding="utf-8")
    assert '<p class="gl-calc-title">屋顶线模型探索器</p>' in page
    assert 'data-text-ready="改动任意一个值' in page
    assert "This calculator needs a browser" not in page


def test_every_translated_message_reaches_its_page(zh_html, root):
    """Each page's translated messages are on its built Chinese page.

    Sphinx drops a translation without a word (the page shows the English) when it parses as
    something other than the paragraph it replaces (``1. 慢循环`` is a list) or when its
    catalogue cannot be compiled. Each message is looked for as the page shows it
    (``gpulab.course.translated_pages``): rendered, with whitespace, quotation marks and dashes
    left out, and what the build computes (glued values, math, citations, a ``{doc}``
    role's title, an autolink's shortened text) a gap between pieces that must appear in
    order; a display-math block's TeX is on the page as written. Untranslated and fuzzy
    messages are not looked for: those pages show the English on purpose. No translated
    message is legitimately absent: ``ui.po`` is not a page's catalogue (the calculators and
    boxes it translates have tests of their own), and text that only code or a cell's output
    shows is not in any catalogue.
    """
    base = root / LOCALE_DIR
    absent, pages = [], 0
    for catalogue in sorted(base.glob("*/*.po")):
        page = zh_html / catalogue.relative_to(base).with_suffix(".html")
        assert page.is_file(), f"{catalogue.relative_to(root)} has no built page {page}"
        pages += 1
        absent += [f"{catalogue.stem}: {m[:90]!r}" for m in absent_messages(catalogue, page)]
    assert pages > 30
    assert not absent, (
        f"{len(absent)} translated messages are not on their Chinese page (Sphinx showed the "
        "English; python -m gpulab.course.translation names the cause):\n" + "\n".join(absent)
    )


_QUESTION = re.compile(
    r'<div class="gl-selfcheck" id="(gl-sc-[a-z0-9-]+)"(.*?)</details></div>', re.S
)


def _questions(page: str) -> dict[str, str]:
    """Each self-check question of a built page: its id -> its HTML."""
    return {m.group(1): m.group(2) for m in _QUESTION.finditer(page)}


def test_the_self_checks_read_in_chinese_with_the_english_figures(book_build, zh_html):
    """Each question, hint, solution and label in Chinese; every figure of the English page's
    question on the Chinese page, and the same answer and tolerance for the page's script."""
    number = re.compile(r"\d+(?:[,.]\d+)*")
    data = re.compile(r'data-(?:answer|tolerance|kind|unit)="[^"]*"')
    problems, seen = [], 0
    for page in _pages(zh_html):
        english = _questions((book_build.html / page).read_text(encoding="utf-8"))
        chinese = _questions((zh_html / page).read_text(encoding="utf-8"))
        assert chinese.keys() == english.keys(), page
        for key, html in chinese.items():
            seen += 1
            text = re.sub(r"<[^>]+>", " ", html)
            question = re.search(r'class="gl-sc-question"[^>]*>(.*?)</p>', html, re.S).group(1)
            if "先预测，再核对。" not in text or "详细解答" not in text:
                problems.append(f"{page} {key}: the widget's labels are in English")
            if not re.search(r"[\u4e00-\u9fff]", re.sub(r"<span.*?</span>", "", question)):
                problems.append(f"{page} {key}: the question is in English")
            english_text = re.sub(r"<[^>]+>", " ", english[key])
            lost = Counter(number.findall(english_text)) - Counter(number.findall(text))
            if lost:
                problems.append(f"{page} {key}: figures of the English page lost: {dict(lost)}")
            if data.findall(html) != data.findall(english[key]):
                problems.append(f"{page} {key}: the answer the script checks differs")
    assert seen >= 60 and not problems, "\n".join(problems)
