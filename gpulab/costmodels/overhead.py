"""The overhead model: a step of many small operator calls costs a fixed time per call, plus
the time of its work.

    t(b) = a + c·b

for a step on ``b`` items (samples, games): ``a`` is what every step pays whatever its size,
``n_calls`` times the cost of one call (Python, the framework's dispatch and, on a GPU, a
kernel launch); ``c`` is the time of one item's work. Code is **overhead-bound** while
``a`` dominates: doubling ``b`` then barely changes the time (the capstone chapter's
"double the batch" test), and more items per step come almost free. Only from
``b ≈ a / c`` does the work show in the time.

On a GPU the CPU queues kernels while earlier ones run, so the two costs can overlap: the
time lies between ``max(a, c·b)`` (full overlap) and ``a + c·b`` (none, as when every call
waits for the GPU). :meth:`OverheadModel.time_s` gives either.

``a`` and ``c`` come from two timings of the same step (:meth:`OverheadModel.fit`, as the
capstone lab does), or from a device's ceilings (:meth:`OverheadModel.from_ceilings`): ``c``
is then the roofline time of one item's FLOPs and bytes, a lower bound, and ``a`` needs the
cost of one call, which no datasheet gives: measure it (``gl.measure_ceilings`` reports it
as ``overhead_s``) or state a range. :func:`size_for_ratio` picks the size at which the work
has grown to a given multiple of the fixed cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpulab._checks import (
    choice,
    flag,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.costmodels.roofline import Ceilings
from gpulab.hardware.precision import PEAK_PRECISIONS
from gpulab.hardware.specs import DeviceSpec

__all__ = ["OverheadModel", "size_for_ratio"]


def _numbers(name: str, values, *, positive: bool) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise wrong_type(name, values, "a list of numbers")
    check = positive_number if positive else non_negative_number
    return [check(f"{name}[{i}]", v) for i, v in enumerate(values)]


@dataclass(frozen=True)
class OverheadModel:
    """``t(b) = fixed_s + per_item_s · b``: a step's time on ``b`` items.

    Attributes
    ----------
    fixed_s : float
        Seconds every step pays whatever its size (0 or more): its calls' fixed costs.
    per_item_s : float
        Seconds of work per item (0 or more).
    note : str
        Where the two numbers came from.

    Examples
    --------
    >>> m = OverheadModel(fixed_s=5e-3, per_item_s=20e-9)   # 5 ms of calls, 20 ns a game
    >>> round(m.time_s(65536) * 1e3, 2), round(m.ratio(16, 65536), 2)
    (6.31, 1.26)
    >>> m.work_bound_size()                                # the work equals the calls
    250000.0
    >>> round(m.time_s(2**20, overlap=True) * 1e3, 2)       # CPU and GPU overlapping
    20.97
    """

    fixed_s: float
    per_item_s: float
    note: str = ""

    def __post_init__(self) -> None:
        non_negative_number("fixed_s", self.fixed_s)
        non_negative_number("per_item_s", self.per_item_s)
        text("note", self.note)

    def time_s(self, batch_size: float, *, overlap: bool = False) -> float:
        """Seconds of one step on ``batch_size`` items: ``a + c·b``, or with ``overlap``
        (calls queued while earlier work runs) the least it can be, ``max(a, c·b)``."""
        batch_size = non_negative_number("batch_size", batch_size)
        work_s = self.per_item_s * batch_size
        return max(self.fixed_s, work_s) if flag("overlap", overlap) else self.fixed_s + work_s

    def ratio(self, small: float, large: float) -> float:
        """``t(large) / t(small)``: how much longer the larger step takes (no overlap)."""
        small = positive_number("small", small)
        large = positive_number("large", large)
        return self.time_s(large) / self.time_s(small)

    def work_bound_size(self, factor: float = 1.0) -> float:
        """Items at which the work is ``factor`` times the fixed cost: ``factor · a / c``
        (infinite when there is no work per item)."""
        factor = positive_number("factor", factor)
        if self.per_item_s == 0:
            return math.inf
        return factor * self.fixed_s / self.per_item_s

    @classmethod
    def fit(cls, sizes: Sequence[float], times_s: Sequence[float]) -> OverheadModel:
        """The line through the smallest and the largest of measured step times.

        As the capstone lab does with a batch of 1 and of 64: two points far apart. Noise
        cannot make either number negative: a negative slope becomes 0 and a negative
        intercept 0.

        Parameters
        ----------
        sizes : list of numbers
            Items per step, each above 0; at least two different ones.
        times_s : list of numbers
            Measured seconds per step, one for each size, each above 0.

        Examples
        --------
        >>> m = OverheadModel.fit([16, 256, 4096], [4.4e-3, 22e-3, 32.8e-3])
        >>> round(m.fixed_s * 1e3, 2), round(m.per_item_s * 1e6, 2)
        (4.29, 6.96)
        """
        sizes = _numbers("sizes", sizes, positive=True)
        times_s = _numbers("times_s", times_s, positive=True)
        if len(sizes) != len(times_s):
            raise ValueError(
                f"sizes and times_s must have the same length, not {len(sizes)} and "
                f"{len(times_s)}"
            )
        if len(set(sizes)) < 2:
            raise ValueError(f"sizes={sizes!r} must hold at least two different sizes")
        small = min(range(len(sizes)), key=sizes.__getitem__)
        large = max(range(len(sizes)), key=sizes.__getitem__)
        slope = (times_s[large] - times_s[small]) / (sizes[large] - sizes[small])
        per_item_s = max(slope, 0.0)
        fixed_s = max(times_s[small] - per_item_s * sizes[small], 0.0)
        return cls(
            fixed_s,
            per_item_s,
            note=f"fitted through {sizes[small]:g} and {sizes[large]:g} items",
        )

    @classmethod
    def from_ceilings(
        cls,
        spec: Ceilings | DeviceSpec | str,
        *,
        n_calls: int,
        call_s: float,
        flops_per_item: float,
        bytes_per_item: float,
        precision: str = "fp32",
    ) -> OverheadModel:
        """The model from a device's ceilings and a stated cost per call (a prediction).

        Parameters
        ----------
        spec : Ceilings, DeviceSpec or str
            Measured ceilings (``precision`` is then theirs), or a registry entry
            (datasheet ceilings).
        n_calls : int
            Operator calls one step makes, whatever its size. Positive.
        call_s : float
            Seconds one call costs (above 0): measured (``gl.measure_ceilings``), or an
            assumption to state.
        flops_per_item, bytes_per_item : float
            Work one item adds to a step (0 or more): its FLOPs and the bytes it moves.
        precision : str
            Which peak the FLOPs run at, one of :data:`gpulab.PEAK_PRECISIONS`.

        Examples
        --------
        >>> m = OverheadModel.from_ceilings("H100 SXM", n_calls=400, call_s=5e-6,
        ...                                 flops_per_item=5e4, bytes_per_item=4e4)
        >>> round(m.fixed_s * 1e3, 3), round(m.per_item_s * 1e9, 2)   # ms, ns per item
        (2.0, 11.94)
        """
        n_calls = positive_int("n_calls", n_calls)
        call_s = positive_number("call_s", call_s)
        choice("precision", precision, PEAK_PRECISIONS)
        roofs = spec if isinstance(spec, Ceilings) else Ceilings.from_spec(spec, precision)
        roof = roofs.predict(flops_per_item, bytes_per_item)
        return cls(
            n_calls * call_s,
            max(roof.compute_s, roof.memory_s),
            note=(
                f"{n_calls} calls x {call_s * 1e6:g} us; work at the {roof.bound} roof of "
                f"{roof.device_name} ({precision})"
            ),
        )


def size_for_ratio(
    model: OverheadModel, first: float, ratio: float, candidates: Sequence[int]
) -> int | None:
    """The smallest candidate size whose step the model puts at ``ratio`` times the first's.

    Parameters
    ----------
    model : OverheadModel
    first : number
        The size compared against (above 0).
    ratio : number
        How many times longer than ``t(first)`` the step must take (above 1).
    candidates : list of int
        Sizes to choose from, each positive, in any order.

    Returns
    -------
    int or None
        The smallest candidate ``n`` with ``t(n) ≥ ratio · t(first)``; the largest candidate
        when none reaches it; None when there are no candidates.

    Examples
    --------
    >>> m = OverheadModel(fixed_s=5e-3, per_item_s=20e-9)
    >>> size_for_ratio(m, 16, 4, [2**18, 2**19, 2**20, 2**21])
    1048576
    >>> size_for_ratio(m, 16, 4, []) is None
    True
    """
    if not isinstance(model, OverheadModel):
        raise wrong_type("model", model, "an OverheadModel")
    first = positive_number("first", first)
    ratio = positive_number("ratio", ratio)
    if ratio <= 1:
        raise ValueError(f"ratio={ratio!r} must be above 1")
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        raise wrong_type("candidates", candidates, "a list of positive integers")
    sizes = sorted(positive_int(f"candidates[{i}]", n) for i, n in enumerate(candidates))
    if not sizes:
        return None
    target = ratio * model.time_s(first)
    return next((n for n in sizes if model.time_s(n) >= target), sizes[-1])
