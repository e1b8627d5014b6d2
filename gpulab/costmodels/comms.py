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

See also the chapters "Scaling out" (``book/distributed.md``, ``book/parallelism.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING

from gpulab._checks import (
    choice,
    finite_result,
    fraction,
    non_negative_number,
    positive_int,
    positive_number,
    wrong_type,
)
from gpulab.hardware.interconnects import resolve_link

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "COLLECTIVES",
    "RingStep",
    "StepTime",
    "allgather_time",
    "allreduce_bytes_per_rank",
    "allreduce_time",
    "broadcast_time",
    "bus_bandwidth",
    "collective_time",
    "ddp_buckets",
    "dp_step_time",
    "fit_alpha_beta",
    "reduce_scatter_time",
    "simulate_ring_allreduce",
]


#: The algorithms each collective's cost model knows.
COLLECTIVES: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "rabenseifner"),
    "allgather": ("ring",),
    "reduce_scatter": ("ring",),
    "broadcast": ("ring", "tree"),
}


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
    if not isinstance(algorithm, str):
        raise wrong_type("algorithm", algorithm, f"one of {', '.join(map(repr, allowed))}")
    if algorithm not in allowed:
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
    >>> allreduce_bytes_per_rank(1000, 8)
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


def _numbers(name: str, values, *, positive: bool) -> list[float]:
    """A list of floats from a sequence of real numbers (or a NumPy array), each checked."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise wrong_type(name, values, "a sequence of numbers")
    check = positive_number if positive else non_negative_number
    items = list(values.tolist() if hasattr(values, "tolist") else values)
    return [check(f"{name}[{i}]", v) for i, v in enumerate(items)]


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
    if len(t) != len(n):
        raise ValueError(f"n_bytes and times_s must be the same length (got {len(n)} and {len(t)})")
    if len(set(n)) < 2:
        raise ValueError(f"n_bytes={n!r} needs at least two distinct message sizes")
    a, b = _coefficients(collective, p, algorithm)
    # Least squares on the relative error: each row (1, n_i) and target t_i divided by t_i,
    # so every target is 1. The normal equations of a straight line, solved directly.
    u = [1.0 / ti for ti in t]
    v = [ni / ti for ni, ti in zip(n, t, strict=True)]
    suu = math.fsum(x * x for x in u)
    suv = math.fsum(x * y for x, y in zip(u, v, strict=True))
    svv = math.fsum(y * y for y in v)
    su, sv = math.fsum(u), math.fsum(v)
    det = suu * svv - suv * suv
    intercept = (su * svv - sv * suv) / det
    slope = (suu * sv - suv * su) / det
    if intercept < 0:
        intercept = 0.0
        slope = sv / svv
    measured = dict(n_bytes=n_bytes, times_s=times_s)
    finite_result(slope, **measured)  # squares of huge sizes overflow, and then so does all
    if slope <= 0:
        raise ValueError(
            "the measured times do not grow with message size, so no bandwidth can be fitted; "
            "measure larger messages"
        )
    alpha = finite_result(float(intercept / a), **measured)
    return alpha, finite_result(float(b / slope), **measured)


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
        if self.exposed_comm_s > self.comm_s:
            raise ValueError(
                f"exposed_comm_s={self.exposed_comm_s!r} must be at most "
                f"comm_s={self.comm_s!r}: only communication can be exposed"
            )
        parts = finite_result(
            self.compute_s + self.exposed_comm_s,
            compute_s=self.compute_s,
            exposed_comm_s=self.exposed_comm_s,
        )
        if not math.isclose(self.total_s, parts, rel_tol=1e-9):
            raise ValueError(
                f"total_s={self.total_s!r} must be compute_s + exposed_comm_s "
                f"({self.compute_s!r} + {self.exposed_comm_s!r})"
            )

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


#: DDP's default bucket cap, ``bucket_cap_mb=25`` (MiB), in bytes (PyTorch 2.x).
DDP_BUCKET_CAP_BYTES = 25 * 2**20

#: DDP's smaller first bucket, 1 MiB (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``),
#: used only while ``bucket_cap_mb`` is left at its default.
DDP_FIRST_BUCKET_BYTES = 2**20


def ddp_buckets(grad_bytes: float, *, bucket_cap_mb: float | None = None) -> int:
    """How many all-reduces ``DistributedDataParallel`` splits ``grad_bytes`` of gradients into.

    DDP gathers gradients into buckets as backward produces them and all-reduces each
    bucket as soon as it is full. With the defaults, the first bucket holds 1 MiB (so
    communication can start early) and each later one 25 MiB; with ``bucket_cap_mb`` given,
    every bucket holds that many MiB. Counted from bytes, as if a gradient tensor could be
    split between buckets (DDP keeps each tensor whole, so a bucket can hold a little more
    than its cap)::

        buckets = 1                                  if grad_bytes ≤ first
                  1 + ⌈(grad_bytes − first) / cap⌉   otherwise

    Parameters
    ----------
    grad_bytes : float
        Bytes of gradients per step (parameters × bytes per gradient), 0 or more.
    bucket_cap_mb : float, optional
        DDP's ``bucket_cap_mb``, in MiB (DDP's unit, 2**20 bytes); default 25 with a
        1 MiB first bucket.

    Examples
    --------
    The distributed lab's MLP: 399,370 FP32 gradients, 1.6 MB, more than the first 1 MiB:

    >>> from gpulab.costmodels.comms import ddp_buckets
    >>> ddp_buckets(399_370 * 4), ddp_buckets(2**20), ddp_buckets(399_370 * 4, bucket_cap_mb=25)
    (2, 1, 1)
    >>> ddp_buckets(100e6)   # 1 MiB, then 25 MiB at a time: 1 + ceil(98.95 / 26.21)
    5
    """
    grad = non_negative_number("grad_bytes", grad_bytes)
    if bucket_cap_mb is None:
        first, cap = DDP_FIRST_BUCKET_BYTES, DDP_BUCKET_CAP_BYTES
    else:
        first = cap = positive_number("bucket_cap_mb", bucket_cap_mb) * 2**20
    if grad <= first:
        return 1
    return 1 + math.ceil((grad - first) / cap)


def dp_step_time(
    compute_s: float,
    grad_bytes: float,
    n_gpus: int,
    *,
    link,
    overlap: float = 0.0,
    alpha_s: float | None = None,
    buckets: int = 1,
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
    buckets : int
        All-reduces the gradients are split into (default 1, one for all of them). Each
        pays the ring's latency ``2(p-1)·α``; the bytes, and so the bandwidth term, are the
        same however they are split. DDP's count is :func:`ddp_buckets` of ``grad_bytes``.

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

    Split into DDP's buckets, the same bytes pay the latency five times:

    >>> from gpulab.costmodels.comms import ddp_buckets
    >>> ddp_buckets(25.6e6 * 4)
    5
    >>> one = gl.dp_step_time(0.1, 25.6e6 * 4, 8, link="PCIe 4", alpha_s=10e-6)
    >>> five = gl.dp_step_time(0.1, 25.6e6 * 4, 8, link="PCIe 4", alpha_s=10e-6, buckets=5)
    >>> round((five.comm_s - one.comm_s) * 1e6, 6)   # 4 more x 2(8-1) x 10 us
    560.0
    """
    compute = positive_number("compute_s", compute_s)
    grad = non_negative_number("grad_bytes", grad_bytes)
    p = positive_int("n_gpus", n_gpus)
    overlap = fraction("overlap", overlap)
    the_link = resolve_link("link", link)
    if alpha_s is None:
        alpha = the_link.latency_s or 0.0
    else:
        alpha = non_negative_number("alpha_s", alpha_s)
    n_buckets = positive_int("buckets", buckets)
    bandwidth = the_link.bandwidth
    comm = allreduce_time(grad, p, alpha_s=alpha, bandwidth_bytes_per_s=bandwidth)
    # Every further bucket is one more all-reduce: its latency, and no more bytes.
    comm += (n_buckets - 1) * allreduce_time(0, p, alpha_s=alpha, bandwidth_bytes_per_s=bandwidth)
    exposed = max(0.0, comm - overlap * compute)
    return StepTime(
        compute_s=compute,
        comm_s=comm,
        exposed_comm_s=exposed,
        total_s=_finite(compute + exposed, "compute_s and grad_bytes"),
        n_gpus=p,
    )


# --------------------------------------------------------------------------- the ring, step by step


@dataclass(frozen=True)
class RingStep:
    """One step of the ring: what was sent, and every rank's buffer after it.

    Attributes
    ----------
    phase : str
        ``"start"``, ``"reduce-scatter"`` or ``"all-gather"``.
    sends : tuple of (src, dst, chunk)
        The chunk index each rank sent to its neighbour in this step.
    buffers : ndarray, shape (p, n)
        Every rank's buffer after the step.
    contributions : ndarray of int, shape (p, p)
        ``contributions[r, c]``: how many ranks' inputs chunk ``c`` on rank ``r`` sums.
    """

    phase: str
    sends: tuple
    buffers: np.ndarray
    contributions: np.ndarray

    def __post_init__(self) -> None:
        import numpy as np

        choice("phase", self.phase, ("start", "reduce-scatter", "all-gather"))
        if not isinstance(self.sends, tuple) or not all(
            isinstance(send, tuple)
            and len(send) == 3
            and all(isinstance(i, int) and not isinstance(i, bool) for i in send)
            for send in self.sends
        ):
            raise wrong_type("sends", self.sends, "a tuple of (src, dst, chunk) int triples")
        for name in ("buffers", "contributions"):
            if not isinstance(getattr(self, name), np.ndarray):
                raise wrong_type(name, getattr(self, name), "a NumPy array")
        if self.buffers.ndim != 2:
            raise ValueError(f"buffers has shape {self.buffers.shape}; it must be (p, n)")
        p = self.buffers.shape[0]
        if self.contributions.shape != (p, p):
            raise ValueError(
                f"contributions has shape {self.contributions.shape}; with {p} ranks in "
                f"buffers it must be ({p}, {p})"
            )


def _values(values) -> np.ndarray:
    import numpy as np

    def leaves(value):
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            for item in value:
                yield from leaves(item)
        else:
            yield value

    wanted = "a 2-D array of numbers, one row per rank"
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise wrong_type("values", values, wanted)
    if not all(isinstance(v, Real) and not isinstance(v, bool) for v in leaves(values)):
        raise TypeError(f"values={values!r:.60} must be {wanted} (no str, bool or None in it)")
    try:
        array = np.asarray(values, dtype=float)
    except ValueError:  # rows of different lengths
        raise ValueError(f"values={values!r:.60} must be {wanted}, rows of one length") from None
    if array.ndim != 2:
        raise ValueError(f"values={values!r:.60} must be {wanted}")
    p, n = array.shape
    if p < 2 or n < p:
        raise ValueError(
            f"values has shape {array.shape}: need at least 2 ranks (rows) and at least one "
            "element per rank in each row (columns >= rows)"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"values={values!r:.60} must hold finite numbers only (no NaN or inf)")
    return array


def simulate_ring_allreduce(values) -> list[RingStep]:
    """All-reduce (sum) the rows of ``values`` over a ring of ``p`` ranks, one step at a time.

    Parameters
    ----------
    values : array-like, shape (p, n)
        Row ``r`` is rank ``r``'s input; ``n >= p`` (each rank owns one chunk of ``n / p``).

    Returns
    -------
    list of RingStep
        ``2(p - 1) + 1`` entries: the start, ``p - 1`` reduce-scatter steps, ``p - 1``
        all-gather steps. After the last, every row equals ``values.sum(axis=0)``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpulab as gl
    >>> steps = simulate_ring_allreduce(np.arange(8.0).reshape(4, 2).repeat(2, axis=1))
    >>> len(steps), steps[-1].buffers[0].tolist()
    (7, [12.0, 12.0, 16.0, 16.0])
    """
    import numpy as np

    data = _values(values)
    p, n = data.shape
    chunks = np.array_split(np.arange(n), p)
    buffers = data.copy()
    contributions = np.ones((p, p), dtype=int)  # each chunk holds its own rank's input
    steps = [RingStep("start", (), buffers.copy(), contributions.copy())]
    for s in range(p - 1):  # reduce-scatter: rank r sends chunk (r - s) mod p to r + 1
        sends = tuple((r, (r + 1) % p, (r - s) % p) for r in range(p))
        sent = {(dst, c): (buffers[src, chunks[c]].copy(), contributions[src, c])
                for src, dst, c in sends}  # fmt: skip
        for (dst, c), (chunk, count) in sent.items():
            buffers[dst, chunks[c]] += chunk
            contributions[dst, c] += count
        steps.append(RingStep("reduce-scatter", sends, buffers.copy(), contributions.copy()))
    for s in range(p - 1):  # all-gather: rank r sends its summed chunk (r + 1 - s) mod p on
        sends = tuple((r, (r + 1) % p, (r + 1 - s) % p) for r in range(p))
        sent = {(dst, c): (buffers[src, chunks[c]].copy(), contributions[src, c])
                for src, dst, c in sends}  # fmt: skip
        for (dst, c), (chunk, count) in sent.items():
            buffers[dst, chunks[c]] = chunk
            contributions[dst, c] = count
        steps.append(RingStep("all-gather", sends, buffers.copy(), contributions.copy()))
    return steps
