import numpy as np
import pytest

import gpulab as gl


def saxpy(ctx, a, x, y, out, n):
    i = ctx.global_x
    if i < n:
        out[i] = a * x[i] + y[i]


def test_one_dimensional_launch_covers_every_element_once():
    n, block = 1000, 128
    x, y, out = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    gl.launch(saxpy, -(-n // block), block, 2.0, x, y, out, n)
    np.testing.assert_array_equal(out, 2.0 * x + 1.0)


def test_two_dimensional_grid_indexes_a_matrix():
    rows, cols = 5, 7
    out = np.zeros((rows, cols))

    def fill(ctx, out):
        r = ctx.blockIdx.y * ctx.blockDim.y + ctx.threadIdx.y
        c = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x
        if r < rows and c < cols:
            out[r, c] = 10 * r + c

    gl.launch(fill, (2, 3), (4, 2), out)
    np.testing.assert_array_equal(out, 10 * np.arange(rows)[:, None] + np.arange(cols))


def test_thread_map_matches_the_index_formula():
    blocks, threads = gl.thread_map(10, 4)
    np.testing.assert_array_equal(blocks * 4 + threads, np.arange(10))
    assert blocks.max() == 2


@pytest.mark.parametrize(
    "grid, block, error, message",
    [
        (0, 4, ValueError, "grid=0"),
        (2, 2048, ValueError, "2048 threads"),
        ((1, 1, 1, 1), 4, ValueError, "grid="),
        ((), 4, ValueError, "grid="),
        (2, -1, ValueError, "block=-1"),
        ((2, 0), 4, ValueError, "grid="),
        (True, 4, TypeError, "grid=True"),
        (2, 4.0, TypeError, "block=4.0"),
        ("2", 4, TypeError, "grid='2'"),
        ((2, float("nan")), 4, TypeError, "grid="),
    ],
)
def test_bad_launch_configurations_are_rejected(grid, block, error, message):
    with pytest.raises(error, match=message):
        gl.launch(lambda ctx: None, grid, block)


def test_context_exposes_cuda_builtins():
    seen = []
    gl.launch(lambda ctx: seen.append((ctx.gridDim.x, ctx.blockDim.x)), 3, 2)
    assert seen == [(3, 2)] * 6


@pytest.mark.parametrize(
    "n, block, error, message",
    [
        (0, 4, ValueError, "n=0"),
        (10, 0, ValueError, "block=0"),
        (True, 4, TypeError, "n=True"),
        (10, 2.5, TypeError, "block=2.5"),
        (float("nan"), 4, TypeError, "n=nan"),
        ("10", 4, TypeError, "n='10'"),
    ],  # fmt: skip
)
def test_thread_map_names_a_bad_argument(n, block, error, message):
    with pytest.raises(error, match=message):
        gl.thread_map(n, block)


def test_a_kernel_must_be_callable_and_dim3_must_hold_counts():
    with pytest.raises(TypeError, match="kernel=3"):
        gl.launch(3, 1, 1)
    with pytest.raises(TypeError, match="kernel=3"):
        gl.simulate(3, 1, 1)
    with pytest.raises(TypeError, match="count=1"):
        gl.simulate(lambda: None, 1, 1, count=1)
    dim = gl.kernels.simulator.Dim3(1)
    with pytest.raises(TypeError, match=r"blockIdx=\(0, 0, 0\) must be a Dim3"):
        gl.kernels.simulator.ThreadContext((0, 0, 0), dim, dim, dim)
    with pytest.raises(ValueError, match="y=-1"):
        gl.kernels.simulator.Dim3(1, -1)
    assert gl.kernels.simulator.Dim3(0, 0, 0).size == 0  # an index may be 0
