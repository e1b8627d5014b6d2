"""Whether each translated message reaches its page of the built Chinese edition.

Sphinx parses every translation again as Markdown, and keeps the English wherever the result
is not the paragraph it expects (a translation that begins like a list item, ``1. 慢循环``,
becomes a list and is dropped) or when the catalogue cannot be compiled. Nothing warns: the
page just shows English. So the test of the Chinese edition looks for each translated message
on its built page (``locale/zh_CN/LC_MESSAGES/book/gpu_basics.po`` on
``_build/html/zh/book/gpu_basics.html``).

A message is compared as the page shows it: its Markdown rendered, whitespace, quotation marks
and dashes left out (Sphinx typesets quotes and dashes), and every piece whose text the build
computes (a glued value, math, a citation, the title a ``{doc}`` role shows, an autolink's
text) a gap: the pieces of literal text around the gaps must appear on the page in order. A
``{term}``, ``{doc}`` or ``{ref}`` role with a shown text (``{term}`线程束 <warp>```) shows that
text. A display-math block's message is TeX, which is on the page as written: as the text
MathJax typesets in the browser, or in the ``data-tex`` attribute of a formula the build
typeset as SVG (``book/_ext/math_svg.py``). A message also counts as shown when its text,
unrendered, is on the page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

__all__ = ["absent_messages", "message_pieces", "normalise", "page_text"]

#: Stands for text the build computes; never in a message or a page.
GAP = "\ue000"
_ROLE = re.compile(r"\{(?P<name>[a-z][a-z0-9:_-]*)\}`(?P<content>[^`]*)`")
_NAMED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
#: Roles that show the text they are given (when given one, ``text <target>``).
_SHOWN_ROLES = ("term", "doc", "ref", "download")
_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\$)[^$\n]+?(?<![\\\s])\$(?!\$)", re.S)
_SUBSTITUTION = re.compile(r"\{\{.*?\}\}", re.S)
#: An autolink's shown text is the theme's (it shortens GitHub addresses to owner/name).
_AUTOLINK = re.compile(r"<https?://[^>\s]+>")
_QUOTES = "\"'“”‘’«»「」"
_DASHES = re.compile("[‐‑‒–—―-]+")


def normalise(text: str) -> str:
    """``text`` as compared: no whitespace, no quotation marks, each run of dashes one ``-``.

    Examples
    --------
    >>> normalise('A "quoted" -- word\\n and  more')
    'Aquoted-wordandmore'
    >>> normalise("“引号”——破折号")
    '引号-破折号'
    """
    text = "".join(text.split())
    text = text.translate({ord(c): None for c in _QUOTES})
    return _DASHES.sub("-", text)


def _role(match: re.Match) -> str:
    name, content = match.group("name"), match.group("content")
    named = _NAMED.match(content)
    if name in _SHOWN_ROLES and named:
        return named.group("text")
    if name == "term":
        return content
    return GAP


def message_pieces(msgstr: str) -> list[str]:
    """The literal pieces of text a translated message shows, in order, normalised.

    Examples
    --------
    >>> message_pieces("一个{term}`线程束 <warp>`读取 **{glue:text}`n`** 字节（$n$）。")
    ['一个线程束读取', '字节（', '）。']
    >>> message_pieces("1\\\\. 慢循环，见 [第 2 节](#s2)")
    ['1.慢循环，见第2节']
    """
    from markdown_it import MarkdownIt

    text = _ROLE.sub(_role, msgstr)
    text = _MATH.sub(GAP, text)
    text = _SUBSTITUTION.sub(GAP, text)
    text = _AUTOLINK.sub(GAP, text)
    rendered = MarkdownIt("commonmark").renderInline(text)
    shown = html.unescape(re.sub(r"<[^>]*>", "", rendered))
    return [piece for piece in (normalise(p) for p in shown.split(GAP)) if piece]


def page_text(page_html: str) -> str:
    """The normalised text of a built page, images' alternative text and the TeX of formulas
    typeset when the book was built included.

    Examples
    --------
    >>> page_text('<p>并行 <b>计算</b></p><img alt="一张 图"><script>var x;</script>')
    '并行计算一张图'
    >>> page_text('<div class="math" data-tex="a &lt; b"><svg></svg></div>')
    'a<b'
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page_html, "html.parser")
    for tag in soup(["script", "style"]):
        tag.decompose()
    alts = [img.get("alt", "") for img in soup.find_all("img")]
    tex = [node["data-tex"] for node in soup.find_all(attrs={"data-tex": True})]
    return normalise(soup.get_text("") + "".join(alts) + "".join(tex))


def _shows(pieces: list[str], text: str) -> bool:
    start = 0
    for piece in pieces:
        found = text.find(piece, start)
        if found < 0:
            return False
        start = found + len(piece)
    return True


def absent_messages(catalogue: str | Path, page: str | Path) -> list[str]:
    """The translated messages of ``catalogue`` (a ``.po``) that the built ``page`` (HTML)
    does not show: each message's English, for the report.

    Untranslated and fuzzy messages are left out (the page shows their English on purpose).
    """
    from babel.messages.pofile import read_po

    with open(catalogue, "rb") as handle:
        messages = [m for m in read_po(handle) if m.id and m.string and not m.fuzzy]
    text = page_text(Path(page).read_text(encoding="utf-8"))
    return [m.id for m in messages if not _shows(message_pieces(m.string), text)
            and normalise(m.string) not in text]  # fmt: skip
