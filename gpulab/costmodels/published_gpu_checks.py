"""The course's models against measurements others published on real GPUs, leave-one-out.

Each row of :func:`gpulab.costmodels.published_gpu.published_gpu_measurements` is predicted
by the model of its family from the datasheet figures in the registry and an *achievable
fraction* learned from the **other** rows: never from the row itself, nor from a repeat of
the same configuration (the same device, model, format and GPU count measured again).

* **matmul**: datasheet peak × the median fraction of peak that other accelerators of the
  same architecture reached (all others where none shares it), as
  :mod:`gpulab.costmodels.published_mfu` does for MFU.
* **decode**: bytes read per token (the weights once, as stored, plus the KV cache) over
  the memory bandwidth × the median fraction that other single-GPU rows with the same
  weight format reached. int8 and int4 weights are read in 8 and 4 bits and widened to
  16 bits for the arithmetic; int4 in groups of 32 also reads a 16-bit scale and a 16-bit
  zero point per group, 5 bits per weight in all. Over ``p`` GPUs (tensor parallelism)
  each GPU reads ``1/p`` of the bytes, and every layer adds two all-reduces of one token's
  activations, timed with the α–β model (:func:`gpulab.allreduce_time`) over the system's
  link; the latency α is learned from the other tensor-parallel rows.
* **attention**: FlashAttention-2's FLOPs run at the median fraction of the 16-bit peak
  that the other rows of the same GPU, head dimension and mask reached (the FLOP count is
  the one the charts divide by, so the prediction is a throughput).
* **allreduce**: the ring's bus bandwidth is the link's one-way bandwidth × the median
  fraction that rows on the *other* systems reached.

The error of a row is ``predicted / measured - 1``: negative means the model predicted less
than was measured. A row the registry cannot predict (no datasheet peak for its precision)
is listed, with the reason, instead of scored.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpulab.costmodels.comms import allreduce_time
from gpulab.costmodels.published_gpu import (
    DECODE_MODELS,
    FAMILIES,
    PublishedMeasurement,
    published_gpu_measurements,
)
from gpulab.hardware.interconnects import resolve_link
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "DECODE_CONTEXT_TOKENS",
    "TARGET",
    "FamilySummary",
    "GpuCheck",
    "Unpredictable",
    "check_family",
    "decode_bytes_per_token",
    "summarise",
]

#: Median |error| the course aims for per model family (decode and matmul).
TARGET = 0.15

#: Tokens in the KV cache, on average, while gpt-fast generates: a 5-token prompt and 200
#: new tokens (its ``--max_new_tokens`` default), so 5 + 200 / 2.
DECODE_CONTEXT_TOKENS = 105

#: The all-reduce algorithm of the tensor-parallel model: the ring, the course's default.
ALLREDUCE_ALGORITHM = "ring"

_BITS_PER_WEIGHT = {"bf16": 16, "int8": 8, "int4": 4 + 2 * 16 / 32}


@dataclass(frozen=True)
class GpuCheck:
    """One published row predicted from the other rows.

    Attributes
    ----------
    measurement : PublishedMeasurement
    predicted : float
        In the measurement's unit.
    basis : str
        Which other rows the achievable fraction (and latency) came from.
    basis_rows : tuple of PublishedMeasurement
        Those rows; never ``measurement`` itself.
    """

    measurement: PublishedMeasurement
    predicted: float
    basis: str
    basis_rows: tuple[PublishedMeasurement, ...]

    def __post_init__(self) -> None:
        if self.measurement in self.basis_rows:
            raise ValueError("basis_rows must not hold the row being predicted")

    @property
    def error(self) -> float:
        """``predicted / measured - 1``."""
        return self.predicted / self.measurement.value - 1


@dataclass(frozen=True)
class Unpredictable:
    """A row the registry cannot predict, and why."""

    measurement: PublishedMeasurement
    reason: str


@dataclass(frozen=True)
class FamilySummary:
    """Rows scored, median |error| and the worst row of one model family."""

    family: str
    checks: tuple[GpuCheck, ...]
    unpredictable: tuple[Unpredictable, ...]

    @property
    def n_rows(self) -> int:
        """Rows scored."""
        return len(self.checks)

    @property
    def median_abs_error(self) -> float:
        """Median of |error| over the scored rows."""
        return statistics.median(abs(c.error) for c in self.checks)

    @property
    def worst(self) -> GpuCheck:
        """The row with the largest |error|."""
        return max(self.checks, key=lambda c: abs(c.error))


def _configuration(m: PublishedMeasurement) -> tuple:
    return (m.family, m.spec, m.precision, m.n_gpus, m.model, m.weight_format, m.seq_len,
            m.head_dim, m.causal, m.link)  # fmt: skip


def _others(row, rows, keep: Callable[[PublishedMeasurement], bool] = lambda m: True):
    return [m for m in rows if _configuration(m) != _configuration(row) and keep(m)]


def _peak(m: PublishedMeasurement) -> float | None:
    spec = resolve_spec("spec", m.spec).per_gpu()
    return spec.peak_flops.get(m.precision)


def _median_fraction(basis, fraction) -> float:
    return statistics.median(fraction(m) for m in basis)


# --- matmul -----------------------------------------------------------------------------


def _matmul(rows):
    scored, unscored = [], []
    usable = [m for m in rows if _peak(m)]

    def fraction(m):
        return m.value * 1e12 / _peak(m)

    for row in rows:
        if not _peak(row):
            reason = f"the registry has no dense {row.precision.upper()} peak for {row.spec}"
            unscored.append(Unpredictable(row, reason))
            continue
        arch = resolve_spec("spec", row.spec).architecture
        same = [m for m in usable if m.precision == row.precision
                and resolve_spec("spec", m.spec).architecture == arch]  # fmt: skip
        basis = _others(row, same)
        label = f"same architecture ({arch})"
        if not basis:
            basis = _others(row, [m for m in usable if m.precision == row.precision])
            label = f"all other {row.precision.upper()} rows"
        predicted = _median_fraction(basis, fraction) * _peak(row) / 1e12
        scored.append(GpuCheck(row, predicted, label, tuple(basis)))
    return scored, unscored


# --- decode -----------------------------------------------------------------------------


def decode_bytes_per_token(m: PublishedMeasurement) -> float:
    """Bytes one GPU reads per generated token: its share of the weights and the KV cache.

    Examples
    --------
    >>> from gpulab.costmodels.published_gpu import published_gpu_measurements
    >>> from gpulab.costmodels.published_gpu_checks import decode_bytes_per_token
    >>> row = published_gpu_measurements(family="decode")[0]     # Llama-2-7B, bf16, 1 GPU
    >>> round(decode_bytes_per_token(row) / 1e9, 2)
    13.19
    """
    model = DECODE_MODELS[m.model]
    weights = model.weights_read_per_token * _BITS_PER_WEIGHT[m.weight_format] / 8
    kv = model.layers * 2 * model.kv_heads * model.head_dim * DECODE_CONTEXT_TOKENS * 2
    return (weights + kv) / m.n_gpus


def _bandwidth(m: PublishedMeasurement) -> float:
    return resolve_spec("spec", m.spec).per_gpu().memory_bandwidth


def _memory_fraction(m: PublishedMeasurement) -> float:
    return m.value * decode_bytes_per_token(m) / _bandwidth(m)


def _allreduces(m: PublishedMeasurement, alpha_s: float) -> float:
    """Seconds per token of the two all-reduces per layer of one token's activations."""
    model = DECODE_MODELS[m.model]
    link = resolve_link("link", m.link)
    one = allreduce_time(
        model.hidden * 2,
        m.n_gpus,
        alpha_s=alpha_s,
        bandwidth_bytes_per_s=link.bandwidth,
        algorithm=ALLREDUCE_ALGORITHM,
    )
    return 2 * model.layers * one


def _implied_alpha(m: PublishedMeasurement, fraction: float) -> float:
    """The latency that makes the model give row ``m``'s time, with the memory fraction given."""
    reading = decode_bytes_per_token(m) / (fraction * _bandwidth(m))
    per_alpha = _allreduces(m, 1.0) - _allreduces(m, 0.0)
    return (1 / m.value - reading - _allreduces(m, 0.0)) / per_alpha


def _decode(rows):
    single = [m for m in rows if m.n_gpus == 1]
    parallel = [m for m in rows if m.n_gpus > 1]

    def fraction_for(row):
        same = _others(row, single, lambda m: m.weight_format == row.weight_format)
        if same:
            return _median_fraction(same, _memory_fraction), same, f"{row.weight_format} rows"
        return _median_fraction(_others(row, single), _memory_fraction), single, "all rows"

    scored = []
    for row in single:
        fraction, basis, label = fraction_for(row)
        predicted = fraction * _bandwidth(row) / decode_bytes_per_token(row)
        scored.append(GpuCheck(row, predicted, f"single-GPU {label}", tuple(basis)))
    for row in parallel:
        fraction, basis, label = fraction_for(row)
        alphas = [_implied_alpha(m, fraction_for(m)[0]) for m in _others(row, parallel)]
        alpha = max(statistics.median(alphas), 0.0)
        step = decode_bytes_per_token(row) / (fraction * _bandwidth(row)) + _allreduces(row, alpha)
        basis_rows = (*basis, *_others(row, parallel))
        label = (
            f"bandwidth from single-GPU {label}; all-reduce latency "
            f"{alpha * 1e6:.1f} µs from the other tensor-parallel rows"
        )
        scored.append(GpuCheck(row, 1 / step, label, basis_rows))
    return scored, []


# --- attention --------------------------------------------------------------------------


def _attention(rows):
    scored = []

    def fraction(m):
        return m.value * 1e12 / _peak(m)

    for row in rows:
        alike = (row.spec, row.head_dim, row.causal)
        basis = [m for m in _others(row, rows) if (m.spec, m.head_dim, m.causal) == alike]
        predicted = _median_fraction(basis, fraction) * _peak(row) / 1e12
        label = f"same GPU, head dimension and mask ({len(basis)} other lengths)"
        scored.append(GpuCheck(row, predicted, label, tuple(basis)))
    return scored, []


# --- all-reduce -------------------------------------------------------------------------


def _allreduce(rows):
    scored = []

    def fraction(m):
        return m.value * 1e9 / resolve_link("link", m.link).bandwidth

    for row in rows:
        basis = [m for m in rows if m.spec != row.spec]
        predicted = _median_fraction(basis, fraction) * resolve_link("link", row.link).bandwidth
        scored.append(GpuCheck(row, predicted / 1e9, "rows on the other systems", tuple(basis)))
    return scored, []


_CHECKS = {"matmul": _matmul, "decode": _decode, "attention": _attention,
           "allreduce": _allreduce}  # fmt: skip


def check_family(family: str, rows: Sequence[PublishedMeasurement] | None = None):
    """Predict every row of ``family`` leave-one-out.

    Parameters
    ----------
    family : str
        One of ``"matmul"``, ``"decode"``, ``"attention"``, ``"allreduce"``.
    rows : sequence of PublishedMeasurement, optional
        Default: the family's rows of the package's table.

    Returns
    -------
    FamilySummary

    Examples
    --------
    >>> from gpulab.costmodels.published_gpu_checks import check_family
    >>> matmul = check_family("matmul")
    >>> all(c.measurement not in c.basis_rows for c in matmul.checks)
    True
    >>> sorted({u.measurement.spec for u in matmul.unpredictable})   # no dense peak in the registry
    ['B300', 'MI355X']
    """
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not known; use one of {', '.join(FAMILIES)}")
    chosen = published_gpu_measurements(family=family) if rows is None else tuple(rows)
    wrong = [m for m in chosen if m.family != family]
    if wrong:
        raise ValueError(f"rows holds a {wrong[0].family} row; pass only {family} rows")
    scored, unscored = _CHECKS[family](list(chosen))
    return FamilySummary(family, tuple(scored), tuple(unscored))


def summarise() -> dict[str, FamilySummary]:
    """:func:`check_family` for every family, in the order of ``FAMILIES``."""
    return {family: check_family(family) for family in FAMILIES}
