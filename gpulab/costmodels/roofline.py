"""The roofline cost model: a kernel takes at least as long as its arithmetic at peak
FLOP/s, and at least as long as its memory traffic at peak bandwidth.

time ≥ max(FLOPs / peak FLOP/s, bytes / bandwidth). Real kernels reach a fraction of
either ceiling, so every time this module returns is a labelled lower bound.

Measured ceilings add a third term, the fixed cost of one operator call (dispatch, argument
checks, a kernel launch on a GPU), which is what small kernels are made of:
time ≈ overhead + max(FLOPs / peak, bytes / bandwidth). The bytes are those that must cross
the memory interface, so a kernel whose working set fits in a cache can beat the
bandwidth roof: measure bandwidth-bound kernels on arrays several times the last-level
cache, or expect negative errors.

The two ceilings come either from a datasheet (a :class:`~gpulab.hardware.specs.DeviceSpec` from the
registry) or from measurements of the machine at hand (:func:`measure_ceilings`, which
returns :class:`Ceilings`). :func:`plot_roofline` draws either kind, with kernels on it.

See also the chapters "What a GPU is" (``book/gpu_basics.md``) and "Memory bandwidth"
(``book/memory_bandwidth.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from numbers import Real

from gpulab._checks import (
    MAX_ARRAY_BYTES,
    MAX_MATRIX_SIDE,
    MAX_REPEATS,
    MAX_RUN_TIME_S,
    MAX_THREADS,
    at_most,
    axes,
    choice,
    finite_result,
    flag,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.hardware.precision import PEAK_PRECISIONS, TORCH_DTYPE_NAMES
from gpulab.hardware.specs import DeviceSpec, resolve_spec
from gpulab.units import format_bytes, format_duration, format_rate

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

#: Precisions a ceiling can be for: the registry's peaks, and FP64 for measured ceilings.
_CEILING_PRECISIONS = PEAK_PRECISIONS


def _name(label: str, value) -> str:
    if not text(label, value).strip():
        raise ValueError(f"{label}={value!r} must be a non-empty str")
    return value


@dataclass(frozen=True)
class Prediction:
    """A roofline prediction: the fastest a kernel could run on a device.

    Attributes
    ----------
    device_name : str
        Registry name of the device (or the name of measured :class:`Ceilings`).
    precision : str
        Precision whose peak was used.
    time_s : float
        Predicted seconds (a lower bound).
    compute_s, memory_s : float
        Time for the arithmetic alone at peak, and for the memory traffic alone at peak.
    bound : {"compute", "memory", "overhead"}
        Which term is largest: the arithmetic, the memory traffic or the per-call overhead.
    overhead_s : float
        Fixed cost of one call added to the larger roof (0 for datasheet ceilings).
    """

    device_name: str
    precision: str
    time_s: float
    compute_s: float
    memory_s: float
    bound: str
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        _name("device_name", self.device_name)
        choice("precision", self.precision, _CEILING_PRECISIONS)
        for label in ("time_s", "compute_s", "memory_s", "overhead_s"):
            non_negative_number(label, getattr(self, label))
        choice("bound", self.bound, ("compute", "memory", "overhead"))

    def __str__(self) -> str:
        return (
            f"PREDICTION for {self.device_name} ({self.precision}, roofline lower bound, "
            f"not measured): {format_duration(self.time_s)}, {self.bound}-bound"
        )


@dataclass(frozen=True)
class Ceilings:
    """The two roofs of one device in one precision: peak FLOP/s and memory bandwidth.

    Attributes
    ----------
    device_name : str
        What the ceilings belong to (a registry name, or the local device's name).
    precision : str
        Precision of the compute ceiling, one of :data:`gpulab.PEAK_PRECISIONS`.
    peak_flops : float
        Compute ceiling in FLOP/s.
    memory_bandwidth : float
        Bandwidth ceiling in bytes/s.
    measured : bool
        True when both were measured on this machine (:func:`measure_ceilings`); False for
        datasheet figures, which are predictions of what the device could do.
    note : str
        How the ceilings were obtained.
    overhead_s : float
        Fixed seconds of one operator call, added to every prediction; 0 for datasheet
        ceilings (a datasheet gives none), measured by :func:`measure_ceilings`.

    Examples
    --------
    >>> import gpulab as gl
    >>> c = gl.Ceilings.from_spec("T4", precision="fp16")
    >>> c.ridge_point, c.measured
    (203.125, False)
    """

    device_name: str
    precision: str
    peak_flops: float
    memory_bandwidth: float
    measured: bool = True
    note: str = ""
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        _name("device_name", self.device_name)
        choice("precision", self.precision, _CEILING_PRECISIONS)
        positive_number("peak_flops", self.peak_flops)
        positive_number("memory_bandwidth", self.memory_bandwidth)
        non_negative_number("overhead_s", self.overhead_s)
        flag("measured", self.measured)
        text("note", self.note)

    @classmethod
    def least_disturbed(cls, first: Ceilings, *others: Ceilings) -> Ceilings:
        """The least disturbed of several measurements of one device's ceilings.

        Other programs' load only ever lowers a measured peak and bandwidth and raises the
        measured per-call overhead, so the highest peak, the highest bandwidth and the lowest
        overhead are each the closest to the machine's own. Measuring the ceilings again after
        timing the kernels, and keeping the least disturbed, keeps one busy moment from
        skewing every prediction.

        Examples
        --------
        >>> from gpulab.costmodels.roofline import Ceilings
        >>> busy = Ceilings("cpu", "fp32", 40e9, 9e9, overhead_s=8e-6)
        >>> quiet = Ceilings("cpu", "fp32", 60e9, 8e9, overhead_s=5e-6)
        >>> best = Ceilings.least_disturbed(busy, quiet)
        >>> best.peak_flops, best.memory_bandwidth, best.overhead_s
        (60000000000.0, 9000000000.0, 5e-06)
        """
        runs = (first, *others)
        _one_device("least_disturbed() combines", "others", runs)
        return replace(
            first,
            peak_flops=max(r.peak_flops for r in runs),
            memory_bandwidth=max(r.memory_bandwidth for r in runs),
            overhead_s=min(r.overhead_s for r in runs),
            note=first.note + (f" (least disturbed of {len(runs)} measurements)"
                               if len(runs) > 1 else ""),
        )  # fmt: skip

    def difference(self, other: Ceilings) -> float:
        """How far two measurements of one device's roofs differ: the larger relative gap.

        Other programs' load lowers both roofs, so ceilings measured before and after a set of
        kernels that differ by more than the measurement's own noise say that the load changed
        while the kernels ran: timings and ceilings then no longer describe the same machine.

        Parameters
        ----------
        other : Ceilings
            Another measurement of the same device in the same precision.

        Returns
        -------
        float
            ``max(|Δpeak| / larger peak, |Δbandwidth| / larger bandwidth)``, from 0 (the same)
            towards 1. The per-call overhead is left out: a few microseconds, it varies by
            more than the roofs from one quiet measurement to the next.

        Examples
        --------
        >>> from gpulab.costmodels.roofline import Ceilings
        >>> before = Ceilings("cpu", "fp32", 150e9, 10e9)
        >>> after = Ceilings("cpu", "fp32", 100e9, 9.5e9)
        >>> round(before.difference(after), 3)
        0.333
        """
        _one_device("difference() compares two", "other", (self, other))
        return max(
            abs(self.peak_flops - other.peak_flops) / max(self.peak_flops, other.peak_flops),
            abs(self.memory_bandwidth - other.memory_bandwidth)
            / max(self.memory_bandwidth, other.memory_bandwidth),
        )

    @classmethod
    def from_spec(cls, spec: DeviceSpec | str, precision: str = "fp32") -> Ceilings:
        """The datasheet ceilings of a registry device (a prediction, not a measurement).

        Parameters
        ----------
        spec : DeviceSpec or str
            A registry entry or a name :func:`gpulab.get_spec` understands.
        precision : str
            One of :data:`gpulab.PEAK_PRECISIONS` that the datasheet gives a figure for.
        """
        entry = resolve_spec("spec", spec)
        choice("precision", precision, PEAK_PRECISIONS)
        if not entry.memory_bandwidth:
            raise ValueError(f"spec={entry.name!r} has no memory bandwidth in the registry")
        try:
            peak = entry.peak(precision)
        except ValueError as exc:  # the datasheet gives no figure for this precision
            raise ValueError(f"precision={precision!r}: {exc}") from None
        return cls(
            entry.name,
            precision,
            peak,
            entry.memory_bandwidth,
            measured=False,
            note=f"datasheet: {entry.source_url}",
        )

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte where the two roofs meet: below it a kernel is memory-bound."""
        return self.peak_flops / self.memory_bandwidth

    def attainable(self, intensity: float) -> float:
        """min(peak FLOP/s, intensity × bandwidth): the roofline at ``intensity``."""
        intensity = non_negative_number("intensity", intensity)
        return min(self.peak_flops, intensity * self.memory_bandwidth)

    def predict(self, flops: float, n_bytes: float) -> Prediction:
        """The roofline's time for a kernel on these ceilings: the per-call overhead plus
        the larger of its compute time and its memory time.

        Examples
        --------
        >>> import gpulab as gl
        >>> c = gl.Ceilings("box", "fp32", 100e9, 10e9, overhead_s=2e-6)
        >>> p = c.predict(flops=1e6, n_bytes=1e6)  # 10 µs + 100 µs
        >>> round(p.time_s * 1e6, 3), p.bound
        (102.0, 'memory')
        >>> c.predict(flops=10, n_bytes=10).bound
        'overhead'
        """
        flops = non_negative_number("flops", flops)
        n_bytes = non_negative_number("n_bytes", n_bytes)
        compute_s = flops / self.peak_flops
        memory_s = n_bytes / self.memory_bandwidth
        if not (math.isfinite(compute_s) and math.isfinite(memory_s)):
            raise ValueError(
                f"flops={flops!r} and n_bytes={n_bytes!r} overflow a float on these "
                "ceilings; check their units"
            )
        roof_s = max(compute_s, memory_s)
        if self.overhead_s > roof_s:
            bound = "overhead"
        else:
            bound = "compute" if compute_s >= memory_s else "memory"
        return Prediction(
            self.device_name,
            self.precision,
            self.overhead_s + roof_s,
            compute_s,
            memory_s,
            bound,
            self.overhead_s,
        )

    def __str__(self) -> str:
        kind = "measured" if self.measured else "datasheet"
        overhead = f", {format_duration(self.overhead_s)} per call" if self.overhead_s > 0 else ""
        return (
            f"{self.device_name} ({self.precision}, {kind}): "
            f"{format_rate(self.peak_flops, 'FLOP/s')}, "
            f"{format_rate(self.memory_bandwidth, 'B/s')}, ridge point "
            f"{self.ridge_point:.3g} FLOP/byte{overhead}"
        )


def _one_device(call: str, parameter: str, runs: tuple) -> None:
    """Refuse ``runs`` unless all are ``Ceilings`` of one device, precision and kind.

    ``call`` begins the message ("difference() compares two"); ``parameter`` names the
    argument a wrong type came in.
    """
    for run in runs:
        if not isinstance(run, Ceilings):
            raise wrong_type(parameter, run, "Ceilings")
    if len({(r.device_name, r.precision, r.measured) for r in runs}) != 1:
        got = [f"{r.device_name} {r.precision} ({'measured' if r.measured else 'datasheet'})"
               for r in runs]
        raise ValueError(f"{call} measurements of one device in one precision, got "
                         f"{', '.join(got[:-1])} and {got[-1]}")


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel to place on a roofline: its FLOPs, its bytes and, once measured, its time.

    Attributes
    ----------
    name : str
        Label shown next to the point.
    flops : float
        FLOPs per call (0 or more).
    n_bytes : float
        Bytes per call that must cross the memory interface at least once (above 0).
    time_s : float or None
        Measured seconds per call (above 0); None for a kernel that is only predicted.
    precision : str or None
        The format the kernel computes in, one of :data:`gpulab.PEAK_PRECISIONS`: a kernel
        sits under the roof of its own precision, and :func:`plot_roofline` places it on
        the first roof in that precision (refusing a plot with none). None: the first roof,
        whatever its precision.

    Examples
    --------
    >>> import gpulab as gl
    >>> p = gl.RooflinePoint("add", flops=1e6, n_bytes=12e6, time_s=1e-3)
    >>> round(p.intensity, 4), p.flops_per_s
    (0.0833, 1000000000.0)
    """

    name: str
    flops: float
    n_bytes: float
    time_s: float | None = None
    precision: str | None = None

    def __post_init__(self) -> None:
        text("name", self.name)
        if self.precision is not None:
            choice("precision", self.precision, _CEILING_PRECISIONS)
        non_negative_number("flops", self.flops)
        positive_number("n_bytes", self.n_bytes)
        if self.time_s is not None:
            positive_number("time_s", self.time_s)
            finite_result(self.flops / self.time_s, flops=self.flops, time_s=self.time_s)
        finite_result(self.flops / self.n_bytes, flops=self.flops, n_bytes=self.n_bytes)

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return arithmetic_intensity(self.flops, self.n_bytes)

    @property
    def measured(self) -> bool:
        return self.time_s is not None

    @property
    def flops_per_s(self) -> float | None:
        """Achieved FLOP/s (None when not measured)."""
        return None if self.time_s is None else self.flops / self.time_s


def _ceilings(spec: Ceilings | DeviceSpec | str, precision: str, label: str = "spec") -> Ceilings:
    """``spec`` as Ceilings: measured ones as they are, a registry entry's from its datasheet."""
    choice("precision", precision, _CEILING_PRECISIONS)
    if isinstance(spec, Ceilings):
        return spec
    entry = resolve_spec(label, spec)
    return Ceilings.from_spec(entry, precision)


def arithmetic_intensity(flops: float, n_bytes: float) -> float:
    """FLOPs per byte of memory traffic.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.arithmetic_intensity(flops=2 * 1024**3, n_bytes=3 * 4 * 1024**2)
    170.66666666666666
    """
    flops = non_negative_number("flops", flops)
    n_bytes = positive_number("n_bytes", n_bytes)
    intensity = flops / n_bytes
    if not math.isfinite(intensity):
        raise ValueError(f"flops={flops!r} over n_bytes={n_bytes!r} overflows a float")
    return intensity


def attainable_flops(
    spec: Ceilings | DeviceSpec | str, intensity: float, precision: str = "fp32"
) -> float:
    """Roofline ceiling: min(peak FLOP/s, intensity × bandwidth) for ``spec``.

    ``spec`` is a registry name or entry (datasheet ceilings for ``precision``) or a
    :class:`Ceilings` (for example measured ones; ``precision`` is then ignored).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.attainable_flops("A100 80GB", intensity=1.0) / 1e9  # memory-bound: 1 FLOP per byte
    2039.0
    """
    intensity = non_negative_number("intensity", intensity)
    return _ceilings(spec, precision).attainable(intensity)


def predict_time(
    spec: Ceilings | DeviceSpec | str,
    flops: float,
    n_bytes: float,
    precision: str = "fp32",
) -> Prediction:
    """Predict a kernel's time on ``spec`` with the roofline model.

    Parameters
    ----------
    spec : Ceilings, DeviceSpec or str
        A registry entry or name, or measured :class:`Ceilings`.
    flops : float
        Floating-point operations the kernel performs.
    n_bytes : float
        Bytes it must read from and write to device memory at least once.
    precision : str
        Which peak to use, one of :data:`gpulab.PEAK_PRECISIONS`: ``"fp32"`` (no Tensor
        Cores), ``"tf32"``, ``"fp16"``, ``"bf16"``, ``"fp8"``.

    Raises
    ------
    ValueError
        For negative, NaN or infinite counts, an unknown device (with the close registry
        names), or a precision the datasheet gives no figure for.

    Examples
    --------
    >>> import gpulab as gl
    >>> p = gl.predict_time("T4", flops=1e9, n_bytes=1e9)
    >>> p.bound, round(p.time_s * 1e3, 3)
    ('memory', 3.125)
    """
    flops = non_negative_number("flops", flops)
    n_bytes = non_negative_number("n_bytes", n_bytes)
    return _ceilings(spec, precision).predict(flops, n_bytes)




def measure_ceilings(
    device=None,
    precision: str = "fp32",
    *,
    copy_bytes: int | None = None,
    matmul_n: int | None = None,
    min_run_time_s: float = 0.3,
    num_threads: int | None = None,
    repeats: int = 1,
) -> Ceilings:
    """Measure the local device's two roofs, a large copy for bandwidth and a large matmul
    for FLOP/s, and the fixed cost of one operator call.

    Bandwidth counts the bytes read plus the bytes written by ``dst.copy_(src)``, the STREAM
    convention (a CPU may move more, reading each destination line before writing it).
    Compute is ``2n³`` FLOPs of an ``n × n`` matrix multiply divided by its median time.
    The per-call overhead is the median time of an add of two one-element tensors into a
    third, which moves and computes next to nothing. All are timed with
    :func:`gpulab.benchmark`, which synchronizes the GPU.

    Parameters
    ----------
    device : str or torch.device, optional
        Default: :func:`gpulab.best_device`.
    precision : {"fp32", "tf32", "fp16", "bf16"}
        Precision of the matmul. ``"fp32"`` switches TF32 off on CUDA for the measurement;
        ``"tf32"`` switches it on.
    copy_bytes : int, optional
        Size of each copied array (at least 4096, at most ``MAX_ARRAY_BYTES``, 64 GiB);
        default 128 MiB on a CPU (well beyond its caches), on a GPU 1 GiB or
        :data:`CACHE_MULTIPLE` times its L2 (:func:`gpulab.measure.caches.cache_bytes`),
        whichever is larger. Where the two arrays of a copy are smaller than that multiple
        of a GPU's L2, the note says that the cache served part of the traffic.
    matmul_n : int, optional
        Matrix side (at least 16, at most ``MAX_MATRIX_SIDE``); default 1024 on a CPU, 8192
        on a GPU. Where the matmul took less than :data:`LAUNCH_MULTIPLE` times the per-call
        overhead measured beside it, the note says that it was launch-bound.
    min_run_time_s : float
        Seconds of timing per measurement (at most ``MAX_RUN_TIME_S``, 600 s).
    num_threads : int, optional
        CPU threads torch may use, at most ``MAX_THREADS`` (default: what it uses now).
        Time the kernels you compare with the same number. One thread gives the roofline
        of one core, which other programs' load disturbs far less than a multi-threaded
        kernel waiting for its slowest thread.
    repeats : int
        Rounds of the three measurements; the best of each is kept (the fastest copy and
        matmul, the cheapest call), since other programs' load only ever slows a round; at
        most ``MAX_REPEATS``.

    Returns
    -------
    Ceilings
        With ``measured=True`` and a note saying how they were measured, and what else than
        the memory's bandwidth or the peak they may have measured.

    Examples
    --------
    >>> import gpulab as gl
    >>> c = gl.measure_ceilings("cpu", copy_bytes=2**22, matmul_n=128, min_run_time_s=0.05)
    >>> from gpulab.measure.cpu import cpu_model
    >>> c.measured, c.device_name == cpu_model(), c.peak_flops > 0, c.memory_bandwidth > 0
    (True, True, True, True)
    """
    import torch

    from gpulab.measure.bench import benchmark
    from gpulab.measure.caches import cache_bytes
    from gpulab.measure.cpu import cpu_model
    from gpulab.measure.device import scale, tf32, torch_device

    if not isinstance(precision, str):
        raise wrong_type("precision", precision, f"one of {', '.join(TORCH_DTYPE_NAMES)}")
    if precision not in TORCH_DTYPE_NAMES:
        raise ValueError(
            f"precision={precision!r} cannot be measured; use one of {', '.join(TORCH_DTYPE_NAMES)}"
        )
    min_run_time_s = positive_number("min_run_time_s", min_run_time_s)
    at_most("min_run_time_s", min_run_time_s, MAX_RUN_TIME_S, "one measurement's run", unit="s")
    if num_threads is not None:
        positive_int("num_threads", num_threads)
        at_most("num_threads", num_threads, MAX_THREADS, "CPU threads")
    positive_int("repeats", repeats)
    at_most("repeats", repeats, MAX_REPEATS, "rounds of measurements")
    if copy_bytes is not None:
        positive_int("copy_bytes", copy_bytes)
        if copy_bytes < 4096:
            raise ValueError(f"copy_bytes={copy_bytes!r} must be an integer of at least 4096")
        at_most("copy_bytes", copy_bytes, MAX_ARRAY_BYTES, "bytes of one array")
    if matmul_n is not None:
        positive_int("matmul_n", matmul_n)
        if matmul_n < 16:
            raise ValueError(f"matmul_n={matmul_n!r} must be an integer of at least 16")
        at_most("matmul_n", matmul_n, MAX_MATRIX_SIDE, "the side of a measured matmul")
    dev = torch_device(device)
    l2 = cache_bytes(dev)
    if copy_bytes is None:  # on a GPU, past its L2 (see CACHE_MULTIPLE)
        copy_bytes = scale(cpu=128 * 2**20, gpu=max(2**30, CACHE_MULTIPLE * (l2 or 0)), device=dev)
    matmul_n = scale(cpu=1024, gpu=8192, device=dev) if matmul_n is None else matmul_n

    src = torch.ones(copy_bytes // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    timing = {"min_run_time_s": min_run_time_s, "num_threads": num_threads}

    def best(fn, label):  # the least disturbed round's median
        return min(benchmark(fn, label=label, **timing).median_s for _ in range(repeats))

    bandwidth = 2 * src.nbytes / best(lambda: dst.copy_(src), "copy")

    torch_dtype = getattr(torch, TORCH_DTYPE_NAMES[precision])
    a = torch.randn(matmul_n, matmul_n, device=dev).to(torch_dtype)
    b = torch.randn(matmul_n, matmul_n, device=dev).to(torch_dtype)
    c = torch.empty_like(a)
    with tf32(precision == "tf32"):
        matmul_s = best(lambda: torch.mm(a, b, out=c), "matmul")
    peak = 2 * matmul_n**3 / matmul_s

    one = torch.ones(1, device=dev)
    into = torch.empty_like(one)
    overhead_s = best(lambda: torch.add(one, one, out=into), "call")

    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else cpu_model()
    threads = "" if num_threads is None else f", {num_threads} thread(s)"
    rounds = f", best of {repeats} rounds" if repeats > 1 else ""
    note = (
        f"measured: copy of {format_bytes(copy_bytes, binary=True)} (read + write), "
        f"{matmul_n}×{matmul_n} {precision} matmul, one-element add for the per-call "
        f"overhead{threads}; medians of gl.benchmark{rounds}"
    )
    note += "".join(_size_caveats(copy_bytes, l2, matmul_s, overhead_s))
    return Ceilings(
        name, precision, peak, bandwidth, measured=True, note=note, overhead_s=overhead_s
    )


#: Arrays that together exceed this many times a GPU's L2 stream from memory: the cache can
#: hold a quarter of them at most, while smaller ones are partly served by it.
CACHE_MULTIPLE = 4
#: A matmul shorter than this many per-call overheads is launch-bound: a tenth or more of its
#: time is the call, not the arithmetic, and its FLOP/s understate the peak.
LAUNCH_MULTIPLE = 10


def _size_caveats(copy_bytes: int, l2: int | None, matmul_s: float, overhead_s: float):
    """What else than the memory's bandwidth and the peak the sizes made the roofs measure."""
    if l2 and 2 * copy_bytes < CACHE_MULTIPLE * l2:
        yield (
            f". Caution: the copy's two arrays ({format_bytes(2 * copy_bytes, binary=True)}) "
            f"are less than {CACHE_MULTIPLE}x the {format_bytes(l2)} L2 cache, which served "
            "part of the traffic: the bandwidth is above the memory's"
        )
    if matmul_s < LAUNCH_MULTIPLE * overhead_s:
        yield (
            f". Caution: the matmul took {format_duration(matmul_s)}, under {LAUNCH_MULTIPLE}x "
            f"the {format_duration(overhead_s)} per call: launch-bound, its FLOP/s are below "
            "the peak"
        )


def _as_ceilings_list(ceilings, precision: str) -> list[Ceilings]:
    many = isinstance(ceilings, Sequence) and not isinstance(ceilings, str)
    items = list(ceilings) if many else [ceilings]
    if not items:
        raise ValueError("ceilings=[] is empty: give a device name, a DeviceSpec or Ceilings")
    return [_ceilings(item, precision, label="ceilings") for item in items]


def _intensity_range(value) -> tuple[float, float]:
    """``value`` as (low, high) FLOPs per byte, with 0 < low < high, both finite."""
    wanted = "(low, high) with 0 < low < high, finite"
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Sequence)
        or not all(isinstance(v, Real) and not isinstance(v, bool) for v in value)
    ):
        raise wrong_type("intensity_range", value, wanted)
    if len(value) != 2 or not all(math.isfinite(v) for v in value) or not 0 < value[0] < value[1]:
        raise ValueError(f"intensity_range={value!r} must be {wanted}")
    return float(value[0]), float(value[1])


def _home_roof(index: int, point: RooflinePoint, roofs: list[Ceilings]) -> Ceilings:
    """The roof ``point`` sits under: the first in its precision (the first roof if it has none)."""
    if point.precision is None:
        return roofs[0]
    for roof in roofs:
        if roof.precision == point.precision:
            return roof
    have = ", ".join(sorted({r.precision for r in roofs}))
    raise ValueError(
        f"points[{index}]={point.name!r} computes in {point.precision}, but the roofs are in "
        f"{have}: a kernel sits under the roof of its own precision; add its device's "
        f"{point.precision} roof (Ceilings.from_spec(device, {point.precision!r}))"
    )


def plot_roofline(
    ceilings,
    points: Sequence[RooflinePoint] = (),
    *,
    precision: str = "fp32",
    ax=None,
    intensity_range: tuple[float, float] | None = None,
):
    """Draw one or more rooflines, with kernels placed on them.

    Measured ceilings are drawn as solid lines; datasheet ceilings, which predict what a
    device could do, are dashed and say "prediction" in the legend. Measured kernels are
    filled markers at their achieved FLOP/s; kernels without a time are hollow markers
    placed on a roofline (their predicted best). Each kernel sits under the roof of its own
    precision: a point with a ``precision`` is placed on the first roof in that precision,
    and a plot with no such roof is refused (an FP32 kernel under a BF16 roof would show a
    share of a peak it cannot use); a point without one goes on the first roof.

    Parameters
    ----------
    ceilings : Ceilings, DeviceSpec, str, or a sequence of them
        The roofs: measured :class:`Ceilings` or registry devices.
    points : sequence of RooflinePoint
        Kernels to place on the plot.
    precision : str
        Precision whose peak to use for registry devices (:data:`gpulab.PEAK_PRECISIONS`).
    ax : matplotlib Axes, optional
    intensity_range : (float, float), optional
        FLOPs per byte spanned by the x axis; default: wide enough for every ridge point
        and every kernel.

    Returns
    -------
    matplotlib Axes
        Log-log; x in FLOP/byte, y in GFLOP/s. Each roof is one line whose label names the
        device, the precision and whether it is measured or a prediction.

    Raises
    ------
    ValueError
        If a point's ``precision`` matches none of the roofs' precisions.

    Examples
    --------
    >>> import gpulab as gl
    >>> ax = gl.plot_roofline("T4", [gl.RooflinePoint("add", 1e6, 12e6)])
    >>> [line.get_label() for line in ax.get_lines()]
    ['Tesla T4 fp32 (datasheet: prediction)']
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from gpulab.palette import COLORS

    roofs = _as_ceilings_list(ceilings, precision)
    if isinstance(points, (str, RooflinePoint)) or not isinstance(points, Sequence):
        raise wrong_type("points", points, "a sequence of RooflinePoint")
    for i, point in enumerate(points):
        if not isinstance(point, RooflinePoint):
            raise wrong_type(f"points[{i}]", point, "a RooflinePoint")
    homes = [_home_roof(i, point, roofs) for i, point in enumerate(points)]
    if axes("ax", ax) is None:
        ax = plt.subplots(figsize=(7, 4.5))[1]
    if intensity_range is None:
        lows = [p.intensity for p in points if p.intensity > 0] + [0.05]
        highs = [p.intensity for p in points] + [r.ridge_point for r in roofs]
        intensity_range = (min(lows) / 3, max(highs) * 8)
    low, high = _intensity_range(intensity_range)
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
            label=f"{roof.device_name} {roof.precision} ({kind})",
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
    for point, home in zip(points, homes, strict=True):
        measured = point.measured
        y = point.flops_per_s if measured else home.attainable(point.intensity)
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
    spec: Ceilings | DeviceSpec | str, intensity: float, precision: str = "fp32"
) -> str:
    """One sentence: the attainable FLOP/s at ``intensity`` on ``spec`` and what bounds it.

    Examples
    --------
    >>> import gpulab as gl
    >>> print(gl.roofline_readout("A100 80GB", intensity=10, precision="bf16"))
    A100 80GB SXM4, bf16, 10 FLOP/byte: at most 20.4 TFLOP/s (6.54% of the 312 TFLOP/s peak), \
memory-bound (ridge point 153 FLOP/byte). PREDICTION from the datasheet, not measured.
    """
    intensity = non_negative_number("intensity", intensity)
    roof = _ceilings(spec, precision)
    flops = roof.attainable(intensity)
    bound = "memory" if intensity < roof.ridge_point else "compute"
    origin = (
        "Measured ceilings." if roof.measured else "PREDICTION from the datasheet, not measured."
    )
    return (
        f"{roof.device_name}, {roof.precision}, {intensity:.3g} FLOP/byte: at most "
        f"{format_rate(flops, 'FLOP/s')} ({100 * flops / roof.peak_flops:.3g}% of the "
        f"{format_rate(roof.peak_flops, 'FLOP/s')} peak), {bound}-bound "
        f"(ridge point {roof.ridge_point:.3g} FLOP/byte). {origin}"
    )
