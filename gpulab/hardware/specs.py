"""The spec registry: datasheet figures for GPUs, CPUs and TPUs, each with its source.

The figures live in ``gpulab/data/gpu_specs.csv`` (one source URL per row, dense tensor
figures; vendor figures quoted "with sparsity" are halved and say so in ``notes``).
Everything here is in SI units: bytes, bytes per second, FLOP/s, watts.

See also the chapter "What a GPU is" (``book/gpu_basics.md``).
"""

from __future__ import annotations

import csv
import difflib
import functools
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from importlib import resources

from gpulab._checks import choice, positive_int, positive_number, text, wrong_type
from gpulab.hardware.precision import PEAK_PRECISIONS, peak_precision

__all__ = [
    "DeviceSpec",
    "LINK_DIRECTIONS",
    "STATUSES",
    "find_spec",
    "get_spec",
    "list_specs",
    "lookup",
    "match_driver_name",
    "resolve_spec",
]

#: Whether a registry device can be bought or rented now (``"available"``) or has only been
#: announced with figures from a primary source (``"announced"``).
STATUSES = ("available", "announced")

#: What a registry link figure counts: ``"both"`` directions together (NVIDIA's convention for
#: NVLink and PCIe, Google's for ICI), ``"each"`` direction, or ``"unstated"`` where the
#: source does not say. Empty (``""``) only where the row has no link figure.
LINK_DIRECTIONS = ("both", "each", "unstated")


_DTYPE_COLUMNS = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tensor_tflops_dense",
    "fp16": "fp16_tensor_tflops_dense",
    "bf16": "bf16_tensor_tflops_dense",
    "fp8": "fp8_tensor_tflops_dense",
}
_GB = 1e9
_TERA = 1e12


@dataclass(frozen=True)
class DeviceSpec:
    """Datasheet figures for one device, in SI units, with the page they came from.

    Attributes
    ----------
    name : str
        Name as in the registry, e.g. ``"H100 SXM5 80GB"``.
    vendor, architecture : str
        For example ``"NVIDIA"``, ``"Hopper (GH100)"``.
    year : int
        Year of release (or announcement, see ``notes``).
    kind : str
        ``"gpu"``, ``"cpu"`` or ``"tpu"``.
    memory_bytes : float or None
        Device memory capacity (None where it depends on the DIMMs installed).
    memory_type : str
        For example ``"HBM3"``, ``"GDDR6"``, ``"DDR4-3200, 8 channels"``.
    memory_bandwidth : float or None
        Peak memory bandwidth in bytes/s.
    peak_flops : dict
        Peak dense FLOP/s by precision (keys from
        :data:`~gpulab.hardware.precision.PEAK_PRECISIONS`); precisions the datasheet does
        not give are absent. ``fp32`` is the non-tensor (vector) rate.
    tdp : float or None
        Board power / TDP in watts.
    interconnect : str
        The device-to-device (or host) link as the vendor names it.
    interconnect_bandwidth : float or None
        That link's bandwidth in bytes/s, as the vendor quotes it (NVIDIA: both directions
        together). A one-way transfer uses :attr:`interconnect_bandwidth_one_way`.
    interconnect_direction : str
        What ``interconnect_bandwidth`` counts, one of :data:`LINK_DIRECTIONS`; ``""`` when
        there is no link figure.
    sm_count : int or None
        Streaming multiprocessors (NVIDIA), compute units (AMD); see ``notes``.
    launch_price_usd : float or None
        Launch price where a source gives one.
    source_url : str
        The datasheet or page the figures come from.
    notes : str
        Caveats: what was halved, derived or left unverified.
    form_factor : str
        How the device is packaged, e.g. ``"SXM4 module"``, ``"PCIe card (dual-slot)"``:
        an SXM module and a PCIe card of the same chip have different figures.
    status : str
        ``"available"`` (shipping or rentable) or ``"announced"`` (figures from the vendor's
        announcement; not yet sold, so the chooser never recommends it). See
        :data:`STATUSES`.
    gpus_per_package : int
        How many GPUs the row's figures cover: 1, except for a board or package that carries
        several, each a separate device to software (the Tesla K80 board has two GK210 GPUs,
        the Instinct MI250X two GCDs). Its datasheet figures are for the whole package;
        :meth:`per_gpu` gives one GPU's share.
    """

    name: str
    vendor: str
    architecture: str
    year: int
    kind: str
    memory_bytes: float | None
    memory_type: str
    memory_bandwidth: float | None
    peak_flops: dict[str, float] = field(default_factory=dict)
    tdp: float | None = None
    interconnect: str = ""
    interconnect_bandwidth: float | None = None
    interconnect_direction: str = ""
    sm_count: int | None = None
    launch_price_usd: float | None = None
    source_url: str = ""
    notes: str = ""
    form_factor: str = ""
    status: str = "available"
    gpus_per_package: int = 1

    def __post_init__(self) -> None:
        for name in (
            "name", "vendor", "architecture", "memory_type", "interconnect", "source_url",
            "notes", "form_factor",
        ):  # fmt: skip
            text(name, getattr(self, name))
        positive_int("year", self.year)
        choice("kind", self.kind, ("gpu", "cpu", "tpu"))
        choice("status", self.status, STATUSES)
        for name in (
            "memory_bytes", "memory_bandwidth", "tdp", "interconnect_bandwidth",
            "launch_price_usd",
        ):  # fmt: skip
            if getattr(self, name) is not None:
                positive_number(name, getattr(self, name))
        if self.sm_count is not None:
            positive_int("sm_count", self.sm_count)
        positive_int("gpus_per_package", self.gpus_per_package)
        direction = self.interconnect_direction
        if self.interconnect_bandwidth is None:
            if isinstance(direction, str) and direction in LINK_DIRECTIONS:
                raise ValueError(
                    f"interconnect_direction={direction!r} with interconnect_bandwidth=None: a "
                    "direction says what a bandwidth counts; give the bandwidth, or leave the "
                    "direction ''"
                )
            choice("interconnect_direction", direction, ("",))
        else:
            choice("interconnect_direction", direction, LINK_DIRECTIONS)
        if not isinstance(self.peak_flops, dict):
            raise wrong_type("peak_flops", self.peak_flops, "a dict of precision to FLOP/s")
        for key, value in self.peak_flops.items():
            if not isinstance(key, str):
                raise wrong_type(
                    "peak_flops", self.peak_flops, "a dict whose keys are precision names"
                )
            if key not in PEAK_PRECISIONS:
                raise ValueError(
                    f"peak_flops has a figure for {key!r}; the keys must be among "
                    f"{', '.join(map(repr, PEAK_PRECISIONS))}"
                )
            positive_number(f"peak_flops[{key!r}]", value)

    def peak(self, precision: str = "fp32") -> float:
        """Peak dense FLOP/s at ``precision``.

        Parameters
        ----------
        precision : str
            One of :data:`gpulab.PRECISIONS`; mixed precision (``"amp_bf16"``,
            ``"amp_fp16"``) runs its matrix products at the 16-bit peak.

        Raises
        ------
        ValueError
            If ``precision`` is not known or the datasheet gives no figure for it.

        Examples
        --------
        >>> import gpulab as gl
        >>> gl.get_spec("A100 80GB").peak("bf16") / 1e12
        312.0
        >>> gl.get_spec("A100 80GB").peak("amp_bf16") / 1e12
        312.0
        """
        key = peak_precision(precision)  # refuses an unknown name, naming ``precision``
        if key not in self.peak_flops:
            have = ", ".join(self.peak_flops) or "none"
            raise ValueError(
                f"{self.name} has no {key} figure in its datasheet "
                f"(it lists: {have}); source: {self.source_url}"
            )
        return self.peak_flops[key]

    @property
    def interconnect_bandwidth_one_way(self) -> float | None:
        """The link's bandwidth in one direction, in bytes/s: what a host-to-device copy gets.

        A figure quoted for both directions together is halved; None where the registry has
        no link figure or its source does not say which it counts.

        Examples
        --------
        >>> import gpulab as gl
        >>> t4 = gl.get_spec("T4")                    # PCIe Gen3 x16: NVIDIA's 32 GB/s
        >>> t4.interconnect_direction, t4.interconnect_bandwidth_one_way / 1e9
        ('both', 16.0)
        """
        if self.interconnect_bandwidth is None:
            return None
        if self.interconnect_direction == "both":
            return self.interconnect_bandwidth / 2
        if self.interconnect_direction == "each":
            return self.interconnect_bandwidth
        return None

    def per_gpu(self) -> DeviceSpec:
        """One GPU's share of a package that carries several; the entry itself otherwise.

        A Tesla K80 board is two GPUs and an Instinct MI250X two GCDs; software sees each as
        a device of its own, with half the board's memory, bandwidth, peak rates and compute
        units. The power is the package's divided equally (derived: the datasheets give the
        package's only). Compare a measurement on one device with this, never with the
        package's figures.

        Examples
        --------
        >>> import gpulab as gl
        >>> k80 = gl.get_spec("K80")
        >>> one = k80.per_gpu()
        >>> one.name, one.memory_bytes / 1e9, one.memory_bandwidth / 1e9, one.sm_count
        ('Tesla K80 (one of 2 GPUs)', 12.0, 240.0, 13)
        >>> gl.get_spec("T4").per_gpu() is gl.get_spec("T4")
        True
        """
        n = self.gpus_per_package
        if n == 1:
            return self

        def share(value):
            return value / n if value is not None else None

        return replace(
            self,
            name=f"{self.name} (one of {n} GPUs)",
            memory_bytes=share(self.memory_bytes),
            memory_bandwidth=share(self.memory_bandwidth),
            peak_flops={k: v / n for k, v in self.peak_flops.items()},
            tdp=share(self.tdp),
            sm_count=self.sm_count // n if self.sm_count is not None else None,
            launch_price_usd=share(self.launch_price_usd),
            notes=f"One of the {n} GPUs of a {self.name}: the package's figures divided by {n} "
            f"(derived; the power split equally). {self.notes}",
            gpus_per_package=1,
        )

    @property
    def ridge_point(self) -> float | None:
        """FP32 FLOPs per byte at which this device stops being memory-bound (roofline)."""
        if self.memory_bandwidth and "fp32" in self.peak_flops:
            return self.peak_flops["fp32"] / self.memory_bandwidth
        return None


def _number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def _kind(row: dict[str, str]) -> str:
    if row["form_factor"].startswith("CPU"):
        return "cpu"
    if row["name"].startswith("TPU"):
        return "tpu"
    return "gpu"


def _row_to_spec(row: dict[str, str]) -> DeviceSpec:
    peaks = {}
    for dtype, column in _DTYPE_COLUMNS.items():
        value = _number(row[column])
        if value is not None:
            peaks[dtype] = value * _TERA
    memory_gb = _number(row["memory_gb"])
    bandwidth_gbs = _number(row["memory_bandwidth_gbs"])
    link_gbs = _number(row["interconnect_bandwidth_gbs"])
    sm_count = _number(row["sm_count"])
    return DeviceSpec(
        name=row["name"],
        vendor=row["vendor"],
        architecture=row["architecture"],
        year=int(row["year"]),
        kind=_kind(row),
        memory_bytes=memory_gb * _GB if memory_gb is not None else None,
        memory_type=row["memory_type"],
        memory_bandwidth=bandwidth_gbs * _GB if bandwidth_gbs is not None else None,
        peak_flops=peaks,
        tdp=_number(row["tdp_w"]),
        interconnect=row["interconnect"],
        interconnect_bandwidth=link_gbs * _GB if link_gbs is not None else None,
        interconnect_direction=row["interconnect_direction"],
        sm_count=int(sm_count) if sm_count is not None else None,
        launch_price_usd=_number(row["launch_price_usd"]),
        source_url=row["source_url"],
        notes=row["notes"],
        form_factor=row["form_factor"],
        status=row["status"],
        gpus_per_package=int(row["gpus_per_package"]),
    )


@functools.cache
def _registry() -> tuple[DeviceSpec, ...]:
    text = resources.files("gpulab").joinpath("data/gpu_specs.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(text.splitlines())
    return tuple(_row_to_spec(row) for row in rows)


def list_specs(kind: str | None = None) -> list[DeviceSpec]:
    """All devices in the registry, oldest first.

    Parameters
    ----------
    kind : {"gpu", "cpu", "tpu"}, optional
        Keep only this kind of device.

    Examples
    --------
    >>> import gpulab as gl
    >>> [s.name for s in gl.list_specs("tpu")][:3]
    ['TPU v4 (per chip)', 'TPU v5e (per chip)', 'TPU v5p (per chip)']
    >>> [s.name for s in gl.list_specs("cpu") if s.year >= 2024]
    ['AMD EPYC 9755', 'Intel Xeon 6980P']
    """
    if kind is not None:
        choice("kind", kind, ("gpu", "cpu", "tpu"))
    specs = [s for s in _registry() if kind is None or s.kind == kind]
    return sorted(specs, key=lambda s: (s.year, s.name))


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _matches(query: list[str], name: str) -> bool:
    """Every query token is a prefix of some token of the name ("sxm" matches "sxm5")."""
    words = _tokens(name)
    return all(any(w.startswith(q) for w in words) for q in query)


# Words in device names that say how a chip is packaged. The same chip as an SXM module and
# as a PCIe card has different clocks, memory bandwidth and power, so they are told apart.
_FORM_WORD = re.compile(r"(sxm|pcie|nvl|oam|laptop|mobile)(\d*)")
_MEMORY_TYPE_WORD = re.compile(r"(hbm\d*e?|gddr\d+x?|lpddr\d+x?)")
_MEMORY_SIZE_WORD = re.compile(r"(\d+)gb")
_VENDOR_WORDS = ("nvidia", "amd", "tesla")


def _model(tokens: list[str]) -> str | None:
    """The product's model word: the first with a digit ("a100", "3090", "mi300x")."""
    return next((t for t in tokens if any(c.isdigit() for c in t)), None)


def _form(text: str) -> tuple[str, str] | None:
    """(family, generation) of the first form-factor word in ``text``: ("sxm", "4")."""
    for token in _tokens(text):
        match = _FORM_WORD.fullmatch(token)
        if match:
            return match.group(1), match.group(2)
    return None


def _same_form(said: tuple[str, str], spec: DeviceSpec) -> bool:
    have = _form(spec.form_factor)
    if have is None or have[0] != said[0]:
        return False
    return not (said[1] and have[1]) or said[1] == have[1]


def _prefer_sxm(hits: list[DeviceSpec], query: list[str]) -> DeviceSpec | None:
    """For a name that says no form factor, the SXM module among one product's variants.

    "A100 80GB" fits the SXM4 module and the PCIe card; NVIDIA's headline figures, and this
    course's, are the SXM module's, so a name that does not say "PCIe" means it.
    """
    if any(_FORM_WORD.fullmatch(q) for q in query):
        return None
    if len({_model(_tokens(s.name)) for s in hits}) != 1:
        return None
    sxm = [s for s in hits if (_form(s.form_factor) or ("",))[0] == "sxm"]
    return sxm[0] if len(sxm) == 1 else None


def _prefer_larger_memory(hits: list[DeviceSpec], query: list[str]) -> DeviceSpec | None:
    """For a name that says no memory size, the larger of variants that differ only in it.

    "V100" fits the SXM2 module with 16 GB and with 32 GB: the same datasheet column, the
    same peaks and bandwidth. Variants whose bandwidth or peaks differ (the A100 40GB and
    80GB) stay ambiguous: the figures would depend on the guess.
    """
    if any(_MEMORY_SIZE_WORD.fullmatch(q) for q in query) or len(hits) < 2:
        return None
    first = hits[0]
    if any(
        (_model(_tokens(s.name)), s.form_factor, s.peak_flops, s.memory_bandwidth)
        != (
            _model(_tokens(first.name)),
            first.form_factor,
            first.peak_flops,
            first.memory_bandwidth,
        )
        for s in hits
    ):
        return None
    return max(hits, key=lambda s: s.memory_bytes or 0)


def get_spec(name: str) -> DeviceSpec:
    """Look a device up by a forgiving name: case, spaces and punctuation do not matter.

    ``"h100 sxm"``, ``"H100-SXM5"`` and ``"H100 SXM5 80GB"`` all find the same entry. A name
    that does not say the form factor means the SXM module when the product also comes as
    a PCIe card (``"A100 80GB"`` is the SXM4 module; say ``"A100 80GB PCIe"`` for the
    card), and the larger of variants that differ only in memory size (``"V100"`` is the
    32 GB module; the 16 GB one has the same peaks and bandwidth). A name that fits several
    entries otherwise, or none, raises an error that lists the candidates.

    Parameters
    ----------
    name : str
        Full or partial device name.

    Returns
    -------
    DeviceSpec

    Raises
    ------
    ValueError
        If no entry or more than one entry fits, with the close names listed.

    Examples
    --------
    >>> import gpulab as gl
    >>> spec = gl.get_spec("t4")
    >>> spec.name, spec.memory_bandwidth / 1e9
    ('Tesla T4', 320.0)
    >>> gl.get_spec("A100 80GB").name, gl.get_spec("A100 80GB PCIe").name
    ('A100 80GB SXM4', 'A100 80GB PCIe')

    See also
    --------
    list_specs : every entry.
    find_spec : the entry for a name as a driver reports it.
    """
    try:
        return lookup(name)
    except ValueError as exc:
        raise ValueError(f"name={name!r}: {exc}") from None


def lookup(name) -> DeviceSpec:
    """:func:`get_spec` with errors that do not start with a parameter (callers add theirs).

    Examples
    --------
    >>> lookup("a100 80gb sxm").name
    'A100 80GB SXM4'
    """
    if not isinstance(name, str):
        raise wrong_type("name", name, "a device name such as 'A100 80GB' or 'T4'")
    if not name.strip():
        raise ValueError("give a device name such as 'A100 80GB' or 'T4'")
    specs = _registry()
    query = _tokens(name)
    wanted = "".join(query)
    exact = [s for s in specs if "".join(_tokens(s.name)) == wanted]
    if exact:
        return exact[0]
    hits = [s for s in specs if _matches(query, s.name)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        preferred = _prefer_sxm(hits, query) or _prefer_larger_memory(hits, query)
        if preferred is not None:
            return preferred
        names = ", ".join(repr(s.name) for s in hits)
        raise ValueError(f"fits several devices: {names}; say which one")
    close = difflib.get_close_matches(name, [s.name for s in specs], n=5, cutoff=0.3)
    hint = ", ".join(repr(c) for c in close) if close else "see gl.list_specs()"
    raise ValueError(f"no device called {name!r} in the registry; close names: {hint}")


def _mismatch(spec: DeviceSpec, form, size_gb, memory_type, extra) -> str | None:
    """Why ``spec`` is not the device a driver name describes, or None if it is."""
    if form is not None and not _same_form(form, spec):
        said = "".join(form).upper().replace("PCIE", "PCIe")
        return f"{spec.name} is the {spec.form_factor or 'other form factor'}, not {said}"
    if size_gb is not None and (
        spec.memory_bytes is None or round(spec.memory_bytes / _GB) != size_gb
    ):
        have = f"{spec.memory_bytes / _GB:.0f} GB" if spec.memory_bytes else "no fixed memory"
        return f"{spec.name} has {have}, not {size_gb} GB"
    if memory_type is not None and memory_type not in _tokens(spec.memory_type):
        return f"{spec.name} has {spec.memory_type}, not {memory_type.upper()}"
    missing = [w for w in extra if not _matches([w], spec.name)]
    if missing:
        return f"{spec.name} has no {' '.join(missing).upper()} in its name"
    return None


def match_driver_name(device_name: str) -> tuple[DeviceSpec | None, str]:
    """The registry entry for a driver's device name, and one sentence saying why.

    Used by :func:`find_spec` and by the modules that explain a missing entry to the reader.
    """
    if not isinstance(device_name, str):
        raise wrong_type("device_name", device_name, "a name as the driver reports it")
    if not device_name.strip():
        raise ValueError(
            f"device_name={device_name!r} must be a name as the driver reports it, "
            "e.g. 'NVIDIA A100-SXM4-80GB' (torch.cuda.get_device_name())"
        )
    words = [w for w in _tokens(device_name) if w not in _VENDOR_WORDS]
    model = _model(words)
    candidates = [s for s in _registry() if model and _model(_tokens(s.name)) == model]
    if not candidates:
        return None, f"the registry has no entry for {device_name!r}"
    form = size_gb = memory_type = None
    extra = []
    for word in words:
        if word == model:
            continue
        if _FORM_WORD.fullmatch(word):
            form = _FORM_WORD.fullmatch(word).groups()
        elif _MEMORY_TYPE_WORD.fullmatch(word):
            memory_type = word
        elif _MEMORY_SIZE_WORD.fullmatch(word):
            size_gb = int(_MEMORY_SIZE_WORD.fullmatch(word).group(1))
        else:
            extra.append(word)
    reasons = {s.name: _mismatch(s, form, size_gb, memory_type, extra) for s in candidates}
    fits = [s for s in candidates if reasons[s.name] is None]
    if len(fits) == 1:
        return fits[0], f"{device_name!r} is the registry entry {fits[0].name!r}"
    if fits:
        names = ", ".join(repr(s.name) for s in fits)
        return None, f"{device_name!r} fits several registry entries ({names})"
    why = "; ".join(reasons[s.name] for s in candidates)
    return None, f"the registry has no entry for this exact part ({why})"


def find_spec(device_name: str) -> DeviceSpec | None:
    """The registry entry for a name as the driver reports it, or None if there is none.

    Drivers name GPUs differently from datasheets (``"NVIDIA A100-SXM4-80GB"``,
    ``"NVIDIA H100 80GB HBM3"``, ``"NVIDIA A100 80GB PCIe"``). The entry must be the same
    part: the same model, and the same form factor (SXM module or PCIe card), memory size
    and memory type wherever the driver's name states them. A card whose exact part is not
    in the registry gets None, never a sibling's figures (a PCIe card's clocks, bandwidth
    and power differ from the SXM module's).

    Parameters
    ----------
    device_name : str
        As ``torch.cuda.get_device_name()`` or NVML report it.

    Returns
    -------
    DeviceSpec or None
        The entry, for one GPU (see below), or None.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.find_spec("NVIDIA A100-SXM4-80GB").name
    'A100 80GB SXM4'
    >>> gl.find_spec("NVIDIA A100 80GB PCIe").name
    'A100 80GB PCIe'
    >>> gl.find_spec("NVIDIA H100 80GB HBM3").name
    'H100 SXM5 80GB'
    >>> gl.find_spec("Tesla T4").name
    'Tesla T4'
    >>> gl.find_spec("NVIDIA A100-PCIE-40GB") is None  # only the 40 GB SXM4 module is listed
    True
    >>> gl.find_spec("NVIDIA GeForce GTX 1050") is None
    True

    A driver names one device: on a board that carries several GPUs, the entry is one GPU's
    share (:meth:`DeviceSpec.per_gpu`), so that a measurement on it compares like with like.

    >>> gl.find_spec("Tesla K80").memory_bytes / 1e9
    12.0
    """
    spec = match_driver_name(device_name)[0]
    return spec.per_gpu() if spec is not None else None


def resolve_spec(name: str, value, *, kinds: Collection[str] | None = None):
    """A registry entry from a :class:`~gpulab.hardware.specs.DeviceSpec` or a forgiving name.

    Unknown or ambiguous names raise ``ValueError`` naming the parameter and listing the
    close registry names; ``kinds`` (e.g. ``("gpu",)``) restricts what is accepted.

    Examples
    --------
    >>> resolve_spec("spec", "t4").name
    'Tesla T4'
    >>> resolve_spec("spec", "Z9000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: spec='Z9000': no device called 'Z9000' in the registry; close names: ...
    """
    if isinstance(value, DeviceSpec):
        spec = value
    elif isinstance(value, str):
        try:
            spec = lookup(value)
        except ValueError as exc:
            raise ValueError(f"{name}={value!r}: {exc}") from None
    else:
        raise wrong_type(
            name,
            value,
            "a registry name such as 'A100 80GB' or a DeviceSpec (gl.list_specs() lists them)",
        )
    if kinds is not None and spec.kind not in kinds:
        raise ValueError(
            f"{name}={value!r} is a {spec.kind.upper()} ({spec.name}); "
            f"this needs a {' or '.join(k.upper() for k in kinds)}"
        )
    return spec
