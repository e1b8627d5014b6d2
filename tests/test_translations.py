"""The Chinese edition's catalogues: complete, in step with the English text, and faithful.

Every page of the book has a catalogue in ``locale/zh_CN/LC_MESSAGES`` (``locale/README.md``).
These tests fail, and list the messages with their page, when

* a message is untranslated or fuzzy (the Chinese page would show it in English; the coverage
  of every page goes to ``test-artifacts/translation-coverage.txt``);
* the catalogues do not hold the English text as it is now (``python3 course.py
  translations`` was not run after an English change, so the edition cannot show it);
* a translation drops or changes a code span, math, a link target, a cross-reference's target
  or a glued value, shows a glossary term without its Chinese form, or loses emphasis;
* the live calculators' sentences and labels (``ui.po``) are not all translated.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from gpulab.course.translation import (
    LOCALE_DIR,
    catalogue_paths,
    check_catalogue,
    check_message,
    coverage,
    glossary_terms,
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
    }
    for what, translation in broken.items():
        found = [p.what for p in check_message(english, translation, terms)]
        assert any(what in f for f in found), (what, found)


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
