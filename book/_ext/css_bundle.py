"""One stylesheet per page: the theme's and the extensions' CSS, concatenated in page order.

A browser paints nothing until every stylesheet in the head has arrived. A page that links
sixteen small files pays for sixteen requests over a phone's slow link before the reader sees a
word; one file of the same bytes costs one. Each distinct list of stylesheets (most pages share
one of a handful) becomes ``_static/styles/bundle-<hash>.css``, written when the build ends
from the files Sphinx copied, so that an edit to any of them reaches the bundle
(``tests/test_lean_pages.py``, ``tests/test_lighthouse.py``).

Relative ``url(...)`` references are rewritten for the bundle's folder; a stylesheet on another
host, or one with a ``media`` or ``title`` attribute, stays a link of its own. The bundle names
its sources, in order, in a comment per file.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from pathlib import Path

from markupsafe import Markup
from sphinx.util import logging

logger = logging.getLogger(__name__)

BUNDLE_DIR = "_static/styles"
#: Every bundle's sources, kept across builds (pages an incremental build does not rewrite
#: still link their bundle).
MANIFEST = f"{BUNDLE_DIR}/bundles.json"
SOURCE_MARK = "/* from {} */"
_LINK = re.compile(r"<link\b[^>]*>")
_ATTRIBUTE = re.compile(r'([a-z-]+)="([^"]*)"')
_URL = re.compile(r"""url\(\s*(["']?)([^"')]*)\1\s*\)""")
_CHARSET = re.compile(r"""@charset\s+["'][^"']*["']\s*;""", re.IGNORECASE)
_SOURCE_MAP = re.compile(r"/\*[#@]\s*sourceMappingURL=[^*]*\*/")
_IMPORT = re.compile(r"@import\b", re.IGNORECASE)
_REMOTE = ("http:", "https:", "//", "data:", "#", "/")

#: The bundles the pages written in this build link: name -> source paths (outdir-relative).
_BUNDLES: dict[str, list[str]] = {}


def bundle_name(sources: list[str]) -> str:
    """Where the bundle of ``sources`` (outdir-relative paths, in order) is written.

    >>> bundle_name(["_static/a.css", "_static/b.css"])
    '_static/styles/bundle-eaa80312d402.css'
    """
    digest = hashlib.sha1("\n".join(sources).encode()).hexdigest()[:12]
    return f"{BUNDLE_DIR}/bundle-{digest}.css"


def page_relative(pagename: str, href: str) -> str:
    """``href`` (as written in page ``pagename``) as a path from the output folder.

    >>> page_relative("book/kernels", "../_static/basic.css?v=1")
    '_static/basic.css'
    """
    path = href.split("?", 1)[0].split("#", 1)[0]
    return posixpath.normpath(posixpath.join(posixpath.dirname(pagename), path))


def rebase_urls(css: str, source: str, target: str) -> str:
    """``css``, read from ``source``, with its relative ``url(...)`` paths made to work from
    ``target`` (both paths from the output folder).

    >>> rebase_urls('a{b:url("../fonts/x.woff2")}', "_static/styles/t.css", "_static/b.css")
    'a{b:url("fonts/x.woff2")}'
    >>> rebase_urls("a{b:url(data:x)}", "_static/t.css", "_static/styles/b.css")
    'a{b:url(data:x)}'
    """
    source_dir, target_dir = posixpath.dirname(source), posixpath.dirname(target)

    def rebase(match: re.Match) -> str:
        quote, url = match.group(1), match.group(2).strip()
        if not url or url.startswith(_REMOTE):
            return match.group(0)
        cut = re.search(r"[?#]", url)
        path, suffix = (url[: cut.start()], url[cut.start() :]) if cut else (url, "")
        resolved = posixpath.normpath(posixpath.join(source_dir, path))
        moved = posixpath.relpath(resolved, target_dir or ".")
        return f"url({quote}{moved}{suffix}{quote})"

    return _URL.sub(rebase, css)


def concatenate(outdir: Path, sources: list[str], target: str) -> str:
    """The bundle's text: each source, marked, its URLs rebased, without ``@charset`` and
    source-map comments (neither means anything in the middle of a file)."""
    parts = []
    for source in sources:
        css = (outdir / source).read_text(encoding="utf-8")
        if _IMPORT.search(css):
            logger.warning(f"{source} uses @import, which does not work inside a bundle")
        css = _SOURCE_MAP.sub("", _CHARSET.sub("", css))
        parts.append(f"{SOURCE_MARK.format(source)}\n{rebase_urls(css, source, target)}")
    return '@charset "UTF-8";\n' + "\n".join(parts) + "\n"


def _bundled(stylesheet) -> bool:
    """Whether a Sphinx stylesheet entry goes into the bundle."""
    attributes = dict(getattr(stylesheet, "attributes", None) or {})
    filename = str(getattr(stylesheet, "filename", stylesheet) or "")
    plain = attributes.get("rel", "stylesheet") == "stylesheet" and "title" not in attributes
    local = not filename.startswith(_REMOTE)
    return plain and local and attributes.get("media", "all") in ("all", "screen")


def split_links(pre_assets: str, pagename: str) -> tuple[list[str], str]:
    """The stylesheet paths linked in ``pre_assets`` (HTML) and the rest of its tags.

    >>> split_links('<link href="../a.css?d=1" rel="stylesheet" />\\n<link rel="preload" />',
    ...             "book/x")
    (['a.css'], '<link rel="preload" />')
    """
    sources, rest = [], []
    for tag in _LINK.findall(str(pre_assets)):
        attributes = dict(_ATTRIBUTE.findall(tag))
        href = attributes.get("href", "")
        if attributes.get("rel") == "stylesheet" and not href.startswith(_REMOTE):
            sources.append(page_relative(pagename, href))
        else:
            rest.append(tag)
    return sources, "\n".join(rest)


def _page(app, pagename, templatename, context, doctree) -> None:
    if "css_files" not in context:
        return

    def stylesheets(pre_assets: str) -> Markup:
        # Sphinx sorts the list into a new one after this event: it is looked up when called.
        css_files = context["css_files"]
        sources, rest = split_links(pre_assets, pagename)
        for stylesheet in css_files:
            if _bundled(stylesheet):
                sources.append(str(stylesheet.filename).split("?", 1)[0])
        # css() in the template links what is left.
        css_files[:] = [s for s in css_files if not _bundled(s)]
        name = bundle_name(sources)
        _BUNDLES[name] = sources
        href = context["pathto"](name, 1)
        return Markup(f'{rest}\n<link rel="stylesheet" href="{href}" />'.lstrip("\n"))

    context["lean_stylesheets"] = stylesheets


def _reset(app) -> None:
    _BUNDLES.clear()


def _write(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    manifest = outdir / MANIFEST
    known = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
    for name, sources in {**known, **_BUNDLES}.items():
        missing = [s for s in sources if not (outdir / s).is_file()]
        if missing:
            if name in _BUNDLES:
                logger.warning(f"{name}: stylesheets not in the output: {', '.join(missing)}")
            known.pop(name, None)
            continue
        (outdir / name).write_text(concatenate(outdir, sources, name), encoding="utf-8")
        known[name] = sources
    manifest.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")


def sources_of(bundle: Path) -> list[str]:
    """The stylesheets a written bundle was made from, in order (for tests and readers)."""
    text = bundle.read_text(encoding="utf-8")
    return re.findall(re.escape(SOURCE_MARK).replace(r"\{\}", "(.+?)"), text)


def linked_stylesheets(page: Path, outdir: Path) -> list[str]:
    """The stylesheets a built ``page`` links, as paths from ``outdir``: each bundle's
    sources in its place (a test's view of what the page is styled with)."""
    head = page.read_text(encoding="utf-8").split("</head>", 1)[0]
    pagename = page.relative_to(outdir).with_suffix("").as_posix()
    found = []
    for tag in _LINK.findall(head):
        attributes = dict(_ATTRIBUTE.findall(tag))
        if attributes.get("rel") != "stylesheet" or attributes.get("href", "").startswith(_REMOTE):
            continue
        path = page_relative(pagename, attributes["href"])
        edition, bundled, _ = path.partition(f"{BUNDLE_DIR}/bundle-")  # zh/ for the edition
        if bundled:
            found.extend(edition + source for source in sources_of(outdir / path))
        else:
            found.append(path)
    return found


def setup(app):
    app.connect("builder-inited", _reset)
    app.connect("html-page-context", _page, priority=960)
    # After every extension that writes a stylesheet when the build ends (the theme rewrites
    # pygments.css then; myst-nb and the calculators write theirs).
    app.connect("build-finished", _write, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
