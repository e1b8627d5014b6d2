"""Model and hardware FLOPs utilisation (MFU, HFU): how much of the peak a training run used.

* **MFU** (model FLOPs utilisation, Chowdhery et al. 2022, PaLM, Appendix B) counts only the
  FLOPs the model needs: forward and backward once, about ``6·N`` per token for a transformer
  of ``N`` parameters. It is the fair figure for comparing runs: recomputation, padding or a
  slow kernel cannot raise it.
* **HFU** (hardware FLOPs utilisation, Korthikanti et al. 2022) counts the FLOPs the hardware
  really did, recomputed forward passes included. It is at least the MFU, and says how busy
  the arithmetic units were.

Both divide by the time the step took on all GPUs and by their peak:
``flops_per_step / (step_time_s · n_gpus · peak_flops)``. The peak is the datasheet's on a GPU
(:meth:`DeviceSpec.peak <gpulab.specs.DeviceSpec.peak>`) and the estimate of
:func:`gpulab.estimate_cpu_peak` on a CPU.

See also the chapter "Scaling out: distributed training" (``book/distributed.md``).
"""

from __future__ import annotations

from gpulab._checks import fraction, positive_int, positive_number

__all__ = ["hfu", "mfu", "recompute_flops"]


def _utilisation(flops_per_step, step_time_s, peak_flops, n_gpus, flops_name: str) -> float:
    flops = positive_number(flops_name, flops_per_step)
    time_s = positive_number("step_time_s", step_time_s)
    peak = positive_number("peak_flops", peak_flops)
    n = positive_int("n_gpus", n_gpus)
    return flops / (time_s * n * peak)


def mfu(model_flops_per_step: float, step_time_s: float, peak_flops: float, n_gpus: int = 1):
    """Model FLOPs utilisation: the model's FLOPs per step over what the hardware could do.

    Parameters
    ----------
    model_flops_per_step : float
        FLOPs one training step needs without recomputation (forward + backward), e.g.
        ``6 · N · tokens`` for a transformer or ``gl.count_flops(model, x, backward=True)``.
    step_time_s : float
        Measured time of one step, in seconds.
    peak_flops : float
        Peak FLOP/s of one device at the precision the step ran in.
    n_gpus : int
        Devices that shared the step.

    Returns
    -------
    float
        A fraction; above 1 means the peak was underestimated (or the FLOPs overcounted).

    Examples
    --------
    PaLM 540B's reported 46.2% MFU (Chowdhery et al. 2022, Table 3) from 238.3 K tokens/s on
    6,144 TPU v4 chips of 275 TFLOP/s, at 6·N FLOPs per token plus attention:

    >>> import gpulab as gl
    >>> tpu_v4 = gl.get_spec("TPU v4").peak("bf16")   # 275 TFLOP/s, from the registry
    >>> round(gl.mfu(238.3e3 * 6 * 540e9, 1.0, tpu_v4, n_gpus=6144), 3)   # 6·N only
    0.457
    >>> gl.mfu(6e12, 2.0, 1e12, n_gpus=4)
    0.75
    >>> gl.mfu(6e12, 0, 1e12)
    Traceback (most recent call last):
    ...
    ValueError: step_time_s=0 must be a positive number
    """
    return _utilisation(
        model_flops_per_step, step_time_s, peak_flops, n_gpus, "model_flops_per_step"
    )


def hfu(hardware_flops_per_step: float, step_time_s: float, peak_flops: float, n_gpus: int = 1):
    """Hardware FLOPs utilisation: FLOPs the hardware really ran (recomputation included).

    Same arithmetic as :func:`mfu`, with the FLOPs of recomputed forward passes counted,
    e.g. from :func:`recompute_flops` or by counting the operators that ran.

    Examples
    --------
    With every forward pass recomputed once, the hardware does 8·N instead of 6·N per token:

    >>> import gpulab as gl
    >>> model = 6e12
    >>> gl.mfu(model, 1.0, 10e12), gl.hfu(gl.recompute_flops(model), 1.0, 10e12)
    (0.6, 0.8)
    """
    return _utilisation(
        hardware_flops_per_step, step_time_s, peak_flops, n_gpus, "hardware_flops_per_step"
    )


def recompute_flops(model_flops_per_step: float, recomputed_fraction: float = 1.0) -> float:
    """FLOPs a step runs when ``recomputed_fraction`` of the forward pass is recomputed.

    The forward pass is a third of ``forward + backward`` (the backward computes two
    products per forward product: gradients of the inputs and of the weights), so
    recomputing all of it adds a third: ``model · (1 + recomputed_fraction / 3)``, the
    "33% more compute" rule of thumb for full activation checkpointing (Chen et al. 2016).

    Parameters
    ----------
    model_flops_per_step : float
        FLOPs of one step without recomputation.
    recomputed_fraction : float
        Share of the forward FLOPs run a second time in the backward pass: 1 for full
        checkpointing, 0 for none, in between for selective recomputation.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.recompute_flops(6e12), gl.recompute_flops(6e12, 0.0)
    (8000000000000.0, 6000000000000.0)
    >>> gl.recompute_flops(6e12, 1.5)
    Traceback (most recent call last):
    ...
    ValueError: recomputed_fraction=1.5 must be a fraction from 0 to 1
    """
    flops = positive_number("model_flops_per_step", model_flops_per_step)
    share = fraction("recomputed_fraction", recomputed_fraction)
    return flops * (1.0 + share / 3.0)
