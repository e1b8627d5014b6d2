"""Size a lab's problem to the device it runs on.

A lab that fills an H100 in a second would take an hour on a 2-core laptop, and a lab
sized for the laptop would leave a GPU idle. ``scale`` picks the value meant for the
device at hand, so each lab finishes in about a minute on a CPU and still fills a GPU.

See also the preface (``book/intro.md``), "How to run the labs".
"""

from __future__ import annotations

import re
from typing import TypeVar

__all__ = ["scale"]

T = TypeVar("T")
_KINDS = ("cpu", "cuda", "mps")
_DEVICE = re.compile(r"^(cpu|cuda|mps)(:\d+)?$")


def _kind(device) -> str:
    """``"cpu"``, ``"cuda"`` or ``"mps"`` for a torch device, a DeviceInfo or a string."""
    if isinstance(device, str):
        match = _DEVICE.match(device)
        kind = match.group(1) if match else None
    else:  # torch.device has .type, gpulab.DeviceInfo has .kind
        kind = getattr(device, "type", None) or getattr(device, "kind", None)
    if kind not in _KINDS:
        raise ValueError(
            f"device={device!r} is not known; use a torch device or one of {', '.join(_KINDS)}"
        )
    return kind


def scale(*, cpu: T, gpu: T, mps: T | None = None, device=None) -> T:
    """Return the value meant for the device the lab runs on.

    Parameters
    ----------
    cpu : any
        Value for a CPU-only machine (keep the lab to about a minute on 2 cores).
    gpu : any
        Value for a CUDA GPU.
    mps : any, optional
        Value for an Apple GPU; defaults to ``cpu`` (they are far smaller than CUDA cards).
    device : str, torch.device or DeviceInfo, optional
        The device to size for (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``); default
        :func:`gpulab.best_device`.

    Raises
    ------
    ValueError
        For a device that is none of CPU, CUDA or MPS.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.scale(cpu=512, gpu=8192, device="cpu")
    512
    >>> gl.scale(cpu=512, gpu=8192, device="cuda")
    8192
    """
    if device is None:
        from gpulab.device import best_device

        device = best_device()
    kind = _kind(device)
    if kind == "cuda":
        return gpu
    if kind == "mps" and mps is not None:
        return mps
    return cpu
