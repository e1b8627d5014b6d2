"""Reading times, computed from a page's words and formulas when the book is built
(``gpulab.course.reading``, ``book/_ext/reading_time.py``), and the preface's map of the course."""

import re

import pytest
import yaml

from gpulab.course.reading import (
    PROSE_WORDS_PER_MINUTE,
    SECONDS_PER_FORMULA,
    page_reading_minutes,
    reading_minutes,
    source_formula_count,
)

#: A chapter's header states its time with this role, naming the chapter itself.
ROLE = re.compile(r"\{reading-minutes\}`([^`]+)`")
#: A time typed by hand: "About 30 minutes", "20 min", "half an hour".
TYPED_TIME = re.compile(r"\b\d+\s*(?:minutes?|min|hours?|h)\b|\ban? (?:hour|half hour)\b", re.I)


def _chapters(root):
    """The book's chapters with an "In this chapter" header, as (stem, source text)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    pages = [(root / f"{f}.md") for f in files if f.startswith("book/")]
    return [
        (p.stem, p.read_text(encoding="utf-8"))
        for p in pages
        if "{admonition} In this chapter" in p.read_text(encoding="utf-8")
    ]


def _header(text: str) -> str:
    start = text.index("{admonition} In this chapter")
    return text[start : text.index("\n::::", start)]


def test_rates_are_the_stated_ones():
    # The preface's conventions state these; a change must change both.
    assert PROSE_WORDS_PER_MINUTE == 238
    assert SECONDS_PER_FORMULA == 15
    assert reading_minutes(PROSE_WORDS_PER_MINUTE * 20) == 20
    assert reading_minutes(0, 4 * 20) == 20  # 80 formulas at 15 s
    assert reading_minutes(8000, 156) == 75  # 33.6 + 39 minutes, to the nearest 5


def test_reading_time_follows_the_words_and_formulas():
    page = "# A page\n\n" + "word " * 2000 + "\n"
    base = page_reading_minutes(page)
    assert base == 10  # 8.4 minutes
    assert page_reading_minutes(page + "more " * 2380 + "\n") == base + 10
    formulas = "".join(f"Let $x_{i}$ grow.\n" for i in range(120))
    assert source_formula_count(page + formulas) == 120
    assert page_reading_minutes(page + formulas) == 40  # + 120 words, + 30 minutes
    code = "```{code-cell} ipython3\n" + "x = 1  # word $y$\n" * 3000 + "```\n"
    assert page_reading_minutes(page + code) == base  # code is not read as prose


def test_formula_count_sees_inline_display_and_roles_but_not_code():
    text = (
        "Ring: $t = 2(p-1)\\alpha$ and {math}`\\beta n`, not `$HOME` or \\$5.\n\n"
        "$$\nt = \\alpha + \\beta n\n$$\n\n$$ x = 1 $$\n\n"
        "```{math}\ny = 2\n```\n\n```python\nprint('$a$')\n```\n"
    )
    assert source_formula_count(text) == 5


def test_bad_counts_are_refused():
    with pytest.raises(TypeError, match="words"):
        reading_minutes(12.5)
    with pytest.raises(ValueError, match="formulas=-1"):
        reading_minutes(100, -1)
    with pytest.raises(TypeError, match="myst_text"):
        source_formula_count(None)


def test_every_chapter_header_computes_its_own_reading_time(root):
    chapters = _chapters(root)
    assert len(chapters) >= 15
    problems = []
    for stem, text in chapters:
        header = _header(text)
        line = re.search(r"\*\*How long\*\*(.*?)(?:\n\n|\Z)", header, re.S)
        if not line:
            problems.append(f"{stem}: no 'How long' line in the header")
            continue
        if ROLE.findall(line.group(1)) != [stem]:
            problems.append(f"{stem}: 'How long' must use {{reading-minutes}}`{stem}` once")
        typed = TYPED_TIME.findall(ROLE.sub("", line.group(1)))
        if typed:
            problems.append(f"{stem}: typed time {typed} in 'How long'")
        for lab in re.findall(r"\{doc\}`\.\./notebooks/(\w+)`", header):
            if f"{{lab-run-time}}`{lab}`" not in line.group(1):
                problems.append(f"{stem}: 'How long' does not give {lab}'s recorded run time")
    assert not problems, "\n".join(problems)


def test_preface_map_has_every_chapter_with_computed_times(root):
    intro = (root / "book" / "intro.md").read_text(encoding="utf-8")
    section = intro[intro.index("## A map of the course") :]
    section = section[: section.index("\n## ")]
    rows = [r for r in section.splitlines() if r.startswith("| {doc}")]
    stems = [re.match(r"\| \{doc\}`(\w+)`", r).group(1) for r in rows]
    assert stems == [stem for stem, _ in _chapters(root)], "the map follows the book's order"
    for row in rows:
        stem = re.match(r"\| \{doc\}`(\w+)`", row).group(1)
        time = row.rstrip(" |").rsplit("|", 1)[1]
        assert ROLE.findall(time) == [stem], row
        labs = re.findall(r"<\.\./notebooks/(\w+)>", row)
        assert re.findall(r"\{lab-run-time\}`(\w+)`", time) == labs, row
        assert not re.sub(r"\{[\w-]+\}`[^`]*`", "", time).strip(" +min"), row  # nothing typed
    # The map opens the preface: before who the course is for and before the verdict table.
    assert intro.index("## A map of the course") < intro.index("## Who this course is for")
    assert intro.index("## A map of the course") < intro.index("| The source article says |")


def test_roles_render_computed_numbers_in_a_sphinx_build(tmp_path, root):
    """A small Sphinx build with the extension: the rendered number follows the page's words."""
    sphinx = pytest.importorskip("sphinx.application")
    from sphinx.util.docutils import docutils_namespace

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(root / 'book' / '_ext')!r})\n"
        "extensions = ['reading_time']\n"
    )
    (src / "index.rst").write_text(
        "Page\n====\n\nAbout :reading-minutes:`page` minutes; "
        ":lab-run-time:`gpu_basics_lab` on a CPU.\n"
    )
    (src / "notebooks").mkdir()
    lab = (root / "notebooks" / "gpu_basics_lab.ipynb").read_text(encoding="utf-8")
    (src / "notebooks" / "gpu_basics_lab.ipynb").write_text(lab, encoding="utf-8")

    def build(words: int) -> str:
        (src / "page.md").write_text("# Page\n\n" + "word " * words + "\n")
        out = tmp_path / f"out{words}"
        # What a build registers with docutils goes after it: an in-process build left behind
        # would make the next one in this worker warn that its nodes are registered already.
        with docutils_namespace():
            app = sphinx.Sphinx(str(src), str(src), str(out), str(tmp_path / f"d{words}"),
                                "text", status=None, warning=None, freshenv=True)  # fmt: skip
            app.build()
        return (out / "index.txt").read_text(encoding="utf-8")

    from gpulab.course.labs import lab_info
    from gpulab.units import format_duration

    run = format_duration(lab_info(root / "notebooks" / "gpu_basics_lab.ipynb").run_time_s["cpu"])
    assert f"About 10 minutes; {run} on a CPU." in build(2380)
    assert "About 20 minutes;" in build(2 * 2380)


@pytest.mark.book
def test_built_header_and_map_show_the_computed_times(book_build, root):
    for stem, text in _chapters(root):
        page = (book_build.html / "book" / f"{stem}.html").read_text(encoding="utf-8")
        shown = re.findall(r'class="gl-reading-minutes"[^>]*>(\d+)<', page)
        assert shown == [str(page_reading_minutes(text))], stem
    intro = (book_build.html / "book" / "intro.html").read_text(encoding="utf-8")
    shown = re.findall(r'class="gl-reading-minutes"[^>]*>(\d+)<', intro)
    assert shown == [str(page_reading_minutes(text)) for _, text in _chapters(root)]
    assert "lab-run-time\">—<" not in intro, "a lab in the map has no recorded CPU run"
