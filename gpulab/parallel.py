"""Simple models of parallel training: pipeline bubbles, sharded memory, scaling curves.

These are the formulas the chapter derives and the lab checks against measurements:

* a GPipe-style pipeline of ``p`` stages fed ``m`` micro-batches idles for a fraction
  ``(p-1)/(m+p-1)`` of each step (Huang et al. 2019);
* ZeRO / FSDP shards optimizer state (stage 1), gradients (stage 2) and parameters
  (stage 3) across the ``n_gpus`` data-parallel ranks (Rajbhandari et al. 2020);
* Amdahl's law bounds the speed-up of a job with a serial fraction.

See also the chapter "Scaling out: distributed training" (``book/distributed.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab._checks import fraction, non_negative_int, non_negative_number, positive_int
from gpulab.comms import _as_link, dp_step_time

__all__ = [
    "ShardedMemory",
    "amdahl_speedup",
    "pipeline_bubble",
    "scaling_curve",
    "sharded_memory",
]


def pipeline_bubble(n_stages: int, n_microbatches: int) -> float:
    """Idle fraction of a GPipe pipeline step: ``(p-1) / (m+p-1)``.

    With ``p = n_stages`` equal stages (one GPU each) and ``m = n_microbatches``
    micro-batches a step lasts ``m + p - 1`` micro-batch slots (forward and backward
    alike), of which each stage is busy for ``m``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.pipeline_bubble(2, 1), gl.pipeline_bubble(2, 4), round(gl.pipeline_bubble(4, 32), 4)
    (0.5, 0.2, 0.0857)
    """
    p = positive_int("n_stages", n_stages)
    m = positive_int("n_microbatches", n_microbatches)
    return (p - 1) / (m + p - 1)


def amdahl_speedup(n_gpus: int, serial_fraction: float) -> float:
    """Amdahl's law: speed-up on ``n_gpus`` workers when ``serial_fraction`` of the work
    cannot be parallelised, ``1 / (s + (1-s)/n_gpus)``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.amdahl_speedup(8, 0.0), round(gl.amdahl_speedup(1024, 0.05), 2)
    (8.0, 19.64)
    """
    p = positive_int("n_gpus", n_gpus)
    s = fraction("serial_fraction", serial_fraction)
    return 1.0 / (s + (1.0 - s) / p)


def _stage(stage) -> int:
    try:
        if non_negative_int("stage", stage) <= 3:
            return int(stage)
    except ValueError:
        pass
    raise ValueError(f"stage={stage!r} must be 0, 1, 2 or 3")


@dataclass(frozen=True)
class ShardedMemory:
    """Bytes of training state held by one rank (activations not included).

    Attributes
    ----------
    params_bytes, grads_bytes, optimizer_bytes : float
        Bytes of parameters, gradients and optimizer state on one rank.
    n_gpus : int
        Data-parallel ranks.
    stage : int
        ZeRO stage: 0 (plain DDP, everything replicated) to 3 (everything sharded).
    """

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    n_gpus: int
    stage: int

    def __post_init__(self) -> None:
        for name in ("params_bytes", "grads_bytes", "optimizer_bytes"):
            non_negative_number(name, getattr(self, name))
        positive_int("n_gpus", self.n_gpus)
        _stage(self.stage)

    @property
    def total_bytes(self) -> float:
        """Bytes per rank: parameters + gradients + optimizer state."""
        return self.params_bytes + self.grads_bytes + self.optimizer_bytes


def sharded_memory(
    n_params: float,
    n_gpus: int,
    stage: int,
    *,
    param_bytes: float = 4,
    grad_bytes: float = 4,
    optimizer_bytes: float = 8,
) -> ShardedMemory:
    """Training-state bytes per rank under ZeRO stage 0–3 (FSDP's full sharding is stage 3).

    Parameters
    ----------
    n_params : float
        Number of parameters of the model.
    n_gpus : int
        Data-parallel ranks the state is sharded over.
    stage : {0, 1, 2, 3}
        0: nothing sharded (DDP). 1: optimizer state sharded. 2: also gradients.
        3: also parameters (FSDP ``FULL_SHARD``).
    param_bytes, grad_bytes, optimizer_bytes : float
        Bytes per parameter of each. Defaults: FP32 training with Adam (two FP32 moments
        = 8 bytes). Mixed precision with Adam is ``2, 2, 12`` (the FP32 master copy counts
        as optimizer state), the 16 bytes per parameter of the ZeRO paper.

    Examples
    --------
    The ZeRO paper's Figure 1: a 7.5B-parameter model trained in mixed precision with Adam
    on 64 GPUs holds 120 GB per GPU replicated, 31.4 / 16.6 / 1.9 GB at stages 1 / 2 / 3.

    >>> import gpulab as gl
    >>> [round(gl.sharded_memory(7.5e9, 64, s, param_bytes=2, grad_bytes=2,
    ...                          optimizer_bytes=12).total_bytes / 1e9, 2) for s in range(4)]
    [120.0, 31.41, 16.64, 1.88]
    """
    n = non_negative_number("n_params", n_params)
    p = positive_int("n_gpus", n_gpus)
    stage = _stage(stage)
    sizes = [non_negative_number(name, b) for b, name in
             ((param_bytes, "param_bytes"), (grad_bytes, "grad_bytes"),
              (optimizer_bytes, "optimizer_bytes"))]  # fmt: skip
    params, grads, optimizer = (n * b for b in sizes)
    return ShardedMemory(
        params_bytes=params / p if stage >= 3 else params,
        grads_bytes=grads / p if stage >= 2 else grads,
        optimizer_bytes=optimizer / p if stage >= 1 else optimizer,
        n_gpus=p,
        stage=stage,
    )


def scaling_curve(
    compute_s: float,
    grad_bytes: float,
    n_gpus,
    *,
    link,
    overlap: float = 0.0,
    alpha_s: float | None = None,
) -> list:
    """:func:`gpulab.dp_step_time` for each GPU count in ``n_gpus``: a weak-scaling prediction.

    Parameters
    ----------
    compute_s, grad_bytes, link, overlap, alpha_s
        As in :func:`gpulab.dp_step_time`.
    n_gpus : sequence of int
        The GPU counts to predict, e.g. ``[1, 2, 4, 8]``.

    Examples
    --------
    >>> import gpulab as gl
    >>> curve = gl.scaling_curve(0.1, 1e9, [1, 2, 8], link="PCIe 4")
    >>> [round(s.efficiency, 3) for s in curve]
    [1.0, 0.759, 0.643]
    """
    if isinstance(n_gpus, (str, bytes)) or not hasattr(n_gpus, "__iter__"):
        raise ValueError(f"n_gpus={n_gpus!r} must be a sequence of GPU counts, e.g. [1, 2, 4]")
    counts = [positive_int(f"n_gpus[{i}]", p) for i, p in enumerate(n_gpus)]
    if not counts:
        raise ValueError("n_gpus=[] must hold at least one GPU count")
    the_link = _as_link(link)
    return [
        dp_step_time(compute_s, grad_bytes, p, link=the_link, overlap=overlap, alpha_s=alpha_s)
        for p in counts
    ]
