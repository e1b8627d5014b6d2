"""What a reader reads: chapter lengths in words of prose, and glossary links that read as the
word of their sentence (``gpulab.course.reading``)."""

import pytest
import yaml

from gpulab.course.reading import (
    MAX_CHAPTER_WORDS,
    doubled_glossary_words,
    formula_count,
    prose_words,
    source_prose_words,
)

#: The two chapters the "Scaling out" part was split into; each is held to the limit.
SCALING_OUT = ("book/distributed", "book/parallelism")

PAGE = """<html><nav>Contents and other pages</nav><article>
<h1>Ring all-reduce<a class="headerlink" href="#r">#</a></h1>
<p>Every rank sends <code>2(p-1)/p</code> times the buffer: <span class="math">\\(n\\)</span>
bytes, {n} GB/s.</p>
<div class="cell tag_remove-input"><div class="cell_output"><img alt="a figure"/>
<p>Generated text a cell printed.</p></div></div>
<pre>print("code")</pre>
<table><tr><td>a table cell</td></tr></table>
<div class="math notranslate">\\[t = 2(p-1)\\alpha\\]</div>
<div class="bibliography"><p>Author, A title, 2020.</p></div>
</article><footer>By the authors</footer></html>"""


def test_prose_words_counts_only_the_articles_prose():
    # "Ring all-reduce", "Every rank sends 2 p-1 p times the buffer bytes n GB s" and "a table
    # cell"; no heading anchor, math, cell output, code listing or citation.
    assert prose_words(PAGE) == 2 + 13 + 3
    assert formula_count(PAGE) == 2
    more = PAGE.replace("bytes,", "bytes, and one more sentence here,")
    assert prose_words(more) == prose_words(PAGE) + 5


def test_counters_refuse_what_is_not_text():
    with pytest.raises(TypeError, match="page_html"):
        prose_words(b"<p>bytes</p>")
    with pytest.raises(TypeError, match="myst_text"):
        source_prose_words(None)
    with pytest.raises(TypeError, match="myst_text"):
        doubled_glossary_words(3)


def test_source_count_skips_code_math_options_and_role_targets():
    source = """---
jupytext: x
---
(label)=
# Two words

:::{admonition} Takeaway words
:class: important
Kept inside.
:::

```{code-cell} ipython3
:tags: [remove-input]
print("not prose at all")
```

```bash
torchrun --nnodes=2 train.py
```

$$
t = 2(p-1)\\alpha
$$

A {term}`warps <warp>` line with $x^2$ math and {glue:text}`n:.1f` GB, see [the lab](lab.ipynb).
| a | b |
|---|---|
"""
    # "Two words" 2, "Takeaway words" 2, "Kept inside" 2, "A warps line with math and 0 GB see
    # the lab" 11, "a b" 2
    assert source_prose_words(source) == 2 + 2 + 2 + 11 + 2


def test_doubled_glossary_words_are_found_and_glosses_are_not():
    text = (
        "The threads form **blocks** ({term}`block`) and *CUDA cores* ({term}`CUDA core`); "
        "**Latency** ({term}`latency`) matters. A streaming multiprocessor ({term}`SM`) and "
        "**{term}`warps <warp>`** read well."
    )
    assert doubled_glossary_words(text) == [
        "blocks (block)",
        "CUDA cores (CUDA core)",
        "Latency (latency)",
    ]


def _book_pages(root):
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f for f in files if f.startswith("book/")]


def test_no_page_doubles_a_glossary_word(root):
    doubled = [
        f"{page}.md: {place}"
        for page in _book_pages(root)
        for place in doubled_glossary_words((root / f"{page}.md").read_text(encoding="utf-8"))
    ]
    assert not doubled, "write {term}`blocks <block>`, not **blocks** ({term}`block`):\n" + (
        "\n".join(doubled)
    )


@pytest.mark.parametrize("chapter", SCALING_OUT)
def test_scaling_out_chapters_stay_readable_by_their_source(root, chapter):
    assert chapter in _book_pages(root)
    words = source_prose_words((root / f"{chapter}.md").read_text(encoding="utf-8"))
    assert 1500 < words <= MAX_CHAPTER_WORDS, f"{chapter}: {words} words of prose"


@pytest.mark.book
def test_scaling_out_chapters_stay_readable_as_built(book_build, root):
    for chapter in SCALING_OUT:
        page = (book_build.html / f"{chapter}.html").read_text(encoding="utf-8")
        words = prose_words(page)
        assert 1500 < words <= MAX_CHAPTER_WORDS, f"{chapter}: {words} words of prose"
        # The source estimate is the one authors see without a build: it must stay close.
        source = source_prose_words((root / f"{chapter}.md").read_text("utf-8"))
        assert abs(source - words) < 0.15 * words, (chapter, source, words)
