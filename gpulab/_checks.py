"""Argument checks shared by gpulab's modules, so every bad input reads the same way.

Every public function of gpulab checks its arguments with these, and every message has
the same shape: the parameter's name, the value given, and what is allowed, e.g.
``batch_size=0 must be a positive integer``. They raise ``ValueError`` for a value of the
right kind but outside what is allowed, and also for a value of the wrong kind (a string
where a number is needed), so callers catch one exception type.

Numbers: ``bool`` is refused (``True`` is not a batch size), strings are refused even when
they hold a number (``"8"``), and NaN and infinities are refused unless a check says
otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from numbers import Integral, Real
from pathlib import Path

__all__ = [
    "choice",
    "finite_number",
    "fraction",
    "non_negative_int",
    "non_negative_number",
    "path",
    "positive_int",
    "positive_number",
    "sentences",
    "text",
]


def _is_integer(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise a ValueError naming ``name`` and ``value``.

    Examples
    --------
    >>> positive_int("batch_size", 8)
    8
    >>> positive_int("batch_size", 0)
    Traceback (most recent call last):
    ...
    ValueError: batch_size=0 must be a positive integer
    """
    if not _is_integer(value) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return int(value)


def non_negative_int(name: str, value) -> int:
    """Return ``value`` as an int of 0 or more.

    Examples
    --------
    >>> non_negative_int("warmup", 0)
    0
    >>> non_negative_int("warmup", -1)
    Traceback (most recent call last):
    ...
    ValueError: warmup=-1 must be an integer of 0 or more
    """
    if not _is_integer(value) or value < 0:
        raise ValueError(f"{name}={value!r} must be an integer of 0 or more")
    return int(value)


def finite_number(name: str, value) -> float:
    """Return ``value`` as a float; refuse NaN, infinities, bools and strings.

    Examples
    --------
    >>> finite_number("offset", -2)
    -2.0
    >>> finite_number("offset", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: offset=nan must be a finite number
    """
    if not _is_real(value) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number")
    return float(value)


def positive_number(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float above 0 (finite unless ``allow_inf``).

    Examples
    --------
    >>> positive_number("seconds", 1.5)
    1.5
    >>> positive_number("seconds", "2")
    Traceback (most recent call last):
    ...
    ValueError: seconds='2' must be a positive number
    """
    ok = _is_real(value) and value > 0 and (math.isfinite(value) or allow_inf)
    if not ok:
        raise ValueError(f"{name}={value!r} must be a positive number")
    return float(value)


def non_negative_number(name: str, value) -> float:
    """Return ``value`` as a finite float of 0 or more.

    Examples
    --------
    >>> non_negative_number("overlap_s", 0)
    0.0
    >>> non_negative_number("overlap_s", -0.5)
    Traceback (most recent call last):
    ...
    ValueError: overlap_s=-0.5 must be a finite number of 0 or more
    """
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}={value!r} must be a finite number of 0 or more")
    return float(value)


def fraction(name: str, value, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """Return ``value`` as a float between 0 and 1; the ends are allowed unless said otherwise.

    Examples
    --------
    >>> fraction("overlap", 0.25)
    0.25
    >>> fraction("utilisation", 0, allow_zero=False)
    Traceback (most recent call last):
    ...
    ValueError: utilisation=0 must be a fraction above 0 and at most 1
    """
    ok = _is_real(value) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    ok = ok and (value <= 1 if allow_one else value < 1)
    if not ok:
        wording = {
            (True, True): "from 0 to 1",
            (False, True): "above 0 and at most 1",
            (True, False): "of 0 or more and below 1",
            (False, False): "above 0 and below 1",
        }[(allow_zero, allow_one)]
        raise ValueError(f"{name}={value!r} must be a fraction {wording}")
    return float(value)


def flag(name: str, value) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 1, 0, "yes" or None).

    Examples
    --------
    >>> flag("verbose", False)
    False
    >>> flag("verbose", 1)
    Traceback (most recent call last):
    ...
    ValueError: verbose=1 must be True or False
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be True or False")
    return value


def text(name: str, value, *, optional: bool = False) -> str | None:
    """Return ``value`` if it is a str (free text: a label, a note); None too if ``optional``.

    Examples
    --------
    >>> text("label", "matmul")
    'matmul'
    >>> text("label", 42)
    Traceback (most recent call last):
    ...
    ValueError: label=42 must be a str
    """
    if not isinstance(value, str) and not (optional and value is None):
        raise ValueError(f"{name}={value!r} must be a str{' or None' if optional else ''}")
    return value


def choice(name: str, value, allowed: Collection):
    """Return ``value`` if it is one of ``allowed``; otherwise say what is.

    Examples
    --------
    >>> choice("precision", "bf16", ("fp32", "bf16"))
    'bf16'
    >>> choice("precision", "fp64", ("fp32", "bf16"))
    Traceback (most recent call last):
    ...
    ValueError: precision='fp64' is not known; use one of 'fp32', 'bf16'
    """
    allowed = tuple(allowed)

    def same(a) -> bool:
        try:
            return isinstance(value, bool) == isinstance(a, bool) and bool(value == a)
        except (TypeError, ValueError):  # e.g. an array compared with a string
            return False

    if not any(same(a) for a in allowed):
        raise ValueError(
            f"{name}={value!r} is not known; use one of {', '.join(map(repr, allowed))}"
        )
    return value


def path(name: str, value, *, must_exist: bool = False, kind: str | None = None) -> Path:
    """Return ``value`` (a ``str`` or path-like) as a :class:`~pathlib.Path`.

    ``must_exist`` refuses a path that is not there; ``kind`` of ``"file"`` or ``"dir"``
    also requires that kind of thing.

    Examples
    --------
    >>> path("out", "results/x.json").name
    'x.json'
    >>> path("folder", 3)
    Traceback (most recent call last):
    ...
    ValueError: folder=3 must be a path (a str or pathlib.Path)
    """
    if isinstance(value, bool) or not isinstance(value, (str, Path)) or value == "":
        raise ValueError(f"{name}={value!r} must be a path (a str or pathlib.Path)")
    result = Path(value)
    if kind == "dir" and not result.is_dir():
        raise ValueError(f"{name}={str(value)!r} is not a directory")
    if kind == "file" and not result.is_file():
        raise ValueError(f"{name}={str(value)!r} is not a file")
    if must_exist and not result.exists():
        raise ValueError(f"{name}={str(value)!r} does not exist")
    return result


def sentences(name: str, value) -> tuple[str, ...]:
    """Return ``value``, a sequence of sentences (str), as a tuple; refuse a lone string.

    Examples
    --------
    >>> sentences("assumptions", ["Batches fit in memory."])
    ('Batches fit in memory.',)
    >>> sentences("assumptions", "one string")
    Traceback (most recent call last):
    ...
    ValueError: assumptions='one string' must be a sequence of sentences (str), not one string
    """
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(a, str) for a in value)
    ):
        raise ValueError(f"{name}={value!r} must be a sequence of sentences (str), not one string")
    return tuple(value)
