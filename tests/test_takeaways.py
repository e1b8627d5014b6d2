"""Every teaching chapter ends each of its teaching sections in a *Takeaway* rule.

A teaching chapter is a ``book/*.md`` page in ``_toc.yml`` other than the preface, the
glossary, the bibliography, the gallery, the workshop guide and the model-accuracy page. A
teaching section is one of its ``##`` sections other than those that frame or test the
teaching (:data:`NOT_TEACHING`). Each ends in one box, the last thing before the next
heading::

    :::{admonition} Takeaway
    :class: takeaway

    One or two sentences, each a rule the reader can reuse.
    :::

Numbers in a takeaway are glued from a computation (``{glue:text}``), never typed.
"""

from __future__ import annotations

import re

import pytest
import yaml

NOT_TEACHING_PAGES = {"intro", "glossary", "bibliography", "gallery", "workshop",
                      "model_accuracy"}  # fmt: skip
#: Headings of sections that are not teaching: the lab's summary, the verdicts on the source
#: article, the chapter's summary of takeaways, the self-checks, the exercises, the works
#: cited, and a cheat sheet that sums up the sections before it.
NOT_TEACHING = re.compile(
    r"(The labs?|In the lab|The source article's .*|Takeaways|Check yourself|Exercises|"
    r"References|Cheat sheet.*)"
)
OPEN = ":::{admonition} Takeaway\n:class: takeaway\n"
#: At most this many sentences and words in one box: a rule or two, not a paragraph.
MAX_SENTENCES, MAX_WORDS = 2, 70
FENCE = re.compile(r"^(```|~~~)")
ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
MATH = re.compile(r"\$[^$]+\$")
CODE = re.compile(r"`[^`]*`")
#: A typed number: digits standing alone, not part of a name such as H100, BF16, ZeRO-3 or a
#: format's width ("16-bit").
TYPED_NUMBER = re.compile(r"(?<![\w\-–])\d+(?:[.,]\d+)*(?![\w]|-bit)")


def teaching_chapters(root) -> list[str]:
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    return [f for f in files if f.startswith("book/") and f[5:] not in NOT_TEACHING_PAGES]


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every ``##`` section, headings inside code fences ignored."""
    found, heading, body, fenced = [], None, [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            if heading is not None:
                found.append((heading, "\n".join(body)))
            heading, body = line[3:].strip(), []
        elif heading is not None:
            body.append(line)
    if heading is not None:
        found.append((heading, "\n".join(body)))
    return found


def closing_takeaway(body: str) -> str | None:
    """The text of the takeaway box that ends ``body``, or None if it does not end in one."""
    body = body.rstrip()
    start = body.rfind(OPEN)
    if start < 0 or not body.endswith("\n:::"):
        return None
    inside = body[start + len(OPEN): -len(":::")]
    if ":::" in inside or "```" in inside:  # another block after the box
        return None
    return inside.strip()


def plain(takeaway: str) -> str:
    """The takeaway's prose with roles, math and code taken out."""
    return CODE.sub(" ", MATH.sub(" ", ROLE.sub(" ", takeaway)))


def test_teaching_chapters_are_found(root):
    found = teaching_chapters(root)
    assert "book/memory_bandwidth" in found and "book/gpu_basics" in found
    assert not {"book/intro", "book/glossary", "book/workshop"} & set(found)


def test_every_teaching_section_ends_in_a_takeaway(root):
    missing = []
    for chapter in teaching_chapters(root):
        text = (root / f"{chapter}.md").read_text(encoding="utf-8")
        teaching = [(h, b) for h, b in sections(text) if not NOT_TEACHING.fullmatch(h)]
        assert teaching, f"{chapter}: no teaching sections found"
        missing += [f"{chapter}: {h!r}" for h, b in teaching if closing_takeaway(b) is None]
    assert not missing, (
        "these sections do not end in a takeaway box (:::{admonition} Takeaway, "
        ":class: takeaway, last before the next heading):\n" + "\n".join(missing)
    )


def test_takeaways_are_short_rules_with_computed_numbers(root):
    problems = []
    for chapter in teaching_chapters(root):
        text = (root / f"{chapter}.md").read_text(encoding="utf-8")
        for heading, body in sections(text):
            takeaway = closing_takeaway(body)
            if takeaway is None:
                continue
            prose = plain(takeaway)
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", prose.strip()) if s.strip()]
            if len(sentences) > MAX_SENTENCES or len(takeaway.split()) > MAX_WORDS:
                problems.append(f"{chapter}: {heading!r}: {len(sentences)} sentences, "
                                f"{len(takeaway.split())} words")  # fmt: skip
            typed = TYPED_NUMBER.findall(prose)
            if typed:
                problems.append(f"{chapter}: {heading!r}: typed number(s) {typed}; glue them")
    assert not problems, "\n".join(problems)


def test_one_form_for_every_takeaway_box(root):
    """A box titled Takeaway anywhere in the book carries the class the stylesheet styles."""
    css = (root / "book" / "_ext" / "static" / "takeaways.css").read_text(encoding="utf-8")
    assert "div.admonition.takeaway" in css and "var(--pst-color" in css
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    assert "takeaways" in config["sphinx"]["local_extensions"]
    for page in sorted((root / "book").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r":::\{admonition\} Takeaway\n(.*)\n", text):
            assert match.group(1) == ":class: takeaway", f"{page.name}: {match.group(0)!r}"


@pytest.mark.parametrize(
    "body, ok",
    [
        ("Text.\n\n" + OPEN + "\nA rule.\n:::\n", True),
        ("Text.\n\n" + OPEN + "\nA rule.\n:::\n\nMore text after it.\n", False),
        ("Text.\n\n:::{admonition} Takeaway\n:class: important\n\nA rule.\n:::\n", False),
        ("Text only.\n", False),
        (OPEN + "\nA rule.\n:::\n\n```{code-cell} ipython3\nx = 1\n```\n", False),
    ],
)
def test_closing_takeaway_reads_only_a_box_at_the_end(body, ok):
    assert (closing_takeaway(body) is not None) is ok


def test_typed_numbers_are_caught_and_names_are_not():
    assert TYPED_NUMBER.findall(plain("About 300 tokens on an H100.")) == ["300"]
    assert TYPED_NUMBER.findall(plain("16-bit BF16 on an H100 with ZeRO-3, 1F1B, $6ND$.")) == []
    assert TYPED_NUMBER.findall(plain("A 16-bit add moves 6 bytes.")) == ["6"]
    assert TYPED_NUMBER.findall(plain("From {glue:text}`x:.0f` tokens, `a[0]` is 0.5")) == ["0.5"]
