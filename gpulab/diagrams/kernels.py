"""A CUDA launch mapped onto blocks, warps and SMs; which tiles a matrix-multiply block loads;
which thread touched which element of a simulated kernel's arrays."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from gpulab._checks import positive_int, wrong_type
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.hardware.specs import resolve_spec
from gpulab.kernels.simulator import WARP_SIZE, thread_map
from gpulab.kernels.tiling import tile_loads

__all__ = ["draw_launch_mapping", "draw_tiling", "draw_touches"]


def draw_launch_mapping(n: int = 1000, block: int = 256, *, spec="T4"):
    """Grid → blocks → warps → SMs for a 1-D launch of ``n`` threads' worth of work.

    Blocks and threads come from :func:`gpulab.thread_map` (``ceil(n / block)`` blocks);
    each block is cut into warps of :data:`WARP_SIZE`; blocks are dealt to the GPU's SMs
    (``sm_count`` from the registry) round-robin, as an illustration: the hardware's block
    scheduler decides the real placement.

    Returns
    -------
    fig : matplotlib Figure
    mapping : dict
        ``n_blocks``, ``warps_per_block``, ``idle_threads`` (in the last block),
        ``sm_of_block`` (list), ``sm_count``.
    """
    n = positive_int("n", n)
    block = positive_int("block", block)
    the_spec = resolve_spec("spec", spec, kinds=("gpu",))
    if block > 1024 or n > 1 << 20:
        raise ValueError(f"block={block} must be at most 1024 and n={n} at most 2**20")
    if not the_spec.sm_count:
        raise ValueError(f"spec={spec!r}: the registry has no SM count for {the_spec.name}")
    block_of, _ = thread_map(n, block)
    n_blocks = int(block_of.max()) + 1
    warps = -(-block // WARP_SIZE)
    sm_of_block = [b % the_spec.sm_count for b in range(n_blocks)]
    idle = n_blocks * block - n
    shown = min(n_blocks, 8)
    fig, ax = new_figure(figsize=(8.0, 3.6))
    blank(ax)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    ax.text(0.05, 3.85, f"grid: {n_blocks} blocks × {block} threads for n = {n:,} elements"
            f" ({idle} threads of the last block idle)", fontsize=9)  # fmt: skip
    width = 9.6 / shown
    for b in range(shown):
        x = 0.2 + b * width
        last = b == n_blocks - 1
        box(ax, x, 2.6, width * 0.9, 0.9, f"block {b}\n{block} threads", color=PALETTE["cpu"],
            text_color="w")  # fmt: skip
        for w in range(min(warps, 8)):
            start = b * block + w * WARP_SIZE
            active = max(0, min(WARP_SIZE, n - start))
            color = (
                PALETTE["gpu"]
                if active == WARP_SIZE
                else ("#FFFFFF" if not active else PALETTE["memory"])
            )
            ww = width * 0.9 / min(warps, 8)
            box(ax, x + w * ww, 1.7, ww, 0.6, "", color=color, linewidth=0.5)
        box(ax, x, 0.4, width * 0.9, 0.7, f"SM {sm_of_block[b]}", color="#FFFFFF")
        ax.annotate("", (x + width * 0.45, 1.1), (x + width * 0.45, 1.7),
                    arrowprops=dict(arrowstyle="->", lw=0.7))  # fmt: skip
        if last and idle:
            ax.text(x + width * 0.45, 1.45, "partly idle", ha="center", fontsize=6)
    if n_blocks > shown:
        ax.text(9.9, 3.05, f"… {n_blocks - shown} more", ha="right", fontsize=7)
    ax.text(0.2, 2.4, f"warps of {WARP_SIZE} threads ({warps} per block"
            + (", first 8 drawn" if warps > 8 else "") + "): green full, orange partly used,"
            " white unused", fontsize=7)  # fmt: skip
    ax.text(0.2, 0.1, f"{the_spec.name}: {the_spec.sm_count} SMs (registry); blocks dealt "
            "round-robin here, the hardware scheduler decides in practice", fontsize=7)  # fmt: skip
    fig.tight_layout()
    mapping = {"n_blocks": n_blocks, "warps_per_block": warps, "idle_threads": idle,
               "sm_of_block": sm_of_block, "sm_count": the_spec.sm_count}  # fmt: skip
    return fig, mapping


def draw_tiling(n: int = 8, tile: int = 2, *, block: tuple = (1, 2)):
    """The tiles of A and B one block loads to compute its tile of C, with the reuse counts.

    Parameters
    ----------
    n : int
        Matrix size (n × n), at most 32 for a readable drawing.
    tile : int
        Tile size. Where it does not divide n the last row and column of tiles are cut
        off at the edge (a kernel fills them with zeros).
    block : (int, int)
        The block ``(row, column)`` of C to highlight.

    Returns
    -------
    fig : matplotlib Figure
    counts : dict
        :func:`tile_loads` for these sizes, plus ``block``.
    """
    counts = tile_loads(n, tile)
    if n > 32:
        raise ValueError(f"n={n!r} must be at most 32 for a readable drawing")
    t = -(-n // tile)  # tiles per row and column, the last one cut off at the edge
    if not isinstance(block, (tuple, list)) or any(
        isinstance(v, bool) or not isinstance(v, Real) for v in block
    ):
        raise wrong_type("block", block, f"(row, column) with each in 0..{t - 1}")
    if len(block) != 2 or any(not isinstance(v, Integral) or not 0 <= v < t for v in block):
        raise ValueError(
            f"block={block!r} must be (row, column) with each in 0..{t - 1}: n={n!r} "
            f"makes {t} row(s) of tiles of tile={tile!r}"
        )
    bi, bj = block
    fig, axes = new_figure(1, 3, figsize=(9.0, 3.4))
    for ax, name in zip(axes, ("A", "B", "C"), strict=True):
        blank(ax)
        ax.set_xlim(-0.5, n + 0.5)
        ax.set_ylim(n + 0.5, -1.8)
        ax.set_aspect("equal")
        for r in range(t):
            for c in range(t):
                if name == "A":
                    on = r == bi
                elif name == "B":
                    on = c == bj
                else:
                    on = (r, c) == (bi, bj)
                color = PALETTE["gpu"] if on else "#FFFFFF"
                label = ""
                if on and name != "C":
                    label = f"k={c if name == 'A' else r}"
                width, height = min(tile, n - c * tile), min(tile, n - r * tile)
                box(ax, c * tile, r * tile, width, height, label, color=color, fontsize=7,
                    text_color="w" if on else None)  # fmt: skip
        ax.text(n / 2, -0.9, name, ha="center", fontsize=11)
    axes[0].text(n / 2, n + 0.4, f"row of tiles {bi}: loaded once per k", ha="center",
                 va="top", fontsize=7)  # fmt: skip
    axes[1].text(n / 2, n + 0.4, f"column of tiles {bj}: loaded once per k", ha="center",
                 va="top", fontsize=7)  # fmt: skip
    axes[2].text(n / 2, n + 0.4, f"block ({bi}, {bj}) computes this tile", ha="center",
                 va="top", fontsize=7)  # fmt: skip
    fig.suptitle(
        f"{n}×{n} matmul, {tile}×{tile} tiles: each element of A and B is read from global\n"
        f"memory {int(counts['a_loads'].max())} times (naive: {n}) and used {tile} times "
        "from shared memory per read",
        fontsize=9,
    )
    fig.tight_layout()
    return fig, {**counts, "block": (bi, bj)}


def _threads_text(threads: list[int]) -> str:
    """``7``, ``2,3``, ``0–7`` or ``5 thr``: the threads of one cell, short."""
    if len(threads) <= 2:
        return ",".join(str(t) for t in threads)
    if threads == list(range(threads[0], threads[-1] + 1)):
        return f"{threads[0]}–{threads[-1]}"
    return f"{len(threads)} thr"


def draw_touches(report, *, title: str = ""):
    """Which thread touched which element, from the simulator's record of a graded kernel.

    One row of cells per array the kernel touched on the grader's count shape (its
    arguments first, then its shared arrays), one cell per element: orange where a thread
    wrote it, green where threads only read it, white where no thread touched it. A cell
    names the threads, numbered across the grid (``blockIdx.x * blockDim.x +
    threadIdx.x`` for a 1-D launch); a shared array is drawn for block 0 only (each block
    has its own), with that block's thread numbers.

    Parameters
    ----------
    report : GradeReport
        What :func:`gpulab.kernels.gym.grade_kernel` returned for a kernel that ran to the
        end on every shape (its ``counts`` hold the record).
    title : str
        A title ('' gives the task, the kernel and the shape).

    Returns
    -------
    fig : matplotlib Figure
    drawn : dict
        For each array, ``{"read": {element: [threads]}, "written": {element: [threads]}}``.

    Raises
    ------
    TypeError
        ``report`` is not a grade report, or ``title`` not a str.
    ValueError
        The report has no record: the kernel was not graded to the end.
    """
    from gpulab.kernels.gym import GradeReport

    if not isinstance(report, GradeReport):
        raise wrong_type("report", report, "a GradeReport from gym.grade_kernel")
    if not isinstance(title, str):
        raise wrong_type("title", title, "a str ('' for the default title)")
    if report.counts is None or not report.counts.touches:
        raise ValueError(
            f"report: {report.kernel or 'no kernel'} on task {report.task!r} has no record of "
            "its accesses (it did not run to the end on every shape): fix what it says first"
        )
    per_block = max(1, int(np.prod(report.block or (1,))))
    drawn = {}
    spaces = {name: row["space"] for (name, _), row in report.counts.by_array.items()}
    for name, rows in report.counts.touches.items():
        cells = {"read": {}, "written": {}}
        shared = spaces.get(name) == "shared"
        for block, thread, element, write in rows.tolist():
            if shared and block:
                continue
            who = thread if shared else block * per_block + thread
            kind = "written" if write else "read"
            cells[kind].setdefault(int(element), set()).add(int(who))
        label = f"{name} (block 0)" if shared else name
        drawn[label] = {k: {e: sorted(t) for e, t in sorted(v.items())} for k, v in cells.items()}
    width = max(1 + max([*d["read"], *d["written"]]) for d in drawn.values())
    fig, ax = new_figure(figsize=(min(9.0, 1.6 + 0.42 * width), 0.3 + 0.55 * len(drawn)))
    blank(ax)
    ax.set_xlim(-1.6, width + 0.1)
    ax.set_ylim(-0.2, len(drawn) * 1.1 + 0.1)
    for row, (name, d) in enumerate(reversed(list(drawn.items()))):
        y = row * 1.1
        ax.text(-0.1, y + 0.45, name, ha="right", va="center", fontsize=8)
        n = 1 + max([*d["read"], *d["written"]])
        for e in range(n):
            written, read = d["written"].get(e, []), d["read"].get(e, [])
            color = PALETTE["memory"] if written else PALETTE["gpu"] if read else "#FFFFFF"
            box(ax, e, y, 0.95, 0.9, _threads_text(sorted(set(written) | set(read))),
                color=color, text_color="w" if (written or read) else None, fontsize=6)  # fmt: skip
    shape = report.shapes[-1].shape if report.shapes else ""
    ax.set_title(title or f"{report.kernel} on {report.task!r}, {shape}: which thread touched "
                 "which element (orange: written, green: read only)", fontsize=8)  # fmt: skip
    return fig, drawn
