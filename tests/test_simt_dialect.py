"""The Numba CUDA dialect a learner copies from Numba's documentation runs in the simulator
with the right results and counts: Numba's scalar types, local arrays, one shared array per
call, device functions, kernels built by a factory that receives ``cuda``, and
``cuda.syncwarp()``, shuffles and votes with warp semantics."""

# ruff: noqa: F821, N803, N806 - `cuda` comes from the simulator or Numba; CUDA's names

import sys

import numba
import numpy as np
import pytest
from numba import cuda

from gpulab.kernels import faults
from gpulab.kernels.simulator import WARP_SIZE, KernelCounts, kernel_function, simulate

RNG = np.random.default_rng(0)
TPB = 8  # threads per block of the factory kernels


def _reverse_numba_types(a, out):
    s = cuda.shared.array(32, numba.float32)
    t = cuda.shared.array(32, numba.types.int32)
    scratch = cuda.local.array(2, numba.types.float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    t[i] = i
    scratch[0] = 1.0
    cuda.syncthreads()
    out[i] = s[31 - i] + scratch[0] + t[31 - i] * 0


def test_numba_scalar_types_make_shared_and_local_arrays():
    a, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    c = simulate(_reverse_numba_types, 1, 32, a, out, strict=True)
    assert (out == a[::-1] + 1).all()
    assert c.by_array["s", "store"]["wavefronts"] == 1 and c.by_array["t", "load"]["requests"] == 1
    assert (c.shared_requests, c.bank_conflicts) == (4, 0)


def test_a_dtype_the_simulator_does_not_know_is_refused_by_name():
    def odd(a):
        s = cuda.shared.array(4, "no such type")
        s[0] = a[0]

    with pytest.raises(faults.UnsupportedError, match="cuda.shared.array: the dtype 'no such"):
        simulate(odd, 1, 1, np.zeros(1))


def _matmul_two_on_one_line(A, B, C, n):
    sA, sB = cuda.shared.array((4, 4), numba.float32), cuda.shared.array((4, 4), numba.float32)
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    sA[y, x] = A[y, x]
    sB[y, x] = B[y, x]
    cuda.syncthreads()
    acc = 0.0
    for k in range(n):
        acc += sA[y, k] * sB[k, x]
    C[y, x] = acc


def test_two_shared_arrays_on_one_line_are_two_arrays():
    A, B = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    C = np.zeros((4, 4), np.float32)
    c = simulate(_matmul_two_on_one_line, 1, (4, 4), A, B, C, 4, strict=True)
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-6)
    assert c.by_array["sA", "store"]["accesses"] == c.by_array["sB", "store"]["accesses"] == 16
    assert c.by_array["sA", "load"]["accesses"] == c.by_array["sB", "load"]["accesses"] == 64


@cuda.jit(device=True)
def _plus(x, y):
    return x + y


@cuda.jit(device=True)
def _lane_total(s, lane):  # a device function that reads shared memory and calls another
    total = 0.0
    for j in range(lane + 1):
        total = _plus(total, s[j])
    return total


def _prefix_with_helpers(a, out):
    s = cuda.shared.array(32, numba.float32)
    i = cuda.threadIdx.x
    s[i] = a[i]
    cuda.syncthreads()
    out[i] = _lane_total(s, i)


def test_device_functions_run_with_the_simulators_cuda_and_are_counted():
    a, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    c = simulate(_prefix_with_helpers, 1, 32, a, out, strict=True)
    assert (out == np.cumsum(a)).all()
    # the helper's reads of s are counted: lane i reads s[0..i], 528 reads in 32 requests
    assert c.by_array["s", "load"]["accesses"] == 32 * 33 // 2
    assert c.by_array["s", "load"]["requests"] == 32


def test_a_device_function_with_a_barrier_runs_the_block_in_phases():
    @cuda.jit(device=True)
    def stage(s, a, i):
        s[i] = a[i]
        cuda.syncthreads()

    def kernel(a, out):
        s = cuda.shared.array(16, numba.float32)
        i = cuda.threadIdx.x
        stage(s, a, i)
        out[i] = s[15 - i]

    a, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    c = simulate(kernel, 1, 16, a, out, strict=True)
    assert (out == a[::-1]).all() and c.barriers == 1


# Kernels in the form some puzzle sets use: a factory receives `cuda` and returns the kernel.
def _factory_add_ten(cuda):
    def call(out, a) -> None:
        i = cuda.threadIdx.x
        out[i] = a[i] + 10

    return call


def _factory_guarded_pairs(cuda):
    def call(out, a, b, size) -> None:
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < size:
            out[i] = a[i] * b[i]

    return call


def _factory_window_sum(cuda):
    def call(out, a, size) -> None:
        s = cuda.shared.array(TPB + 2, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + t
        if i < size:
            s[t] = a[i]
        if t < 2 and i + TPB < size:
            s[t + TPB] = a[i + TPB]
        cuda.syncthreads()
        if i < size:
            total = 0.0
            for k in range(3):
                if i + k < size:
                    total += s[t + k]
            out[i] = total

    return call


def _factory_column_sums(cuda):
    def call(out, a, rows) -> None:
        col = cuda.threadIdx.x
        total = numba.float32(0.0)
        for r in range(rows):
            total += a[r, col]
        out[col] = total

    return call


def _window_sum(a):
    padded = np.concatenate([a, np.zeros(2, a.dtype)])
    return padded[:-2] + padded[1:-1] + padded[2:]


FACTORIES = [
    (_factory_add_ten, 1, 4, lambda: (np.zeros(4, np.float32), np.arange(4, dtype=np.float32)),
     lambda args: args[1] + 10),
    (_factory_guarded_pairs, 3, TPB,
     lambda: (np.zeros(20, np.float32), np.arange(20, dtype=np.float32),
              np.full(20, 2, np.float32), 20),
     lambda args: args[1] * args[2]),
    (_factory_window_sum, 3, TPB,
     lambda: (np.zeros(21, np.float32), np.arange(21, dtype=np.float32), 21),
     lambda args: _window_sum(args[1])),
    (_factory_column_sums, 1, 5,
     lambda: (np.zeros(5, np.float32), np.arange(15, dtype=np.float32).reshape(3, 5), 3),
     lambda args: args[1].sum(axis=0)),
]  # fmt: skip


@pytest.mark.parametrize("factory, grid, block, make, expected", FACTORIES,
                         ids=[f[0].__name__ for f in FACTORIES])  # fmt: skip
def test_factory_kernels_run_unchanged_and_as_built_with_numba_cuda(
    factory, grid, block, make, expected
):
    for kernel in (factory, factory(cuda)):  # the factory itself, or what it built
        args = make()
        simulate(kernel, grid, block, *args, strict=True)
        np.testing.assert_allclose(args[0], expected(args))


def test_a_factory_that_returns_no_function_is_refused_by_name():
    def not_a_factory(cuda):
        return 3

    with pytest.raises(TypeError, match="kernel=not_a_factory: a function of `cuda` alone"):
        kernel_function(not_a_factory)


# --------------------------------------------------------------------------- syncwarp


def _last_warp_sum(a, out):  # 64 threads: two warps fold into one, which finishes alone
    s = cuda.shared.array(64, numba.float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    if t < 32:
        s[t] += s[t + 32]
        cuda.syncwarp()
        step = 16
        while step > 0:
            v = 0.0
            if t < step:
                v = s[t + step]
            cuda.syncwarp()
            if t < step:
                s[t] += v
            cuda.syncwarp()
            step //= 2
    if t == 0:
        out[0] = s[0]


def _last_warp_unsynchronised(a, out):  # the warp-synchronous idiom of old GPUs
    s = cuda.shared.array(64, numba.float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    if t < 32:
        step = 32
        while step > 0:
            if t < step:
                s[t] += s[t + step]
            step //= 2
    if t == 0:
        out[0] = s[0]


def _last_warp_with_syncthreads(a, out):  # a barrier inside `if t < 32`: a deadlock
    s = cuda.shared.array(64, numba.float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    if t < 32:
        s[t] += s[t + 32]
        cuda.syncthreads()
    if t == 0:
        out[0] = s[0]


@pytest.mark.parametrize("threads", [False, True], ids=["greenlets", "os-threads"])
def test_syncwarp_orders_the_lanes_of_a_warp(monkeypatch, threads):
    if threads:
        monkeypatch.setitem(sys.modules, "greenlet", None)  # `import greenlet` now fails
    a, out = np.arange(64, dtype=np.float32), np.zeros(1, np.float32)
    c = simulate(_last_warp_sum, 1, 64, a, out, strict=True)
    assert out[0] == a.sum() and c.barriers == 1
    with pytest.raises(faults.BarrierError, match="deadlock in warp 0 of block 0"):
        simulate(_split_warp, 1, 32, np.zeros(32), strict=True)


def test_a_warp_synchronous_race_is_told_to_use_syncwarp_not_syncthreads():
    a, out = np.arange(64, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(faults.RaceError) as err:
        simulate(_last_warp_unsynchronised, 1, 64, a, out, strict=True)
    said = str(err.value)
    assert said.startswith("race on s[1]: thread 1 of block 0 writes it at line 10")
    assert "(the threads are lanes of warp 0: where only one warp's lanes run this part, as " \
           "inside `if tid < 32`, use cuda.syncwarp() there instead" in said  # fmt: skip
    with pytest.raises(faults.BarrierError, match="32 of its 64 threads reached the barrier"):
        simulate(_last_warp_with_syncthreads, 1, 64, a, out, strict=True)


def test_in_a_one_warp_block_the_race_hint_names_syncwarp():
    def one_warp(a, out):
        s = cuda.shared.array(32, numba.float32)
        t = cuda.threadIdx.x
        s[t] = a[t]
        out[t] = s[(t + 1) % 32]

    with pytest.raises(faults.RaceError, match="lanes of warp 0, which do not run in lockstep "
                       r"on GPUs since Volta: put cuda.syncwarp\(\)"):  # fmt: skip
        simulate(one_warp, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32), strict=True)


def test_syncwarp_does_not_order_two_warps():
    def across_warps(a, out):
        s = cuda.shared.array(64, numba.float32)
        t = cuda.threadIdx.x
        s[t] = a[t]
        cuda.syncwarp()
        out[t] = s[63 - t]  # another warp's element: only cuda.syncthreads() orders it

    a, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    with pytest.raises(faults.RaceError, match=r"race on s\[63\]: thread 0 of block 0 reads "
                       r".*put cuda.syncthreads\(\) between"):  # fmt: skip
        simulate(across_warps, 1, 64, a, out, strict=True)


def _split_warp(a):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncwarp()
    else:
        cuda.syncthreads()
    a[t] = t


def test_a_warp_split_between_syncwarp_and_syncthreads_is_a_deadlock():
    with pytest.raises(faults.BarrierError, match=r"deadlock in warp 0 of block 0: thread 0 of "
                       r"block 0 waits at cuda.syncwarp\(\) at line 4 of _split_warp"):  # fmt: skip
        simulate(_split_warp, 1, 32, np.zeros(32), strict=True)


def test_a_partial_syncwarp_mask_is_refused():
    def partial(a):
        cuda.syncwarp(0xFFFF)
        a[cuda.threadIdx.x] = 1

    with pytest.raises(faults.UnsupportedError, match=r"cuda.syncwarp\(0xffff\) at line 2"):
        simulate(partial, 1, 32, np.zeros(32))


def _warp_sum_shfl_down(a, out):
    i = cuda.threadIdx.x
    v = a[i]
    step = 16
    while step > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, step)
        step //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


def _butterfly_and_scan(a, total, prefix):
    i = cuda.threadIdx.x
    v = a[i]
    t = v
    for m in (16, 8, 4, 2, 1):
        t += cuda.shfl_xor_sync(0xFFFFFFFF, t, m)  # every lane ends with the warp's total
    total[i] = t
    step = 1
    while step < 32:
        up = cuda.shfl_up_sync(0xFFFFFFFF, v, step)  # lanes below `step` get their own back
        if cuda.laneid >= step:
            v += up
        step *= 2
    prefix[i] = v


@pytest.mark.parametrize("threads", [False, True], ids=["greenlets", "os-threads"])
def test_shuffles_exchange_values_in_lockstep(monkeypatch, threads):
    if threads:
        monkeypatch.setitem(sys.modules, "greenlet", None)
    a, out = np.arange(64, dtype=np.float32), np.zeros(2, np.float32)
    c = simulate(_warp_sum_shfl_down, 1, 64, a, out, strict=True)
    assert out.tolist() == [a[:32].sum(), a[32:].sum()]
    assert (c.global_loads, c.global_stores, c.shared_requests) == (64, 2, 0)  # no memory
    a = RNG.integers(0, 9, 32).astype(np.float32)
    total, prefix = np.zeros(32, np.float32), np.zeros(32, np.float32)
    simulate(_butterfly_and_scan, 1, 32, a, total, prefix, strict=True)
    assert (total == a.sum()).all() and (prefix == np.cumsum(a)).all()


def test_votes_see_every_lane_of_the_warp():
    def votes(a, out):
        i = cuda.threadIdx.x
        odd = a[i] % 2 == 1
        out[i, 0] = cuda.ballot_sync(0xFFFFFFFF, odd)
        out[i, 1] = cuda.any_sync(0xFFFFFFFF, a[i] > 30)
        out[i, 2] = cuda.all_sync(0xFFFFFFFF, a[i] >= 0)
        out[i, 3] = cuda.eq_sync(0xFFFFFFFF, odd)
        out[i, 4] = cuda.match_any_sync(0xFFFFFFFF, a[i] % 4)
        out[i, 5] = cuda.lanemask_lt()

    a, out = np.arange(32, dtype=np.int64), np.zeros((32, 6), np.int64)
    simulate(votes, 1, 32, a, out, strict=True)
    assert (out[:, 0] == 0xAAAAAAAA).all() and (out[:, 1] == 1).all() and (out[:, 2] == 1).all()
    assert (out[:, 3] == 0).all()
    assert out[5, 4] == sum(1 << k for k in range(32) if k % 4 == 1)
    assert out[:, 5].tolist() == [(1 << k) - 1 for k in range(32)]


def test_a_shuffle_does_not_order_memory():
    def exchange_through_shared(a, out):
        s = cuda.shared.array(32, numba.float32)
        i = cuda.threadIdx.x
        s[i] = a[i]
        cuda.shfl_sync(0xFFFFFFFF, 0, 0)  # the lanes meet, but a shuffle is no memory fence
        out[i] = s[(i + 1) % 32]

    with pytest.raises(faults.RaceError, match=r"race on s\[1\]: thread 0 of block 0 reads"):
        simulate(exchange_through_shared, 1, 32, np.ones(32, np.float32),
                 np.zeros(32, np.float32), strict=True)  # fmt: skip


def test_a_shuffle_from_a_lane_that_left_is_named():
    def early_exit(a, out, n):
        i = cuda.threadIdx.x
        if i >= n:
            return
        out[i] = cuda.shfl_down_sync(0xFFFFFFFF, a[i], 1)

    a, out = np.arange(32.0), np.zeros(32)
    with pytest.raises(faults.BarrierError, match=r"cuda.shfl_down_sync at line 5 of early_exit "
                       r".*: lane 19 of warp 0 reads the value of lane 20, which did not take "
                       r"part \(its thread returned"):  # fmt: skip
        simulate(early_exit, 1, 32, a, out, 20, strict=True)
    simulate(early_exit, 1, 32, a, out, 32, strict=True)
    assert out.tolist() == [*a[1:], a[31]]  # lane 31 keeps its own value


def test_a_warp_split_between_a_shuffle_and_syncwarp_and_a_partial_mask_are_refused():
    def split(a):
        i = cuda.threadIdx.x
        if i < 16:
            a[i] = cuda.shfl_sync(0xFFFFFFFF, i, 0)
        else:
            cuda.syncwarp()

    with pytest.raises(faults.BarrierError, match=r"deadlock in warp 0: thread 0 of block 0 waits "
                       r"at cuda.shfl_sync at line 4 of split"):  # fmt: skip
        simulate(split, 1, 32, np.zeros(32), strict=True)

    def partial(a):
        a[0] = cuda.shfl_sync(0xFFFF, 1, 0)

    with pytest.raises(faults.UnsupportedError, match=r"cuda.shfl_sync\(65535, ...\) at line 2 "
                       r"of partial.*: the simulator models warp shuffles and votes of the "
                       r"whole warp only"):  # fmt: skip
        simulate(partial, 1, 32, np.zeros(32))


def test_activemask_is_refused_in_one_sentence_naming_it():
    def kernel(a):
        a[0] = cuda.activemask()

    with pytest.raises(faults.UnsupportedError) as err:
        simulate(kernel, 1, 32, np.zeros(32))
    said = str(err.value)
    assert said.startswith("cuda.activemask is refused by the course's simulator")
    assert said.count(". ") == 0 and said.endswith("reach the shuffle or vote.")


# --------------------------------------------------------------------------- 8-byte banks


def _shared_copy(stride):
    def kernel(a, out):
        s = cuda.shared.array(64, numba.float64)
        i = cuda.threadIdx.x
        s[i * stride] = a[i]
        cuda.syncthreads()
        out[i] = s[i * stride]

    return kernel


@pytest.mark.parametrize("dtype, stride, passes, fewest", [
    (np.float64, 1, 4, 4),  # two requests of 32 doubles: two halves of 16 lanes each, no conflict
    (np.float64, 2, 8, 4),  # every other double: banks 0-1, 4-5, ... twice per half: 2 passes each
    (np.float32, 1, 2, 2),
])  # fmt: skip
def test_eight_byte_words_are_counted_against_two_passes_per_warp_request(
    dtype, stride, passes, fewest
):
    kernel = _shared_copy(stride)
    if dtype is np.float32:
        def kernel(a, out):  # noqa: F811 - the same kernel with 4-byte words
            s = cuda.shared.array(64, numba.float32)
            i = cuda.threadIdx.x
            s[i] = a[i]
            cuda.syncthreads()
            out[i] = s[i]
    a, out = np.arange(32, dtype=dtype), np.zeros(32, dtype)
    c = simulate(kernel, 1, WARP_SIZE, a, out, strict=True)
    assert (out == a).all()
    counted = (c.shared_requests, c.shared_wavefronts, c.shared_ideal_wavefronts)
    assert counted == (2, passes, fewest)
    assert c.bank_conflicts == passes - fewest


def test_kernel_counts_refuse_fields_that_disagree():
    good = dict(global_loads=32, global_stores=32, global_requests=2, sectors=8, ideal_sectors=8,
                lines=2, shared_requests=2, shared_wavefronts=4, active_fraction=1.0,
                shared_ideal_wavefronts=4)  # fmt: skip
    assert KernelCounts(**good).bank_conflicts == 0
    for change, name in [
        (dict(shared_ideal_wavefronts=5), "shared_ideal_wavefronts"),
        (dict(shared_wavefronts=1), "shared_wavefronts"),
        (dict(shared_wavefronts=3), "shared_ideal_wavefronts"),
        (dict(shared_requests=10**30, shared_wavefronts=0), "shared_wavefronts"),
        (dict(ideal_sectors=9), "ideal_sectors"),
        (dict(lines=9), "sectors"),
        (dict(global_requests=0), "global_requests"),
        (dict(atomics=1, shared_atomics=2), "shared_atomics"),
        (dict(atomics=40), "atomics"),
    ]:
        with pytest.raises(ValueError, match=f"^{name}: the counts disagree"):
            KernelCounts(**{**good, **change})


def test_the_record_says_which_thread_touched_which_element():
    def shifted(a, out):
        i = cuda.grid(1)
        if i < 5:
            out[i] = a[i + 1]

    a, out = np.arange(6.0), np.zeros(5)
    c = simulate(shifted, 2, 4, a, out)
    rows = c.touches["a"]
    assert rows.tolist() == [[0, 0, 1, 0], [0, 1, 2, 0], [0, 2, 3, 0], [0, 3, 4, 0], [1, 0, 5, 0]]
    assert c.touches["out"][:, 2].tolist() == [0, 1, 2, 3, 4]
    assert (c.touches["out"][:, 3] == 1).all()
