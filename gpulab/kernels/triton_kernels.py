"""Block-level kernels in Triton: vector add, fused softmax, tiled matmul, fused bias + GELU.

A Triton kernel is written for one *program* (a block of threads) working on a block of
elements at once; Triton chooses the threads, the coalescing and the shared memory. It is
what ``torch.compile`` generates for a GPU. Where there is no CUDA GPU, importing this
module sets ``TRITON_INTERPRET=1`` (unless it is already set) so that the same kernels run
in Triton's interpreter, on CPU tensors, slowly but exactly.

Triton is optional (it installs on Linux x86-64): :func:`triton_available` says whether it
imported, and every wrapper raises ``RuntimeError`` with the reason where it did not.

Examples
--------
>>> import torch
>>> from gpulab.kernels import triton_kernels as tk
>>> if tk.triton_available():
...     device = "cpu" if tk.interpreted() else "cuda"
...     x, y = torch.arange(5.0, device=device), torch.ones(5, device=device)
...     assert torch.equal(tk.vector_add(x, y), x + y)
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import os
import re
import sys
import textwrap

import torch

from gpulab._checks import wrong_type

# The interpreter must be chosen before Triton defines its own library of kernels (at its
# import), not only before these are defined: torch.compile imports Triton when it can.
_TRITON_ALREADY_IMPORTED = "triton" in sys.modules
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    import triton
    import triton.language as tl

    _IMPORT_ERROR = None
except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install
    triton = tl = None
    _IMPORT_ERROR = f"{type(exc).__name__}: {exc}"
if triton is not None and os.environ.get("TRITON_INTERPRET") == "1":
    from triton.runtime.interpreter import InterpretedFunction

    if _TRITON_ALREADY_IMPORTED and not isinstance(tl.standard.max, InterpretedFunction):
        _IMPORT_ERROR = (
            "Triton was imported (by torch.compile, for example) before TRITON_INTERPRET=1 "
            "was set, so its own library is compiled for a GPU and cannot run here: restart "
            "Python (in Jupyter, the kernel) and import gpulab.kernels.triton_kernels first"
        )
        triton = tl = None

__all__ = [
    "bias_gelu",
    "dot_input_precision",
    "interpreted",
    "kernel_source",
    "matmul",
    "min_dot_tile",
    "softmax",
    "triton_available",
    "triton_missing_reason",
    "vector_add",
]


def triton_available() -> bool:
    """Whether Triton imported (compiled on a GPU, interpreted on a CPU) and, where it
    compiles, can build the C launcher it needs for each kernel (a C compiler and Python's
    headers: :func:`gpulab.measure.toolchain.compile_problem`)."""
    return triton is not None and not _build_problem()


def triton_missing_reason() -> str:
    """Why Triton is not usable here ('' where it is)."""
    if triton is None:
        return (
            f"Triton is not installed or did not import ({_IMPORT_ERROR}); it ships wheels for "
            "Linux x86-64 (pip install triton)"
        )
    return _build_problem()


@functools.cache
def _build_problem() -> str:
    """'' unless Triton compiles here (not interpreted) and lacks the tools to build with;
    worked out once (the wrappers stay as cheap to call as they were)."""
    if triton is None or interpreted():
        return ""
    from gpulab.measure.toolchain import compile_problem

    return compile_problem("cuda")


def interpreted() -> bool:
    """Whether the kernels run in Triton's CPU interpreter rather than compiled."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


#: The first compute capability with TF32 (Ampere, 8.0): below it ``tl.dot`` on FP32 tiles
#: must multiply in full FP32 ("ieee"); Triton's default, TF32, fails to compile on some
#: versions or is emulated.
TF32_SINCE = (8, 0)


def dot_input_precision(device=None) -> str:
    """The ``input_precision`` for ``tl.dot`` on FP32 tiles: ``"ieee"`` on a GPU without
    TF32 (compute capability below 8.0: Turing, Volta), ``"tf32"`` (Triton's default)
    elsewhere, in the CPU interpreter too.

    Parameters
    ----------
    device : torch.device, int or None
        The GPU asked about (None: the current one).

    Examples
    --------
    >>> from gpulab.kernels import triton_kernels as tk
    >>> tk.dot_input_precision() in ("ieee", "tf32")
    True
    """
    if interpreted() or not torch.cuda.is_available():
        return "tf32"
    return "ieee" if torch.cuda.get_device_capability(device) < TF32_SINCE else "tf32"


#: The Triton kernel behind each wrapper, by the wrapper's name.
_KERNELS = {
    "vector_add": "_add_kernel",
    "softmax": "_softmax_kernel",
    "matmul": "_matmul_kernel",
    "bias_gelu": "_bias_gelu_kernel",
}


#: A comment for the linter or the formatter at the end of a line, left out of shown sources.
_LINT_COMMENT = re.compile(r"  +# (?:noqa|fmt: skip)\b[^\n]*")


def kernel_source(name: str) -> str:
    """The source of the Triton kernel behind one of this module's wrappers, as written here.

    Read from this file, so it works where Triton is not installed (the kernels are then not
    defined) and always shows the code that runs.

    Parameters
    ----------
    name : str
        A wrapper's name: ``"vector_add"``, ``"softmax"``, ``"matmul"`` or ``"bias_gelu"``.

    Returns
    -------
    str
        The kernel's source, from its ``@triton.jit`` line, without the indentation it has in
        this module and without comments addressed to the linter (``# noqa``).

    Raises
    ------
    TypeError
        When ``name`` is not a str.
    ValueError
        When ``name`` is not one of the wrappers above.

    Examples
    --------
    >>> from gpulab.kernels import triton_kernels as tk
    >>> print(tk.kernel_source("vector_add").splitlines()[1])
    def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):

    See also
    --------
    The chapter "Inside a fast kernel" shows the softmax kernel this way.
    """
    if not isinstance(name, str):
        raise wrong_type("name", name, f"a kernel's name, one of {sorted(_KERNELS)}")
    if name not in _KERNELS:
        raise ValueError(f"name={name!r} is not a kernel here; choose one of {sorted(_KERNELS)}")
    source = inspect.getsource(sys.modules[__name__])
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == _KERNELS[name]:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            text = textwrap.dedent("".join(lines[first - 1 : node.end_lineno]))
            return _LINT_COMMENT.sub("", text)
    raise RuntimeError(f"{_KERNELS[name]} is not defined in {__name__}")  # pragma: no cover


def _need_triton() -> None:
    if triton is None:
        raise RuntimeError(triton_missing_reason())


if triton is not None:

    @triton.jit
    def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803
        pid = tl.program_id(0)
        offsets = pid * BLOCK + tl.arange(0, BLOCK)  # this program's block of elements
        mask = offsets < n  # the last block may overhang n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def _softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):  # noqa: N803
        row = tl.program_id(0)  # one program per row: read once, write once
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)  # tl.exp takes FP32 or FP64 only: FP16 and BF16 are computed in FP32
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _matmul_kernel(
        a_ptr, b_ptr, c_ptr, M, N, K,  # noqa: N803
        sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,  # noqa: N803
        PRECISION: tl.constexpr = "tf32",  # noqa: N803 - "ieee" on GPUs without TF32
    ):  # fmt: skip
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):  # one tile of A and one of B per step, as in CUDA tiling
            a = tl.load(
                a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                other=0.0,
            )
            b = tl.load(
                b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                other=0.0,
            )
            acc += tl.dot(a, b, input_precision=PRECISION)  # Tensor Cores on a GPU
        tl.store(
            c_ptr + rm[:, None] * scm + rn[None, :] * scn,
            acc,
            mask=(rm[:, None] < M) & (rn[None, :] < N),
        )

    @triton.jit
    def _bias_gelu_kernel(x_ptr, b_ptr, out_ptr, n, n_cols, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        # tl.erf takes FP32 or FP64 only: FP16 and BF16 inputs are computed in FP32
        x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        x += tl.load(b_ptr + offsets % n_cols, mask=mask).to(tl.float32)
        # GELU, exact form: x * Phi(x); one read and one write instead of three kernels' worth
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


#: The dtypes each kernel takes. Softmax and bias + GELU compute in FP32 whatever they are
#: given, so they take BF16 too; the vector add and the matmul compute in their inputs' dtype.
_HALF_AND_SINGLE = (torch.float32, torch.float16)
_WITH_BF16 = (torch.float32, torch.float16, torch.bfloat16)


def _check(name: str, t, dtypes: tuple = _HALF_AND_SINGLE) -> torch.Tensor:
    allowed = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
    if not isinstance(t, torch.Tensor):
        raise wrong_type(name, t, f"a torch tensor ({allowed})")
    if t.dtype not in dtypes:
        raise ValueError(f"{name} has dtype {t.dtype}; this kernel takes {allowed}")
    if not interpreted() and t.device.type != "cuda":
        raise ValueError(f"{name} is on {t.device}: compiled Triton kernels need CUDA tensors")
    return t.contiguous()


def vector_add(x: torch.Tensor, y: torch.Tensor, *, block: int = 1024) -> torch.Tensor:
    """``x + y`` by a Triton kernel: one program per ``block`` elements."""
    _need_triton()
    x, y = _check("x", x), _check("y", y)
    if x.shape != y.shape:
        raise ValueError(
            f"x and y must have the same shape, got {tuple(x.shape)}, {tuple(y.shape)}"
        )
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of a 2-D tensor, fused: each row is read once and written once.

    FP16 and BF16 rows are computed in FP32 and the result is returned in ``x``'s dtype.
    """
    _need_triton()
    x = _check("x", x, _WITH_BF16)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {tuple(x.shape)}")
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=block)
    return out


#: The smallest (BLOCK_M, BLOCK_N, BLOCK_K) of ``tl.dot`` on an NVIDIA GPU by operand width in
#: bits, as Triton 3.9 has it, used where the installed Triton's own rule cannot be read. From
#: ``min_dot_size`` in triton/backends/nvidia/compiler.py, which ``dot`` in
#: triton/language/semantic.py asserts against when it compiles a kernel for a GPU ("Input
#: shapes should have M >= ..., N >= ... and K >= ..."). Triton's interpreter checks nothing
#: (its ``min_dot_size`` is (1, 1, 1)), so a smaller tile runs on a CPU and fails on a GPU.
_MIN_DOT_TILE_BY_BITS = {8: (1, 1, 32), 16: (1, 1, 16), 32: (1, 1, 8), 64: (1, 1, 4)}

_TILE_NAMES = ("BLOCK_M", "BLOCK_N", "BLOCK_K")


def min_dot_tile(dtype: torch.dtype) -> tuple[int, int, int]:
    """The smallest ``(BLOCK_M, BLOCK_N, BLOCK_K)`` that ``tl.dot`` compiles for on a GPU.

    Triton checks it when it compiles a kernel for an NVIDIA GPU: K at least 32 for 8-bit
    operands, 16 for FP16 and BF16, 8 for FP32 (TF32 Tensor Cores) in Triton 3.9. Its CPU
    interpreter does not check, so :func:`matmul` refuses a smaller tile on every machine.
    The rule is read from the installed Triton (it has changed between versions; Triton 3.9
    allows any M and N); where it cannot be read, Triton 3.9's rule is used.

    Parameters
    ----------
    dtype : torch.dtype
        The operands' dtype (both operands of ``tl.dot`` have the same one).

    Returns
    -------
    tuple of int
        Minimum BLOCK_M, BLOCK_N and BLOCK_K.

    Examples
    --------
    >>> import torch
    >>> from gpulab.kernels import triton_kernels as tk
    >>> tk.min_dot_tile(torch.float16)[2]
    16
    """
    if not isinstance(dtype, torch.dtype):
        raise wrong_type("dtype", dtype, "a torch.dtype")
    if not dtype.is_floating_point and dtype not in (torch.int8, torch.uint8):
        raise ValueError(f"dtype={dtype} is not a dtype tl.dot multiplies (floats, int8, uint8)")
    return _min_dot_tile(dtype.itemsize * 8, dtype.is_floating_point)


@functools.cache
def _min_dot_tile(bits: int, floating: bool) -> tuple[int, int, int]:
    fallback = _MIN_DOT_TILE_BY_BITS[bits]
    if triton is None:
        return fallback
    try:  # the installed Triton's own rule, for the GPU at hand (or an A100's, sm_80)
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import min_dot_size

        arch = 80
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            arch = 10 * major + minor
        tl_dtype = {8: tl.float8e5 if floating else tl.int8,
                    16: tl.float16, 32: tl.float32, 64: tl.float64}[bits]  # fmt: skip
        operand = tl.block_type(tl_dtype, [16, 16])
        rule = min_dot_size(GPUTarget("cuda", arch, 32))(operand, operand)
        return tuple(int(v) for v in rule)
    except Exception:  # noqa: BLE001 - an older or newer Triton without this function
        return fallback


def _check_tile(tile, dtype: torch.dtype) -> tuple[int, int, int]:
    """``tile`` as three ints, or the error that names what a GPU would refuse in it."""
    wanted = "a tuple of three powers of two (BLOCK_M, BLOCK_N, BLOCK_K), e.g. (32, 32, 32)"
    if not isinstance(tile, (tuple, list)):
        raise wrong_type("tile", tile, wanted)
    if len(tile) != 3:
        raise ValueError(f"tile={tile!r} must be {wanted}")
    for name, size in zip(_TILE_NAMES, tile, strict=True):
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(
                f"tile={tile!r}: {name}={size!r} must be an int (a power of two), "
                f"not {type(size).__name__}"
            )
        # triton/language/semantic.py, arange: "arange's range must be a power of 2"; and
        # triton/_utils.py, validate_block_shape, for tl.zeros: checked there on a CPU too.
        if size < 1 or size & (size - 1):
            raise ValueError(
                f"tile={tile!r}: {name}={size} must be a power of two (Triton's blocks, "
                "tl.arange and tl.zeros, have power-of-two sizes), e.g. 16, 32 or 64"
            )
    for name, size, least in zip(_TILE_NAMES, tile, min_dot_tile(dtype), strict=True):
        if size < least:
            dtype_name = str(dtype).removeprefix("torch.")
            raise ValueError(
                f"tile={tile!r}: {name}={size} is below {least}, the smallest tl.dot compiles "
                f"for {dtype_name} operands on a GPU (Triton's CPU interpreter would run it, a "
                f"GPU would not); use {name} >= {least}"
            )
    bm, bn, bk = tile
    limit = getattr(tl, "TRITON_MAX_TENSOR_NUMEL", 2**20)  # Triton's largest block
    for shape in ((bm, bk), (bk, bn), (bm, bn)):
        if shape[0] * shape[1] > limit:
            raise ValueError(
                f"tile={tile!r}: a {shape[0]} x {shape[1]} block has {shape[0] * shape[1]} "
                f"elements, more than Triton's limit of {limit} for one block"
            )
    return bm, bn, bk


def matmul(a: torch.Tensor, b: torch.Tensor, *, tile: tuple[int, int, int] = (32, 32, 32)):
    """``a @ b`` for 2-D tensors by a tiled Triton kernel (``tl.dot`` on each tile pair).

    Parameters
    ----------
    a, b : torch.Tensor
        FP32 or FP16 matrices of the same dtype; the result is FP32.
    tile : tuple of int
        ``(BLOCK_M, BLOCK_N, BLOCK_K)``: the block of the result one program computes and
        the depth of each step. Powers of two, with BLOCK_K at least what ``tl.dot`` needs on
        a GPU (:func:`min_dot_tile`: 16 for FP16, 8 for FP32 in Triton 3.9). They are checked
        here on every machine, because Triton's CPU interpreter runs tiles a GPU refuses.

    Raises
    ------
    TypeError
        ``a`` or ``b`` is not a tensor, or ``tile`` is not three ints.
    ValueError
        A dtype other than FP32 or FP16, ``a`` and ``b`` of different dtypes, shapes that do
        not multiply, or a tile a GPU would not compile.
    """
    _need_triton()
    a, b = _check("a", a), _check("b", b)
    if a.dtype != b.dtype:
        raise ValueError(
            f"a is {a.dtype} and b is {b.dtype}: tl.dot multiplies two tiles of one dtype; "
            "convert one first, e.g. b.to(a.dtype)"
        )
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not multiply")
    bm, bn, bk = _check_tile(tile, a.dtype)
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    grid = (math.ceil(m / bm), math.ceil(n / bn))
    precision = dot_input_precision(a.device) if a.dtype == torch.float32 else "tf32"
    _matmul_kernel[grid](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=bm, BN=bn, BK=bk,
        PRECISION=precision,
    )
    return c


def bias_gelu(x: torch.Tensor, bias: torch.Tensor, *, block: int = 1024) -> torch.Tensor:
    """``gelu(x + bias)`` (bias broadcast along the last dimension) in one fused kernel.

    FP16 and BF16 inputs are computed in FP32 (``tl.erf`` takes nothing narrower) and the
    result is returned in ``x``'s dtype.
    """
    _need_triton()
    x, bias = _check("x", x, _WITH_BF16), _check("bias", bias, _WITH_BF16)
    if bias.ndim != 1 or bias.shape[0] != x.shape[-1]:
        raise ValueError(f"bias must be 1-D of length {x.shape[-1]}, got {tuple(bias.shape)}")
    out = torch.empty_like(x)
    n = x.numel()
    _bias_gelu_kernel[(triton.cdiv(n, block),)](x, bias, out, n, x.shape[-1], BLOCK=block)
    return out
