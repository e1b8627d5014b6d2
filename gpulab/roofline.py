"""The roofline cost model: a kernel takes at least as long as its arithmetic at peak
FLOP/s, and at least as long as its memory traffic at peak bandwidth.

time ≥ max(FLOPs / peak FLOP/s, bytes / bandwidth). Real kernels reach a fraction of
either ceiling, so every time this module returns is a labelled lower bound.

See also the chapter "What a GPU is" (``book/gpu_basics.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab.specs import DeviceSpec, get_spec

__all__ = ["Prediction", "arithmetic_intensity", "attainable_flops", "predict_time"]


@dataclass(frozen=True)
class Prediction:
    """A roofline prediction: the fastest a kernel could run on a device.

    Attributes
    ----------
    device : str
        Registry name of the device.
    dtype : str
        Precision whose peak was used.
    time_s : float
        Predicted seconds (a lower bound).
    compute_s, memory_s : float
        Time for the arithmetic alone at peak, and for the memory traffic alone at peak.
    bound : {"compute", "memory"}
        Which ceiling sets ``time_s``.
    """

    device: str
    dtype: str
    time_s: float
    compute_s: float
    memory_s: float
    bound: str

    def __str__(self) -> str:
        return (
            f"PREDICTION for {self.device} ({self.dtype}, roofline lower bound, not measured): "
            f"{self.time_s * 1e3:.3g} ms, {self.bound}-bound"
        )


def _spec(device: DeviceSpec | str) -> DeviceSpec:
    return device if isinstance(device, DeviceSpec) else get_spec(device)


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs per byte of memory traffic.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.arithmetic_intensity(flops=2 * 1024**3, bytes_moved=3 * 4 * 1024**2)
    170.66666666666666
    """
    if flops < 0:
        raise ValueError(f"flops={flops!r} must be 0 or more")
    if bytes_moved <= 0:
        raise ValueError(f"bytes_moved={bytes_moved!r} must be positive")
    return flops / bytes_moved


def attainable_flops(device: DeviceSpec | str, intensity: float, dtype: str = "fp32") -> float:
    """Roofline ceiling: min(peak FLOP/s, intensity × bandwidth) for ``device``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.attainable_flops("A100 80GB", intensity=1.0) / 1e9  # memory-bound: 1 FLOP per byte
    2039.0
    """
    spec = _spec(device)
    if intensity < 0:
        raise ValueError(f"intensity={intensity!r} must be 0 or more (FLOPs per byte)")
    if not spec.memory_bandwidth:
        raise ValueError(f"{spec.name} has no memory bandwidth in the registry")
    return min(spec.peak(dtype), intensity * spec.memory_bandwidth)


def predict_time(
    device: DeviceSpec | str, flops: float, bytes_moved: float, dtype: str = "fp32"
) -> Prediction:
    """Predict a kernel's time on ``device`` with the roofline model.

    Parameters
    ----------
    device : DeviceSpec or str
        A registry entry or name.
    flops : float
        Floating-point operations the kernel performs.
    bytes_moved : float
        Bytes it must read from and write to device memory at least once.
    dtype : str
        Which peak to use: ``"fp32"`` (no Tensor Cores), ``"tf32"``, ``"fp16"``, ``"bf16"``...

    Examples
    --------
    >>> import gpulab as gl
    >>> p = gl.predict_time("T4", flops=1e9, bytes_moved=1e9)
    >>> p.bound, round(p.time_s * 1e3, 3)
    ('memory', 3.125)
    """
    spec = _spec(device)
    if flops < 0 or bytes_moved < 0:
        raise ValueError(f"flops={flops!r} and bytes_moved={bytes_moved!r} must be 0 or more")
    if not spec.memory_bandwidth:
        raise ValueError(f"{spec.name} has no memory bandwidth in the registry")
    compute_s = flops / spec.peak(dtype)
    memory_s = bytes_moved / spec.memory_bandwidth
    bound = "compute" if compute_s >= memory_s else "memory"
    return Prediction(spec.name, dtype, max(compute_s, memory_s), compute_s, memory_s, bound)
