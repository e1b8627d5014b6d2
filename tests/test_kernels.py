"""The kernel simulator's counts against the values the chapter derives by hand."""

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpulab as gl
from gpulab.kernels import cuda_kernels as ck

RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    "stride, sectors, lines",
    [(1, 4, 1), (2, 8, 2), (4, 16, 4), (8, 32, 8), (16, 32, 16), (32, 32, 32)],
)
def test_a_warps_strided_fp32_reads_touch_the_derived_sectors(stride, sectors, lines):
    src = np.arange(32 * 64, dtype=np.float32)
    dst = np.zeros(256, dtype=np.float32)
    counts = gl.simulate(ck.copy_strided, 1, 256, src, dst, stride)
    load = counts.by_array["src", "load"]
    assert load["requests"] == 8  # 256 threads = 8 warps, one load each
    assert load["sectors"] == 8 * sectors and load["lines"] == 8 * lines
    assert load["ideal_sectors"] == 8 * 4  # 32 floats = 128 bytes = 4 sectors
    np.testing.assert_array_equal(dst, src[(np.arange(256) * stride) % len(src)])
    # the stores are coalesced whatever the stride
    assert counts.by_array["dst", "store"]["sectors"] == 8 * 4


def test_sector_efficiency_of_the_whole_copy():
    src, dst = np.arange(4096, dtype=np.float32), np.zeros(128, dtype=np.float32)
    assert gl.simulate(ck.copy_strided, 1, 128, src, dst, 1).sector_efficiency == 1.0
    # stride 32: loads 4/32 efficient, stores 4/4: (16 + 16) / (128 + 16)
    c = gl.simulate(ck.copy_strided, 1, 128, src, dst, 32)
    assert (c.ideal_sectors, c.sectors) == (32, 144)
    assert c.global_bytes == 144 * 32


def test_random_gather_touches_about_one_sector_per_thread():
    src, dst = np.arange(1 << 16, dtype=np.float32), np.zeros(256, dtype=np.float32)
    index = RNG.integers(0, len(src), 256)
    c = gl.simulate(ck.copy_gather, 1, 256, src, dst, index)
    assert 8 * 30 <= c.by_array["src", "load"]["sectors"] <= 8 * 32
    np.testing.assert_array_equal(dst, src[index])


def test_a_partial_last_warp_shows_in_the_active_fraction():
    src, dst = np.arange(64, dtype=np.float32), np.zeros(40, dtype=np.float32)
    c = gl.simulate(ck.copy_strided, 1, 64, src, dst, 1)  # 40 of 64 threads do work
    assert c.active_fraction == pytest.approx(40 / 64)
    assert c.global_loads == 40 and c.global_requests == 4


def _warp_read_sectors(src) -> tuple[int, int]:
    """Sectors and lines one warp's coalesced read of ``src[0:32]`` touches."""
    dst = np.zeros(32, dtype=src.dtype)
    load = gl.simulate(ck.copy_strided, 1, 32, src, dst, 1).by_array["src", "load"]
    np.testing.assert_array_equal(dst, src[:32])
    return load["sectors"], load["lines"]


@pytest.mark.parametrize(
    "start, sectors, lines",
    [(0, 4, 1), (1, 5, 2), (7, 5, 2), (8, 4, 2), (31, 5, 2), (32, 4, 1)],
)
def test_a_view_is_addressed_from_the_start_of_its_allocation(start, sectors, lines):
    # src[start:] begins 4 * start bytes into a 256-byte-aligned allocation: 32 floats from
    # there fill 4 sectors only when that offset is a multiple of 32 bytes.
    src = np.arange(256, dtype=np.float32)
    assert _warp_read_sectors(src[start:]) == (sectors, lines)
    # a view of a view, and as_strided's wrapper, are followed to the same allocation
    assert _warp_read_sectors(src[start // 2 :][start - start // 2 :]) == (sectors, lines)
    wrapped = np.lib.stride_tricks.as_strided(src[start:], shape=(64,), strides=(4,))
    assert _warp_read_sectors(wrapped) == (sectors, lines)


def test_a_two_dimensional_view_and_a_negative_index_use_allocation_addresses():
    def row(m, out):
        i = cuda.grid(1)  # noqa: F821 - the simulator supplies ``cuda``
        out[i] = m[-1, i]  # the last row, by a negative index

    m = np.arange(8 * 40, dtype=np.float32).reshape(8, 40)
    out = np.zeros(32, dtype=np.float32)
    # m[:3, 3:]'s last row starts at byte (2 * 40 + 3) * 4 = 332 of the allocation:
    # bytes 332..459 lie in sectors 10..14.
    load = gl.simulate(row, 1, 32, m[:3, 3:], out).by_array["m", "load"]
    np.testing.assert_array_equal(out, m[2, 3:35])
    assert (load["sectors"], load["ideal_sectors"]) == (5, 4)
    # the whole array's last row starts at byte 7 * 160 = 1120, a multiple of 32
    load = gl.simulate(row, 1, 32, m, out).by_array["m", "load"]
    assert load["sectors"] == 4


def test_counts_do_not_depend_on_where_numpy_placed_the_buffer():
    # The same 64 floats in fresh arrays at 16 different host addresses (4 bytes apart):
    # each is its own allocation, taken as 256-byte aligned, so every copy counts alike.
    buffer = bytearray(4 * 64 + 64)
    placed = [
        np.frombuffer(memoryview(buffer)[k : k + 4 * 64], dtype=np.float32) for k in range(0, 64, 4)
    ]
    assert len({a.__array_interface__["data"][0] % 32 for a in placed}) == 8  # truly scattered
    for a in placed:
        assert a.base is not None and not isinstance(a.base, np.ndarray)
        assert _warp_read_sectors(a) == (4, 1)
        assert _warp_read_sectors(a[1:]) == (5, 2)
        assert _warp_read_sectors(a.copy()[1:]) == (5, 2)  # a copy is a new allocation


def test_the_transpose_bank_conflicts_the_chapter_derives():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    results = {}
    for padded in (False, True):
        out = np.zeros_like(a)
        results[padded] = gl.simulate(
            ck.transpose_shared(32, padded=padded), 1, (32, 32), a, out, 32
        )
        np.testing.assert_array_equal(out, a.T)
    unpadded, padded = results[False], results[True]
    # 32 warps each store a tile row (no conflict) and read a tile column.
    assert unpadded.shared_requests == padded.shared_requests == 64
    assert padded.bank_conflicts == 0
    assert unpadded.by_array["s", "load"]["wavefronts"] == 32 * 32  # 32-way each
    assert unpadded.bank_conflicts == 32 * 31
    assert unpadded.sectors == padded.sectors  # global traffic is the same


@pytest.mark.parametrize(
    "n, tile",
    [(32, 8), (32, 16), (32, 32), (48, 16), (50, 16), (20, 8), (7, 4), (3, 8)],
)
def test_tiled_matmul_is_right_for_any_n_and_its_loads_match_the_count(n, tile):
    # The grid is rounded up; tiles that overhang the edge load zeros there.
    A = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    B = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    C = np.full_like(A, np.nan)  # noqa: N806 - every element must be written
    blocks = -(-n // tile)
    c = gl.simulate(ck.tiled_matmul(tile), (blocks, blocks), (tile, tile), A, B, C, n)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    # each element of A and B is read once per block in its row (column) of blocks
    assert c.global_loads == 2 * n**2 * blocks
    assert c.global_loads == gl.kernels.tiling.tile_loads(n, tile)["global_loads"]
    if n % tile == 0:
        assert c.global_loads == 2 * n**3 // tile  # the chapter's 2 n³ / T
    assert c.global_stores == n * n
    assert c.bank_conflicts == 0


def test_naive_matmul_reads_every_operand_n_times():
    n = 16
    A = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    B = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    C = np.zeros_like(A)  # noqa: N806
    c = gl.simulate(ck.matmul_naive, (1, 1), (16, 16), A, B, C, n)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    assert c.global_loads == 2 * n**3


def test_a_missing_barrier_gives_the_same_wrong_answer_every_time():
    n, tile = 16, 8
    A = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    B = RNG.standard_normal((n, n)).astype(np.float32)  # noqa: N806
    wrong = []
    for _ in range(2):
        C = np.zeros_like(A)  # noqa: N806
        gl.simulate(ck.tiled_matmul(tile, barrier=False), (2, 2), (8, 8), A, B, C, n, count=False)
        wrong.append(C)
    assert np.abs(wrong[0] - A @ B).max() > 1.0
    np.testing.assert_array_equal(wrong[0], wrong[1])


def test_a_kernel_error_in_a_block_with_barriers_reaches_the_caller():
    def bad(a):
        cuda.syncthreads()  # noqa: F821 - the simulator supplies ``cuda``
        a[cuda.threadIdx.x + 100] = 1.0  # noqa: F821

    with pytest.raises(IndexError):
        gl.simulate(bad, 1, 4, np.zeros(8, dtype=np.float32))


def test_launch_and_simulate_share_the_engine():
    # gl.launch's ctx-style kernels and Numba-style kernels index threads identically.
    seen_launch = []
    gl.launch(lambda ctx: seen_launch.append(ctx.global_x), 3, 4)

    def k(out):
        out[cuda.grid(1)] = cuda.grid(1)  # noqa: F821

    out = np.zeros(12)
    gl.simulate(k, 3, 4, out, count=False)
    assert seen_launch == list(range(12)) == out.astype(int).tolist()


def test_the_lab_sizes_run_within_the_cpu_budget():
    # The lab simulates copies of 4096 elements and a 32 x 32 tiled matmul; on a loaded
    # 2-core machine they must stay well inside its 60 s budget. The bound is loose (20 s
    # for work that takes about 2 s) so that a busy machine does not fail it.
    src, dst = np.arange(32 * 4096, dtype=np.float32), np.zeros(4096, dtype=np.float32)
    A = RNG.standard_normal((32, 32)).astype(np.float32)  # noqa: N806
    start = time.process_time()
    gl.simulate(ck.copy_strided, 16, 256, src, dst, 32)
    gl.simulate(ck.tiled_matmul(16), (2, 2), (16, 16), A, A, np.zeros_like(A), 32)
    assert time.process_time() - start < 20


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: gl.simulate(42, 1, 1), TypeError, "kernel=42"),
        (lambda: gl.simulate(ck.copy_strided, 0, 1), ValueError, "grid=0"),
        (lambda: gl.simulate(ck.copy_strided, 1, 2048), ValueError, "2048 threads"),
        (lambda: gl.simulate(ck.copy_strided, 1, 1, np.zeros(1)), ValueError, "takes 3 arguments"),
        (lambda: gl.simulate(lambda: None, 1, 1, count=1), TypeError, "count=1"),
    ],
)
def test_bad_simulations_are_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("cc", [(7, 5), (9, 0)])
def test_the_same_kernels_compile_with_numba_for_sm75_and_sm90(cc):
    cuda = pytest.importorskip("numba.cuda", reason="Numba is not installed")
    f32_2d = "float32[:,:]"
    cases = [
        (ck.copy_strided, "void(float32[:], float32[:], int32)"),
        (ck.copy_gather, "void(float32[:], float32[:], int64[:])"),
        (ck.matmul_naive, f"void({f32_2d}, {f32_2d}, {f32_2d}, int32)"),
        (ck.tiled_matmul(16), f"void({f32_2d}, {f32_2d}, {f32_2d}, int32)"),
        (ck.tiled_matmul(16, barrier=False), f"void({f32_2d}, {f32_2d}, {f32_2d}, int32)"),
        (ck.transpose_shared(32, padded=True), f"void({f32_2d}, {f32_2d}, int32)"),
    ]
    for kernel, signature in cases:
        try:
            ptx, _ = cuda.compile_ptx(kernel, signature, cc=cc)
        except Exception as exc:  # no NVVM library on this machine
            if "NVVM" in str(exc) or "libNVVM" in str(exc):
                pytest.skip(f"Numba finds no NVVM to compile with: {exc}")
            raise
        assert f".target sm_{cc[0]}{cc[1]}" in ptx
        if "tiled" in kernel.__name__:  # cuda.syncthreads became a barrier, and only there
            assert ("bar.sync" in ptx) == ("no_barrier" not in kernel.__name__)


def test_numbas_own_simulator_runs_the_same_source_to_the_same_result(tmp_path):
    pytest.importorskip("numba", reason="Numba is not installed")
    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np\n"
        "from numba import cuda\n"
        "from gpulab.kernels import cuda_kernels as ck\n"
        "a = np.arange(64, dtype=np.float32).reshape(8, 8)\n"
        "b = np.ones((8, 8), dtype=np.float32)\n"
        "c = np.zeros_like(a)\n"
        "cuda.jit(ck.tiled_matmul(4))[(2, 2), (4, 4)](a, b, c, 8)\n"
        "np.save('out.npy', c)\n"
    )
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    b = np.ones((8, 8), dtype=np.float32)
    ours = np.zeros_like(a)
    gl.simulate(ck.tiled_matmul(4), (2, 2), (4, 4), a, b, ours, 8, count=False)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), ours)
    np.testing.assert_allclose(ours, a @ b)


def test_divergence_shows_in_the_active_fraction():
    def even_only(src, dst):
        i = cuda.grid(1)  # noqa: F821 - the simulator supplies ``cuda``
        if i % 2 == 0:
            dst[i] = src[i]

    src, dst = np.arange(64, dtype=np.float32), np.zeros(64, dtype=np.float32)
    c = gl.simulate(even_only, 1, 64, src, dst)
    assert c.active_fraction == 0.5
    assert c.by_array["src", "load"]["sectors"] == 2 * 4  # half the words, same sectors


# --------------------------------------------------------------------------- can Numba compile?
# numba_cuda_available() asks the driver, then compiles and runs a one-line kernel, once per
# session. Here both steps are fakes, so the three cases run on any machine.


class NvvmSupportError(Exception):
    """Stands in for numba.cuda.cudadrv.error.NvvmSupportError (a driver, but no NVVM)."""


@pytest.fixture
def numba_status(monkeypatch):
    """A fresh answer for each test, and the fakes it asks: returns the calls made."""
    pytest.importorskip("numba.cuda", reason="Numba is not installed")
    calls = {"driver": 0, "compile": 0}
    ck._numba_cuda_status.cache_clear()

    def fake(driver=True, compile_error=None):
        def is_available():
            calls["driver"] += 1
            if isinstance(driver, Exception):
                raise driver
            return driver

        def compile_trivial_kernel():
            calls["compile"] += 1
            if compile_error is not None:
                raise compile_error

        monkeypatch.setattr(ck.cuda, "is_available", is_available)
        monkeypatch.setattr(ck, "_compile_trivial_kernel", compile_trivial_kernel)
        return calls

    yield fake
    ck._numba_cuda_status.cache_clear()  # the real answer again for later tests


@pytest.mark.parametrize(
    "driver, reason",
    [
        (False, "Numba sees no CUDA GPU"),
        (OSError("libcuda.so.1: cannot open"), "could not ask the CUDA driver .*OSError: libcuda"),
    ],
)
def test_without_a_driver_nothing_is_compiled_and_the_reason_says_so(numba_status, driver, reason):
    calls = numba_status(driver=driver)
    assert ck.numba_cuda_available() is False
    assert re.search(reason, ck.numba_cuda_missing_reason())
    assert calls == {"driver": 1, "compile": 0}
    with pytest.raises(RuntimeError, match="compiling for a GPU is not possible here: Numba"):
        ck.compile_for_gpu(ck.copy_strided)


def test_a_driver_that_cannot_compile_is_not_enough(numba_status, monkeypatch):
    monkeypatch.setattr(ck, "_numba_cuda_installed", lambda: True)
    missing = NvvmSupportError("libNVVM cannot be found. Do `conda install cudatoolkit`:\nmore")
    calls = numba_status(driver=True, compile_error=missing)
    assert ck.numba_cuda_available() is False
    reason = ck.numba_cuda_missing_reason()
    assert reason.startswith(
        "Numba sees a CUDA GPU but cannot compile a kernel for it "
        "(NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:)"
    )
    assert "NVVM, which comes with the CUDA toolkit, not the driver" in reason
    assert calls == {"driver": 1, "compile": 1}
    with pytest.raises(RuntimeError, match="cannot compile a kernel for it"):
        ck.compile_for_gpu(ck.copy_strided)


def test_a_driver_that_compiles_is_available_and_asked_once(numba_status, monkeypatch):
    calls = numba_status(driver=True)
    assert [ck.numba_cuda_available() for _ in range(3)] == [True, True, True]
    assert ck.numba_cuda_missing_reason() == ""
    assert calls == {"driver": 1, "compile": 1}  # the answer is kept for the session
    monkeypatch.setattr(ck.cuda, "jit", lambda kernel: ("compiled", kernel))
    assert ck.compile_for_gpu(ck.copy_strided) == ("compiled", ck.copy_strided)


def test_the_real_probe_compiles_and_runs_under_numbas_simulator(tmp_path):
    # The one-line kernel and its launch, through Numba's own API, in its CUDA simulator (a
    # fresh process: the simulator is chosen when Numba is imported).
    pytest.importorskip("numba", reason="Numba is not installed")
    code = (
        "from gpulab.kernels import cuda_kernels as ck\n"
        "print(ck.numba_cuda_available(), repr(ck.numba_cuda_missing_reason()))\n"
    )
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True ''"


@pytest.mark.parametrize("name, body", [("vector_add", "tl.store(out_ptr + offsets, x + y"),
                                        ("softmax", "x = x - tl.max(x, axis=0)"),
                                        ("matmul", "tl.dot(a, b, input_precision=PRECISION)"),
                                        ("bias_gelu", "tl.erf(")])
def test_triton_kernel_source_is_the_kernel_as_written_without_lint_comments(name, body):
    from gpulab.kernels import triton_kernels as tk

    source = tk.kernel_source(name)
    assert source.startswith("@triton.jit\ndef _") and body in source, source
    assert "noqa" not in source and "fmt: skip" not in source
    ast.parse(source)  # a whole function, dedented: it parses on its own
    file_text = Path(tk.__file__).read_text(encoding="utf-8")
    assert all(line.strip() in file_text for line in source.splitlines())


def test_triton_kernel_source_refuses_what_is_not_a_kernel():
    from gpulab.kernels import triton_kernels as tk

    with pytest.raises(ValueError, match="name='softmax_kernel'.*softmax"):
        tk.kernel_source("softmax_kernel")
    with pytest.raises(TypeError, match="name=1"):
        tk.kernel_source(1)


class CudaDriverError(Exception):
    """Stands in for numba.cuda.cudadrv.driver.CudaAPIError (the driver refused the code)."""


UNSUPPORTED_PTX = (
    "[222] Call to cuModuleLoadDataEx results in CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
)


@pytest.mark.parametrize("gpu, cuda_major", [("T4", "12"), ("H100", "13")])
def test_ptx_newer_than_the_driver_gets_the_nvjitlink_remedy_for_torchs_cuda(
    numba_status, monkeypatch, fake_gpu, gpu, cuda_major
):
    """Colab's case: NVVM from a newer toolkit emits PTX that the driver refuses."""
    fake_gpu(gpu, cuda=f"{cuda_major}.4")
    monkeypatch.setattr(ck, "_numba_cuda_installed", lambda: True)
    numba_status(driver=True, compile_error=CudaDriverError(UNSUPPORTED_PTX))
    reason = ck.numba_cuda_missing_reason()
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in reason
    assert "nvJitLink 12.3 or later, which links for it, is missing" in reason
    assert f'pip install "numba-cuda[cu{cuda_major}]>=0.22"' in reason
    note = ck.not_run("GB/s not measured")
    assert note == (
        "This GPU cannot run Numba's kernels yet (section 0 says why and what to install): "
        "GB/s not measured."
    )


def test_numbas_own_deprecated_target_failing_on_a_gpu_points_to_numba_cuda(
    numba_status, monkeypatch, fake_gpu
):
    """A fresh pip machine: torch's wheels bring no libNVVM, and numba-cuda is not there."""
    fake_gpu("T4", cuda="12.6")
    monkeypatch.setattr(ck, "_numba_cuda_installed", lambda: False)
    numba_status(driver=True, compile_error=NvvmSupportError("libNVVM cannot be found."))
    reason = ck.numba_cuda_missing_reason()
    assert "Numba's own CUDA target is deprecated" in reason
    assert 'pip install "numba-cuda[cu12]>=0.22" and restart Python' in reason


def test_a_gpu_machine_without_numba_is_told_to_install_numba_cuda(monkeypatch, fake_gpu):
    fake_gpu("H100", cuda="13.0")
    monkeypatch.setattr(ck, "cuda", None)
    ck._numba_cuda_status.cache_clear()
    try:
        reason = ck.numba_cuda_missing_reason()
        note = ck.not_run("counts only")
    finally:
        ck._numba_cuda_status.cache_clear()
    assert reason.startswith('Numba is not installed: pip install "numba-cuda[cu13]>=0.22"')
    assert note == "No GPU with Numba here: counts only."


def test_time_launch_turns_each_gpu_array_into_numbas_view_once_not_per_launch(monkeypatch):
    """A stand-in for Numba's launch path: count the conversions and the launches."""
    pytest.importorskip("numba.cuda", reason="Numba is not installed")
    counts = {"converted": 0, "launched": 0}

    class TorchCudaTensor:  # what Numba sees of a torch CUDA tensor: the interface only
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False)}

    class View:
        def __init__(self, array):
            self.array = array

    def as_cuda_array(array):
        counts["converted"] += 1
        return View(array)

    class Compiled:
        py_func = staticmethod(ck.copy_strided)

        def __getitem__(self, config):
            assert config == (8, 256)

            def launch(*args):  # a real launch would convert any tensor left here
                assert all(not isinstance(a, TorchCudaTensor) for a in args)
                counts["launched"] += 1

            return launch

    monkeypatch.setattr(ck.cuda, "as_cuda_array", as_cuda_array)
    src, dst = TorchCudaTensor(), TorchCudaTensor()
    result = ck.time_launch(Compiled(), 8, 256, src, dst, 3, min_run_time_s=0.01, label="copy")
    assert counts["converted"] == 2  # the two arrays, once; the stride stays a number
    assert counts["launched"] > 2 and len(result.times_s) >= 1
    if not ck.numba_cuda_available():  # an uncompiled kernel is compiled first, or refused
        with pytest.raises(RuntimeError, match="compiling for a GPU is not possible here"):
            ck.time_launch(ck.copy_strided, 8, 256, src, dst, 3)


def test_numba_cudas_redirect_is_set_up_before_numba_cuda_is_imported(tmp_path):
    """numba-cuda sends ``numba.cuda`` to its own target from a .pth file, which Python reads
    only at start-up: after a ``%pip install`` in a running notebook, gpulab imports that
    redirect itself, before its first ``from numba import cuda``. A stand-in redirect
    records whether Numba's CUDA target was already imported when it ran."""
    pytest.importorskip("numba", reason="Numba is not installed")
    (tmp_path / "_numba_cuda_redirector.py").write_text(
        "import sys\nREDIRECTED_BEFORE_NUMBA_CUDA = 'numba.cuda' not in sys.modules\n"
    )
    code = (
        "from gpulab.kernels import cuda_kernels\n"
        "import sys\n"
        "r = sys.modules.get('_numba_cuda_redirector')\n"
        "print(r is not None and r.REDIRECTED_BEFORE_NUMBA_CUDA)\n"
    )
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path.rstrip(os.pathsep))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
