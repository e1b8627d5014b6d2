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
    "grid, block, message",
    [
        (0, 4, "grid=0"),
        (2, 2048, "2048 threads"),
        ((1, 1, 1, 1), 4, "grid="),
        (2, -1, "block=-1"),
        (True, 4, "grid=True"),
        (2, 4.0, "block=4.0"),
        ("2", 4, "grid='2'"),
        ((2, float("nan")), 4, "grid="),
    ],
)
def test_bad_launch_configurations_are_rejected(grid, block, message):
    with pytest.raises(ValueError, match=message):
        gl.launch(lambda ctx: None, grid, block)


def test_context_exposes_cuda_builtins():
    seen = []
    gl.launch(lambda ctx: seen.append((ctx.gridDim.x, ctx.blockDim.x)), 3, 2)
    assert seen == [(3, 2)] * 6


@pytest.mark.parametrize(
    "n, block, message",
    [
        (0, 4, "n=0"),
        (10, 0, "block=0"),
        (True, 4, "n=True"),
        (10, 2.5, "block=2.5"),
        (float("nan"), 4, "n=nan"),
        ("10", 4, "n='10'"),
    ],  # fmt: skip
)
def test_thread_map_names_a_bad_argument(n, block, message):
    with pytest.raises(ValueError, match=message):
        gl.thread_map(n, block)


def test_a_kernel_must_be_callable_and_dim3_must_hold_counts():
    with pytest.raises(ValueError, match="kernel=3"):
        gl.launch(3, 1, 1)
    with pytest.raises(ValueError, match="y=-1"):
        gl.kernels.simulator.Dim3(1, -1)
    assert gl.kernels.simulator.Dim3(0, 0, 0).size == 0  # an index may be 0
