"""Matrix multiplies in each number format: which formats a device sweeps, TF32 emulated
where there is no TF32 hardware, a second route to the CPU's rate, and the tables.

See also the chapter *Parallel compute*, ``notebooks/parallel_compute_lab`` and
``tests/test_matmul_sweep.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpulab._checks import positive_int, positive_number, wrong_type
from gpulab.hardware.precision import UNIT_ROUNDOFF
from gpulab.measure.bench import benchmark
from gpulab.measure.device import supported_precisions, torch_device

__all__ = ["error_table", "matmul_formats", "numpy_matmul_rate", "round_to_tf32"]

#: On a CPU without BF16 instructions a 16-bit matmul is slow: the CPU sweep stops it here.
CPU_BF16_LARGEST = 256


def matmul_formats(device=None) -> tuple[dict, dict[str, int]]:
    """The formats the lab sweeps on ``device`` and the largest size of each that differs
    from the sweep's; prints a note for each format the device does not run natively.

    On a GPU: FP32, TF32, FP16 and BF16, TF32 left out where there is no TF32 hardware (a
    "tf32" run would be FP32). On a CPU: FP64, FP32 and BF16, BF16 stopped at
    :data:`CPU_BF16_LARGEST`.

    Returns
    -------
    formats : dict
        Format name -> torch dtype (TF32 is FP32 storage).
    largest : dict
        Format name -> the largest matrix side to time, where it is capped.

    Examples
    --------
    >>> formats, largest = matmul_formats("cpu")
    >>> list(formats), largest
    (['fp64', 'fp32', 'bf16'], {'bf16': 256})
    """
    import torch

    device = torch_device(device)
    if device.type == "cuda":
        formats = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                   "bf16": torch.bfloat16}
        largest = {}
    else:
        formats = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16}
        largest = {"bf16": CPU_BF16_LARGEST}
    for fmt, reason in supported_precisions(device).items():
        if reason and fmt in formats:
            print(f"note: {reason}")
            if fmt == "tf32":  # no TF32 here: a "tf32" run would really be FP32
                del formats[fmt]
    return formats, largest


def round_to_tf32(t):
    """Round a float32 tensor to TF32's 10 explicit mantissa bits, to nearest even (drops 13
    of FP32's 23), as Tensor Cores round their inputs; the result is float32.

    Examples
    --------
    >>> import torch
    >>> round_to_tf32(torch.tensor([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-10])).tolist()
    [1.0, 1.001953125, 1.0009765625]
    """
    import torch

    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
        raise wrong_type("t", t, "a float32 torch.Tensor")
    bits = t.contiguous().view(torch.int32)
    bits = (bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF
    return bits.view(torch.float32)


def numpy_matmul_rate(n: int, min_run_time_s: float = 0.2, *, rounds: int = 3) -> float:
    """FLOP/s of NumPy's own BLAS multiplying two random ``n × n`` float32 matrices on the
    CPU: a second route to the CPU's rate, independent of torch.

    The least disturbed of ``rounds`` medians: NumPy's BLAS threads wait for each other by
    spinning, so on a machine shared with other work one round can run tens of times slower
    than the next, and other programs' load only ever adds time.

    Examples
    --------
    >>> numpy_matmul_rate(32, min_run_time_s=0.01) > 0
    True
    """
    import numpy as np

    positive_int("n", n)
    positive_number("min_run_time_s", min_run_time_s)
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    positive_int("rounds", rounds)
    best_s = min(benchmark(lambda: a @ b, min_run_time_s=min_run_time_s).median_s
                 for _ in range(rounds))
    return 2 * n**3 / best_s


def error_table(errors: Mapping[str, float]) -> str:
    """Each format's relative error, its unit roundoff and their ratio.

    Examples
    --------
    >>> print(error_table({"fp32": 2**-24}))
    format   relative error  unit roundoff  error / roundoff
    fp32           5.96e-08       5.96e-08              1.00
    """
    lines = [f"{'format':<7}{'relative error':>16}{'unit roundoff':>15}{'error / roundoff':>18}"]
    for fmt, err in errors.items():
        if fmt not in UNIT_ROUNDOFF:
            raise ValueError(f"errors has format {fmt!r}; allowed: {sorted(UNIT_ROUNDOFF)}")
        u = UNIT_ROUNDOFF[fmt]
        lines.append(f"{fmt:<7}{err:>16.2e}{u:>15.2e}{err / u:>18.2f}")
    return "\n".join(lines)
