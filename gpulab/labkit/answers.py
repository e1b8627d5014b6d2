"""Check a learner's numeric answer to an exercise, with a tolerance and a hint.

Labs put each exercise in two cells: one where the learner writes ``answer = ...`` (in the
instructor copy it holds the worked solution and is tagged ``solution``), and one that calls
:func:`check`. The expected value is computed by an independent route where one exists
(a FLOP counter, the spec registry, a measurement), so the check cell does not simply
print the answer.

An unanswered exercise (``answer = None``) is not an error: the lab still runs to the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from gpulab._checks import finite_number, flag, non_negative_number, text

__all__ = ["CheckResult", "check"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of :func:`check`; true when the answer is within tolerance.

    Attributes
    ----------
    name : str
        What was checked, as shown to the learner.
    answer : float or None
        The learner's answer (None when not answered yet).
    expected : float
        The expected value.
    ok : bool
        Whether ``answer`` is within tolerance of ``expected``, as :func:`math.isclose`
        decides with ``rtol`` and ``atol``; False when there is no answer.
    message : str
        The sentence shown to the learner.
    rtol, atol : float
        The relative and absolute tolerance the answer was checked with.

    Raises
    ------
    ValueError
        When ``ok`` does not agree with ``answer``, ``expected`` and the tolerances.
    """

    name: str
    answer: float | None
    expected: float
    ok: bool
    message: str
    rtol: float = 0.01
    atol: float = 0.0

    def __post_init__(self) -> None:
        text("name", self.name)
        if self.answer is not None:
            finite_number("answer", self.answer)
        finite_number("expected", self.expected)
        flag("ok", self.ok)
        text("message", self.message)
        non_negative_number("rtol", self.rtol)
        non_negative_number("atol", self.atol)
        within = self.answer is not None and math.isclose(
            self.answer, self.expected, rel_tol=self.rtol, abs_tol=self.atol
        )
        if self.ok != within:
            raise ValueError(
                f"ok={self.ok!r} does not agree with answer={self.answer!r} and "
                f"expected={self.expected!r}: the answer is "
                f"{'within' if within else 'not within'} rtol={self.rtol!r}, "
                f"atol={self.atol!r} of it"
            )

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        # check() has already printed the message; showing the dataclass again is noise.
        pass


def _format(value: float, unit: str, exact: bool = False) -> str:
    """``1.229e+04`` to four digits; ``12,288`` for a whole number when ``exact``."""
    number = f"{int(value):,}" if exact and float(value).is_integer() else f"{value:.4g}"
    return number + (f" {unit}" if unit else "")


def check(
    answer,
    expected: float,
    *,
    rtol: float = 0.01,
    atol: float = 0.0,
    name: str = "answer",
    unit: str = "",
    hint: str | None = None,
    quiet: bool = False,
) -> CheckResult:
    """Compare ``answer`` with ``expected`` and tell the learner how it went.

    Parameters
    ----------
    answer : float, int or None
        The learner's answer; None means "not answered yet". Anything that is not a finite
        number gets a sentence saying so, not an exception.
    expected : float
        The expected value (finite).
    rtol, atol : float
        Relative and absolute tolerance, as in :func:`math.isclose` (finite, 0 or more).
    name : str
        What the answer is, for the message (e.g. ``"FLOPs of the forward pass"``).
    unit : str
        Unit shown after numbers in the message. Numbers are shown to four significant
        digits; where the check is exact (``rtol`` and ``atol`` 0) and ``expected`` is a
        whole number, a whole number is shown in full, with thousands separators.
    hint : str, optional
        Shown when the answer is wrong, to point at the idea without giving it away.
    quiet : bool
        Do not print; only return the result.

    Returns
    -------
    CheckResult
        True when the answer is within tolerance.

    Raises
    ------
    TypeError
        For an ``expected`` or a tolerance that is not a number, a ``name``, ``unit`` or
        ``hint`` that is not text, or a ``quiet`` that is not True or False.
    ValueError
        For a tolerance that is negative, NaN or infinite, or an ``expected`` that is NaN or
        infinite. These are mistakes in the lab, not in the learner's answer.

    Examples
    --------
    >>> import gpulab as gl
    >>> bool(gl.check(2 * 64**3, expected=524288, name="matmul FLOPs", quiet=True))
    True
    >>> _ = gl.check(64**3, expected=524288, name="matmul FLOPs", hint="multiply and add")
    Not yet: matmul FLOPs = 2.621e+05, expected within 1% of a different value \
(yours is 0.5× it). Hint: multiply and add

    An exact count is shown in full:

    >>> _ = gl.check(12288, expected=12288, rtol=0, name="bytes moved")
    Correct: bytes moved = 12,288 (expected 12,288, within 0%).
    """
    rtol = non_negative_number("rtol", rtol)
    atol = non_negative_number("atol", atol)
    expected = finite_number("expected", expected)
    text("name", name)
    text("unit", unit)
    text("hint", hint, optional=True)
    flag("quiet", quiet)

    if answer is None or answer is Ellipsis:
        message = f"Not answered yet: set answer to your value for {name} and run this cell again."
        result = CheckResult(name, None, float(expected), False, message, rtol, atol)
    elif isinstance(answer, bool) or not isinstance(answer, Real):
        message = (
            f"{name} should be a number, but answer={answer!r} is a {type(answer).__name__}. "
            "Write it as a plain number, e.g. 1.5e9."
        )
        result = CheckResult(name, None, float(expected), False, message, rtol, atol)
    elif not math.isfinite(answer):
        message = (
            f"{name} should be a finite number, but answer={answer!r}. "
            "Look for a division by zero or an overflow."
        )
        result = CheckResult(name, None, float(expected), False, message, rtol, atol)
    else:
        answer = float(answer)
        ok = math.isclose(answer, expected, rel_tol=rtol, abs_tol=atol)
        # An exact check of a whole number is a count: shown in full, not to four digits.
        exact = rtol == 0 and atol == 0 and float(expected).is_integer()
        tolerance = f"{rtol:.0%}" if atol == 0 else f"{rtol:.0%} or {_format(atol, unit)}"
        if ok:
            message = (
                f"Correct: {name} = {_format(answer, unit, exact)} "
                f"(expected {_format(expected, unit, exact)}, within {tolerance})."
            )
        else:
            ratio = f" (yours is {answer / expected:.2g}× it)" if expected != 0 else ""
            message = (
                f"Not yet: {name} = {_format(answer, unit, exact)}, expected within {tolerance} "
                f"of a different value{ratio}."
            )
            if hint:
                message += f" Hint: {hint}"
        result = CheckResult(name, answer, float(expected), ok, message, rtol, atol)
    if not quiet:
        print(result.message)
    return result
