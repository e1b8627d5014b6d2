"""Inside one streaming multiprocessor (SM): per-SM limits and anatomy, with their sources.

A kernel's occupancy, its waves and its shared-memory tiles are decided by a few numbers
per SM: how many threads, warps and blocks one SM holds, its register file and its shared
memory. Those numbers depend on the **compute capability** (the SM generation), not on the
product, so they live in their own table, ``gpulab/data/sm_architecture.csv``, one row per
compute capability. A registry GPU finds its row through the chip named in its
``architecture`` field (``"Turing (TU104)"`` → 7.5).

Sources, one URL per row in the table:

* the limits (threads, warps, blocks, registers, shared memory) come from the CUDA C++
  Programming Guide's table "Technical Specifications per Compute Capability";
* the anatomy (warp schedulers, FP32 lanes, Tensor Cores, L1/shared capacity) comes from
  NVIDIA's architecture whitepaper for that generation;
* the register allocation unit (a warp's registers are allocated in units of 256) is the
  value NVIDIA's CUDA Occupancy Calculator uses for every compute capability from 3.0 on
  (https://docs.nvidia.com/nsight-compute/NsightCompute/index.html#occupancy-calculator);
* the shared-memory allocation unit (256 bytes up to 7.x, 128 from 8.0 on) is the one the
  CUDA Toolkit's own occupancy calculator uses: the header ``include/cuda_occupancy.h``
  that ships with every toolkit (https://developer.nvidia.com/cuda-toolkit), function
  ``cudaOccSMemAllocationGranularity``. ``tests/test_kernels_occupancy_reference.py`` compiles
  against that header and checks this column, the register allocation unit, the block
  limit and the register partitions (one per warp scheduler) against it.

Blackwell (10.0) is not in the table: the registry's B200 has no SM count yet.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from gpulab._checks import non_negative_int, positive_int, text, wrong_type
from gpulab.hardware.specs import resolve_spec

__all__ = ["SmArchitecture", "list_sm_architectures", "sm_architecture"]


_INT_FIELDS = (
    "warp_size",
    "max_threads_per_block",
    "max_threads_per_sm",
    "max_warps_per_sm",
    "max_blocks_per_sm",
    "registers_per_sm",
    "max_registers_per_thread",
    "register_allocation_unit",
    "max_shared_per_sm_bytes",
    "max_shared_per_block_bytes",
    "reserved_shared_per_block_bytes",
    "shared_allocation_unit_bytes",
    "warp_schedulers_per_sm",
    "fp32_lanes_per_sm",
    "tensor_cores_per_sm",
)
# No Tensor Cores before Volta; no shared memory kept back by the runtime before 8.0.
_MAY_BE_ZERO = ("reserved_shared_per_block_bytes", "tensor_cores_per_sm")


@dataclass(frozen=True)
class SmArchitecture:
    """Per-SM limits and anatomy of one compute capability (sizes in bytes).

    Attributes
    ----------
    compute_capability : str
        ``"7.5"``, ``"8.0"``, ...
    architecture : str
        NVIDIA's name for the generation, e.g. ``"Turing"``.
    chips : tuple of str
        The chips of this compute capability, e.g. ``("GA100",)``.
    warp_size, max_threads_per_block, max_threads_per_sm, max_warps_per_sm, max_blocks_per_sm : int
        Threads per warp, and the most threads, resident warps and resident blocks.
    registers_per_sm, max_registers_per_thread, register_allocation_unit : int
        32-bit registers in one SM's register file; the most one thread may use; the unit
        (in registers, per warp) in which a warp's registers are allocated.
    max_shared_per_sm_bytes, max_shared_per_block_bytes : int
        Shared memory one SM holds and one block may use (above 48 KB by opt-in).
    reserved_shared_per_block_bytes : int
        Shared memory the CUDA runtime reserves for each resident block (1 KB from 8.0 on).
    shared_allocation_unit_bytes : int
        The unit in which a block's shared memory (with the reserved part) is allocated.
    warp_schedulers_per_sm, fp32_lanes_per_sm, tensor_cores_per_sm : int
        From the architecture whitepaper. Each warp scheduler heads one partition of the SM
        (a quarter from Volta on) with its own share of the register file.
    l1_shared_per_sm_bytes : int or None
        The combined L1 cache and shared memory per SM (None where they are separate).
    limits_source_url, anatomy_source_url : str
        Where the limits and the anatomy come from.
    notes : str
        Caveats.
    """

    compute_capability: str
    architecture: str
    chips: tuple[str, ...]
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    register_allocation_unit: int
    max_shared_per_sm_bytes: int
    max_shared_per_block_bytes: int
    reserved_shared_per_block_bytes: int
    shared_allocation_unit_bytes: int
    warp_schedulers_per_sm: int
    fp32_lanes_per_sm: int
    tensor_cores_per_sm: int
    l1_shared_per_sm_bytes: int | None
    limits_source_url: str
    anatomy_source_url: str
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("compute_capability", "architecture", "limits_source_url"):
            text(name, getattr(self, name))
        text("anatomy_source_url", self.anatomy_source_url)
        text("notes", self.notes)
        if not (isinstance(self.chips, tuple) and all(isinstance(c, str) for c in self.chips)):
            raise wrong_type("chips", self.chips, "a non-empty tuple of chip names (str)")
        if not self.chips:
            raise ValueError(f"chips={self.chips!r} must be a non-empty tuple of chip names")
        for name in _INT_FIELDS:
            check = non_negative_int if name in _MAY_BE_ZERO else positive_int
            check(name, getattr(self, name))
        if self.l1_shared_per_sm_bytes is not None:
            positive_int("l1_shared_per_sm_bytes", self.l1_shared_per_sm_bytes)
        if self.max_warps_per_sm * self.warp_size != self.max_threads_per_sm:
            raise ValueError(
                f"compute capability {self.compute_capability}: max_warps_per_sm * warp_size "
                f"must equal max_threads_per_sm"
            )


@lru_cache(maxsize=1)
def _table() -> dict[str, SmArchitecture]:
    text = resources.files("gpulab").joinpath("data/sm_architecture.csv").read_text("utf-8")
    table = {}
    for row in csv.DictReader(text.splitlines()):
        l1 = row["l1_shared_per_sm_bytes"].strip()
        table[row["compute_capability"]] = SmArchitecture(
            compute_capability=row["compute_capability"],
            architecture=row["architecture"],
            chips=tuple(row["chips"].split(";")),
            **{name: int(row[name]) for name in _INT_FIELDS},
            l1_shared_per_sm_bytes=int(l1) if l1 else None,
            limits_source_url=row["limits_source_url"],
            anatomy_source_url=row["anatomy_source_url"],
            notes=row["notes"],
        )
    return table


def list_sm_architectures() -> list[SmArchitecture]:
    """Every row of the per-SM table, oldest compute capability first.

    Examples
    --------
    >>> import gpulab as gl
    >>> [a.compute_capability for a in list_sm_architectures()]
    ['6.0', '7.0', '7.5', '8.0', '8.6', '8.9', '9.0']
    """
    return list(_table().values())


_CC = re.compile(r"^(?:sm_?)?(\d+)\.?(\d)$", re.IGNORECASE)


def sm_architecture(spec) -> SmArchitecture:
    """The per-SM limits and anatomy of a registry GPU or a compute capability.

    Parameters
    ----------
    spec : DeviceSpec, str
        A registry entry or name (``"T4"``, ``"A100 80GB"``), or a compute capability
        (``"8.0"``, ``"sm_80"``).

    Raises
    ------
    ValueError
        For a name the registry does not know, a device that is not an NVIDIA GPU, or an
        NVIDIA GPU whose chip is not in the table.

    Examples
    --------
    >>> import gpulab as gl
    >>> t4 = gl.sm_architecture("T4")
    >>> t4.compute_capability, t4.max_warps_per_sm, t4.max_blocks_per_sm
    ('7.5', 32, 16)
    >>> gl.sm_architecture("H100 SXM").max_shared_per_sm_bytes // 1024
    228
    >>> gl.sm_architecture("sm_80").registers_per_sm
    65536
    """
    table = _table()
    if isinstance(spec, str):
        match = _CC.match(spec.strip())
        if match:
            key = f"{match[1]}.{match[2]}"
            if key not in table:
                raise ValueError(
                    f"spec={spec!r}: compute capability {key} is not in the per-SM table; "
                    f"it has {', '.join(table)}"
                )
            return table[key]
    device = resolve_spec("spec", spec, kinds=("gpu",))
    for arch in table.values():
        if any(re.search(rf"\b{chip}\b", device.architecture) for chip in arch.chips):
            return arch
    raise ValueError(
        f"spec={spec!r}: {device.name} ({device.architecture}) is not an NVIDIA GPU of a "
        f"compute capability in the per-SM table ({', '.join(table)})"
    )
