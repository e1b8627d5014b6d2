"""The chapters' self-checks in the Chinese edition: extracted, translated, and shown with the
English page's numbers.

A self-check's question, choices, hint and solution are templates (``gpulab.labkit.selfcheck``);
``python3 course.py translations`` extracts them from the chapters into ``selfchecks.pot``
(``gpulab.course.selfchecks``), the Chinese edition translates them in
``locale/zh_CN/LC_MESSAGES/selfchecks.po``, and ``book/_ext/selfcheck.py`` renders each
question of a Chinese page again, the figures filled in after translating. These tests fail
when a chapter's self-check text is missing from the catalogue or untranslated, when a
translated question loses or changes one of its figures, and when the extension leaves a
question of a Chinese page in English.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from gpulab.course.selfchecks import cells, messages, page_checks, write_template
from gpulab.course.translation import LOCALE_DIR, ui_table
from gpulab.labkit.selfcheck import translatable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import selfcheck as extension  # noqa: E402  (book/_ext/selfcheck.py)

#: A figure as a reader reads it: 4,096, 0.0833, 3.39 × 10³⁸'s mantissa, 1.64.
_NUMBER = re.compile(r"\d+(?:[,.]\d+)*")
_TAG = re.compile(r"<[^>]+>")


@pytest.fixture(scope="module")
def questions(root) -> dict[str, list]:
    """Every chapter's questions, computed as the book computes them (about a minute)."""
    return {
        path.stem: page_checks(path)
        for path in sorted((root / "book").glob("*.md"))
        if "selfcheck(" in path.read_text(encoding="utf-8")
    }


@pytest.fixture(scope="module")
def chinese(root):
    return extension.translator("zh_CN", root)


def test_every_self_check_text_is_translated(root, questions):
    table = ui_table(root / LOCALE_DIR / extension.CATALOGUE)
    missing = [f"{chapter} {check.label}: {message[:80]!r}"
               for chapter, checks in questions.items() for check in checks
               for message in check.messages if message not in table]  # fmt: skip
    assert len(questions) >= 15
    assert not missing, (
        "self-check texts the Chinese edition shows in English (run python3 course.py "
        "translations, then translate them in selfchecks.po):\n" + "\n".join(missing)
    )


def test_the_widgets_words_are_translated(root):
    table = ui_table(root / LOCALE_DIR / "ui.po")
    missing = [m for m in extension.ui_messages() if m not in table]
    assert not missing, f"untranslated in ui.po: {missing}"


def _text(page: str) -> str:
    return _TAG.sub(" ", page)


def _numbers(text: str) -> Counter:
    return Counter(_NUMBER.findall(text))


def test_each_chinese_question_shows_the_english_figures(questions, chinese):
    problems = []
    for chapter, checks in questions.items():
        for check in checks:
            english, translated = check.to_html(), check.to_html(chinese)
            lost = _numbers(_text(english)) - _numbers(_text(translated))
            if lost:
                problems.append(f"{chapter} {check.label}: figures lost {dict(lost)}")
            for template in (check.question, check.hint, *check.solution):
                if translatable(template) and check.fill(template) == check.fill(template, chinese):
                    problems.append(f"{chapter} {check.label}: in English: {template[:60]!r}")
            # The page's script reads the same answer and tolerance in both editions.
            data = re.compile(r'data-(?:answer|tolerance|kind|unit)="[^"]*"')
            if data.findall(english) != data.findall(translated):
                problems.append(f"{chapter} {check.label}: the figures the script checks differ")
    assert not problems, "\n".join(problems)


def test_a_chinese_question_reads_in_chinese(questions, chinese):
    check = next(c for c in questions["memory_bandwidth"] if c.label == "mb-a100-to-h100")
    page = check.to_html(chinese)
    assert "先预测，再核对。" in page and "<summary>提示</summary>" in page
    assert "<summary>详细解答</summary>" in page and "<strong>答案：</strong>" in page
    assert "对 4,096 × 4,096 激活值做的 LayerNorm" in page
    assert "它是访存受限的" in page and "矩阵乘法是计算受限的" in page  # word values translated
    assert "4,096² 的矩阵乘法" in page  # a choice that is a template
    assert 'data-text-right="正确。"' in page


def _page_with(html: str) -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    output = nodes.container(nb_element="cell_code_output")
    output += nodes.raw("", html, format="html", classes=["output", "text_html"])
    document += output
    return document


def test_the_extension_renders_a_chinese_pages_questions_again(root, chinese):
    source = root / "book" / "memory_bandwidth.md"
    english = [check.to_html() for check in page_checks(source)]
    document = _page_with(english[0])
    document += nodes.raw("", english[2], format="html")
    document += nodes.raw("", "<p>not a question</p>", format="html")
    assert extension.translate_questions(document, source, chinese) == 2
    raws = [n.astext() for n in document.findall(nodes.raw)]
    assert "FP16 向量加法" in raws[0] and "矩阵-向量乘积" in raws[1]
    assert raws[2] == "<p>not a question</p>"
    assert next(document.findall(nodes.raw))["classes"] == ["output", "text_html"]
    # A stale output (the cell's English no longer what the chapter computes) is left alone.
    stale = _page_with(english[0].replace("FP16 vector add", "FP16 vector sum"))
    assert extension.translate_questions(stale, source, chinese) == 0
    assert extension.translator("en") is None


def test_the_extraction_reads_a_chapters_questions(tmp_path):
    chapter = tmp_path / "roofline.md"
    chapter.write_text(
        "# A page\n\n```{code-cell} ipython3\nfrom gpulab.labkit.selfcheck import selfcheck\n"
        "width = 4096\n```\n\nText.\n\n```{code-cell} ipython3\n---\ntags: [remove-input]\n"
        "---\nselfcheck(\n    'rf-bound',\n    'A {d:,}-wide layer on an {gpu}: what limits it?',\n"
        "    'memory',\n    choices=['memory', 'compute', '{d:,}'],\n    hint='Intensity.',\n"
        "    solution='{i:.1f} FLOP/byte.',\n"
        "    values=dict(d=width, gpu='H100 SXM', i=1.0),\n)\n```\n\n"
        "```{code-cell} ipython3\nraise SystemExit('after the last question: not run')\n```\n",
        encoding="utf-8",
    )
    assert len(cells(chapter.read_text(encoding="utf-8"))) == 2
    (check,) = page_checks(chapter)
    assert check.fill(check.question) == "A 4,096-wide layer on an H100 SXM: what limits it?"
    assert messages(tmp_path) == [
        ("roofline", "A {d:,}-wide layer on an {gpu}: what limits it?"),
        ("roofline", "memory"), ("roofline", "compute"), ("roofline", "Intensity."),
        ("roofline", "{i:.1f} FLOP/byte."), ("roofline", "H100 SXM"),
    ]  # fmt: skip
    template = write_template(tmp_path, tmp_path / "selfchecks.pot").read_text(encoding="utf-8")
    assert "#: book/roofline.md" in template and 'msgid "{d:,}"' not in template


def test_a_cell_that_calls_selfcheck_must_end_in_its_question(tmp_path):
    chapter = tmp_path / "bad.md"
    chapter.write_text(
        "```{code-cell} ipython3\nfrom gpulab.labkit.selfcheck import selfcheck\n"
        "q = selfcheck('x', 'Q?', 1.0, rel_tol=0.1, hint='h', solution='s')\n```\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="code cell 1 calls selfcheck but does not end"):
        page_checks(chapter)
