"""The Chinese edition's catalogues: complete, in step with the English text, and faithful.

Every page of the book has a catalogue in ``locale/zh_CN/LC_MESSAGES`` (``locale/README.md``).
These tests fail, and list the messages with their page, when

* a message is untranslated or fuzzy (the Chinese page would show it in English; the coverage
  of every page goes to ``test-artifacts/translation-coverage.txt``);
* the catalogues do not hold the English text as it is now (``python3 course.py
  translations`` was not run after an English change, so the edition cannot show it);
* a translation drops or changes a code span, math, a link target, a cross-reference's target
  or a glued value, shows a glossary term without its Chinese form, or loses emphasis;
* a translation begins like a Markdown block (``1. 慢循环``: Sphinx would show the English);
* ``msgfmt -c`` refuses a catalogue (obsolete entries repeating active ones, a
  ``python-format`` flag on prose), or a catalogue holds either;
* the live calculators' sentences and labels (``ui.po``) are not all translated.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpulab.course.translation import (
    LOCALE_DIR,
    MYST_EXTENSIONS,
    catalogue_paths,
    check_catalogue,
    check_message,
    coverage,
    escape_block_start,
    glossary_terms,
    hygiene_problems,
    tidy_catalogue,
    ui_table,
)

ROOT = Path(__file__).resolve().parents[1]


def _toc_pages(root: Path) -> list[str]:
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    found = [toc["root"]]
    for part in toc.get("parts", []):
        found += [chapter["file"] for chapter in part.get("chapters", [])]
    return found


def _page(path: Path) -> str:
    return path.relative_to(ROOT / LOCALE_DIR).with_suffix("").as_posix()


def _ids(path: Path) -> set[str]:
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        return {m.id for m in read_po(handle) if m.id}


def test_every_page_of_the_book_has_a_catalogue(root):
    catalogued = {_page(p) for p in catalogue_paths(root)}
    missing = [page for page in _toc_pages(root) if page not in catalogued]
    assert not missing, f"no catalogue for {missing}: run python3 course.py translations"


def test_every_message_is_translated_and_none_is_fuzzy(root):
    report, missing = [], []
    for path in catalogue_paths(root):
        cov = coverage(path)
        report.append(f"{cov.page}: {cov.translated}/{cov.messages} ({cov.fraction:.0%})")
        if cov.translated < cov.messages:
            from babel.messages.pofile import read_po

            with open(path, "rb") as handle:
                left = [m for m in read_po(handle) if m.id and (not m.string or m.fuzzy)]
            missing += [f"{cov.page}: {'fuzzy' if m.fuzzy else 'new'}: {m.id[:80]!r}"
                        for m in left]  # fmt: skip
    artifacts = root / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "translation-coverage.txt").write_text(
        "Chinese edition: messages translated per page\n" + "\n".join(report) + "\n", "utf-8"
    )
    assert not missing, (
        "messages the Chinese edition shows in English (translate them, then remove any "
        "'#, fuzzy' line):\n" + "\n".join(missing)
    )


def test_translations_keep_what_must_not_change(root):
    terms = glossary_terms(root / "book" / "glossary.md")
    problems = [str(p) for path in catalogue_paths(root) for p in check_catalogue(path, terms)]
    assert not problems, "\n".join(problems)


def test_the_checks_find_each_kind_of_broken_translation():
    terms = glossary_terms(ROOT / "book" / "glossary.md")
    english = (
        "A {term}`warp` reads `x[i]` at $b$ GB/s ({glue:text}`bw:.0f`); see {doc}`kernels` "
        "and [the guide](https://example.org/guide). **Fast.** Done."
    )
    good = (
        "一个{term}`线程束 <warp>`以 $b$ GB/s（{glue:text}`bw:.0f`）读取 `x[i]`；参见 "
        "{doc}`kernels` 和[指南](https://example.org/guide)。**很快**。完成。"
    )
    assert check_message(english, good, terms) == []
    broken = {
        "missing code `x[i]`": good.replace("`x[i]`", "x[i]"),
        "missing math $b$": good.replace("$b$", "b"),
        "missing role {glue:text}`bw:.0f`": good.replace("{glue:text}`bw:.0f`", "42"),
        "missing {doc} target kernels": good.replace("{doc}`kernels`", "核函数一章"),
        "missing link target https://example.org/guide": good.replace(
            "(https://example.org/guide)", "(https://example.org/other)"
        ),
        "must show the glossary's Chinese term": good.replace("线程束 <warp>", "warp <warp>"),
        "has no {term} role": good.replace("{term}`线程束 <warp>`", "线程束"),
        "emphasis lost": good.replace("**很快**。完成", "**很快。**完成"),
        "reads the translation as a bullet list": "- " + good,
        "reads the translation as an ordered list": "1. " + good,
        "reads the translation as a heading": "# " + good,
        "reads the translation as a blockquote": good.replace("；参见 ", "；参见\n> "),
        "more than one paragraph": good.replace("；参见 ", "；\n\n参见 "),
    }
    for what, translation in broken.items():
        found = [p.what for p in check_message(english, translation, terms)]
        assert any(what in f for f in found), (what, found)


def test_an_escaped_block_marker_reads_as_the_paragraph_sphinx_expects():
    terms = {"warp": ("线程束",)}
    for english, chinese in [("1. The slow loop", "1. 慢循环"), ("+ gradients", "+ 梯度"),
                             ("* stars", "* 星号"), ("#", "#"), ("> quoted", "> 引用"),
                             ("Two lines\n- and a list", "两行\n- 和一个列表")]:  # fmt: skip
        assert check_message(english, chinese, terms), chinese
        escaped = escape_block_start(chinese)
        assert escaped.replace("\\", "") == chinese  # one backslash added, nothing else
        assert check_message(english, escaped, terms) == [], escaped
        # ui.po's sentences go into the page as they are, not through Markdown: no escaping.
        assert check_message(english, chinese, terms, markdown=False) == [], chinese


def test_translations_are_parsed_with_the_books_myst_extensions(root):
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    assert set(MYST_EXTENSIONS) == set(config["parse"]["myst_enable_extensions"])


MSGFMT = shutil.which("msgfmt")
#: CI (.ci/run) installs GNU gettext and requires this check; elsewhere it skips without it.
REQUIRE_MSGFMT = os.environ.get("GPULAB_REQUIRE_MSGFMT") == "1"


def test_msgfmt_accepts_every_catalogue(root, tmp_path):
    if MSGFMT is None:
        if REQUIRE_MSGFMT:
            pytest.fail("msgfmt (GNU gettext) is not installed; GPULAB_REQUIRE_MSGFMT=1 needs it")
        pytest.skip("msgfmt (GNU gettext) is not installed")
    refused = []
    for path in catalogue_paths(root):
        proc = subprocess.run([MSGFMT, "-c", "-o", str(tmp_path / "out.mo"), str(path)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        if proc.returncode != 0:
            refused.append(proc.stderr.strip())
    assert len(catalogue_paths(root)) > 30
    assert not refused, "\n".join(refused)


def test_tidying_drops_obsolete_entries_and_python_format_flags(tmp_path):
    po = tmp_path / "page.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        '#, python-format\nmsgid "At the 5% level."\nmsgstr "在 5% 的水平上。"\n\n'
        '#, fuzzy, python-format\nmsgid "A 10% gain."\nmsgstr "10% 的提升。"\n\n'
        '#~ msgid "At the 5% level."\n#~ msgstr "旧的译文。"\n\n',
        encoding="utf-8",
    )
    found = [p.what for p in hygiene_problems(po)]
    assert len(found) == 3 and "1 obsolete" in found[0], found
    if MSGFMT:  # what msgfmt -c refuses: the duplicate and the format string "% l"
        refused = subprocess.run([MSGFMT, "-c", "-o", os.devnull, str(po)],
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert refused.returncode != 0 and "duplicate" in refused.stderr
    assert tidy_catalogue(po) is True
    text = po.read_text(encoding="utf-8")
    assert "#~" not in text and "python-format" not in text and "#, fuzzy\n" in text
    assert hygiene_problems(po) == [] and tidy_catalogue(po) is False
    assert text.endswith('msgstr "10% 的提升。"\n\n')  # the file's own ending kept
    if MSGFMT:
        subprocess.run([MSGFMT, "-c", "-o", os.devnull, str(po)], check=True, timeout=60)


def test_a_dropped_translation_is_found_absent_from_its_page(tmp_path):
    from gpulab.course.translated_pages import absent_messages

    po = tmp_path / "lab.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "1. The slow loop"\nmsgstr "1. 慢循环"\n\n'
        'msgid "2. The fix"\nmsgstr "2\\\\. 修复"\n\n'
        'msgid "A {term}`warp` of {glue:text}`n` threads ($n$), see <https://github.com/a/b>."\n'
        'msgstr "一个由 {glue:text}`n` 个线程（$n$）组成的{term}`线程束 <warp>`，见 '
        '<https://github.com/a/b>。"\n\n'
        'msgid "Old English"\nmsgstr "旧译文"\n\n'
        '#, fuzzy\nmsgid "Changed"\nmsgstr "过时的译文"\n\n',
        encoding="utf-8",
    )
    page = tmp_path / "lab.html"
    page.write_text(
        "<h2>1. The slow loop<a class='headerlink' href='#s1'>#</a></h2><h2>2. 修复</h2>"
        "<p>一个由 <span>32</span> 个线程（<span class='math'>\\(n\\)</span>）组成的"
        "<a href='glossary.html#term-warp'>线程束</a>，见 <a href='https://github.com/a/b'>"
        "a/b</a>。</p><p>Changed</p>",
        encoding="utf-8",
    )
    assert absent_messages(po, page) == ["1. The slow loop", "Old English"]


def test_glossary_terms_are_read_for_every_entry(root):
    terms = glossary_terms(root / "book" / "glossary.md")
    text = (root / "book" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    headwords = [line for line in block.splitlines() if line and not line.startswith(" ")]
    assert len(terms) == len(headwords) > 90
    assert terms["warp"] == ("线程束",) and terms["cuda"] == ("统一计算设备架构", "CUDA")


@pytest.fixture(scope="module")
def templates(root, book_build, course_module) -> Path:
    """The English messages as they are now: ``python3 course.py translations``'s extraction.

    After the book build (and on its worker), whose execution cache it reuses.
    """
    assert course_module.extract_messages(Path(sys.executable)) == 0, "the extraction failed"
    return course_module.GETTEXT_TEMPLATES


def test_the_catalogues_hold_the_english_text_as_it_is_now(root, templates):
    out_of_step = []
    for template in sorted(templates.rglob("*.pot")):
        page = template.relative_to(templates).with_suffix("").as_posix()
        catalogue = root / LOCALE_DIR / f"{page}.po"
        english = _ids(template)
        held = _ids(catalogue) if catalogue.is_file() else set()
        out_of_step += [f"{page}: new English text: {m[:80]!r}" for m in sorted(english - held)]
        out_of_step += [f"{page}: no longer in the English: {m[:80]!r}"
                        for m in sorted(held - english)]  # fmt: skip
    assert not out_of_step, (
        "run python3 course.py translations, then translate what it marks:\n"
        + "\n".join(out_of_step)
    )


def test_the_calculators_speak_chinese(root):
    sys.path.insert(0, str(root / "book" / "_ext"))
    try:
        from live_calculators import translator, ui_messages
    finally:
        sys.path.remove(str(root / "book" / "_ext"))
    table = ui_table(root / LOCALE_DIR / "ui.po")
    missing = [m for m in ui_messages() if m not in table]
    assert not missing, f"untranslated in ui.po: {missing}"
    _ = translator("zh_CN")
    assert _("Roofline explorer") == "屋顶线模型探索器"
    assert translator("en")("Roofline explorer") == "Roofline explorer"


def test_the_recorded_outputs_note_speaks_chinese(root, monkeypatch):
    """A lab page's "Recorded outputs" note (book/_ext/lab_recordings.py): every sentence in
    ui.po, each translation with the English's placeholders, filled in after translating."""
    import string

    from gpulab.course.recordings import Recording, recordings_summary

    monkeypatch.syspath_prepend(str(root / "book" / "_ext"))
    from lab_recordings import _changed_sentences, ui_messages
    from live_calculators import translator

    table = ui_table(root / LOCALE_DIR / "ui.po")

    def fields(text):
        return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)

    for message in ui_messages():
        assert message in table, f"untranslated in ui.po: {message!r}"
        assert fields(table[message]) == fields(message), message
    _ = translator("zh_CN")
    provenance = {"date": "2026-12-03", "device": "AMD EPYC (cpu); torch 2.13",
                  "gpulab": "0.1.0", "python": "3.11.7"}  # fmt: skip
    cpu = Recording("cpu", Path("x_lab.ipynb"), provenance, 41.0)
    gpu = Recording("cuda:H100 SXM5 80GB", Path("x_lab.ipynb"),
                    {**provenance, "cupy": "13.3.0"}, None)  # fmt: skip
    assert recordings_summary({"cpu": cpu}, _) == [
        "CPU：输出于 2026-12-03 录制，设备为 AMD EPYC (cpu); torch 2.13；CuPy 未安装；"
        "gpulab 0.1.0；Python 3.11.7；运行时间 41 s。",
        "还没有 GPU 录制：本页的每个输出都是在 CPU 上运行得到的。在有 CUDA GPU 的机器上，"
        "`python -m gpulab record --all` 会添加一份 GPU 录制，显示在这些输出旁边。",
    ]
    both = recordings_summary({"cpu": cpu, "cuda:H100 SXM5 80GB": gpu}, _)
    assert len(both) == 2 and both[1].endswith("CuPy 13.3.0；gpulab 0.1.0；Python 3.11.7。")
    assert _changed_sentences({"GPU (H100)": {3, 5}}, _) == (
        "有 2 个单元格在 GPU (H100) 录制之后改动过，只显示 CPU 的输出。"
    )
    assert _changed_sentences({"GPU (T4)": {3}, "GPU (H100)": {3, 5}}, _) == (
        "有 1 个单元格在 GPU (T4) 录制之后改动过，没有该录制的标签页。 "
        "有 2 个单元格在 GPU (H100) 录制之后改动过，没有该录制的标签页。 "
        "有 1 个单元格在每次录制之后都改动过，只显示 CPU 的输出。"
    )
    # In English the note reads as before: the sentences, untranslated.
    assert _changed_sentences({"GPU (T4)": {3}, "GPU (H100)": {3, 5}}).endswith(
        "1 cell changed since every recording and shows the CPU output only."
    )


def test_a_changed_english_message_is_never_shown_with_stale_chinese(root, tmp_path):
    # sphinx-intl marks a changed message fuzzy (keeping the old Chinese as a hint); the build
    # must not use fuzzy translations, so the reader sees the new English until it is done.
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import read_mo, write_mo

    sphinx = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["sphinx"]
    assert not sphinx["config"].get("gettext_allow_fuzzy_translations", False)
    catalogue = Catalog(locale="zh_CN")
    catalogue.add("A new English sentence.", "旧的中文。", flags=["fuzzy"])
    catalogue.add("An unchanged sentence.", "未改变的句子。")
    with open(tmp_path / "page.mo", "wb") as handle:
        write_mo(handle, catalogue)  # what Sphinx does, without fuzzy translations
    with open(tmp_path / "page.mo", "rb") as handle:
        compiled = read_mo(handle)
    assert compiled.get("A new English sentence.") is None
    assert compiled.get("An unchanged sentence.").string == "未改变的句子。"


def test_the_term_and_bold_checks_find_each_kind_of_broken_translation():
    terms = glossary_terms(ROOT / "book" / "glossary.md")
    english = (
        "Each warp reads the registry's datasheet peak at 4 FLOP/byte, as the **{term}`kernel`** "
        "does; the claim holds, and **fusion** removes bytes."
    )
    good = (
        "每个线程束读取规格库中的数据手册峰值，为 4 FLOP/字节，与"
        "&#8203;**{term}`核函数 <kernel>`**&#8203;一样；这个论断成立，而**融合**减少了字节数。"
    )
    assert check_message(english, good, terms) == []
    broken = {
        "glossary term 'warp'": good.replace("线程束", "warp"),
        "'registry' is 规格库": good.replace("规格库", "数据表"),
        "write 数据手册, not '规格表'": good.replace("数据手册", "规格表"),
        "write FLOP/字节, not 'FLOPs/字节'": good.replace("FLOP/字节", "FLOPs/字节"),
        "'claim' is 论断": good.replace("论断", "说法"),
        "space before bold '融合'": good.replace("而**融合**", "而 **融合**"),
        "space after bold '融合'": good.replace("**融合**减少", "**融合** 减少"),
        "bold lost or moved: {term}kernel": good.replace("&#8203;", ""),
    }
    for what, translation in broken.items():
        found = [p.what for p in check_message(english, translation, terms)]
        assert any(what in f for f in found), (what, found)


def test_one_english_message_has_one_translation(root):
    # The boilerplate every chapter or lab repeats ("What a GPU adds", the "Check yourself"
    # instructions, "How long") reads the same on every page. The glossary's headwords
    # ("线程束（Warp）") differ from a heading of the same words by design.
    from babel.messages.pofile import read_po

    from gpulab.course.terminology import divergent_translations

    messages = []
    for path in catalogue_paths(root):
        if path.stem == "glossary":
            continue
        with open(path, "rb") as handle:
            messages += [(_page(path), m.id, m.string) for m in read_po(handle)
                         if m.id and m.string and not m.fuzzy]  # fmt: skip
    divergent = divergent_translations(messages)
    assert not divergent, "\n".join(
        f"{msgid[:70]!r}:\n" + "\n".join(f"    {pages}: {s[:70]!r}" for s, pages in ways.items())
        for msgid, ways in divergent.items()
    )


def test_bold_in_the_chinese_pages_shows_as_bold_without_gaps(book_build):
    # What the catalogue checks predict, on the built pages: no asterisks left showing in
    # running text, and no space between a Chinese character and bold Chinese text.
    import html as html_lib
    import re

    assert book_build.zh_returncode == 0, book_build.zh_log[-3000:]
    cjk = "\u4e00-\u9fff\u3000-\u303f\uff00-\uffef"
    shown, gaps = [], []
    for page in sorted((book_build.html / "zh").rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for paragraph in re.findall(r"<p>(.*?)</p>", text, re.S):
            hidden = r"<code.*?</code>|<span class=\"math.*?</span>"  # code and math keep **
            plain = re.sub(hidden, "x", paragraph, flags=re.S)
            plain = html_lib.unescape(re.sub(r"<(?!/?strong)[^>]+>", "", plain))
            if "**" in plain:
                shown.append(f"{page.name}: {plain[:90]!r}")
            if re.search(f"[{cjk}] <strong>[{cjk}]|[{cjk}]</strong> [{cjk}]", plain):
                gaps.append(f"{page.name}: {plain[:90]!r}")
    assert not shown, "asterisks showing on Chinese pages:\n" + "\n".join(shown)
    assert not gaps, "gaps around bold on Chinese pages:\n" + "\n".join(gaps)


def test_the_self_check_catalogue_is_checked_with_the_others(root):
    """``selfchecks.po`` (the chapters' self-check templates) is one of the catalogues checked,
    and a translation that drops or changes a template's field is caught."""
    assert root / LOCALE_DIR / "selfchecks.po" in catalogue_paths(root)
    english = "A {d:,} × {d:,} layer at {u:.0%} of {peak:.0f} TFLOP/s; `x[{i}]` is code."
    good = "{d:,} × {d:,} 的层，以 {peak:.0f} TFLOP/s 的 {u:.0%} 运行；`x[{i}]` 是代码。"
    assert check_message(english, good, {}) == []
    for broken in (good.replace("{u:.0%}", "{u:.1%}"), good.replace("{d:,} ×", "4,096 ×"),
                   good.replace("{peak:.0f}", "{peak}")):  # fmt: skip
        found = [p.what for p in check_message(english, broken, {})]
        assert any("the figures to fill in differ" in f for f in found), (broken, found)
