"""Self-check questions for the book's chapters: predict a number, then check it in the page.

A chapter cell computes the answer with the course's own models (the spec registry, the cost
models), then calls :func:`selfcheck` with the question, that answer, the tolerance stated to
the reader, a hint and the worked solution. The cell's output is a small HTML form. In the
rendered book a short script (``book/_ext/static/selfcheck.js``, added by the ``selfcheck``
extension to the pages that have a question) checks what the reader types, with no Python
kernel: right or wrong, the tolerance, and on a wrong answer the hint. Without JavaScript the
question, the tolerance, the hint and the solution still read as text, each in a ``<details>``
element the reader opens.

Two kinds of question:

* a number: ``answer`` is a real number, judged within ``rel_tol`` (a fraction of the
  answer: 0.05 accepts anything within 5 %) or ``abs_tol`` (in the answer's unit);
* a choice: ``choices`` lists the options and ``answer`` is the right one.

The rule that judges a number is :meth:`SelfCheck.accepts`; the page's script applies the
same one to the same figures, which the HTML carries as ``data-`` attributes.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

from gpulab._checks import finite_number, positive_int, text, wrong_type

__all__ = ["SelfCheck", "format_answer", "scientific", "selfcheck"]

LABEL = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: Most significant digits an answer is shown with.
MAX_DIGITS = 10
# The page's script compares |typed - answer| with the tolerance; this much slack absorbs
# the rounding of the figures written into the HTML (12 significant digits).
ROUNDING_SLACK = 1e-9


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _prose(name: str, value) -> str:
    """A non-empty string of prose (question, hint)."""
    text(name, value)
    if not value.strip():
        raise ValueError(f"{name}={value!r} must be a non-empty sentence")
    return value.strip()


def _paragraphs(name: str, value) -> tuple[str, ...]:
    """A string, or a sequence of strings, as non-empty paragraphs."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(p, str) for p in value):
        raise wrong_type(name, value, "a str or a sequence of str (paragraphs)")
    paragraphs = tuple(p.strip() for p in value if p.strip())
    if not paragraphs:
        raise ValueError(f"{name}={value!r} must hold at least one non-empty paragraph")
    return paragraphs


def _inline(value: str) -> str:
    """Escaped HTML of ``value``, with `backticked` spans as code."""
    parts = html.escape(value, quote=False).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: show it as it is
        return html.escape(value, quote=False)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def format_answer(value: float, digits: int = 3) -> str:
    """``value`` for a reader: ``digits`` significant figures, thousands separated.

    Examples
    --------
    >>> format_answer(0.083333)
    '0.0833'
    >>> format_answer(295.2)
    '295'
    >>> format_answer(123456.7)
    '123,457'
    >>> format_answer(2.5, digits=4)
    '2.5'
    """
    value = finite_number("value", value)
    digits = positive_int("digits", digits)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    out = f"{rounded:,.{decimals}f}"
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 3) -> str:
    """``value`` in scientific notation for a reader: ``2.83 × 10¹⁸``.

    Examples
    --------
    >>> scientific(2.8336e18)
    '2.83 × 10¹⁸'
    >>> scientific(-4.5e-7, digits=2)
    '-4.5 × 10⁻⁷'
    >>> scientific(0)
    '0'
    """
    value = finite_number("value", value)
    digits = positive_int("digits", digits)
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _percent(fraction: float) -> str:
    return f"{format_answer(100 * fraction, digits=3)}%"


@dataclass(frozen=True)
class SelfCheck:
    """One "predict, then check" question; displayed in a notebook or a page as HTML.

    Made by :func:`selfcheck`, which checks the arguments; see there for the fields.
    """

    label: str
    question: str
    answer: float | str
    hint: str
    solution: tuple[str, ...]
    rel_tol: float | None = None
    abs_tol: float | None = None
    unit: str | None = None
    choices: tuple[str, ...] | None = None
    digits: int = 3

    @property
    def kind(self) -> str:
        """``"number"`` or ``"choice"``."""
        return "choice" if self.choices is not None else "number"

    @property
    def _unit_suffix(self) -> str:
        if not self.unit:
            return ""
        return self.unit if self.unit == "%" else f" {self.unit}"

    @property
    def tolerance_text(self) -> str:
        """The tolerance as the reader is told it ("" for a choice)."""
        if self.kind == "choice":
            return ""
        if self.rel_tol is not None:
            return f"Answers within {_percent(self.rel_tol)} of the worked answer count as right."
        tol = format_answer(self.abs_tol, digits=self.digits)
        if float(self.answer).is_integer() and self.abs_tol < 1:
            return f"The answer is a whole number (answers within ± {tol} count as right)."
        return f"Answers within ± {tol}{self._unit_suffix} of the worked answer count as right."

    @property
    def answer_text(self) -> str:
        """The answer as a reader reads it: rounded, with its unit."""
        if self.kind == "choice":
            return str(self.answer)
        return f"{format_answer(self.answer, self.digits)}{self._unit_suffix}"

    def accepts(self, value) -> bool:
        """Whether a typed number (or a picked choice) counts as right.

        The page's script applies the same rule to the same figures.
        """
        if self.kind == "choice":
            return value == self.answer
        if not _is_real(value) or not math.isfinite(value):
            return False
        allowed = self.abs_tol if self.abs_tol is not None else self.rel_tol * abs(self.answer)
        return abs(value - self.answer) <= allowed * (1 + ROUNDING_SLACK)

    # ------------------------------------------------------------------- rendering

    def _form(self, ids: dict[str, str]) -> str:
        button = '<button type="submit" class="gl-sc-submit">Check</button>'
        if self.kind == "number":
            unit = f", in {html.escape(self.unit)}" if self.unit else ""
            return (
                f'<form class="gl-sc-form" method="dialog" hidden>'
                f'<label for="{ids["input"]}">Your answer{unit}</label> '
                f'<input id="{ids["input"]}" class="gl-sc-input" type="text" '
                f'inputmode="decimal" autocomplete="off" spellcheck="false" '
                f'aria-describedby="{ids["question"]} {ids["tolerance"]}"> '
                f"{button}</form>"
            )
        options = "".join(
            f'<label class="gl-sc-option"><input type="radio" name="{ids["input"]}" '
            f'value="{i}"> {_inline(c)}</label>'
            for i, c in enumerate(self.choices)
        )
        return (
            f'<form class="gl-sc-form gl-sc-choices" method="dialog">'
            f'<fieldset aria-labelledby="{ids["question"]}">'
            f"<legend>Pick one</legend>{options}</fieldset>"
            f'<span class="gl-sc-js-only" hidden>{button}</span></form>'
        )

    def to_html(self) -> str:
        """The question as HTML: the form the page's script checks, the hint and solution."""
        base = f"gl-sc-{self.label}"
        ids = {k: f"{base}-{k}" for k in ("question", "input", "tolerance", "result")}
        if self.kind == "number":
            data = (
                f'data-kind="number" data-answer="{self.answer!r}" '
                f'data-tolerance="{self.rel_tol if self.rel_tol is not None else self.abs_tol!r}" '
                f'data-tolerance-kind="{"relative" if self.rel_tol is not None else "absolute"}" '
                f'data-unit="{html.escape(self.unit or "")}"'
            )
        else:
            data = f'data-kind="choice" data-answer="{self.choices.index(self.answer)}"'
        tolerance = (
            f'<p class="gl-sc-tolerance" id="{ids["tolerance"]}">{self.tolerance_text}</p>'
            if self.kind == "number"
            else ""
        )
        nojs = (
            '<p class="gl-sc-nojs">Work it out, then open the solution to compare: checking '
            "an answer in the page needs JavaScript.</p>"
        )
        solution = "".join(f"<p>{_inline(p)}</p>" for p in self.solution)
        return (
            f'<div class="gl-selfcheck" id="{base}" {data}>'
            f'<p class="gl-sc-question" id="{ids["question"]}">'
            f'<span class="gl-sc-tag">Predict, then check.</span> {_inline(self.question)}</p>'
            f"{tolerance}{self._form(ids)}"
            f'<p class="gl-sc-result" id="{ids["result"]}" role="status" aria-live="polite"></p>'
            f"{nojs}"
            f'<details class="gl-sc-hint"><summary>Hint</summary><p>{_inline(self.hint)}</p>'
            f"</details>"
            f'<details class="gl-sc-solution"><summary>Worked solution</summary>{solution}'
            f'<p class="gl-sc-answer"><strong>Answer:</strong> {_inline(self.answer_text)}</p>'
            "</details></div>"
        )

    def __str__(self) -> str:
        lines = [f"Predict, then check. {self.question}"]
        if self.choices:
            lines += [f"  - {c}" for c in self.choices]
        if self.tolerance_text:
            lines.append(self.tolerance_text)
        lines += [f"Hint: {self.hint}", "Worked solution:", *self.solution]
        lines.append(f"Answer: {self.answer_text}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/html": self.to_html(), "text/plain": str(self)}


def selfcheck(
    label: str,
    question: str,
    answer: float | str,
    *,
    hint: str,
    solution: str | Sequence[str],
    rel_tol: float | None = None,
    abs_tol: float | None = None,
    unit: str | None = None,
    choices: Sequence[str] | None = None,
    digits: int = 3,
) -> SelfCheck:
    """A "predict, then check" question whose answer the course's models computed.

    Parameters
    ----------
    label : str
        Unique on its page: lower-case words joined by hyphens (``"mb-add-intensity"``); the
        HTML ids are made from it.
    question : str
        What the reader predicts, with every figure they need. `Backticks` mark code.
    answer : float or str
        The computed answer: a number, or for a choice question one of ``choices``.
    hint : str
        Shown when the reader's answer is wrong (and to open at any time).
    solution : str or sequence of str
        The worked solution, one paragraph per string, its numbers computed.
    rel_tol, abs_tol : float, optional
        For a number, exactly one of them: a fraction of the answer (0.05: within 5 %), or
        a margin in the answer's unit. The page states it to the reader.
    unit : str, optional
        The answer's unit as the reader types it ("ms", "GB", "FLOP/byte").
    choices : sequence of str, optional
        The options of a choice question (two or more, distinct).
    digits : int, default 3
        Significant figures of the answer where it is shown.

    Returns
    -------
    SelfCheck
        Shown as an HTML question in a notebook or a page.

    Raises
    ------
    TypeError
        An argument of the wrong type (a string answer without ``choices``, ...).
    ValueError
        A value that is not allowed: a malformed label, both or neither tolerance for a
        number, a tolerance for a choice, a relative tolerance of an answer of 0, an answer
        that is not among the choices.

    Examples
    --------
    >>> q = selfcheck(
    ...     "add-intensity",
    ...     "What is the arithmetic intensity of an FP32 vector add, in FLOP/byte?",
    ...     1 / 12,
    ...     rel_tol=0.05,
    ...     unit="FLOP/byte",
    ...     hint="One FLOP per element; count the bytes read and written.",
    ...     solution="1 FLOP for 3 × 4 bytes: 1/12 FLOP/byte.",
    ... )
    >>> q.accepts(0.083), q.accepts(0.1)
    (True, False)
    >>> q.answer_text
    '0.0833 FLOP/byte'
    >>> selfcheck("x", "Q?", 1.0, hint="h", solution="s")
    Traceback (most recent call last):
    ...
    ValueError: a number answer needs exactly one of rel_tol or abs_tol; got neither

    See also
    --------
    The "Check yourself" section of every chapter of the book.
    """
    text("label", label)
    if not LABEL.match(label):
        raise ValueError(
            f"label={label!r} must be lower-case letters and digits in words joined by "
            "hyphens, e.g. 'mb-add-intensity'"
        )
    question = _prose("question", question)
    hint = _prose("hint", hint)
    paragraphs = _paragraphs("solution", solution)
    digits = positive_int("digits", digits)
    if digits > MAX_DIGITS:
        raise ValueError(f"digits={digits!r} must be at most {MAX_DIGITS}")
    unit = text("unit", unit, optional=True)
    if choices is not None:
        if isinstance(choices, str) or not isinstance(choices, Sequence):
            raise wrong_type("choices", choices, "a sequence of str")
        options = tuple(_prose("choices", c) for c in choices)
        if len(options) < 2 or len(set(options)) != len(options):
            raise ValueError(f"choices={choices!r} must hold two or more distinct options")
        if rel_tol is not None or abs_tol is not None or unit is not None:
            raise ValueError(
                "rel_tol, abs_tol and unit apply to a number answer; a choice question "
                f"takes none of them (got rel_tol={rel_tol!r}, abs_tol={abs_tol!r}, "
                f"unit={unit!r})"
            )
        text("answer", answer)
        if answer not in options:
            raise ValueError(f"answer={answer!r} is not one of the choices {options!r}")
        return SelfCheck(label, question, answer, hint, paragraphs, choices=options, digits=digits)
    if not _is_real(answer):
        raise wrong_type("answer", answer, "a finite number (or one of choices=...)")
    answer = finite_number("answer", answer)
    if (rel_tol is None) == (abs_tol is None):
        given = "both" if rel_tol is not None else "neither"
        raise ValueError(f"a number answer needs exactly one of rel_tol or abs_tol; got {given}")
    if rel_tol is not None:
        rel_tol = finite_number("rel_tol", rel_tol)
        if not 0 < rel_tol < 1:
            raise ValueError(f"rel_tol={rel_tol!r} must be a fraction above 0 and below 1")
        if answer == 0:
            raise ValueError("answer=0 cannot have a relative tolerance; use abs_tol")
    else:
        abs_tol = finite_number("abs_tol", abs_tol)
        if abs_tol <= 0:
            raise ValueError(f"abs_tol={abs_tol!r} must be a positive number")
    if unit is not None and not unit.strip():
        raise ValueError(f"unit={unit!r} must be a non-empty unit or None")
    return SelfCheck(
        label, question, answer, hint, paragraphs, rel_tol, abs_tol, unit, digits=digits
    )
