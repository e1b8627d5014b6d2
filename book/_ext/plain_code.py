"""Highlighted code without the markup that changes nothing on screen.

Pygments wraps every token of a code block in a ``<span>`` with the token's class, whether or
not the colour style gives that class a look of its own. In the theme's styles (light and dark)
names, punctuation and whitespace look exactly like plain code, so their spans only add
elements: about half of the ten thousand on a lab page, each one styled and laid out by a
phone's browser before the page responds (``tests/test_lighthouse.py``). This extension
leaves those tokens as plain text, and only those: a class is dropped when every colour style
the page can show (the theme's light and dark ones) draws it as it draws plain text.
"""

from __future__ import annotations

import re

from pygments.styles import get_all_styles, get_style_by_name
from pygments.token import STANDARD_TYPES, Text

#: What the theme falls back to when a style it is given is not installed (its pygments.py).
FALLBACK_STYLES = {"light": "tango", "dark": "monokai"}
_BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.DOTALL)


def plain_classes(*style_names: str) -> frozenset[str]:
    """The token classes that every style in ``style_names`` draws as plain text.

    >>> sorted(plain_classes("a11y-high-contrast-light", "a11y-high-contrast-dark"))
    ['n', 'nn', 'nx', 'p', 'pm', 'w']
    """
    plain: set[str] | None = None
    for name in style_names:
        style = get_style_by_name(name)
        text = style.style_for_token(Text)
        same = {
            cls
            for ttype, cls in STANDARD_TYPES.items()
            if cls and style.style_for_token(ttype) == text
        }
        plain = same if plain is None else plain & same
    return frozenset(plain or ())


def unwrap(body: str, classes: frozenset[str]) -> str:
    """``body`` with the spans of ``classes`` inside highlighted code blocks unwrapped.

    >>> unwrap('<div class="highlight"><pre><span class="k">def</span><span class="w"> </span>'
    ...        '<span class="n">f</span></pre></div><span class="n">x</span>', frozenset("nw"))
    '<div class="highlight"><pre><span class="k">def</span> f</pre></div><span class="n">x</span>'
    """
    if not classes:
        return body
    names = "|".join(map(re.escape, sorted(classes)))
    span = re.compile(f'<span class="(?:{names})">([^<]*)</span>')

    def block(match: re.Match) -> str:
        return match.group(1) + span.sub(r"\1", match.group(2)) + match.group(3)

    return _BLOCK.sub(block, body)


def theme_styles(app) -> tuple[str, str]:
    """The light and dark colour styles the theme draws code with (as the theme picks them)."""
    options = dict(getattr(app.builder, "theme_options", None) or {})
    options = {**dict(app.config.html_theme_options or {}), **options}
    theme = getattr(app.builder, "theme", None)
    defaults = theme.get_options() if theme is not None else {}
    known = set(get_all_styles())
    picked = []
    for mode, fallback in FALLBACK_STYLES.items():
        key = f"pygments_{mode}_style"
        name = options.get(key) or defaults.get(key)
        picked.append(name if name in known else fallback)
    return picked[0], picked[1]


def _page(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body:
        context["body"] = unwrap(body, _classes(app))


def _classes(app) -> frozenset[str]:
    cached = getattr(app, "_gpulab_plain_classes", None)
    if cached is None:
        cached = app._gpulab_plain_classes = plain_classes(*theme_styles(app))
    return cached


def setup(app):
    app.connect("html-page-context", _page, priority=955)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
