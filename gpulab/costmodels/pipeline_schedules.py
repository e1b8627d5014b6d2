"""Four pipeline schedules as per-rank orders of work, simulated, with their formulas.

A pipeline schedule is, for every rank, the order in which it runs the forward (``F``) and
backward passes of each micro-batch on each model chunk it holds. Four schedules:

* **GPipe** (Huang et al. 2019): every forward, then every backward;
* **1F1B** (Narayanan et al. 2021): rank ``i`` of ``p`` runs ``p - 1 - i`` warm-up
  forwards, then alternates one forward, one backward;
* **interleaved 1F1B** (Narayanan et al. 2021): each rank holds ``v`` chunks of the model
  ("virtual stages", chunk ``c`` of rank ``i`` is virtual stage ``c·p + i``); the bubble falls
  to ``(p-1)/(v·m + p-1)`` for ``v`` times the messages;
* **ZB-H1** (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): the backward is split into
  the input gradient ``B`` (which the previous rank waits for) and the weight gradient ``W``
  (which nobody waits for); rank ``i`` keeps up to ``i`` ``W`` passes pending and runs them
  in what would be idle time, so its peak memory stays 1F1B's ``p`` micro-batches and the
  bubble falls to ``(p-1)(T_F + T_B - T_W)`` per rank.

:func:`pipeline_orders` writes the orders; :func:`simulate_orders` runs them on per-rank
times (each operation as soon as its input has arrived) and gives the bubble and the peak
number of micro-batches whose activations a rank holds; :func:`interleaved_bubble`,
:func:`zero_bubble_bubble` and :func:`interleaved_peak_chunks` are the closed forms that the
simulation reproduces for equal stages. The distributed lab's scripts execute the same orders
on real processes.

See also the chapters "Scaling out" (``book/distributed.md``, ``book/parallelism.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulab._checks import choice, non_negative_number, positive_int, positive_number, wrong_type

__all__ = [
    "ORDER_SCHEDULES",
    "ScheduleRun",
    "interleaved_bubble",
    "interleaved_peak_chunks",
    "pipeline_orders",
    "simulate_orders",
    "zero_bubble_bubble",
]

#: The schedules :func:`pipeline_orders` writes.
ORDER_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")


def _one_f_one_b(p: int, m: int, rank: int) -> list[tuple[str, int, int]]:
    warm = min(p - rank - 1, m)
    order = [("F", 0, i) for i in range(warm)]
    for i in range(m - warm):
        order += [("F", 0, warm + i), ("B", 0, i)]
    return order + [("B", 0, i) for i in range(m - warm, m)]


def pipeline_orders(
    schedule: str, n_ranks: int, n_microbatches: int, *, virtual_stages: int = 1
) -> tuple[tuple[tuple[str, int, int], ...], ...]:
    """Per rank, the order of its operations: ``(kind, chunk, micro-batch)`` tuples.

    ``kind`` is ``"F"`` (forward), ``"B"`` (backward; for ZB-H1 the input gradient only) or
    ``"W"`` (ZB-H1's weight gradient). ``chunk`` counts the model chunks a rank holds (0 unless
    the schedule is interleaved).

    Parameters
    ----------
    schedule : {"gpipe", "1f1b", "interleaved", "zb-h1"}
        The schedule.
    n_ranks : int
        Pipeline ranks ``p``.
    n_microbatches : int
        Micro-batches per step ``m``; a multiple of ``p`` for the interleaved schedule, as
        Megatron-LM requires.
    virtual_stages : int
        Chunks per rank ``v`` (interleaved only; 1 otherwise).

    Examples
    --------
    >>> from gpulab.costmodels.pipeline_schedules import pipeline_orders
    >>> [" ".join(f"{k}{i}" for k, _, i in o) for o in pipeline_orders("zb-h1", 2, 3)]
    ['F0 F1 B0 W0 F2 B1 W1 B2 W2', 'F0 B0 F1 B1 W0 F2 B2 W1 W2']
    >>> " ".join(f"{k}{c}.{i}" for k, c, i in pipeline_orders("interleaved", 2, 2,
    ...                                                       virtual_stages=2)[1])
    'F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 B0.0 B0.1'
    """
    choice("schedule", schedule, ORDER_SCHEDULES)
    p = positive_int("n_ranks", n_ranks)
    m = positive_int("n_microbatches", n_microbatches)
    v = positive_int("virtual_stages", virtual_stages)
    if schedule != "interleaved" and v != 1:
        raise ValueError(f"virtual_stages={v!r} needs schedule='interleaved' (it is {schedule!r})")
    if schedule == "gpipe":
        one = [("F", 0, i) for i in range(m)] + [("B", 0, i) for i in range(m)]
        return tuple(tuple(one) for _ in range(p))
    if schedule == "1f1b":
        return tuple(tuple(_one_f_one_b(p, m, r)) for r in range(p))
    if schedule == "zb-h1":
        orders = []
        for r in range(p):
            order, pending = [], []
            for op in _one_f_one_b(p, m, r):
                order.append(op)
                if op[0] == "B":
                    pending.append(op[2])
                    if len(pending) > r:  # rank r keeps r weight gradients for idle time
                        order.append(("W", 0, pending.pop(0)))
            orders.append(tuple(order + [("W", 0, i) for i in pending]))
        return tuple(orders)
    if m % p:
        raise ValueError(
            f"n_microbatches={m!r} must be a multiple of n_ranks={p!r} for the interleaved schedule"
        )
    groups = range(m // p)
    forwards = [(c, g * p + j) for g in groups for c in range(v) for j in range(p)]
    backwards = [(c, g * p + j) for g in groups for c in reversed(range(v)) for j in range(p)]
    orders = []
    for r in range(p):
        warm = min(2 * (p - r - 1) + (v - 1) * p, m * v)
        order = [("F", c, i) for c, i in forwards[:warm]]
        for k in range(m * v - warm):
            order += [("F", *forwards[warm + k]), ("B", *backwards[k])]
        orders.append(tuple(order + [("B", c, i) for c, i in backwards[m * v - warm :]]))
    return tuple(orders)


@dataclass(frozen=True)
class ScheduleRun:
    """A simulated pipeline step.

    Attributes
    ----------
    schedule : str
        One of :data:`ORDER_SCHEDULES`.
    n_ranks, n_microbatches, virtual_stages : int
        ``p``, ``m`` and ``v``.
    ops : tuple
        ``(rank, kind, chunk, microbatch, start_s, end_s)`` for every operation.
    step_s : float
        When the last operation ends.
    bubble : float
        ``1 - busy / (p · step_s)``: the idle share of the ranks' time.
    peak_in_flight : tuple of int
        Per rank, the most (chunk, micro-batch) pairs whose activations it holds at once:
        from the forward until the backward (until ``W`` for ZB-H1, which still needs them).
    """

    schedule: str
    n_ranks: int
    n_microbatches: int
    virtual_stages: int
    ops: tuple
    step_s: float
    bubble: float
    peak_in_flight: tuple


def _times(name: str, values, p: int) -> list[float]:
    if hasattr(values, "tolist"):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise wrong_type(name, values, f"a sequence of {p} times in seconds, one per rank")
    if len(values) != p:
        raise ValueError(f"{name} has {len(values)} entries; it needs one per rank ({p})")
    return [non_negative_number(f"{name}[{i}]", t) for i, t in enumerate(values)]


def simulate_orders(
    schedule: str,
    forward_s,
    backward_s,
    n_microbatches: int,
    *,
    virtual_stages: int = 1,
    weight_s=None,
    comm_s: float = 0.0,
) -> ScheduleRun:
    """Run :func:`pipeline_orders` on per-rank times: when each operation starts and ends.

    A rank runs its operations in order, each as soon as its input is there: a forward needs
    the previous virtual stage's forward of that micro-batch (plus ``comm_s`` for the
    transfer), a backward the next virtual stage's backward (plus ``comm_s``), or on the
    last virtual stage its own forward; a ``W`` needs its own ``B``.

    Parameters
    ----------
    schedule : str
        One of :data:`ORDER_SCHEDULES`.
    forward_s, backward_s : sequence of float
        Per rank, seconds for one micro-batch's forward and whole backward through all the
        layers the rank holds (each of its ``v`` chunks takes ``1/v`` of it).
    n_microbatches : int
        ``m``.
    virtual_stages : int
        ``v`` (interleaved only).
    weight_s : sequence of float, optional
        Per rank, the part of ``backward_s`` that computes weight gradients: ZB-H1's ``W``
        (required for ZB-H1; its ``B`` is the rest).
    comm_s : float
        Seconds to send one micro-batch's activations or gradients between ranks.

    Examples
    --------
    Equal stages and free transfers give the closed forms:

    >>> from gpulab.costmodels import pipeline_schedules as ps
    >>> run = ps.simulate_orders("interleaved", [3.0] * 4, [6.0] * 4, 8, virtual_stages=2)
    >>> round(run.bubble, 4), round(ps.interleaved_bubble(4, 8, 2), 4), run.peak_in_flight
    (0.1579, 0.1579, (11, 9, 7, 5))
    >>> run = ps.simulate_orders("zb-h1", [1.0] * 4, [2.0] * 4, 8, weight_s=[1.0] * 4)
    >>> round(run.bubble, 4), round(ps.zero_bubble_bubble(4, 8, 1.0, 1.0, 1.0), 4)
    (0.1111, 0.1111)
    """
    choice("schedule", schedule, ORDER_SCHEDULES)
    if isinstance(forward_s, (str, bytes)) or not hasattr(forward_s, "__len__"):
        raise wrong_type("forward_s", forward_s, "a sequence of times in seconds, one per rank")
    p = len(forward_s)
    if p == 0:
        raise ValueError("forward_s=[] must hold one time per rank (at least one)")
    fwd = _times("forward_s", forward_s, p)
    bwd = _times("backward_s", backward_s, p)
    m = positive_int("n_microbatches", n_microbatches)
    v = positive_int("virtual_stages", virtual_stages)
    comm = non_negative_number("comm_s", comm_s)
    if schedule == "zb-h1":
        if weight_s is None:
            raise ValueError("weight_s=None: ZB-H1 needs each rank's weight-gradient time")
        wgt = _times("weight_s", weight_s, p)
        for r in range(p):
            if wgt[r] > bwd[r]:
                raise ValueError(
                    f"weight_s[{r}]={wgt[r]!r} must not exceed backward_s[{r}]={bwd[r]!r}"
                )
    else:
        wgt = [0.0] * p
    orders = pipeline_orders(schedule, p, m, virtual_stages=v)
    last = v * p - 1
    duration = {
        "F": [f / v for f in fwd],
        "B": [(b - w) / v for b, w in zip(bwd, wgt, strict=True)],
        "W": [w / v for w in wgt],
    }
    done: dict[tuple[str, int, int], float] = {}
    free, nxt, ops = [0.0] * p, [0] * p, []
    while any(nxt[r] < len(orders[r]) for r in range(p)):
        progressed = False
        for r in range(p):
            while nxt[r] < len(orders[r]):
                kind, chunk, i = orders[r][nxt[r]]
                vs = chunk * p + r
                if kind == "F":
                    dep = 0.0 if vs == 0 else done.get(("F", vs - 1, i))
                    hop = 0.0 if vs == 0 else comm
                elif kind == "B":
                    dep = done.get(("F", vs, i)) if vs == last else done.get(("B", vs + 1, i))
                    hop = 0.0 if vs == last else comm
                else:
                    dep, hop = done.get(("B", vs, i)), 0.0
                if dep is None:
                    break
                start = max(free[r], dep + hop)
                end = start + duration[kind][r]
                done[(kind, vs, i)] = free[r] = end
                ops.append((r, kind, chunk, i, start, end))
                nxt[r] += 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError(f"schedule {schedule!r} deadlocked")
    step = max(op[5] for op in ops)
    busy = sum(op[5] - op[4] for op in ops)
    releases = "W" if schedule == "zb-h1" else "B"
    peaks = []
    for order in orders:
        held = best = 0
        for kind, _, _ in order:
            held += 1 if kind == "F" else -1 if kind == releases else 0
            best = max(best, held)
        peaks.append(best)
    bubble = 1 - busy / (p * step) if step > 0 else 0.0
    return ScheduleRun(schedule, p, m, v, tuple(ops), step, bubble, tuple(peaks))


def interleaved_bubble(n_ranks: int, n_microbatches: int, virtual_stages: int) -> float:
    """Idle share of the interleaved 1F1B schedule: ``(p-1) / (v·m + p-1)``.

    Each rank's share of a micro-batch is cut into ``v`` chunks, so the fill and drain take
    ``(p-1)`` chunk times, ``1/v`` of a stage time each (Narayanan et al. 2021). ``v = 1`` is
    :func:`gpulab.pipeline_bubble`.

    Examples
    --------
    >>> from gpulab.costmodels.pipeline_schedules import interleaved_bubble
    >>> interleaved_bubble(4, 8, 1), round(interleaved_bubble(4, 8, 2), 4)
    (0.2727272727272727, 0.1579)
    """
    p = positive_int("n_ranks", n_ranks)
    m = positive_int("n_microbatches", n_microbatches)
    v = positive_int("virtual_stages", virtual_stages)
    return (p - 1) / (v * m + p - 1)


def interleaved_peak_chunks(
    n_ranks: int, n_microbatches: int, virtual_stages: int, rank: int = 0
) -> int:
    """(chunk, micro-batch) pairs whose activations rank ``rank`` holds at its peak.

    ``min(v·m, 2(p - 1 - rank) + (v - 1)·p + 1)``: the warm-up forwards plus one. Each is
    ``1/v`` of a rank's activations per micro-batch, so rank 0 holds
    ``p · (1 + (p-1)/(p·v))`` micro-batches' worth, a little more than 1F1B's ``p``
    (Korthikanti et al. 2022).

    Examples
    --------
    >>> from gpulab.costmodels.pipeline_schedules import interleaved_peak_chunks
    >>> interleaved_peak_chunks(4, 8, 2), interleaved_peak_chunks(2, 4, 2, rank=1)
    (11, 3)
    """
    p = positive_int("n_ranks", n_ranks)
    m = positive_int("n_microbatches", n_microbatches)
    v = positive_int("virtual_stages", virtual_stages)
    r = non_negative_number("rank", rank)
    if int(r) != r or r >= p:
        raise ValueError(f"rank={rank!r} must be a rank from 0 to {p - 1}")
    return min(v * m, 2 * (p - 1 - int(r)) + (v - 1) * p + 1)


def zero_bubble_bubble(
    n_ranks: int,
    n_microbatches: int,
    forward_s: float,
    backward_input_s: float,
    backward_weight_s: float,
) -> float:
    """Idle share of ZB-H1 for equal stages (Qi et al. 2024).

    Each rank idles ``(p-1)(T_F + T_B - T_W)`` per step, against 1F1B's
    ``(p-1)(T_F + T_B + T_W)``; it works ``m (T_F + T_B + T_W)``. With the three equal the
    bubble is a third of 1F1B's idle time.

    Examples
    --------
    >>> from gpulab.costmodels.pipeline_schedules import zero_bubble_bubble
    >>> round(zero_bubble_bubble(2, 4, 1.0, 1.0, 1.0), 4)  # 1 / (12 + 1)
    0.0769
    """
    p = positive_int("n_ranks", n_ranks)
    m = positive_int("n_microbatches", n_microbatches)
    f = positive_number("forward_s", forward_s)
    b = positive_number("backward_input_s", backward_input_s)
    w = non_negative_number("backward_weight_s", backward_weight_s)
    idle = (p - 1) * max(f + b - w, 0.0)
    return idle / (m * (f + b + w) + idle)
