"""Worked solutions of the kernel warm-up, and a wrong kernel for each step.

They live here and in the warm-up lab's hidden solution cells, never in the installed
package. The simulator supplies ``cuda``; ``numba.float32`` names shared arrays' dtype as in
Numba's documentation.
"""

# ruff: noqa: F821 - `cuda` comes from the simulator or Numba

import numba

B = 8  # threads per block where a step launches several blocks
TAPS = 3  # the convolution's filter length
MAX_N = 32  # the largest n a one-block step is graded on, rounded up to a warp


def triple(a, out):
    out[cuda.threadIdx.x] = 3 * a[cuda.threadIdx.x]


def triple_guarded(a, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 3 * a[i]


def triple_unguarded(a, out, n):  # the last block's spare threads read past the end
    i = cuda.grid(1)
    out[i] = 3 * a[i]


def pool_shared(a, out, n):
    s = cuda.shared.array(MAX_N, numba.float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    cuda.syncthreads()
    total = s[i]
    if i > 0:
        total += s[i - 1]
    if i + 1 < n:
        total += s[i + 1]
    out[i] = total / 3


def pool_global(a, out, n):  # right, but reads each element up to three times from global
    i = cuda.threadIdx.x
    total = a[i]
    if i > 0:
        total += a[i - 1]
    if i + 1 < n:
        total += a[i + 1]
    out[i] = total / 3


def dot_shared(a, b, out, n):
    s = cuda.shared.array(MAX_N, numba.float32)
    i = cuda.threadIdx.x
    s[i] = a[i] * b[i]
    cuda.syncthreads()
    if i == 0:
        total = 0.0
        for j in range(n):
            total += s[j]
        out[0] = total


def dot_atomic(a, b, out, n):  # right once out starts at 0: it does not here
    cuda.atomic.add(out, 0, a[cuda.threadIdx.x] * b[cuda.threadIdx.x])


def conv_tiled(a, w, out, n):
    s = cuda.shared.array(B + TAPS - 1, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = a[i] if i < n else 0.0
    if t < TAPS - 1:
        j = i + B
        s[t + B] = a[j] if j < n else 0.0
    cuda.syncthreads()
    if i < n:
        total = 0.0
        for k in range(TAPS):
            total += w[k] * s[t + k]
        out[i] = total


def conv_global(a, w, out, n):  # right, but reads every element TAPS times from global
    i = cuda.grid(1)
    if i < n:
        total = 0.0
        for k in range(TAPS):
            if i + k < n:
                total += w[k] * a[i + k]
        out[i] = total


def scan_shared(a, out, n):
    s = cuda.shared.array(MAX_N, numba.float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < n:
        v = s[i - step] if i >= step else 0.0
        cuda.syncthreads()
        s[i] += v
        cuda.syncthreads()
        step *= 2
    out[i] = s[i]


def scan_no_barrier(a, out, n):  # reads a neighbour's sum while the neighbour updates it
    s = cuda.shared.array(MAX_N, numba.float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    cuda.syncthreads()
    step = 1
    while step < n:
        if i >= step:
            s[i] += s[i - step]
        step *= 2
    out[i] = s[i]


SOLUTIONS = {"map": triple, "guard": triple_guarded, "pool": pool_shared, "dot": dot_shared,
             "conv": conv_tiled, "scan": scan_shared}  # fmt: skip
WRONG = {"guard": triple_unguarded, "pool": pool_global, "dot": dot_atomic,
         "conv": conv_global, "scan": scan_no_barrier}  # fmt: skip
