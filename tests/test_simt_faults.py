"""Strict simulation: races, out-of-bounds and negative indices, barriers not every thread
reaches, unsupported parts of CUDA; and the two ways a block with barriers is run agree."""

# ruff: noqa: F821 - the simulator supplies ``cuda`` and ``float32`` to the kernels

import sys

import numpy as np
import pytest

import gpulab as gl
from gpulab.kernels import cuda_kernels as ck
from gpulab.kernels import faults
from gpulab.kernels.simulator import simulate

RNG = np.random.default_rng(0)


def _matrices(n=16):
    a = RNG.standard_normal((n, n)).astype(np.float32)
    return a, a.T.copy(), np.zeros((n, n), np.float32)


def test_a_missing_barrier_is_a_race_in_strict_mode_and_a_wrong_answer_otherwise():
    A, B, C = _matrices()
    simulate(ck.tiled_matmul(8, barrier=False), (2, 2), (8, 8), A, B, C, 16, count=False)
    assert np.abs(C - A @ B).max() > 1.0  # the chapter's demonstration is unchanged
    with pytest.raises(faults.RaceError, match=r"race on sA\[0, 1\]: thread \(1, 0\) of block"):
        simulate(ck.tiled_matmul(8, barrier=False), (2, 2), (8, 8), A, B, C, 16, strict=True)
    C[:] = 0
    c = simulate(ck.tiled_matmul(8), (2, 2), (8, 8), A, B, C, 16, strict=True)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    assert c.barriers == 4 * 2 * 2  # 4 blocks, 2 tiles along k, 2 barriers per tile


def test_threads_of_different_blocks_writing_one_element_race():
    def last_writer_wins(out):
        out[0] = cuda.blockIdx.x

    with pytest.raises(faults.RaceError, match="a thread of another block wrote it"):
        simulate(last_writer_wins, 2, 1, np.zeros(1), strict=True)
    simulate(last_writer_wins, 2, 1, np.zeros(1))  # not strict: runs, as before


def test_reads_by_many_threads_then_a_write_by_one_is_a_race_until_a_barrier():
    def broadcast(out, fence):
        s = cuda.shared.array(1, float32)
        if cuda.threadIdx.x == 0:
            s[0] = 1.0
        cuda.syncthreads()
        out[cuda.threadIdx.x] = s[0]  # every thread reads
        if fence:
            cuda.syncthreads()
        if cuda.threadIdx.x == 5:
            s[0] = 2.0  # one writes: after the others read it only with the barrier

    simulate(broadcast, 1, 8, np.zeros(8), 1, strict=True)
    with pytest.raises(faults.RaceError, match=r"thread 5 of block 0 writes it .* other threads"):
        simulate(broadcast, 1, 8, np.zeros(8), 0, strict=True)


def test_atomics_do_not_race_and_are_counted():
    def total(x, out):
        cuda.atomic.add(out, 0, x[cuda.grid(1)])
        cuda.atomic.max(out, 1, x[cuda.grid(1)])
        cuda.atomic.min(out, 2, x[cuda.grid(1)])

    x = np.arange(1.0, 65.0)
    out = np.array([0.0, -np.inf, np.inf])
    c = simulate(total, 2, 32, x, out, strict=True)
    assert out.tolist() == [x.sum(), 64.0, 1.0]
    assert c.atomics == 3 * 64 and c.global_stores == 3 * 64


@pytest.mark.parametrize("strict", [False, True])
def test_an_index_past_the_end_names_the_thread_the_array_and_the_line(strict):
    def past(a):
        a[cuda.threadIdx.x + 6] = 1.0

    with pytest.raises(IndexError) as info:  # an OutOfBoundsError is an IndexError
        simulate(past, 1, 4, np.zeros(8), strict=strict)
    assert isinstance(info.value, faults.OutOfBoundsError)
    assert str(info.value) == (
        "out of bounds: thread 2 of block 0 writes a[8] at line 2 of past "
        "(`a[cuda.threadIdx.x + 6] = 1.0`), but a has shape (8,); guard the access with an "
        "`if` on the index (threads past the end must not touch memory)."
    )


def test_a_negative_index_wraps_as_in_numba_unless_strict():
    def previous(src, dst):
        i = cuda.grid(1)
        dst[i] = src[i - 1]

    src, dst = np.arange(4.0), np.zeros(4)
    simulate(previous, 1, 4, src, dst)
    assert dst.tolist() == [3.0, 0.0, 1.0, 2.0]
    with pytest.raises(faults.OutOfBoundsError, match=r"reads src\[-1\] .* a negative index"):
        simulate(previous, 1, 4, src, dst, strict=True)


def test_a_barrier_some_threads_skip_is_a_deadlock():
    def early_exit(a):
        if cuda.threadIdx.x >= 3:
            return
        cuda.syncthreads()
        a[cuda.threadIdx.x] = 1.0

    with pytest.raises(
        faults.BarrierError,
        match="3 of its 4 threads reached the barrier at "
        r"line 4 of early_exit \(`cuda.syncthreads\(\)`\), but 1 returned",
    ):
        simulate(early_exit, 1, 4, np.zeros(4))  # a deadlock is reported strict or not


def test_threads_at_different_barriers_are_a_deadlock():
    def two_barriers(a):
        if cuda.threadIdx.x < 2:
            cuda.syncthreads()
        else:
            cuda.syncthreads()

    with pytest.raises(faults.BarrierError, match="wait at different barriers"):
        simulate(two_barriers, 1, 4, np.zeros(4))


def test_unsupported_parts_of_cuda_say_what_is_modelled():
    def vote(a):
        a[0] = cuda.activemask()

    with pytest.raises(NotImplementedError, match=r"^cuda.activemask is refused by the course's "
                       "simulator because its value depends"):  # fmt: skip
        simulate(vote, 1, 1, np.zeros(1))
    with pytest.raises(faults.UnsupportedError, match="cuda.atomic.exch is not supported"):
        simulate(lambda a: cuda.atomic.exch(a, 0, 1.0), 1, 1, np.zeros(1))


def test_shared_array_counts_add_up_over_blocks():
    # 64 x 64 through 32 x 32 tiles: 4 blocks, each 32 warp writes and 32 warp reads of s.
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    c = gl.simulate(ck.transpose_shared(32, padded=False), (2, 2), (32, 32), a,
                    np.zeros_like(a), 64)  # fmt: skip
    assert c.by_array["s", "load"]["requests"] == 4 * 32
    assert c.by_array["s", "load"]["wavefronts"] == 4 * 32 * 32  # 32-way conflicts
    assert c.bank_conflicts == 4 * 32 * 31


def test_greenlets_and_os_threads_give_the_same_counts_and_faults(monkeypatch):
    A, B, _ = _matrices(12)

    def run():
        C = np.zeros((12, 12), np.float32)
        counts = simulate(ck.tiled_matmul(8), (2, 2), (8, 8), A, B, C, 12, strict=True)
        try:
            simulate(ck.tiled_matmul(8, barrier=False), (2, 2), (8, 8), A, B, C, 12,
                     strict=True)  # fmt: skip
        except faults.RaceError as exc:
            return counts, C, str(exc)
        raise AssertionError("no race found")

    pytest.importorskip("greenlet")
    with_greenlets = run()
    monkeypatch.setitem(sys.modules, "greenlet", None)  # `import greenlet` now fails
    with_threads = run()
    assert with_greenlets[0] == with_threads[0]
    assert with_greenlets[0].by_array == with_threads[0].by_array
    np.testing.assert_array_equal(with_greenlets[1], with_threads[1])
    assert with_greenlets[2] == with_threads[2]


def test_a_deadlock_leaves_no_thread_behind_with_os_threads(monkeypatch):
    import threading

    monkeypatch.setitem(sys.modules, "greenlet", None)

    def early_exit(a):
        if cuda.threadIdx.x == 0:
            return
        cuda.syncthreads()

    before = threading.active_count()
    with pytest.raises(faults.BarrierError):
        simulate(early_exit, 1, 8, np.zeros(1))
    assert threading.active_count() == before


def test_hazard_tracker_orders_only_by_barriers_within_a_block():
    h = faults.HazardTracker()
    assert h.access("s", 0, block=0, epoch=0, thread=1, write=False) is None
    assert h.access("s", 0, block=0, epoch=0, thread=2, write=False) is None
    assert h.access("s", 0, block=0, epoch=0, thread=1, write=True) == (0, -2, False, 0)
    assert h.access("t", 0, block=0, epoch=0, thread=1, write=True) is None
    assert h.access("t", 0, block=0, epoch=1, thread=2, write=True) is None  # after a barrier
    assert h.access("t", 0, block=1, epoch=2, thread=2, write=False) == (0, 2, True, 0)


def test_a_kernel_that_never_ends_is_stopped_in_strict_mode(monkeypatch):
    from gpulab.kernels import simulator

    def forgot_to_halve(x, out, n):
        s = cuda.shared.array(4, float32)
        tid = cuda.threadIdx.x
        s[tid] = x[tid]
        cuda.syncthreads()
        step = 2
        while step > 0:  # step is never halved
            if tid < step:
                s[tid] += s[tid + step]
            cuda.syncthreads()
        out[0] = s[0]

    monkeypatch.setattr(simulator, "STRICT_STEP_LIMIT", 1000)  # the default takes a minute
    with pytest.raises(faults.EndlessError, match="more than 1,000 memory accesses and barrier"):
        simulate(forgot_to_halve, 1, 4, np.ones(4), np.zeros(1), 4, strict=True)


def _spin(x):
    while True:  # touches no memory: no access limit can see it
        pass


def _spin_after_barrier(x):
    cuda.syncthreads()
    while True:
        pass


@pytest.mark.parametrize("kernel", [_spin, _spin_after_barrier])
@pytest.mark.parametrize("threads", [False, True], ids=["greenlets", "os-threads"])
def test_a_loop_that_never_ends_is_stopped_by_the_time_limit(monkeypatch, kernel, threads):
    import threading
    import time

    if threads:
        monkeypatch.setitem(sys.modules, "greenlet", None)
    before = threading.active_count()
    start = time.perf_counter()
    with pytest.raises(faults.EndlessError) as caught:
        simulate(kernel, 1, 4, np.zeros(4), strict=True, time_limit_s=0.3)
    assert time.perf_counter() - start < 3
    assert str(caught.value) == (
        "the kernel ran for more than 0.3 s of simulation, far longer than a launch of this "
        f"size needs; thread 0 of block 0 was at line {2 if kernel is _spin else 3} of "
        f"{kernel.__name__} (`while True:`): look for a loop whose condition never changes "
        "(a step that is never halved, an index never advanced)"
    )
    time.sleep(0.05)
    assert threading.active_count() == before  # the timer and the workers are gone


def test_a_launch_within_its_time_limit_is_not_disturbed():
    import time

    src, dst = np.arange(64.0), np.zeros(64)
    args = (*_matrices(12)[:2], np.zeros((12, 12)), 12)
    # the first launch in a process pays one-off costs (imports, caches) that can take a good
    # part of the limit on a busy machine; the check is about the timer, so warm up first
    simulate(ck.tiled_matmul(8), (2, 2), (8, 8), *args, strict=True)
    simulate(ck.tiled_matmul(8), (2, 2), (8, 8), *args, strict=True, time_limit_s=0.2)
    time.sleep(0.3)  # a timer left behind would strike here

    def copy(src, dst):
        i = cuda.grid(1)
        dst[i] = src[i]

    assert simulate(copy, 2, 32, src, dst, time_limit_s=5).global_loads == 64


@pytest.mark.parametrize("value, error", [(0, ValueError), (-1.0, ValueError),
                                          (float("inf"), ValueError), (1e308, ValueError),
                                          ("1", TypeError), (True, TypeError)])  # fmt: skip
def test_a_bad_time_limit_is_refused_by_name(value, error):
    with pytest.raises(error, match="time_limit_s="):
        simulate(_spin, 1, 1, np.zeros(1), time_limit_s=value)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("count", [True, False])
def test_a_float_index_is_said_to_be_one_with_brackets(strict, count):
    def halves(dst):
        i = cuda.grid(1)
        dst[i / 1] = 1.0

    with pytest.raises(faults.IndexTypeError) as caught:
        simulate(halves, 1, 4, np.zeros(4), strict=strict, count=count)
    assert str(caught.value) == (
        "dst[0.0]: an index must be an integer; thread 0 of block 0 writes it at line 3 of "
        "halves (`dst[i / 1] = 1.0`): `/` gives a float in Python even for two integers, so "
        "divide with `//` (or convert with int())"
    )
    assert isinstance(caught.value, IndexError)
