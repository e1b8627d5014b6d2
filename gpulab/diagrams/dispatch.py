"""The dispatcher: the operators one forward and backward pass sends to kernels, logged."""

from __future__ import annotations

from collections.abc import Callable

from gpulab._checks import text, wrong_type
from gpulab.diagrams._draw import PALETTE, blank, box, new_figure

__all__ = ["dispatch_log", "draw_dispatch"]

#: Operators NVIDIA GPUs run in a vendor library rather than a framework kernel (PyTorch's
#: CUDA backend calls cuBLAS for these and cuDNN for convolutions).
_LIBRARIES = {"addmm": "cuBLAS", "mm": "cuBLAS", "bmm": "cuBLAS", "baddbmm": "cuBLAS",
             "addmv": "cuBLAS", "convolution": "cuDNN", "cudnn_convolution": "cuDNN"}  # fmt: skip


def _wrap(op: str) -> str:
    """An operator name on two lines where it is long (``log_softmax`` / ``backward_data``)."""
    name = op.lstrip("_")
    for part in ("_backward", "_forward"):
        name = name.replace(part, "\n" + part[1:], 1)
    return name


def dispatch_log(forward: Callable[[], object]) -> dict[str, list[dict]]:
    """Every operator that reaches a kernel in ``forward()`` and then in its ``backward()``.

    Logged with :class:`torch.utils._python_dispatch.TorchDispatchMode` (as
    :func:`gpulab.eager_cost` does), below autograd and autocast: what the backend receives.
    A view (``t``, ``view``, ``detach``...) changes only a tensor's metadata: no kernel runs
    and no memory moves.

    Parameters
    ----------
    forward : callable
        A function of no arguments returning a scalar tensor that requires grad (a loss).

    Returns
    -------
    dict
        ``forward`` and ``backward``: lists of ``{"op", "view", "library"}`` in call order;
        ``library`` names the NVIDIA library the CUDA backend calls, or ``None``.

    Examples
    --------
    >>> import torch
    >>> w = torch.ones(3, requires_grad=True)
    >>> log = dispatch_log(lambda: (w * 2.0).sum())
    >>> [c["op"] for c in log["forward"]], [c["op"] for c in log["backward"]]
    (['mul', 'sum'], ['ones_like', 'expand', 'mul', 'detach'])
    """
    import torch

    from gpulab.costmodels.flops import dispatch_mode_class

    if not callable(forward):
        raise wrong_type("forward", forward, "a function of no arguments returning a loss")

    class _Log(dispatch_mode_class()):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            self.calls.append({"op": name, "view": bool(func.is_view),
                               "library": _LIBRARIES.get(name)})  # fmt: skip
            return func(*args, **(kwargs or {}))

    with _Log() as fwd:
        loss = forward()
    if not isinstance(loss, torch.Tensor):
        raise TypeError(
            f"forward={forward!r} must return a one-element tensor that requires grad (a loss), "
            f"not {type(loss).__name__}"
        )
    if not (loss.numel() == 1 and loss.requires_grad):
        raise ValueError(
            f"forward={forward!r} must return a one-element tensor that requires grad (a loss), "
            f"not one of shape {tuple(loss.shape)}"
            + ("" if loss.requires_grad else " that does not require grad")
        )
    with _Log() as bwd:
        loss.backward()
    return {"forward": fwd.calls, "backward": bwd.calls}


def draw_dispatch(forward: Callable[[], object], *, title: str = ""):
    """A call's path through the dispatcher, and the operators it sends to kernels.

    Parameters
    ----------
    forward : callable
        As for :func:`dispatch_log`.
    title : str
        What ``forward`` computes, for the heading.

    Returns
    -------
    fig : matplotlib Figure
    log : dict
        :func:`dispatch_log` of ``forward``.

    Examples
    --------
    >>> import torch
    >>> w = torch.ones(3, requires_grad=True)
    >>> fig, log = draw_dispatch(lambda: (w * 2.0).sum())
    >>> len(log["forward"]) + len(log["backward"]), sum(c["view"] for c in log["backward"])
    (6, 2)
    """
    text("title", title)
    log = dispatch_log(forward)
    fig, ax = new_figure(figsize=(9.0, 4.0))
    blank(ax)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 5)
    n_calls = len(log["forward"]) + len(log["backward"])
    ax.text(0.1, 4.75, (f"{title}: " if title else "") + f"{n_calls} operator calls reach the "
            "backend, logged below autograd and autocast", fontsize=8, va="center")  # fmt: skip
    stages = (
        "your Python call",
        "autograd\n(records for backward)",
        "autocast\n(16-bit casts when on)",
        "backend kernel\n(CPU, CUDA, MPS...)",
    )
    for i, label in enumerate(stages):
        box(ax, 0.1 + i * 2.5, 3.6, 2.0, 0.7, label, color=PALETTE["cpu"] if i else "#F2F2F2",
            text_color="w" if i else None, fontsize=7)  # fmt: skip
        if i:
            ax.annotate("", (0.1 + i * 2.5, 3.95), (i * 2.5 - 0.4, 3.95),
                        arrowprops=dict(arrowstyle="->", lw=0.8))  # fmt: skip
    width = 8.5 / max(len(log["forward"]), len(log["backward"]), 1)
    for row, (phase, calls) in enumerate(log.items()):
        y = 2.4 - row * 1.3
        ax.text(0.1, y + 0.3, phase, fontsize=8, va="center")
        for j, call in enumerate(calls):
            color = "#FFFFFF" if call["view"] else PALETTE["gpu"]
            box(ax, 1.4 + j * width, y, width * 0.92, 0.6, _wrap(call["op"]),
                color=color, text_color=None if call["view"] else "w", fontsize=5.5,
                linestyle="--" if call["view"] else "-")  # fmt: skip
            if call["library"]:
                ax.text(1.4 + j * width + width * 0.46, y - 0.05, call["library"], ha="center",
                        va="top", fontsize=6)  # fmt: skip
    views = sum(c["view"] for calls in log.values() for c in calls)
    ax.text(0.1, 0.25, f"green: a kernel runs ({n_calls - views}); white, dashed: a view, "
            f"metadata only, no kernel ({views}); named: the library the CUDA backend calls",
            fontsize=7)  # fmt: skip
    fig.tight_layout()
    return fig, log
