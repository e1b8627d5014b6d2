"""A scaling calculator: model size, GPU, GPU count and link → step time and efficiency.

:func:`scaling_estimate` does the arithmetic (plain Python, testable, usable in a book page);
:func:`scaling_calculator` wraps it in ipywidgets, imported only when it is called so the
rest of gpulab works without a notebook front end.

Every number it shows is a **prediction** from the spec registry (GPU peak, link
bandwidth) and the stated assumptions (tokens per GPU, model FLOPs utilisation, overlap).

See also the chapter "Scaling out: distributed training" (``book/distributed.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab._checks import positive_number
from gpulab.comms import StepTime, _as_link, dp_step_time, list_interconnects
from gpulab.specs import get_spec, list_specs

__all__ = ["ScalingEstimate", "scaling_calculator", "scaling_estimate"]


@dataclass(frozen=True)
class ScalingEstimate:
    """A predicted data-parallel training step, with the inputs it came from."""

    n_params: float
    gpu: str
    p: int
    link: str
    tokens_per_gpu: float
    mfu: float
    grad_bytes_per_param: float
    overlap: float
    step: StepTime

    def summary(self) -> str:
        """A few lines for a reader: inputs, then step time, communication share, efficiency."""
        s = self.step
        return "\n".join(
            [
                f"Prediction for {self.n_params / 1e9:g}B parameters on {self.p} x {self.gpu}, "
                f"linked by {self.link}",
                f"  assumptions: {self.tokens_per_gpu:,.0f} tokens per GPU per step, "
                f"MFU {self.mfu:.0%}, {self.grad_bytes_per_param:g}-byte gradients, "
                f"overlap {self.overlap:.0%}",
                f"  compute {s.compute_s:.3f} s + exposed all-reduce {s.exposed_comm_s:.3f} s "
                f"(of {s.comm_s:.3f} s) = step {s.total_s:.3f} s",
                f"  communication share {s.comm_share:.1%}, scaling efficiency "
                f"{s.efficiency:.1%}, speed-up {s.speedup:.1f}x over one GPU",
            ]
        )


def scaling_estimate(
    n_params: float,
    gpu: str,
    p: int,
    link,
    *,
    tokens_per_gpu: float = 16384,
    mfu: float = 0.4,
    grad_bytes_per_param: float = 2,
    overlap: float = 0.0,
) -> ScalingEstimate:
    """Predict a data-parallel step of a transformer of ``n_params`` on ``p`` GPUs.

    Compute per GPU is ``6 · n_params · tokens_per_gpu`` FLOPs (Kaplan et al. 2020) at
    ``mfu`` × the GPU's dense FP16 tensor peak from the registry; the gradients
    (``n_params · grad_bytes_per_param`` bytes) are ring-all-reduced over ``link``
    (:func:`gpulab.dp_step_time`).

    Parameters
    ----------
    n_params : float
        Parameters of the model.
    gpu : str
        A GPU in the spec registry with an FP16 tensor figure, e.g. ``"H100 SXM"``.
    p : int
        Number of GPUs (data-parallel ranks).
    link : Interconnect or str
        The link each GPU all-reduces over, e.g. ``"NVLink 4"`` or ``"InfiniBand NDR"``.
    tokens_per_gpu : float
        Tokens each GPU processes per step (micro-batch × sequence length).
    mfu : float
        Model FLOPs utilisation, 0–1. Large runs report 0.38–0.52 (Llama 3, PaLM,
        Megatron-LM); 0.4 is the default.
    grad_bytes_per_param : float
        2 for BF16/FP16 gradients, 4 for FP32.
    overlap : float
        Fraction of compute the all-reduce can hide behind (0 to 1).

    Examples
    --------
    >>> import gpulab as gl
    >>> est = gl.scaling_estimate(7e9, "H100 SXM", 8, "NVLink 4")
    >>> round(est.step.compute_s, 3), round(est.step.efficiency, 3)
    (1.739, 0.97)
    """
    n = positive_number("n_params", n_params)
    tokens = positive_number("tokens_per_gpu", tokens_per_gpu)
    mfu = positive_number("mfu", mfu)
    if mfu > 1:
        raise ValueError(f"mfu={mfu!r} must be between 0 and 1")
    spec = get_spec(gpu)
    compute_s = 6.0 * n * tokens / (spec.peak("fp16") * mfu)
    the_link = _as_link(link)
    grad = n * positive_number("grad_bytes_per_param", grad_bytes_per_param)
    step = dp_step_time(compute_s, grad, p, link=the_link, overlap=overlap)
    return ScalingEstimate(
        n_params=n,
        gpu=spec.name,
        p=step.n_gpus,
        link=the_link.name,
        tokens_per_gpu=tokens,
        mfu=mfu,
        grad_bytes_per_param=grad_bytes_per_param,
        overlap=overlap,
        step=step,
    )


def _gpu_choices() -> list[str]:
    return [s.name for s in list_specs("gpu") if "fp16" in s.peak_flops]


def scaling_calculator(
    n_params: float = 7e9,
    gpu: str = "H100 SXM5 80GB",
    p: int = 64,
    link: str = "InfiniBand NDR (4x)",
    *,
    tokens_per_gpu: float = 16384,
    mfu: float = 0.4,
    overlap: float = 0.0,
):
    """Sliders and menus for :func:`scaling_estimate`; returns the widget box.

    The box starts showing the estimate for the arguments given, so a recorded notebook
    (or a book page, where nothing can be moved) still shows a useful result. Without
    ipywidgets it prints that estimate and says how to get the interactive version.
    """
    first = scaling_estimate(
        n_params, gpu, p, link, tokens_per_gpu=tokens_per_gpu, mfu=mfu, overlap=overlap
    )
    try:
        import ipywidgets as w
    except ImportError:
        print(first.summary())
        print("(Install ipywidgets for the interactive calculator: pip install ipywidgets)")
        return None

    style = {"description_width": "150px"}
    layout = w.Layout(width="520px")
    params = w.FloatLogSlider(
        value=n_params, base=10, min=8, max=12, step=0.1, description="parameters",
        readout_format=".2e", style=style, layout=layout,
    )  # fmt: skip
    gpus = w.Dropdown(
        options=_gpu_choices(), value=first.gpu, description="GPU", style=style, layout=layout
    )
    count = w.SelectionSlider(
        options=[2**k for k in range(11)], value=p, description="GPUs", style=style,
        layout=layout,
    )  # fmt: skip
    links = w.Dropdown(
        options=[x.name for x in list_interconnects()], value=first.link,
        description="interconnect", style=style, layout=layout,
    )  # fmt: skip
    tokens = w.IntSlider(
        value=int(tokens_per_gpu), min=1024, max=131072, step=1024,
        description="tokens per GPU", style=style, layout=layout,
    )  # fmt: skip
    util = w.FloatSlider(
        value=mfu, min=0.1, max=0.8, step=0.05, description="MFU", style=style, layout=layout
    )
    hide = w.FloatSlider(
        value=overlap, min=0.0, max=1.0, step=0.05, description="overlap", style=style,
        layout=layout,
    )  # fmt: skip
    out = w.Output()

    def show(estimate: ScalingEstimate) -> None:
        # Set the output directly (not "with out: print"): it works with or without a kernel.
        text = estimate.summary() + "\n"
        out.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)

    def update(_change=None) -> None:
        show(
            scaling_estimate(
                params.value,
                gpus.value,
                count.value,
                links.value,
                tokens_per_gpu=tokens.value,
                mfu=util.value,
                overlap=hide.value,
            )  # fmt: skip
        )

    for control in (params, gpus, count, links, tokens, util, hide):
        control.observe(update, names="value")
    show(first)
    return w.VBox([params, gpus, count, links, tokens, util, hide, out])
