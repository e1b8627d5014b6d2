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

import math
import os
import sys

import torch

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
    "interpreted",
    "matmul",
    "softmax",
    "triton_available",
    "triton_missing_reason",
    "vector_add",
]


def triton_available() -> bool:
    """Whether Triton imported (compiled on a GPU, interpreted on a CPU)."""
    return triton is not None


def triton_missing_reason() -> str:
    """Why Triton is not usable here ('' where it is)."""
    if triton is not None:
        return ""
    return (
        f"Triton is not installed or did not import ({_IMPORT_ERROR}); it ships wheels for "
        "Linux x86-64 (pip install triton)"
    )


def interpreted() -> bool:
    """Whether the kernels run in Triton's CPU interpreter rather than compiled."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


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
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * row_stride + cols, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def _matmul_kernel(
        a_ptr, b_ptr, c_ptr, M, N, K,  # noqa: N803
        sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,  # noqa: N803
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
            acc += tl.dot(a, b)  # Tensor Cores on a GPU
        tl.store(
            c_ptr + rm[:, None] * scm + rn[None, :] * scn,
            acc,
            mask=(rm[:, None] < M) & (rn[None, :] < N),
        )

    @triton.jit
    def _bias_gelu_kernel(x_ptr, b_ptr, out_ptr, n, n_cols, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets % n_cols, mask=mask)
        # GELU, exact form: x * Phi(x); one read and one write instead of three kernels' worth
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offsets, y, mask=mask)


def _check(name: str, t) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or t.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"{name} must be a float32 or float16 torch tensor, got {t!r:.60}")
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
    """Row-wise softmax of a 2-D tensor, fused: each row is read once and written once."""
    _need_triton()
    x = _check("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {tuple(x.shape)}")
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=block)
    return out


def matmul(a: torch.Tensor, b: torch.Tensor, *, tile: tuple[int, int, int] = (32, 32, 32)):
    """``a @ b`` for 2-D tensors by a tiled Triton kernel (``tl.dot`` on each tile pair)."""
    _need_triton()
    a, b = _check("a", a), _check("b", b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not multiply")
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = tile
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    grid = (math.ceil(m / bm), math.ceil(n / bn))
    _matmul_kernel[grid](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=bm, BN=bn, BK=bk
    )
    return c


def bias_gelu(x: torch.Tensor, bias: torch.Tensor, *, block: int = 1024) -> torch.Tensor:
    """``gelu(x + bias)`` (bias broadcast along the last dimension) in one fused kernel."""
    _need_triton()
    x, bias = _check("x", x), _check("bias", bias)
    if bias.ndim != 1 or bias.shape[0] != x.shape[-1]:
        raise ValueError(f"bias must be 1-D of length {x.shape[-1]}, got {tuple(bias.shape)}")
    out = torch.empty_like(x)
    n = x.numel()
    _bias_gelu_kernel[(triton.cdiv(n, block),)](x, bias, out, n, x.shape[-1], BLOCK=block)
    return out
