"""Hardware pictures: where a CPU and a GPU spend their transistors, and the memory ladder."""

from __future__ import annotations

from gpulab._checks import choice
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.hardware.memory_ladder import memory_ladder
from gpulab.hardware.specs import resolve_spec
from gpulab.units import format_bytes

__all__ = ["draw_cpu_vs_gpu", "draw_memory_ladder", "draw_sm_anatomy"]


#: What a panel of the ladder says where its rung has no figure, and why (by attribute).
LADDER_GAPS = {
    "capacity_bytes": "a link: no capacity",
    "bandwidth_bytes_per_s": "none published by NVIDIA",
    "latency_cycles": "not measured in cycles",
}


def draw_memory_ladder(spec="H100 SXM"):
    """The memory ladder of :func:`memory_ladder` as three bar charts on log scales: the
    capacity, the bandwidth and the latency of each rung.

    A rung without a figure says why in words (:data:`LADDER_GAPS`): the network is a link,
    not storage; NVIDIA publishes no bandwidth for the registers or the L2 cache; latencies
    are a third party's pointer-chasing measurements in clock cycles, for the on-chip rungs
    and device memory only (registers are operands of the instruction, and PCIe and the
    network are timed in microseconds, not cycles).

    Returns
    -------
    fig : matplotlib Figure
    levels : list of MemoryLevel
        What was drawn.
    """
    levels = memory_ladder(spec)
    fig, axes = new_figure(1, 3, figsize=(12.0, 3.8), sharey=True)
    names = [lv.level for lv in levels]
    panels = (
        ("capacity_bytes", PALETTE["memory"], "capacity, whole GPU (bytes, log)", (1e6, 1e16)),
        ("bandwidth_bytes_per_s", PALETTE["gpu"], "bandwidth (bytes/s, log)", (1e6, 1e16)),
        ("latency_cycles", PALETTE["cpu"], "latency of one load (clock cycles, log)", (1, 1e5)),
    )
    for ax, (attr, color, label, (lo, hi)) in zip(axes, panels, strict=True):
        for i, lv in enumerate(levels):
            value = getattr(lv, attr)
            if value is None:
                ax.text(lo * 2, i, LADDER_GAPS[attr], va="center", fontsize=7, color="#555555")
                continue
            ax.barh(i, value, color=color, zorder=3)
            if attr == "capacity_bytes":
                shown = format_bytes(value)
            elif attr == "bandwidth_bytes_per_s":
                shown = f"{format_bytes(value)}/s"
            else:
                shown = f"{value:,.0f} cycles"
            ax.text(value * 1.3, i, shown, va="center", fontsize=7)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xlabel(label, fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(names)), names, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"The memory ladder of the {resolve_spec('spec', spec).name}", fontsize=10)
    fig.text(0.5, 0.01, "Sources: CUDA programming and Hopper tuning guides, the spec and "
             "interconnect registries; latencies: a published pointer-chasing measurement "
             "(markdewing/AI_kernels); see gpulab/data/memory_ladder.csv", ha="center",
             fontsize=7)  # fmt: skip
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig, levels


def draw_cpu_vs_gpu(style: str = "blocks"):
    """Where the transistors go, QUALITATIVELY: a CPU spends die area on control and cache
    for a few fast cores, a GPU on many simple arithmetic units.

    The picture follows the CUDA C++ Programming Guide's Figure 1 ("The GPU devotes more
    transistors to data processing",
    https://docs.nvidia.com/cuda/cuda-c-programming-guide/#the-benefits-of-using-gpus);
    the areas are not measured and no number is drawn.

    Parameters
    ----------
    style : {"blocks"}
        The only style so far.

    Returns
    -------
    fig : matplotlib Figure
    drawn : dict
        How many cores (CPU) and ALUs (GPU) the picture shows: symbols, not counts of a chip.
    """
    choice("style", style, ("blocks",))
    fig, axes = new_figure(1, 2, figsize=(8.0, 3.4))
    for ax, chip in zip(axes, ("cpu", "gpu"), strict=True):
        blank(ax)
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10.8)
        box(ax, 0, 0, 10, 10, "", color="#FFFFFF")
        if chip == "cpu":  # 4 big cores with their control logic, a large shared cache
            for k in range(4):
                x = 0.3 + (k % 2) * 4.9
                y = 5.3 + (k // 2) * 2.2
                box(ax, x, y, 1.8, 1.9, "control", color=PALETTE["control"], fontsize=7,
                    text_color="w")  # fmt: skip
                box(ax, x + 1.9, y, 2.6, 1.9, "ALU", color=PALETTE["cpu"], text_color="w")
            box(ax, 0.3, 0.3, 9.4, 4.8, "cache", color=PALETTE["memory"], text_color="w")
            ax.set_title("CPU: a few fast cores, much control and cache", fontsize=9)
        else:  # rows of many small ALUs, each row with a little control and cache
            for row in range(8):
                y = 0.3 + row * 1.2
                box(ax, 0.3, y, 0.6, 1.0, "", color=PALETTE["control"])
                box(ax, 0.95, y, 0.6, 1.0, "", color=PALETTE["memory"])
                for col in range(14):
                    box(ax, 1.65 + col * 0.58, y, 0.5, 1.0, "", color=PALETTE["gpu"],
                        linewidth=0.4)  # fmt: skip
            ax.set_title("GPU: many simple ALUs, little control per ALU", fontsize=9)
        ax.text(5, 10.3, "qualitative: areas not to scale", ha="center", fontsize=7,
                color="#555555")  # fmt: skip
    import matplotlib.patches as mpatches

    fig.legend(handles=[mpatches.Patch(color=PALETTE["control"], label="control"),
                        mpatches.Patch(color=PALETTE["memory"], label="cache"),
                        mpatches.Patch(color=PALETTE["cpu"], label="ALU (CPU)"),
                        mpatches.Patch(color=PALETTE["gpu"], label="ALU (GPU)")],
               loc="lower center", ncol=4, fontsize=8, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig, {"cpu_cores": 4, "gpu_alus": 8 * 14}


def _anatomy(spec) -> dict:
    from gpulab.hardware.sm import sm_architecture

    the_spec = resolve_spec("spec", spec, kinds=("gpu",))
    arch = sm_architecture(the_spec)
    parts = arch.warp_schedulers_per_sm
    return {
        "name": the_spec.name,
        "sm_count": the_spec.sm_count,
        "architecture": arch,
        "partitions": parts,
        "lanes_per_partition": arch.fp32_lanes_per_sm // parts,
        "tensor_cores_per_partition": arch.tensor_cores_per_sm // parts,
        "register_bytes_per_partition": arch.registers_per_sm * 4 // parts,
        "l1_shared_bytes": arch.l1_shared_per_sm_bytes,
    }


def _draw_sm(ax, a: dict) -> None:
    blank(ax)
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 10.6)
    ax.set_aspect("auto")
    box(ax, 0, 0, 10, 10, "", color="#FFFFFF")
    n = a["partitions"]
    width = 9.6 / n
    for k in range(n):
        x = 0.2 + k * width
        w = width - 0.2
        box(ax, x, 8.6, w, 1.0, "warp\nscheduler", color=PALETTE["control"], fontsize=6,
            text_color="w")  # fmt: skip
        box(ax, x, 7.4, w, 1.0, f"registers\n{format_bytes(a['register_bytes_per_partition'])}",
            color=PALETTE["memory"], fontsize=6, text_color="w")  # fmt: skip
        lanes = a["lanes_per_partition"]
        per_row = 8
        rows = -(-lanes // per_row)
        lane_h = 3.2 / max(rows, 1)
        for j in range(lanes):
            r, c = divmod(j, per_row)
            box(ax, x + c * w / per_row, 7.2 - (r + 1) * lane_h, w / per_row, lane_h, "",
                color=PALETTE["gpu"], linewidth=0.3)  # fmt: skip
        tcs = a["tensor_cores_per_partition"]
        for t in range(tcs):
            box(ax, x + t * w / max(tcs, 1), 2.6, w / max(tcs, 1), 1.3, "Tensor\nCore",
                color=PALETTE["tpu"], fontsize=6, text_color="w")  # fmt: skip
    l1 = a["l1_shared_bytes"]
    label = (f"L1 cache + shared memory: {format_bytes(l1)}" if l1
             else "L1 and shared memory (separate)")  # fmt: skip
    box(ax, 0.2, 0.3, 9.6, 1.9, label, color=PALETTE["cpu"], fontsize=8, text_color="w")
    arch = a["architecture"]
    ax.set_title(
        f"one SM of the {a['name']} ({arch.architecture}, {a['sm_count']} SMs)\n"
        f"{arch.fp32_lanes_per_sm} FP32 lanes, {arch.tensor_cores_per_sm} Tensor Cores, "
        f"{arch.max_warps_per_sm} resident warps",
        fontsize=8,
    )


def draw_sm_anatomy(spec="T4", other="H100 SXM"):
    """One streaming multiprocessor drawn from the per-SM table, beside another GPU's.

    Each SM is drawn as its partitions (one warp scheduler each) with their register file,
    FP32 lanes and Tensor Cores, over the combined L1 cache and shared memory: every count
    and size comes from :func:`gpulab.sm_architecture` (the CUDA guide and the architecture
    whitepapers) and the SM count from the spec registry.

    Parameters
    ----------
    spec : DeviceSpec or str
        An NVIDIA GPU of the registry.
    other : DeviceSpec or str or None
        A second GPU drawn beside it, or None for one SM only.

    Returns
    -------
    fig : matplotlib Figure
    drawn : list of dict
        Per GPU: ``partitions``, ``lanes_per_partition``, ``tensor_cores_per_partition``,
        ``register_bytes_per_partition``, ``l1_shared_bytes``, ``sm_count`` as drawn.
    """
    drawn = [_anatomy(spec)]
    if other is not None:
        drawn.append(_anatomy_named("other", other))
    fig, axes = new_figure(1, len(drawn), figsize=(4.6 * len(drawn), 4.2), squeeze=False)
    for ax, a in zip(axes[0], drawn, strict=True):
        _draw_sm(ax, a)
    import matplotlib.patches as mpatches

    fig.legend(handles=[mpatches.Patch(color=PALETTE["control"], label="warp scheduler"),
                        mpatches.Patch(color=PALETTE["memory"], label="register file"),
                        mpatches.Patch(color=PALETTE["gpu"], label="FP32 lane"),
                        mpatches.Patch(color=PALETTE["tpu"], label="Tensor Core"),
                        mpatches.Patch(color=PALETTE["cpu"], label="L1 / shared")],
               loc="lower center", ncol=5, fontsize=7, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig, drawn


def _anatomy_named(name: str, value) -> dict:
    """:func:`_anatomy` with errors naming ``name`` instead of ``spec``."""
    try:
        return _anatomy(value)
    except (TypeError, ValueError) as exc:  # the same class, naming the parameter
        raise type(exc)(str(exc).replace("spec=", f"{name}=", 1)) from None
