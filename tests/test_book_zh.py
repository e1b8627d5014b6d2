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
