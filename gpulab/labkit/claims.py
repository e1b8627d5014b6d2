"""Sentences about a measurement, written by the cell that measured.

A lab's Markdown is typed once, but its numbers change with every re-recording: a sentence
such as "the add barely benefits from more cores" can be true on one machine and false on
the next. The course's rule: a sentence that states what was measured is either generated
from the measured values (Markdown output of the measuring cell, which nbval compares) or
guarded by an ``assert`` in that cell, with a tolerance and its reason. The measuring cell
carries the tag ``measured-claim``; ``tests/test_claims.py`` checks that every cell so
tagged emits Markdown or asserts.

:func:`claim` does both at once: it refuses a sentence whose condition the data does not
meet, and returns the sentence as Markdown for the notebook to display. Chapters, which run
at build time on whatever machine builds the book, quote a lab's recorded measurement with
:func:`recorded_number` (and MyST-NB's ``glue``) instead of typing it, and show a whole
recorded output (a profiler's table) with :func:`recorded_output`.

A claim on timings (``claim(..., timings=True)``) is judged where the lab is recorded, and
printed rather than judged where the machine is known to be shared: the test suite runs the
labs beside its other tests, so there a refused claim on timings measures the load, not the
course. The environment variable ``GPULAB_TIMING_CLAIMS`` (:data:`TIMING_CLAIMS_ENV`) says
which: ``"judge"`` (the default; ``python -m gpulab record`` always sets it) or ``"print"``
(the suite's ``conftest.py`` sets it). Every other claim is judged everywhere.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gpulab._checks import flag, wrong_type
from gpulab._checks import path as check_path
from gpulab._checks import text as check_text

__all__ = ["Claim", "ClaimError", "claim", "recorded_number", "recorded_output"]

CLAIM_TAG = "measured-claim"

#: The environment variable that says what a claim on timings the data refuse does.
TIMING_CLAIMS_ENV = "GPULAB_TIMING_CLAIMS"
#: Its values: raise, as every claim does (the default, and a recording's), or print.
TIMING_CLAIMS_MODES = ("judge", "print")
#: Starts the line printed for a claim on timings that is printed instead of judged.
UNJUDGED_TIMING_CLAIM = "[shared machine] claim on timings not judged:"


def timing_claims_mode() -> str:
    """``"judge"`` or ``"print"``: what a refused claim on timings does in this process.

    Read from the environment variable :data:`TIMING_CLAIMS_ENV` (``GPULAB_TIMING_CLAIMS``);
    ``"judge"`` when it is not set.

    Examples
    --------
    >>> import os
    >>> os.environ.get(TIMING_CLAIMS_ENV, "judge") == timing_claims_mode()
    True
    """
    mode = os.environ.get(TIMING_CLAIMS_ENV, "judge")
    if mode not in TIMING_CLAIMS_MODES:
        raise ValueError(
            f"the environment variable {TIMING_CLAIMS_ENV}={mode!r} must be "
            f"{' or '.join(map(repr, TIMING_CLAIMS_MODES))}"
        )
    return mode


class ClaimError(AssertionError):
    """A sentence about a measurement that the measured values do not support."""


@dataclass(frozen=True)
class Claim:
    """A sentence about a measurement; a notebook displays it as Markdown.

    Attributes
    ----------
    text : str
        The sentence, in Markdown.
    """

    text: str

    def __post_init__(self) -> None:
        _sentence(self.text)

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def _sentence(text) -> str:
    """``text`` if it is a str with something in it: a TypeError or a ValueError otherwise."""
    if not check_text("text", text).strip():
        raise ValueError(f"text={text!r} must be a non-empty string")
    return text


def claim(
    text: str, holds: bool = True, *, reason: str | None = None, timings: bool = False
) -> Claim:
    """Return ``text`` as Markdown, or raise if the data does not support it.

    Parameters
    ----------
    text : str
        The sentence, usually an f-string of the measured values. Non-empty.
    holds : bool, default True
        The condition, computed from the data, under which ``text`` is true. Pass the
        comparison itself (``ratio < 1.5``), not a constant; leave it out only when
        ``text`` merely reports values.
    reason : str, optional
        Why the condition and its tolerance are what they are; shown when it fails. Give
        one whenever ``holds`` is a comparison.
    timings : bool, default False
        ``holds`` compares timings taken in this run, which other programs' load can
        change. Where ``GPULAB_TIMING_CLAIMS=print`` (the test suite, on a shared machine)
        a refused claim on timings is printed, starting with :data:`UNJUDGED_TIMING_CLAIM`,
        and returned instead of raised; a recording judges it.

    Returns
    -------
    Claim
        Displayed by Jupyter as Markdown (``text/markdown``) when it is the value of a cell.

    Raises
    ------
    ClaimError
        (an ``AssertionError``) when ``holds`` is false: the text would be wrong for this
        run, so the lab stops rather than say it (a claim on timings under
        ``GPULAB_TIMING_CLAIMS=print`` is printed instead).
    ValueError
        When ``timings`` is true and ``GPULAB_TIMING_CLAIMS`` is neither ``"judge"`` nor
        ``"print"``.

    Examples
    --------
    >>> speedup = 1.7
    >>> print(claim(f"The add ran {speedup:.1f}x faster on all cores.",
    ...             speedup > 1.2, reason="more than noise on a shared 2-core machine"))
    The add ran 1.7x faster on all cores.
    >>> claim("The add barely benefits.", speedup < 1.2,  # doctest: +ELLIPSIS
    ...       reason="within noise")
    Traceback (most recent call last):
    ...
    gpulab.labkit.claims.ClaimError: the data does not support: 'The add barely ...' (within noise)
    """
    _sentence(text)
    check_text("reason", reason, optional=True)
    flag("timings", timings)
    mode = timing_claims_mode() if timings else "judge"
    if not isinstance(holds, bool):
        # A NumPy comparison gives numpy.bool_; a number or a string here is a mistake.
        if type(holds).__module__ != "numpy" or type(holds).__name__ not in ("bool", "bool_"):
            raise wrong_type("holds", holds, "True or False: the condition the text needs")
        holds = bool(holds)
    if not holds:
        why = f" ({reason})" if reason else ""
        refusal = f"the data does not support: {text!r}{why}"
        if mode == "print":
            print(UNJUDGED_TIMING_CLAIM, refusal)
            return Claim(text)
        raise ClaimError(refusal)
    return Claim(text)


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        data = output.get("data", {})
        text = data.get("text/markdown", data.get("text/plain", ""))
    return "".join(text) if isinstance(text, list) else text


def recorded_number(lab: str | Path, pattern: str) -> float:
    """A number from a lab's recorded outputs, for a chapter to quote instead of typing it.

    Parameters
    ----------
    lab : path
        The lab notebook (``.ipynb``) whose committed outputs hold the number.
    pattern : str
        A regular expression with one group that captures the number, matched against the
        text of each output in turn (streams, then Markdown or plain text); the first match
        counts.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        When ``lab`` is not a path or ``pattern`` is not a str.
    ValueError
        When ``pattern`` is not a regular expression or has no group, or no output of the
        lab matches it (the lab's output changed: the chapter must change with it).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
    ...     {"output_type": "stream", "name": "stdout", "text": ["compile: 3.9 s\\n"]}]}]}
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "x_lab.ipynb"
    >>> _ = lab.write_text(json.dumps(nb))
    >>> recorded_number(lab, r"compile: ([0-9.]+) s")
    3.9
    """
    found = _first_match(lab, pattern, groups=1)
    return float(found.group(1).replace(",", ""))


def recorded_output(lab: str | Path, pattern: str) -> str:
    """The whole text of a lab's recorded output, for a chapter to show instead of retyping it.

    Use it for an output that a reader should see as it was printed (a profiler's table, a
    report); quote a single number with :func:`recorded_number`.

    Parameters
    ----------
    lab : path
        The lab notebook (``.ipynb``) whose committed outputs hold the text.
    pattern : str
        A regular expression that picks the output: the first output (streams, then
        Markdown or plain text) whose text it matches is returned whole.

    Returns
    -------
    str
        The output's text, as the lab printed it.

    Raises
    ------
    TypeError
        When ``lab`` is not a path or ``pattern`` is not a str.
    ValueError
        When ``pattern`` is not a regular expression, or no output of the lab matches it.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
    ...     {"output_type": "stream", "name": "stdout", "text": ["Name  Calls\\n", "mm  4\\n"]}]}]}
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "x_lab.ipynb"
    >>> _ = lab.write_text(json.dumps(nb))
    >>> print(recorded_output(lab, r"Name +Calls"))
    Name  Calls
    mm  4
    <BLANKLINE>

    See also
    --------
    The chapter "Capstone: make a slow training loop fast" shows the capstone lab's profiler
    table this way.
    """
    return _first_match(lab, pattern, groups=0).string


def _first_match(lab, pattern, *, groups: int) -> re.Match:
    """The first match of ``pattern`` in the text of a lab's recorded outputs."""
    lab = check_path("lab", lab, kind="file")
    if not isinstance(pattern, str):
        raise wrong_type("pattern", pattern, "a regular expression (a str)")
    try:
        regex = re.compile(pattern)
    except re.error as err:
        raise ValueError(f"pattern={pattern!r} is not a regular expression: {err}") from None
    if regex.groups < groups:
        raise ValueError(f"pattern={pattern!r} must have a group that captures the number")
    cells = json.loads(Path(lab).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        for output in cell.get("outputs", []):
            found = regex.search(_output_text(output))
            if found:
                return found
    raise ValueError(f"pattern={pattern!r} matches no recorded output of lab={str(lab)!r}")
