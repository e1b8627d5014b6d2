"""Links between GPUs and hosts: bandwidth, latency where published, and the source of each.

Figures come from ``gpulab/data/interconnects.csv`` (one source URL per row). Every
bandwidth there is **per GPU, one direction** (NVIDIA quotes NVLink and PCIe as
bidirectional totals; those are halved, and the row's ``notes`` say so), because that is
what a ring all-reduce can use and what ``nccl-tests`` reports as bus bandwidth. The
registry's columns are in GB/s and microseconds; :class:`Interconnect` holds SI units.
"""

from __future__ import annotations

import csv
import difflib
import functools
import re
from dataclasses import dataclass
from importlib import resources

from gpulab._checks import (
    choice,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)

__all__ = ["Interconnect", "interconnect", "list_interconnects", "resolve_link"]

_GB = 1e9
_KINDS = ("pcie", "nvlink", "nvswitch", "infiniband")


@dataclass(frozen=True)
class Interconnect:
    """One link technology with its bandwidth, latency where published, and source.

    Attributes
    ----------
    name : str
        Name as in the registry, e.g. ``"NVLink 4 (H100/H200)"``.
    bandwidth : float
        Bandwidth **per GPU in one direction**, in bytes/s. Vendor figures quoted as
        bidirectional totals are halved (see ``notes``).
    latency_s : float or None
        Per-message latency in seconds where a source gives one, else None.
    source_url : str
        The page the figures come from.
    notes : str
        How the figure was derived, and its caveats.
    kind : str
        ``"pcie"``, ``"nvlink"``, ``"nvswitch"`` or ``"infiniband"``.
    year : int or None
        Year of introduction.
    domain_gpus : int or None
        For NVLink and NVSwitch: how many GPUs one NVLink domain connects at this bandwidth
        (8 on an HGX H100 board, 72 in a GB200 NVL72 rack), from ``domain_source_url``;
        beyond it traffic leaves NVLink. None where the registry gives no size.
    domain_source_url : str
        The page that gives ``domain_gpus``.
    """

    name: str
    bandwidth: float
    latency_s: float | None
    source_url: str
    notes: str = ""
    kind: str = ""
    year: int | None = None
    domain_gpus: int | None = None
    domain_source_url: str = ""

    def __post_init__(self) -> None:
        if not text("name", self.name).strip():
            raise ValueError(f"name={self.name!r} must be a non-empty str")
        positive_number("bandwidth", self.bandwidth)
        if self.latency_s is not None:
            non_negative_number("latency_s", self.latency_s)
        for label in ("source_url", "notes", "domain_source_url"):
            text(label, getattr(self, label))
        choice("kind", self.kind, ("", *_KINDS))
        if self.year is not None:
            positive_int("year", self.year)
        if self.domain_gpus is not None:
            positive_int("domain_gpus", self.domain_gpus)
            if not self.domain_source_url.startswith("https://"):
                raise ValueError(
                    f"domain_source_url={self.domain_source_url!r} must be the "
                    f"https:// page that gives domain_gpus={self.domain_gpus}"
                )


def _normalise(name: str) -> str:
    text = name.lower().replace("infiniband", "ib")
    text = re.sub(r"(\d)\.0\b", r"\1", text)  # "NVLink 4.0" is NVLink 4
    text = re.sub(r"\bgen\b|gen(?=\d)|\bx16\b|\(4x\)", "", text)
    return re.sub(r"[^a-z0-9]", "", text)


@functools.cache
def _registry() -> tuple[tuple[Interconnect, tuple[str, ...]], ...]:
    text = resources.files("gpulab").joinpath("data/interconnects.csv").read_text("utf-8")
    entries = []
    for row in csv.DictReader(text.splitlines()):
        link = Interconnect(
            name=row["name"],
            bandwidth=float(row["bandwidth_gbs"]) * _GB,
            latency_s=float(row["latency_us"]) * 1e-6 if row["latency_us"].strip() else None,
            source_url=row["source_url"],
            notes=row["notes"],
            kind=row["kind"],
            year=int(row["year"]) if row["year"].strip() else None,
            domain_gpus=int(row["domain_gpus"]) if (row.get("domain_gpus") or "").strip() else None,
            domain_source_url=row.get("domain_source_url") or "",
        )
        keys = {_normalise(row["name"])}
        keys.update(_normalise(a) for a in row["aliases"].split(";") if a.strip())
        entries.append((link, tuple(sorted(keys))))
    return tuple(entries)


def list_interconnects(kind: str | None = None) -> list[Interconnect]:
    """Every link in the registry, slowest kind first, as listed in ``interconnects.csv``.

    Parameters
    ----------
    kind : {"pcie", "nvlink", "nvswitch", "infiniband"}, optional
        Keep only this kind of link.

    Examples
    --------
    >>> import gpulab as gl
    >>> [(link.name, link.bandwidth / 1e9) for link in gl.list_interconnects("pcie")]
    [('PCIe Gen3 x16', 15.75), ('PCIe Gen4 x16', 31.5), ('PCIe Gen5 x16', 63.0)]
    """
    if kind is not None:
        choice("kind", kind, _KINDS)
    return [link for link, _ in _registry() if kind is None or link.kind == kind]


def interconnect(name: str) -> Interconnect:
    """Look a link up by a forgiving name: ``"PCIe 4"``, ``"nvlink4"``, ``"IB NDR"``.

    Case, spaces, punctuation, ``"Gen"``, ``"x16"`` and a trailing ``".0"`` do not matter.

    Parameters
    ----------
    name : str
        Registry name or one of its aliases (see ``interconnects.csv``).

    Returns
    -------
    Interconnect

    Raises
    ------
    ValueError
        If no link has that name; the message lists the names there are.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.interconnect("NVLink 4").bandwidth / 1e9     # 900 GB/s bidirectional, halved
    450.0
    >>> gl.interconnect("InfiniBand NDR").name
    'InfiniBand NDR (4x)'
    """
    return resolve_link("name", name)


def resolve_link(param: str, name) -> Interconnect:
    """An :class:`Interconnect`, given one or a registry name; errors name ``param``.

    Examples
    --------
    >>> resolve_link("link", "pcie 4").name
    'PCIe Gen4 x16'
    """
    if isinstance(name, Interconnect):
        return name
    choices = ", ".join(repr(link.name) for link, _ in _registry())
    if not isinstance(name, str):
        raise wrong_type(param, name, f"an Interconnect or a link name ({choices})")
    if not name.strip():
        raise ValueError(f"{param}={name!r} must be a link name; choices: {choices}")
    wanted = _normalise(name)
    for link, keys in _registry():
        if wanted in keys:
            return link
    all_keys = {key: link.name for link, keys in _registry() for key in keys}
    close = difflib.get_close_matches(wanted, list(all_keys), n=3, cutoff=0.6)
    close_names = list(dict.fromkeys(all_keys[c] for c in close))
    hint = f" Did you mean {', '.join(map(repr, close_names))}?" if close_names else ""
    raise ValueError(f"{param}={name!r}: no interconnect called {name!r}.{hint} Choices: {choices}")
