"""One transformer block's operations as FLOPs and bytes, with the tokens per step as the knob.

A block (pre-norm, multi-head attention, a GELU MLP) runs, per step of ``tokens`` tokens in
sequences of ``seq_len``:

* four **weight matmuls**: the QKV projection (``d → 3d``), the attention output
  projection (``d → d``) and the MLP's two layers (``d → d_ff → d``). Each reads a weight
  matrix once per step and ``tokens`` rows of activations, so its intensity grows with the
  tokens: ``2·T·a·b / (w·(T·a + a·b + T·b))`` FLOP/byte, about ``T`` in BF16 while
  ``T ≪ a, b``;
* attention's **score** (``Q·Kᵀ``) and **value** (``P·V``) matmuls, per sequence and head:
  their shapes are set by the sequence length and the head size, so their intensity does not
  move with the batch (written out unfused, the ``seq_len × seq_len`` scores go through
  memory);
* **elementwise and row-wise** operations: softmax over the scores, two LayerNorms, the
  GELU and two residual adds: a few FLOPs per element read and written, whatever the batch.

Bytes are the least each kernel must move (every operand read once, the result written once),
as in the roofline chapter; FLOPs per element of the row-wise operations follow the course's
counts (softmax 5, LayerNorm 8, GELU 8, add 1). :func:`crossing_tokens` solves the weight
matmul's intensity for the ridge point: the tokens per step from which it is compute-bound.

See also the chapter "Memory bandwidth and the roofline" (``book/memory_bandwidth.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab._checks import choice, non_negative_number, positive_int, positive_number, text
from gpulab.hardware.precision import PEAK_PRECISIONS

__all__ = ["BlockOp", "ELEMENT_FLOPS", "block_ops", "crossing_tokens", "matmul_intensity"]

#: Bytes per element of the formats a block can run in.
_WORD_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
#: FLOPs per element of the row-wise operations (the course's counts, as in the roofline
#: chapter's figure): softmax max, subtract, exp, sum, divide; LayerNorm's mean, variance,
#: normalise, scale and shift; a tanh-form GELU; one add.
ELEMENT_FLOPS = {"softmax": 5, "layernorm": 8, "gelu": 8, "add": 1}
#: What each operation is, for grouping and colour.
KINDS = ("weight matmul", "attention matmul", "elementwise")


@dataclass(frozen=True)
class BlockOp:
    """One operation of a transformer block in one step: its FLOPs and least bytes.

    Attributes
    ----------
    name : str
        What it is ("QKV projection", "softmax", ...).
    kind : {"weight matmul", "attention matmul", "elementwise"}
        Whether its intensity grows with the tokens per step (weight matmuls) or not.
    flops : float
        FLOPs in one step.
    n_bytes : float
        Bytes it reads and writes at least once in one step.
    precision : str
        The format it computes in, one of :data:`gpulab.PEAK_PRECISIONS`: the roof it sits
        under.

    Examples
    --------
    >>> op = BlockOp("residual add", "elementwise", 1e6, 6e6, "bf16")
    >>> round(op.intensity, 3)
    0.167
    """

    name: str
    kind: str
    flops: float
    n_bytes: float
    precision: str

    def __post_init__(self) -> None:
        text("name", self.name)
        choice("kind", self.kind, KINDS)
        non_negative_number("flops", self.flops)
        positive_number("n_bytes", self.n_bytes)
        choice("precision", self.precision, PEAK_PRECISIONS)

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return self.flops / self.n_bytes


def _word(precision: str) -> int:
    choice("precision", precision, tuple(_WORD_BYTES))
    return _WORD_BYTES[precision]


def matmul_intensity(tokens: float, d_in: int, d_out: int, precision: str = "bf16") -> float:
    """Intensity of ``(tokens × d_in) @ (d_in × d_out)``: each operand read once, result written.

    Parameters
    ----------
    tokens : float
        Rows of activations in the step (above 0).
    d_in, d_out : int
        The weight matrix's shape.
    precision : str
        Format of every operand (``"bf16"``: 2 bytes).

    Examples
    --------
    >>> round(matmul_intensity(1, 4096, 4096), 3)  # one token: each weight used once
    1.0
    >>> round(matmul_intensity(4096, 4096, 4096))  # a square matmul: n / 3 in BF16
    1365
    """
    tokens = positive_number("tokens", tokens)
    positive_int("d_in", d_in)
    positive_int("d_out", d_out)
    word = _word(precision)
    flops = 2 * tokens * d_in * d_out
    return flops / (word * (tokens * d_in + d_in * d_out + tokens * d_out))


def crossing_tokens(
    ridge_point: float, d_in: int, d_out: int, precision: str = "bf16"
) -> float:
    """Tokens per step from which a weight matmul's intensity reaches ``ridge_point``.

    Solves ``2·T·a·b = R·w·(T·a + a·b + T·b)`` for ``T``: ``R·w·a·b / (2·a·b − R·w·(a + b))``.
    For ``T ≪ a, b`` the intensity of a BF16 matmul is about ``T``, so the crossing sits just
    above the ridge point itself.

    Raises
    ------
    ValueError
        If the matmul can never reach the ridge point (its intensity tends to
        ``2·a·b / (w·(a + b))`` as the tokens grow).

    Examples
    --------
    >>> round(crossing_tokens(295.2, 4096, 4096))
    345
    """
    ridge_point = positive_number("ridge_point", ridge_point)
    positive_int("d_in", d_in)
    positive_int("d_out", d_out)
    word = _word(precision)
    a, b = d_in, d_out
    denominator = 2 * a * b - ridge_point * word * (a + b)
    if denominator <= 0:
        limit = 2 * a * b / (word * (a + b))
        raise ValueError(
            f"ridge_point={ridge_point!r}: a {a} × {b} {precision} matmul never reaches it; its "
            f"intensity tends to {limit:.3g} FLOP/byte as the tokens grow"
        )
    return ridge_point * word * a * b / denominator


def block_ops(
    tokens: float,
    *,
    d_model: int = 4096,
    n_heads: int = 32,
    d_ff: int | None = None,
    seq_len: int = 2048,
    precision: str = "bf16",
) -> list[BlockOp]:
    """The operations of one transformer block's forward pass in one step.

    Parameters
    ----------
    tokens : float
        Tokens per step (above 0): the batch in sequences times their length. Attention
        matmuls and row-wise operations scale with it; only the weight matmuls' intensity
        changes.
    d_model : int
        Hidden size ``d`` (default 4096, a 7B-class model's).
    n_heads : int
        Attention heads; ``d_model`` must be a multiple.
    d_ff : int, optional
        MLP width (default ``4 · d_model``).
    seq_len : int
        Tokens per sequence, which sets the attention matmuls' shapes (default 2048).
    precision : str
        Format of every operand and of the arithmetic (default BF16).

    Returns
    -------
    list of BlockOp
        QKV projection, attention scores, softmax, attention values, output projection,
        two LayerNorms, MLP up, GELU, MLP down and two residual adds, in the order they run.

    Examples
    --------
    >>> ops = {op.name: op for op in block_ops(4096)}
    >>> round(ops["QKV projection"].intensity), round(ops["GELU"].intensity)
    (1755, 2)
    >>> few = {op.name: op for op in block_ops(16)}
    >>> ops["softmax"].intensity == few["softmax"].intensity  # the batch does not move it
    True
    """
    tokens = positive_number("tokens", tokens)
    positive_int("d_model", d_model)
    positive_int("n_heads", n_heads)
    positive_int("seq_len", seq_len)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model!r} must be a multiple of n_heads={n_heads!r}")
    d_ff = 4 * d_model if d_ff is None else positive_int("d_ff", d_ff)
    w = _word(precision)
    d, head = d_model, d_model // n_heads
    heads = tokens / seq_len * n_heads  # (sequence, head) pairs in the step

    def weight(name: str, d_in: int, d_out: int) -> BlockOp:
        flops = 2 * tokens * d_in * d_out
        return BlockOp(name, "weight matmul", flops,
                       w * (tokens * d_in + d_in * d_out + tokens * d_out), precision)

    def rowwise(name: str, per_element: int, elements: float, arrays: int) -> BlockOp:
        return BlockOp(name, "elementwise", per_element * elements, arrays * w * elements,
                       precision)

    s = seq_len
    scores = s * s * heads  # elements of the score matrices
    attention = 2 * s * s * head * heads  # FLOPs of Q·Kᵀ, and of P·V
    ops = [
        rowwise("LayerNorm 1", ELEMENT_FLOPS["layernorm"], tokens * d, 2),
        weight("QKV projection", d, 3 * d),
        BlockOp("attention scores Q·Kᵀ", "attention matmul", attention,
                w * (2 * s * head + s * s) * heads, precision),
        rowwise("softmax", ELEMENT_FLOPS["softmax"], scores, 2),
        BlockOp("attention values P·V", "attention matmul", attention,
                w * (s * s + 2 * s * head) * heads, precision),
        weight("output projection", d, d),
        rowwise("residual add 1", ELEMENT_FLOPS["add"], tokens * d, 3),
        rowwise("LayerNorm 2", ELEMENT_FLOPS["layernorm"], tokens * d, 2),
        weight("MLP up", d, d_ff),
        rowwise("GELU", ELEMENT_FLOPS["gelu"], tokens * d_ff, 2),
        weight("MLP down", d_ff, d),
        rowwise("residual add 2", ELEMENT_FLOPS["add"], tokens * d, 3),
    ]
    for op in ops:  # overflow guard: counts must stay finite floats
        if not (math.isfinite(op.flops) and math.isfinite(op.n_bytes)):
            raise ValueError(f"tokens={tokens!r} overflows a float in {op.name}")
    return ops
