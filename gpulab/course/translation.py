"""Checks of the Chinese edition's catalogues: coverage, and what a translation must keep.

The Chinese edition (``locale/README.md``) translates each page's messages in
``locale/zh_CN/LC_MESSAGES/<book|notebooks>/<page>.po``. A translation must keep, exactly as
the English has them, every code span, math span, URL, link target, the target of every
cross-reference role and every ``{glue:…}`` role (its value is computed), and it must show the
glossary's Chinese term wherever the English marks a glossary term with ``{term}``
(:func:`glossary_terms` reads them from ``book/glossary.md``), also where the English writes the
term as a plain word, and the fixed terms (:mod:`gpulab.course.terminology`); bold text sits in
Chinese sentences without gaps and around the words the English bolds
(:mod:`gpulab.course.typography`). Sphinx parses each translation
as Markdown again and keeps the English wherever the result is not one paragraph, so a
translation must not begin like a block (``1. 慢循环`` is a list: write ``1\\. 慢循环``,
:func:`escape_block_start`). A catalogue keeps no obsolete (``#~``) entries and no
``python-format`` flag on prose (:func:`tidy_catalogue`): with them ``msgfmt -c`` refuses it.

Run ``python -m gpulab.course.translation [catalogue.po ...]`` (default: every catalogue) to
print each page's coverage and every problem; the exit status is 1 when there is one.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gpulab.course.terminology import fixed_term_problems, running_text_problems
from gpulab.course.typography import bold_spacing_problems, misplaced_bold_problems

__all__ = [
    "Coverage",
    "Problem",
    "catalogue_paths",
    "check_catalogue",
    "check_message",
    "coverage",
    "escape_block_start",
    "glossary_terms",
    "hygiene_problems",
    "main",
    "term_forms",
    "tidy_catalogue",
    "ui_table",
    "write_template",
]

#: Where the catalogues are, relative to the repository root.
LOCALE_DIR = Path("locale") / "zh_CN" / "LC_MESSAGES"

_ROLE = re.compile(r"\{(?P<name>[a-z][a-z0-9:_-]*)\}`(?P<content>[^`]*)`")
_CODE = re.compile(r"(?<![}`])(`+)(?P<code>[^`].*?)\1(?!`)")
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?P<math>[^$\n]+?)(?<![\\\s])\$(?!\$)")
_LINK_TARGET = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_URL = re.compile(r"https?://[^\s)>\]`]+")
#: A ``str.format`` field of a self-check's template: ``{name}``, ``{name:,.0f}``.
_FIELD = re.compile(r"\{[A-Za-z_]\w*(?:![rsa])?(?::[^{}`]*)?\}")
_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
#: Roles whose target must survive translation; ``{term}`` is checked against the glossary.
_REFERENCE_ROLES = ("doc", "ref", "numref", "cite", "cite:p", "cite:t", "eq", "download")
#: The MyST extensions the book enables (``_config.yml``, ``parse.myst_enable_extensions``):
#: a translation is parsed with them, as Sphinx parses it (a test keeps the two the same).
MYST_EXTENSIONS = ("amsmath", "colon_fence", "deflist", "dollarmath", "substitution")
#: Flags that mark a message as a format string. ``python-format`` is gettext's guess for a
#: message with a ``%``; on prose ("the 5% level") it makes ``msgfmt -c`` refuse the catalogue.
_PROSE_FLAGS = ("python-format",)


@dataclass(frozen=True)
class Problem:
    """One message that breaks a rule: the page, the message's start and what is wrong."""

    page: str
    msgid: str
    what: str

    def __str__(self) -> str:
        start = self.msgid if len(self.msgid) <= 70 else self.msgid[:67] + "..."
        return f"{self.page}: {self.what}\n    in: {start!r}"


@dataclass(frozen=True)
class Coverage:
    """How much of one page's catalogue is translated."""

    page: str
    messages: int
    translated: int
    fuzzy: int

    @property
    def untranslated(self) -> int:
        return self.messages - self.translated - self.fuzzy

    @property
    def fraction(self) -> float:
        return self.translated / self.messages if self.messages else 1.0


def glossary_terms(glossary: str | Path) -> dict[str, tuple[str, ...]]:
    """Each glossary term (lower case) -> the shown texts that use its Chinese form.

    The Chinese term is the one its definition starts with (:func:`term_forms` adds the
    forms Chinese text also writes).

    ``book/glossary.md`` defines each term in a ``{glossary}`` block: the term on its own
    line, then its definition, indented, starting with the Chinese term and a full stop or an
    English gloss in parentheses (``线程束. 32 consecutive threads...``,
    ``全归约 (AllReduce). A collective...``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> page = pathlib.Path(tempfile.mkdtemp()) / "glossary.md"
    >>> _ = page.write_text("```{glossary}\\nWarp\\n  线程束. 32 threads.\\n\\n"
    ...                     "All-reduce\\n  全归约 (AllReduce). Sums.\\n```\\n", encoding="utf-8")
    >>> glossary_terms(page)
    {'warp': ('线程束',), 'all-reduce': ('全归约',)}
    """
    text = Path(glossary).read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if block is None:
        raise ValueError(f"glossary={str(glossary)!r} has no {{glossary}} block")
    terms: dict[str, tuple[str, ...]] = {}
    lines = block.group(1).splitlines()
    for term, definition in zip(lines, lines[1:], strict=False):
        if term.strip() and not term.startswith(" ") and definition.startswith("  "):
            chinese = re.split(r"\s*\(|[.。,，]", definition.strip(), maxsplit=1)[0]
            terms[term.strip().lower()] = term_forms(term.strip(), chinese.strip())
    return terms


def term_forms(term: str, chinese: str) -> tuple[str, ...]:
    """The shown texts that count as using glossary ``term``'s Chinese form ``chinese``.

    The Chinese term itself; without a parenthesised gloss (``Triton（编程语言）`` → ``Triton``);
    and for an acronym or a product name the glossary's headword, which Chinese text writes as
    it is (``CUDA``, ``SM``, ``NVLink``: two capitals or more, no space).

    Examples
    --------
    >>> term_forms("warp", "线程束")
    ('线程束',)
    >>> term_forms("CUDA", "统一计算设备架构")
    ('统一计算设备架构', 'CUDA')
    >>> term_forms("Triton", "Triton（编程语言）")
    ('Triton（编程语言）', 'Triton')
    """
    forms = [chinese]
    bare = re.sub(r"\s*[（(][^）)]*[）)]\s*", "", chinese).strip()
    if bare and bare != chinese:
        forms.append(bare)
    if " " not in term and sum(c.isupper() for c in term) >= 2 and term not in forms:
        forms.append(term)
    return tuple(forms)


def _roles(text: str) -> list[tuple[str, str, str]]:
    """(role, shown text, target) of every role in ``text``."""
    found = []
    for match in _ROLE.finditer(text):
        content = match.group("content")
        named = _TARGET.match(content)
        shown, target = (
            (named.group("text"), named.group("target")) if named else (content, content)
        )
        found.append((match.group("name"), shown, target))
    return found


def _without_roles(text: str) -> str:
    return _ROLE.sub(" ", text)


def _kept(text: str) -> Counter:
    """What a translation must keep unchanged, counted (code, math, links, URLs, glue)."""
    plain = _without_roles(text)
    kept: Counter = Counter()
    math = _DISPLAY_MATH.findall(plain)
    plain = _DISPLAY_MATH.sub(" ", plain)
    kept.update(f"math {m}" for m in math)
    kept.update(f"code `{m.group('code')}`" for m in _CODE.finditer(plain))
    plain = _CODE.sub(" ", plain)
    kept.update(f"math ${m.group('math')}$" for m in _INLINE_MATH.finditer(plain))
    kept.update(f"link target {m.group('target')}" for m in _LINK_TARGET.finditer(text))
    kept.update(f"URL {u}" for u in _URL.findall(_LINK_TARGET.sub(" ", plain)))
    for match in _ROLE.finditer(text):
        name = match.group("name")
        if name.startswith("glue"):
            kept[f"role {match.group(0)}"] += 1
        elif name in _REFERENCE_ROLES:
            kept[f"{{{name}}} target {_roles(match.group(0))[0][2]}"] += 1
    return kept


def _fields(text: str) -> Counter:
    """The ``str.format`` fields of a template (``{d:,}``, ``{unit}``) outside math and code,
    counted: what a self-check fills in after translating (``gpulab.labkit.selfcheck``)."""
    plain = _INLINE_MATH.sub(" ", _CODE.sub(" ", _DISPLAY_MATH.sub(" ", _without_roles(text))))
    return Counter(_FIELD.findall(plain.replace("{{", "").replace("}}", "")))


def _emphasis(text: str) -> tuple[int, int, int]:
    """(bold spans, italic spans, asterisks left showing) of ``text``, rendered by the
    CommonMark rules MyST follows (roles and code spans left out).

    Next to Chinese text a ``**`` can silently stop being emphasis: ``**时间。**训练`` shows
    its asterisks, because a closing ``**`` after punctuation must be followed by a space or
    punctuation, which a Chinese character is not.
    """
    from markdown_it import MarkdownIt

    # A role becomes a code span: both start and end with a backtick, which is what the
    # emphasis rules see next to a ``**``. What is inside code never counts.
    plain = _ROLE.sub("`x`", text)
    rendered = MarkdownIt("commonmark").renderInline(plain)
    outside_code = re.sub(r"<code>.*?</code>", "", rendered)
    return rendered.count("<strong>"), rendered.count("<em>"), outside_code.count("*")


def _myst():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    global _MYST_PARSER
    if _MYST_PARSER is None:
        config = MdParserConfig(enable_extensions=set(MYST_EXTENSIONS))
        _MYST_PARSER = create_md_parser(config, RendererHTML)
    return _MYST_PARSER


_MYST_PARSER = None


def _first_block(text: str):
    """The first top-level block of ``text`` past what Sphinx keeps of a translation, its first
    paragraph (a token): a block that is not a paragraph, or a second paragraph; or None."""
    tokens = [t for t in _myst().parse(text) if t.level == 0 and t.nesting >= 0]
    return next((t for i, t in enumerate(tokens) if i or t.type != "paragraph_open"), None)


def _block_name(token) -> str:
    return token.type.removesuffix("_open").replace("_", " ")


def escape_block_start(text: str) -> str:
    """``text`` with the marker that makes Markdown read a line of it as a block escaped.

    Sphinx reads a translation as Markdown again and keeps the English wherever the result is
    not one paragraph: ``1. 慢循环`` (an ordered list), ``+ 梯度`` (a list), ``# 号`` (a
    heading). A backslash before the marker's punctuation keeps the text and its meaning.

    Examples
    --------
    >>> print(escape_block_start("1. 慢循环"))
    1\\. 慢循环
    >>> print(escape_block_start("+ 梯度"))
    \\+ 梯度
    >>> print(escape_block_start("# 编号"))
    \\# 编号
    >>> print(escape_block_start("第一行\\n- 第二行"))
    第一行
    \\- 第二行
    >>> print(escape_block_start("已是一个段落。"))
    已是一个段落。
    """
    for _ in range(text.count("\n") + 1):
        block = _first_block(text)
        if block is None or block.map is None:
            return text
        lines = text.split("\n")
        line = lines[block.map[0]]
        indent = len(line) - len(line.lstrip())
        marker = re.match(r"\d{1,9}(?=[.)])", line[indent:])
        at = indent + (marker.end() if marker else 0)
        if at >= len(line) or not (line[at].isascii() and not line[at].isalnum()):
            return text  # not a marker a backslash can escape: left for the check to report
        lines[block.map[0]] = line[:at] + "\\" + line[at:]
        text = "\n".join(lines)
    return text


def check_message(
    msgid: str,
    msgstr: str,
    terms: dict[str, tuple[str, ...]],
    page: str = "",
    markdown: bool = True,
) -> list[Problem]:
    """What ``msgstr`` (a translation of ``msgid``) fails to keep, as problems.

    Parameters
    ----------
    msgid, msgstr : str
        The English message and its translation.
    terms : dict
        :func:`glossary_terms`.
    page : str
        The page, for the problems' text.
    markdown : bool
        Whether Sphinx parses the translation as Markdown (a page's message): then it must
        read as one paragraph. ``ui.po``'s sentences are put into pages as they are.

    Examples
    --------
    >>> terms = {"warp": ("线程束",)}
    >>> check_message("A {term}`warp` runs `x`.", "一个{term}`线程束 <warp>`运行 `x`。", terms)
    []
    >>> [p.what for p in check_message("A {term}`warp` runs `x`.", "一个线程束运行 x。", terms)]
    ['missing code `x`', '{term}`warp`: the translation has no {term} role for it']
    >>> [p.what[:15] for p in check_message("**Time.** Go.", "**时间。**出发。", terms)]
    ['emphasis lost: ']
    >>> check_message("**Time.** Go.", "**时间**。出发。", terms)
    []
    >>> [p.what[:26] for p in check_message("A {d:,} × {d:,} layer", "{d:,} × {d} 的层", terms)]
    ['the figures to fill in dif']
    >>> [p.what[:15] for p in check_message("The **{term}`warp`** runs.",
    ...                                     "**{term}`线程束 <warp>`**运行。", terms)]
    ['emphasis lost: ', 'bold lost or mo']
    >>> [p.what[:40] for p in check_message("1. The loop", "1. 循环", terms)]
    ['Sphinx reads the translation as an order']
    >>> [p.what[:49] for p in check_message("One paragraph.", "一段。\\n\\n两段。", terms)]
    ['Sphinx reads the translation as more than one par']
    """
    problems = []
    block = _first_block(msgstr) if markdown else None
    if block is not None and block.type == "paragraph_open":
        problems.append(Problem(
            page, msgid, "Sphinx reads the translation as more than one paragraph and keeps "
            "the first only: remove the blank line"
        ))  # fmt: skip
    elif block is not None:
        name = _block_name(block)
        article = "an" if name[0] in "aeiou" else "a"
        problems.append(Problem(
            page, msgid, f"Sphinx reads the translation as {article} {name}, not a paragraph, "
            f"and shows the English instead: escape the marker ({escape_block_start(msgstr)!r})"
        ))  # fmt: skip
    if _fields(msgid) != _fields(msgstr):
        problems.append(Problem(
            page, msgid, f"the figures to fill in differ: {sorted(_fields(msgid).elements())} "
            f"in the English, {sorted(_fields(msgstr).elements())} in the translation"
        ))  # fmt: skip
    english, chinese = _kept(msgid), _kept(msgstr)
    for item, count in english.items():
        if chinese[item] < count:
            problems.append(Problem(page, msgid, f"missing {item}"))
    for item in chinese:
        if item not in english:
            problems.append(Problem(page, msgid, f"not in the English: {item}"))
    if "*" in msgid or "*" in msgstr:
        bold, italic, shown = _emphasis(msgid)
        zh_bold, zh_italic, zh_shown = _emphasis(msgstr)
        if zh_bold < bold or zh_italic < italic or zh_shown > shown:
            problems.append(Problem(
                page, msgid, f"emphasis lost: {bold} bold and {italic} italic spans in the "
                f"English, {zh_bold} and {zh_italic} in the translation, with {zh_shown} "
                "asterisks showing (a ** between punctuation and a Chinese character does not "
                "count: put the full stop after the ** or write &#8203; there)"
            ))  # fmt: skip
    translated_terms = [(shown, target.lower()) for name, shown, target in _roles(msgstr)
                        if name == "term"]  # fmt: skip
    for name, _shown, target in _roles(msgid):
        if name != "term":
            continue
        key = target.lower()
        forms = terms.get(key)
        if forms is None:
            problems.append(Problem(page, msgid, f"{{term}}`{target}` is not in the glossary"))
            continue
        shown_for_target = [shown for shown, t in translated_terms if t == key]
        if not shown_for_target:
            problems.append(Problem(
                page, msgid, f"{{term}}`{target}`: the translation has no {{term}} role for it"
            ))  # fmt: skip
        elif not any(form in shown for shown in shown_for_target for form in forms):
            problems.append(Problem(
                page, msgid, f"{{term}}`{target}` must show the glossary's Chinese term "
                f"({' or '.join(map(repr, forms))})"
            ))  # fmt: skip
    problems += [Problem(page, msgid, what) for what in (
        running_text_problems(msgid, msgstr, terms) + fixed_term_problems(msgid, msgstr)
        + bold_spacing_problems(msgstr) + misplaced_bold_problems(msgid, msgstr)
    )]
    return problems


def _read(path: Path):
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        return read_po(handle, locale="zh_CN")


def _page(path: Path) -> str:
    parts = Path(path).with_suffix("").parts
    return parts[-1] if parts[-2] == "LC_MESSAGES" else "/".join(parts[-2:])


def coverage(path: str | Path) -> Coverage:
    """How many of a catalogue's messages are translated, fuzzy and untranslated."""
    catalogue = _read(Path(path))
    messages = [m for m in catalogue if m.id]
    fuzzy = sum(1 for m in messages if m.fuzzy)
    translated = sum(1 for m in messages if m.string and not m.fuzzy)
    return Coverage(_page(Path(path)), len(messages), translated, fuzzy)


def _entries(text: str) -> list[str]:
    return re.split(r"\n(?:[ \t]*\n)+", text.strip("\n"))


def _is_obsolete(entry: str) -> bool:
    return any(line.startswith(("#~ msgid", "#~ msgctxt")) for line in entry.splitlines())


def _without_prose_flags(entry: str) -> str:
    lines = []
    for line in entry.splitlines():
        if line.startswith("#,"):
            flags = [f.strip() for f in line[2:].split(",")]
            kept = [f for f in flags if f and f not in _PROSE_FLAGS]
            if not kept:
                continue
            line = "#, " + ", ".join(kept)
        lines.append(line)
    return "\n".join(lines)


def tidy_catalogue(path: str | Path) -> bool:
    """Drop a catalogue's obsolete (``#~``) entries and its ``python-format`` flags, in place;
    every other line stays as it is. Returns whether the file changed.

    ``python3 course.py translations`` runs it on every catalogue after merging: an obsolete
    entry that repeats an active message is a duplicate definition for ``msgfmt -c``, and
    gettext flags every message with a ``%`` as a Python format (``5% level``), which the
    Chinese text then fails to match. The course formats no catalogue message with ``%``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> po = pathlib.Path(tempfile.mkdtemp()) / "page.po"
    >>> _ = po.write_text('msgid ""\\nmsgstr ""\\n\\n#, fuzzy, python-format\\nmsgid "5% x"\\n'
    ...                   'msgstr "5% 的 x"\\n\\n#~ msgid "old"\\n#~ msgstr "旧"\\n\\n', "utf-8")
    >>> tidy_catalogue(po), tidy_catalogue(po)
    (True, False)
    >>> print(po.read_text("utf-8"))
    msgid ""
    msgstr ""
    <BLANKLINE>
    #, fuzzy
    msgid "5% x"
    msgstr "5% 的 x"
    <BLANKLINE>
    <BLANKLINE>
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    entries = [_without_prose_flags(e) for e in _entries(text) if not _is_obsolete(e)]
    ending = text[len(text.rstrip("\n")) :] or "\n"  # as the file had it (babel: a blank line)
    tidy = "\n\n".join(entries) + ending
    if tidy == text:
        return False
    path.write_text(tidy, encoding="utf-8")
    return True


def hygiene_problems(path: str | Path) -> list[Problem]:
    """What :func:`tidy_catalogue` would remove from a catalogue, as problems."""
    page = _page(Path(path))
    entries = _entries(Path(path).read_text(encoding="utf-8"))
    problems = [Problem(page, "", f"{n} obsolete (#~) entries: run python3 course.py "
                        "translations, which drops them")
                for n in [sum(map(_is_obsolete, entries))] if n]  # fmt: skip
    for entry in entries:
        if not _is_obsolete(entry) and _without_prose_flags(entry) != entry:
            msgid = re.search(r'^msgid "(.*)"$', entry, re.M)
            problems.append(Problem(
                page, msgid.group(1) if msgid else "", "flagged python-format, which msgfmt "
                "-c checks as a format string: run python3 course.py translations, which "
                "drops the flag"
            ))  # fmt: skip
    return problems


def check_catalogue(path: str | Path, terms: dict[str, tuple[str, ...]]) -> list[Problem]:
    """Every problem of a catalogue: its translated messages' (:func:`check_message`), and
    obsolete entries or ``python-format`` flags left in it (:func:`hygiene_problems`).
    ``ui.po``'s sentences are not Markdown (``markdown=False``)."""
    page = _page(Path(path))
    markdown = Path(path).name != "ui.po"
    problems = hygiene_problems(path)
    for message in _read(Path(path)):
        if message.id and message.string and not message.fuzzy:
            problems += check_message(message.id, message.string, terms, page, markdown)
    return problems


def ui_table(path: str | Path) -> dict[str, str]:
    """English -> translation for every translated, non-fuzzy message of the catalogue at
    ``path`` (the book's interface sentences, ``ui.po``); empty if there is no catalogue."""
    path = Path(path)
    if not path.is_file():
        return {}
    return {m.id: m.string for m in _read(path) if m.id and m.string and not m.fuzzy}


def write_template(messages: list[str], path: str | Path) -> Path:
    """A gettext template (``.pot``) holding ``messages``, for ``sphinx-intl update``."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalogue = Catalog(project="gpulab", charset="utf-8")
    for message in messages:
        catalogue.add(message)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        write_po(handle, catalogue, omit_header=False)
    return path


def catalogue_paths(root: str | Path) -> list[Path]:
    """Every page's catalogue under ``root/locale/zh_CN/LC_MESSAGES``, sorted."""
    base = Path(root) / LOCALE_DIR
    return sorted([*base.glob("*/*.po"), *base.glob("ui.po"), *base.glob("selfchecks.po")])


def _root_of(path: Path) -> Path:
    # root/locale/zh_CN/LC_MESSAGES/<book|notebooks>/<page>.po, or .../LC_MESSAGES/ui.po
    resolved = path.resolve()
    return resolved.parents[3] if resolved.parent.name == "LC_MESSAGES" else resolved.parents[4]


def main(argv: list[str] | None = None) -> int:
    """Print coverage and problems of the given catalogues (default: all of them)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        paths = [Path(a) for a in args]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            print(f"not a catalogue: {', '.join(missing)}", file=sys.stderr)
            return 2
        root = _root_of(paths[0])
    else:
        root = Path.cwd()
        paths = catalogue_paths(root)
        if not paths:
            print(f"no catalogues under {root / LOCALE_DIR}; run from the repository root",
                  file=sys.stderr)  # fmt: skip
            return 2
    terms = glossary_terms(root / "book" / "glossary.md")
    failed = False
    for path in paths:
        cov = coverage(path)
        problems = check_catalogue(path, terms)
        print(f"{cov.page}: {cov.translated}/{cov.messages} translated, {cov.fuzzy} fuzzy, "
              f"{len(problems)} problems")  # fmt: skip
        for problem in problems:
            print(f"  {problem}")
        failed = failed or bool(problems) or cov.translated < cov.messages
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
