"""What communication costs: α–β models of collectives and of a data-parallel training step.

A collective over ``p`` ranks (``n_gpus`` in the functions below: one process per GPU)
that moves ``n`` bytes is modelled as a number of message
start-ups, each costing the latency ``α`` (seconds), plus a number of bytes per rank, each
costing ``1/β`` (β = bandwidth, bytes per second)::

    t = a(p) · α + b(p) · n / β

The ring all-reduce, for example, has ``a = 2(p-1)`` and ``b = 2(p-1)/p``: each rank
sends (and receives) ``2(p-1)/p · n`` bytes in ``2(p-1)`` steps, a reduce-scatter followed by
an all-gather (Gibiansky 2017; Thakur, Rabenseifner and Gropp 2005).

Link figures come from ``gpulab/data/interconnects.csv`` (one source URL per row). Every
bandwidth there is **per GPU, one direction** (NVIDIA quotes NVLink and PCIe as
bidirectional totals; those are halved, and the row's ``notes`` say so), because that is
what a ring all-reduce can use and what ``nccl-tests`` reports as bus bandwidth.

Everything is in SI units: bytes, seconds, bytes per second.

See also the chapter "Scaling out: distributed training" (``book/distributed.md``).
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

from gpulab._checks import (
    choice,
    fraction,
    non_negative_number,
    positive_int,
    positive_number,
)

__all__ = [
    "COLLECTIVES",
    "Interconnect",
    "StepTime",
    "allgather_time",
    "allreduce_bytes_per_rank",
    "allreduce_time",
    "broadcast_time",
    "bus_bandwidth",
    "collective_time",
    "dp_step_time",
    "fit_alpha_beta",
    "interconnect",
    "list_interconnects",
    "reduce_scatter_time",
]

_GB = 1e9
_KINDS = ("pcie", "nvlink", "nvswitch", "infiniband")

#: The algorithms each collective's cost model knows.
COLLECTIVES: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "rabenseifner"),
    "allgather": ("ring",),
    "reduce_scatter": ("ring",),
    "broadcast": ("ring", "tree"),
}


# --------------------------------------------------------------------------- interconnects


@dataclass(frozen=True)
class Interconnect:
    """One link technology with its bandwidth, latency where published, and source.

    Attributes
    ----------
    name : str
        Name as in the registry, e.g. ``"NVLink 4 (H100/H200)"``.
    bandwidth_gbs : float
        Bandwidth **per GPU in one direction**, in GB/s (10⁹ bytes/s). Vendor figures
        quoted as bidirectional totals are halved (see ``notes``).
    latency_us : float or None
        Per-message latency in microseconds where a source gives one, else None.
    source_url : str
        The page the figures come from.
    notes : str
        How the figure was derived, and its caveats.
    kind : str
        ``"pcie"``, ``"nvlink"``, ``"nvswitch"`` or ``"infiniband"``.
    year : int or None
        Year of introduction.
    """

    name: str
    bandwidth_gbs: float
    latency_us: float | None
    source_url: str
    notes: str = ""
    kind: str = ""
    year: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name={self.name!r} must be a non-empty str")
        positive_number("bandwidth_gbs", self.bandwidth_gbs)
        if self.latency_us is not None:
            non_negative_number("latency_us", self.latency_us)
        for label in ("source_url", "notes"):
            if not isinstance(getattr(self, label), str):
                raise ValueError(f"{label}={getattr(self, label)!r} must be a str")
        choice("kind", self.kind, ("", *_KINDS))
        if self.year is not None:
            positive_int("year", self.year)

    @property
    def bandwidth(self) -> float:
        """Bandwidth per GPU, one direction, in bytes/s."""
        return self.bandwidth_gbs * _GB

    @property
    def latency_s(self) -> float | None:
        """Per-message latency in seconds, or None where no source gives one."""
        return None if self.latency_us is None else self.latency_us * 1e-6


def _normalise(name: str) -> str:
    text = name.lower().replace("infiniband", "ib")
    text = re.sub(r"(\d)\.0\b", r"\1", text)  # "NVLink 4.0" is NVLink 4
    text = re.sub(r"\bgen\b|gen(?=\d)|\bx16\b|\(4x\)", "", text)
    return re.sub(r"[^a-z0-9]", "", text)


@functools.cache
def _registry() -> tuple[tuple[Interconnect, tuple[str, ...]], ...]:
    text = resources.files("gpulab").joinpath("data/interconnects.csv").read_text("utf-8")
    entries = []
    for row in csv.DictReader(text.splitlines()):
        link = Interconnect(
            name=row["name"],
            bandwidth_gbs=float(row["bandwidth_gbs"]),
            latency_us=float(row["latency_us"]) if row["latency_us"].strip() else None,
            source_url=row["source_url"],
            notes=row["notes"],
            kind=row["kind"],
            year=int(row["year"]) if row["year"].strip() else None,
        )
        keys = {_normalise(row["name"])}
        keys.update(_normalise(a) for a in row["aliases"].split(";") if a.strip())
        entries.append((link, tuple(sorted(keys))))
    return tuple(entries)


def list_interconnects(kind: str | None = None) -> list[Interconnect]:
    """Every link in the registry, slowest kind first, as listed in ``interconnects.csv``.

    Parameters
    ----------
    kind : {"pcie", "nvlink", "nvswitch", "infiniband"}, optional
        Keep only this kind of link.

    Examples
    --------
    >>> import gpulab as gl
    >>> [(link.name, link.bandwidth_gbs) for link in gl.list_interconnects("pcie")]
    [('PCIe Gen3 x16', 15.75), ('PCIe Gen4 x16', 31.5), ('PCIe Gen5 x16', 63.0)]
    """
    if kind is not None:
        choice("kind", kind, _KINDS)
    return [link for link, _ in _registry() if kind is None or link.kind == kind]


def interconnect(name: str) -> Interconnect:
    """Look a link up by a forgiving name: ``"PCIe 4"``, ``"nvlink4"``, ``"IB NDR"``.

    Case, spaces, punctuation, ``"Gen"``, ``"x16"`` and a trailing ``".0"`` do not matter.

    Parameters
    ----------
    name : str
        Registry name or one of its aliases (see ``interconnects.csv``).

    Returns
    -------
    Interconnect

    Raises
    ------
    ValueError
        If no link has that name; the message lists the names there are.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.interconnect("NVLink 4").bandwidth_gbs      # 900 GB/s bidirectional, halved
    450.0
    >>> gl.interconnect("InfiniBand NDR").name
    'InfiniBand NDR (4x)'
    """
    return _lookup("name", name)


def _lookup(param: str, name) -> Interconnect:
    """The registry link called ``name``; errors name the caller's parameter ``param``."""
    choices = ", ".join(repr(link.name) for link, _ in _registry())
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{param}={name!r} must be a link name; choices: {choices}")
    wanted = _normalise(name)
    for link, keys in _registry():
        if wanted in keys:
            return link
    all_keys = {key: link.name for link, keys in _registry() for key in keys}
    close = difflib.get_close_matches(wanted, list(all_keys), n=3, cutoff=0.6)
    close_names = list(dict.fromkeys(all_keys[c] for c in close))
    hint = f" Did you mean {', '.join(map(repr, close_names))}?" if close_names else ""
    raise ValueError(f"{param}={name!r}: no interconnect called {name!r}.{hint} Choices: {choices}")


# --------------------------------------------------------------------------- collectives


def _finite(value: float, inputs: str) -> float:
    """``value`` if it is a finite number; valid but extreme inputs can overflow a float."""
    if not math.isfinite(value):
        raise ValueError(f"{inputs} overflow a float (the result would be {value}); check units")
    return value


def _coefficients(collective: str, p: int, algorithm: str) -> tuple[float, float]:
    """(a, b) such that the collective takes ``a·α + b·n/β`` on ``p`` ranks."""
    choice("collective", collective, COLLECTIVES)
    allowed = COLLECTIVES[collective]
    if not isinstance(algorithm, str) or algorithm not in allowed:
        raise ValueError(
            f"algorithm={algorithm!r} is not modelled for {collective}; "
            f"use one of {', '.join(allowed)}"
        )
    if p == 1:
        return 0.0, 0.0  # nothing to communicate
    steps = math.ceil(math.log2(p))
    if collective == "allreduce":
        if algorithm == "ring":  # reduce-scatter then all-gather, p-1 steps each
            return 2.0 * (p - 1), 2.0 * (p - 1) / p
        if algorithm == "tree":  # binomial-tree reduce then broadcast, whole buffer per step
            return 2.0 * steps, 2.0 * steps
        # Rabenseifner: recursive halving then doubling (exact for powers of two)
        return 2.0 * steps, 2.0 * (p - 1) / p
    if collective in ("allgather", "reduce_scatter"):  # ring, n = the full buffer
        return float(p - 1), (p - 1) / p
    if algorithm == "ring":  # broadcast, pipelined chain with many small chunks
        return float(p - 1), 1.0
    return float(steps), float(steps)  # broadcast, binomial tree


def collective_time(
    collective: str,
    n_bytes: float,
    n_gpus: int,
    *,
    alpha_s: float,
    bandwidth_bytes_per_s: float,
    algorithm: str = "ring",
) -> float:
    """α–β time of ``collective`` on ``p = n_gpus`` ranks: ``a(p)·α + b(p)·n/β`` seconds.

    Parameters
    ----------
    collective : {"allreduce", "allgather", "reduce_scatter", "broadcast"}
        Which collective.
    n_bytes : float
        Size of the full buffer in bytes: the tensor being all-reduced or broadcast, the
        all-gather's output, the reduce-scatter's input (each rank holds ``n/p`` of it).
    n_gpus : int
        Number of ranks (processes, one per GPU).
    alpha_s : float
        Latency per message start-up, seconds.
    bandwidth_bytes_per_s : float
        Bandwidth per rank in one direction, bytes/s.
    algorithm : str
        One of :data:`COLLECTIVES` ``[collective]``.

    Returns
    -------
    float
        Seconds; 0 for ``n_gpus == 1``.

    Raises
    ------
    ValueError
        For a negative, NaN or infinite size or latency, a bandwidth that is not a positive
        finite number, or an unknown collective or algorithm.
    """
    n = non_negative_number("n_bytes", n_bytes)
    p = positive_int("n_gpus", n_gpus)
    alpha = non_negative_number("alpha_s", alpha_s)
    beta = positive_number("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    a, b = _coefficients(collective, p, algorithm)
    return _finite(a * alpha + b * n / beta, "n_bytes, alpha_s and bandwidth_bytes_per_s")


def allreduce_time(
    n_bytes: float,
    n_gpus: int,
    *,
    alpha_s: float,
    bandwidth_bytes_per_s: float,
    algorithm: str = "ring",
) -> float:
    """Time to all-reduce an ``n_bytes`` buffer over ``p = n_gpus`` ranks (α–β model).

    ``"ring"``: ``2(p-1)·α + 2(p-1)/p · n/β`` — bandwidth-optimal, latency grows with p.
    ``"tree"``: ``2⌈log₂p⌉·(α + n/β)`` — binomial reduce then broadcast; few steps, but the
    whole buffer crosses every step. ``"rabenseifner"``: ``2⌈log₂p⌉·α + 2(p-1)/p · n/β``.

    Examples
    --------
    Two ranks, a 1 GB buffer, 100 GB/s and 10 µs: each rank sends ``2·1/2·1 GB = 1 GB``
    (10 ms) in 2 steps (20 µs).

    >>> import gpulab as gl
    >>> t = gl.allreduce_time(1e9, 2, alpha_s=10e-6, bandwidth_bytes_per_s=100e9)
    >>> round(t * 1e3, 3)
    10.02

    See also
    --------
    collective_time : parameters and units.
    """
    return collective_time(
        "allreduce",
        n_bytes,
        n_gpus,
        alpha_s=alpha_s,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        algorithm=algorithm,
    )


def allgather_time(
    n_bytes: float,
    n_gpus: int,
    *,
    alpha_s: float,
    bandwidth_bytes_per_s: float,
    algorithm: str = "ring",
) -> float:
    """Time to all-gather an ``n_bytes`` result (``n/p`` from each of ``p = n_gpus`` ranks).

    The ring takes ``(p-1)·α + (p-1)/p · n/β``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.allgather_time(4e9, 4, alpha_s=0.0, bandwidth_bytes_per_s=100e9)
    0.03

    See also
    --------
    collective_time : parameters and units.
    """
    return collective_time(
        "allgather",
        n_bytes,
        n_gpus,
        alpha_s=alpha_s,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        algorithm=algorithm,
    )


def reduce_scatter_time(
    n_bytes: float,
    n_gpus: int,
    *,
    alpha_s: float,
    bandwidth_bytes_per_s: float,
    algorithm: str = "ring",
) -> float:
    """Time to reduce-scatter an ``n_bytes`` input (each rank keeps ``n/p`` of the sum).

    Same cost as the all-gather: ``(p-1)·α + (p-1)/p · n/β`` with ``p = n_gpus``; one of
    each makes a ring all-reduce.

    See also
    --------
    collective_time : parameters and units.
    """
    return collective_time(
        "reduce_scatter",
        n_bytes,
        n_gpus,
        alpha_s=alpha_s,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        algorithm=algorithm,
    )


def broadcast_time(
    n_bytes: float,
    n_gpus: int,
    *,
    alpha_s: float,
    bandwidth_bytes_per_s: float,
    algorithm: str = "ring",
) -> float:
    """Time to broadcast ``n_bytes`` from one rank to the ``p - 1`` others (``p = n_gpus``).

    ``"ring"``: a pipelined chain, ``(p-1)·α + n/β`` (the limit of many small chunks).
    ``"tree"``: a binomial tree, ``⌈log₂p⌉·(α + n/β)``.

    See also
    --------
    collective_time : parameters and units.
    """
    return collective_time(
        "broadcast",
        n_bytes,
        n_gpus,
        alpha_s=alpha_s,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        algorithm=algorithm,
    )


def allreduce_bytes_per_rank(n_bytes: float, n_gpus: int) -> float:
    """Bytes each rank sends (and receives) in a ring all-reduce: ``2(p-1)/p · n``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.allreduce_bytes_per_rank(1000, 8)
    1750.0
    """
    n = non_negative_number("n_bytes", n_bytes)
    p = positive_int("n_gpus", n_gpus)
    return 2.0 * (p - 1) / p * n


def bus_bandwidth(n_bytes: float, time_s: float, n_gpus: int) -> float:
    """nccl-tests' "bus bandwidth" of an all-reduce: ``n/t · 2(p-1)/p`` bytes/s.

    It is the rate at which each rank's link moved data, so it can be compared with the
    link's one-direction bandwidth whatever ``p = n_gpus`` is.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.bus_bandwidth(1e9, 0.01, 2) / 1e9      # GB/s
    100.0
    """
    t = positive_number("time_s", time_s)
    return _finite(allreduce_bytes_per_rank(n_bytes, n_gpus) / t, "n_bytes and time_s")


# --------------------------------------------------------------------------- calibration


def _numbers(name: str, values, *, positive: bool) -> np.ndarray:
    """A 1-D float array from a sequence of real numbers, each checked like a scalar."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name}={values!r} must be a sequence of numbers")
    check = positive_number if positive else non_negative_number
    items = list(values.tolist() if isinstance(values, np.ndarray) else values)
    return np.array([check(f"{name}[{i}]", v) for i, v in enumerate(items)], dtype=float)


def fit_alpha_beta(
    n_bytes: Sequence[float],
    times_s: Sequence[float],
    n_gpus: int,
    *,
    algorithm: str = "ring",
    collective: str = "allreduce",
) -> tuple[float, float]:
    """Fit α (latency) and β (bandwidth) to measured collective times by least squares.

    The model ``t = a(p)·α + b(p)·n/β`` is a straight line in ``n``. The fit minimises the
    *relative* error, so that small messages (where α shows) count as much as large ones
    (where β shows). A negative intercept, which noise can produce, is refitted as α = 0.

    Parameters
    ----------
    n_bytes, times_s : sequences of float
        Message sizes (bytes, 0 or more) and measured times (seconds, above 0), same
        length, at least two distinct sizes.
    n_gpus : int
        Ranks in the measurement (at least 2).
    algorithm, collective : str
        The model to fit (see :data:`COLLECTIVES`).

    Returns
    -------
    (alpha_s, bandwidth_bytes_per_s) : tuple of float

    Examples
    --------
    >>> import gpulab as gl
    >>> sizes = [1e3, 1e5, 1e7]
    >>> times = [gl.allreduce_time(n, 4, alpha_s=5e-6, bandwidth_bytes_per_s=20e9)
    ...          for n in sizes]
    >>> alpha, beta = gl.fit_alpha_beta(sizes, times, 4)
    >>> round(alpha * 1e6, 6), round(beta / 1e9, 6)
    (5.0, 20.0)
    """
    p = positive_int("n_gpus", n_gpus)
    if p < 2:
        raise ValueError(f"n_gpus={p!r}: a fit needs a measurement with at least 2 ranks")
    n = _numbers("n_bytes", n_bytes, positive=False)
    t = _numbers("times_s", times_s, positive=True)
    if t.shape != n.shape:
        raise ValueError(f"n_bytes and times_s must be the same length (got {len(n)} and {len(t)})")
    if len(np.unique(n)) < 2:
        raise ValueError(f"n_bytes={list(n)!r} needs at least two distinct message sizes")
    a, b = _coefficients(collective, p, algorithm)
    weights = 1.0 / t  # relative error
    design = np.column_stack([np.ones_like(n), n]) * weights[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(design, t * weights, rcond=None)
    if intercept < 0:
        intercept = 0.0
        column = n * weights
        slope = float(column @ (t * weights) / (column @ column))
    if slope <= 0:
        raise ValueError(
            "the measured times do not grow with message size, so no bandwidth can be fitted; "
            "measure larger messages"
        )
    return float(intercept / a), float(b / slope)


# --------------------------------------------------------------------------- training step


@dataclass(frozen=True)
class StepTime:
    """One data-parallel training step, split into compute and communication.

    Attributes
    ----------
    compute_s : float
        Forward + backward + optimizer time of one rank (its share of the batch).
    comm_s : float
        Time of the gradient all-reduce.
    exposed_comm_s : float
        The part of ``comm_s`` not hidden behind compute.
    total_s : float
        ``compute_s + exposed_comm_s``.
    n_gpus : int
        Number of ranks (one per GPU).
    """

    compute_s: float
    comm_s: float
    exposed_comm_s: float
    total_s: float
    n_gpus: int

    def __post_init__(self) -> None:
        for name in ("compute_s", "comm_s", "exposed_comm_s", "total_s"):
            non_negative_number(name, getattr(self, name))
        positive_int("n_gpus", self.n_gpus)

    @property
    def efficiency(self) -> float:
        """Scaling efficiency ``compute_s / total_s``: single-GPU time over per-GPU step time.

        With a fixed batch per GPU (weak scaling) this is the throughput on ``n_gpus`` GPUs
        divided by ``n_gpus`` times the throughput on one.
        """
        return self.compute_s / self.total_s if self.total_s > 0 else 1.0

    @property
    def comm_share(self) -> float:
        """Fraction of the step spent waiting for communication: ``exposed_comm_s / total_s``."""
        return self.exposed_comm_s / self.total_s if self.total_s > 0 else 0.0

    @property
    def speedup(self) -> float:
        """Throughput on ``n_gpus`` ranks over throughput on one: ``n_gpus · efficiency``."""
        return self.n_gpus * self.efficiency


def _as_link(link) -> Interconnect:
    if isinstance(link, Interconnect):
        return link
    if isinstance(link, str):
        return _lookup("link", link)
    raise ValueError(f"link={link!r} must be an Interconnect or a name such as 'NVLink 4'")


def dp_step_time(
    compute_s: float,
    grad_bytes: float,
    n_gpus: int,
    *,
    link,
    overlap: float = 0.0,
    alpha_s: float | None = None,
) -> StepTime:
    """Predict one data-parallel (DDP) step: compute plus the exposed gradient all-reduce.

    Each rank computes on its own batch (``compute_s``, the same as on one GPU), then the
    gradients (``grad_bytes``) are all-reduced with a ring. DDP starts all-reducing buckets
    of gradients while backward is still running, so part of the communication hides
    behind compute::

        exposed = max(0, comm - overlap · compute_s)
        total   = compute_s + exposed

    Parameters
    ----------
    compute_s : float
        Seconds of compute per step on one GPU (> 0).
    grad_bytes : float
        Bytes of gradients all-reduced per step (parameters × bytes per gradient).
    n_gpus : int
        Number of GPUs.
    link : Interconnect or str
        The link between GPUs, e.g. ``"NVLink 4"`` or ``gl.interconnect("PCIe 4")``.
    overlap : float
        Fraction of ``compute_s`` that communication can hide behind, 0 to 1. Backward is
        about two thirds of a step, so about 0.67 is the most DDP can reach.
    alpha_s : float, optional
        Per-message latency; default the link's published latency, or 0 where there is
        none (then the model is a bandwidth-only lower bound).

    Returns
    -------
    StepTime

    Examples
    --------
    ResNet-50's 25.6M FP32 gradients (102 MB) over 8 GPUs on PCIe 4 (31.5 GB/s each way),
    with a 0.1 s compute step and no overlap:

    >>> import gpulab as gl
    >>> step = gl.dp_step_time(0.1, 25.6e6 * 4, 8, link="PCIe 4")
    >>> round(step.comm_s * 1e3, 2), round(step.efficiency, 3)
    (5.69, 0.946)
    """
    compute = positive_number("compute_s", compute_s)
    grad = non_negative_number("grad_bytes", grad_bytes)
    p = positive_int("n_gpus", n_gpus)
    overlap = fraction("overlap", overlap)
    the_link = _as_link(link)
    if alpha_s is None:
        alpha = the_link.latency_s or 0.0
    else:
        alpha = non_negative_number("alpha_s", alpha_s)
    comm = allreduce_time(grad, p, alpha_s=alpha, bandwidth_bytes_per_s=the_link.bandwidth)
    exposed = max(0.0, comm - overlap * compute)
    return StepTime(
        compute_s=compute,
        comm_s=comm,
        exposed_comm_s=exposed,
        total_s=_finite(compute + exposed, "compute_s and grad_bytes"),
        n_gpus=p,
    )
