"""Argument checks shared by gpulab's modules, so every bad input reads the same way."""

from __future__ import annotations

from numbers import Integral

__all__ = ["positive_int"]


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
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return int(value)
