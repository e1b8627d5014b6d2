"""What search engines and browsers read in a page's head: a description, an icon, addresses.

* ``<meta name="description">``: the page's first paragraph of prose (a chapter's "You will
  learn ...", a lab's opening sentence), in the edition's language, cut at a word boundary
  to at most :data:`DESCRIPTION_CHARS` characters; a page with no prose (the references) gets
  its title and the book's.
* An icon (``static/favicon.svg``), so that browsers do not ask for a missing
  ``/favicon.ico``.
* The published address: a canonical URL and ``hreflang`` alternates for the English and the
  Chinese edition. Search engines accept only absolute addresses there, so they are written
  only when the address is known: ``html_baseurl`` (``html: baseurl:`` in ``_config.yml``), or
  else the GitHub Pages address of ``repository.url`` once that is no longer the placeholder
  (the ``publish`` workflow deploys to GitHub Pages). :func:`waiting_items` says what waits
  for it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import urlsplit

from docutils import nodes

from gpulab.course.labs import is_published

STATIC = Path(__file__).parent / "static"
FAVICON = STATIC / "favicon.svg"
DESCRIPTION_CHARS = 160
#: A paragraph shorter than this (a "Lab:" line, a lone link) does not describe the page.
MIN_DESCRIPTION_CHARS = 30
#: Folder of the Chinese edition inside the English one (as in language_switch.py).
ZH_FOLDER = "zh"
SEO_WAITING = (
    "canonical URL",
    "hreflang alternates (English and Chinese editions)",
)


def published_base(baseurl: str, repository_url: str) -> str | None:
    """The published book's address, ending in ``/``; ``None`` while it is not known.

    >>> published_base("", "https://github.com/someone/gpu-course")
    'https://someone.github.io/gpu-course/'
    >>> published_base("https://example.org/book", "https://github.com/someone/gpu-course")
    'https://example.org/book/'
    >>> published_base("", "https://github.com/gpulab-course/gpulab") is None  # the placeholder
    True
    """
    if baseurl.strip():
        return baseurl.strip().rstrip("/") + "/"
    if not repository_url.strip() or not is_published(repository_url):
        return None
    url = urlsplit(repository_url.strip())
    parts = url.path.strip("/").removesuffix(".git").split("/")
    if url.hostname != "github.com" or len(parts) != 2 or not all(parts):
        return None
    owner, repo = parts
    if repo.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def waiting_items(base: str | None) -> list[str]:
    """The head items that wait for the published address (none once it is known).

    >>> waiting_items(None)
    ['canonical URL', 'hreflang alternates (English and Chinese editions)']
    >>> waiting_items("https://someone.github.io/gpu-course/")
    []
    """
    return [] if base else list(SEO_WAITING)


def _in_skipped(node: nodes.Node) -> bool:
    skipped = (nodes.literal_block, nodes.system_message, nodes.footnote, nodes.citation)
    parent = node.parent
    while parent is not None:
        if isinstance(parent, skipped):
            return True
        if isinstance(parent, nodes.Element) and "cell_output" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def shorten(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word boundary, with "…".

    >>> shorten("one two  three", 9)
    'one two…'
    >>> shorten("短句。", 9)
    '短句。'
    """
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:—-") + "…"


def first_paragraph(doctree: nodes.Node) -> str:
    """The text of the document's first paragraph of prose, or ``""``."""
    for paragraph in doctree.findall(nodes.paragraph):
        if _in_skipped(paragraph):
            continue
        text = re.sub(r"\s+", " ", paragraph.astext()).strip()
        if len(text) >= MIN_DESCRIPTION_CHARS:
            return text
    return ""


def page_url(base: str, pagename: str, chinese: bool) -> str:
    """The absolute address of ``pagename`` in one edition.

    >>> page_url("https://a.github.io/b/", "book/kernels", chinese=True)
    'https://a.github.io/b/zh/book/kernels.html'
    """
    return base + (ZH_FOLDER + "/" if chinese else "") + pagename + ".html"


def _is_chinese(language: str | None) -> bool:
    return bool(language) and language.lower().replace("-", "_").startswith("zh")


def _base(app) -> str | None:
    repository = str((app.config.html_theme_options or {}).get("repository_url", "") or "")
    return published_base(str(app.config.html_baseurl or ""), repository)


def _head(app, pagename, templatename, context, doctree) -> None:
    if doctree is None:
        return
    tags = []
    # A page with no prose (the references) is described by its title and the book's.
    title = re.sub(r"<[^>]+>", "", html.unescape(str(context.get("title", "")))).strip()
    book = str(app.config.html_title or app.config.project)
    fallback = f"{title} — {book}" if title else book
    description = shorten(first_paragraph(doctree) or fallback)
    if description:
        tags.append(f'<meta name="description" content="{html.escape(description)}" />')
    base = _base(app)
    if base:
        chinese = _is_chinese(app.config.language)
        own = html.escape(page_url(base, pagename, chinese))
        tags.append(f'<link rel="canonical" href="{own}" />')
        if getattr(app.config, "gpulab_language_switch", True):
            for lang, zh in (("en", False), ("zh-CN", True)):
                href = html.escape(page_url(base, pagename, zh))
                tags.append(f'<link rel="alternate" hreflang="{lang}" href="{href}" />')
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(tags)


def _config(app, config) -> None:
    if not config.html_favicon:
        config.html_favicon = str(FAVICON)


def _report(app) -> None:
    waiting = waiting_items(_base(app))
    if waiting and app.builder.format == "html":
        from sphinx.util import logging

        logging.getLogger(__name__).info(
            "page_meta: waiting for the published address (repository.url is the placeholder "
            "and html.baseurl is unset): " + "; ".join(waiting)
        )


def setup(app):
    app.connect("config-inited", _config)
    app.connect("builder-inited", _report)
    app.connect("html-page-context", _head)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
