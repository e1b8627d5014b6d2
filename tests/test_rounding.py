"""The rounding model of a matrix product against products rounded one step at a time.

Each simulation below does in NumPy what the hardware does, one rounding at a time: float64
data rounded to the format, then a dot product of length n summed in float32 (a fused
multiply-add: the exact product added to the partial sum, then one rounding), in order or as
a tree. The model (:mod:`gpulab.costmodels.rounding`) must predict the measured relative error
within 15% (the Frobenius norm over 4,096 dot products averages the randomness away; what is
left is the model's assumption about the data's significands), and its range must contain
what torch and NumPy measure on this CPU at n = 256 (the lab's CPU size) and n = 4096 (its
GPU size).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gpulab as gl
from gpulab.costmodels.rounding import matmul_error_range, matmul_rounding_error

U = gl.hardware.precision.UNIT_ROUNDOFF
ROWS = COLS = 64  # 4,096 dot products: enough for the norm to average out


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((ROWS, n)), rng.standard_normal((n, COLS))


def _relative(c, exact) -> float:
    return float(np.linalg.norm(np.asarray(c, dtype=np.float64) - exact) / np.linalg.norm(exact))


def _sequential_fp32(a32, b32):
    """Sum a[:, k] * b[k, :] over k in order, rounding the partial sum to float32 each step.

    The product of two float32 numbers is exact in float64 (48 significant bits), so adding
    it in float64 and rounding once to float32 is a fused multiply-add."""
    a, b = a32.astype(np.float64), b32.astype(np.float64)
    s = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        s = (s.astype(np.float64) + np.outer(a[:, k], b[k])).astype(np.float32)
    return s


def _pairwise_fp32(a32, b32):
    """Round each product to float32, then add them as a tree, rounding every sum."""
    terms = [
        np.outer(a32[:, k].astype(np.float64), b32[k].astype(np.float64)).astype(np.float32)
        for k in range(a32.shape[1])
    ]
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]


def _round(x, dtype):
    return torch.from_numpy(x).to(dtype).double().numpy()


def _truncate_to_tf32(x):
    bits = torch.from_numpy(x.astype(np.float32)).view(torch.int32)
    return (bits & ~0x1FFF).view(torch.float32).double().numpy()


@pytest.mark.parametrize("n", [256, 4096])
def test_a_sequential_fp32_sum_has_the_error_the_model_predicts(n):
    a, b = _data(n)
    exact = a @ b
    measured = _relative(_sequential_fp32(a.astype(np.float32), b.astype(np.float32)), exact)
    predicted = matmul_rounding_error(n, "fp32")
    assert measured / U["fp32"] == pytest.approx(predicted, rel=0.15)
    low, high = matmul_error_range(n, "fp32")
    assert low < measured / U["fp32"] < high


def test_the_error_of_a_sequential_sum_grows_as_the_square_root_of_its_length():
    """16 times the terms, 4 times the error (not 16, the worst case's growth)."""
    errors = {}
    for n in (256, 4096):
        a, b = _data(n, seed=1)
        c = _sequential_fp32(a.astype(np.float32), b.astype(np.float32))
        errors[n] = _relative(c, a @ b)
    assert errors[4096] / errors[256] == pytest.approx(4, rel=0.15)


def test_a_pairwise_sum_has_the_error_the_model_predicts():
    n = 4096
    a, b = _data(n, seed=2)
    measured = _relative(_pairwise_fp32(a.astype(np.float32), b.astype(np.float32)), a @ b)
    predicted = matmul_rounding_error(n, "fp32", summation="pairwise")
    assert measured / U["fp32"] == pytest.approx(predicted, rel=0.15)
    assert predicted < matmul_rounding_error(n, "fp32") / 10  # the tree is far more accurate


@pytest.mark.parametrize("n", [256, 4096])
@pytest.mark.parametrize("fmt, dtype", [("fp16", torch.float16), ("bf16", torch.bfloat16)])
def test_16_bit_inputs_and_output_cost_about_three_quarters_of_u(n, fmt, dtype):
    """Inputs rounded, products summed exactly (as FP32 accumulation nearly is), output
    rounded to the format."""
    a, b = _data(n, seed=3)
    exact = a @ b
    product = _round(a, dtype) @ _round(b, dtype)  # float64 sums: no accumulation error
    inputs_only = _relative(product, exact) / U[fmt]
    assert inputs_only == pytest.approx(math.sqrt(2 / (8 * math.log(2))), rel=0.15)  # 2ρ²
    stored = _relative(_round(product, dtype), exact) / U[fmt]
    assert stored == pytest.approx(matmul_rounding_error(n, fmt), rel=0.15)
    low, high = matmul_error_range(n, fmt)
    assert low < stored < high


def test_truncated_tf32_inputs_cost_what_the_model_says():
    n = 4096
    a, b = _data(n, seed=4)
    measured = _relative(_truncate_to_tf32(a) @ _truncate_to_tf32(b), a @ b) / U["tf32"]
    assert measured == pytest.approx(
        matmul_rounding_error(n, "tf32", summation="exact", inputs="truncate"), rel=0.15
    )
    low, high = matmul_error_range(n, "tf32")
    assert low < measured < high
    nearest = _relative(_round(a, torch.float32) @ _round(b, torch.float32), a @ b)
    assert nearest < measured * U["tf32"]


@pytest.mark.parametrize("n", [256, 4096])
def test_this_cpus_libraries_land_in_the_range(n):
    """torch and NumPy sum in blocks: between the sequential and the exact case."""
    a, b = _data(n, seed=5)
    exact = a @ b
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    low, high = matmul_error_range(n, "fp32")
    for c in (a32 @ b32, (torch.from_numpy(a32) @ torch.from_numpy(b32)).numpy()):
        assert low < _relative(c, exact) / U["fp32"] < high


def test_the_range_still_catches_a_product_in_the_wrong_precision():
    """FP32 computed with TF32 inputs, and FP16 summed in FP16, fall outside their ranges."""
    n = 4096
    a, b = _data(n, seed=6)
    exact = a @ b
    as_tf32 = _relative(_truncate_to_tf32(a) @ _truncate_to_tf32(b), exact) / U["fp32"]
    assert as_tf32 > matmul_error_range(n, "fp32")[1]
    # FP16 products summed in FP16: the model for that case, against the FP32-sum range.
    assert matmul_rounding_error(n, "fp16", accumulate="fp16") > matmul_error_range(n, "fp16")[1]
    a16, b16 = _round(a, torch.float16), _round(b, torch.float16)
    s = np.zeros((ROWS, COLS), dtype=np.float16)
    for k in range(n):  # a GPU's FP16 FMA: exact product, sum rounded to FP16
        s = (s.astype(np.float64) + np.outer(a16[:, k], b16[k])).astype(np.float16)
    summed_in_fp16 = _relative(s, exact) / U["fp16"]
    assert summed_in_fp16 > matmul_error_range(n, "fp16")[1]
    assert summed_in_fp16 == pytest.approx(
        matmul_rounding_error(n, "fp16", accumulate="fp16"), rel=0.15
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_terms=0), ValueError, "n_terms=0"),
        (dict(n_terms=2.0), TypeError, "n_terms=2.0"),
        (dict(precision="fp64"), ValueError, "precision='fp64'"),
        (dict(accumulate="fp8"), ValueError, "accumulate='fp8'"),
        (dict(summation="kahan"), ValueError, "summation='kahan'"),
        (dict(inputs="up"), ValueError, "inputs='up'"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    call = dict(n_terms=256) | kwargs
    with pytest.raises(error, match=match):
        matmul_rounding_error(**call)


def test_the_range_is_ordered_and_refuses_bad_arguments():
    for fmt in gl.costmodels.rounding.MATMUL_PRECISIONS:
        low, high = matmul_error_range(1024, fmt)
        assert 0 < low < high
    with pytest.raises(ValueError, match="precision='int8'"):
        matmul_error_range(16, "int8")
    with pytest.raises(TypeError, match="n_terms=True"):
        matmul_error_range(True, "fp32")
