"""How large the rounding error of a matrix product is, from its formats and the length of
its sums.

A product ``C = A @ B`` of ``n × n`` matrices is ``n²`` dot products of length ``n``. Its
relative error ``‖C − C_exact‖ / ‖C_exact‖`` (Frobenius norms) has three sources, each
measured in units of the input format's unit roundoff ``u``
(:data:`gpulab.hardware.precision.UNIT_ROUNDOFF`):

* **rounding the inputs** to the format: every product ``a·b`` carries the rounding of both
  factors;
* **the accumulation**: every addition of a dot product rounds its partial sum to the
  accumulation format (FP32 for Tensor Cores and for a CPU);
* **rounding the output**, when the result is stored in a narrower format than the sums (a
  product of FP16 or BF16 matrices is FP16 or BF16).

The size of each comes from the standard statistical model of rounding (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, §2.8; Higham and Mary, "A New
Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): the
rounding errors of random data are independent with mean zero, so they add like a random
walk. A sum of ``n`` terms then has an error that grows about as ``√n·u``, where the
worst-case bound, ``γ_n = n·u / (1 − n·u)`` times the sum of the terms' magnitudes (Higham
2002, §3.1), grows as ``n``. Round-to-nearest changes a number by at most ``u`` and by
``ρ·u`` in root mean square, with ``ρ² = 1 / (8 ln 2) ≈ 0.18`` for data whose significands
are spread logarithmically (as products and sums of random numbers are). Truncation (round
toward zero) doubles the step and adds a bias of ``−u / (2 ln 2)`` per rounding.

For a product of random matrices with zero-mean entries this gives, in units of ``u²``:

* inputs: ``2ρ²`` rounded to nearest, ``4·(1/(2 ln 2))² + 2·σ_t²`` truncated (the bias of both
  factors adds up coherently; ``σ_t² ≈ 0.20`` is the rest);
* a **sequential** sum in the accumulation format (one fused multiply-add after another, as a
  GPU thread or a CPU's inner loop does): ``ρ²·r·(n + 1) / 2``, with ``r = (u_acc / u)²``,
  because the ``k``-th partial sum has grown to ``√k`` times a term;
* a **pairwise** sum (a tree of additions): ``ρ²·r·(1 + ⌈log₂ n⌉)``, products rounded
  first;
* an **exact** sum: only its final rounding to the accumulation format, ``ρ²·r``;
* the output, rounded to a narrower format: ``ρ²·(u_out / u)²``.

The relative error is the square root of the total. Libraries sum in blocks, between the
sequential and the exact case, so :func:`matmul_error_range` spans the two, with a factor of
2 either way for what the model leaves out. ``tests/test_rounding.py`` checks the formulas
against float32 sums simulated one rounding at a time, at n = 256 and n = 4096.
"""

from __future__ import annotations

import math

from gpulab._checks import choice, positive_int
from gpulab.hardware.precision import UNIT_ROUNDOFF

__all__ = ["MATMUL_PRECISIONS", "SUMMATIONS", "matmul_error_range", "matmul_rounding_error"]

#: Formats whose products the model describes (those with one unit roundoff; FP8 has two).
MATMUL_PRECISIONS = tuple(UNIT_ROUNDOFF)

#: Orders of summation the model knows: one addition after another, a tree, or no error at
#: all before the final rounding.
SUMMATIONS = ("sequential", "pairwise", "exact")

#: Mean square of a relative rounding error, in units of u², rounding to nearest:
#: the error is uniform over half a step, and significands are spread logarithmically.
_NEAREST_MS = 1 / (8 * math.log(2))
#: Truncation: mean (a bias toward zero) and mean square, in units of u and u².
_TRUNCATE_MEAN = -1 / (2 * math.log(2))
_TRUNCATE_MS = 1 / (2 * math.log(2))

#: Where the output lands when the inputs are in a format: FP16 and BF16 products are stored in
#: their format; TF32 is FP32 storage (a Tensor Core mode, not a dtype).
_OUTPUT = {"fp32": "fp32", "tf32": "fp32", "fp16": "fp16", "bf16": "bf16"}


def matmul_rounding_error(
    n_terms: int,
    precision: str = "fp32",
    *,
    accumulate: str = "fp32",
    summation: str = "sequential",
    inputs: str = "nearest",
) -> float:
    """The model's relative error of a product of random matrices, in units of ``u``.

    Parameters
    ----------
    n_terms : int
        Length of each dot product: the inner dimension ``k`` of an ``(m × k) @ (k × n)``
        product. Positive.
    precision : str
        Format the inputs are rounded to, one of :data:`MATMUL_PRECISIONS`; ``u`` is its unit
        roundoff. The inputs start at a higher precision (float64 data, as in the lab).
    accumulate : str
        Format of the partial sums, one of :data:`MATMUL_PRECISIONS`: FP32 for Tensor Cores,
        cuBLAS and CPUs.
    summation : {"sequential", "pairwise", "exact"}
        Order of the additions (see the module docstring).
    inputs : {"nearest", "truncate"}
        How the inputs are rounded to ``precision``: to nearest (PyTorch's conversions), or
        toward zero.

    Returns
    -------
    float
        Expected ``‖C − C_exact‖ / ‖C_exact‖`` divided by ``u`` (root mean square over the
        rounding errors; for large matrices the measured value is within a few percent of
        it).

    Examples
    --------
    >>> round(matmul_rounding_error(4096, "fp32"), 1)       # sequential FP32 sums
    19.2
    >>> round(matmul_rounding_error(256, "fp32"), 2)
    4.85
    >>> round(matmul_rounding_error(4096, "bf16"), 2)       # inputs and output rounded
    0.74
    >>> round(matmul_rounding_error(4096, "fp32", summation="pairwise"), 2)
    1.64
    """
    n_terms = positive_int("n_terms", n_terms)
    choice("precision", precision, MATMUL_PRECISIONS)
    choice("accumulate", accumulate, MATMUL_PRECISIONS)
    choice("summation", summation, SUMMATIONS)
    choice("inputs", inputs, ("nearest", "truncate"))
    u = UNIT_ROUNDOFF[precision]
    if inputs == "nearest":
        total = 2 * _NEAREST_MS
    else:  # both factors biased the same way: the biases add, the rest is random
        total = (2 * _TRUNCATE_MEAN) ** 2 + 2 * (_TRUNCATE_MS - _TRUNCATE_MEAN**2)
    r = (UNIT_ROUNDOFF[accumulate] / u) ** 2
    if summation == "sequential":
        total += _NEAREST_MS * r * (n_terms + 1) / 2
    elif summation == "pairwise":
        total += _NEAREST_MS * r * (1 + math.ceil(math.log2(n_terms)))
    else:
        total += _NEAREST_MS * r
    output = _OUTPUT[precision]
    if UNIT_ROUNDOFF[output] > UNIT_ROUNDOFF[accumulate]:  # stored narrower than summed
        total += _NEAREST_MS * (UNIT_ROUNDOFF[output] / u) ** 2
    return math.sqrt(total)


def matmul_error_range(
    n_terms: int, precision: str = "fp32", *, accumulate: str = "fp32"
) -> tuple[float, float]:
    """The range a measured product error should fall in, in units of ``u``.

    The low end is half the error of rounding alone (inputs to nearest, the sum exact but
    for its final rounding): no order of summation does better. The high end is twice the
    error of a sequential sum, the longest chain of roundings a library uses, with the
    inputs truncated where the hardware rounds them (FP32 data entering TF32 Tensor Cores).
    The factor of 2 either way covers what the model leaves out (the data's exact
    distribution, a library's blocking); a format computed in another precision than it
    claims still falls outside: FP32 computed as TF32 is about 5,000 FP32 unit roundoffs
    off, FP16 summed in FP16 over 4,096 terms about 19 FP16 ones.

    Parameters
    ----------
    n_terms : int
        Length of each dot product (the inner dimension). Positive.
    precision : str
        Format of the inputs, one of :data:`MATMUL_PRECISIONS`.
    accumulate : str
        Format of the partial sums, one of :data:`MATMUL_PRECISIONS`.

    Returns
    -------
    tuple of float
        ``(low, high)``: the measured relative error divided by ``precision``'s unit
        roundoff should lie between them.

    Examples
    --------
    >>> [round(x, 2) for x in matmul_error_range(256, "fp32")]
    [0.37, 9.7]
    >>> [round(x, 2) for x in matmul_error_range(4096, "fp32")]   # the GPU lab's size
    [0.37, 38.46]
    >>> [round(x, 2) for x in matmul_error_range(4096, "tf32")]   # inputs may be truncated
    [0.3, 3.15]
    """
    low = matmul_rounding_error(n_terms, precision, accumulate=accumulate, summation="exact")
    high = matmul_rounding_error(
        n_terms,
        precision,
        accumulate=accumulate,
        summation="sequential",
        inputs="truncate" if precision == "tf32" else "nearest",
    )
    return low / 2, 2 * high
