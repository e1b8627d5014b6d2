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
from dataclasses import dataclass, field
from importlib import resources

from gpulab.precision import PEAK_PRECISIONS

__all__ = ["DeviceSpec", "find_spec", "get_spec", "list_specs", "DTYPES"]

#: Precisions the registry can hold a peak figure for (:data:`gpulab.PEAK_PRECISIONS`).
DTYPES = PEAK_PRECISIONS

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
        Peak dense FLOP/s by precision (keys from :data:`DTYPES`); precisions the
        datasheet does not give are absent. ``fp32`` is the non-tensor (vector) rate.
    tdp : float or None
        Board power / TDP in watts.
    interconnect : str
        The device-to-device (or host) link as the vendor names it.
    interconnect_bandwidth : float or None
        That link's bandwidth in bytes/s, as the vendor quotes it (NVIDIA: bidirectional).
    sm_count : int or None
        Streaming multiprocessors (NVIDIA), compute units (AMD); see ``notes``.
    launch_price_usd : float or None
        Launch price where a source gives one.
    source_url : str
        The datasheet or page the figures come from.
    notes : str
        Caveats: what was halved, derived or left unverified.
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
    sm_count: int | None = None
    launch_price_usd: float | None = None
    source_url: str = ""
    notes: str = ""

    def peak(self, dtype: str = "fp32") -> float:
        """Peak dense FLOP/s for ``dtype``.

        Raises
        ------
        ValueError
            If ``dtype`` is not one of :data:`DTYPES` or the datasheet gives no figure for it.

        Examples
        --------
        >>> import gpulab as gl
        >>> gl.get_spec("A100 80GB").peak("bf16") / 1e12
        312.0
        """
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype!r} is not known; use one of {', '.join(DTYPES)}")
        if dtype not in self.peak_flops:
            have = ", ".join(self.peak_flops) or "none"
            raise ValueError(
                f"{self.name} has no {dtype} figure in its datasheet "
                f"(it lists: {have}); source: {self.source_url}"
            )
        return self.peak_flops[dtype]

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
        sm_count=int(sm_count) if sm_count is not None else None,
        launch_price_usd=_number(row["launch_price_usd"]),
        source_url=row["source_url"],
        notes=row["notes"],
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
    >>> [s.name for s in gl.list_specs("tpu")]
    ['TPU v4 (per chip)', 'TPU v5e (per chip)']
    """
    kinds = ("gpu", "cpu", "tpu")
    if kind is not None and kind not in kinds:
        raise ValueError(f"kind={kind!r} is not known; use one of {', '.join(kinds)} or None")
    specs = [s for s in _registry() if kind is None or s.kind == kind]
    return sorted(specs, key=lambda s: (s.year, s.name))


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _matches(query: list[str], name: str) -> bool:
    """Every query token is a prefix of some token of the name ("sxm" matches "sxm5")."""
    words = _tokens(name)
    return all(any(w.startswith(q) for w in words) for q in query)


def get_spec(name: str) -> DeviceSpec:
    """Look a device up by a forgiving name: case, spaces and punctuation do not matter.

    ``"h100 sxm"``, ``"H100-SXM5"`` and ``"H100 SXM5 80GB"`` all find the same entry; a
    name that fits several entries, or none, raises an error that lists the candidates.

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

    See also
    --------
    list_specs : every entry.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name={name!r}: give a device name such as 'A100 80GB' or 'T4'")
    specs = _registry()
    wanted = "".join(_tokens(name))
    exact = [s for s in specs if "".join(_tokens(s.name)) == wanted]
    if exact:
        return exact[0]
    hits = [s for s in specs if _matches(_tokens(name), s.name)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        names = ", ".join(repr(s.name) for s in hits)
        raise ValueError(f"name={name!r} fits several devices: {names}; say which one")
    close = difflib.get_close_matches(name, [s.name for s in specs], n=5, cutoff=0.3)
    hint = ", ".join(repr(c) for c in close) if close else "see gl.list_specs()"
    raise ValueError(f"no device called {name!r} in the registry; close names: {hint}")


def find_spec(device_name: str) -> DeviceSpec | None:
    """The registry entry for a name as the driver reports it, or None if there is none.

    Drivers name GPUs differently from datasheets (``"NVIDIA A100-SXM4-80GB"``,
    ``"NVIDIA H100 80GB HBM3"``). This drops the vendor prefix and then trailing words until
    exactly one registry entry fits (which may be a sibling, e.g. the 32 GB entry for a
    16 GB card); it returns None rather than guess between several.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.find_spec("NVIDIA A100-SXM4-80GB").name
    'A100 80GB SXM4'
    >>> gl.find_spec("NVIDIA H100 80GB HBM3").name
    'H100 SXM5 80GB'
    >>> gl.find_spec("Tesla T4").name
    'Tesla T4'
    >>> gl.find_spec("NVIDIA GeForce GTX 1050") is None
    True
    """
    words = [w for w in _tokens(device_name) if w not in ("nvidia", "amd", "tesla")]
    # "H100 80GB HBM3": the memory type tells the SXM part from the PCIe one.
    with_memory = [s for s in _registry() if _matches(words, f"{s.name} {s.memory_type}")]
    if len(with_memory) == 1:
        return with_memory[0]
    while words:
        try:
            return get_spec(" ".join(words))
        except ValueError:
            words.pop()
    return None
