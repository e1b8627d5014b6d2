"""Worked Triton solutions of the kernel gym, and wrong ones, for the tests.

Defined only where Triton imports (the tests skip otherwise); like the CUDA solutions they are
kept out of the installed package.
"""

# ruff: noqa: E402, I001, N803 - triton after triton_kernels (it sets TRITON_INTERPRET); constexpr names

from gpulab.kernels import triton_kernels as tk  # first: it chooses the interpreter

SOLUTIONS: dict = {}
WRONG: dict = {}

if tk.triton_available():
    import triton
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def add_unmasked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # writes past the end
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))

    @triton.jit
    def online_softmax(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
        row = x_ptr + tl.program_id(0) * row_stride
        out = out_ptr + tl.program_id(0) * row_stride
        m = -float("inf")
        d = 0.0
        for start in range(0, n_cols, BLOCK):  # one pass: running maximum and rescaled sum
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(row + cols, mask=cols < n_cols, other=-float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        for start in range(0, n_cols, BLOCK):  # the second read: write the result
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(row + cols, mask=cols < n_cols, other=-float("inf"))
            tl.store(out + cols, tl.exp(x - m) / d, mask=cols < n_cols)

    @triton.jit
    def softmax_first_block_only(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)  # wrong: rows longer than BLOCK are cut short
        x = tl.load(x_ptr + tl.program_id(0) * row_stride + cols, mask=cols < n_cols,
                    other=-float("inf"))  # fmt: skip
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + tl.program_id(0) * row_stride + cols, e / tl.sum(e, axis=0),
                 mask=cols < n_cols)  # fmt: skip

    @triton.jit
    def attention(q_ptr, k_ptr, v_ptr, o_ptr, n, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):  # fmt: skip
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, D)
        q = tl.load(q_ptr + rows[:, None] * D + dims[None, :], mask=rows[:, None] < n, other=0.0)
        m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
        denom = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, D), tl.float32)
        for start in range(0, n, BLOCK_N):  # a block of keys at a time: S never leaves the chip
            keys = start + tl.arange(0, BLOCK_N)
            k = tl.load(
                k_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0
            )
            v = tl.load(
                v_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0
            )
            s = tl.dot(q, tl.trans(k)) * scale
            s = tl.where(keys[None, :] < n, s, -float("inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))
            fix = tl.exp(m - m_new)
            p = tl.exp(s - m_new[:, None])
            denom = denom * fix + tl.sum(p, axis=1)
            acc = acc * fix[:, None] + tl.dot(p, v)
            m = m_new
        tl.store(o_ptr + rows[:, None] * D + dims[None, :], acc / denom[:, None],
                 mask=rows[:, None] < n)  # fmt: skip

    @triton.jit
    def attention_no_rescale(q_ptr, k_ptr, v_ptr, o_ptr, n, scale, D: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
        # wrong past one block of keys: what was summed under the old maximum is never rescaled
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, D)
        q = tl.load(q_ptr + rows[:, None] * D + dims[None, :], mask=rows[:, None] < n, other=0.0)
        m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
        denom = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, D), tl.float32)
        for start in range(0, n, BLOCK_N):
            keys = start + tl.arange(0, BLOCK_N)
            k = tl.load(
                k_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0
            )
            v = tl.load(
                v_ptr + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0
            )
            s = tl.dot(q, tl.trans(k)) * scale
            s = tl.where(keys[None, :] < n, s, -float("inf"))
            m = tl.maximum(m, tl.max(s, axis=1))
            p = tl.exp(s - m[:, None])
            denom = denom + tl.sum(p, axis=1)  # no exp(m - m_new): old terms keep the old max
            acc = acc + tl.dot(p, v)
        tl.store(o_ptr + rows[:, None] * D + dims[None, :], acc / denom[:, None],
                 mask=rows[:, None] < n)  # fmt: skip

    SOLUTIONS = {
        "triton_add": add,
        "triton_online_softmax": online_softmax,
        "triton_attention": attention,
    }
    WRONG = {
        "add_unmasked": add_unmasked,
        "softmax_first_block_only": softmax_first_block_only,
        "attention_no_rescale": attention_no_rescale,
    }
