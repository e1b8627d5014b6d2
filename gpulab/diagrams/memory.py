"""One GPU's training memory as one stacked bar: parameters, gradients, optimizer state,
activations, beside the memory of a GPU from the spec registry."""

from __future__ import annotations

from gpulab._checks import non_negative_number, positive_int
from gpulab.costmodels.memory import estimate_training_memory
from gpulab.diagrams._draw import PALETTE, new_figure
from gpulab.units import format_bytes

__all__ = ["draw_training_memory"]

#: The parts of :class:`gpulab.costmodels.memory.MemoryEstimate` the bar stacks, in order.
PARTS = (("params_bytes", "parameters"), ("grads_bytes", "gradients"),
         ("optimizer_bytes", "optimizer state"), ("activations_bytes", "activations"))  # fmt: skip
_COLORS = (PALETTE["cpu"], PALETTE["gpu"], PALETTE["memory"], PALETTE["control"])


def draw_training_memory(
    n_params: int,
    *,
    precision: str = "amp_bf16",
    optimizer: str = "adam",
    activations_bytes: float = 0,
    gpu: str | None = "H100 SXM",
):
    """The memory of one training step on one GPU, stacked part by part in one bar.

    The bar is :func:`gpulab.estimate_training_memory`: parameters, gradients and optimizer
    state from the bytes per parameter of ``precision`` and ``optimizer``, then the
    activations saved for the backward pass. A dashed line marks the memory of ``gpu`` from
    the spec registry, so the bar says at a glance whether the step fits.

    Parameters
    ----------
    n_params : int
        Trainable parameters.
    precision, optimizer : str
        As in :func:`gpulab.estimate_training_memory`.
    activations_bytes : float, default 0
        Activations saved for the backward pass, e.g. from
        :func:`gpulab.layer_activation_bytes` times the layers.
    gpu : str or None, default "H100 SXM"
        A GPU of the spec registry whose memory is marked; None for no mark.

    Returns
    -------
    fig : matplotlib Figure
    estimate : MemoryEstimate
        What the bar draws, part by part.

    Examples
    --------
    >>> import gpulab as gl
    >>> fig, est = gl.diagrams.draw_training_memory(7_000_000_000)
    >>> est.total_bytes / 1e9          # 16 bytes per parameter, no activations
    112.0
    """
    positive_int("n_params", n_params)
    non_negative_number("activations_bytes", activations_bytes)
    estimate = estimate_training_memory(n_params, precision=precision, optimizer=optimizer,
                                        activations_bytes=round(activations_bytes))  # fmt: skip
    capacity = None
    if gpu is not None:
        from gpulab.hardware.specs import resolve_spec

        spec = resolve_spec("gpu", gpu)
        if spec.memory_bytes is None:
            raise ValueError(f"gpu={gpu!r}: the spec registry gives no memory size for it")
        capacity = (spec.name, spec.memory_bytes)
    fig, ax = new_figure(figsize=(7.0, 2.3))
    left = 0.0
    for (attr, name), color in zip(PARTS, _COLORS, strict=True):
        value = getattr(estimate, attr) / 1e9
        ax.barh(0, value, left=left, height=0.55, color=color, edgecolor="white", label=name)
        if value > 0.06 * estimate.total_bytes / 1e9:
            ax.text(left + value / 2, 0, f"{name}\n{format_bytes(getattr(estimate, attr))}",
                    ha="center", va="center", fontsize=8, color="white")  # fmt: skip
        left += value
    ax.text(left, 0, f"  {format_bytes(estimate.total_bytes)}", va="center", fontsize=9)
    right = left
    if capacity is not None:
        name, size = capacity
        # Above and below the bar only, so it never crosses a part's label.
        for low, high in ((-0.6, -0.3), (0.3, 0.42)):
            ax.plot([size / 1e9] * 2, [low, high], color=PALETTE["text"], linestyle="--",
                    linewidth=1.2)  # fmt: skip
        ax.text(size / 1e9, 0.42, f" {name}: {format_bytes(size)}", fontsize=8, va="bottom")
        right = max(right, size / 1e9)
    ax.set_xlim(0, right * 1.22)
    ax.set_ylim(-0.6, 0.75)
    ax.set_yticks([])
    ax.set_xlabel("memory of one training step on one GPU (GB)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig, estimate
