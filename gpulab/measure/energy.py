"""Energy used by a block of code: measured through NVML on NVIDIA GPUs, estimated elsewhere.

``with gl.measure_energy() as m: ...`` reports joules, average watts and seconds
(``time_s``), and says how it got them (:attr:`EnergyMeter.method`):

``"nvml-energy-counter"``
    The GPU's own energy counter (``nvmlDeviceGetTotalEnergyConsumption``, Volta and later):
    read before and after, the difference is the energy. The best there is.
``"nvml-power-sampling"``
    Older GPUs have no counter: a background thread reads the board power
    (``nvmlDeviceGetPowerUsage``) every ``interval_s`` and the samples are integrated over
    time with the trapezoid rule. Short blocks and bursty work are measured poorly.
``"estimate-tdp"``
    No counter at all (CPUs here; a GPU without NVML access): rated power × time, with the
    assumptions printed and the result labelled an estimate. TDP is a design limit, not a
    measurement: real draw may be lower (idle phases) or, briefly, higher.

The NVML calls go through an injectable ``nvml`` object (by default the ``pynvml`` module
from the ``nvidia-ml-py`` package), so tests can replace it with a fake. The CUDA device is
found in NVML by its UUID or PCI bus id (:mod:`gpulab.measure.nvml_device`), not by its
index, which ``CUDA_VISIBLE_DEVICES`` renumbers.

See also the chapter "Beyond speed" (``book/beyond_speed.md``) and its energy lab.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpulab._checks import (
    MAX_RUN_TIME_S,
    at_most,
    flag,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.hardware.specs import resolve_spec
from gpulab.measure.device import torch_device
from gpulab.measure.nvml_device import nvml_handle
from gpulab.units import format_duration

__all__ = [
    "ENERGY_METHODS",
    "EnergyMeter",
    "PowerAssumption",
    "assumed_power",
    "cpu_watts_per_core",
    "gpu_energy_problem",
    "measure_energy",
]

#: How an :class:`EnergyMeter` can obtain its number, best first.
ENERGY_METHODS = ("nvml-energy-counter", "nvml-power-sampling", "estimate-tdp")

# NVML return codes (nvml.h) that decide the fallback; pynvml puts them on ``error.value``.
_NVML_ERROR_NOT_SUPPORTED = 3
_NVML_ERROR_NO_PERMISSION = 4
_NVML_ERROR_DRIVER_NOT_LOADED = 9
_NVML_ERROR_LIBRARY_NOT_FOUND = 12
_NVML_ERROR_FUNCTION_NOT_FOUND = 13


@dataclass(frozen=True)
class PowerAssumption:
    """The power an estimate assumes, and where the figure comes from.

    Attributes
    ----------
    watts : float
        Assumed average draw while the block runs.
    basis : str
        One sentence: the figure, its source and what it leaves out.
    """

    watts: float
    basis: str

    def __post_init__(self) -> None:
        positive_number("watts", self.watts)
        text("basis", self.basis)


def _cores_in_notes(notes: str) -> int | None:
    match = re.search(r"(\d+) cores", notes)
    return int(match.group(1)) if match else None


def cpu_watts_per_core() -> tuple[float, str]:
    """Median TDP per core of the server CPUs in the spec registry, and how it was derived.

    CPU makers publish one TDP per socket; dividing by the socket's core count gives a
    per-core figure that can be applied to the cores a job actually uses. It assumes the
    cores run flat out and leaves out memory, disks, fans and power-supply losses.

    Examples
    --------
    >>> import gpulab as gl
    >>> watts, basis = cpu_watts_per_core()
    >>> watts
    4.375
    """
    from gpulab.hardware.specs import list_specs

    per_core = {}
    for spec in list_specs("cpu"):
        cores = _cores_in_notes(spec.notes)
        if spec.tdp and cores:
            per_core[spec.name] = spec.tdp / cores
    if not per_core:
        raise RuntimeError("the spec registry has no CPU with both a TDP and a core count")
    median = statistics.median(per_core.values())
    parts = ", ".join(f"{name} {w:.2f}" for name, w in sorted(per_core.items()))
    return median, f"median TDP per core of the registry's server CPUs ({parts} W/core)"


def assumed_power(device: str = "cpu", *, spec=None, cores: int | None = None) -> PowerAssumption:
    """The power a TDP × time estimate assumes for ``device``.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "mps"} or torch.device
        The device the work runs on (checked by :func:`gpulab.measure.device.torch_device`;
        None means :func:`gpulab.best_device`).
    spec : DeviceSpec or str, optional
        A registry entry or its name (``gl.get_spec``): use its TDP (board power for GPUs, socket
        TDP for CPUs). For a CPU socket, the TDP is scaled to ``cores`` out of its cores.
    cores : int, optional
        CPU cores the job uses; default: the physical cores this process may run on
        (hyperthreads share a core and its power budget).

    Returns
    -------
    PowerAssumption

    Examples
    --------
    >>> import gpulab as gl
    >>> assumed_power("cpu", cores=2).watts
    8.75
    >>> assumed_power("cuda", spec="T4").watts
    70.0
    """
    from gpulab.measure.cpu import cores_for_peak

    kind = torch_device(device).type
    if cores is not None:
        positive_int("cores", cores)
    if spec is not None:
        entry = resolve_spec("spec", spec)
        if not entry.tdp:
            raise ValueError(f"{entry.name} has no TDP in the registry; pass another spec=")
        if entry.kind == "cpu":
            socket_cores = _cores_in_notes(entry.notes)
            used = cores_for_peak()[0] if cores is None else cores
            if socket_cores:
                share = min(used, socket_cores) / socket_cores
                return PowerAssumption(
                    entry.tdp * share,
                    f"{entry.name} TDP {entry.tdp:.0f} W × {min(used, socket_cores)}/"
                    f"{socket_cores} cores, assumed fully busy (source: {entry.source_url})",
                )
        return PowerAssumption(
            entry.tdp,
            f"{entry.name} TDP {entry.tdp:.0f} W, assumed drawn throughout "
            f"(source: {entry.source_url})",
        )
    if kind != "cpu":
        raise ValueError(
            f"device={device!r}: no energy counter and no rated power known; pass spec= with "
            "the registry name of this device (see python -m gpulab specs)"
        )
    used = cores_for_peak()[0] if cores is None else cores
    per_core, basis = cpu_watts_per_core()
    return PowerAssumption(
        used * per_core,
        f"{used} cores × {per_core:.2f} W/core, the {basis}; cores assumed fully busy; "
        "memory, disks, fans and power-supply losses not included",
    )


def _nvml_code(exc: BaseException) -> int | None:
    return getattr(exc, "value", None)


def _nvml_reason(exc: BaseException, doing: str) -> str:
    """One sentence saying why NVML could not be used, for the reader of the lab."""
    code = _nvml_code(exc)
    if code in (_NVML_ERROR_LIBRARY_NOT_FOUND, _NVML_ERROR_DRIVER_NOT_LOADED):
        return f"NVML is not available ({exc}): no NVIDIA driver on this machine"
    if code == _NVML_ERROR_NO_PERMISSION:
        return (
            f"NVML refused to {doing} (no permission: {exc}); ask the administrator, or run "
            "where the driver allows power readings"
        )
    if code in (_NVML_ERROR_NOT_SUPPORTED, _NVML_ERROR_FUNCTION_NOT_FOUND):
        return f"this GPU or driver does not support {doing} through NVML ({exc})"
    return f"NVML failed to {doing}: {type(exc).__name__}: {exc}"


#: The functions of the ``pynvml`` module an :class:`EnergyMeter` calls; a stand-in for the
#: module (``nvml=``) must have each of them.
NVML_FUNCTIONS = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerUsage",
)


def _check_nvml(nvml) -> None:
    """Refuse an ``nvml`` stand-in without the functions of ``pynvml`` the meter calls."""
    if nvml is None:
        return
    missing = [name for name in NVML_FUNCTIONS if not callable(getattr(nvml, name, None))]
    if missing:
        raise TypeError(
            f"nvml={nvml!r:.60} must be None (the pynvml module) or a stand-in for pynvml "
            f"with its functions; it lacks {', '.join(missing)}"
        )


def _default_nvml():
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def _parse_device(device) -> tuple[str, int]:
    """("cuda", 1) for "cuda:1" or torch.device("cuda", 1), checked by :func:`torch_device`."""
    dev = torch_device(device)
    return dev.type, dev.index or 0


class EnergyMeter:
    """Context manager that measures (or estimates) the energy used while its block runs.

    Create it with :func:`measure_energy`. After the block: :attr:`joules`,
    :attr:`average_watts`, :attr:`time_s`, :attr:`method`, :attr:`is_estimate`;
    ``str(meter)`` says which of these were measured.

    Attributes
    ----------
    method : str
        One of :data:`ENERGY_METHODS`.
    device_name : str
        The GPU NVML reported, or the device the estimate is for.
    assumptions : tuple of str
        For estimates: what was assumed (printed on entry unless ``verbose=False``).
    fallback_reasons : tuple of str
        Why a better method was not used, one sentence each.
    matched : str
        How the CUDA device was matched to its NVML device (``"by UUID"``, ``"by PCI bus
        id"``, ``"by index (...)"``: :func:`gpulab.measure.nvml_device.nvml_handle`), so that
        with ``CUDA_VISIBLE_DEVICES=3`` the meter reads the GPU the work runs on; empty
        when NVML was not used.
    samples : list of (seconds, watts)
        Power readings of the sampling method (empty otherwise).
    """

    def __init__(
        self,
        device=None,
        *,
        spec=None,
        cores: int | None = None,
        nvml=None,
        interval_s: float = 0.05,
        verbose: bool = True,
        warmup_fn: Callable[[], object] | None = None,
    ):
        interval_s = positive_number("interval_s", interval_s)
        at_most("interval_s", interval_s, MAX_RUN_TIME_S, "a wait between samples", unit="s")
        if warmup_fn is not None and not callable(warmup_fn):
            raise wrong_type("warmup_fn", warmup_fn, "a callable taking no arguments, or None")
        if cores is not None:
            positive_int("cores", cores)
        _check_nvml(nvml)
        flag("verbose", verbose)
        if device is not None:
            _parse_device(device)  # refuse a device it cannot use now, not on entry
        self._device = device
        self._spec = None if spec is None else resolve_spec("spec", spec)
        self._cores = cores
        self._nvml = nvml
        self._interval_s = interval_s
        self._verbose = verbose
        self._warmup = warmup_fn
        self.method = ""
        self.device_name = ""
        self.assumptions: tuple[str, ...] = ()
        self.fallback_reasons: tuple[str, ...] = ()
        self.matched = ""
        self.samples: list[tuple[float, float]] = []
        self.joules = float("nan")
        self.time_s = float("nan")
        self._assumed_watts = float("nan")
        self._handle = None
        self._index = 0
        self._nvml_live = False
        self._start_mj = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._sampling_error: BaseException | None = None
        self._t0 = 0.0

    # --- results ----------------------------------------------------------------------
    @property
    def is_estimate(self) -> bool:
        """True when the number is rated power × time rather than a measurement."""
        return self.method == "estimate-tdp"

    @property
    def average_watts(self) -> float:
        """Joules divided by seconds (NaN until the block has run)."""
        return self.joules / self.time_s if self.time_s > 0 else float("nan")

    def __str__(self) -> str:
        if not self.method:
            return "EnergyMeter (not used yet)"
        numbers = (
            f"{self.joules:,.4g} J over {format_duration(self.time_s)} "
            f"(average {self.average_watts:,.4g} W) on {self.device_name}"
        )
        if self.is_estimate:
            return f"ESTIMATE (rated power × time, not measured): {numbers}"
        how = "energy counter" if self.method == "nvml-energy-counter" else "sampled power"
        return f"Measured with NVML ({how}): {numbers}"

    def __repr__(self) -> str:
        return f"<EnergyMeter method={self.method!r} joules={self.joules:.4g}>"

    # --- choosing a method -------------------------------------------------------------
    def _device_kind(self) -> tuple[str, int]:
        return _parse_device(self._device)  # None: the best device present now

    def _try_nvml(self, index: int) -> bool:
        """Set up the counter or sampling method; False (with reasons noted) if neither works."""
        reasons = []
        nvml = self._nvml if self._nvml is not None else _default_nvml()
        if nvml is None:
            self.fallback_reasons += (
                "NVML is not installed (pip install nvidia-ml-py), so GPU power cannot be read",
            )
            return False
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self.fallback_reasons += (_nvml_reason(exc, "start"),)
            return False
        self._nvml_live = True
        try:
            self._handle, self.matched = nvml_handle(nvml, index)
            name = nvml.nvmlDeviceGetName(self._handle)
            self.device_name = name.decode() if isinstance(name, bytes) else str(name)
        except LookupError as exc:  # the index may name another GPU: read none
            self.fallback_reasons += (str(exc),)
            self._shutdown()
            return False
        except Exception as exc:
            self.fallback_reasons += (_nvml_reason(exc, f"open GPU {index}"),)
            self._shutdown()
            return False
        try:
            self._start_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self.method = "nvml-energy-counter"
            return True
        except Exception as exc:
            reasons.append(_nvml_reason(exc, "read the energy counter"))
        try:
            watts = nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000
            self.method = "nvml-power-sampling"
            self.samples = [(0.0, watts)]
            self.fallback_reasons += tuple(reasons)
            return True
        except Exception as exc:
            reasons.append(_nvml_reason(exc, "read the power draw"))
        self.fallback_reasons += tuple(reasons)
        self._shutdown()
        return False

    def _shutdown(self) -> None:
        if self._nvml_live:
            self._nvml_live = False
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # shutting down a half-initialised library must not mask results
                pass

    def _use_estimate(self, kind: str) -> None:
        spec = self._spec
        if spec is None and kind == "cuda":
            spec = self._registry_entry_of_gpu()
        assumption = assumed_power(kind, spec=spec, cores=self._cores)
        self.method = "estimate-tdp"
        self._assumed_watts = assumption.watts
        if spec is not None:
            self.device_name = spec.name
        elif not self.device_name:
            self.device_name = "this CPU" if kind == "cpu" else kind
        self.assumptions = (
            f"assumed power {assumption.watts:,.4g} W: {assumption.basis}",
            "energy = assumed power × wall-clock time of the block",
        )
        if self._verbose:
            for reason in self.fallback_reasons:
                print(f"Energy: {reason}.")
            print("Energy: ESTIMATE, not a measurement. " + "; ".join(self.assumptions) + ".")

    def _registry_entry_of_gpu(self):
        """The registry entry of the GPU torch reports (:func:`gpulab.find_spec`).

        Raises ValueError asking for ``spec=`` when the exact part is not in the registry:
        a sibling's rated power (an SXM module's for a PCIe card) would be a wrong estimate.
        """
        from gpulab.hardware.specs import find_spec, match_driver_name

        try:
            import torch

            name = torch.cuda.get_device_name(self._index)
        except Exception as exc:  # no CUDA here, or a driver that cannot name the GPU
            raise ValueError(
                f"CUDA GPU {self._index}: no energy counter, and torch cannot name it "
                f"({type(exc).__name__}: {exc}); pass spec= with the registry name of this "
                "device (see python -m gpulab specs)"
            ) from None
        spec = find_spec(name)
        if spec is None:
            _, why = match_driver_name(name)  # only for the sentence: why there is no match
            raise ValueError(
                f"CUDA GPU {self._index}: no energy counter and no rated power known for "
                f"{name!r} ({why}); pass spec= with the registry name of this device "
                "(see python -m gpulab specs)"
            )
        return spec

    # --- the context manager ------------------------------------------------------------
    def __enter__(self) -> EnergyMeter:
        from gpulab.measure.bench import synchronize

        kind, index = self._device_kind()
        self._index = index
        # Outside the measurement: the warm-up (CUDA context, first-kernel loading, caches),
        # then a synchronization, so the first reading comes after every queued kernel ended.
        if self._warmup is not None:
            self._warmup()
        synchronize()
        if kind == "cuda":
            if not self._try_nvml(index):
                self._use_estimate(kind)
        else:
            self.fallback_reasons += (
                f"{'this CPU' if kind == 'cpu' else 'an Apple GPU'} exposes no energy counter "
                "the course can read",
            )
            self._use_estimate(kind)
        self._t0 = time.perf_counter()
        if self.method == "nvml-power-sampling":
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, name="gpulab-power", daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                watts = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000
            except Exception as exc:  # reported after the block; the thread just stops
                self._sampling_error = exc
                return
            self.samples.append((time.perf_counter() - self._t0, watts))

    def __exit__(self, *exc_info) -> None:
        from gpulab.measure.bench import synchronize

        synchronize()
        self.time_s = time.perf_counter() - self._t0
        try:
            if self.method == "nvml-energy-counter":
                end_mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
                self.joules = (end_mj - self._start_mj) / 1000
            elif self.method == "nvml-power-sampling":
                self._stop.set()
                if self._thread is not None:
                    self._thread.join(timeout=max(2.0, 10 * self._interval_s))
                self._finish_sampling()
            else:
                self.joules = self._assumed_watts * self.time_s
        finally:
            self._shutdown()

    def _finish_sampling(self) -> None:
        if self._sampling_error is not None:
            raise RuntimeError(
                _nvml_reason(self._sampling_error, "read the power draw") + " during the block"
            ) from self._sampling_error
        last = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000
        self.samples.append((self.time_s, last))
        times = [t for t, _ in self.samples]
        watts = [w for _, w in self.samples]
        self.joules = sum(
            (t1 - t0) * (w0 + w1) / 2
            for t0, t1, w0, w1 in zip(times, times[1:], watts, watts[1:], strict=False)
        )


def measure_energy(
    device=None,
    *,
    spec=None,
    cores: int | None = None,
    nvml=None,
    interval_s: float = 0.05,
    verbose: bool = True,
    warmup_fn: Callable[[], object] | None = None,
) -> EnergyMeter:
    """Measure the energy a block of code uses, or estimate it where nothing can be measured.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "mps"} or torch.device, optional
        Where the work runs; default :func:`gpulab.best_device`. On a CUDA GPU NVML is
        tried first; everything else is estimated.
    spec : DeviceSpec or str, optional
        Registry entry (or its name) whose TDP an estimate should use (e.g. ``"T4"``,
        ``"Xeon 8380"``). Default for a CPU: this process's cores × the registry's median
        watts per core (:func:`cpu_watts_per_core`); for a GPU: the registry entry of the
        exact part torch reports (:func:`gpulab.find_spec`); if there is none, a
        ``ValueError`` asks for ``spec=``.
    cores : int, optional
        CPU cores the job uses (CPU estimates); default: the physical cores this process
        may use.
    nvml : object, optional
        Stand-in for the ``pynvml`` module (tests pass a fake): an object with each function
        of :data:`NVML_FUNCTIONS`. Default: ``pynvml`` itself, where it is installed.
    interval_s : float
        Seconds between power samples when the GPU has no energy counter, at most
        ``MAX_RUN_TIME_S`` (600 s).
    verbose : bool
        Print why a measurement was not possible and what an estimate assumes.
    warmup_fn : callable, optional
        Called with no arguments on entry, before anything is read and not measured: run
        the job once (or a few steps of it) here, so that creating the CUDA context and
        loading the first kernels are not counted. Then the device is synchronized, and
        only then is the energy counter first read.

    Returns
    -------
    EnergyMeter
        Use it in a ``with`` statement; read the results after the block.

    Examples
    --------
    >>> import time, gpulab as gl
    >>> with gl.measure_energy("cpu", cores=2, verbose=False) as m:
    ...     time.sleep(0.05)
    >>> m.method, m.is_estimate, round(m.average_watts, 2)
    ('estimate-tdp', True, 8.75)
    """
    return EnergyMeter(
        device,
        spec=spec,
        cores=cores,
        nvml=nvml,
        interval_s=interval_s,
        verbose=verbose,
        warmup_fn=warmup_fn,
    )


def gpu_energy_problem(device="cuda", *, nvml=None) -> str | None:
    """Why the energy of the GPU ``device`` can be neither measured nor estimated, or None.

    :func:`measure_energy` on a GPU reads NVML, or else estimates from the GPU's rated power
    in the registry; with neither (no ``pynvml`` and a GPU the registry does not list, such
    as an H100 NVL or a GH200) it refuses, asking for ``spec=``. A lab calls this first, so
    that it can say why and go on without the GPU's energy instead of stopping.

    Parameters
    ----------
    device : str or torch.device
        The CUDA device (``"cuda"``, ``"cuda:1"``); for any other device there is always an
        estimate, and None is returned.
    nvml : object, optional
        Stand-in for the ``pynvml`` module (tests pass a fake).

    Returns
    -------
    str or None
        One sentence (without its final full stop), or None when :func:`measure_energy`
        will give a number.

    Examples
    --------
    >>> gpu_energy_problem("cpu") is None
    True
    """
    meter = EnergyMeter(device, nvml=nvml, verbose=False)
    kind, index = meter._device_kind()
    if kind != "cuda":
        return None
    meter._index = index
    if meter._try_nvml(index):
        meter._shutdown()
        return None
    try:
        meter._registry_entry_of_gpu()
    except ValueError as exc:
        return "; ".join([*meter.fallback_reasons, str(exc).split("; pass spec=")[0]])
    return None
