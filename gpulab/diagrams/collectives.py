"""The ring all-reduce drawn step by step from its simulation; ring against tree.

The simulation moves real numbers: each rank starts with its own vector, cut into one chunk
per rank. In ``p - 1`` reduce-scatter steps each rank sends one chunk to its right-hand
neighbour, which adds it to its own copy; then each rank holds the full sum of one chunk. In
``p - 1`` all-gather steps the summed chunks travel round the ring, overwriting. The drawing
is made from the recorded states, and the final state is the all-reduced vector.
"""

from __future__ import annotations

import numpy as np

from gpulab._checks import non_negative_int, positive_int
from gpulab.costmodels.comms import allreduce_time, simulate_ring_allreduce
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.hardware.interconnects import resolve_link

__all__ = ["draw_ring_allreduce", "draw_tree_vs_ring"]


def draw_ring_allreduce(n_gpus: int = 4, *, seed: int = 0):
    """Draw the ring all-reduce of ``n_gpus`` random vectors, one panel per step.

    Each panel shows every rank's ``n_gpus`` chunks, shaded by how many ranks' inputs the
    chunk sums (white: its own only; darkest: all of them), with the chunks sent in that step
    outlined and their destination named.

    Parameters
    ----------
    n_gpus : int
        Ranks in the ring, 2 to 8.
    seed : int
        Seed of the random inputs (integers 0-9, so the sums are easy to check).

    Returns
    -------
    fig : matplotlib Figure
    steps : list of RingStep
        The simulation the figure was drawn from.

    See also
    --------
    simulate_ring_allreduce : the simulation. The chapter *Scaling out* shows this figure.
    """
    p = positive_int("n_gpus", n_gpus)
    if not 2 <= p <= 8:
        raise ValueError(f"n_gpus={n_gpus!r} must be between 2 and 8 (one panel row per rank)")
    rng = np.random.default_rng(non_negative_int("seed", seed))
    steps = simulate_ring_allreduce(rng.integers(0, 10, size=(p, p)).astype(float))
    fig, axes = new_figure(1, len(steps), figsize=(1.55 * len(steps), 0.55 * p + 1.4))
    cmap = _shades(p)
    for k, (ax, step) in enumerate(zip(axes, steps, strict=True)):
        blank(ax)
        ax.set_xlim(-0.9, p)
        ax.set_ylim(p + 0.1, -0.9)
        sent = {(src, c): dst for src, dst, c in step.sends}
        for r in range(p):
            ax.text(-0.15, r + 0.5, f"r{r}", ha="right", va="center", fontsize=7)
            for c in range(p):
                count = step.contributions[r, c]
                dst = sent.get((r, c))
                box(ax, c, r, 1, 1, f"{step.buffers[r, c]:g}", color=cmap[count],
                    text_color="white" if count > p / 2 else PALETTE["text"], fontsize=7,
                    edgecolor=PALETTE["tpu"] if dst is not None else "#333333",
                    linewidth=2.2 if dst is not None else 0.6)  # fmt: skip
        title = "start" if k == 0 else f"{step.phase}\nstep {(k - 1) % (p - 1) + 1}"
        ax.set_title(title, fontsize=8)
        ax.text(p / 2, -0.55, "chunk 0 … " + str(p - 1), ha="center", fontsize=6)
    fig.text(
        0.5, 0.01,
        "Each cell: one chunk's value on rank r (random inputs). Shade: how many ranks' inputs "
        "it sums. Red outline: sent to rank r+1 in this step.",
        ha="center", fontsize=7,
    )  # fmt: skip
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig, steps


def _shades(p: int) -> list:
    """Colour for a chunk summing 1..p ranks' inputs (index = count): white to dark green."""
    import matplotlib.colors as mcolors

    base = np.array(mcolors.to_rgb(PALETTE["gpu"]))
    dark = base * 0.55
    return ["#FFFFFF"] + [tuple(1 - (i - 1) / (p - 1) * (1 - dark)) for i in range(1, p + 1)]


def draw_tree_vs_ring(link: str = "InfiniBand HDR", *, n_gpus: int = 64):
    """All-reduce time by the α–β model, ring against tree, on one interconnect.

    Left: time against message size for ``n_gpus`` ranks. Right: time against the number of
    ranks for a small (latency-bound) and a large (bandwidth-bound) message. The link's
    bandwidth and latency come from the interconnect registry.

    Parameters
    ----------
    link : str or Interconnect
        A registry entry that publishes a latency (``latency_s``), e.g. ``"InfiniBand HDR"``.
    n_gpus : int
        Ranks for the left panel, 2 or more.

    Returns
    -------
    fig : matplotlib Figure
    curves : dict
        ``{"sizes_bytes", "ring_s", "tree_s", "n_gpus", "ring_by_gpus_s", ...}`` as drawn.

    See also
    --------
    gpulab.allreduce_time : the model. The chapter *Scaling out* shows this figure.
    """
    the_link = resolve_link("link", link)
    if the_link.latency_s is None:
        raise ValueError(
            f"link={link!r}: the registry gives no latency for {the_link.name}; use a link "
            "that has one (gl.list_interconnects() shows latency_s)"
        )
    p = positive_int("n_gpus", n_gpus)
    if p < 2:
        raise ValueError(f"n_gpus={n_gpus!r} must be 2 or more: one rank has nothing to reduce")
    link_kw = dict(alpha_s=the_link.latency_s, bandwidth_bytes_per_s=the_link.bandwidth)
    sizes = np.logspace(3, 10, 57)
    ring = [allreduce_time(n, p, algorithm="ring", **link_kw) for n in sizes]
    tree = [allreduce_time(n, p, algorithm="tree", **link_kw) for n in sizes]
    gpus = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    small, large = 1e4, 1e9
    by_gpus = {
        (algo, n): [allreduce_time(n, g, algorithm=algo, **link_kw) for g in gpus]
        for algo in ("ring", "tree")
        for n in (small, large)
    }
    fig, (left, right) = new_figure(1, 2, figsize=(9.0, 3.8))
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    left.loglog(sizes, ring, color=PALETTE["gpu"], label="ring")
    left.loglog(sizes, tree, color=PALETTE["cpu"], ls="--", label="tree")
    left.set(xlabel="message size (bytes)", ylabel="all-reduce time (s)",
             title=f"{p} ranks on {the_link.name}")  # fmt: skip
    left.legend()
    for (algo, n), times in by_gpus.items():
        right.loglog(gpus, times, color=PALETTE["gpu"] if algo == "ring" else PALETTE["cpu"],
                     ls="-" if algo == "ring" else "--", marker="o" if n == large else "s",
                     ms=3, label=f"{algo}, {n:.0e} B")  # fmt: skip
    right.set(xlabel="ranks (GPUs)", ylabel="all-reduce time (s)", title="time against ranks")
    right.legend(fontsize=7)
    fig.text(
        0.5, 0.01,
        f"α–β model, prediction: α = {the_link.latency_s * 1e6:g} µs, "
        f"β = {the_link.bandwidth / 1e9:g} GB/s per direction (interconnect registry)",
        ha="center", fontsize=7,
    )  # fmt: skip
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    curves = {
        "sizes_bytes": sizes, "ring_s": np.array(ring), "tree_s": np.array(tree),
        "n_gpus": gpus, "by_gpus_s": by_gpus, "link": the_link,
    }  # fmt: skip
    return fig, curves
