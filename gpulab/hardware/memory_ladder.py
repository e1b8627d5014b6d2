"""The memory ladder of one GPU: registers to network, with capacity and bandwidth of each rung.

On-chip figures come from ``gpulab/data/memory_ladder.csv`` (each with its source); device
memory from the spec registry; host and network links from the interconnect registry.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpulab._checks import positive_number, text
from gpulab.hardware.interconnects import interconnect
from gpulab.hardware.specs import resolve_spec

__all__ = ["MemoryLevel", "memory_ladder"]

_LADDER_CSV = Path(__file__).resolve().parents[1] / "data" / "memory_ladder.csv"


@dataclass(frozen=True)
class MemoryLevel:
    """One rung of the memory ladder: capacity and bandwidth where a source gives them."""

    level: str
    capacity_bytes: float | None
    bandwidth_bytes_per_s: float | None
    source_url: str
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("level", "source_url", "notes"):
            text(name, getattr(self, name))
        for name in ("capacity_bytes", "bandwidth_bytes_per_s"):
            if getattr(self, name) is not None:
                positive_number(name, getattr(self, name))


@cache
def _ladder_rows() -> tuple[dict[str, str], ...]:
    with _LADDER_CSV.open(encoding="utf-8", newline="") as f:
        return tuple(csv.DictReader(f))


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def _computed_bandwidth(spec, bytes_per_clock_per_sm: float | None) -> float | None:
    """Peak bytes/s of an on-chip level that serves ``bytes_per_clock_per_sm`` on every SM.

    The clock is the one the registry's FP32 peak implies: FP32 FLOP/s = 2 x SMs x FP32
    lanes per SM x clock (a fused multiply-add is 2 FLOPs).
    """
    if not bytes_per_clock_per_sm:
        return None
    from gpulab.hardware.sm import sm_architecture

    lanes = sm_architecture(spec).fp32_lanes_per_sm
    clock_hz = spec.peak_flops["fp32"] / (2 * spec.sm_count * lanes)
    return bytes_per_clock_per_sm * spec.sm_count * clock_hz


def memory_ladder(spec="H100 SXM") -> list[MemoryLevel]:
    """Registers → shared/L1 → L2 → device memory → host over PCIe → network, for one GPU.

    On-chip figures come from ``gpulab/data/memory_ladder.csv`` (each with its source;
    per-SM capacities are multiplied by the registry's SM count; shared memory's bandwidth is
    a computed peak, 128 bytes per clock per SM at the clock the registry's FP32 peak
    implies); device memory from the spec registry; the PCIe Gen5 and InfiniBand NDR
    bandwidths from the interconnect registry. A level without a published figure has
    ``None`` there.

    Examples
    --------
    >>> import gpulab as gl
    >>> [level.level for level in memory_ladder("H100 SXM")][:3]
    ['registers', 'shared memory / L1', 'L2 cache']
    """
    the_spec = resolve_spec("spec", spec, kinds=("gpu",))
    rows = [r for r in _ladder_rows() if r["gpu"] == the_spec.name]
    known = sorted({r["gpu"] for r in _ladder_rows()})
    if not rows:
        raise ValueError(f"spec={spec!r}: the memory ladder has figures for {', '.join(known)}")
    levels = []
    for r in rows[:3]:
        per_sm = _number(r["capacity_bytes_per_sm"])
        capacity = per_sm * the_spec.sm_count if per_sm else _number(r["capacity_bytes"])
        bw = _number(r["bandwidth_gbs"])
        bw = bw * 1e9 if bw else _computed_bandwidth(the_spec, _number(r["bytes_per_clock_per_sm"]))
        levels.append(MemoryLevel(r["level"], capacity, bw,
                                  r["source_url"], r["notes"]))  # fmt: skip
    levels.append(MemoryLevel(f"device memory ({the_spec.memory_type})", the_spec.memory_bytes,
                              the_spec.memory_bandwidth, the_spec.source_url))  # fmt: skip
    host, pcie, network = rows[3], interconnect("PCIe Gen5"), interconnect("InfiniBand NDR")
    levels.append(MemoryLevel(host["level"], _number(host["capacity_bytes"]),
                              pcie.bandwidth, host["source_url"],
                              host["notes"]))  # fmt: skip
    levels.append(MemoryLevel(f"network ({network.name})", None, network.bandwidth,
                              network.source_url, network.notes))  # fmt: skip
    return levels
