"""Sentences the course writes from data, worded as a person would write them.

A count put into a sentence reads "none", "one", "three", not "0", "1", "3"; a noun after it
agrees with it. Chapters use :func:`count_phrase` wherever a count from data goes into prose,
so that the zero and one cases read like the others.

See also ``tests/test_wording.py``.
"""

from __future__ import annotations

from gpulab._checks import non_negative_int, text

__all__ = ["count_phrase"]

_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def count_phrase(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` things in words: "no announced parts", "one announced part", "12 parts".

    Counts below ten are spelled out; the noun is singular for one and plural otherwise.

    Parameters
    ----------
    count : int
        How many; zero or more.
    singular : str
        The noun phrase for one, e.g. ``"announced part"``.
    plural : str, optional
        The noun phrase for any other count; default ``singular + "s"``.

    Examples
    --------
    >>> count_phrase(0, "announced part")
    'no announced parts'
    >>> count_phrase(1, "announced part")
    'one announced part'
    >>> count_phrase(2, "GPU")
    'two GPUs'
    >>> count_phrase(12, "chip")
    '12 chips'
    """
    non_negative_int("count", count)
    text("singular", singular)
    if not singular.strip():
        raise ValueError(f"singular={singular!r} must name the thing counted")
    if plural is None:
        plural = singular + "s"
    text("plural", plural)
    number = _WORDS[count] if count < len(_WORDS) else f"{count:,}"
    return f"{number} {singular if count == 1 else plural}"
