"""How much a reader reads on a page: the words of its prose, outside code and cell outputs.

A chapter's length is measured the way a reader meets it, in the built HTML: the text of the
page's article, without code listings (``<pre>``), executed cells (their input and their
output: figures, generated tables, self-check widgets), formulas (counted apart, by
:func:`formula_count`), the "References" section with its list of works cited, the link to
the other edition and the anchors Sphinx adds to headings. What is
left is the prose: paragraphs, headings, lists, Markdown tables, captions' text is an output
of its cell and is not counted. Words are runs of letters or digits, joined by a hyphen, an
apostrophe or a decimal point (``"all-reduce"`` and ``"3.35"`` are one word each, ``"—"`` none).

:func:`source_prose_words` estimates the same from a chapter's MyST source, with no build: it
drops the front matter, code cells and fenced blocks, directive options, math and the targets
of roles (``{term}`blocks <block>``` reads as ``blocks``). The tests hold every chapter to
:data:`MAX_CHAPTER_WORDS` with it and check it against the built page.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: The most words of prose a chapter may hold (issue: about 20 minutes of reading at most).
MAX_CHAPTER_WORDS = 4500

_WORD = re.compile(r"[^\W_]+(?:['’.,-][^\W_]+)*")
#: Elements whose text is not prose, by tag, and by a class that marks them.
_SKIP_TAGS = {"pre", "script", "style", "math", "svg", "button", "nav", "footer"}
_SKIP_CLASSES = {"cell", "math", "headerlink", "bibliography", "citation-list", "toctree-wrapper",
                 "gl-calc", "gl-selfcheck", "gl-language-switch"}  # fmt: skip
#: Sections that are not prose: the page's own list of works cited.
_SKIP_IDS = {"references"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}  # fmt: skip


class _Prose(HTMLParser):
    """Collects the text of ``<article>`` outside the skipped elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, skipped here or above)
        self.in_article = 0
        self.parts: list[str] = []
        self.formulas = 0

    def _skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        if tag == "article":
            self.in_article += 1
        if "math" in classes and not self._skipping():
            self.formulas += 1
        skip = (
            self._skipping()
            or tag in _SKIP_TAGS
            or bool(classes & _SKIP_CLASSES)
            or dict(attrs).get("id") in _SKIP_IDS
        )
        self.stack.append((tag, skip))

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.stack:
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break
        if tag == "article":
            self.in_article -= 1

    def handle_data(self, data):
        if self.in_article and not self._skipping():
            self.parts.append(data)


def _parse(page_html: str) -> _Prose:
    if not isinstance(page_html, str):
        raise TypeError(f"page_html={type(page_html).__name__} must be a str (a page's HTML)")
    parser = _Prose()
    parser.feed(page_html)
    parser.close()
    return parser


def prose_words(page_html: str) -> int:
    """Words of prose in a built page's ``<article>``, outside code, cells and formulas.

    Parameters
    ----------
    page_html : str
        The HTML of one page of the built book.

    Examples
    --------
    >>> prose_words('<article><h1>Ring all-reduce<a class="headerlink">#</a></h1>'
    ...             '<p>It sends <code>2(p-1)/p</code> times <span class="math">\\\\(n\\\\)</span>'
    ...             ' bytes.</p><div class="cell"><pre>print(1)</pre></div></article>')
    9
    """
    return len(_WORD.findall(" ".join(_parse(page_html).parts)))


def formula_count(page_html: str) -> int:
    """How many formulas (inline and displayed) a built page's article shows.

    Examples
    --------
    >>> formula_count('<article><p><span class="math">x</span> and '
    ...               '<div class="math">y</div></p></article>')
    2
    """
    return _parse(page_html).formulas


_FENCE = re.compile(r"^(`{3,}|:{3,})\s*(\{[^}]*\})?(.*)$")
_ROLE = re.compile(r"\{([a-z][a-z:-]*)\}`([^`]*)`")
_SHOWN_ROLES = {"term", "doc", "ref"}  # roles whose text (before <target>) is shown
_CODE_DIRECTIVES = {"code-cell", "code-block", "code", "bibliography", "calculator"}


def _role_text(match: re.Match) -> str:
    role, body = match.group(1), match.group(2)
    if role in _SHOWN_ROLES:
        shown = re.sub(r"\s*<[^>]*>\s*$", "", body)
        return shown if shown != body or role == "term" else " page "
    if role.startswith("glue"):
        return " 0 "
    return " x "  # a citation or a figure number: about one word where the reader sees it


def source_prose_words(myst_text: str) -> int:
    """Estimate :func:`prose_words` from a chapter's MyST source, without building it.

    Code cells, fenced code, math blocks, directive options, comments and labels are
    dropped; a directive's body that is prose (an admonition, an exercise, a table) is kept;
    a role counts as the words it shows.

    Parameters
    ----------
    myst_text : str
        The text of a ``book/*.md`` page.

    Examples
    --------
    >>> source_prose_words("(ch)=\\n# A title\\n\\nThe {term}`blocks <block>` run.\\n\\n"
    ...                    "```{code-cell} ipython3\\nprint('no')\\n```\\n\\n$$\\nx^2\\n$$\\n")
    5
    """
    if not isinstance(myst_text, str):
        raise TypeError(f"myst_text={type(myst_text).__name__} must be a str (a page's source)")
    text = re.sub(r"\A---\n.*?\n---\n", "", myst_text, flags=re.S)
    kept: list[str] = []
    closing: list[str] = []  # fences of the open blocks; a code block skips its body
    skipping_body = False
    in_math = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_math:
            in_math = stripped != "$$" and not stripped.endswith("$$")
            continue
        if skipping_body:
            if stripped == closing[-1]:
                closing.pop()
                skipping_body = False
            continue
        fence = _FENCE.match(stripped)
        if fence:
            if closing and stripped == closing[-1]:
                closing.pop()
                continue
            directive = (fence.group(2) or "").strip("{}")
            closing.append(fence.group(1))
            if directive in _CODE_DIRECTIVES or (not directive and stripped.startswith("`")):
                skipping_body = True
            elif directive == "admonition":
                kept.append(fence.group(3))
            continue
        if stripped.startswith("$$"):
            in_math = not (len(stripped) > 2 and stripped.endswith("$$"))
            continue
        if re.match(r"^:[\w-]+:", stripped) or re.match(r"^\([\w-]+\)=$", stripped):
            continue
        if re.match(r"^\|?\s*:?-{3,}", stripped) or stripped.startswith("<!--"):
            continue
        kept.append(line)
    prose = " ".join(kept)
    prose = re.sub(r"(?<!\\)\$[^$]+\$", " ", prose)  # inline math
    prose = _ROLE.sub(_role_text, prose)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # a link's target
    return len(_WORD.findall(prose))


_GLOSSED = re.compile(r"\(\s*\{term\}`([^`]+)`\s*\)")


def _stem(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def doubled_glossary_words(myst_text: str) -> list[str]:
    """Glossary links that repeat the word before them, as ``**blocks** ({term}`block`)`` does.

    Such a link renders as "blocks (block)": the reader meets the same word twice. The word
    should be the link itself, ``{term}`blocks <block>```. A gloss that says something else,
    ``streaming multiprocessor ({term}`SM`)``, is fine.

    Parameters
    ----------
    myst_text : str
        The text of a ``book/*.md`` page (or a lab's Markdown).

    Returns
    -------
    list of str
        Each doubled place as the reader would see it, e.g. ``"blocks (block)"``.

    Examples
    --------
    >>> doubled_glossary_words("grouped into **blocks** ({term}`block`) of threads")
    ['blocks (block)']
    >>> doubled_glossary_words("the **{term}`blocks <block>`**; a multiprocessor ({term}`SM`)")
    []
    """
    if not isinstance(myst_text, str):
        raise TypeError(f"myst_text={type(myst_text).__name__} must be a str (a page's source)")
    found = []
    for match in _GLOSSED.finditer(myst_text):
        shown = re.sub(r"\s*<[^>]*>\s*$", "", match.group(1))
        want = [_stem(w) for w in _WORD.findall(shown)]
        before = _WORD.findall(myst_text[max(0, match.start() - 200) : match.start()])
        if want and [_stem(w) for w in before[-len(want) :]] == want:
            found.append(f"{' '.join(before[-len(want) :])} ({shown})")
    return found


#: Silent reading of English non-fiction by adults, words per minute: the mean of a
#: meta-analysis of 190 studies (Brysbaert 2019, https://doi.org/10.1016/j.jml.2019.104047;
#: most adults read such text at 175 to 300 words per minute).
PROSE_WORDS_PER_MINUTE = 238
#: Seconds a formula (inline or displayed) adds to a page's reading time. No published study
#: gives a rate for formulas: this is the course's own assumption, stated where the times are
#: shown (the preface's conventions) and held the same for every page.
SECONDS_PER_FORMULA = 15

_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?(?<!\\)\$")


def source_formula_count(myst_text: str) -> int:
    """How many formulas a chapter's MyST source shows: ``$...$``, ``$$...$$`` and ``{math}``.

    Each inline formula, each displayed block and each ``{math}`` role or directive counts
    once, wherever it stands in the prose; formulas inside code cells and fenced code are not
    shown as formulas and are not counted.

    Examples
    --------
    >>> source_formula_count("Let $p$ GPUs send $2(p-1)/p$ bytes:\\n\\n$$\\nt = \\\\alpha\\n$$\\n"
    ...                      "```python\\nx = '$a$'\\n```\\n")
    3
    """
    if not isinstance(myst_text, str):
        raise TypeError(f"myst_text={type(myst_text).__name__} must be a str (a page's source)")
    count = 0
    in_code = None  # the fence of an open code block
    in_math = False
    for line in myst_text.splitlines():
        stripped = line.strip()
        if in_code:
            in_code = None if stripped == in_code else in_code
            continue
        if in_math:
            in_math = not stripped.endswith("$$")
            continue
        fence = _FENCE.match(stripped)
        if fence and fence.group(1).startswith("`"):
            directive = (fence.group(2) or "").strip("{}")
            if directive == "math":
                count += 1
            in_code = fence.group(1)
            continue
        if stripped.startswith("$$"):
            count += 1
            in_math = not (len(stripped) > 2 and stripped.endswith("$$"))
            continue
        count += len(re.findall(r"\{math\}`", line))
        count += len(_INLINE_MATH.findall(re.sub(r"`[^`]*`", " ", line)))
    return count


def reading_minutes(words: int, formulas: int = 0) -> int:
    """Minutes to read a page of ``words`` words of prose and ``formulas`` formulas.

    Words at :data:`PROSE_WORDS_PER_MINUTE`, each formula :data:`SECONDS_PER_FORMULA`, rounded
    to the nearest 5 minutes (a page is never under 5): a reading time is an estimate, and a
    figure like "37 minutes" would claim more than the rates can give.

    Parameters
    ----------
    words : int
        Words of prose (:func:`source_prose_words` or :func:`prose_words`), ``>= 0``.
    formulas : int
        Formulas on the page, ``>= 0``.

    Examples
    --------
    >>> reading_minutes(8000, 156)   # 33.6 min of words + 39 min of formulas
    75
    >>> reading_minutes(300)
    5
    """
    for name, value in (("words", words), ("formulas", formulas)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}={value!r} must be an int (a count)")
        if value < 0:
            raise ValueError(f"{name}={value} must be >= 0 (a count)")
    minutes = words / PROSE_WORDS_PER_MINUTE + formulas * SECONDS_PER_FORMULA / 60
    return max(5, 5 * round(minutes / 5))


def page_reading_minutes(myst_text: str) -> int:
    """The reading time of a chapter's MyST source, in minutes: its prose words and formulas.

    Examples
    --------
    >>> page_reading_minutes("# A title\\n\\n" + "word " * 2380 + "\\n")
    10
    """
    return reading_minutes(source_prose_words(myst_text), source_formula_count(myst_text))
