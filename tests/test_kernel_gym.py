"""The kernel gym: worked kernels pass, wrong ones are caught with the right sentence, and the
counts of the worked kernels are the ones derived by hand below."""

import math
import re
from pathlib import Path

import gym_solutions as sol
import numpy as np
import pytest
import torch

from gpulab.kernels import cuda_kernels as ck
from gpulab.kernels import gym
from gpulab.kernels.gym_tasks import TASKS, attention_bytes, get_task


@pytest.fixture(scope="module")
def reports():
    """Every worked solution graded once (a few seconds in all)."""
    return {task: gym.grade_kernel(kernel, task, quiet=True) for task, kernel in
            sol.SOLUTIONS.items()}  # fmt: skip


def test_there_is_a_worked_solution_for_every_task():
    assert set(sol.SOLUTIONS) == set(TASKS)


@pytest.mark.parametrize("task", sorted(sol.SOLUTIONS))
def test_the_worked_solutions_pass(reports, task):
    report = reports[task]
    assert report.passed, str(report)
    assert report.score == 1.0 and report.first_problem == ""
    assert str(report).splitlines()[-1] == "Passed: right on every shape, every target met."


# The counts on each task's count shape, derived by hand:
#
# copy, n = 2048: 4 blocks x 128 threads, 4 elements each = 2048 loads = 64 warp loads
#   (16 warps x 4); each reads 32 neighbouring floats = 128 bytes = 4 sectors: 256 sectors
#   for src, the same for dst.
# transpose, 64 x 64 padded: 4 blocks of 32 warps; a warp reads 32 floats of a row of a
#   (4 sectors) and writes 32 of a row of out: 128 x 4 = 512 sectors each way. Rows of the
#   tile are 33 words apart and 33 = 1 mod 32, so a column's 32 words sit in 32 banks: no
#   conflict. One barrier per block: 4.
# reduce, n = 1024: 8 blocks; thread 0 of each adds the block's total: 8 atomics. Per
#   block: 1 barrier after the load and 1 per halving (64, 32, ..., 1: 7) = 8; 64 in all.
#   Requests per block: 4 loads of x + 4 stores to s (128 lanes each), then `s[tid] +=
#   s[tid + step]` is 3 requests per active warp: step 64 two warps (192 lanes), step 32
#   one warp (96), steps 16, 8, 4, 2, 1 one warp each (48, 24, 12, 6, 3 lanes), and thread
#   0's read of s[0] and its atomic (1 lane each): 34 requests, 639 lanes:
#   639 / (34 x 32) = 0.587.
# matmul, M = N = K = 32, T = 16: a 2 x 2 grid; each element of A is loaded by both blocks
#   of its block row, each of B by both of its block column: 2 x 32 x 32 x 2 = 4096.
# matmul_coarse, same shape, R = 4: per thread and tile, 16 loads of sB and 16 x 4 of sA =
#   80; 64 threads x 4 blocks x 2 tiles x 80 = 40,960 over 1,024 outputs = 40
#   (= 32 x (1 + 1/4)).
# softmax, 4 x 256: three passes over each row: 3 loads per element; online: 2.
# attention, n = 64, d = 8: 2 blocks of 32 query rows; each reads its Q tile (32 x 8 floats
#   = 32 sectors) once, the 2 tiles of K and of V (32 sectors each) and writes its O tile
#   (32 sectors): 2 x (32 + 2 x 32 + 2 x 32 + 32) = 384 sectors = 12,288 bytes.
def test_the_counts_of_the_worked_kernels_are_the_hand_derived_ones(reports):
    c = reports["copy"].counts
    assert (c.global_loads, c.global_requests, c.sectors) == (2048, 128, 512)
    assert c.by_array["src", "load"]["sectors"] == c.by_array["dst", "store"]["sectors"] == 256

    c = reports["transpose"].counts
    assert c.by_array["a", "load"]["sectors"] == c.by_array["out", "store"]["sectors"] == 512
    assert (c.bank_conflicts, c.barriers) == (0, 4)

    c = reports["reduce"].counts
    assert (c.atomics, c.barriers) == (8, 64)
    assert c.active_fraction == pytest.approx(639 / (34 * 32))

    assert reports["matmul"].counts.global_loads == 2 * 32 * 32 * 2 == 4096
    c = reports["matmul_coarse"].counts
    shared = sum(r["accesses"] for (name, kind), r in c.by_array.items()
                 if kind == "load" and r["space"] == "shared")  # fmt: skip
    assert shared == 64 * 4 * 2 * (16 + 16 * 4) == 40 * 32 * 32

    assert reports["softmax"].counts.by_array["x", "load"]["accesses"] == 3 * 4 * 256
    assert reports["online_softmax"].counts.by_array["x", "load"]["accesses"] == 2 * 4 * 256

    assert reports["attention"].counts.global_bytes == 2 * (32 + 4 * 32 + 32) * 32 == 12288


def test_attention_bytes_against_the_three_kernel_version():
    # Q K^T reads 2 n d, writes n^2; softmax reads and writes n^2; P V reads n^2 + n d and
    # writes n d: 4 n^2 + 4 n d floats. Tiled: Q and O once, K and V once per block of rows.
    n, d = 64, 8
    assert attention_bytes(n, d) == {
        "tiled": 4 * (2 * n * d + 2 * n * d * 2),
        "three_kernels": 4 * (4 * n * n + 4 * n * d),
    }


WRONG = [
    (sol.copy_chunked, "copy",
     "each warp load touches 16 sectors where 4 would do: make neighbouring threads touch"),
    (sol.copy_unguarded, "copy",
     "n = 1: out of bounds: thread 0 of block 0 reads src[128]"),
    (sol.transpose_naive, "transpose",
     "each warp store to out touches 32 sectors where 4 would do"),
    (sol.transpose_unpadded, "transpose",
     "3968 extra passes from bank conflicts: a warp reading a column of a 32-wide tile hits "
     "one bank 32 times; pad the tile to (32, 33)"),
    (sol.transpose_no_barrier, "transpose", "race on tile["),
    (sol.transpose_early_return, "transpose",
     "1 x 1: deadlock in block 0: 1 of its 1024 threads reached the barrier at line 8 of "
     "transpose_early_return (`cuda.syncthreads()`), but 1023 returned without reaching it"),
    (sol.reduce_atomic, "reduce",
     "1024 atomic adds to one address where one per block (8) would do"),
    (sol.reduce_interleaved, "reduce", "only 25% of the lanes are active per request"),
    (sol.reduce_plain_add, "reduce",
     "n = 100: race on out[0]: thread 1 of block 0 reads it at line 4 of reduce_plain_add"),
    (sol.reduce_no_barrier, "reduce", "put cuda.syncthreads() between the write and the reads"),
    (sol.matmul_naive, "matmul", "65,536 global loads where 4,096 would do"),
    (sol.matmul_multiples_only, "matmul",
     "M, N, K = 1, 1, 1: out of bounds: thread (1, 0) of block 0 writes C[0, 1]"),
    (sol.matmul_coarse_no_reuse, "matmul_coarse",
     "64 shared-memory loads per output where 40 would do"),
    (sol.softmax_one_lane, "softmax", "only 3% of a warp's lanes load x"),
    (sol.softmax_no_max, "softmax", "overflowed float32; exp() of a large number does"),
    (sol.softmax_three_pass, "online_softmax",
     "x is read 3 times per element where 2 would do: keep a running maximum"),
    (sol.attention_row_per_thread, "attention", "1,130,496 bytes moved where 12,288 would do"),
]  # fmt: skip


@pytest.mark.parametrize("kernel, task, sentence", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_wrong_kernels_are_caught_with_the_right_sentence(kernel, task, sentence):
    report = gym.grade_kernel(kernel, task, quiet=True)
    assert not report.passed
    assert sentence in report.first_problem, report.first_problem
    text = str(report)
    assert "Traceback" not in text and "\nTo change first: " in text
    verdict = text[text.index("To change first: ") :]
    assert all(len(line) <= gym.WRAP for line in verdict.splitlines())  # wrapped for the page
    assert " ".join(line.strip() for line in verdict.splitlines()) == (
        f"To change first: {report.first_problem}."
    )


def test_the_wrong_kernels_cover_every_task_and_every_kind_of_bug():
    assert {task for _, task, _ in WRONG} == set(TASKS)
    said = " ".join(s for *_, s in WRONG)
    for kind in ("race", "out of bounds", "deadlock", "sectors where", "wrong"):
        assert kind in said or kind == "wrong"  # wrong results: the next test


def test_a_wrong_result_names_the_element_and_unwritten_ones_are_told_apart():
    def copy_one(src, dst, n):  # one element per thread: three quarters never written
        i = cuda.grid(1)  # noqa: F821
        if i < n:
            dst[i] = src[i]

    def copy_off_by_one(src, dst, n):
        i = cuda.grid(1)  # noqa: F821
        stride = cuda.gridsize(1)  # noqa: F821
        for j in range(4):
            k = i + j * stride
            if k < n:
                dst[k] = src[k] + 1.0

    first = gym.grade_kernel(copy_one, "copy", quiet=True).first_problem
    assert first == (
        "wrong result for n = 1000: 744 of 1000 elements of dst are wrong; 744 were never "
        "written, the first dst[256]: check that every element has a thread (grid x block x "
        "elements per thread covers them all)"
    )
    # n = 1 and 100 fit in one block of 128 threads; n = 1000 gets 2 blocks (256 threads).
    report = gym.grade_kernel(copy_one, "copy", quiet=True)
    assert [s.ok for s in report.shapes] == [True, True, False, False]
    assert report.score == 0.5 and report.targets == ()
    off = gym.grade_kernel(copy_off_by_one, "copy", quiet=True).first_problem
    assert off.startswith("wrong result for n = 1: 1 of 1 elements of dst are wrong, the first")


def test_an_exception_in_the_kernel_is_a_sentence_with_its_line():
    def typo(src, dst, n):
        i = cuda.grid(1)  # noqa: F821
        if i < n:
            dst[i] = scr[i]  # noqa: F821

    report = gym.grade_kernel(typo, "copy", quiet=True)
    assert report.first_problem == (
        "n = 1: the kernel raised NameError at line 4 of typo (`dst[i] = scr[i]`): "
        "name 'scr' is not defined"
    )


def _reduce_spinning(x, out, n):  # touches no memory once it spins
    while True:
        pass


def _reduce_never_halved(x, out, n):  # the tree's step is never halved
    s = cuda.shared.array(128, float32)  # noqa: F821
    tid = cuda.threadIdx.x  # noqa: F821
    i = cuda.grid(1)  # noqa: F821
    s[tid] = x[i] if i < n else 0.0
    cuda.syncthreads()  # noqa: F821
    step = 64
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()  # noqa: F821
    if tid == 0:
        cuda.atomic.add(out, 0, s[0])  # noqa: F821


@pytest.mark.parametrize("kernel, line", [(_reduce_spinning, "line 2 of _reduce_spinning "
                                           "(`while True:`)"),
                                          (_reduce_never_halved, "of _reduce_never_halved")])
def test_an_endless_kernel_is_reported_within_the_time_limit(monkeypatch, kernel, line):
    import time

    assert 1 <= gym.GRADE_TIME_LIMIT_S <= 8  # a wrong kernel is reported within ~10 s
    monkeypatch.setattr(gym, "GRADE_TIME_LIMIT_S", 0.5)
    start = time.perf_counter()
    report = gym.grade_kernel(kernel, "reduce", quiet=True)
    assert time.perf_counter() - start < 4  # one launch waited for, not one per shape
    first = report.first_problem
    assert first.startswith("n = 1: the kernel ran for more than 0.5 s of simulation"), first
    assert line in first
    assert first.endswith("look for a loop whose condition never changes (a step that is "
                          "never halved, an index never advanced)")  # fmt: skip
    assert [s.problem for s in report.shapes[1:]] == (
        ["not run: the kernel did not end on an earlier shape"] * (len(report.shapes) - 1)
    )


def test_a_float_index_is_reported_as_one():
    def copy_halved(src, dst, n):
        i = cuda.grid(1)  # noqa: F821
        if i < n:
            dst[i / 1] = src[i]

    assert gym.grade_kernel(copy_halved, "copy", quiet=True).first_problem == (
        "n = 1: dst[0.0]: an index must be an integer; thread 0 of block 0 writes it at "
        "line 4 of copy_halved (`dst[i / 1] = src[i]`): `/` gives a float in Python even "
        "for two integers, so divide with `//` (or convert with int())"
    )


def test_unsupported_parts_of_cuda_are_named():
    def shuffle(x, out, n):
        v = cuda.shfl_down_sync(cuda.activemask(), x[cuda.grid(1)], 1)  # noqa: F821
        out[0] = v

    first = gym.grade_kernel(shuffle, "reduce", quiet=True).first_problem
    assert first.startswith("n = 1: cuda.activemask is refused by the course's simulator "
                            "because its value depends on which lanes a divergent branch")


def test_a_missing_answer_and_a_wrong_signature_are_said_not_raised(capsys):
    report = gym.grade_kernel(None, "copy")
    assert report.score is None and not report.passed
    assert capsys.readouterr().out == (
        "Kernel gym, task 'copy': no kernel yet; write it above, set answer to it, run this "
        "cell again.\n"
    )

    def two(src, dst):
        pass

    report = gym.grade_kernel(two, "copy", quiet=True)
    assert report.first_problem == (
        "two takes 2 arguments (src, dst); the copy task launches it with 3: src, dst, n"
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: gym.grade_kernel(sol.copy_coalesced, "cpy"), ValueError, "task='cpy'"),
        (lambda: gym.grade_kernel(sol.copy_coalesced, 3), TypeError, "task=3"),
        (lambda: gym.grade_kernel(42, "copy"), TypeError, "kernel=42"),
        (lambda: gym.grade_kernel(sol.copy_coalesced, "copy", quiet=1), TypeError, "quiet=1"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_get_task_returns_a_task_unchanged():
    assert get_task(TASKS["copy"]) is TASKS["copy"]


def test_the_worked_solutions_are_not_in_the_package():
    # A learner must not find them with `import`: no line of a worked kernel's body that
    # is specific to it appears anywhere in gpulab/.
    source = "\n".join(p.read_text() for p in Path(gym.__file__).parents[1].rglob("*.py"))
    for name in ("copy_coalesced", "reduce_sequential", "matmul_coarse", "softmax_online",
                 "attention_tiled"):  # fmt: skip
        assert f"def {name}" not in source
    for line in ("b = sB[kk, tx]", "d = d * math.exp(m - m_new)", "denom = denom * fix + p"):
        assert line not in source


def test_without_a_gpu_the_timing_line_says_why():
    if ck.numba_cuda_available():
        pytest.skip("a GPU is here: the real timing is tested by the gym labs on it")
    line = gym.time_on_gpu_line(sol.copy_coalesced, "copy")
    assert line.startswith("GPU timing: not measured here (")
    report = gym.grade_kernel(sol.copy_coalesced, "copy", time_on_gpu=True, quiet=True)
    assert report.passed and report.gpu == line and line in str(report)


class _SimulatedLaunch:
    """Stands in for a Numba dispatcher: ``fake[grid, block](*tensors)`` runs the simulator
    on the tensors' memory (CPU tensors share it with NumPy)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.launches = 0

    def __getitem__(self, config):
        grid, block = config

        def run(*args):
            self.launches += 1
            arrays = [a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
            gl_simulate(self.kernel, grid, block, *arrays, count=False)

        return run


def gl_simulate(*args, **kwargs):
    from gpulab.kernels.simulator import simulate

    return simulate(*args, **kwargs)


@pytest.fixture
def fake_numba_gpu(monkeypatch):
    """Numba "compiles" to the simulator, torch's "cuda" is the CPU, the device is named."""
    class Launches(list):
        converted: list

    launches = Launches()

    def compile_for_gpu(kernel):
        launches.append(_SimulatedLaunch(kernel))
        return launches[-1]

    monkeypatch.setattr(ck, "numba_cuda_available", lambda: True)
    monkeypatch.setattr(ck, "compile_for_gpu", compile_for_gpu)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "Fake GPU")
    converted = []

    def as_cuda_arrays(values):  # Numba's device arrays, standing in: the tensors themselves
        converted.extend(v for v in values if isinstance(v, torch.Tensor))
        return list(values)

    monkeypatch.setattr(ck, "as_cuda_arrays", as_cuda_arrays)
    launches.converted = converted
    return launches


def test_on_a_gpu_the_kernel_is_checked_and_timed_against_torch(fake_numba_gpu, monkeypatch):
    from gpulab.kernels import gym_tasks

    small = gym_tasks.Task(**{**TASKS["copy"].__dict__, "gpu_shape": (1000,)})
    monkeypatch.setitem(gym_tasks.TASKS, "copy", small)
    timing = gym.time_kernel_on_gpu(sol.copy_coalesced, "copy", device="cpu",
                                    min_run_time_s=0.01)  # fmt: skip
    assert fake_numba_gpu[0].launches >= 2  # the check, then the timed calls
    assert len(fake_numba_gpu.converted) == 2  # src and dst, once: not inside the timed calls
    assert timing.device == "Fake GPU" and timing.shape == "n = 1000"
    assert timing.kernel_s > 0 and timing.torch_s > 0
    assert re.fullmatch(
        r"measured on Fake GPU, n = 1000, \d{4}-\d\d-\d\d: your kernel [\d.]+ ms, torch "
        r"[\d.]+ ms \(median; torch / yours = [\d.]+\)",
        timing.line,
    )


def test_on_a_gpu_a_kernel_that_is_wrong_at_the_timed_shape_is_refused(fake_numba_gpu,
                                                                       monkeypatch):  # fmt: skip
    from gpulab.kernels import gym_tasks

    def copy_half(src, dst, n):  # right for the graded shapes below 4 x 128, wrong past them
        i = cuda.grid(1)  # noqa: F821
        if i < n and i < 512:
            dst[i] = src[i]

    small = gym_tasks.Task(**{**TASKS["copy"].__dict__, "gpu_shape": (1000,)})
    monkeypatch.setitem(gym_tasks.TASKS, "copy", small)
    with pytest.raises(RuntimeError, match="the compiled kernel's result for n = 1000 differs"):
        gym.time_kernel_on_gpu(copy_half, "copy", device="cpu", min_run_time_s=0.01)


def test_grade_kernel_times_on_a_gpu_through_the_report(fake_numba_gpu, monkeypatch):
    from gpulab.kernels import gym_tasks

    small = gym_tasks.Task(**{**TASKS["copy"].__dict__, "gpu_shape": (1000,)})
    monkeypatch.setitem(gym_tasks.TASKS, "copy", small)
    real = gym.time_kernel_on_gpu
    monkeypatch.setattr(gym, "time_kernel_on_gpu", lambda k, t: real(k, t, device="cpu",
                                                                     min_run_time_s=0.01))
    report = gym.grade_kernel(sol.copy_coalesced, "copy", time_on_gpu=True, quiet=True)
    assert report.passed and report.gpu.startswith("measured on Fake GPU, n = 1000, ")
    assert f"  {report.gpu}" in str(report).splitlines()
    assert fake_numba_gpu[0].launches >= 2

    wrong = gym.grade_kernel(sol.copy_unguarded, "copy", time_on_gpu=True, quiet=True)
    assert wrong.gpu == "" and len(fake_numba_gpu) == 1  # a wrong kernel is not timed


def test_the_reduction_target_is_a_fraction_between_the_two_trees():
    # The sequential tree (0.587, derived above) meets the 50% target; the interleaved one
    # (639 lanes over 79 requests: 0.253) does not.
    target = next(t for t in TASKS["reduce"].targets if t.percent)
    assert target.met(639 / (34 * 32), 0.5) and not target.met(639 / (79 * 32), 0.5)
    assert math.isclose(
        gym.grade_kernel(sol.reduce_interleaved, "reduce", quiet=True).counts.active_fraction,
        639 / (79 * 32),
    )
    assert np.isclose(639 / (34 * 32), 0.587, atol=1e-3)


@pytest.mark.parametrize("cc", [(7, 5), (9, 0)])
def test_the_worked_kernels_compile_with_numba_for_sm75_and_sm90(cc):
    cuda = pytest.importorskip("numba.cuda", reason="Numba is not installed")
    f1, f2 = "float32[:]", "float32[:,:]"
    signatures = {
        "copy": f"void({f1}, {f1}, int64)",
        "transpose": f"void({f2}, {f2}, int64, int64)",
        "reduce": f"void({f1}, {f1}, int64)",
        "matmul": f"void({f2}, {f2}, {f2}, int64, int64, int64)",
        "matmul_coarse": f"void({f2}, {f2}, {f2}, int64, int64, int64)",
        "softmax": f"void({f2}, {f2}, int64, int64)",
        "online_softmax": f"void({f2}, {f2}, int64, int64)",
        "attention": f"void({f2}, {f2}, {f2}, {f2}, int64, int64)",
    }
    for task, kernel in sol.SOLUTIONS.items():
        try:
            ptx, _ = cuda.compile_ptx(kernel, signatures[task], cc=cc)
        except Exception as exc:  # no NVVM library on this machine
            if "NVVM" in str(exc) or "libNVVM" in str(exc):
                pytest.skip(f"Numba finds no NVVM to compile with: {exc}")
            raise
        assert f".target sm_{cc[0]}{cc[1]}" in ptx
        assert ("bar.sync" in ptx) == (task != "copy"), task  # a barrier where one is written


def test_the_report_knows_its_blocks_for_counts_per_block(reports):
    assert reports["reduce"].blocks == 1024 // 128
    assert reports["matmul"].blocks == 2 * 2  # a 2 x 2 grid of 16 x 16 tiles for n = 32
    assert "also counted: 8 barriers per block" in str(reports["reduce"])


def test_the_coarse_task_for_another_r_has_its_own_launch_and_target():
    import types

    from gpulab.kernels.gym_tasks import coarse_task

    same = coarse_task()
    assert (same.name, same.title) == (TASKS["matmul_coarse"].name, TASKS["matmul_coarse"].title)
    task = coarse_task(8)
    assert task.name == "matmul_coarse_r8" and task.launch((32, 32, 32)) == ((2, 2), (16, 2))
    assert task.targets[1].goal((32, 32, 32)) == 32 * (1 + 1 / 8)
    k = sol.matmul_coarse
    eight = types.FunctionType(k.__code__, {**k.__globals__, "R": 8}, k.__name__)
    assert gym.grade_kernel(eight, task, quiet=True).passed
    four = gym.grade_kernel(k, task, quiet=True)  # R = 4 in blocks of 16 x 2: half of C
    assert not four.passed and "wrong result" in four.first_problem
    for bad, error in ((3, ValueError), (0, ValueError), (2.0, TypeError)):
        with pytest.raises(error, match="rows_per_thread="):
            coarse_task(bad)
