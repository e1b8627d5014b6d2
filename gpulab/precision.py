"""The course's one set of precision names, and what each means for speed and memory.

``precision=`` in every gpulab function takes one of :data:`PRECISIONS`; each function's
docstring says which subset it accepts (a datasheet has peaks only for
:data:`PEAK_PRECISIONS`; the training-memory model knows :data:`TRAINING_PRECISIONS`).
"""

from __future__ import annotations

import contextlib

from gpulab._checks import choice, flag

__all__ = [
    "PEAK_PRECISIONS",
    "PRECISIONS",
    "TRAINING_PRECISIONS",
    "compute_bytes",
    "peak_precision",
    "supported_precisions",
    "tf32",
]

#: Every precision name the course uses. The first five are arithmetic formats; the
#: ``amp_`` ones are mixed-precision training (FP32 master weights, 16-bit arithmetic).
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "amp_fp16", "amp_bf16")

#: Precisions the spec registry can hold a peak FLOP/s figure for, in teaching order.
PEAK_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")

#: Precisions the training-memory model (:func:`gpulab.estimate_training_memory`) knows.
TRAINING_PRECISIONS = ("fp32", "amp_bf16", "amp_fp16", "bf16")

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


# The precisions supported_precisions reports on: the ones a matmul can run in.
_MATMUL_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def supported_precisions(device=None) -> dict[str, str | None]:
    """For each matmul precision, None when ``device`` runs it natively, else the reason.

    On a CUDA GPU the answer follows the compute capability (https://developer.nvidia.com/cuda-gpus
    lists each GPU's): FP16 Tensor Cores came with Volta (7.0), TF32 and BF16 Tensor Cores
    with Ampere (8.0). Below 8.0 TF32 does not exist, so switching it on changes nothing and
    a "tf32" matmul is really FP32; BF16 still runs (torch emulates it) but without Tensor
    Cores. On a CPU TF32 does not exist either; FP32, FP16 and BF16 all run (16-bit ones fast
    only on CPUs with matrix or BF16 instructions).

    Parameters
    ----------
    device : torch.device or str, optional
        The device to ask about; default :func:`gpulab.best_device`.

    Returns
    -------
    dict
        ``{"fp32": ..., "tf32": ..., "fp16": ..., "bf16": ...}``: None for a precision the
        device runs natively, otherwise one sentence saying why not.

    Examples
    --------
    >>> supported_precisions("cpu")["tf32"]
    'TF32 is a mode of NVIDIA Tensor Cores (compute capability 8.0 or later); a CPU has none'
    >>> supported_precisions("cpu")["fp32"] is None
    True
    """
    import torch

    if device is None:
        from gpulab.device import best_device

        device = best_device()
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device={device!r} must be a torch device or its name, like 'cuda'")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device: {exc}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: this machine has no CUDA GPU")
    support: dict[str, str | None] = dict.fromkeys(_MATMUL_PRECISIONS)
    if dev.type != "cuda":
        support["tf32"] = (
            "TF32 is a mode of NVIDIA Tensor Cores (compute capability 8.0 or later); "
            f"a {dev.type.upper()} has none"
        )
        return support
    major, minor = torch.cuda.get_device_capability(dev)
    this = f"this GPU: {major}.{minor}"
    if (major, minor) < (8, 0):
        support["tf32"] = (
            f"TF32 needs compute capability 8.0 or later ({this}): a tf32 matmul here is FP32"
        )
        support["bf16"] = (
            f"BF16 Tensor Cores need compute capability 8.0 or later ({this}): "
            "BF16 runs without Tensor Cores"
        )
    if major < 7:
        support["fp16"] = (
            f"FP16 Tensor Cores need compute capability 7.0 or later ({this}): "
            "FP16 runs without Tensor Cores"
        )
    return support


def tf32(enabled: bool):
    """Context manager: TF32 on (or off) for FP32 matmuls and cuDNN convolutions, then restored.

    TF32 is FP32 storage with Tensor Core arithmetic on a 10-bit mantissa (Ampere and later),
    a switch rather than a dtype. ``tf32(False)`` makes "fp32" mean IEEE FP32 even for
    convolutions, which cuDNN otherwise runs in TF32 by default. Uses PyTorch's
    ``fp32_precision`` settings ("ieee"/"tf32") where they exist and the older
    ``allow_tf32`` flags otherwise (reading the old flags raises once the new ones were set);
    whatever was set before is restored on exit, also when the block raises. On a CPU nothing
    changes what runs.

    Parameters
    ----------
    enabled : bool
        True for TF32, False for IEEE FP32.

    Examples
    --------
    >>> import torch
    >>> with tf32(False):
    ...     c = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> c.sum().item()
    8.0
    """
    flag("enabled", enabled)
    return _tf32(enabled)


@contextlib.contextmanager
def _tf32(enabled: bool):
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    conv = getattr(cudnn, "conv", None)
    if hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):
        switches, value = (
            [(matmul, "fp32_precision"), (conv, "fp32_precision")],
            ("tf32" if enabled else "ieee"),
        )
    else:
        switches, value = [(matmul, "allow_tf32"), (cudnn, "allow_tf32")], enabled
    before = [(owner, name, getattr(owner, name)) for owner, name in switches]
    try:
        for owner, name in switches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, old in reversed(before):
            setattr(owner, name, old)
