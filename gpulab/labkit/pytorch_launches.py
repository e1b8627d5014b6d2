"""What a line of PyTorch becomes: operators on the host, kernels on the GPU.

``torch.relu(x)`` is a call on the host. ``torch.profiler`` records it as an **operator**
(``aten::relu``, and the operators it calls in turn); on a GPU the operator launches one or
more **kernels**, the functions the GPU runs, written in CUDA C++. This module puts the two
halves side by side for the chapter "What a GPU is" and its lab:

* :func:`profile_calls` profiles each of :data:`CALLS` once on a device and returns one
  :class:`CallLaunches` per call: the operators recorded and, on a CUDA GPU, the kernels
  they launched;
* :func:`trace_launches` reads, from the real A100 traces the course ships
  (:mod:`gpulab.measure.gpu_trace`), which kernels each call of the same operator launched;
* :func:`launches_table` shows both as one table.

See also the chapter ``book/gpu_basics.md`` ("What PyTorch launches") and the lab
``notebooks/gpu_basics_lab.ipynb``.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab._checks import text, wrong_type
from gpulab.labkit.trace_report import Table
from gpulab.measure.gpu_trace import GpuTrace, operator_kernels, read_trace, record_trace

__all__ = [
    "CALLS",
    "VIEW_OPERATORS",
    "CallLaunches",
    "PyTorchCall",
    "TraceLaunches",
    "launches_table",
    "profile_calls",
    "trace_launches",
]


@dataclass(frozen=True)
class PyTorchCall:
    """A line of PyTorch, and the nearest operator a shipped A100 trace holds.

    Attributes
    ----------
    code : str
        What the learner writes, e.g. ``"torch.relu(x)"``.
    trace : str
        The shipped trace (:data:`gpulab.measure.gpu_trace.TRACES`) that holds the operator.
    trace_operator : str
        The operator as that trace records it.
    where : str
        Where that operator ran in the traced program, said in a few words.
    """

    code: str
    trace: str
    trace_operator: str
    where: str


#: The three lines the chapter follows. The traces hold no ``aten::relu``: AlexNet's ReLUs
#: run in place (``aten::relu_``); ``aten::mm`` runs in the data-parallel run's backward
#: pass (a linear layer's gradients), ``aten::addmm`` in AlexNet's linear layers.
CALLS = (
    PyTorchCall("torch.relu(x)", "a100_alexnet", "aten::relu_",
                "AlexNet's in-place ReLUs"),
    PyTorchCall("x @ w", "a100_ddp_nccl", "aten::mm",
                "a training step's backward pass"),
    PyTorchCall("F.linear(x, w, b)", "a100_alexnet", "aten::addmm",
                "AlexNet's linear layers"),
)

#: Operators that change how a tensor is read, or reserve memory, and compute nothing; the
#: operator chains below leave them out.
VIEW_OPERATORS = frozenset({
    "aten::t", "aten::transpose", "aten::as_strided", "aten::expand", "aten::view",
    "aten::reshape", "aten::_reshape_alias", "aten::_unsafe_view", "aten::resolve_conj",
    "aten::resolve_neg", "aten::empty", "aten::empty_strided", "aten::detach",
})


@dataclass(frozen=True)
class CallLaunches:
    """What one call of a line of PyTorch recorded in a profile (:func:`profile_calls`).

    Attributes
    ----------
    code : str
        The line of PyTorch.
    operators : tuple of str
        The operators it ran, outermost first, in order of start, views and allocations
        (:data:`VIEW_OPERATORS`) left out.
    kernels : tuple of str
        The GPU kernels, copies and fills they launched, in order (empty on a CPU).
    device : str
        The device the profile ran on, as the trace names it (``"CPU only"`` on a CPU).
    """

    code: str
    operators: tuple[str, ...]
    kernels: tuple[str, ...]
    device: str


@dataclass(frozen=True)
class TraceLaunches:
    """Which kernels each call of an operator launched in a shipped trace.

    Attributes
    ----------
    call : PyTorchCall
    calls : int
        How many calls of the operator launched GPU work in the trace.
    sequences : tuple of (tuple of str, int)
        Each distinct sequence of kernels one call launched, with how many calls launched
        it; the most frequent first.
    device : str
        The GPU, as the trace records it.
    """

    call: PyTorchCall
    calls: int
    sequences: tuple[tuple[tuple[str, ...], int], ...]
    device: str

    @property
    def kernels_per_call(self) -> tuple[int, int]:
        """The fewest and the most kernels, copies and fills one call launched."""
        sizes = [len(seq) for seq, _ in self.sequences]
        return min(sizes), max(sizes)


def _calls(calls) -> tuple[PyTorchCall, ...]:
    if isinstance(calls, PyTorchCall):
        return (calls,)
    if isinstance(calls, (str, bytes)) or not isinstance(calls, Sequence) or not calls or not all(
            isinstance(c, PyTorchCall) for c in calls):
        raise wrong_type("calls", calls, "a non-empty list of PyTorchCall (see CALLS)")
    return tuple(calls)


def trace_launches(calls=CALLS) -> list[TraceLaunches]:
    """The kernels each call of each operator of ``calls`` launched on a real A100.

    Parameters
    ----------
    calls : sequence of PyTorchCall, default :data:`CALLS`

    Returns
    -------
    list of TraceLaunches
        One per call, in order.

    Examples
    --------
    >>> relu, mm, linear = trace_launches()
    >>> relu.calls, relu.sequences
    (14, ((('vectorized_elementwise_kernel',), 14),))
    >>> mm.call.trace_operator, mm.kernels_per_call, linear.kernels_per_call
    ('aten::mm', (1, 2), (2, 3))
    """
    out = []
    for call in _calls(calls):
        trace = read_trace(call.trace)
        per_call: dict[int, list[str]] = {}
        for row in operator_kernels(trace, call.trace_operator):
            per_call.setdefault(row.call, []).append(row.kernel)
        counts = Counter(tuple(seq) for seq in per_call.values())
        out.append(TraceLaunches(call, len(per_call), tuple(counts.most_common()),
                                 trace.device))
    return out


def _launches(trace: GpuTrace, code: str) -> CallLaunches:
    """The operators (views left out) and kernels of the one call a profile holds."""
    ops = [e for e in trace.of("cpu_op") if e.name.startswith("aten::")]
    if not ops:
        raise ValueError(f"the profile of {code!r} recorded no aten operator")
    kernels = tuple(k.kernel for k in operator_kernels(trace, ops[0].name)
                    if k.call == 0) if trace.has_gpu_work else ()
    names = tuple(e.name for e in ops if e.name not in VIEW_OPERATORS)
    return CallLaunches(code, names, kernels, trace.device)


def profile_calls(device=None, *, folder=None) -> list[CallLaunches]:
    """Profile one call of each line of :data:`CALLS` with ``torch.profiler``.

    The tensors are small (64 × 128 inputs, 128 × 256 weights, float32): the point is what
    runs, not how fast. One untimed call runs first (:func:`~gpulab.measure.gpu_trace.
    record_trace`), so one-time set-up stays out of the profile.

    Parameters
    ----------
    device : torch.device or str, optional
        Where to run (:func:`~gpulab.measure.device.torch_device`); on a CUDA GPU the
        kernels are recorded too.
    folder : str or pathlib.Path, optional
        Where to keep the traces (one Chrome-trace JSON per line, ``launches_<i>.json``);
        a temporary folder by default.

    Returns
    -------
    list of CallLaunches

    Examples
    --------
    >>> [(c.code, c.operators, c.kernels) for c in profile_calls("cpu")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('torch.relu(x)', ('aten::relu', 'aten::clamp_min'), ()),
     ('x @ w', ('aten::matmul', 'aten::mm'), ()),
     ('F.linear(x, w, b)', ('aten::linear', 'aten::addmm', 'aten::copy_'), ())]
    """
    import torch
    import torch.nn.functional as F

    from gpulab.measure.device import torch_device

    device = torch_device(device)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128, generator=gen).to(device)
    w = torch.randn(128, 256, generator=gen).to(device)
    b = torch.randn(256, generator=gen).to(device)
    w_t = w.t().contiguous()  # a linear layer keeps its weight as (out, in)
    runs = {"torch.relu(x)": lambda: torch.relu(x), "x @ w": lambda: x @ w,
            "F.linear(x, w, b)": lambda: F.linear(x, w_t, b)}
    assert tuple(runs) == tuple(c.code for c in CALLS)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) if folder is None else Path(folder)
        return [_launches(record_trace(fn, where / f"launches_{i}.json", repeats=1,
                                       device=device), code)
                for i, (code, fn) in enumerate(runs.items())]


def _code(names: Sequence[str], sep: str) -> str:
    return sep.join(f"`{n}`" for n in names)


def launches_table(here: Sequence[CallLaunches], a100: Sequence[TraceLaunches] = ()) -> Table:
    """A table: each line of PyTorch, what a profile here recorded, and what an A100 ran.

    Parameters
    ----------
    here : sequence of CallLaunches
        From :func:`profile_calls` on this machine.
    a100 : sequence of TraceLaunches, optional
        From :func:`trace_launches`, in the same order; adds the A100 trace's columns.

    Examples
    --------
    >>> here = [CallLaunches("torch.relu(x)", ("aten::relu", "aten::clamp_min"), (),
    ...                      "CPU only")]
    >>> print(launches_table(here).text)  # doctest: +NORMALIZE_WHITESPACE
    | you write | operators recorded (CPU only) | kernels launched here |
    |---|---|---|
    | `torch.relu(x)` | `aten::relu` → `aten::clamp_min` | none: the CPU runs the operator itself |
    """
    if isinstance(here, (str, bytes)) or not isinstance(here, Sequence) or not here or not all(
            isinstance(c, CallLaunches) for c in here):
        raise wrong_type("here", here, "a non-empty list of CallLaunches (profile_calls)")
    if isinstance(a100, (str, bytes)) or not isinstance(a100, Sequence) or not all(
            isinstance(t, TraceLaunches) for t in a100):
        raise wrong_type("a100", a100, "a list of TraceLaunches (trace_launches)")
    if a100 and [t.call.code for t in a100] != [c.code for c in here]:
        raise ValueError(
            f"a100 covers {[t.call.code for t in a100]} but here covers "
            f"{[c.code for c in here]}; pass both for the same lines, in the same order")
    device = text("here[0].device", here[0].device)
    on_cpu = not any(c.kernels for c in here)
    kernels_here = not on_cpu or not a100  # with the A100's columns, a CPU's "none" goes
    header = ["you write", f"operators recorded ({device})"]
    if kernels_here:
        header.append("kernels launched here")
    if a100:
        header += [f"on the A100 ({a100[0].device}): operator", "kernels each call launched"]
    rows = []
    for i, c in enumerate(here):
        cells = [f"`{c.code}`", _code(c.operators, " → ")]
        if kernels_here:
            cells.append(_code(c.kernels, ", ") if c.kernels
                         else "none: the CPU runs the operator itself")
        if a100:
            t = a100[i]
            kernels = " or ".join(
                _code(seq, " + ") + (f" ({n} of {t.calls} calls)" if len(t.sequences) > 1
                                     else "")
                for seq, n in t.sequences)
            cells += [f"`{t.call.trace_operator}` ({t.call.where})", kernels]
        rows.append("| " + " | ".join(cells) + " |")
    return Table("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n"
                 + "\n".join(rows))
