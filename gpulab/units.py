"""One way to write durations, byte counts and rates for a reader.

Every module of gpulab that shows a duration, a size or a rate to a person formats it
here, so the same quantity reads the same in every chapter and lab.
"""

from __future__ import annotations

from gpulab._checks import finite_number, flag, non_negative_number, wrong_type

__all__ = ["format_bytes", "format_duration", "format_rate"]

_MINUTE, _HOUR, _DAY, _YEAR = 60.0, 3600.0, 86400.0, 365.25 * 86400.0


def format_duration(seconds: float) -> str:
    """A duration in the unit a person would say, from nanoseconds to years.

    Three significant figures below 100 s; one decimal in minutes, hours, days and years.

    Examples
    --------
    >>> import gpulab as gl
    >>> [gl.format_duration(s) for s in (2.5e-6, 0.0123, 42, 810, 7200, 3 * 86400)]
    ['2.5 µs', '12.3 ms', '42 s', '13.5 min', '2.0 h', '3.0 days']
    >>> gl.format_duration(2 * 365.25 * 86400)
    '2.0 years'
    """
    seconds = non_negative_number("seconds", seconds)
    if seconds == 0:
        return "0 s"
    if seconds < 1:
        for unit, scale in (("ms", 1e-3), ("µs", 1e-6)):
            if seconds >= scale:
                return f"{seconds / scale:.3g} {unit}"
        return f"{seconds / 1e-9:.3g} ns"
    if seconds < 100:
        return f"{seconds:.3g} s"
    if seconds < 100 * _MINUTE:
        return f"{seconds / _MINUTE:.1f} min"
    if seconds < 48 * _HOUR:
        return f"{seconds / _HOUR:.1f} h"
    if seconds < _YEAR:
        return f"{seconds / _DAY:.1f} days"
    return f"{seconds / _YEAR:.1f} years"


def format_bytes(n_bytes: float, *, binary: bool = False) -> str:
    """A byte count with an SI prefix (kB, MB, GB, TB; the registry's units), 3 figures.

    ``binary=True`` uses KiB, MiB, GiB, TiB instead (powers of 1024), as memory
    allocators and ``nvidia-smi`` report.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.format_bytes(80e9), gl.format_bytes(512), gl.format_bytes(3 * 2**30, binary=True)
    ('80 GB', '512 B', '3 GiB')
    """
    n_bytes = non_negative_number("n_bytes", n_bytes)
    flag("binary", binary)
    base, units = (
        (1024.0, ("KiB", "MiB", "GiB", "TiB", "PiB"))
        if binary
        else (
            1000.0,
            ("kB", "MB", "GB", "TB", "PB"),
        )
    )
    if n_bytes < base:
        return f"{n_bytes:.0f} B"
    value = n_bytes / base
    for unit in units[:-1]:
        if value < base:
            return f"{value:.3g} {unit}"
        value /= base
    return f"{value:.3g} {units[-1]}"


def format_rate(value: float, unit: str) -> str:
    """A rate such as FLOP/s or B/s with an SI prefix, 3 significant figures.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.format_rate(312e12, "FLOP/s"), gl.format_rate(2.039e12, "B/s")
    ('312 TFLOP/s', '2.04 TB/s')
    >>> gl.format_rate(1234.5, "samples/s")
    '1.23 ksamples/s'
    """
    value = finite_number("value", value)
    if not isinstance(unit, str):
        raise wrong_type("unit", unit, "a unit such as 'FLOP/s' or 'B/s'")
    if not unit:
        raise ValueError(f"unit={unit!r} must be a unit such as 'FLOP/s' or 'B/s'")
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
