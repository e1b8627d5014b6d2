"""The roofline cost model: a kernel takes at least as long as its arithmetic at peak
FLOP/s, and at least as long as its memory traffic at peak bandwidth.

time ≥ max(FLOPs / peak FLOP/s, bytes / bandwidth). Real kernels reach a fraction of
either ceiling, so every time this module returns is a labelled lower bound.

The two ceilings come either from a datasheet (a :class:`~gpulab.specs.DeviceSpec` from the
registry) or from measurements of the machine at hand (:func:`measure_ceilings`, which
returns :class:`Ceilings`). :func:`plot_roofline` draws either kind, with kernels on it.

See also the chapters "What a GPU is" (``book/gpu_basics.md``) and "Memory bandwidth"
(``book/memory_bandwidth.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulab.specs import DTYPES, DeviceSpec, get_spec

__all__ = [
    "Ceilings",
    "Prediction",
    "RooflinePoint",
    "arithmetic_intensity",
    "attainable_flops",
    "measure_ceilings",
    "plot_roofline",
    "predict_time",
    "roofline_readout",
]


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


@dataclass(frozen=True)
class Ceilings:
    """The two roofs of one device in one precision: peak FLOP/s and memory bandwidth.

    Attributes
    ----------
    device : str
        What the ceilings belong to (a registry name, or the local device's name).
    dtype : str
        Precision of the compute ceiling, one of :data:`gpulab.specs.DTYPES` or ``"fp64"``.
    peak_flops : float
        Compute ceiling in FLOP/s.
    memory_bandwidth : float
        Bandwidth ceiling in bytes/s.
    measured : bool
        True when both were measured on this machine (:func:`measure_ceilings`); False for
        datasheet figures, which are predictions of what the device could do.
    note : str
        How the ceilings were obtained.

    Examples
    --------
    >>> import gpulab as gl
    >>> c = gl.Ceilings.from_spec("T4", dtype="fp16")
    >>> c.ridge_point, c.measured
    (203.125, False)
    """

    device: str
    dtype: str
    peak_flops: float
    memory_bandwidth: float
    measured: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        for name in ("peak_flops", "memory_bandwidth"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name}={value!r} must be positive")

    @classmethod
    def from_spec(cls, device: DeviceSpec | str, dtype: str = "fp32") -> Ceilings:
        """The datasheet ceilings of a registry device (a prediction, not a measurement)."""
        spec = _spec(device)
        if not spec.memory_bandwidth:
            raise ValueError(f"{spec.name} has no memory bandwidth in the registry")
        return cls(
            spec.name,
            dtype,
            spec.peak(dtype),
            spec.memory_bandwidth,
            measured=False,
            note=f"datasheet: {spec.source_url}",
        )

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte where the two roofs meet: below it a kernel is memory-bound."""
        return self.peak_flops / self.memory_bandwidth

    def attainable(self, intensity: float) -> float:
        """min(peak FLOP/s, intensity × bandwidth): the roofline at ``intensity``."""
        if intensity < 0:
            raise ValueError(f"intensity={intensity!r} must be 0 or more (FLOPs per byte)")
        return min(self.peak_flops, intensity * self.memory_bandwidth)

    def predict(self, flops: float, bytes_moved: float) -> Prediction:
        """The roofline's lower bound on a kernel's time on these ceilings."""
        if flops < 0 or bytes_moved < 0:
            raise ValueError(f"flops={flops!r} and bytes_moved={bytes_moved!r} must be 0 or more")
        compute_s = flops / self.peak_flops
        memory_s = bytes_moved / self.memory_bandwidth
        bound = "compute" if compute_s >= memory_s else "memory"
        return Prediction(
            self.device, self.dtype, max(compute_s, memory_s), compute_s, memory_s, bound
        )

    def __str__(self) -> str:
        kind = "measured" if self.measured else "datasheet"
        return (
            f"{self.device} ({self.dtype}, {kind}): {self.peak_flops / 1e9:,.1f} GFLOP/s, "
            f"{self.memory_bandwidth / 1e9:,.1f} GB/s, ridge point "
            f"{self.ridge_point:.3g} FLOP/byte"
        )


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel to place on a roofline: its FLOPs, its bytes and, once measured, its time.

    Attributes
    ----------
    name : str
        Label shown next to the point.
    flops : float
        FLOPs per call.
    bytes_moved : float
        Bytes per call that must cross the memory interface at least once.
    time_s : float or None
        Measured seconds per call; None for a kernel that is only predicted.

    Examples
    --------
    >>> import gpulab as gl
    >>> p = gl.RooflinePoint("add", flops=1e6, bytes_moved=12e6, time_s=1e-3)
    >>> round(p.intensity, 4), p.flops_per_s
    (0.0833, 1000000000.0)
    """

    name: str
    flops: float
    bytes_moved: float
    time_s: float | None = None

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return arithmetic_intensity(self.flops, self.bytes_moved)

    @property
    def measured(self) -> bool:
        return self.time_s is not None

    @property
    def flops_per_s(self) -> float | None:
        """Achieved FLOP/s (None when not measured)."""
        return None if self.time_s is None else self.flops / self.time_s


def _spec(device: DeviceSpec | str) -> DeviceSpec:
    return device if isinstance(device, DeviceSpec) else get_spec(device)


def _ceilings(device: Ceilings | DeviceSpec | str, dtype: str) -> Ceilings:
    return device if isinstance(device, Ceilings) else Ceilings.from_spec(device, dtype)


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


def attainable_flops(
    device: Ceilings | DeviceSpec | str, intensity: float, dtype: str = "fp32"
) -> float:
    """Roofline ceiling: min(peak FLOP/s, intensity × bandwidth) for ``device``.

    ``device`` is a registry name or entry (datasheet ceilings for ``dtype``) or a
    :class:`Ceilings` (for example measured ones; ``dtype`` is then ignored).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.attainable_flops("A100 80GB", intensity=1.0) / 1e9  # memory-bound: 1 FLOP per byte
    2039.0
    """
    if intensity < 0:
        raise ValueError(f"intensity={intensity!r} must be 0 or more (FLOPs per byte)")
    return _ceilings(device, dtype).attainable(intensity)


def predict_time(
    device: Ceilings | DeviceSpec | str, flops: float, bytes_moved: float, dtype: str = "fp32"
) -> Prediction:
    """Predict a kernel's time on ``device`` with the roofline model.

    Parameters
    ----------
    device : Ceilings, DeviceSpec or str
        A registry entry or name, or measured :class:`Ceilings`.
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
    if flops < 0 or bytes_moved < 0:
        raise ValueError(f"flops={flops!r} and bytes_moved={bytes_moved!r} must be 0 or more")
    return _ceilings(device, dtype).predict(flops, bytes_moved)


_TORCH_DTYPES = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
}


def measure_ceilings(
    device=None,
    dtype: str = "fp32",
    *,
    copy_bytes: int | None = None,
    matmul_n: int | None = None,
    min_run_time: float = 0.3,
) -> Ceilings:
    """Measure the local device's two roofs: a large copy for bandwidth, a large matmul for
    FLOP/s.

    Bandwidth counts the bytes read plus the bytes written by ``dst.copy_(src)``, the STREAM
    convention (a CPU may move more, reading each destination line before writing it).
    Compute is ``2n³`` FLOPs of an ``n × n`` matrix multiply divided by its median time.
    Both are timed with :func:`gpulab.benchmark`, which synchronizes the GPU.

    Parameters
    ----------
    device : str or torch.device, optional
        Default: :func:`gpulab.best_device`.
    dtype : {"fp32", "tf32", "fp16", "bf16", "fp64"}
        Precision of the matmul. ``"fp32"`` switches TF32 off on CUDA for the measurement;
        ``"tf32"`` switches it on.
    copy_bytes : int, optional
        Size of each copied array; default 128 MiB on a CPU (well beyond its caches), 1 GiB
        on a GPU.
    matmul_n : int, optional
        Matrix side; default 1024 on a CPU, 8192 on a GPU.
    min_run_time : float
        Seconds of timing per measurement.

    Returns
    -------
    Ceilings
        With ``measured=True`` and a note saying how they were measured.

    Examples
    --------
    >>> import gpulab as gl
    >>> c = gl.measure_ceilings("cpu", copy_bytes=2**22, matmul_n=128, min_run_time=0.05)
    >>> c.measured, c.device == gl.cpu_model(), c.peak_flops > 0, c.memory_bandwidth > 0
    (True, True, True, True)
    """
    import torch

    from gpulab.bench import benchmark
    from gpulab.cpu import cpu_model
    from gpulab.device import best_device
    from gpulab.sizing import scale

    if dtype not in _TORCH_DTYPES:
        raise ValueError(
            f"dtype={dtype!r} cannot be measured; use one of {', '.join(_TORCH_DTYPES)}"
        )
    dev = torch.device(best_device() if device is None else device)
    copy_bytes = scale(cpu=128 * 2**20, gpu=2**30, device=dev) if copy_bytes is None else copy_bytes
    matmul_n = scale(cpu=1024, gpu=8192, device=dev) if matmul_n is None else matmul_n
    if not isinstance(copy_bytes, int) or copy_bytes < 4096:
        raise ValueError(f"copy_bytes={copy_bytes!r} must be an integer of at least 4096")
    if not isinstance(matmul_n, int) or matmul_n < 16:
        raise ValueError(f"matmul_n={matmul_n!r} must be an integer of at least 16")

    src = torch.ones(copy_bytes // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    copy = benchmark(lambda: dst.copy_(src), min_run_time_s=min_run_time, label="copy")
    bandwidth = copy.bytes_per_s(2 * src.nbytes)

    torch_dtype = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(matmul_n, matmul_n, device=dev).to(torch_dtype)
    b = torch.randn(matmul_n, matmul_n, device=dev).to(torch_dtype)
    c = torch.empty_like(a)
    tf32_before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        mm = benchmark(lambda: torch.mm(a, b, out=c), min_run_time_s=min_run_time, label="matmul")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32_before
    peak = mm.flops_per_s(2 * matmul_n**3)

    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else cpu_model()
    note = (
        f"measured: copy of {copy_bytes / 2**20:,.0f} MiB (read + write), "
        f"{matmul_n}×{matmul_n} {dtype} matmul; medians of gl.benchmark"
    )
    return Ceilings(name, dtype, peak, bandwidth, measured=True, note=note)


def _as_ceilings_list(ceilings, dtype: str) -> list[Ceilings]:
    many = isinstance(ceilings, Sequence) and not isinstance(ceilings, str)
    items = list(ceilings) if many else [ceilings]
    if not items:
        raise ValueError("ceilings is empty: give a device name, a DeviceSpec or Ceilings")
    return [_ceilings(item, dtype) for item in items]


def plot_roofline(
    ceilings,
    points: Sequence[RooflinePoint] = (),
    *,
    dtype: str = "fp32",
    ax=None,
    intensity_range: tuple[float, float] | None = None,
):
    """Draw one or more rooflines, with kernels placed on them.

    Measured ceilings are drawn as solid lines; datasheet ceilings, which predict what a
    device could do, are dashed and say "prediction" in the legend. Measured kernels are
    filled markers at their achieved FLOP/s; kernels without a time are hollow markers
    placed on the first roofline (their predicted best).

    Parameters
    ----------
    ceilings : Ceilings, DeviceSpec, str, or a sequence of them
        The roofs: measured :class:`Ceilings` or registry devices.
    points : sequence of RooflinePoint
        Kernels to place on the plot.
    dtype : str
        Precision whose peak to use for registry devices.
    ax : matplotlib Axes, optional
    intensity_range : (float, float), optional
        FLOPs per byte spanned by the x axis; default: wide enough for every ridge point
        and every kernel.

    Returns
    -------
    matplotlib Axes
        Log-log; x in FLOP/byte, y in GFLOP/s. Each roof is one line whose label names the
        device, the precision and whether it is measured or a prediction.

    Examples
    --------
    >>> import gpulab as gl
    >>> ax = gl.plot_roofline("T4", [gl.RooflinePoint("add", 1e6, 12e6)])
    >>> [line.get_label() for line in ax.get_lines()]
    ['Tesla T4 fp32 (datasheet: prediction)']
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from gpulab.plotting import COLORS

    roofs = _as_ceilings_list(ceilings, dtype)
    ax = ax or plt.subplots(figsize=(7, 4.5))[1]
    if intensity_range is None:
        lows = [p.intensity for p in points if p.intensity > 0] + [0.05]
        highs = [p.intensity for p in points] + [r.ridge_point for r in roofs]
        intensity_range = (min(lows) / 3, max(highs) * 8)
    low, high = intensity_range
    if not 0 < low < high:
        raise ValueError(f"intensity_range={intensity_range!r} must be (low, high), 0 < low < high")
    x = np.logspace(np.log10(low), np.log10(high), 400)
    palette = [COLORS["cpu"], COLORS["gpu"], COLORS["tpu"], "#DD8452", "#937860", "#DA8BC3"]
    for i, roof in enumerate(roofs):
        y = np.minimum(roof.peak_flops, x * roof.memory_bandwidth) / 1e9
        kind = "measured" if roof.measured else "datasheet: prediction"
        color = palette[i % len(palette)]
        ax.plot(
            x,
            y,
            color=color,
            lw=2,
            linestyle="-" if roof.measured else "--",
            label=f"{roof.device} {roof.dtype} ({kind})",
        )
        if low < roof.ridge_point < high:
            ax.scatter(
                [roof.ridge_point],
                [roof.peak_flops / 1e9],
                color=color,
                marker="|",
                s=120,
                zorder=3,
            )
    for point in points:
        measured = point.measured
        y = point.flops_per_s if measured else roofs[0].attainable(point.intensity)
        ax.scatter(
            [point.intensity],
            [y / 1e9],
            s=45,
            zorder=4,
            facecolor=COLORS["cpu"] if measured else "white",
            edgecolor=COLORS["cpu"] if measured else COLORS["prediction"],
            linewidth=1.5,
        )
        ax.annotate(
            point.name,
            (point.intensity, y / 1e9),
            fontsize=8,
            xytext=(4, 2),
            textcoords="offset points",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Performance (GFLOP/s)")
    ax.legend(loc="lower right", fontsize=8)
    return ax


def roofline_readout(
    device: Ceilings | DeviceSpec | str, intensity: float, dtype: str = "fp32"
) -> str:
    """One sentence: the attainable FLOP/s at ``intensity`` on ``device`` and what bounds it.

    Examples
    --------
    >>> import gpulab as gl
    >>> print(gl.roofline_readout("A100 80GB", intensity=10, dtype="bf16"))
    A100 80GB SXM4, bf16, 10 FLOP/byte: at most 20.4 TFLOP/s (6.54% of the 312 TFLOP/s peak), \
memory-bound (ridge point 153 FLOP/byte). PREDICTION from the datasheet, not measured.
    """
    if dtype not in (*DTYPES, "fp64") and not isinstance(device, Ceilings):
        raise ValueError(f"dtype={dtype!r} is not known; use one of {', '.join(DTYPES)}")
    roof = _ceilings(device, dtype)
    flops = roof.attainable(intensity)
    bound = "memory" if intensity < roof.ridge_point else "compute"
    origin = (
        "Measured ceilings." if roof.measured else "PREDICTION from the datasheet, not measured."
    )
    return (
        f"{roof.device}, {roof.dtype}, {intensity:.3g} FLOP/byte: at most "
        f"{flops / 1e12:.3g} TFLOP/s ({100 * flops / roof.peak_flops:.3g}% of the "
        f"{roof.peak_flops / 1e12:.3g} TFLOP/s peak), {bound}-bound "
        f"(ridge point {roof.ridge_point:.3g} FLOP/byte). {origin}"
    )
