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

The question, the hint, the solution and the choices are *templates*: plain strings whose
computed figures are ``str.format`` fields filled from ``values``
(``"A {d:,} × {d:,} matrix"``, ``values=dict(d=4096)``). So the text is the same in every
build and a translation can be looked up by it (``locale/zh_CN/LC_MESSAGES/selfchecks.po``,
extracted by :mod:`gpulab.course.selfchecks`); the numbers are filled in after translating,
formatted the same way in both languages. :meth:`SelfCheck.to_html` takes the translating
function; a value that is a word (a string with a letter) is translated too, a number never.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

from gpulab._checks import finite_number, positive_int, text, wrong_type

__all__ = ["SelfCheck", "format_answer", "scientific", "selfcheck", "translatable"]

LABEL = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: Most significant digits an answer is shown with.
MAX_DIGITS = 10
# The words of the widget itself, translated in ``locale/<language>/LC_MESSAGES/ui.po``
# (``book/_ext/selfcheck.py`` lists them for the extraction).
PREDICT = "Predict, then check."
CHECK = "Check"
HINT = "Hint"
WORKED_SOLUTION = "Worked solution"
ANSWER = "Answer:"
PICK_ONE = "Pick one"
YOUR_ANSWER = "Your answer"
YOUR_ANSWER_IN = "Your answer, in {unit}"
NO_SCRIPT = (
    "Work it out, then open the solution to compare: checking an answer in the page needs "
    "JavaScript."
)
TOLERANCE_RELATIVE = "Answers within {tolerance} of the worked answer count as right."
TOLERANCE_WHOLE = "The answer is a whole number (answers within ± {tolerance} count as right)."
TOLERANCE_ABSOLUTE = "Answers within ± {tolerance} of the worked answer count as right."
#: What the page's script says (``static/selfcheck.js``), keyed by the ``data-text-`` attribute
#: that carries a translation; the script says the English where there is none.
SCRIPT_TEXT = {
    "pick": "Pick an answer first.",
    "right": "Right.",
    "wrong": "Not this one.",
    "type": "Type a number{unit}, e.g. 12.5.",
    "in-unit": " (in {unit})",
    "within-rel": "within {tolerance}%",
    "within-abs": "within ± {tolerance}",
    "right-number": "Right: {typed} is {stated} of the answer.",
    "too-high": "Not quite: {typed} is too high (not {stated} of the answer).",
    "too-low": "Not quite: {typed} is too low (not {stated} of the answer).",
    "with-hint": "{message} Hint: {hint}",
}
#: The widget's own words, for the translations.
WIDGET_TEXT = (
    PREDICT, CHECK, HINT, WORKED_SOLUTION, ANSWER, PICK_ONE, YOUR_ANSWER, YOUR_ANSWER_IN,
    NO_SCRIPT, TOLERANCE_RELATIVE, TOLERANCE_WHOLE, TOLERANCE_ABSOLUTE, *SCRIPT_TEXT.values(),
)  # fmt: skip

# The page's script compares |typed - answer| with the tolerance; this much slack absorbs
# the rounding of the figures written into the HTML (12 significant digits).
ROUNDING_SLACK = 1e-9


def _identity(text: str) -> str:
    return text


def translatable(text: str) -> bool:
    """Whether a template or a value is words to translate (it has a letter), not a number.

    >>> translatable("memory bandwidth"), translatable("2,048"), translatable("{n:,}")
    (True, False, False)
    >>> translatable("2.83 × 10¹⁸")
    False
    """
    words = re.sub(r"\{[^{}]*\}", "", text)
    return any(unicodedata.category(c).startswith("L") for c in words)


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
    values: tuple[tuple[str, float | str], ...] = ()

    # ------------------------------------------------------------------- templates

    def fill(self, template: str, _=_identity) -> str:
        """``template`` translated by ``_`` with :attr:`values` filled in (words translated,
        numbers formatted as the template says)."""
        values = {k: _(v) if isinstance(v, str) and translatable(v) else v
                  for k, v in self.values}  # fmt: skip
        return _(template).format(**values)

    @property
    def messages(self) -> list[str]:
        """The templates and word values a translation gives, in the order the page shows them
        (numbers and templates without words are left out)."""
        found = [self.question, *(self.choices or ()), self.hint, *self.solution]
        found += [v for _k, v in self.values if isinstance(v, str)]
        return [m for m in dict.fromkeys(found) if translatable(m)]

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
        return self._tolerance_text()

    def _tolerance_text(self, _=_identity) -> str:
        if self.kind == "choice":
            return ""
        if self.rel_tol is not None:
            return _(TOLERANCE_RELATIVE).format(tolerance=_percent(self.rel_tol))
        tol = format_answer(self.abs_tol, digits=self.digits)
        if float(self.answer).is_integer() and self.abs_tol < 1:
            return _(TOLERANCE_WHOLE).format(tolerance=tol)
        return _(TOLERANCE_ABSOLUTE).format(tolerance=f"{tol}{self._unit_suffix}")

    @property
    def answer_text(self) -> str:
        """The answer as a reader reads it: rounded, with its unit."""
        return self._answer_text()

    def _answer_text(self, _=_identity) -> str:
        if self.kind == "choice":
            return self.fill(self.answer, _)
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

    def _form(self, ids: dict[str, str], _=_identity) -> str:
        button = f'<button type="submit" class="gl-sc-submit">{_(CHECK)}</button>'
        if self.kind == "number":
            prompt = (
                _(YOUR_ANSWER_IN).format(unit=html.escape(self.unit))
                if self.unit
                else _(YOUR_ANSWER)
            )
            return (
                f'<form class="gl-sc-form" method="dialog" hidden>'
                f'<label for="{ids["input"]}">{prompt}</label> '
                f'<input id="{ids["input"]}" class="gl-sc-input" type="text" '
                f'inputmode="decimal" autocomplete="off" spellcheck="false" '
                f'aria-describedby="{ids["question"]} {ids["tolerance"]}"> '
                f"{button}</form>"
            )
        options = "".join(
            f'<label class="gl-sc-option"><input type="radio" name="{ids["input"]}" '
            f'value="{i}"> {_inline(self.fill(c, _))}</label>'
            for i, c in enumerate(self.choices)
        )
        return (
            f'<form class="gl-sc-form gl-sc-choices" method="dialog">'
            f'<fieldset aria-labelledby="{ids["question"]}">'
            f"<legend>{_(PICK_ONE)}</legend>{options}</fieldset>"
            f'<span class="gl-sc-js-only" hidden>{button}</span></form>'
        )

    def to_html(self, _=_identity) -> str:
        """The question as HTML: the form the page's script checks, the hint and solution.

        ``_`` translates a text (``text -> text``): the templates, the word values and the
        labels; a text it does not know comes back as it is. By default, English.
        """
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
        if _ is not _identity:
            data += "".join(
                f' data-text-{key}="{html.escape(_(text))}"' for key, text in SCRIPT_TEXT.items()
            )
        tolerance = (
            f'<p class="gl-sc-tolerance" id="{ids["tolerance"]}">{self._tolerance_text(_)}</p>'
            if self.kind == "number"
            else ""
        )
        nojs = f'<p class="gl-sc-nojs">{_(NO_SCRIPT)}</p>'
        solution = "".join(f"<p>{_inline(self.fill(p, _))}</p>" for p in self.solution)
        return (
            f'<div class="gl-selfcheck" id="{base}" {data}>'
            f'<p class="gl-sc-question" id="{ids["question"]}">'
            f'<span class="gl-sc-tag">{_(PREDICT)}</span> {_inline(self.fill(self.question, _))}'
            f"</p>{tolerance}{self._form(ids, _)}"
            f'<p class="gl-sc-result" id="{ids["result"]}" role="status" aria-live="polite"></p>'
            f"{nojs}"
            f'<details class="gl-sc-hint"><summary>{_(HINT)}</summary>'
            f"<p>{_inline(self.fill(self.hint, _))}</p></details>"
            f'<details class="gl-sc-solution"><summary>{_(WORKED_SOLUTION)}</summary>{solution}'
            f'<p class="gl-sc-answer"><strong>{_(ANSWER)}</strong> '
            f"{_inline(self._answer_text(_))}</p></details></div>"
        )

    def __str__(self) -> str:
        lines = [f"{PREDICT} {self.fill(self.question)}"]
        if self.choices:
            lines += [f"  - {self.fill(c)}" for c in self.choices]
        if self.tolerance_text:
            lines.append(self.tolerance_text)
        lines += [f"{HINT}: {self.fill(self.hint)}", f"{WORKED_SOLUTION}:"]
        lines += [self.fill(p) for p in self.solution]
        lines.append(f"{ANSWER} {self.answer_text}")
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
    values: dict | None = None,
) -> SelfCheck:
    """A "predict, then check" question whose answer the course's models computed.

    Parameters
    ----------
    label : str
        Unique on its page: lower-case words joined by hyphens (``"mb-add-intensity"``); the
        HTML ids are made from it.
    question : str
        What the reader predicts, with every figure they need. `Backticks` mark code. Like
        ``hint``, ``solution`` and ``choices``, a template: its computed figures are
        ``str.format`` fields (``{d:,}``) filled from ``values``, never an f-string, so that
        the Chinese edition can translate the text (a literal brace is doubled: ``{{``).
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
    values : dict, optional
        The figures the templates name: a number (formatted as its field says, the same in
        every language) or a word (a str, translated like the templates).

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
    >>> r = selfcheck(
    ...     "matvec-bound",
    ...     "A BF16 product `W @ x` with `W` of {d:,} × {d:,}: what limits it?",
    ...     "memory bandwidth",
    ...     choices=["memory bandwidth", "compute (FLOP/s)"],
    ...     hint="Compare its intensity with the ridge point.",
    ...     solution="{i:.2f} FLOP/byte is far below the ridge point.",
    ...     values=dict(d=4096, i=0.99951),
    ... )
    >>> print(r.fill(r.question))
    A BF16 product `W @ x` with `W` of 4,096 × 4,096: what limits it?
    >>> r.messages[-1]
    '{i:.2f} FLOP/byte is far below the ridge point.'
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
    filled = _values(values)
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
        return _filled(SelfCheck(
            label, question, answer, hint, paragraphs, choices=options, digits=digits,
            values=filled,
        ))  # fmt: skip
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
    return _filled(SelfCheck(
        label, question, answer, hint, paragraphs, rel_tol, abs_tol, unit, digits=digits,
        values=filled,
    ))  # fmt: skip


def _values(values) -> tuple[tuple[str, float | str], ...]:
    """``values`` checked: identifiers naming numbers or non-empty strings."""
    if values is None:
        return ()
    if not isinstance(values, dict):
        raise wrong_type("values", values, "a dict of names to numbers or str")
    for name, value in values.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"values has the key {name!r}; the keys must be Python names")
        if not (_is_real(value) or isinstance(value, str)):
            raise wrong_type(f"values[{name!r}]", value, "a number or a str")
    return tuple(values.items())


def _filled(check: SelfCheck) -> SelfCheck:
    """``check``, once every template has been filled in from its values (a clear error
    naming the template if one cannot be)."""
    for template in (check.question, check.hint, *check.solution, *(check.choices or ())):
        try:
            check.fill(template)
        except (KeyError, IndexError, ValueError) as error:
            names = sorted(k for k, _v in check.values)
            raise ValueError(
                f"the template {template!r} cannot be filled from values={names}: {error!r} "
                "(name every figure in values; double a literal brace: {{ }})"
            ) from error
    return check
