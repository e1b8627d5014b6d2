"""Counts for the parallelisms that split inside a layer: sequence, context and expert.

* **sequence parallelism** (Korthikanti et al. 2022): per layer and step, the all-gathers and
  reduce-scatters that replace tensor parallelism's all-reduces — :func:`sequence_parallel_comm`;
* **context parallelism** with a causal mask: the query-key pairs each rank computes, for a
  contiguous split of the sequence and for the zig-zag split that balances them —
  :func:`causal_pairs_per_rank`;
* **expert parallelism** (GShard, Lepikhin et al. 2021): the tokens an expert accepts at a
  capacity factor — :func:`expert_capacity`.

The bytes of ring attention and of the all-to-alls are
:func:`gpulab.costmodels.parallelism.context_parallel_bytes` and
:func:`gpulab.costmodels.parallelism.expert_parallel_bytes`. The distributed lab's second part
(``notebooks/parallelism_lab.ipynb``) measures each against these counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab._checks import choice, flag, positive_int, positive_number

__all__ = [
    "CP_SPLITS",
    "SequenceParallelComm",
    "causal_pairs_per_rank",
    "expert_capacity",
    "sequence_parallel_comm",
]

#: How :func:`causal_pairs_per_rank` can split a sequence.
CP_SPLITS = ("contiguous", "zigzag")


@dataclass(frozen=True)
class SequenceParallelComm:
    """The collectives of one transformer layer's step under sequence parallelism.

    Attributes
    ----------
    n_allgathers, n_reduce_scatters : int
        Calls per layer, forward and backward.
    bytes_per_rank : float
        Bytes each rank sends: ``(t-1)/t`` of the ``b·s·h`` buffer per call.
    tensor_parallel_bytes_per_rank : float
        What tensor parallelism alone sends: 4 all-reduces of ``2(t-1)/t · b·s·h``.
    """

    n_allgathers: int
    n_reduce_scatters: int
    bytes_per_rank: float
    tensor_parallel_bytes_per_rank: float


def sequence_parallel_comm(
    batch_size: int,
    seq_len: int,
    hidden: int,
    tensor_parallel: int,
    *,
    bytes_per_value: int = 2,
    regather: bool = True,
) -> SequenceParallelComm:
    """All-gathers and reduce-scatters of one layer under sequence parallelism.

    Forward: an all-gather of the sequence before attention and before the MLP, a
    reduce-scatter after each (2 + 2). Backward: each turns into the other (2 + 2), and with
    ``regather`` the gathered inputs, not kept for memory's sake, are gathered again for the
    weight gradients (2 more all-gathers), as Megatron-LM does. Each call sends ``(t-1)/t`` of
    the ``b·s·h`` buffer per rank, so without ``regather`` the bytes equal tensor
    parallelism's 4 all-reduces.

    Examples
    --------
    >>> from gpulab.costmodels.split_layers import sequence_parallel_comm
    >>> c = sequence_parallel_comm(2, 128, 64, 2, bytes_per_value=4)
    >>> c.n_allgathers, c.n_reduce_scatters, c.bytes_per_rank, c.tensor_parallel_bytes_per_rank
    (6, 4, 327680.0, 262144.0)
    >>> sequence_parallel_comm(2, 128, 64, 2, bytes_per_value=4, regather=False).bytes_per_rank
    262144.0
    """
    b = positive_int("batch_size", batch_size)
    s = positive_int("seq_len", seq_len)
    h = positive_int("hidden", hidden)
    t = positive_int("tensor_parallel", tensor_parallel)
    w = positive_int("bytes_per_value", bytes_per_value)
    flag("regather", regather)
    gathers, scatters = 4 + (2 if regather else 0), 4
    one = (t - 1) / t * b * s * h * w
    return SequenceParallelComm(gathers, scatters, (gathers + scatters) * one, 4 * 2 * one)


def causal_pairs_per_rank(seq_len: int, n_ranks: int, split: str = "contiguous") -> list[int]:
    """Query-key pairs (key not after query) each rank computes under a causal mask.

    ``contiguous``: rank ``r`` holds tokens ``[r·n, (r+1)·n)`` with ``n = s/c``, and computes
    ``r·n² + n(n+1)/2`` pairs, so the last rank does about ``2c - 1`` times the first's work.
    ``zigzag``: the sequence is cut into ``2c`` chunks and rank ``r`` holds chunks ``r`` and
    ``2c - 1 - r``; every rank computes ``(2c - 1)·n² + n(n+1)`` pairs with ``n = s/(2c)``.

    Examples
    --------
    >>> from gpulab.costmodels.split_layers import causal_pairs_per_rank
    >>> causal_pairs_per_rank(8, 2), causal_pairs_per_rank(8, 2, "zigzag")
    ([10, 26], [18, 18])
    >>> sum(causal_pairs_per_rank(8, 2)) == 8 * 9 // 2
    True
    """
    s = positive_int("seq_len", seq_len)
    c = positive_int("n_ranks", n_ranks)
    choice("split", split, CP_SPLITS)
    parts = c if split == "contiguous" else 2 * c
    if s % parts:
        raise ValueError(f"seq_len={s!r} must be a multiple of {parts} for a {split} split")
    n = s // parts

    def pairs(chunk: int) -> int:  # chunk i sees i whole chunks before it and half of itself
        return chunk * n * n + n * (n + 1) // 2

    if split == "contiguous":
        return [pairs(r) for r in range(c)]
    return [pairs(r) + pairs(2 * c - 1 - r) for r in range(c)]


def expert_capacity(tokens: int, n_experts: int, top_k: int, capacity_factor: float) -> int:
    """Most token choices one expert accepts from ``tokens`` tokens: ``⌈f · k · T / E⌉``.

    With perfectly even routing each expert would receive ``k·T/E``; the capacity factor
    ``f`` leaves room for unevenness, and choices beyond the capacity are dropped.

    Examples
    --------
    >>> from gpulab.costmodels.split_layers import expert_capacity
    >>> expert_capacity(256, 4, 2, 1.0), expert_capacity(256, 4, 2, 1.25)
    (128, 160)
    """
    t = positive_int("tokens", tokens)
    e = positive_int("n_experts", n_experts)
    k = positive_int("top_k", top_k)
    f = positive_number("capacity_factor", capacity_factor)
    return math.ceil(f * k * t / e)
