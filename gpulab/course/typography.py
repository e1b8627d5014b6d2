"""Bold text in Chinese sentences: no gaps around it, and around the right words.

Chinese has no spaces between words, so ``它是 **访存受限** 的`` shows two gaps a reader
sees as mistakes: write ``它是**访存受限**的``. CommonMark decides whether a ``**`` opens or
closes bold by the characters beside it, and a ``**`` between punctuation (a role's or code
span's backtick, a full stop) and a Chinese character does neither: ``**{term}`延迟
<latency>`**是`` shows its asterisks, or pairs with another ``**`` further on and bolds the
wrong words. There a zero-width space, written ``&#8203;``, stands where the English had a
space: ``**{term}`延迟 <latency>`**&#8203;是``. A run-in heading puts its full stop after the
``**``: ``**动手试试**。下面…``.

* :func:`bold_spacing_problems`: a space between a Chinese character and a bold span whose
  inner edge is Chinese too;
* :func:`misplaced_bold_problems`: a role or code span bold in the English but not in the
  translation (the symptom of a ``**`` that paired with the wrong partner).
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["ZERO_WIDTH_SPACE", "bold_spacing_problems", "misplaced_bold_problems"]

#: What a catalogue writes where CommonMark needs a separator but Chinese wants no gap.
ZERO_WIDTH_SPACE = "&#8203;"

_CJK = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef“”‘’]")
_BOLD = re.compile(r"\*\*(?=\S)(?P<inner>.+?)(?<=\S)\*\*")
_ROLE = re.compile(r"\{(?P<name>[a-z][a-z0-9:_-]*)\}`(?P<content>[^`]*)`")
_ROLE_AT_START = re.compile(r"^\{(?P<name>[a-z][a-z0-9:_-]*)\}`(?P<content>[^`]*)`")
_ROLE_AT_END = re.compile(r"\{(?P<name>[a-z][a-z0-9:_-]*)\}`(?P<content>[^`]*)`$")
_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


def _shown(name: str, content: str) -> str:
    if name.startswith("glue"):
        return "0"  # a glued value is a number
    named = _TARGET.match(content)
    return named.group("text") if named else content


def _edge(inner: str, last: bool) -> str:
    """The character a reader sees at the start (or end) of a bold span's text."""
    role = (_ROLE_AT_END if last else _ROLE_AT_START).search(inner)
    if role:
        shown = _shown(role.group("name"), role.group("content"))
        return shown[-1:] if last else shown[:1]
    edge = inner[-1:] if last else inner[:1]
    return "a" if edge in "`$" else edge  # code and math read as Latin text


def bold_spacing_problems(msgstr: str) -> list[str]:
    """Each space between a Chinese character and a bold span that starts (or ends) with
    Chinese text.

    A space stays where the bold's edge is Latin text, a digit or code (``在 **GPU** 上``),
    as the course's typography puts one between Chinese and Latin text.

    Examples
    --------
    >>> for problem in bold_spacing_problems("它是 **访存受限** 的。"):
    ...     print(problem)
    space before bold '访存受限' (a gap in Chinese text)
    space after bold '访存受限' (a gap in Chinese text)
    >>> bold_spacing_problems("它是**访存受限**的，在 **GPU** 上；**{term}`延迟 <x>`**&#8203;是")
    []
    """
    problems = []
    for match in _BOLD.finditer(msgstr):
        inner, start, end = match.group("inner"), match.start(), match.end()
        before = msgstr[max(0, start - 2) : start]
        after = msgstr[end : end + 2]
        if len(before) == 2 and before[1] == " " and _CJK.match(before[0]):
            if _CJK.match(_edge(inner, last=False) or "a"):
                problems.append(f"space before bold {inner!r} (a gap in Chinese text)")
        if len(after) == 2 and after[0] == " " and _CJK.match(after[1]):
            if _CJK.match(_edge(inner, last=True) or "a"):
                problems.append(f"space after bold {inner!r} (a gap in Chinese text)")
    return problems


def _bold_pieces(text: str) -> Counter:
    """Roles (by name and target) and code spans inside bold, as CommonMark renders ``text``."""
    from markdown_it import MarkdownIt

    pieces: list[str] = []

    def placeholder(match: re.Match) -> str:
        name, content = match.group("name"), match.group("content")
        named = _TARGET.match(content)
        target = (named.group("target") if named else content).lower()
        if name.startswith("glue") or name in ("math", "cite", "cite:p", "cite:t"):
            target = content
        pieces.append(f"{{{name}}}{target}")
        return f"`@@role{len(pieces) - 1}@@`"

    rendered = MarkdownIt("commonmark").renderInline(_ROLE.sub(placeholder, text))
    found: Counter = Counter()
    for strong in re.findall(r"<strong>(.*?)</strong>", rendered, re.S):
        for code in re.findall(r"<code>(.*?)</code>", strong, re.S):
            role = re.fullmatch(r"@@role(\d+)@@", code)
            found[pieces[int(role.group(1))] if role else f"`{code}`"] += 1
    return found


def misplaced_bold_problems(msgid: str, msgstr: str) -> list[str]:
    """Roles and code spans bold in the English that are not bold in the translation.

    Counting bold spans misses a ``**`` that paired with the wrong partner (the count stays
    the same, the wrong words are bold); what is inside them shows it.

    Examples
    --------
    >>> english = "**{term}`Prefill`** reads. **{term}`Decode`** writes."
    >>> misplaced_bold_problems(english, "**{term}`预填充 <Prefill>`**&#8203;读。"
    ...                                  "**{term}`解码 <Decode>`**&#8203;写。")
    []
    >>> print(*misplaced_bold_problems(english, "**{term}`预填充 <Prefill>`**读。随后"
    ...                                         "**{term}`解码 <Decode>`**写。"))
    bold lost or moved: {term}decode, {term}prefill (bold in the English, not in the translation)
    """
    if "**" not in msgid:
        return []
    lost = _bold_pieces(msgid) - _bold_pieces(msgstr)
    if not lost:
        return []
    return [f"bold lost or moved: {', '.join(sorted(lost.elements()))} (bold in the English, "
            "not in the translation)"]  # fmt: skip
