"""A batch-size sweep: throughput and memory per batch size, the knee, the table, the figure.

The mini-batches lab times one training step at batch sizes 1, 2, 4, ... and records the
step's memory. The **knee** is the smallest batch that reaches :data:`KNEE_SHARE` of the
best throughput measured: beyond it a bigger batch costs memory for little extra speed.

See also the chapter *Mini-batches*, ``notebooks/minibatches_lab`` and
``tests/test_lab_reports.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpulab._checks import flag, fraction, non_negative_number, positive_int, positive_number
from gpulab.palette import COLORS

__all__ = ["KNEE_SHARE", "BatchSweep", "knee"]

#: The knee is the smallest batch reaching this share of the best throughput.
KNEE_SHARE = 0.9


def knee(batches: Sequence[int], rates: Sequence[float], share: float = KNEE_SHARE) -> int:
    """The smallest batch whose throughput reaches ``share`` of the best one.

    Examples
    --------
    >>> knee([1, 2, 4, 8], [100, 180, 300, 310])
    4
    """
    fraction("share", share, allow_zero=False)
    if len(batches) != len(rates) or not batches:
        raise ValueError(f"batches={batches!r} and rates={rates!r} must be non-empty and "
                         "of the same length")
    best = max(rates)
    return next(b for b, r in zip(batches, rates, strict=True) if r >= share * best)


@dataclass(frozen=True)
class BatchSweep:
    """Throughput and memory of one training step at each batch size.

    Attributes
    ----------
    rows : sequence of (int, float, float)
        ``(batch size, samples per second, memory bytes)``, batch sizes increasing.
    measured_memory : bool
        True when the memory was measured (a GPU's peak), False when modelled.

    Examples
    --------
    >>> s = BatchSweep([(1, 100.0, 2**20), (2, 180.0, 2**21), (4, 300.0, 2**22)], False)
    >>> s.knee, s.best, s.memory_kind
    (4, 300.0, 'modelled peak')
    """

    rows: Sequence[tuple[int, float, float]]
    measured_memory: bool

    def __post_init__(self) -> None:
        flag("measured_memory", self.measured_memory)
        if not self.rows:
            raise ValueError("rows=[] is empty: at least one batch size is needed")
        for i, (b, rate, memory) in enumerate(self.rows):
            positive_int(f"rows[{i}] batch size", b)
            positive_number(f"rows[{i}] samples per second", rate)
            non_negative_number(f"rows[{i}] memory bytes", memory)
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))

    @property
    def batches(self) -> list[int]:
        return [b for b, _, _ in self.rows]

    @property
    def rates(self) -> list[float]:
        return [r for _, r, _ in self.rows]

    @property
    def best(self) -> float:
        """The best throughput measured, samples per second."""
        return max(self.rates)

    @property
    def knee(self) -> int:
        """The smallest batch reaching :data:`KNEE_SHARE` of the best throughput."""
        return knee(self.batches, self.rates)

    @property
    def memory_kind(self) -> str:
        return "measured peak" if self.measured_memory else "modelled peak"

    def table(self) -> str:
        """One row per batch size, the knee marked, and where it lies."""
        lines = [f"{'batch':>6} {'samples/s':>12} {'memory (' + self.memory_kind + ')':>24}"]
        for b, rate, memory in self.rows:
            lines.append(f"{b:>6} {rate:>12,.0f} {memory / 2**20:>20.1f} MiB"
                         + ("  <- knee" if b == self.knee else ""))
        lines.append(f"knee: batch {self.knee} is the smallest reaching {KNEE_SHARE:.0%} of the "
                     f"best throughput ({self.best:,.0f}/s)")
        if self.knee == self.batches[-1]:
            lines.append("Throughput was still rising at the largest batch tried: the knee lies "
                         "beyond it.")
        return "\n".join(lines)

    def plot(self, predictions: Mapping[str, Sequence[float]] | None = None,
             prediction_batches: Sequence[int] = (), *, where: str = "cpu"):
        """Throughput (measured, and predictions labelled as such) and memory against the
        batch size, the knee marked on both; returns the figure.

        Parameters
        ----------
        predictions : mapping, optional
            ``label -> samples per second`` at each of ``prediction_batches``.
        prediction_batches : sequence of int
            The batch sizes of the predictions.
        where : str
            ``"cpu"`` or ``"cuda"``: where the sweep ran (its colour and label).
        """
        import matplotlib.pyplot as plt

        predictions = dict(predictions or {})
        fig, (ax_rate, ax_mem) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        color = COLORS["cpu" if where == "cpu" else "gpu"]
        ax_rate.plot(self.batches, self.rates, "o-", color=color, label=f"measured here ({where})")
        for (label, rates), style in zip(predictions.items(), ("--", ":", "-."), strict=False):
            ax_rate.plot(prediction_batches, rates, style, color=COLORS["prediction"],
                         label=f"{label} (prediction)")
        ax_rate.annotate(f"knee: batch {self.knee}", (self.knee, self.best), xytext=(6, -14),
                         textcoords="offset points")
        ax_rate.set(yscale="log", xlabel="batch size", ylabel="samples per second",
                    title="Throughput")
        ax_rate.set_xscale("log", base=2)
        ax_rate.legend(fontsize=8)
        ax_mem.plot(self.batches, [m / 2**20 for _, _, m in self.rows], "o-", color=color)
        ax_mem.set(xlabel="batch size (linear scale)", ylabel=f"MiB ({self.memory_kind})",
                   title="Training memory", ylim=(0, None))
        for ax in (ax_rate, ax_mem):
            ax.axvline(self.knee, color="0.4", lw=1)
        return fig
