"""The memory ladder of one GPU: registers to network, with capacity, bandwidth and latency.

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
    """One rung of the memory ladder: capacity, bandwidth and latency where a source gives them.

    ``latency_cycles`` is the time of one dependent load that hits this level, in the GPU's
    clock cycles, as a pointer-chasing microbenchmark measures it; NVIDIA publishes no
    latencies, so the figure is a third party's published measurement, at
    ``latency_source_url``. None where no such measurement is in the data.
    """

    level: str
    capacity_bytes: float | None
    bandwidth_bytes_per_s: float | None
    source_url: str
    notes: str = ""
    latency_cycles: float | None = None
    latency_source_url: str = ""

    def __post_init__(self) -> None:
        for name in ("level", "source_url", "notes", "latency_source_url"):
            text(name, getattr(self, name))
        for name in ("capacity_bytes", "bandwidth_bytes_per_s", "latency_cycles"):
            if getattr(self, name) is not None:
                positive_number(name, getattr(self, name))
        if self.latency_cycles is not None and not self.latency_source_url.startswith("https://"):
            raise ValueError(
                f"latency_cycles={self.latency_cycles} needs the https:// page it comes from; "
                f"latency_source_url={self.latency_source_url!r}"
            )


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
    by_level = {r["level"]: r for r in rows}

    def latency(row) -> dict:
        if row is None or not _number(row.get("latency_cycles") or ""):
            return {}
        return {"latency_cycles": _number(row["latency_cycles"]),
                "latency_source_url": row["latency_source_url"]}  # fmt: skip

    levels = []
    for name in ("registers", "shared memory / L1", "L2 cache"):
        r = by_level[name]
        per_sm = _number(r["capacity_bytes_per_sm"])
        capacity = per_sm * the_spec.sm_count if per_sm else _number(r["capacity_bytes"])
        bw = _number(r["bandwidth_gbs"])
        bw = bw * 1e9 if bw else _computed_bandwidth(the_spec, _number(r["bytes_per_clock_per_sm"]))
        levels.append(MemoryLevel(r["level"], capacity, bw,
                                  r["source_url"], r["notes"], **latency(r)))  # fmt: skip
    levels.append(MemoryLevel(f"device memory ({the_spec.memory_type})", the_spec.memory_bytes,
                              the_spec.memory_bandwidth, the_spec.source_url,
                              **latency(by_level.get("device memory"))))  # fmt: skip
    host = by_level["host memory over PCIe"]
    pcie, network = interconnect("PCIe Gen5"), interconnect("InfiniBand NDR")
    levels.append(MemoryLevel(host["level"], _number(host["capacity_bytes"]),
                              pcie.bandwidth, host["source_url"],
                              host["notes"]))  # fmt: skip
    levels.append(MemoryLevel(f"network ({network.name})", None, network.bandwidth,
                              network.source_url, network.notes))  # fmt: skip
    return levels
