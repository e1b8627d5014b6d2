"""The four Triton kernels agree with torch (under Triton's interpreter on a CPU)."""

import sys

import pytest
import torch

from gpulab.kernels import triton_kernels as tk

pytestmark = pytest.mark.skipif(not tk.triton_available(), reason=tk.triton_missing_reason())

# Interpreted on CPU tensors without a GPU; compiled on CUDA tensors with one, where tl.dot
# may use TF32 for FP32 inputs (hence the matmul's looser tolerance there).
DEVICE = "cpu" if tk.interpreted() else "cuda"
MATMUL_TOL = 1e-4 if DEVICE == "cpu" else 2e-2


def test_the_interpreter_is_used_without_a_gpu():
    if not torch.cuda.is_available():
        assert tk.interpreted()


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_vector_add(n):
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    torch.testing.assert_close(tk.vector_add(x, y), x + y)


@pytest.mark.parametrize("shape", [(1, 1), (7, 100), (64, 128)])
def test_fused_softmax(shape):
    x = torch.randn(shape, device=DEVICE) * 10
    torch.testing.assert_close(tk.softmax(x), torch.softmax(x, dim=1))


@pytest.mark.parametrize("m, k, n", [(32, 32, 32), (96, 80, 72), (1, 33, 5)])
def test_tiled_matmul(m, k, n):
    a, b = torch.randn(m, k, device=DEVICE), torch.randn(k, n, device=DEVICE)
    torch.testing.assert_close(tk.matmul(a, b), a @ b, rtol=MATMUL_TOL, atol=MATMUL_TOL)


def test_fused_bias_gelu():
    x, bias = torch.randn(33, 70, device=DEVICE), torch.randn(70, device=DEVICE)
    torch.testing.assert_close(tk.bias_gelu(x, bias), torch.nn.functional.gelu(x + bias))


# tl.erf and tl.exp take FP32 or FP64 only: 16-bit inputs are computed in FP32 and the result
# is cast back. The reference does the same in torch, so the two differ by the final rounding
# at most (assert_close's default tolerance for the dtype: about one unit in the last place).
HALF_DTYPES = [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_fused_bias_gelu_in_16_bits(dtype):
    x = torch.randn(33, 70, device=DEVICE).to(dtype)
    bias = torch.randn(70, device=DEVICE).to(dtype)
    out = tk.bias_gelu(x, bias)
    assert out.dtype == dtype
    expected = torch.nn.functional.gelu(x.float() + bias.float()).to(dtype)
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_fused_softmax_in_16_bits(dtype):
    x = (torch.randn(7, 100, device=DEVICE) * 10).to(dtype)
    out = tk.softmax(x)
    assert out.dtype == dtype
    torch.testing.assert_close(out, torch.softmax(x.float(), dim=1).to(dtype))


def _ones(*shape):
    return torch.ones(*shape, device=DEVICE)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tk.vector_add(_ones(3), _ones(4)), "same shape"),
        (lambda: tk.softmax(_ones(3)), "2-D"),
        (lambda: tk.matmul(_ones(2, 3), _ones(2, 3)), "do not multiply"),
        (lambda: tk.bias_gelu(_ones(2, 3), _ones(4)), "length 3"),
        (lambda: tk.vector_add(_ones(2).long(), _ones(2)), "x has dtype torch.int64"),
        (lambda: tk.matmul(_ones(2, 3).double(), _ones(3, 2).double()), "a has dtype"),
    ],
)
def test_bad_inputs_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_non_tensor_is_a_type_error_naming_the_parameter():
    with pytest.raises(TypeError, match=r"x=\[1\.0\] must be a torch tensor .*not list"):
        tk.vector_add([1.0], torch.ones(1))


def test_min_dot_tile_is_the_installed_tritons_rule():
    # K at least 16 for 16-bit operands and 32 for 8-bit ones in every Triton 3; 8 for FP32 in
    # Triton 3.9 (16 in some earlier versions): the rule is read from the installed Triton.
    assert tk.min_dot_tile(torch.float16)[2] == tk.min_dot_tile(torch.bfloat16)[2] == 16
    assert tk.min_dot_tile(torch.int8)[2] == 32
    assert tk.min_dot_tile(torch.float32)[2] in (8, 16)
    with pytest.raises(TypeError, match="dtype='float16' must be a torch.dtype"):
        tk.min_dot_tile("float16")
    with pytest.raises(ValueError, match="dtype=torch.int32 is not a dtype tl.dot multiplies"):
        tk.min_dot_tile(torch.int32)


def test_min_dot_tile_falls_back_to_triton_3_9s_rule(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.compiler", None)  # import fails
    tk._min_dot_tile.cache_clear()
    try:
        assert tk.min_dot_tile(torch.float32) == (1, 1, 8)
        assert tk.min_dot_tile(torch.float16) == (1, 1, 16)
        assert tk.min_dot_tile(torch.int8) == (1, 1, 32)
    finally:
        tk._min_dot_tile.cache_clear()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_smallest_k_tile_a_gpu_compiles_runs_and_half_of_it_is_refused(dtype):
    m_min, n_min, k_min = tk.min_dot_tile(dtype)
    tile = (max(16, m_min), max(16, n_min), k_min)
    a = torch.randn(40, 50, device=DEVICE).to(dtype)
    b = torch.randn(50, 24, device=DEVICE).to(dtype)
    expected = a.float() @ b.float()
    torch.testing.assert_close(tk.matmul(a, b, tile=tile), expected, rtol=2e-2, atol=2e-2)
    # The interpreter would run this tile; a GPU would not compile it, so it is refused here.
    small = (tile[0], tile[1], k_min // 2)
    with pytest.raises(ValueError, match=rf"BLOCK_K={k_min // 2} is below {k_min}, the smallest"):
        tk.matmul(a, b, tile=small)


@pytest.mark.parametrize(
    "tile, error, message",
    [
        ((32, 32, 4), ValueError, r"tile=\(32, 32, 4\): BLOCK_K=4 is below \d+"),
        ((2, 2, 2), ValueError, r"BLOCK_K=2 is below"),
        ((24, 32, 32), ValueError, r"BLOCK_M=24 must be a power of two"),
        ((32, 48, 32), ValueError, r"BLOCK_N=48 must be a power of two"),
        ((32, 32, 0), ValueError, r"BLOCK_K=0 must be a power of two"),
        ((32, 32), ValueError, r"tile=\(32, 32\) must be a tuple of three powers of two"),
        ((4096, 4096, 32), ValueError, r"4096 x 4096 block has 16777216 elements"),
        ("32", TypeError, r"tile='32' must be a tuple of three .*not str"),
        ((32, 32, 16.0), TypeError, r"BLOCK_K=16.0 must be an int .*not float"),
        ((True, 32, 32), TypeError, r"BLOCK_M=True must be an int .*not bool"),
    ],
)
def test_matmul_refuses_tiles_a_gpu_would_not_compile(tile, error, message):
    a, b = torch.randn(8, 8, device=DEVICE), torch.randn(8, 8, device=DEVICE)
    with pytest.raises(error, match=message):
        tk.matmul(a, b, tile=tile)


def test_matmul_refuses_mixed_dtypes_by_name():
    a = torch.randn(16, 16, device=DEVICE).half()
    b = torch.randn(16, 16, device=DEVICE)
    with pytest.raises(ValueError, match=r"a is torch.float16 and b is torch.float32: tl.dot"):
        tk.matmul(a, b)
