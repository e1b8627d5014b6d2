"""Every hint of the kernel gym is true of the kernel it is given: uninitialised
accumulators, non-finite results from a division, atomics counted where they land, warp-level
reductions; and a custom task, float64 included, is graded without a traceback."""

# ruff: noqa: F821, N803, N806 - `cuda` comes from the simulator or Numba; CUDA's names

import numba
import pytest

from gpulab.kernels import gym

T = 16  # the matmul task's tile
RB = 128  # threads per block of the reduce task


def matmul_uninitialised(A, B, C, M, N, K):  # accumulates into C, which nobody set to 0
    row = cuda.blockIdx.y * T + cuda.threadIdx.y
    col = cuda.blockIdx.x * T + cuda.threadIdx.x
    if row < M and col < N:
        for k in range(K):
            C[row, col] += A[row, k] * B[k, col]


def copy_divided_by_zero(src, dst, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dst[i] = src[i] / (src[i] - src[i])  # 0 in the denominator: inf (or nan) on a GPU
        i += stride


def copy_python_zero_division(src, dst, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dst[i] = 1.0 / (i - i)
        i += stride


def copy_overflow_without_exp(src, dst, n):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dst[i] = src[i] * numba.float32(1e30) * numba.float32(1e30)
        i += stride


def reduce_shared_atomics(x, out, n):  # atomics into shared memory, one global per block
    total = cuda.shared.array(1, numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if tid == 0:
        total[0] = 0.0
    cuda.syncthreads()
    if i < n:
        cuda.atomic.add(total, 0, x[i])
    cuda.syncthreads()
    if tid == 0:
        cuda.atomic.add(out, 0, total[0])


def reduce_warp_synchronous(x, out, n):  # the last warp without cuda.syncwarp()
    s = cuda.shared.array(RB, numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < n else numba.float32(0.0)
    cuda.syncthreads()
    step = RB // 2
    while step > 32:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid < 32:
        while step > 0:
            s[tid] += s[tid + step]
            step //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


def reduce_warp_with_syncwarp(x, out, n):  # the same, each step's read and write apart
    s = cuda.shared.array(RB, numba.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = x[i] if i < n else numba.float32(0.0)
    cuda.syncthreads()
    step = RB // 2
    while step > 32:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid < 32:
        while step > 0:
            v = s[tid + step]
            cuda.syncwarp()
            s[tid] += v
            cuda.syncwarp()
            step //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])


CASES = [
    (matmul_uninitialised, "matmul",
     "wrong result for M, N, K = 1, 1, 1: C[0, 0] is read before any thread writes it (an "
     "accumulation such as `C[...] += ...` into an output that holds garbage on a GPU): sum "
     "into a local variable that starts at 0"),
    (copy_divided_by_zero, "copy", "a division by zero gave inf or nan; guard the divisor"),
    (copy_python_zero_division, "copy",
     "the kernel raised ZeroDivisionError at line 5 of copy_python_zero_division "
     "(`dst[i] = 1.0 / (i - i)`): float division by zero; on a GPU a division by zero gives "
     "inf or nan instead"),
    (copy_overflow_without_exp, "copy", "a value overflowed float32; scale the values down first"),
    (reduce_warp_synchronous, "reduce",
     "(the threads are lanes of warp 0: where only one warp's lanes run this part, as inside "
     "`if tid < 32`, use cuda.syncwarp() there instead, since a cuda.syncthreads() that the "
     "other warps skip is a deadlock)"),
]  # fmt: skip


@pytest.mark.parametrize("kernel, task, sentence", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_hint_is_true_of_its_kernel(kernel, task, sentence):
    report = gym.grade_kernel(kernel, task, quiet=True)
    assert not report.passed
    assert sentence in report.first_problem, report.first_problem
    assert "exp()" not in report.first_problem and "never written" not in report.first_problem
    assert "Traceback" not in str(report)


def test_shared_atomics_are_not_counted_as_atomics_to_global_memory():
    report = gym.grade_kernel(reduce_shared_atomics, "reduce", quiet=True)
    assert report.correct, report.first_problem
    atomics = next(t for t in report.targets if t.name == "atomic adds")
    assert (atomics.value, atomics.goal, atomics.met) == (8, 8, True)
    assert (report.counts.atomics, report.counts.shared_atomics) == (1024 + 8, 1024)


def test_a_warp_reduction_with_syncwarp_is_right():
    report = gym.grade_kernel(reduce_warp_with_syncwarp, "reduce", quiet=True)
    assert report.correct, report.first_problem


def _scale_rows(x, out, rows, cols):  # float64 in, float64 out
    r, c = cuda.grid(2)
    if r < rows and c < cols:
        out[r, c] = x[r, c] * (r + 1)


def _scale_rows_off_by_one(x, out, rows, cols):
    r, c = cuda.grid(2)
    if r < rows and c < cols:
        out[r, c] = x[r, c] * r


def test_a_custom_task_with_float64_is_graded_without_a_traceback():
    import numpy as np

    from gpulab.kernels.gym_tasks import custom_task

    task = custom_task(
        "scale_rows", lambda x, rows, cols: x * np.arange(1, rows + 1)[:, None],
        args=("x", "out", "rows", "cols"), arrays={"x": ("rows", "cols"), "out": ("rows", "cols")},
        outputs=("out",), sizes=[{"rows": 1, "cols": 1}, {"rows": 5, "cols": 37}],
        launch=lambda rows, cols: ((-(-rows // 4), -(-cols // 8)), (4, 8)),
        dtypes={"x": np.float64, "out": np.float64}, rtol=1e-12, atol=0.0,
    )  # fmt: skip
    report = gym.grade_kernel(_scale_rows, task, quiet=True)
    assert report.passed and report.targets == ()
    assert str(report).splitlines() == [
        "Kernel gym: _scale_rows on task 'scale_rows'", "  right  rows = 1, cols = 1",
        "  right  rows = 5, cols = 37", "Passed: right on every shape, every target met."]
    wrong = gym.grade_kernel(_scale_rows_off_by_one, task, quiet=True).first_problem
    assert wrong.startswith("wrong result for rows = 1, cols = 1: 1 of 1 elements of out are "
                            "wrong, the first out[0, 0] (0, expected ")  # fmt: skip
    short = gym.grade_kernel(lambda x, out, rows, cols: None, task, quiet=True).first_problem
    assert "1 were never written, the first out[0, 0]" in short
    assert gym.time_on_gpu_line(_scale_rows, task).startswith("GPU timing: not measured (a task")


@pytest.mark.parametrize("change, error, match", [
    (dict(args=("x", "y")), ValueError, "args: 'y' is neither an array"),
    (dict(outputs=("z",)), ValueError, "outputs: 'z' must be an array argument"),
    (dict(sizes=[{"n": 0}]), ValueError, r"sizes\['n'\]"),
    (dict(sizes={"n": 3}), TypeError, "sizes="),
    (dict(reference=3), TypeError, "reference=3"),
    (dict(dtypes={"q": "float64"}), ValueError, "dtypes: 'q' is not an array"),
])  # fmt: skip
def test_a_custom_task_names_what_does_not_fit(change, error, match):
    from gpulab.kernels.gym_tasks import custom_task

    spec = dict(reference=lambda x, n: x, args=("x", "out", "n"),
                arrays={"x": ("n",), "out": ("n",)}, outputs=("out",), sizes=[{"n": 4}],
                launch=lambda n: (1, 32))  # fmt: skip
    with pytest.raises(error, match=match):
        custom_task("t", **{**spec, **change})
