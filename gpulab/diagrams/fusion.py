"""Kernel fusion: a chain of elementwise operations as eager kernels, and as one fused kernel."""

from __future__ import annotations

from collections.abc import Callable

from gpulab._checks import choice, positive_int, positive_number, resolve_spec
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure
from gpulab.flops import eager_cost
from gpulab.roofline import predict_time
from gpulab.units import format_bytes, format_duration, format_rate

__all__ = ["FUSION_PRECISIONS", "draw_fusion", "fusion_traffic"]

#: Precisions a chain of elementwise operations is traced in (torch dtypes exist for these).
FUSION_PRECISIONS = ("fp32", "fp16", "bf16")
_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_MAX_OPS = 12  # more boxes than this do not fit one row of the drawing


def fusion_traffic(fn: Callable, n_elem: int = 2**28, *, precision: str = "fp32") -> dict:
    """Bytes each eager kernel of ``fn`` moves, and the bytes of one fused kernel.

    ``fn`` takes one tensor; :func:`torch.fx.symbolic_trace` splits it into operations, and
    each operation is run alone under :func:`gpulab.eager_cost` on a ``meta`` tensor of
    ``n_elem`` elements (shapes only: no memory is allocated, nothing is computed). Eager
    execution runs each operation as its own kernel, which reads its tensor inputs from
    device memory and writes its output back; a fused kernel reads ``fn``'s input once and
    writes its result once.

    Parameters
    ----------
    fn : callable
        A function of one tensor that ``torch.fx`` can trace (no control flow on values),
        with 1 to 12 operations.
    n_elem : int
        Elements of the input tensor.
    precision : str
        One of :data:`FUSION_PRECISIONS`.

    Returns
    -------
    dict
        ``kernels`` (a list of ``{"op", "bytes", "read_bytes", "write_bytes"}``, one per
        operation, in order), ``eager_bytes`` (:func:`gpulab.eager_cost` of the whole of
        ``fn``, which equals the kernels' sum), ``fused_bytes`` (input plus output),
        ``n_elem`` and ``element_bytes``.

    Raises
    ------
    ValueError
        If ``fn`` is not callable or not traceable as a function of one tensor, or has more
        than 12 operations; for a bad ``n_elem`` or ``precision``.

    Examples
    --------
    >>> import torch
    >>> t = fusion_traffic(lambda x: torch.relu(x * 2.0) + 1.0, 1024)
    >>> [k["op"] for k in t["kernels"]], [k["bytes"] for k in t["kernels"]]
    (['mul', 'relu', 'add'], [8192.0, 8192.0, 8192.0])
    >>> t["eager_bytes"], t["fused_bytes"]   # three kernels against one: 1 KiB in, 1 KiB out
    (24576.0, 8192.0)
    """
    import torch
    import torch.fx

    if not callable(fn):
        raise ValueError(f"fn={fn!r} must be a function of one tensor, e.g. lambda x: x * 2")
    n_elem = positive_int("n_elem", n_elem)
    choice("precision", precision, FUSION_PRECISIONS)
    try:
        module = torch.fx.symbolic_trace(fn)
    except Exception as err:  # torch.fx raises many kinds; all mean "cannot trace this"
        raise ValueError(
            f"fn={fn!r} must be traceable by torch.fx as a function of one tensor "
            f"({type(err).__name__}: {err})"
        ) from err
    nodes = list(module.graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    ops = [n for n in nodes if n.op in ("call_function", "call_method", "call_module")]
    if len(inputs) != 1 or not 1 <= len(ops) <= _MAX_OPS:
        raise ValueError(
            f"fn={fn!r} must take one tensor and run 1 to {_MAX_OPS} operations; it takes "
            f"{len(inputs)} argument(s) and runs {len(ops)}"
        )
    x = torch.empty(n_elem, device="meta", dtype=getattr(torch, _DTYPES[precision]))
    kernels = []

    class _PerOperation(torch.fx.Interpreter):
        def run_node(self, node):
            if node.op not in ("call_function", "call_method", "call_module"):
                return super().run_node(node)
            result = {}
            run = super().run_node  # bound here: a bare super() does not work in the lambda
            _, nbytes = eager_cost(lambda: result.setdefault("out", run(node)))
            out = result["out"]
            written = out.numel() * out.element_size() if isinstance(out, torch.Tensor) else 0
            target = node.target
            name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
            kernels.append({"op": name, "bytes": nbytes, "read_bytes": nbytes - written,
                            "write_bytes": float(written)})  # fmt: skip
            return out

    try:
        out = _PerOperation(module).run(x)
        _, eager_bytes = eager_cost(lambda: fn(x))
    except (RuntimeError, TypeError, NotImplementedError) as err:
        raise ValueError(
            f"fn={fn!r} must run on one tensor of {n_elem} elements ({type(err).__name__}: {err})"
        ) from err
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"fn={fn!r} must return a tensor, not {type(out).__name__}")
    size = x.element_size()
    return {
        "kernels": kernels,
        "eager_bytes": eager_bytes,
        "fused_bytes": float(x.numel() * size + out.numel() * out.element_size()),
        "n_elem": n_elem,
        "element_bytes": size,
    }


def _measured(measured) -> dict | None:
    if measured is None:
        return None
    if not isinstance(measured, dict) or not {"eager_s", "fused_s"} <= set(measured):
        raise ValueError(
            f"measured={measured!r} must be None or a dict with eager_s and fused_s (seconds)"
        )
    try:
        return {k: positive_number(f"measured[{k!r}]", measured[k]) for k in ("eager_s", "fused_s")}
    except ValueError as err:
        raise ValueError(f"measured={measured!r}: {err}") from err


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
    if not isinstance(title, str):
        raise ValueError(f"title={title!r} must be a str")
    the_spec = resolve_spec("spec", spec, kinds=("gpu",))
    if not the_spec.memory_bandwidth:
        raise ValueError(f"spec={spec!r}: the registry has no memory bandwidth for {the_spec.name}")
    measured = _measured(measured)
    traffic = fusion_traffic(fn, n_elem, precision=precision)
    kernels = traffic["kernels"]

    def predict(nbytes: float) -> float:
        return predict_time(the_spec, flops=0, bytes_moved=nbytes, precision=precision).time_s

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
