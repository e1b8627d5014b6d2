"""Checks of the Chinese edition's catalogues: coverage, and what a translation must keep.

The Chinese edition (``locale/README.md``) translates each page's messages in
``locale/zh_CN/LC_MESSAGES/<book|notebooks>/<page>.po``. A translation must keep, exactly as
the English has them, every code span, math span, URL, link target, the target of every
cross-reference role and every ``{glue:…}`` role (its value is computed), and it must show the
glossary's Chinese term wherever the English marks a glossary term with ``{term}``
(:func:`glossary_terms` reads them from ``book/glossary.md``).

Run ``python -m gpulab.course.translation [catalogue.po ...]`` (default: every catalogue) to
print each page's coverage and every problem; the exit status is 1 when there is one.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Coverage",
    "Problem",
    "catalogue_paths",
    "check_catalogue",
    "check_message",
    "coverage",
    "glossary_terms",
    "main",
    "term_forms",
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


def check_message(
    msgid: str, msgstr: str, terms: dict[str, tuple[str, ...]], page: str = ""
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

    Examples
    --------
    >>> terms = {"warp": ("线程束",)}
    >>> check_message("A {term}`warp` runs `x`.", "一个{term}`线程束 <warp>`运行 `x`。", terms)
    []
    >>> [p.what for p in check_message("A {term}`warp` runs `x`.", "一个线程束运行 x。", terms)]
    ['missing code `x`', '{term}`warp`: the translation has no {term} role for it']
    >>> [p.what[:15] for p in check_message("**Time.** Go.", "**时间。**出发。", terms)]
    ['emphasis lost: ']
    >>> check_message("**Time.** Go.", "**时间。** 出发。", terms)
    []
    >>> [p.what[:26] for p in check_message("A {d:,} × {d:,} layer", "{d:,} × {d} 的层", terms)]
    ['the figures to fill in dif']
    >>> [p.what[:15] for p in check_message("The **{term}`warp`** runs.",
    ...                                     "**{term}`线程束 <warp>`**运行。", terms)]
    ['emphasis lost: ']
    """
    problems = []
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
                "asterisks showing (a ** after punctuation needs a space before a Chinese "
                "character)"
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


def check_catalogue(path: str | Path, terms: dict[str, tuple[str, ...]]) -> list[Problem]:
    """Every problem of a catalogue's translated messages (:func:`check_message`)."""
    page = _page(Path(path))
    problems = []
    for message in _read(Path(path)):
        if message.id and message.string and not message.fuzzy:
            problems += check_message(message.id, message.string, terms, page)
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
