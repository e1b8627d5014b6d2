"""Every chapter in the table of contents: exercises with worked solutions, glossary links.

A *chapter* is a ``book/*.md`` page listed in ``_toc.yml`` outside the parts that are not
chapters (:data:`NON_CHAPTER_PARTS`), other than the root page (the preface). Every lab's
``chapter`` must be one. New chapters are covered as soon as they are in the toc.
"""

import re

import pytest
import yaml

from gpulab import course
from gpulab.course.exercises import chapter_exercises

NON_CHAPTER_PARTS = {"For instructors", "Reference", "Results"}
MIN_EXERCISES = 3
MIN_TERMS = 3
CJK = re.compile(r"[\u3400-\u9fff]")
TERM_ROLE = re.compile(r"\{term\}`([^`]+)`")


def chapters(root) -> list[str]:
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [
        entry["file"]
        for part in toc["parts"]
        if part["caption"] not in NON_CHAPTER_PARTS
        for entry in part["chapters"]
        if entry["file"].startswith("book/") and entry["file"] != toc["root"]
    ]


def glossary_entries(root) -> dict[str, str]:
    """Term → definition, from the ``{glossary}`` block of book/glossary.md."""
    text = (root / "book" / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    assert block, "book/glossary.md has no {glossary} block"
    entries, term = {}, None
    for line in block.group(1).splitlines():
        if line and not line[0].isspace():
            term = line.strip()
            entries[term] = ""
        elif term is not None:
            entries[term] += line.strip() + " "
    return entries


def test_chapters_are_found_and_every_lab_belongs_to_one(root):
    found = chapters(root)
    assert "book/gpu_basics" in found
    for lab in course.list_labs(root / "notebooks"):
        assert lab.chapter in found, f"{lab.path.name}: chapter {lab.chapter} is not in the toc"


def test_every_chapter_has_exercises_with_collapsed_worked_solutions(root):
    problems = []
    for chapter in chapters(root):
        exercises = chapter_exercises(root / f"{chapter}.md")
        if len(exercises) < MIN_EXERCISES:
            problems.append(f"{chapter}: {len(exercises)} exercises, at least {MIN_EXERCISES}")
        for ex in exercises:
            where = f"{chapter}.md:{ex.line} ({ex.label or 'no label'})"
            if not ex.label:
                problems.append(f"{where}: exercise without :label:")
            elif not ex.has_solution:
                problems.append(f"{where}: no {{solution}} names this label")
            elif not ex.solution_collapsed:
                problems.append(f"{where}: its solution lacks :class: dropdown")
    assert not problems, "\n".join(problems)


def test_exercise_finder_sees_both_solution_forms(tmp_path):
    page = tmp_path / "ch.md"
    page.write_text(
        ":::{exercise}\n:label: ch-ex1\nQ1\n:::\n\n"
        "````{solution-start} ch-ex1\n:class: dropdown\n````\nA1\n````{solution-end}\n````\n\n"
        ":::{exercise}\n:label: ch-ex2\nQ2\n:::\n\n"
        ":::{solution} ch-ex2\nA2, not collapsed\n:::\n\n"
        ":::{exercise}\n:label: ch-ex3\nQ3, no solution\n:::\n"
    )
    found = {e.label: (e.has_solution, e.solution_collapsed) for e in chapter_exercises(page)}
    assert found == {"ch-ex1": (True, True), "ch-ex2": (True, False), "ch-ex3": (False, False)}


def test_every_glossary_entry_has_a_chinese_equivalent(root):
    entries = glossary_entries(root)
    assert len(entries) >= 10
    missing = [term for term, text in entries.items() if not CJK.search(text)]
    assert not missing, f"glossary entries without a Chinese equivalent: {missing}"


def _term_target(role_text: str) -> str:
    explicit = re.search(r"<([^>]+)>\s*$", role_text)
    return (explicit.group(1) if explicit else role_text).strip().lower()


@pytest.mark.parametrize("page", ["chapters", "glossary"])
def test_every_term_link_resolves(root, page):
    terms = {t.lower() for t in glossary_entries(root)}
    files = [f"{c}.md" for c in chapters(root)] if page == "chapters" else ["book/glossary.md"]
    unknown = [
        f"{name}: {{term}}`{text}`"
        for name in files
        for text in TERM_ROLE.findall((root / name).read_text(encoding="utf-8"))
        if _term_target(text) not in terms
    ]
    assert not unknown, "terms not in the glossary:\n" + "\n".join(unknown)


def test_every_chapter_links_glossary_terms(root):
    for chapter in chapters(root):
        text = (root / f"{chapter}.md").read_text(encoding="utf-8")
        linked = {_term_target(t) for t in TERM_ROLE.findall(text)}
        assert len(linked) >= MIN_TERMS, f"{chapter}: links {len(linked)} glossary terms"


def test_every_chapter_ends_with_its_own_bibliography(root):
    for chapter in chapters(root):
        text = (root / f"{chapter}.md").read_text(encoding="utf-8")
        assert re.search(r"```\{bibliography\}\n:filter: docname in docnames", text), chapter
