"""Kernel fusion: a chain of elementwise operations as eager kernels, and as one fused kernel."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from gpulab._checks import positive_number, text, wrong_type
from gpulab.costmodels.flops import fusion_traffic
from gpulab.costmodels.roofline import predict_time
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.hardware.specs import resolve_spec
from gpulab.units import format_bytes, format_duration, format_rate

__all__ = ["draw_fusion"]


def _measured(measured) -> dict | None:
    if measured is None:
        return None
    if not isinstance(measured, dict):
        raise wrong_type("measured", measured, "None or a dict with eager_s and fused_s (seconds)")
    if not {"eager_s", "fused_s"} <= set(measured):
        raise ValueError(
            f"measured={measured!r} must be None or a dict with eager_s and fused_s (seconds)"
        )
    return {k: positive_number(f"measured[{k!r}]", measured[k]) for k in ("eager_s", "fused_s")}


def _one_tensor_function(fn) -> None:
    """A TypeError unless ``fn`` is a callable that can be called with one argument."""
    wanted = "a function of one tensor, e.g. lambda x: x * 2"
    if not callable(fn):
        raise wrong_type("fn", fn, wanted)
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        raise TypeError(f"fn={fn!r} must be {wanted}; it cannot take one argument") from None
    except ValueError:  # no signature to read (some built-ins): the tracer decides
        pass


def draw_fusion(
    fn: Callable,
    n_elem: int = 2**28,
    *,
    spec="H100 SXM",
    precision: str = "fp32",
    measured: dict | None = None,
    title: str = "",
):
    """Eager kernels each reading and writing device memory, beside one fused kernel.

    Bytes come from :func:`fusion_traffic` (that is, :func:`gpulab.eager_cost`); the time
    under each kernel is the roofline prediction (:func:`gpulab.predict_time`) for ``spec``:
    elementwise kernels do no matrix multiply, so it is the bytes over the memory bandwidth.

    Parameters
    ----------
    fn, n_elem, precision
        As for :func:`fusion_traffic`.
    spec : DeviceSpec or str
        The GPU the times are predicted for (registry entry or name).
    measured : dict or None
        ``{"eager_s": ..., "fused_s": ...}`` measured in a lab (on its own machine and size),
        printed under the prediction; ``None`` says no measurement is at hand.
    title : str
        What ``fn`` is, for the heading (e.g. ``"GELU written out by hand"``).

    Returns
    -------
    fig : matplotlib Figure
    traffic : dict
        :func:`fusion_traffic`, plus ``kernel_s`` (predicted time per eager kernel),
        ``eager_s``, ``fused_s`` (their predicted totals) and ``measured``.

    Examples
    --------
    >>> import torch
    >>> fig, t = draw_fusion(lambda x: torch.relu(x * 2.0) + 1.0, 2**20, spec="T4")
    >>> len(t["kernels"]), round(t["eager_s"] / t["fused_s"], 6)
    (3, 3.0)
    """
    _one_tensor_function(fn)
    text("title", title)
    the_spec = resolve_spec("spec", spec, kinds=("gpu",))
    if not the_spec.memory_bandwidth:
        raise ValueError(f"spec={spec!r}: the registry has no memory bandwidth for {the_spec.name}")
    measured = _measured(measured)
    traffic = fusion_traffic(fn, n_elem, precision=precision)
    kernels = traffic["kernels"]

    def predict(nbytes: float) -> float:
        return predict_time(the_spec, flops=0, n_bytes=nbytes, precision=precision).time_s

    kernel_s = [predict(k["bytes"]) for k in kernels]
    eager_s, fused_s = predict(traffic["eager_bytes"]), predict(traffic["fused_bytes"])

    fig, ax = new_figure(figsize=(9.0, 4.3))
    blank(ax)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 5.2)
    heading = f"{title}: " if title else ""
    ax.text(0.1, 5.0, f"{heading}{traffic['n_elem']:,} {precision} elements; bytes counted by "
            f"gl.eager_cost, times predicted by the roofline (gl.predict_time)",
            fontsize=8, va="center")  # fmt: skip
    bandwidth = format_rate(the_spec.memory_bandwidth, "B/s")
    box(ax, 0.1, 4.15, 9.8, 0.5, f"device memory of the {the_spec.name} "
        f"({the_spec.memory_type}, {bandwidth} in the registry)", color="#F2F2F2",
        fontsize=8)  # fmt: skip

    def kernel(x, w, label, read, write, time_s, color):
        box(ax, x, 2.45, w, 0.65, label, color=color, text_color="w", fontsize=7)
        arrows = ((0.3, 4.15, 3.1, PALETTE["memory"]), (0.7, 3.1, 4.15, PALETTE["gpu"]))
        for dx, y0, y1, c in arrows:
            ax.annotate("", (x + w * dx, y1), (x + w * dx, y0),
                        arrowprops=dict(arrowstyle="->", lw=1.0, color=c))  # fmt: skip
        ax.text(x + w / 2, 2.35, f"read {format_bytes(read)}\nwrite {format_bytes(write)}\n"
                f"{format_duration(time_s)}", ha="center", va="top", fontsize=6)  # fmt: skip

    slot = 7.0 / len(kernels)
    for i, (k, t) in enumerate(zip(kernels, kernel_s, strict=True)):
        kernel(0.1 + i * slot, slot * 0.85, k["op"], k["read_bytes"], k["write_bytes"], t,
               PALETTE["cpu"])  # fmt: skip
    size = traffic["n_elem"] * traffic["element_bytes"]
    kernel(7.6, 2.2, "one fused kernel", size, traffic["fused_bytes"] - size, fused_s,
           PALETTE["gpu"])  # fmt: skip
    ax.plot([7.35, 7.35], [1.2, 4.0], color="0.5", ls="--", lw=0.8)
    ax.text(3.6, 1.2, f"eager: {len(kernels)} kernels, {format_bytes(traffic['eager_bytes'])} "
            f"moved, {format_duration(eager_s)} predicted", ha="center", fontsize=8)  # fmt: skip
    ax.text(8.7, 1.2, f"fused: {format_bytes(traffic['fused_bytes'])}, "
            f"{format_duration(fused_s)}", ha="center", fontsize=8)  # fmt: skip
    ax.text(0.1, 0.75, f"orange: reads from device memory; green: writes to it. Fusion "
            f"moves {traffic['eager_bytes'] / traffic['fused_bytes']:.0f}× fewer bytes.",
            fontsize=7)  # fmt: skip
    if measured:
        line = (f"Measured in the lab's recorded run (its own machine and size): eager "
                f"{format_duration(measured['eager_s'])}, fused "
                f"{format_duration(measured['fused_s'])}, "
                f"{measured['eager_s'] / measured['fused_s']:.1f}× faster.")  # fmt: skip
    else:
        line = "No recorded measurement of this fusion is in this copy of the course."
    ax.text(0.1, 0.3, line, fontsize=7)
    fig.tight_layout()
    return fig, {**traffic, "kernel_s": kernel_s, "eager_s": eager_s, "fused_s": fused_s,
                 "measured": measured}  # fmt: skip
