"""Count the floating-point operations of layers by hand, and check the count with PyTorch.

The course counts one multiply-add as two FLOPs and, like
:class:`torch.utils.flop_counter.FlopCounterMode`, counts only the matrix multiplies and
convolutions: bias adds, activations and normalisation are left out (they are a few FLOPs
per output element against hundreds or thousands for the products).

Backward passes cost about twice the forward pass: one product for the gradient of the
weights and one for the gradient of the layer's input. The first layer of a network needs
no input gradient, so its backward pass costs about the same as its forward pass.

See also the chapter "Parallel compute" (``book/parallel_compute.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral

from gpulab._checks import MAX_ELEMENTS, at_most, choice, flag, positive_int, wrong_type
from gpulab.hardware.precision import TORCH_DTYPE_NAMES

__all__ = [
    "FUSION_PRECISIONS",
    "conv2d_flops",
    "count_flops",
    "dispatch_mode_class",
    "eager_cost",
    "fusion_traffic",
    "linear_flops",
    "matmul_flops",
]


def _positive_ints(**values: int) -> None:
    for name, value in values.items():
        positive_int(name, value)


def _pair(name: str, value: int | Sequence[int], *, allow_zero: bool = False) -> tuple[int, int]:
    """``value`` as (height, width): an int for both, or a pair; each above 0 (or 0 or more)."""
    kind = "0 or more" if allow_zero else "positive"
    wanted = f"a {kind} int or a pair of {kind} ints"
    if isinstance(value, (str, bytes)) or not isinstance(value, (Integral, Sequence)):
        raise wrong_type(name, value, wanted)
    pair = (value, value) if isinstance(value, Integral) else tuple(value)
    if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in pair):
        raise wrong_type(name, value, wanted)
    if len(pair) != 2 or min(pair) < (0 if allow_zero else 1):
        raise ValueError(f"{name}={value!r} must be {wanted}")
    return tuple(int(v) for v in pair)  # type: ignore[return-value]


def _with_backward(forward: int, backward: bool, input_grad: bool) -> int:
    flag("backward", backward)
    flag("input_grad", input_grad)
    if not backward:
        return forward
    # Weight gradient: one product as large as the forward one; input gradient: another.
    return forward + forward * (2 if input_grad else 1)


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an ``(m × k) @ (k × n)`` matrix product: ``2·m·k·n``.

    Each of the ``m·n`` outputs is a dot product of length ``k``: ``k`` multiplies and ``k``
    adds (an FMA is two FLOPs).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.matmul_flops(1024, 1024, 1024) / 1e9
    2.147483648
    """
    _positive_ints(m=m, k=k, n=n)
    return 2 * m * k * n


def linear_flops(
    rows: int,
    in_features: int,
    out_features: int,
    *,
    backward: bool = False,
    input_grad: bool = True,
) -> int:
    """FLOPs of a fully connected layer (``torch.nn.Linear``) on ``rows`` rows.

    Parameters
    ----------
    rows : int
        Rows of the input: the batch size, times the sequence length for a transformer.
    in_features, out_features : int
        The layer's shape.
    backward : bool
        Count the backward pass too (the total of forward and backward is returned).
    input_grad : bool
        Whether the backward pass computes the input's gradient (every layer but the first).

    Returns
    -------
    int
        ``2·rows·in·out`` for the forward pass; 3× that with a full backward pass, 2× when
        only the weight gradient is needed. The bias add is not counted.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.linear_flops(32, 1024, 4096)
    268435456
    >>> gl.linear_flops(32, 1024, 4096, backward=True) // gl.linear_flops(32, 1024, 4096)
    3
    """
    _positive_ints(rows=rows, in_features=in_features, out_features=out_features)
    return _with_backward(matmul_flops(rows, in_features, out_features), backward, input_grad)


def conv2d_output_size(
    size: int | Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
) -> tuple[int, int]:
    """Height and width of a 2-D convolution's output, as ``torch.nn.Conv2d`` computes them.

    ``size``, ``kernel_size``, ``stride`` and ``dilation`` must be positive; ``padding``
    0 or more.

    Examples
    --------
    >>> conv2d_output_size(224, 7, stride=2, padding=3)
    (112, 112)
    """
    hw, k, s, d = (
        _pair(n, v)
        for n, v in (
            ("size", size),
            ("kernel_size", kernel_size),
            ("stride", stride),
            ("dilation", dilation),
        )
    )
    p = _pair("padding", padding, allow_zero=True)
    out = tuple((hw[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(out) < 1:
        if d == (1, 1):
            raise ValueError(f"size={size!r} is too small for kernel_size={kernel_size!r}")
        # dilation spreads the kernel out: name it, since a large one is what is wrong
        raise ValueError(
            f"dilation={dilation!r} is too large for the input: kernel_size={kernel_size!r} "
            f"dilated spans more than size={size!r} with padding={padding!r}"
        )
    return out  # type: ignore[return-value]


def conv2d_flops(
    batch_size: int,
    in_channels: int,
    out_channels: int,
    kernel_size: int | Sequence[int],
    input_size: int | Sequence[int],
    *,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    backward: bool = False,
    input_grad: bool = True,
) -> int:
    """FLOPs of a 2-D convolution (``torch.nn.Conv2d``) on a batch of images.

    Every output value is a dot product over ``in_channels / groups × kh × kw`` inputs, so
    the forward pass costs ``2 · batch_size · out_channels · H_out · W_out · in_channels/groups ·
    kh · kw``. Libraries run it as a matrix multiply ("im2col"), which is why Tensor Cores
    speed it up.

    Parameters
    ----------
    batch_size, in_channels, out_channels : int
        Images per batch and channels in and out.
    kernel_size, input_size : int or pair of int
        Filter size and the input's height and width (positive).
    stride, padding, dilation : int or pair of int
        As in ``torch.nn.Conv2d``: stride and dilation positive, padding 0 or more.
    groups : int
        As in ``torch.nn.Conv2d``; must divide both channel counts.
    backward, input_grad : bool
        As in :func:`linear_flops`.

    Notes
    -----
    For ``groups > 1``, torch's ``FlopCounterMode`` counts the weight gradient as if the
    convolution were ungrouped (``groups`` times the true count); this function does not,
    and neither does :func:`count_flops`, which corrects torch's count.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.conv2d_flops(1, 3, 64, 7, 224, stride=2, padding=3) / 1e6  # ResNet-50's stem
    236.027904
    """
    _positive_ints(
        batch_size=batch_size, in_channels=in_channels, out_channels=out_channels, groups=groups
    )
    if in_channels % groups or out_channels % groups:
        raise ValueError(
            f"groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
        )
    _pair("input_size", input_size)  # checked here so the error names this function's parameter
    h_out, w_out = conv2d_output_size(
        size=input_size, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation
    )
    kh, kw = _pair("kernel_size", kernel_size)
    forward = 2 * batch_size * out_channels * h_out * w_out * (in_channels // groups) * kh * kw
    return _with_backward(forward, backward, input_grad)


def _grouped_conv_backward_flop(*args, out_val=None) -> int:
    """FLOPs of ``aten.convolution_backward``, with a grouped weight gradient counted right.

    torch (2.x) counts a grouped convolution's weight gradient as if the convolution were
    ungrouped, ``groups`` times too many. Each group's weight gradient is a product over its
    own ``in_channels / groups`` channels, the same multiply-adds as the forward pass, so
    that is what is counted here; the input gradient keeps torch's count. ``FlopCounterMode``
    calls this with the operator's arguments (``grad_out, input, weight, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask``) and its outputs.
    """
    from torch.utils.flop_counter import conv_backward_flop, conv_flop_count

    grad_out, x, weight, transposed, output_mask = args[0], args[1], args[2], args[7], args[10]
    input_grad_only = [output_mask[0], False, False]
    total = conv_backward_flop(*args[:10], input_grad_only, out_val=out_val)
    if output_mask[1]:
        total += conv_flop_count(list(x.shape), list(weight.shape), list(grad_out.shape),
                                 transposed=transposed)  # fmt: skip
    return total


_grouped_conv_backward_flop._get_raw = True  # FlopCounterMode: pass tensors, not shapes


def count_flops(module_or_fn: Callable, *inputs, backward: bool = False) -> int:
    """Count the FLOPs PyTorch performs when calling ``module_or_fn(*inputs)``.

    A thin wrapper around :class:`torch.utils.flop_counter.FlopCounterMode`, which counts
    matrix multiplies and convolutions as the course does (an FMA is two FLOPs). One
    correction: torch counts a grouped convolution's weight gradient as if the convolution
    were ungrouped (``groups`` times too many: a depthwise 3×3 on 8×64×56×56 images would
    count 1.907 GFLOP forward and backward instead of 86.7 MFLOP); here it costs what the
    forward pass does, as in :func:`conv2d_flops`.

    Parameters
    ----------
    module_or_fn : callable
        A ``torch.nn.Module`` or any function of tensors.
    *inputs
        Its arguments.
    backward : bool
        Also run the backward pass of the sum of the outputs and count it. Input gradients
        are counted only for inputs created with ``requires_grad=True``, as in training.

    Returns
    -------
    int
        Total FLOPs (forward, or forward and backward).

    Examples
    --------
    >>> import torch, gpulab as gl
    >>> layer = torch.nn.Linear(1024, 4096)
    >>> x = torch.randn(32, 1024, requires_grad=True)
    >>> gl.count_flops(layer, x) == gl.linear_flops(32, 1024, 4096)
    True
    >>> gl.count_flops(layer, x, backward=True) == gl.linear_flops(32, 1024, 4096, backward=True)
    True
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if not callable(module_or_fn):
        raise TypeError(f"module_or_fn={module_or_fn!r} is not callable; pass a module or function")
    flag("backward", backward)
    corrected = {torch.ops.aten.convolution_backward: _grouped_conv_backward_flop}
    with FlopCounterMode(display=False, custom_mapping=corrected) as counter:
        out = module_or_fn(*inputs)
        if backward:
            outputs = out if isinstance(out, (tuple, list)) else (out,)
            tensors = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
            if not tensors:
                raise ValueError(
                    "backward=True needs an output that requires grad: give the module "
                    "parameters or an input with requires_grad=True"
                )
            torch.stack([t.sum() for t in tensors]).sum().backward()
    return int(counter.get_total_flops())


def dispatch_mode_class():
    """torch's ``TorchDispatchMode``, which sees every operator eager PyTorch runs.

    It lives in a private module (``torch.utils._python_dispatch``) that a future torch may
    move; without it the bytes cannot be counted, and :func:`eager_cost` says so.
    """
    import torch

    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as err:
        raise RuntimeError(
            "eager_cost counts bytes with torch.utils._python_dispatch.TorchDispatchMode, which "
            f"this torch ({torch.__version__}) does not provide ({err}). gl.count_flops still "
            "counts the FLOPs; count the bytes by hand (the sizes of each operator's inputs "
            "and outputs)."
        ) from err
    return TorchDispatchMode


def eager_cost(fn: Callable[[], object]) -> tuple[float, float]:
    """FLOPs and bytes of memory traffic of one eager run of ``fn``.

    FLOPs come from :class:`torch.utils.flop_counter.FlopCounterMode` (matrix multiplies
    and convolutions only). Bytes are the sizes of every operator's tensor inputs and
    outputs: what eager PyTorch reads and writes when no two operators are fused, the
    traffic a roofline prediction (:func:`gpulab.predict_time`) needs.

    Raises
    ------
    ValueError
        If ``fn`` is not callable.
    RuntimeError
        If this torch lacks ``torch.utils._python_dispatch.TorchDispatchMode``, the private
        API that sees each operator's tensors: there is no public way to count the bytes,
        and a guess would not be a measurement. :func:`count_flops` still works.

    Examples
    --------
    >>> import torch
    >>> a, b = torch.ones(64, 64), torch.ones(64, 64)
    >>> eager_cost(lambda: a @ b)   # 2·64³ FLOPs; read two 16 KiB matrices, write one
    (524288.0, 49152.0)
    """
    import torch
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import FlopCounterMode

    if not callable(fn):
        raise wrong_type("fn", fn, "a function of no arguments, e.g. lambda: a @ b")
    dispatch_mode = dispatch_mode_class()

    class _Traffic(dispatch_mode):
        def __init__(self):
            super().__init__()
            self.bytes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            flat, _ = tree_flatten((args, kwargs or {}, out))
            self.bytes += sum(
                t.numel() * t.element_size() for t in flat if isinstance(t, torch.Tensor)
            )
            return out

    with FlopCounterMode(display=False) as flops, _Traffic() as traffic:
        fn()
    return float(flops.get_total_flops()), float(traffic.bytes)


_MAX_FUSED_OPS = 12  # more boxes than this do not fit one row of the fusion drawing

#: Precisions a chain of elementwise operations is traced in (torch dtypes exist for these).
FUSION_PRECISIONS = ("fp32", "fp16", "bf16")


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
        Elements of the input tensor, at most ``MAX_ELEMENTS`` (2**40).
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
        raise wrong_type("fn", fn, "a function of one tensor, e.g. lambda x: x * 2")
    n_elem = positive_int("n_elem", n_elem)
    at_most("n_elem", n_elem, MAX_ELEMENTS, "elements of a traced tensor")
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
    if len(inputs) != 1:
        raise TypeError(
            f"fn={fn!r} must be a function of one tensor, e.g. lambda x: x * 2; it takes "
            f"{len(inputs)} arguments"
        )
    if not 1 <= len(ops) <= _MAX_FUSED_OPS:
        raise ValueError(
            f"fn={fn!r} must run 1 to {_MAX_FUSED_OPS} operations on its tensor; it runs {len(ops)}"
        )
    x = torch.empty(n_elem, device="meta", dtype=getattr(torch, TORCH_DTYPE_NAMES[precision]))
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
