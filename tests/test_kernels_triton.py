"""The four Triton kernels agree with torch (under Triton's interpreter on a CPU)."""

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


def _ones(*shape):
    return torch.ones(*shape, device=DEVICE)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tk.vector_add(_ones(3), _ones(4)), "same shape"),
        (lambda: tk.softmax(_ones(3)), "2-D"),
        (lambda: tk.matmul(_ones(2, 3), _ones(2, 3)), "do not multiply"),
        (lambda: tk.bias_gelu(_ones(2, 3), _ones(4)), "length 3"),
        (lambda: tk.vector_add([1.0], torch.ones(1)), "x must be"),
    ],
)
def test_bad_inputs_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
