"""One term per idea in the Chinese edition: glossary terms and fixed terms in running text.

:func:`gpulab.course.translation.check_message` checks a glossary term where the English
marks it with ``{term}``. This module holds the same rule where the English writes the term
as a plain word, and the course's fixed renderings of words the glossary does not define
(``locale/README.md``, "One term per idea"):

* :func:`running_text_problems`: a glossary term in the English prose (outside roles, code,
  math, links, placeholders and quotations) needs its Chinese form in the translation;
* :func:`fixed_term_problems`: "registry" is 规格库, "datasheet" 数据手册, a rack 机柜,
  "all-to-all" 全对全, "claim" 论断, and "FLOP/byte" is written ``FLOP/字节``;
* :func:`divergent_translations`: one English message has one translation in every catalogue
  (the shared boilerplate of chapters and labs).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

__all__ = [
    "FIXED_TERMS",
    "NOT_TERMS",
    "OTHER_SENSES",
    "RUNNING_FORMS",
    "FixedTerm",
    "divergent_translations",
    "fixed_term_problems",
    "prose",
    "running_text_problems",
]

#: Glossary terms whose English word also has an everyday sense the course uses ("a block of
#: code", "a transformer block", "never ranks it"), so only a ``{term}`` role marks the
#: glossary's sense; running text is not checked for them.
OTHER_SENSES = frozenset({"block", "rank"})

#: Phrases in which a glossary word has another sense: a notebook's Python kernel (内核), a
#: warm-up exercise (热身). They are left out of the prose before the terms are matched.
NOT_TERMS = (r"\b(?:Python|Jupyter|IPython) kernels?\b", r"(?<=kernel )warm-up\b")

#: Shorter forms a sentence may use for a glossary term, besides the glossary's own: the
#: glossary heads its entry 理论峰值 or 流水线气泡, a sentence about pipelines says 气泡.
RUNNING_FORMS: dict[str, tuple[str, ...]] = {
    "activations": ("激活",),
    "barrier": ("屏障",),
    "bubble": ("气泡",),
    "decode": ("解码",),
    "divergence": ("分化",),
    "peak": ("峰值",),
    "prediction": ("预测",),
    "prefill": ("预填充",),
    "throughput": ("吞吐",),
    "warm-up": ("预热",),
}


@dataclass(frozen=True)
class FixedTerm:
    """A word the glossary does not define, with the one Chinese form the course uses.

    ``english`` (a regular expression, case-insensitive) found in the English prose needs
    ``chinese`` in the translation, and ``avoid`` (a regular expression) must not appear
    there; ``chinese`` may be empty where only ``avoid`` is checked.
    """

    name: str
    english: str
    chinese: str
    avoid: str = ""


FIXED_TERMS: tuple[FixedTerm, ...] = (
    FixedTerm("registry", r"\bregistr(?:y|ies)\b", "规格库", r"数据表(?!明)|登记表"),
    FixedTerm("datasheet", r"\bdata ?sheets?\b", "数据手册", r"规格书|规格表"),
    FixedTerm("rack", r"\bracks?\b", "机柜", r"机架"),
    FixedTerm("all-to-all", r"\ball-to-alls?\b", "全对全"),
    FixedTerm("claim", r"\bclaims?\b", "论断"),
    FixedTerm(
        "FLOP/byte", r"\bFLOPs?(?:/| per )byte\b", "", r"FLOPs?/byte|FLOPs/字节|FLOP ?/ 字节"
    ),
)

_CHINESE = re.compile(r"[\u4e00-\u9fff]")
_ROLE = re.compile(r"\{[a-z][a-z0-9:_-]*\}`[^`]*`")
_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\([^)]*\)")
_HIDDEN = re.compile(
    r"(`+).+?\1"  # code
    r"|\$\$.+?\$\$|(?<![\\$])\$[^$\n]+?\$"  # math
    r"|https?://\S+"  # URLs
    r"|\{[A-Za-z_][A-Za-z0-9_.]*(?:![rsa])?(?::[^{}]*)?\}"  # placeholders, {kernel}, {u:.0%}
    r'|"[^"\n]*"',  # quotations and titles, kept as the source wrote them
    re.S,
)


def prose(text: str) -> str:
    """``text`` without what a translation keeps as it is: roles, code, math, URLs, link
    targets, format placeholders and double-quoted passages.

    Examples
    --------
    >>> prose('A {term}`warp` of `x` at $b$ per [byte](https://e.org) in "A Paper".')
    'A   of   at   per byte in  .'
    >>> prose("At {utilisation:.0%} of {peak:,.0f} TFLOP/s.")
    'At   of   TFLOP/s.'
    """
    text = _ROLE.sub(" ", text)
    text = _LINK.sub(lambda m: m.group("text"), text)
    return _HIDDEN.sub(" ", text)


def _is_headword_form(term: str, form: str) -> bool:
    # term_forms adds the headword itself for an acronym or a product name (CUDA, ZeRO)
    return form.lower() == term and sum(c.isupper() for c in form) >= 2


def _pattern(term: str, forms: tuple[str, ...]) -> re.Pattern:
    headword = next((f for f in forms if _is_headword_form(term, f)), None)
    if headword is not None:  # an acronym matches as written: ZeRO, not "zero"
        return re.compile(r"(?<![\w-])" + re.escape(headword) + r"s?(?![\w-])")
    words = re.escape(term).replace(r"\ ", "[ -]").replace(r"\-", "[ -]?")
    words = words.replace("is", "i[sz]")  # utilisation, utilization
    return re.compile(r"(?<![\w-])" + words + r"(?:s|es)?(?![\w-])", re.I)


def running_text_problems(msgid: str, msgstr: str, terms: dict[str, tuple[str, ...]]) -> list[str]:
    """Each glossary term the English prose writes without ``{term}`` whose Chinese form the
    translation lacks.

    Longer terms are matched first ("kernel fusion" before "kernel"); an acronym matches
    only as the glossary writes it; :data:`OTHER_SENSES` are skipped and
    :data:`RUNNING_FORMS` also count. A message copied unchanged (a name, a formula) has
    nothing to check.

    Examples
    --------
    >>> terms = {"warp": ("线程束",), "kernel": ("核函数",), "kernel fusion": ("算子融合",),
    ...          "zero": ("零冗余优化器", "ZeRO")}
    >>> running_text_problems("Kernel fusion saves a warp.", "算子融合省下一个线程束。", terms)
    []
    >>> running_text_problems("Each warp runs.", "每个 warp 都运行。", terms)
    ["'warp' (glossary term 'warp') needs its Chinese form '线程束'"]
    >>> running_text_problems("Zero bytes.", "零字节。", terms)
    []
    """
    if not _CHINESE.search(msgstr):
        return []
    text = prose(msgid)
    for phrase in NOT_TERMS:
        text = re.sub(phrase, " ", text)
    problems = []
    for term in sorted(terms, key=len, reverse=True):
        forms = terms[term] + RUNNING_FORMS.get(term, ())
        pattern = _pattern(term, terms[term])
        found = pattern.search(text)
        if found is None:
            continue
        text = pattern.sub(" ", text)
        if term in OTHER_SENSES or any(form in msgstr for form in forms):
            continue
        problems.append(
            f"{found.group(0)!r} (glossary term {term!r}) needs its Chinese form "
            + " or ".join(map(repr, forms))
        )
    return problems


def fixed_term_problems(msgid: str, msgstr: str) -> list[str]:
    """What the translation does against :data:`FIXED_TERMS`.

    Examples
    --------
    >>> fixed_term_problems("The spec registry.", "课程的数据表。")
    ["'registry' is 规格库 in the Chinese edition", "'registry': write 规格库, not '数据表'"]
    >>> fixed_term_problems("At 4 FLOP/byte.", "为 4 FLOP/字节。")
    []
    """
    if not _CHINESE.search(msgstr):
        return []
    english, chinese = prose(msgid), prose(msgstr)
    problems = []
    for fixed in FIXED_TERMS:
        if not re.search(fixed.english, english, re.I):
            continue
        if fixed.chinese and fixed.chinese not in msgstr:
            problems.append(f"{fixed.name!r} is {fixed.chinese} in the Chinese edition")
        wrong = re.search(fixed.avoid, chinese) if fixed.avoid else None
        if wrong:
            problems.append(
                f"{fixed.name!r}: write {fixed.chinese or 'FLOP/字节'}, not {wrong.group(0)!r}"
            )
    return problems


def divergent_translations(messages) -> dict[str, dict[str, list[str]]]:
    """English messages translated in more than one way: msgid -> {msgstr: [pages]}.

    ``messages`` yields ``(page, msgid, msgstr)``. The glossary's headwords (``Warp`` →
    ``线程束（Warp）``) differ from a heading of the same words by design; leave that page out.

    Examples
    --------
    >>> divergent_translations([("a", "Takeaway", "要点"), ("b", "Takeaway", "小结"),
    ...                         ("c", "Takeaway", "要点")])
    {'Takeaway': {'要点': ['a', 'c'], '小结': ['b']}}
    """
    seen: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for page, msgid, msgstr in messages:
        seen[msgid][msgstr].append(page)
    return {m: {s: list(p) for s, p in ways.items()} for m, ways in seen.items() if len(ways) > 1}
