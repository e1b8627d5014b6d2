"""The course's one set of precision names, and what each means for speed and memory.

``precision=`` in every gpulab function takes one of :data:`PRECISIONS`; each function's
docstring says which subset it accepts (a datasheet has peaks only for
:data:`PEAK_PRECISIONS`; the training-memory model knows :data:`TRAINING_PRECISIONS`).
"""

from __future__ import annotations

from gpulab._checks import choice

__all__ = [
    "PEAK_PRECISIONS",
    "PRECISIONS",
    "TRAINING_PRECISIONS",
    "UNIT_ROUNDOFF",
    "compute_bytes",
    "peak_precision",
    "TORCH_DTYPE_NAMES",
]

#: Every precision name the course uses. The first five are arithmetic formats; the
#: ``amp_`` ones are mixed-precision training (FP32 master weights, 16-bit arithmetic).
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "amp_fp16", "amp_bf16")

#: Precisions the spec registry can hold a peak FLOP/s figure for, in teaching order.
PEAK_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")

#: Precisions the training-memory model (:func:`gpulab.estimate_training_memory`) knows.
TRAINING_PRECISIONS = ("fp32", "amp_bf16", "amp_fp16", "bf16")

#: The torch dtype (its name in ``torch``) that holds each matmul precision's numbers. TF32
#: is FP32 storage with Tensor Core arithmetic: a switch (:func:`gpulab.tf32`), not a dtype.
TORCH_DTYPE_NAMES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}

#: The unit roundoff u = 2^-p of each arithmetic format with p bits of precision (the stored
#: mantissa bits plus the implicit leading one): rounding to nearest changes a number by a
#: relative amount of at most u. TF32 keeps FP16's 10 mantissa bits (11 bits of precision).
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "tf32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}

_PEAK_OF = {"amp_fp16": "fp16", "amp_bf16": "bf16"}
_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "amp_fp16": 2, "amp_bf16": 2}


def peak_precision(precision: str) -> str:
    """The registry peak a precision runs at: mixed precision runs at its 16-bit peak.

    Examples
    --------
    >>> peak_precision("amp_bf16"), peak_precision("fp32")
    ('bf16', 'fp32')
    """
    choice("precision", precision, PRECISIONS)
    return _PEAK_OF.get(precision, precision)


def compute_bytes(precision: str) -> int:
    """Bytes per element of the arithmetic (and of activations) at ``precision``.

    Examples
    --------
    >>> compute_bytes("amp_bf16"), compute_bytes("fp32"), compute_bytes("fp8")
    (2, 4, 1)
    """
    choice("precision", precision, PRECISIONS)
    return _BYTES[precision]


