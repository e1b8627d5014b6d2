"""Worked solutions of the kernel gym, and one wrong kernel (or more) per task.

They live here and in the gym labs' hidden solution cells, never in the installed package,
so that a learner cannot find them with ``import``. Each kernel is in Numba's CUDA kernel
language; the simulator supplies ``cuda`` and ``float32``, and ``numba.cuda.jit`` compiles
the same functions on a GPU (the constants below are globals, as Numba wants them).
"""

# ruff: noqa: E741, F821, N803, N806 - `cuda` comes from the simulator or Numba; CUDA's names

import math

try:  # only for compiling on a GPU; the simulator supplies its own ``cuda``
    from numba import cuda, float32
except ImportError:  # pragma: no cover
    cuda = None
    from numpy import float32

ITEMS = 4  # elements per thread in the copy
TILE = 32  # the transpose's tile
TILE_PAD = 33  # one extra column: a column of the tile spreads over all 32 banks
RB = 128  # threads per block of the reduction
T = 16  # the matmul's tile
R = 4  # outputs per thread of the register-tiled matmul
W = 32  # a warp: threads per row of the softmax
BR = 32  # attention: query rows per block (one per thread), keys per tile
D = 8  # attention: the head dimension
D_PAD = 9  # sQ's rows padded: thread t reads row t, in bank 9 t mod 32

# --------------------------------------------------------------------------- 1. copy


def copy_coalesced(src, dst, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    for j in range(ITEMS):
        k = i + j * stride  # neighbouring threads, neighbouring elements
        if k < n:
            dst[k] = src[k]


def copy_chunked(src, dst, n):  # right, but each thread copies its own run of 4
    i = cuda.grid(1)
    for j in range(ITEMS):
        k = i * ITEMS + j
        if k < n:
            dst[k] = src[k]


def copy_unguarded(src, dst, n):  # no bounds check: threads past n write outside dst
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    for j in range(ITEMS):
        dst[i + j * stride] = src[i + j * stride]


# --------------------------------------------------------------------------- 2. transpose


def transpose_padded(a, out, rows, cols):
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    if by + ty < rows and bx + tx < cols:
        tile[ty, tx] = a[by + ty, bx + tx]  # a row of a: coalesced
    cuda.syncthreads()
    if bx + ty < cols and by + tx < rows:
        out[bx + ty, by + tx] = tile[tx, ty]  # a row of out: coalesced; a column of the tile


def transpose_unpadded(a, out, rows, cols):  # right, but a 32-way bank conflict per read
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    if by + ty < rows and bx + tx < cols:
        tile[ty, tx] = a[by + ty, bx + tx]
    cuda.syncthreads()
    if bx + ty < cols and by + tx < rows:
        out[bx + ty, by + tx] = tile[tx, ty]


def transpose_naive(a, out, rows, cols):  # right, but every warp's store is scattered
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if y < rows and x < cols:
        out[x, y] = a[y, x]


def transpose_no_barrier(a, out, rows, cols):  # a race: reads the tile before it is full
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    if by + ty < rows and bx + tx < cols:
        tile[ty, tx] = a[by + ty, bx + tx]
    if bx + ty < cols and by + tx < rows:
        out[bx + ty, by + tx] = tile[tx, ty]


def transpose_early_return(a, out, rows, cols):  # threads outside return before the barrier
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    if by + ty >= rows or bx + tx >= cols:
        return
    tile[ty, tx] = a[by + ty, bx + tx]
    cuda.syncthreads()
    if bx + ty < cols and by + tx < rows:
        out[bx + ty, by + tx] = tile[tx, ty]


# --------------------------------------------------------------------------- 3. reduction


def reduce_sequential(x, out, n):  # a tree in shared memory, threads 0..s-1 busy
    s = cuda.shared.array(RB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < n else float32(0.0)
    cuda.syncthreads()
    step = RB // 2
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


def reduce_interleaved(x, out, n):  # right, but every (2 step)-th lane works: lanes idle
    s = cuda.shared.array(RB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < n else float32(0.0)
    cuda.syncthreads()
    step = 1
    while step < RB:
        if tid % (2 * step) == 0:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


def reduce_atomic(x, out, n):  # right, but one atomic add per element
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(out, 0, x[i])


def reduce_plain_add(x, out, n):  # a race: many threads read and write out[0]
    i = cuda.grid(1)
    if i < n:
        out[0] += x[i]


def reduce_no_barrier(x, out, n):  # a race: the tree reads partial sums not yet written
    s = cuda.shared.array(RB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < n else float32(0.0)
    step = RB // 2
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
        step //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


# --------------------------------------------------------------------------- 4. matmul


def matmul_tiled(A, B, C, M, N, K):
    sA = cuda.shared.array((T, T), float32)
    sB = cuda.shared.array((T, T), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * T + ty
    col = cuda.blockIdx.x * T + tx
    acc = float32(0.0)
    for t in range((K + T - 1) // T):
        k = t * T
        sA[ty, tx] = A[row, k + tx] if row < M and k + tx < K else float32(0.0)
        sB[ty, tx] = B[k + ty, col] if k + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        for kk in range(T):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_naive(A, B, C, M, N, K):  # right, but reads every operand from global memory
    col = cuda.blockIdx.x * T + cuda.threadIdx.x
    row = cuda.blockIdx.y * T + cuda.threadIdx.y
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_multiples_only(A, B, C, M, N, K):  # no bounds checks: right only for multiples
    sA = cuda.shared.array((T, T), float32)
    sB = cuda.shared.array((T, T), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * T + ty
    col = cuda.blockIdx.x * T + tx
    acc = float32(0.0)
    for t in range(K // T):
        sA[ty, tx] = A[row, t * T + tx]
        sB[ty, tx] = B[t * T + ty, col]
        cuda.syncthreads()
        for kk in range(T):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()
    C[row, col] = acc


# --------------------------------------------------------------------------- 5. register tiles


def matmul_coarse(A, B, C, M, N, K):
    sA = cuda.shared.array((T, T), float32)
    sB = cuda.shared.array((T, T), float32)
    acc = cuda.local.array(R, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y  # ty in 0..T/R-1: this thread's R rows
    row0 = cuda.blockIdx.y * T + ty * R
    col = cuda.blockIdx.x * T + tx
    for r in range(R):
        acc[r] = float32(0.0)
    for t in range((K + T - 1) // T):
        k = t * T
        for r in range(R):  # each thread loads R elements of each tile
            a_row, b_row = cuda.blockIdx.y * T + ty * R + r, k + ty * R + r
            ok_a = a_row < M and k + tx < K
            sA[ty * R + r, tx] = A[a_row, k + tx] if ok_a else float32(0.0)
            sB[ty * R + r, tx] = B[b_row, col] if b_row < K and col < N else float32(0.0)
        cuda.syncthreads()
        for kk in range(T):
            b = sB[kk, tx]  # one load of B, reused for R outputs
            for r in range(R):
                acc[r] += sA[ty * R + r, kk] * b
        cuda.syncthreads()
    for r in range(R):
        if row0 + r < M and col < N:
            C[row0 + r, col] = acc[r]


def matmul_coarse_no_reuse(A, B, C, M, N, K):  # right, but loads B again for every output
    sA = cuda.shared.array((T, T), float32)
    sB = cuda.shared.array((T, T), float32)
    acc = cuda.local.array(R, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0 = cuda.blockIdx.y * T + ty * R
    col = cuda.blockIdx.x * T + tx
    for r in range(R):
        acc[r] = float32(0.0)
    for t in range((K + T - 1) // T):
        k = t * T
        for r in range(R):
            a_row, b_row = cuda.blockIdx.y * T + ty * R + r, k + ty * R + r
            ok_a = a_row < M and k + tx < K
            sA[ty * R + r, tx] = A[a_row, k + tx] if ok_a else float32(0.0)
            sB[ty * R + r, tx] = B[b_row, col] if b_row < K and col < N else float32(0.0)
        cuda.syncthreads()
        for r in range(R):
            for kk in range(T):
                acc[r] += sA[ty * R + r, kk] * sB[kk, tx]
        cuda.syncthreads()
    for r in range(R):
        if row0 + r < M and col < N:
            C[row0 + r, col] = acc[r]


# --------------------------------------------------------------------------- 6. softmax


def softmax_three_pass(x, out, rows, cols):
    part = cuda.shared.array(W, float32)
    row, lane = cuda.blockIdx.x, cuda.threadIdx.x
    m = -math.inf
    for j in range(lane, cols, W):  # lane j reads columns j, j + 32, ...: coalesced
        v = x[row, j]
        m = v if v > m else m
    part[lane] = m
    cuda.syncthreads()
    m = part[0]
    for k in range(1, W):
        m = part[k] if part[k] > m else m
    cuda.syncthreads()  # everyone has read the maxima before they are overwritten
    d = float32(0.0)
    for j in range(lane, cols, W):
        d += math.exp(x[row, j] - m)
    part[lane] = d
    cuda.syncthreads()
    d = float32(0.0)
    for k in range(W):
        d += part[k]
    for j in range(lane, cols, W):
        out[row, j] = math.exp(x[row, j] - m) / d


def softmax_online(x, out, rows, cols):
    pm = cuda.shared.array(W, float32)
    pd = cuda.shared.array(W, float32)
    row, lane = cuda.blockIdx.x, cuda.threadIdx.x
    m, d = -math.inf, float32(0.0)
    for j in range(lane, cols, W):  # one pass: running maximum and rescaled running sum
        v = x[row, j]
        m_new = v if v > m else m
        d = d * math.exp(m - m_new) + math.exp(v - m_new)
        m = m_new
    pm[lane] = m
    pd[lane] = d
    cuda.syncthreads()
    big = pm[0]
    for k in range(1, W):
        big = pm[k] if pm[k] > big else big
    total = float32(0.0)
    for k in range(W):
        if pd[k] > 0:  # a lane that saw no column has d = 0 (and m = -inf)
            total += pd[k] * math.exp(pm[k] - big)
    for j in range(lane, cols, W):
        out[row, j] = math.exp(x[row, j] - big) / total


def softmax_one_lane(x, out, rows, cols):  # right, but lane 0 does the whole row
    row = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        m = -math.inf
        for j in range(cols):
            v = x[row, j]
            m = v if v > m else m
        d = 0.0
        for j in range(cols):
            d += math.exp(x[row, j] - m)
        for j in range(cols):
            out[row, j] = math.exp(x[row, j] - m) / d


def softmax_no_max(x, out, rows, cols):  # exp of large values overflows
    part = cuda.shared.array(W, float32)
    row, lane = cuda.blockIdx.x, cuda.threadIdx.x
    d = float32(0.0)
    for j in range(lane, cols, W):
        d += math.exp(x[row, j])
    part[lane] = d
    cuda.syncthreads()
    d = float32(0.0)
    for k in range(W):
        d += part[k]
    for j in range(lane, cols, W):
        out[row, j] = math.exp(x[row, j]) / d


# --------------------------------------------------------------------------- 7. attention


def attention_tiled(Q, K, V, O, n, d):
    sQ = cuda.shared.array((BR, D_PAD), float32)
    sK = cuda.shared.array((BR, D), float32)
    sV = cuda.shared.array((BR, D), float32)
    acc = cuda.local.array(D, float32)
    t = cuda.threadIdx.x
    first = cuda.blockIdx.x * BR  # this block's first query row
    for e in range(t, BR * D, BR):  # neighbouring threads, neighbouring elements
        r, c = e // D, e % D
        sQ[r, c] = Q[first + r, c] if first + r < n else float32(0.0)
    for c in range(D):
        acc[c] = float32(0.0)
    m, denom = -math.inf, float32(0.0)
    scale = 1.0 / math.sqrt(d)
    for k0 in range(0, n, BR):  # one tile of keys and values at a time
        cuda.syncthreads()  # the previous tile is used up (and sQ is complete)
        for e in range(t, BR * D, BR):
            r, c = e // D, e % D
            ok = k0 + r < n
            sK[r, c] = K[k0 + r, c] if ok else float32(0.0)
            sV[r, c] = V[k0 + r, c] if ok else float32(0.0)
        cuda.syncthreads()
        for j in range(BR if n - k0 > BR else n - k0):
            s = float32(0.0)
            for c in range(D):
                s += sQ[t, c] * sK[j, c]
            s *= scale
            m_new = s if s > m else m
            fix = math.exp(m - m_new)  # rescale what was summed under the old maximum
            p = math.exp(s - m_new)
            denom = denom * fix + p
            for c in range(D):
                acc[c] = acc[c] * fix + p * sV[j, c]
            m = m_new
    cuda.syncthreads()
    for c in range(D):
        sQ[t, c] = acc[c] / denom if denom > 0 else float32(0.0)  # O, staged in sQ
    cuda.syncthreads()
    for e in range(t, BR * D, BR):
        r, c = e // D, e % D
        if first + r < n:
            O[first + r, c] = sQ[r, c]


def attention_row_per_thread(Q, K, V, O, n, d):  # right, but no tiles: K and V per thread
    i = cuda.grid(1)
    if i < n:
        m, denom = -math.inf, 0.0
        acc = cuda.local.array(D, float32)
        for c in range(D):
            acc[c] = 0.0
        for j in range(n):
            s = 0.0
            for c in range(D):
                s += Q[i, c] * K[j, c]
            s /= math.sqrt(d)
            m_new = s if s > m else m
            fix, p = math.exp(m - m_new), math.exp(s - m_new)
            denom = denom * fix + p
            for c in range(D):
                acc[c] = acc[c] * fix + p * V[j, c]
            m = m_new
        for c in range(D):
            O[i, c] = acc[c] / denom


SOLUTIONS = {
    "copy": copy_coalesced,
    "transpose": transpose_padded,
    "reduce": reduce_sequential,
    "matmul": matmul_tiled,
    "matmul_coarse": matmul_coarse,
    "softmax": softmax_three_pass,
    "online_softmax": softmax_online,
    "attention": attention_tiled,
}
