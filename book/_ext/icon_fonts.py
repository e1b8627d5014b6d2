"""The theme's icon fonts cut down to the icons the book shows.

The theme draws its icons (menu, search, colour mode, download, GitHub, the admonition
markers) with Font Awesome's fonts: 275 KB for the solid and brand sets together, fetched at
the highest priority before the first paint, for about twenty glyphs. On a phone's slow link
that alone delays the first paint by more than a second. When the build ends this extension
writes each font again with only the glyphs the pages can show:

* every ``fa-*`` class named in a page or in a script the pages load (``fa-github``), looked up
  in the theme's stylesheet, where each class sets its glyph;
* every private-use character a stylesheet writes directly (``content: "\\f107"``, the
  admonition icons' ``--pst-icon-*`` variables).

The fonts keep their names, so the theme's ``@font-face`` rules load the small ones
(``tests/test_lean_pages.py`` checks that every icon a page uses has its glyph). Writing
WOFF2 needs the ``brotli`` package (``requirements.txt``); without it the fonts stay whole and
the build says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FONT_DIR = "_static/vendor/fontawesome/webfonts"
FONTS = ("fa-solid-900.woff2", "fa-regular-400.woff2", "fa-brands-400.woff2")
#: Unicode's private use area, where icon fonts put their glyphs.
PRIVATE_USE = range(0xE000, 0xF900)
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_ICON_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+):{1,2}(?:before|after)")
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?")
_CLASS = re.compile(r"\bfa-[a-z0-9-]+")


def characters(value: str) -> set[int]:
    """The code points a CSS string value writes, escaped or literal.

    >>> sorted(map(hex, characters('"\\\\f0c9" "\\uf058"')))
    ['0xf058', '0xf0c9']
    """
    found = {int(code, 16) for code in _ESCAPE.findall(value)}
    plain = _ESCAPE.sub("", value)
    return found | {ord(ch) for ch in plain if ord(ch) in PRIVATE_USE}


def icon_table(css: str) -> tuple[dict[str, set[int]], set[int]]:
    """The icon classes a stylesheet defines (class -> code points) and the private-use code
    points it writes elsewhere.

    >>> table, direct = icon_table('.fa-bars:before,.fa-navicon:before{content:"\\\\f0c9"}'
    ...                            ':root{--pst-icon-x:"\\\\f05a"}')
    >>> sorted(table), sorted(map(hex, direct))
    (['fa-bars', 'fa-navicon'], ['0xf05a'])
    """
    table: dict[str, set[int]] = {}
    direct: set[int] = set()
    for selectors, body in _RULE.findall(css):
        found = characters(body)
        if not found:
            continue
        names = [_ICON_SELECTOR.fullmatch(s.strip()) for s in selectors.split(",")]
        if all(names):
            for name in names:
                table.setdefault(name.group(1), set()).update(found)
        else:
            direct |= {c for c in found if c in PRIVATE_USE}
    return table, direct


def needed(outdir: Path) -> set[int]:
    """The code points the built pages in ``outdir`` can show with the icon fonts."""
    table: dict[str, set[int]] = {}
    direct: set[int] = set()
    for css in (outdir / "_static").rglob("*.css"):
        found, written = icon_table(css.read_text(encoding="utf-8", errors="replace"))
        for name, codes in found.items():
            table.setdefault(name, set()).update(codes)
        direct |= written
    scripts = [p for p in (outdir / "_static").rglob("*.js") if "fontawesome" not in p.name]
    classes: set[str] = set()
    for path in [*outdir.rglob("*.html"), *scripts]:
        classes |= set(_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    return direct.union(*(table[c] for c in classes if c in table))


def subset(source: Path, codes: set[int], target: Path) -> None:
    """Write ``source`` (a WOFF2 font) to ``target`` with only the glyphs of ``codes``."""
    from fontTools import subset as ft_subset

    options = ft_subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]
    font = ft_subset.load_font(str(source), options)
    subsetter = ft_subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codes))
    subsetter.subset(font)
    ft_subset.save_font(font, str(target), options)


def theme_fonts(app) -> Path | None:
    """The theme's own folder of icon fonts (whole, as installed)."""
    for folder in app.builder.theme.get_theme_dirs():
        candidate = Path(folder) / "static" / "vendor" / "fontawesome" / "webfonts"
        if candidate.is_dir():
            return candidate
    return None


def _write(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    try:
        import brotli  # noqa: F401  (fontTools writes WOFF2 with it)
    except ImportError:
        logger.warning("icon fonts left whole: WOFF2 needs the brotli package (pip install brotli)")
        return
    source_dir = theme_fonts(app)
    outdir = Path(app.outdir)
    if source_dir is None:
        return
    codes = needed(outdir)
    for name in FONTS:
        source, target = source_dir / name, outdir / FONT_DIR / name
        if source.is_file() and target.is_file():
            subset(source, codes, target)


def setup(app):
    app.connect("build-finished", _write, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
