"""Small line charts and stacked bars as SVG text, for the live calculators of the book.

The book's calculators run the package's own Python in the reader's browser (Pyodide), where
matplotlib is not available, so their charts are drawn here with the standard library alone:
one function, :func:`line_chart`, writes an ``<svg>`` element with axes, ticks, labelled
lines and one highlighted point. Colours come from CSS classes (``gl-s0``, ``gl-s1``, ...,
``gl-point``) and text uses ``currentColor``, so the page's stylesheet makes the chart read in
the light and the dark theme alike.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpulab._checks import positive_int, text

__all__ = ["Series", "line_chart", "stacked_bar"]

_RIGHT, _TOP, _BOTTOM = 30, 28, 46
# Colours where no stylesheet applies (the book's stylesheet sets theme colours by class).
_COLOURS = ("#1f77b4", "#777777", "#2ca02c")
_CHAR_PX = 6.6  # width of one character of an 11 px tick label, roughly


@dataclass(frozen=True)
class Series:
    """One line of a chart.

    Attributes
    ----------
    label : str
        Shown in the legend.
    xs, ys : sequence of float
        The points, in order; both finite, and positive on a logarithmic axis.
    dashed : bool
        Draw the line dashed (a bound or an ideal, rather than the prediction itself).
    """

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    dashed: bool = False

    def __post_init__(self) -> None:
        text("label", self.label)
        if len(self.xs) != len(self.ys) or len(self.xs) < 2:
            raise ValueError(
                f"xs and ys must have the same length, at least 2 (got {len(self.xs)} and "
                f"{len(self.ys)})"
            )


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    """Decades on a logarithmic axis; about five round steps on a linear one."""
    if log:
        first, last = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
        step = max(1, math.ceil((last - first + 1) / 7))
        return [10.0**k for k in range(first, last + 1, step) if lo <= 10.0**k <= hi * (1 + 1e-9)]
    raw = (hi - lo) / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


def _default_format(value: float) -> str:
    return f"{value:g}"


def line_chart(
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    x_log: bool = False,
    y_log: bool = False,
    point: tuple[float, float, str] | None = None,
    points: Sequence[tuple[float, float, str]] = (),
    x_format: Callable[[float], str] = _default_format,
    y_format: Callable[[float], str] = _default_format,
    title: str = "",
    width: int = 560,
    height: int = 300,
) -> str:
    """An SVG line chart: the ``series`` on shared axes, and ``point`` (x, y, label) marked.

    Parameters
    ----------
    series : sequence of Series
        The lines, drawn in order with the classes ``gl-s0``, ``gl-s1``, ...
    x_label, y_label : str
        Axis titles, with their units.
    x_log, y_log : bool
        Logarithmic axes (every value on them must be positive).
    point : (float, float, str), optional
        One point to mark and label: the reader's current input.
    points : sequence of (float, float, str)
        More points marked and labelled the same way (several measured kernels).
    x_format, y_format : callable
        Tick labels from values.
    title : str
        The chart's accessible name (``<title>``), read by screen readers.
    width, height : int
        Size in CSS pixels (the chart scales down with its container).

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> svg = line_chart([Series("y = x", (1, 10, 100), (1, 10, 100))], x_label="x",
    ...                  y_label="y", x_log=True, y_log=True)
    >>> svg.startswith("<svg") and "gl-s0" in svg
    True
    """
    if not series:
        raise ValueError("series must hold at least one Series")
    width, height = positive_int("width", width), positive_int("height", height)
    marked = ([point] if point else []) + list(points)
    xs = [x for s in series for x in s.xs] + [p[0] for p in marked]
    ys = [y for s in series for y in s.ys] + [p[1] for p in marked]
    for name, values, log in (("x", xs, x_log), ("y", ys, y_log)):
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"every {name} value must be finite")
        if log and min(values) <= 0:
            raise ValueError(f"{name} values must be positive on a logarithmic axis")
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = (min(ys), max(ys)) if y_log else (min(0.0, min(ys)), max(ys))
    if y_log:
        y_lo, y_hi = 10 ** math.floor(math.log10(y_lo)), 10 ** math.ceil(math.log10(y_hi))
    if x_hi == x_lo:
        x_hi = x_lo * 10 if x_log else x_lo + 1
    if y_hi == y_lo:
        y_hi = y_lo * 10 if y_log else y_lo + 1
    x_ticks, y_ticks = _ticks(x_lo, x_hi, x_log), _ticks(y_lo, y_hi, y_log)
    y_labels = [y_format(y) for y in y_ticks]
    left = round(30 + _CHAR_PX * max(map(len, y_labels), default=0))
    plot_w, plot_h = width - left - _RIGHT, height - _TOP - _BOTTOM

    def along(v: float, lo: float, hi: float, log: bool) -> float:
        if log:
            return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (v - lo) / (hi - lo)

    def sx(x: float) -> float:
        return left + plot_w * along(x, x_lo, x_hi, x_log)

    def sy(y: float) -> float:
        return _TOP + plot_h * (1 - along(y, y_lo, y_hi, y_log))

    esc = html.escape
    out = [
        f'<svg class="gl-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" font-size="11" font-family="sans-serif" '
        'fill="currentColor" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{esc(title or y_label + ' against ' + x_label)}</title>",
    ]
    grid = []
    for x in x_ticks:
        grid.append(f'<line class="gl-grid" stroke="#8888" x1="{sx(x):.1f}" y1="{_TOP}" '
                    f'x2="{sx(x):.1f}" y2="{_TOP + plot_h}"/>')  # fmt: skip
        grid.append(f'<text x="{sx(x):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">'
                    f"{esc(x_format(x))}</text>")  # fmt: skip
    for y, label in zip(y_ticks, y_labels, strict=True):
        grid.append(f'<line class="gl-grid" stroke="#8888" x1="{left}" y1="{sy(y):.1f}" '
                    f'x2="{left + plot_w}" y2="{sy(y):.1f}"/>')  # fmt: skip
        grid.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">'
                    f"{esc(label)}</text>")  # fmt: skip
    out += grid
    out.append(f'<rect class="gl-frame" fill="none" stroke="currentColor" x="{left}" '
               f'y="{_TOP}" width="{plot_w}" height="{plot_h}"/>')  # fmt: skip
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
               f"{esc(x_label)}</text>")  # fmt: skip
    middle = _TOP + plot_h / 2
    out.append(f'<text x="14" y="{middle:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {middle:.1f})">{esc(y_label)}</text>')  # fmt: skip
    for i, s in enumerate(series):
        points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(s.xs, s.ys, strict=True))
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        colour = _COLOURS[i % len(_COLOURS)]
        out.append(
            f'<polyline class="gl-s{i}" fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{points}"{dash}/>'
        )
        legend_y = _TOP - 10
        legend_x = left + 8 + i * 190
        out.append(f'<line class="gl-s{i}" stroke="{colour}" stroke-width="2" x1="{legend_x}" '
                   f'y1="{legend_y}" '
                   f'x2="{legend_x + 22}" y2="{legend_y}"{dash}/>')  # fmt: skip
        out.append(f'<text x="{legend_x + 27}" y="{legend_y + 4}">{esc(s.label)}</text>')
    for px, py, label in marked:
        anchor = "end" if sx(px) > left + plot_w * 0.6 else "start"
        shift = -9 if anchor == "end" else 9
        out.append(
            f'<circle class="gl-point" fill="#e06c00" cx="{sx(px):.1f}" cy="{sy(py):.1f}" r="5"/>'
        )
        out.append(f'<text class="gl-point-label" x="{sx(px) + shift:.1f}" '
                   f'y="{sy(py) + 16:.1f}" text-anchor="{anchor}">{esc(label)}</text>')  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


#: Fill colours of the parts of a stacked bar, in order (the course's palette: they read on the
#: light and the dark theme alike, with the labels in the text colour beside the bar).
_PART_COLOURS = ("#4C72B0", "#55A868", "#DD8452", "#937860", "#8172B3", "#64B5CD")


def stacked_bar(
    parts: Sequence[tuple[str, float]],
    *,
    value_format: Callable[[float], str] = _default_format,
    title: str = "",
    width: int = 560,
    height: int = 120,
) -> str:
    """An SVG bar of one total stacked from its ``parts``, with a key giving each part's value.

    Parameters
    ----------
    parts : sequence of (str, float)
        Each part's name and value (0 or more), drawn left to right with the classes
        ``gl-part0``, ``gl-part1``, ...
    value_format : callable
        The key's text for a value (and for the total, written at the end of the bar).
    title : str
        The chart's accessible name (``<title>``).
    width, height : int
        Size in CSS pixels.

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> svg = stacked_bar([("parameters", 4.0), ("gradients", 4.0), ("optimizer", 8.0)],
    ...                   value_format=lambda v: f"{v:g} B")
    >>> svg.count('class="gl-part'), "16 B" in svg       # a segment and a key swatch per part
    (6, True)
    """
    if not parts:
        raise ValueError("parts must hold at least one (name, value) pair")
    width, height = positive_int("width", width), positive_int("height", height)
    for i, part in enumerate(parts):
        if not (isinstance(part, tuple) and len(part) == 2):
            raise TypeError(f"parts[{i}]={part!r} must be a (name, value) pair")
        text(f"parts[{i}][0]", part[0])
        if not (isinstance(part[1], (int, float)) and math.isfinite(part[1]) and part[1] >= 0):
            raise ValueError(f"parts[{i}][1]={part[1]!r} must be a finite number of 0 or more")
    total = sum(value for _, value in parts)
    esc = html.escape
    left, right, bar_y, bar_h = 10, 90, 10, 34
    scale = (width - left - right) / total if total > 0 else 0.0
    out = [
        f'<svg class="gl-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" font-size="11" font-family="sans-serif" '
        'fill="currentColor" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{esc(title or 'a total stacked from its parts')}</title>",
    ]
    x = float(left)
    per_row = 3
    for i, (name, value) in enumerate(parts):
        colour = _PART_COLOURS[i % len(_PART_COLOURS)]
        out.append(f'<rect class="gl-part{i}" fill="{colour}" x="{x:.1f}" y="{bar_y}" '
                   f'width="{value * scale:.1f}" height="{bar_h}"/>')  # fmt: skip
        x += value * scale
        key_x = left + (i % per_row) * ((width - left) / per_row)
        key_y = bar_y + bar_h + 22 + (i // per_row) * 18
        out.append(f'<rect class="gl-part{i}" fill="{colour}" x="{key_x:.1f}" '
                   f'y="{key_y - 9}" width="10" height="10"/>')  # fmt: skip
        out.append(f'<text x="{key_x + 14:.1f}" y="{key_y}">'
                   f"{esc(name)}: {esc(value_format(value))}</text>")  # fmt: skip
    out.append(f'<text x="{x + 6:.1f}" y="{bar_y + bar_h / 2 + 4:.1f}">'
               f"{esc(value_format(total))}</text>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)
