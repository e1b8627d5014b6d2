"""A measured claim shown with the model-accuracy record the book's accuracy page reads.

Where a lab compares a cost model with a measurement, the page "How good are the course's
models?" (``gpulab.course.accuracy``) reads the comparison from the recorded lab: the output
that shows the claim carries, in its metadata under ``gpulab_accuracy``, the model's name,
the metric, the error as a fraction and, optionally, a target, the number of cases and a
line of detail. :func:`show_with_accuracy` displays the claim with that record, so a lab
cell makes the claim and one call.

Examples
--------
>>> from gpulab.labkit.accuracy_note import accuracy_record
>>> accuracy_record(model="expert all-to-all bytes", metric="|error|", value=-0.07, n=2)
{'model': 'expert all-to-all bytes', 'metric': '|error|', 'value': 0.07, 'n': 2}
"""

from __future__ import annotations

from gpulab._checks import text as check_text
from gpulab._checks import wrong_type
from gpulab.labkit.claims import Claim

__all__ = ["ACCURACY_KEY", "accuracy_record", "show_with_accuracy"]

#: The output-metadata key (``gpulab.course.accuracy.ACCURACY_KEY`` reads the same one).
ACCURACY_KEY = "gpulab_accuracy"


def accuracy_record(*, model: str, metric: str, value: float, target: float | None = None,
                    n: int | None = None, detail: str | None = None) -> dict:
    """The accuracy record of one comparison; ``value`` is stored as its magnitude.

    Parameters
    ----------
    model : str
        The cost model's name as the accuracy page lists it.
    metric : str
        What ``value`` is, e.g. ``"|error|"`` or ``"largest |error|"``.
    value : float
        The error as a fraction (0.07 for 7%); its sign is dropped.
    target : float, optional
        The error the model aims to stay under, as a fraction.
    n : int, optional
        How many cases the comparison covers.
    detail : str, optional
        One line saying what was compared with what.

    Examples
    --------
    >>> accuracy_record(model="m", metric="|error|", value="7%")
    Traceback (most recent call last):
    ...
    TypeError: value='7%' must be a number: the error as a fraction (0.07 for 7%), not str
    """
    check_text("model", model)
    check_text("metric", metric)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type("value", value, "a number: the error as a fraction (0.07 for 7%)")
    record = {"model": model, "metric": metric, "value": abs(float(value))}
    if target is not None:
        record["target"] = target
    if n is not None:
        record["n"] = n
    if detail is not None:
        record["detail"] = check_text("detail", detail)
    return record


def show_with_accuracy(claim: Claim, **record) -> None:
    """Display ``claim`` as Markdown, its output carrying :func:`accuracy_record` ``(**record)``."""
    from IPython.display import Markdown, display

    if not isinstance(claim, Claim):
        raise wrong_type("claim", claim, "a Claim, as gl.claim(...) returns")
    display(Markdown(claim.text), metadata={ACCURACY_KEY: accuracy_record(**record)})
