"""Occupancy and waves: how many warps one SM keeps resident, and how a grid fills the GPU.

An SM holds as many blocks of a kernel as its scarcest resource allows: warp slots, block
slots, registers or shared memory (per-SM limits from :func:`gpulab.sm_architecture`).
:func:`occupancy` finds that number and names the limiting resource with the rules of the
CUDA Toolkit's own calculator (``cuda_occupancy.h``, ``cudaOccMaxActiveBlocksPerMultiprocessor``):

* registers are allocated per warp, in units of ``register_allocation_unit`` (256), from
  the register files of the SM's partitions (one per warp scheduler, four from Volta on,
  16,384 registers each): a warp's registers come from one partition, so whole warps fit
  per partition, not per SM;
* a block's shared memory, plus what the runtime reserves per block (1 KB from 8.0 on),
  is rounded up to ``shared_allocation_unit_bytes`` (256 bytes, 128 from 8.0 on);
* the SM's shared memory is taken at its largest carve-out, and the kernel as having opted
  in to the largest block (what the calculator assumes by default).

``tests/test_kernels_occupancy_reference.py`` checks the answers against the header itself on a
table of configurations across compute capabilities 7.0 to 9.0. Not modelled: on 6.0
(GP100) CUDA also refuses a block that would not fit the four smaller register partitions
of 6.1, and smaller carve-outs chosen with ``cudaFuncAttributePreferredSharedMemoryCarveout``.

:func:`matmul_waves` predicts the time of an ``n × n × n`` matrix multiply cut into output
tiles, one tile per SM at a time: the grid runs in *waves* of ``sm_count`` tiles, and the
last wave may be nearly empty. Time steps up with ``n`` instead of growing smoothly: wave
quantization. It is a prediction from datasheet peaks, labelled so, not a measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab._checks import choice, non_negative_int, positive_int, positive_number, text, wrong_type
from gpulab.hardware.specs import resolve_spec

__all__ = ["Occupancy", "WavePrediction", "matmul_waves", "occupancy"]

_RESOURCES = ("warps", "blocks", "registers", "shared memory")


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps of one kernel configuration on one SM.

    Attributes
    ----------
    device, compute_capability : str
        The registry device and its compute capability.
    threads_per_block, registers_per_thread, shared_per_block_bytes : int
        The kernel's configuration.
    blocks_per_sm, warps_per_sm, max_warps_per_sm : int
        Resident blocks and warps, and the most warps the SM can hold.
    limiter : str
        The resource that allows the fewest blocks: ``"warps"``, ``"blocks"``,
        ``"registers"`` or ``"shared memory"`` (the first of them on a tie).
    blocks_by_resource : dict
        Blocks each resource alone would allow (None where the kernel does not use it).
    """

    device: str
    compute_capability: str
    threads_per_block: int
    registers_per_thread: int
    shared_per_block_bytes: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str
    blocks_by_resource: dict

    def __post_init__(self) -> None:
        text("device", self.device)
        text("compute_capability", self.compute_capability)
        choice("limiter", self.limiter, _RESOURCES)
        positive_int("threads_per_block", self.threads_per_block)
        for name in ("registers_per_thread", "shared_per_block_bytes", "blocks_per_sm",
                     "warps_per_sm"):  # fmt: skip
            non_negative_int(name, getattr(self, name))
        positive_int("max_warps_per_sm", self.max_warps_per_sm)
        if not isinstance(self.blocks_by_resource, dict):
            raise wrong_type("blocks_by_resource", self.blocks_by_resource, "a dict")

    @property
    def fraction(self) -> float:
        """Resident warps over the SM's maximum: the *occupancy*."""
        return self.warps_per_sm / self.max_warps_per_sm

    def summary(self) -> str:
        """One paragraph for a reader."""
        parts = ", ".join(
            f"{name} {'-' if n is None else n}" for name, n in self.blocks_by_resource.items()
        )
        return (
            f"{self.device} (compute capability {self.compute_capability}): "
            f"{self.threads_per_block} threads/block, {self.registers_per_thread} "
            f"registers/thread, {self.shared_per_block_bytes} B shared/block\n"
            f"  blocks allowed by each resource: {parts}\n"
            f"  resident: {self.blocks_per_sm} blocks = {self.warps_per_sm} of "
            f"{self.max_warps_per_sm} warps per SM (occupancy {self.fraction:.0%}), "
            f"limited by {self.limiter}"
        )


def occupancy(
    spec,
    threads_per_block: int = 256,
    registers_per_thread: int = 32,
    shared_per_block_bytes: int = 0,
) -> Occupancy:
    """Resident warps per SM for a kernel configuration, and the resource that limits them.

    Parameters
    ----------
    spec : DeviceSpec or str
        A registry GPU (``"T4"``, ``"A100 80GB"``) or a compute capability (``"8.0"``).
    threads_per_block : int
        1 to 1024.
    registers_per_thread : int
        0 to 255 (what ``nvcc --resource-usage`` or ``ptxas -v`` reports).
    shared_per_block_bytes : int
        Static plus dynamic shared memory per block, up to the per-block maximum.

    Examples
    --------
    >>> import gpulab as gl
    >>> occ = gl.occupancy("A100 80GB", 256, registers_per_thread=64)
    >>> occ.blocks_per_sm, occ.warps_per_sm, occ.limiter
    (4, 32, 'registers')
    >>> gl.occupancy("T4", 256, 32).fraction
    1.0
    """
    from gpulab.hardware.sm import sm_architecture

    arch = sm_architecture(spec)
    device = spec.name if hasattr(spec, "name") else _device_name(spec)
    threads = positive_int("threads_per_block", threads_per_block)
    if threads > arch.max_threads_per_block:
        raise ValueError(
            f"threads_per_block={threads_per_block!r} must be at most {arch.max_threads_per_block}"
        )
    regs = non_negative_int("registers_per_thread", registers_per_thread)
    if regs > arch.max_registers_per_thread:
        raise ValueError(
            f"registers_per_thread={registers_per_thread!r} must be at most "
            f"{arch.max_registers_per_thread}"
        )
    shared = non_negative_int("shared_per_block_bytes", shared_per_block_bytes)
    if shared > arch.max_shared_per_block_bytes:
        raise ValueError(
            f"shared_per_block_bytes={shared_per_block_bytes!r} must be at most "
            f"{arch.max_shared_per_block_bytes} on compute capability {arch.compute_capability}"
        )

    warps_per_block = math.ceil(threads / arch.warp_size)
    by = {
        "warps": arch.max_warps_per_sm // warps_per_block,
        "blocks": arch.max_blocks_per_sm,
        "registers": None,
        "shared memory": None,
    }
    if regs:
        # A warp's registers, rounded up to the allocation unit, come from one partition's
        # register file: whole warps per partition, then whole blocks per SM. (CUDA's check
        # against the registers one block may hold, 64 K as many as per SM, then holds too.)
        unit = arch.register_allocation_unit
        per_warp = math.ceil(regs * arch.warp_size / unit) * unit
        partitions = arch.warp_schedulers_per_sm
        warps_per_partition = (arch.registers_per_sm // partitions) // per_warp
        by["registers"] = warps_per_partition * partitions // warps_per_block
    if shared:
        unit = arch.shared_allocation_unit_bytes
        per_block = math.ceil((shared + arch.reserved_shared_per_block_bytes) / unit) * unit
        by["shared memory"] = arch.max_shared_per_sm_bytes // per_block
    allowed = {name: n for name, n in by.items() if n is not None}
    blocks = min(allowed.values())
    limiter = next(name for name in _RESOURCES if allowed.get(name) == blocks)
    return Occupancy(
        device=device,
        compute_capability=arch.compute_capability,
        threads_per_block=threads,
        registers_per_thread=regs,
        shared_per_block_bytes=shared,
        blocks_per_sm=blocks,
        warps_per_sm=blocks * warps_per_block,
        max_warps_per_sm=arch.max_warps_per_sm,
        limiter=limiter,
        blocks_by_resource=by,
    )


def _device_name(spec: str) -> str:
    try:
        return resolve_spec("spec", spec).name
    except ValueError:
        return f"compute capability {spec}"


@dataclass(frozen=True)
class WavePrediction:
    """Predicted time of an ``n × n × n`` matmul run in waves of output tiles.

    Attributes
    ----------
    device, precision : str
        The registry device and the peak used.
    n, tile, tiles, sm_count, waves : int
        Matrix size, output tile edge, tiles in the grid, SMs, and waves
        (``ceil(tiles / sm_count)``).
    time_s : float
        ``waves`` × the time one SM takes for one tile at its share of the peak.
    ideal_time_s : float
        ``2 n³ / peak``: the same work spread perfectly over every SM.
    label : str
        Says that this is a prediction.
    """

    device: str
    precision: str
    n: int
    tile: int
    tiles: int
    sm_count: int
    waves: int
    time_s: float
    ideal_time_s: float
    label: str = "predicted from datasheet peaks (not a measurement)"

    def __post_init__(self) -> None:
        for name in ("device", "precision", "label"):
            text(name, getattr(self, name))
        for name in ("n", "tile", "tiles", "sm_count", "waves"):
            positive_int(name, getattr(self, name))
        positive_number("time_s", self.time_s)
        positive_number("ideal_time_s", self.ideal_time_s)
        if self.waves != -(-self.tiles // self.sm_count):
            raise ValueError(
                f"waves={self.waves!r} must be ceil(tiles / sm_count) = "
                f"ceil({self.tiles!r} / {self.sm_count!r})"
            )
        if self.ideal_time_s > self.time_s * (1 + 1e-9):  # rounding aside, waves only add
            raise ValueError(
                f"ideal_time_s={self.ideal_time_s!r} must be at most time_s={self.time_s!r}: "
                "waves never beat the work spread perfectly"
            )

    @property
    def efficiency(self) -> float:
        """``ideal_time_s / time_s``: the fraction of the peak the waves leave usable."""
        return self.ideal_time_s / self.time_s


def matmul_waves(spec, n: int, *, tile: int = 128, precision: str = "fp16") -> WavePrediction:
    """Predict an ``n × n × n`` matmul's time with whole waves of ``tile × tile`` output tiles.

    Each SM computes one output tile at a time at ``peak / sm_count`` FLOP/s, so a tile
    takes ``2 · tile² · n / (peak / sm_count)``; partial tiles at the edge cost a whole
    tile (tile quantization) and a partial last wave costs a whole wave (wave
    quantization). Memory traffic and launch overhead are left out: it is the
    compute-bound shape of the curve, not a full model.

    Examples
    --------
    >>> import gpulab as gl
    >>> p = gl.matmul_waves("A100 80GB SXM4", 1024 * 3)  # 24 x 24 = 576 tiles on 108 SMs
    >>> p.tiles, p.waves, round(p.efficiency, 3)
    (576, 6, 0.889)
    """
    from gpulab.hardware.precision import PEAK_PRECISIONS

    device = resolve_spec("spec", spec, kinds=("gpu",))
    n = positive_int("n", n)
    tile = positive_int("tile", tile)
    have = [p for p in PEAK_PRECISIONS if p in device.peak_flops]
    if not isinstance(precision, str):
        raise wrong_type("precision", precision, f"one of {have} for {device.name}")
    if precision not in have:
        raise ValueError(f"precision={precision!r} must be one of {have} for {device.name}")
    if not device.sm_count:
        raise ValueError(f"spec={spec!r}: the registry gives no SM count for {device.name}")
    peak = device.peak_flops[precision]
    tiles = (-(-n // tile)) ** 2  # integer ceilings: exact for any n
    waves = -(-tiles // device.sm_count)
    per_tile_s = 2 * tile * tile * n / (peak / device.sm_count)
    return WavePrediction(
        device=device.name,
        precision=precision,
        n=n,
        tile=tile,
        tiles=tiles,
        sm_count=device.sm_count,
        waves=waves,
        time_s=waves * per_tile_s,
        ideal_time_s=2 * n**3 / peak,
    )
