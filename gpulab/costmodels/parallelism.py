"""Cost formulas of every parallelism the course teaches, and a rule for combining them.

Each function is one formula of the chapter, for one transformer layer unless it says
otherwise (``b`` micro-batch size, ``s`` sequence length, ``h`` hidden size, ``a`` attention
heads, ``t`` tensor-parallel ranks):

* **tensor parallelism** (Megatron-LM, Shoeybi et al. 2019): the MLP's first matrix split by
  columns, the second by rows; one all-reduce of the ``b·s·h`` output in the forward pass and
  one of the input's gradient in the backward pass, per MLP and per attention block —
  :func:`tensor_parallel_comm`;
* **sequence parallelism** (Korthikanti et al. 2022): the same traffic as an all-gather plus a
  reduce-scatter, with LayerNorm and dropout activations split ``t`` ways —
  :func:`layer_activation_bytes`;
* **pipeline schedules** (GPipe, Huang et al. 2019; 1F1B, Narayanan et al. 2021): the
  bubble of ``p`` equal stages fed ``m`` micro-batches, ``(p-1)/(m+p-1)`` —
  :func:`pipeline_bubble`; the micro-batches whose activations a stage holds at once —
  :func:`pipeline_inflight_microbatches`; every forward and backward of a step simulated
  from per-stage times — :func:`simulate_pipeline`, :func:`stage_times_from_measurement`;
* **data parallelism**: ZeRO / FSDP sharding of optimizer state (stage 1), gradients
  (stage 2) and parameters (stage 3) over the ranks (Rajbhandari et al. 2020) —
  :func:`sharded_memory`; a weak-scaling curve from the data-parallel step model —
  :func:`scaling_curve`; Amdahl's law — :func:`amdahl_speedup`;
* **context parallelism** (ring attention, Liu et al. 2023): each rank keeps ``s/c`` tokens and
  passes key and value blocks round a ring — :func:`context_parallel_bytes`;
* **expert parallelism** (GShard, Lepikhin et al. 2021): tokens travel to the rank holding
  their expert and back, two all-to-alls — :func:`expert_parallel_bytes`;
* a rule for the degrees of tensor, pipeline, context and data parallelism of one job, with
  its arithmetic written out — :func:`suggest_parallelism`.

See also the chapters "Scaling out" (``book/distributed.md``, ``book/parallelism.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral

from gpulab._checks import (
    MAX_SIMULATED,
    at_most,
    choice,
    finite_result,
    flag,
    fraction,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
    wrong_type,
)
from gpulab.costmodels.comms import allreduce_bytes_per_rank, dp_step_time
from gpulab.costmodels.memory import zero_bytes_per_param
from gpulab.hardware.interconnects import resolve_link
from gpulab.hardware.specs import resolve_spec
from gpulab.units import format_bytes

__all__ = [
    "ParallelPlan",
    "PipelineOp",
    "PipelineSchedule",
    "ShardedMemory",
    "amdahl_speedup",
    "pipeline_bubble",
    "scaling_curve",
    "sharded_memory",
    "simulate_pipeline",
    "stage_times_from_measurement",
    "RECOMPUTE",
    "SCHEDULES",
    "TensorParallelComm",
    "context_parallel_bytes",
    "expert_parallel_bytes",
    "layer_activation_bytes",
    "pipeline_inflight_microbatches",
    "suggest_parallelism",
    "tensor_parallel_comm",
]

#: Pipeline schedules :func:`simulate_pipeline` and :func:`pipeline_inflight_microbatches` know.
SCHEDULES = ("gpipe", "1f1b")
RECOMPUTE = ("none", "selective", "full")
_BLOCKS = {"mlp": 1, "attention": 1, "layer": 2}  # tensor-parallel blocks per unit


def _bytes_per_value(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise wrong_type(name, value, "1, 2, 4 or 8 (bytes per value)")
    if value not in (1, 2, 4, 8):
        raise ValueError(f"{name}={value!r} must be 1, 2, 4 or 8 (bytes per value)")
    return int(value)


@dataclass(frozen=True)
class TensorParallelComm:
    """Communication of Megatron-style tensor parallelism for one forward + backward pass.

    Attributes
    ----------
    n_allreduces : int
        All-reduces per rank: 2 per tensor-parallel block (forward output, backward input
        gradient).
    message_bytes : int
        Size of each all-reduced tensor: ``b·s·h`` values.
    bytes_per_rank : float
        What each rank sends in a ring all-reduce of every message,
        ``n_allreduces · 2(t-1)/t · message_bytes``.
    """

    n_allreduces: int
    message_bytes: int
    bytes_per_rank: float

    def __post_init__(self) -> None:
        non_negative_int("n_allreduces", self.n_allreduces)
        non_negative_int("message_bytes", self.message_bytes)
        non_negative_number("bytes_per_rank", self.bytes_per_rank)

    @property
    def total_message_bytes(self) -> int:
        """Bytes all-reduced per step: ``n_allreduces · message_bytes``."""
        return self.n_allreduces * self.message_bytes


def tensor_parallel_comm(
    batch_size: int,
    seq_len: int,
    hidden: int,
    n_gpus: int,
    *,
    bytes_per_value: int = 2,
    layers: int = 1,
    block: str = "layer",
) -> TensorParallelComm:
    """All-reduces and bytes of tensor parallelism across ``n_gpus`` ranks, forward + backward.

    In Megatron's MLP the first matrix is split by columns (each rank computes a slice of the
    hidden activations, no communication) and the second by rows (each rank a partial sum of
    the output, all-reduced). The backward pass mirrors it: the gradient of the MLP's input is
    a partial sum on each rank, all-reduced. Attention splits its heads the same way. So each
    block costs 2 all-reduces of ``b·s·h`` values per step; a transformer layer (attention +
    MLP) costs 4. Sequence parallelism replaces each all-reduce by an all-gather and a
    reduce-scatter of the same total size.

    Parameters
    ----------
    batch_size, seq_len, hidden : int
        ``b``, ``s`` and ``h`` of the activations (for an MLP on plain vectors, ``seq_len=1``).
    n_gpus : int
        Tensor-parallel ranks ``t``.
    bytes_per_value : int
        2 for 16-bit activations, 4 for FP32.
    layers : int
        Units counted.
    block : str
        ``"mlp"`` or ``"attention"`` (one block per unit) or ``"layer"`` (both).

    Examples
    --------
    >>> import gpulab as gl
    >>> c = gl.tensor_parallel_comm(8, 1, 512, 2, bytes_per_value=4, block="mlp")
    >>> c.n_allreduces, c.message_bytes, c.bytes_per_rank
    (2, 16384, 32768.0)
    >>> gl.tensor_parallel_comm(1, 2048, 4096, 8, layers=32).n_allreduces
    128
    >>> gl.tensor_parallel_comm(1, 1, 8, 2, block="conv")
    Traceback (most recent call last):
    ...
    ValueError: block='conv' is not known; use one of 'mlp', 'attention', 'layer'
    """
    b = positive_int("batch_size", batch_size)
    s = positive_int("seq_len", seq_len)
    h = positive_int("hidden", hidden)
    t = positive_int("n_gpus", n_gpus)
    width = _bytes_per_value("bytes_per_value", bytes_per_value)
    n_layers = positive_int("layers", layers)
    choice("block", block, tuple(_BLOCKS))
    n = 2 * _BLOCKS[block] * n_layers
    message = b * s * h * width
    per_rank = n * allreduce_bytes_per_rank(message, t) if t > 1 else 0.0
    return TensorParallelComm(n_allreduces=n, message_bytes=message, bytes_per_rank=per_rank)


def layer_activation_bytes(
    batch_size: int,
    seq_len: int,
    hidden: int,
    heads: int,
    *,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    value_bytes: int = 2,
) -> float:
    """Activation bytes one transformer layer keeps for backward (Korthikanti et al. 2022).

    The paper's Table 2, for ``t`` tensor-parallel ranks and 16-bit activations:

    ========================  ===========================================
    no recomputation          ``sbh · (10 + 24/t + 5as/(ht))``
    + sequence parallelism    ``sbh · (34/t + 5as/(ht))``
    selective recomputation   the ``5as/(ht)`` attention term dropped
    full recomputation        ``2sbh`` (the layer's input only)
    ========================  ===========================================

    Parameters
    ----------
    batch_size, seq_len, hidden, heads : int
        ``b``, ``s``, ``h`` and ``a``.
    tensor_parallel : int
        ``t``; 1 is the unsplit layer, ``sbh · (34 + 5as/h)``.
    sequence_parallel : bool
        Split LayerNorm and dropout activations along the sequence too.
    recompute : str
        One of :data:`RECOMPUTE`.
    value_bytes : int
        Bytes of each activation value: 2 for 16-bit (the paper's case), 4 for FP32
        training. The one-byte dropout masks stay one byte. Per layer and rank the saved
        tensors are ``sbh · (4w + 2)`` replicated (LayerNorm and linear inputs, two dropout
        masks), ``sbh · 12w / t`` split by tensor parallelism (attention and MLP values), and
        ``as²b · (2w + 1) / t`` for the attention scores (softmax output, its dropout mask
        and output), with ``w = value_bytes``: for ``w = 2`` the table's 10, 24 and 5.

    Examples
    --------
    >>> import gpulab as gl
    >>> s, b, h, a = 2048, 1, 4096, 32
    >>> gl.layer_activation_bytes(b, s, h, a) == s * b * h * (34 + 5 * a * s / h)
    True
    >>> gl.layer_activation_bytes(b, s, h, a, tensor_parallel=8, sequence_parallel=True,
    ...                           recompute="selective") == s * b * h * 34 / 8
    True
    >>> gl.layer_activation_bytes(b, s, h, a, recompute="full") == 2 * s * b * h
    True
    >>> gl.layer_activation_bytes(b, s, h, a, value_bytes=4) == s * b * h * (66 + 9 * a * s / h)
    True
    """
    b = positive_int("batch_size", batch_size)
    s = positive_int("seq_len", seq_len)
    h = positive_int("hidden", hidden)
    a = positive_int("heads", heads)
    t = positive_int("tensor_parallel", tensor_parallel)
    flag("sequence_parallel", sequence_parallel)
    choice("recompute", recompute, RECOMPUTE)
    w = positive_int("value_bytes", value_bytes)
    sbh = s * b * h
    if recompute == "full":  # the layer's input only
        return float(w * sbh) / (t if sequence_parallel else 1)
    attention = 0.0 if recompute == "selective" else (2 * w + 1) * a * s / (h * t)
    replicated, split = 4 * w + 2, 12 * w
    linear = (replicated + split) / t if sequence_parallel else replicated + split / t
    return sbh * (linear + attention)


def pipeline_inflight_microbatches(
    n_stages: int, n_microbatches: int, schedule: str = "gpipe", stage: int = 0
) -> int:
    """Micro-batches whose activations stage ``stage`` holds at its peak.

    GPipe runs every forward before any backward, so each stage holds all ``m``. 1F1B starts
    a micro-batch's backward as soon as it can: stage ``i`` of ``p`` runs ``p - i`` forwards
    ahead, then alternates one forward, one backward, so it holds ``min(m, p - i)``. Both
    schedules idle for the same bubble, :func:`gpulab.pipeline_bubble`; 1F1B saves memory.

    Examples
    --------
    >>> import gpulab as gl
    >>> [gl.pipeline_inflight_microbatches(2, m, "gpipe") for m in (1, 2, 4, 8)]
    [1, 2, 4, 8]
    >>> [gl.pipeline_inflight_microbatches(2, m, "1f1b") for m in (1, 2, 4, 8)]
    [1, 2, 2, 2]
    >>> gl.pipeline_inflight_microbatches(4, 16, "1f1b", stage=3)
    1
    >>> gl.pipeline_inflight_microbatches(2, 4, "1f1b", stage=2)
    Traceback (most recent call last):
    ...
    ValueError: stage=2 must be a stage index from 0 to 1
    """
    p = positive_int("n_stages", n_stages)
    m = positive_int("n_microbatches", n_microbatches)
    choice("schedule", schedule, SCHEDULES)
    if isinstance(stage, bool) or not isinstance(stage, Integral):
        raise wrong_type("stage", stage, f"a stage index from 0 to {p - 1}")
    if not 0 <= stage < p:
        raise ValueError(f"stage={stage!r} must be a stage index from 0 to {p - 1}")
    return m if schedule == "gpipe" else min(m, p - stage)


def context_parallel_bytes(
    batch_size: int,
    seq_len: int,
    kv_hidden: int,
    n_gpus: int,
    *,
    bytes_per_value: int = 2,
    backward: bool = True,
) -> float:
    """Bytes each rank sends per attention layer under ring context parallelism.

    Each of ``c`` ranks holds ``s/c`` tokens and their keys and values
    (``2 · b · s/c · h_kv`` values). The blocks travel round the ring: ``c - 1`` hops in the
    forward pass, and in the backward pass the blocks again plus their gradients, twice as
    many bytes. ``kv_hidden`` is ``h`` for multi-head attention and smaller with grouped-query
    attention (key/value heads × head size).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.context_parallel_bytes(1, 8192, 1024, 4, backward=False)  # 3 hops of 2*2048*1024*2
    25165824.0
    >>> gl.context_parallel_bytes(1, 8192, 1024, 4)  # forward + twice as much backward
    75497472.0
    >>> gl.context_parallel_bytes(1, 8192, 1024, 1)
    0.0
    """
    b = positive_int("batch_size", batch_size)
    s = positive_int("seq_len", seq_len)
    h_kv = positive_int("kv_hidden", kv_hidden)
    c = positive_int("n_gpus", n_gpus)
    width = _bytes_per_value("bytes_per_value", bytes_per_value)
    flag("backward", backward)
    forward = (c - 1) * 2 * b * (s / c) * h_kv * width
    return forward * (3 if backward else 1)


def expert_parallel_bytes(
    tokens_per_gpu: int,
    hidden: int,
    n_gpus: int,
    *,
    top_k: int = 1,
    bytes_per_value: int = 2,
    backward: bool = True,
) -> float:
    """Bytes each rank sends per mixture-of-experts layer under expert parallelism.

    Each token goes to its ``top_k`` experts and comes back: two all-to-alls (dispatch and
    combine) in the forward pass, two more in the backward pass. With routing spread evenly
    over ``e`` ranks, ``(e-1)/e`` of the ``tokens · k · h`` values leave the rank each time.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.expert_parallel_bytes(4096, 4096, 8, top_k=2, backward=False) / 2**20
    112.0
    >>> gl.expert_parallel_bytes(4096, 4096, 1)
    0.0
    """
    tokens = positive_int("tokens_per_gpu", tokens_per_gpu)
    h = positive_int("hidden", hidden)
    e = positive_int("n_gpus", n_gpus)
    k = positive_int("top_k", top_k)
    width = _bytes_per_value("bytes_per_value", bytes_per_value)
    flag("backward", backward)
    one_way = tokens * k * h * width * (e - 1) / e
    return one_way * 2 * (2 if backward else 1)


def _power_of_two_up_to(limit: int) -> list[int]:
    values, v = [], 1
    while v <= limit:
        values.append(v)
        v *= 2
    return values


@dataclass(frozen=True)
class ParallelPlan:
    """Degrees of parallelism for one training job, with the memory arithmetic behind them.

    ``tensor · pipeline · context · data`` equals the GPU count. ``lines`` writes each
    decision out with its numbers.
    """

    tensor: int
    pipeline: int
    context: int
    data: int
    state_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    memory_bytes: float
    lines: tuple[str, ...]

    def __post_init__(self) -> None:
        for name in ("tensor", "pipeline", "context", "data"):
            positive_int(name, getattr(self, name))
        non_negative_number("state_bytes_per_gpu", self.state_bytes_per_gpu)
        non_negative_number("activation_bytes_per_gpu", self.activation_bytes_per_gpu)
        positive_number("memory_bytes", self.memory_bytes)
        if not isinstance(self.lines, tuple) or not all(isinstance(x, str) for x in self.lines):
            raise wrong_type("lines", self.lines, "a tuple of str")

    @property
    def n_gpus(self) -> int:
        """GPUs the plan uses."""
        return self.tensor * self.pipeline * self.context * self.data

    @property
    def fits(self) -> bool:
        """Whether state and activations fit in the usable memory of one GPU."""
        return self.state_bytes_per_gpu + self.activation_bytes_per_gpu <= self.memory_bytes

    def __str__(self) -> str:
        return "\n".join(self.lines)


def suggest_parallelism(
    n_params: float,
    *,
    layers: int,
    hidden: int,
    seq_len: int,
    n_gpus: int,
    spec="H100 SXM5 80GB",
    gpus_per_node: int = 8,
    headroom: float = 0.9,
    state_share: float = 0.25,
) -> ParallelPlan:
    """A combination of tensor, pipeline, context and data parallelism, decided step by step.

    The rule follows the usual order (Narayanan et al. 2021; the Ultra-Scale Playbook):

    1. **tensor** parallelism inside a node (NVLink), the smallest power of two up to
       ``gpus_per_node`` that brings the 16-bit weights and gradients (4 bytes per
       parameter) under ``state_share`` of the usable memory, else the whole node;
    2. **pipeline** parallelism across nodes, the smallest power of two that does; where
       that power of two does not divide ``n_gpus / t`` (2,240 GPUs are 8 × 280), the
       smallest divisor of ``n_gpus / t`` that does, one that gives every stage the same
       number of whole layers first (``n_gpus`` too few for any such divisor is refused);
    3. **context** parallelism, the smallest power of two that fits one sequence's
       activations next to the state (full recomputation: ``2·s·h`` bytes per layer, split
       ``t·c`` ways with sequence parallelism; 1F1B keeps ``p`` micro-batches of ``L/p``
       layers on the first stage, so ``L`` layers' worth);
    4. **data** parallelism for the remaining GPUs, with the 12 bytes per parameter of
       FP32 master weights and Adam moments sharded across it (ZeRO-1).

    ``usable memory = headroom × the GPU's memory``. It is a rule of thumb that shows the
    arithmetic, not a tuner: real configurations also weigh throughput, batch size and
    the network.

    Parameters
    ----------
    n_params : float
        Parameters of the model.
    layers, hidden, seq_len : int
        Transformer layers ``L``, hidden size ``h``, tokens per sequence ``s``.
    n_gpus : int
        GPUs of the job; must be a multiple of the tensor-parallel degree.
    spec : DeviceSpec or str
        The GPU (its memory).
    gpus_per_node : int
        GPUs joined by NVLink in one node: the most tensor parallelism goes.
    headroom, state_share : float
        Usable share of memory; share of it weights and gradients may take.

    Examples
    --------
    Llama 3 405B on 16,384 H100s (Llama 3 paper, Table 4: TP 8, CP 1, PP 16, DP 128 at 8K
    tokens; CP 16 and DP 8 at 128K):

    >>> import gpulab as gl
    >>> plan = gl.suggest_parallelism(405e9, layers=126, hidden=16384, seq_len=8192,
    ...                               n_gpus=16384, spec="H100 SXM5 80GB")
    >>> plan.tensor, plan.pipeline, plan.context, plan.data
    (8, 16, 1, 128)

    Megatron-Turing NLG 530B on 2,240 A100s (Smith et al. 2022: 105 layers, h = 20,480, TP 8
    and PP 35 per 280-GPU replica, so DP 8):

    >>> plan = gl.suggest_parallelism(530e9, layers=105, hidden=20480, seq_len=2048,
    ...                               n_gpus=2240, spec="A100 80GB SXM4")
    >>> plan.tensor, plan.pipeline, plan.context, plan.data
    (8, 35, 1, 8)
    """
    n = positive_number("n_params", n_params)
    n_layers = positive_int("layers", layers)
    h = positive_int("hidden", hidden)
    s = positive_int("seq_len", seq_len)
    total = positive_int("n_gpus", n_gpus)
    node = positive_int("gpus_per_node", gpus_per_node)
    headroom = fraction("headroom", headroom, allow_zero=False)
    share = fraction("state_share", state_share, allow_zero=False)
    device = resolve_spec("spec", spec)
    if device.memory_bytes is None:
        raise ValueError(f"spec={device.name!r} has no memory size in the registry")
    usable = headroom * device.memory_bytes
    budget = share * usable
    fmt = format_bytes
    lines = [
        f"{device.name}: {fmt(device.memory_bytes)} × {headroom:.0%} headroom = "
        f"{fmt(usable)} usable; weights + gradients may take {share:.0%} = {fmt(budget)}"
    ]
    finite_result(16 * n, n_params=n_params)  # the state's bytes: 4 + 12 per parameter
    wg = 4 * n  # 16-bit weights and gradients
    tensor = next((t for t in _power_of_two_up_to(node) if wg / t <= budget), None)
    tensor = tensor or max(_power_of_two_up_to(node))
    lines.append(
        f"tensor  t = {tensor}: 4 B × {n:.3g} params / {tensor} = {fmt(wg / tensor)}"
        + (" (fits)" if wg / tensor <= budget else f" (> {fmt(budget)}: a node is not enough)")
    )
    if total % tensor:
        raise ValueError(f"n_gpus={total!r} must be a multiple of tensor = {tensor}")
    pipeline = 1
    while wg / (tensor * pipeline) > budget and pipeline < n_layers:
        pipeline *= 2
    note = ""
    rest = total // tensor
    if rest % pipeline:  # e.g. 2,240 GPUs: no power of two above 8 divides 280
        divisors = [d for d in range(1, min(rest, n_layers) + 1) if rest % d == 0]
        fitting = [d for d in divisors if wg / (tensor * d) <= budget]
        whole = [d for d in fitting if n_layers % d == 0]
        if not fitting:  # too few GPUs for any split that fits: say how many a copy needs
            raise ValueError(
                f"n_gpus={total!r} must be a multiple of tensor × pipeline = {tensor * pipeline}"
                f", the split that holds the weights and gradients of n_params={n:.3g}"
            )
        pipeline = (whole or fitting)[0]
        note = f" (divides {total} / {tensor} = {rest}" + (
            f"; {n_layers // pipeline} whole layers per stage)" if whole else ")"
        )
    lines.append(
        f"pipeline p = {pipeline}: {fmt(wg / tensor)} / {pipeline} = "
        f"{fmt(wg / (tensor * pipeline))} per GPU{note}"
    )
    act_full = 2 * s * h * n_layers  # bytes, full recomputation, L layers on stage 0
    context = 1
    while True:
        data = total // (tensor * pipeline * context)
        state = wg / (tensor * pipeline) + 12 * n / (tensor * pipeline * data)
        act = act_full / (tensor * context)
        if state + act <= usable or data == 1 or total % (tensor * pipeline * context * 2):
            break
        context *= 2
    lines.append(
        f"context c = {context}: activations 2 B × s {s} × h {h} × L {n_layers} / "
        f"(t {tensor} × c {context}) = {fmt(act)}"
    )
    lines.append(
        f"data    d = {data}: {total} GPUs / ({tensor} × {pipeline} × {context}); "
        f"Adam + FP32 master 12 B × params / (t·p·d) = {fmt(12 * n / (tensor * pipeline * data))}"
    )
    verdict = "fits" if state + act <= usable else "does NOT fit"
    lines.append(f"per GPU: state {fmt(state)} + activations {fmt(act)} = {fmt(state + act)}"
                 f" of {fmt(usable)}: {verdict}")  # fmt: skip
    return ParallelPlan(
        tensor=tensor,
        pipeline=pipeline,
        context=context,
        data=data,
        state_bytes_per_gpu=state,
        activation_bytes_per_gpu=act,
        memory_bytes=usable,
        lines=tuple(lines),
    )


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
    if isinstance(stage, bool) or not isinstance(stage, Integral):
        raise wrong_type("stage", stage, "0, 1, 2 or 3")
    if not 0 <= stage <= 3:
        raise ValueError(f"stage={stage!r} must be 0, 1, 2 or 3")
    return int(stage)


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
    precision: str | None = None,
    optimizer: str | None = None,
    weight_bytes_per_param: float | None = None,
    grad_bytes_per_param: float | None = None,
    optimizer_bytes_per_param: float | None = None,
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
    precision, optimizer : str, optional
        The bytes per parameter as ZeRO splits them
        (:func:`gpulab.costmodels.memory.zero_bytes_per_param`): ``precision="amp_bf16"``
        with Adam is ``2, 2, 12``, the FP32 master copy counted as optimizer state, so stage 1
        shards it. One of :data:`gpulab.hardware.precision.TRAINING_PRECISIONS` and of
        :data:`gpulab.costmodels.memory.OPTIMIZERS` (default ``"adam"``).
    weight_bytes_per_param, grad_bytes_per_param, optimizer_bytes_per_param : float, optional
        Or the three by hand, instead of ``precision`` and ``optimizer`` (not with them);
        one left out is FP32 training with Adam's (4, 4 and 8). Not the split of
        :func:`gpulab.bytes_per_param` in mixed precision: that one (4, 4, 8) is one GPU under
        ``torch.autocast``, the master weights counted as parameters, and sharded as ZeRO
        shards it overstates stages 1 and 2.

    Raises
    ------
    ValueError
        For ``precision`` or ``optimizer`` given together with byte counts.

    Examples
    --------
    The ZeRO paper's Figure 1: a 7.5B-parameter model trained in mixed precision with Adam
    on 64 GPUs holds 120 GB per GPU replicated, 31.4 / 16.6 / 1.9 GB at stages 1 / 2 / 3.

    >>> import gpulab as gl
    >>> [round(gl.sharded_memory(7.5e9, 64, s, precision="amp_fp16").total_bytes / 1e9, 2)
    ...  for s in range(4)]
    [120.0, 31.41, 16.64, 1.88]
    >>> mixed = dict(weight_bytes_per_param=2, grad_bytes_per_param=2, optimizer_bytes_per_param=12)
    >>> gl.sharded_memory(7.5e9, 64, 1, **mixed) == gl.sharded_memory(7.5e9, 64, 1,
    ...                                                               precision="amp_fp16")
    True
    """
    n = non_negative_number("n_params", n_params)
    p = positive_int("n_gpus", n_gpus)
    stage = _stage(stage)
    by_hand = {
        "weight_bytes_per_param": weight_bytes_per_param,
        "grad_bytes_per_param": grad_bytes_per_param,
        "optimizer_bytes_per_param": optimizer_bytes_per_param,
    }
    given = [name for name, value in by_hand.items() if value is not None]
    if given and (precision is not None or optimizer is not None):
        named = "precision" if precision is not None else "optimizer"
        raise ValueError(
            f"{named}={precision if precision is not None else optimizer!r} and "
            f"{given[0]}={by_hand[given[0]]!r} are two ways to give the bytes per parameter: "
            "give precision (and optimizer) for ZeRO's split, or the byte counts, not both"
        )
    split = zero_bytes_per_param(
        "fp32" if precision is None else precision, "adam" if optimizer is None else optimizer
    )
    defaults = dict(zip(by_hand, split.values(), strict=True))
    sizes = [
        non_negative_number(name, defaults[name] if value is None else value)
        for name, value in by_hand.items()
    ]
    params, grads, optimizer_state = (n * b for b in sizes)
    given_bytes = {name: value for name, value in zip(by_hand, sizes, strict=True)}
    finite_result(params + grads + optimizer_state, n_params=n_params, **given_bytes)
    return ShardedMemory(
        params_bytes=params / p if stage >= 3 else params,
        grads_bytes=grads / p if stage >= 2 else grads,
        optimizer_bytes=optimizer_state / p if stage >= 1 else optimizer_state,
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
        raise wrong_type("n_gpus", n_gpus, "a sequence of GPU counts, e.g. [1, 2, 4]")
    counts = [positive_int(f"n_gpus[{i}]", p) for i, p in enumerate(n_gpus)]
    if not counts:
        raise ValueError("n_gpus=[] must hold at least one GPU count")
    the_link = resolve_link("link", link)
    return [
        dp_step_time(compute_s, grad_bytes, p, link=the_link, overlap=overlap, alpha_s=alpha_s)
        for p in counts
    ]


@dataclass(frozen=True)
class PipelineOp:
    """One forward (``kind="F"``) or backward (``"B"``) of one micro-batch on one stage."""

    stage: int
    microbatch: int
    kind: str
    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        non_negative_int("stage", self.stage)
        non_negative_int("microbatch", self.microbatch)
        choice("kind", self.kind, ("F", "B"))
        start = non_negative_number("start_s", self.start_s)
        if non_negative_number("end_s", self.end_s) < start:
            raise ValueError(f"end_s={self.end_s!r} must not be before start_s={start!r}")


@dataclass(frozen=True)
class PipelineSchedule:
    """A simulated pipeline step.

    Attributes
    ----------
    schedule : str
        ``"gpipe"`` or ``"1f1b"``.
    ops : tuple of PipelineOp
        Every forward and backward with its start and end, in seconds from the step's start.
    step_s : float
        When the last backward ends.
    bubble : float
        ``1 - busy / (n_stages · step_s)``: the idle share of the stages' time.
    peak_in_flight : tuple of int
        Per stage, the most micro-batches whose activations it holds at once (forward done,
        backward not yet): ``m`` for GPipe, at most ``n_stages - stage`` for 1F1B.
    """

    schedule: str
    n_stages: int
    n_microbatches: int
    ops: tuple
    step_s: float
    bubble: float
    peak_in_flight: tuple

    def __post_init__(self) -> None:
        choice("schedule", self.schedule, SCHEDULES)
        positive_int("n_stages", self.n_stages)
        positive_int("n_microbatches", self.n_microbatches)
        if not isinstance(self.ops, tuple) or not all(
            isinstance(op, PipelineOp) for op in self.ops
        ):
            raise TypeError(
                f"ops={self.ops!r:.60} must be a tuple of PipelineOp, not {type(self.ops).__name__}"
            )
        non_negative_number("step_s", self.step_s)
        fraction("bubble", self.bubble, allow_one=False)
        if not isinstance(self.peak_in_flight, tuple):
            raise wrong_type("peak_in_flight", self.peak_in_flight, "a tuple of ints")
        for i, v in enumerate(self.peak_in_flight):
            non_negative_int(f"peak_in_flight[{i}]", v)


def _per_stage(name: str, values, n_stages: int | None = None) -> list[float]:
    if hasattr(values, "tolist"):  # a NumPy array
        values = values.tolist()
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise wrong_type(name, values, "a sequence of seconds, one per stage")
    out = [positive_number(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name}={values!r} must hold one time per stage (at least one)")
    if n_stages is not None and len(out) != n_stages:
        raise ValueError(f"{name} has {len(out)} entries; forward_s has {n_stages}: one per stage")
    return out


def _order(schedule: str, stage: int, p: int, m: int) -> list[tuple[str, int]]:
    if schedule == "gpipe":  # all forwards, then all backwards
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(p - stage - 1, m)  # 1F1B: fill the pipe, then one forward, one backward
    order = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [("F", warmup + i), ("B", i)]
    return order + [("B", i) for i in range(m - warmup, m)]


def simulate_pipeline(
    forward_s, backward_s, n_microbatches: int, *, schedule: str = "gpipe", comm_s: float = 0.0
) -> PipelineSchedule:
    """When each stage runs each micro-batch's forward and backward, and the bubble.

    A stage runs its operations in the schedule's order, each as soon as its input is there:
    a forward needs the previous stage's forward of that micro-batch (plus ``comm_s`` for the
    transfer), a backward the next stage's backward (plus ``comm_s``), or on the last stage
    its own forward.

    Parameters
    ----------
    forward_s, backward_s : sequence of float
        Per stage, seconds for one micro-batch's forward and backward.
    n_microbatches : int
        Micro-batches per step, ``m``; stages × micro-batches at most ``MAX_SIMULATED``
        (10 000), since each operation is simulated one by one.
    schedule : {"gpipe", "1f1b"}
        GPipe: all forwards, then all backwards. 1F1B: after ``p - 1 - stage`` warm-up
        forwards, alternate one forward and one backward.
    comm_s : float
        Seconds to send one micro-batch's activations (or their gradients) between stages.

    Returns
    -------
    PipelineSchedule

    Examples
    --------
    With ``p`` equal stages and no transfer time both schedules idle ``(p-1)/(m+p-1)``:

    >>> import gpulab as gl
    >>> s = gl.simulate_pipeline([1.0] * 4, [2.0] * 4, 8, schedule="1f1b")
    >>> round(s.bubble, 4), round(gl.pipeline_bubble(4, 8), 4), s.peak_in_flight
    (0.2727, 0.2727, (4, 3, 2, 1))
    """
    fwd = _per_stage("forward_s", forward_s)
    p = len(fwd)
    bwd = _per_stage("backward_s", backward_s, p)
    m = positive_int("n_microbatches", n_microbatches)
    at_most("n_microbatches", m, MAX_SIMULATED // p, f"micro-batches simulated over {p} stages")
    choice("schedule", schedule, SCHEDULES)
    comm = non_negative_number("comm_s", comm_s)
    # Every operation starts at most one transfer after the one before it ends, so this
    # bounds the step: if it is finite, so is every time the simulation computes.
    finite_result(
        m * (sum(fwd) + sum(bwd)) + 2 * p * m * comm,
        forward_s=forward_s,
        backward_s=backward_s,
        comm_s=comm_s,
    )
    orders = [_order(schedule, s, p, m) for s in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    nxt = [0] * p
    ops = []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while nxt[s] < len(orders[s]):
                kind, i = orders[s][nxt[s]]
                if kind == "F":
                    dep = 0.0 if s == 0 else done.get(("F", s - 1, i))
                    ready = dep if s == 0 or dep is None else dep + comm
                else:
                    dep = done.get(("F", s, i)) if s == p - 1 else done.get(("B", s + 1, i))
                    ready = None if dep is None else dep + (0.0 if s == p - 1 else comm)
                if ready is None:
                    break
                start = max(free[s], ready)
                end = start + (fwd[s] if kind == "F" else bwd[s])
                done[(kind, s, i)] = end
                free[s] = end
                ops.append(PipelineOp(s, i, kind, start, end))
                nxt[s] += 1
                progressed = True
        if not progressed:  # cannot happen for the two schedules; guards a future one
            raise RuntimeError(f"schedule {schedule!r} deadlocked")
    step = max(op.end_s for op in ops)
    busy = m * (sum(fwd) + sum(bwd))
    peaks = []
    for s in range(p):
        held = best = 0
        for kind, _ in orders[s]:
            held += 1 if kind == "F" else -1
            best = max(best, held)
        peaks.append(best)
    ops.sort(key=lambda o: (o.stage, o.start_s))
    bubble = 1 - busy / (p * step)
    if bubble >= 1:  # the compute rounds away next to the transfers
        raise ValueError(
            f"comm_s={comm_s!r} is too large next to the stage times: the stages would "
            "be busy for no measurable share of the step"
        )
    return PipelineSchedule(schedule, p, m, tuple(ops), step, bubble, tuple(peaks))


def stage_times_from_measurement(
    step_s: float,
    bubble: float,
    n_microbatches: int,
    *,
    n_stages: int = 2,
    backward_ratio: float = 2.0,
) -> dict[str, object]:
    """Per-micro-batch stage times that reproduce a measured pipeline step and bubble.

    The distributed lab records, per ``m``, the step time and each stage's idle share
    (averaged over the stages). Assuming equal stages, each stage computes
    ``(1 - bubble) · step_s`` per step, so ``(1 - bubble) · step_s / m`` per micro-batch,
    split into forward and backward as ``1 : backward_ratio``. What the equal-stage GPipe
    schedule leaves unexplained is put on the transfers between stages: ``comm_s`` per
    transfer (``2 (p - 1)`` on the critical path), never below 0. ``n_stages`` is at most
    ``MAX_SIMULATED`` (10 000): the result holds a list entry per stage.

    Returns
    -------
    dict
        ``forward_s`` and ``backward_s`` (lists, one per stage), ``comm_s``, and
        ``exact``: False when the measured bubble is below the equal-stage model's (then no
        transfer time reproduces it, and ``comm_s`` is 0).

    Examples
    --------
    >>> import gpulab as gl
    >>> t = gl.stage_times_from_measurement(0.1, 0.4, 4)
    >>> [round(x * 1e3, 2) for x in (t["forward_s"][0], t["backward_s"][0], t["comm_s"])]
    [5.0, 10.0, 12.5]
    """
    step = positive_number("step_s", step_s)
    idle = fraction("bubble", bubble, allow_one=False)
    m = positive_int("n_microbatches", n_microbatches)
    p = positive_int("n_stages", n_stages)
    at_most("n_stages", p, MAX_SIMULATED, "stages of a simulated pipeline")
    ratio = positive_number("backward_ratio", backward_ratio)
    per_micro = (1 - idle) * step / m
    fwd = per_micro / (1 + ratio)
    slack = step - (m + p - 1) * per_micro
    comm = slack / (2 * (p - 1)) if p > 1 else 0.0
    return {
        "forward_s": [fwd] * p,
        "backward_s": [per_micro - fwd] * p,
        "comm_s": max(comm, 0.0),
        "exact": comm >= 0 or p == 1,
    }
