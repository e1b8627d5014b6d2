"""A lab's verdict on a cost model, shown as Markdown and recorded for the accuracy page.

A lab that compares one of the course's cost models with a measurement states the error in a
sentence and records it for the page "How good are the course's models?"
(``book/model_accuracy.md``), which :mod:`gpulab.course.accuracy` builds from the recorded
labs. :class:`AccuracyClaim` does both: Jupyter shows its sentence, and the output's metadata
holds the record under :data:`ACCURACY_KEY`. :func:`show_with_accuracy` displays a claim with a
record of :func:`accuracy_record`'s form, whose optional fields may be left out.

Examples
--------
>>> accuracy_record(model="expert all-to-all bytes", metric="|error|", value=-0.07, n=2)
{'model': 'expert all-to-all bytes', 'metric': '|error|', 'value': 0.07, 'n': 2}

See also ``tests/test_accuracy_output.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab._checks import non_negative_int, non_negative_number, text, wrong_type
from gpulab._checks import text as check_text
from gpulab.labkit.claims import Claim

__all__ = ["ACCURACY_KEY", "AccuracyClaim", "accuracy_record", "show_with_accuracy"]

#: Output-metadata key under which a measuring cell records its comparison.
ACCURACY_KEY = "gpulab_accuracy"


@dataclass(frozen=True)
class AccuracyClaim:
    """A sentence about a model's measured error, with the error recorded in its metadata.

    Attributes
    ----------
    claim : Claim
        The sentence (already judged by :func:`gpulab.claim`).
    model : str
        The cost model, as :data:`gpulab.course.accuracy.MODELS` keys it (``"roofline"``).
    metric : str
        What ``value`` is, e.g. ``"median |error|"``.
    value : float
        The error as a fraction, zero or more.
    target : float or None
        The accuracy the course states for the model, as a fraction.
    n : int
        How many comparisons ``value`` summarises.
    detail : str
        What was compared, in a few words.

    Examples
    --------
    >>> from gpulab.labkit.claims import claim
    >>> out = AccuracyClaim(claim("Median |error| 12%."), "roofline", "median |error|", 0.12,
    ...                     0.25, 10, "10 kernels")
    >>> data, metadata = out._repr_mimebundle_()
    >>> data["text/markdown"], metadata[ACCURACY_KEY]["value"]
    ('Median |error| 12%.', 0.12)
    """

    claim: Claim
    model: str
    metric: str
    value: float
    target: float | None
    n: int
    detail: str

    def __post_init__(self) -> None:
        if not isinstance(self.claim, Claim):
            raise TypeError(f"claim={self.claim!r} must be a Claim (from gpulab.claim)")
        for name in ("model", "metric", "detail"):
            if not text(name, getattr(self, name)).strip():
                raise ValueError(f"{name}={getattr(self, name)!r} must be a non-empty string")
        non_negative_number("value", self.value)
        if self.target is not None:
            non_negative_number("target", self.target)
        non_negative_int("n", self.n)

    @property
    def record(self) -> dict:
        """The metadata the accuracy page reads: model, metric, value, target, n, detail."""
        return {"model": self.model, "metric": self.metric, "value": float(self.value),
                "target": self.target, "n": self.n, "detail": self.detail}

    @property
    def text(self) -> str:
        return self.claim.text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": self.claim.text}, {ACCURACY_KEY: self.record}

    def __str__(self) -> str:
        return self.claim.text


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
