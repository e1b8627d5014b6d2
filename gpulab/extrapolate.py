"""From a small run measured here to a full-scale prediction: time to train on any device.

The model is the simplest that is honest about its inputs::

    time = total training FLOPs / (devices × peak FLOP/s × utilisation)

``total training FLOPs`` comes from a count (FlopCounterMode on the real model) and a rule:
backward ≈ 2 × forward, so one training pass over an example costs 3 × its forward FLOPs;
for transformers, 6 · N · D (N parameters, D tokens; Kaplan et al. 2020). ``peak`` comes
from the spec registry (one source URL per row). ``utilisation`` is the one number nobody
can look up: it is an assumption, stated with every prediction, and the labs measure it on
the machine at hand. Several devices add a communication term from
:func:`gpulab.comms.dp_step_time`.

Every result prints as a PREDICTION with its inputs and assumptions, and
:func:`plot_extrapolation` draws the course's figure "from our measurement to the
full-scale prediction": measured bars solid, predictions hatched, published results in
their own colour, the assumptions written under the axes.

See also the case-study chapters (``book/case_resnet.md``, ``book/case_bert.md``,
``book/case_alphago.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpulab._checks import positive_int
from gpulab.specs import DeviceSpec, get_spec
from gpulab.units import format_duration

__all__ = [
    "IMAGENET_1K_TRAIN_IMAGES",
    "TimeToTrain",
    "TrainingJob",
    "plot_extrapolation",
    "resnet_training_job",
    "time_to_train",
    "time_to_train_data_parallel",
    "training_dtype",
    "transformer_training_job",
]

#: Training images in ImageNet-1k (ILSVRC-2012), the dataset of the ResNet-50 benchmark.
IMAGENET_1K_TRAIN_IMAGES = 1_281_167

_MINUTE, _HOUR, _DAY, _YEAR = 60.0, 3600.0, 86400.0, 365.25 * 86400.0


def _positive(name: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a positive number") from None
    if not math.isfinite(number) or number <= 0 or isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be a positive number")
    return number


@dataclass(frozen=True)
class TrainingJob:
    """A full training job, reduced to the number of FLOPs it takes.

    Attributes
    ----------
    name : str
        For example ``"ResNet-50 × ImageNet-1k × 90 epochs"``.
    flops : float
        Total training FLOPs (a multiply-add counts as 2).
    formula : str
        How ``flops`` was computed, with the numbers filled in.
    """

    name: str
    flops: float
    formula: str

    def __str__(self) -> str:
        return f"{self.name}: {self.flops:.3g} FLOP = {self.formula}"


def resnet_training_job(
    forward_flops_per_image: float,
    *,
    images: int = IMAGENET_1K_TRAIN_IMAGES,
    epochs: int = 90,
    backward_factor: float = 2.0,
    name: str | None = None,
) -> TrainingJob:
    """FLOPs to train an image classifier: (1 + backward_factor) × forward × images × epochs.

    Parameters
    ----------
    forward_flops_per_image : float
        Forward FLOPs of one image (ResNet-50 at 224×224: 8.18e9, by FlopCounterMode).
    images : int
        Training images per epoch (default ImageNet-1k's 1,281,167).
    epochs : int
        Passes over the data (90 in the classic recipe).
    backward_factor : float
        Backward cost as a multiple of forward: 2 (gradients for inputs and for weights).

    Examples
    --------
    >>> job = resnet_training_job(8.18e9)
    >>> f"{job.flops:.3e}"
    '2.830e+18'
    """
    fwd = _positive("forward_flops_per_image", forward_flops_per_image)
    images = positive_int("images", images)
    epochs = positive_int("epochs", epochs)
    factor = 1 + _positive("backward_factor", backward_factor)
    name = name or f"ResNet × {images:,} images × {epochs} epochs"
    formula = f"{factor:g} × {fwd / 1e9:.3g} GFLOP forward × {images:,} images × {epochs} epochs"
    return TrainingJob(name, factor * fwd * images * epochs, formula)


def transformer_training_job(
    n_params: float, n_tokens: float, *, name: str | None = None
) -> TrainingJob:
    """FLOPs to train a transformer by the 6·N·D rule (Kaplan et al., 2020).

    Forward costs about 2 FLOPs per parameter per token, backward about 4; the attention
    term (∝ sequence length) is left out, which is fair while d_model > sequence / 12.

    Parameters
    ----------
    n_params : float
        N: parameters, without the embeddings (a lookup, not a matmul).
    n_tokens : float
        D: tokens processed in training (steps × sequences per batch × sequence length).

    Examples
    --------
    >>> f"{transformer_training_job(175e9, 300e9).flops:.3g}"   # GPT-3: 3.14e23 published
    '3.15e+23'
    """
    n = _positive("n_params", n_params)
    d = _positive("n_tokens", n_tokens)
    name = name or f"transformer, {n / 1e6:,.0f} M parameters × {d:.3g} tokens"
    return TrainingJob(name, 6 * n * d, f"6 × {n:.4g} parameters × {d:.4g} tokens")


def training_dtype(device: DeviceSpec | str) -> str:
    """The precision a device trains in best: BF16, else FP16, else FP32 (no Tensor Cores).

    Examples
    --------
    >>> training_dtype("V100"), training_dtype("A100 80GB"), training_dtype("K80")
    ('fp16', 'bf16', 'fp32')
    """
    spec = device if isinstance(device, DeviceSpec) else get_spec(device)
    for dtype in ("bf16", "fp16", "fp32"):
        if dtype in spec.peak_flops:
            return dtype
    raise ValueError(f"{spec.name} has no FP32, FP16 or BF16 peak in the registry")


@dataclass(frozen=True)
class TimeToTrain:
    """A predicted time to train, with every input that produced it.

    Attributes
    ----------
    job : TrainingJob
        What is trained, and its FLOPs.
    device : str
        Registry name of the device.
    n_devices : int
        Devices working together.
    dtype : str
        Precision whose peak was used.
    peak_flops : float
        Peak FLOP/s of one device in that precision (datasheet).
    utilisation : float
        Fraction of peak assumed for the compute (0 to 1).
    seconds : float
        The prediction.
    source_url : str
        Where the peak comes from.
    link : str or None
        The interconnect of a data-parallel prediction.
    comm_fraction : float
        Share of the time spent in exposed communication (0 without a link).
    assumptions : tuple of str
        Further assumptions, one sentence each.
    """

    job: TrainingJob
    device: str
    n_devices: int
    dtype: str
    peak_flops: float
    utilisation: float
    seconds: float
    source_url: str
    link: str | None = None
    comm_fraction: float = 0.0
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def hours(self) -> float:
        return self.seconds / _HOUR

    @property
    def days(self) -> float:
        return self.seconds / _DAY

    @property
    def label(self) -> str:
        """Short label for a figure, e.g. ``"8 × A100 80GB SXM4 (bf16)"``."""
        return f"{self.n_devices} × {self.device} ({self.dtype})"

    def __str__(self) -> str:
        lines = [
            f"PREDICTION (not measured): {self.job.name} on {self.label}: "
            f"{format_duration(self.seconds)}",
            f"  = {self.job.flops:.3g} FLOP / ({self.n_devices} × "
            f"{self.peak_flops / 1e12:,.4g} TFLOP/s peak × {self.utilisation:.0%} utilisation)"
            + (
                f" + communication over {self.link} ({self.comm_fraction:.0%} of the time)"
                if self.link
                else ""
            ),
            f"  FLOPs: {self.job.formula}",
            f"  peak: {self.source_url}",
        ]
        lines += [f"  assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)


def _peak(device: DeviceSpec | str, dtype: str | None) -> tuple[DeviceSpec, str, float]:
    spec = device if isinstance(device, DeviceSpec) else get_spec(device)
    dtype = dtype or training_dtype(spec)
    return spec, dtype, spec.peak(dtype)


def _utilisation(value) -> float:
    u = _positive("utilisation", value)
    if u > 1:
        raise ValueError(f"utilisation={value!r} must be a fraction of peak, above 0 and at most 1")
    return u


def time_to_train(
    job: TrainingJob,
    device: DeviceSpec | str,
    *,
    utilisation: float,
    n_devices: int = 1,
    dtype: str | None = None,
    assumptions: Sequence[str] = (),
) -> TimeToTrain:
    """Predict the time to train ``job`` on ``n_devices`` devices that scale perfectly.

    Parameters
    ----------
    job : TrainingJob
    device : DeviceSpec or str
        A registry entry or name.
    utilisation : float
        Fraction of the peak the training reaches (an assumption: state where it comes from).
    n_devices : int
        Devices; their work adds up with no communication cost (an upper bound on speed;
        see :func:`time_to_train_data_parallel`).
    dtype : str, optional
        Precision; default :func:`training_dtype` of the device.
    assumptions : sequence of str
        Extra sentences to carry with the prediction.

    Examples
    --------
    >>> job = TrainingJob("job", 312e12 * 3600, "one A100-hour at peak")
    >>> t = time_to_train(job, "A100 80GB", utilisation=0.5)
    >>> t.hours, t.dtype
    (2.0, 'bf16')
    """
    u = _utilisation(utilisation)
    n_devices = positive_int("n_devices", n_devices)
    spec, dtype, peak = _peak(device, dtype)
    seconds = job.flops / (n_devices * peak * u)
    notes = (f"utilisation {u:.0%} of the {dtype} peak",)
    if n_devices > 1:
        notes += ("devices scale perfectly (no communication)",)
    return TimeToTrain(
        job,
        spec.name,
        n_devices,
        dtype,
        peak,
        u,
        seconds,
        spec.source_url,
        assumptions=notes + tuple(assumptions),
    )


def time_to_train_data_parallel(
    job: TrainingJob,
    device: DeviceSpec | str,
    n_devices: int,
    *,
    utilisation: float,
    steps: int,
    grad_bytes: float,
    link,
    overlap: float = 0.0,
    dtype: str | None = None,
    assumptions: Sequence[str] = (),
) -> TimeToTrain:
    """Predict data-parallel training: compute split over devices, plus gradient all-reduce.

    The global batch stays the same as on one device, so each of ``n_devices`` computes
    ``1/n_devices`` of every step; after each step the gradients are all-reduced (ring) over
    ``link``. The step time comes from :func:`gpulab.comms.dp_step_time`::

        compute per step = job.flops / steps / (n_devices × peak × utilisation)
        time             = steps × (compute + exposed all-reduce)

    Parameters
    ----------
    job, device, utilisation, dtype, assumptions
        As in :func:`time_to_train`.
    n_devices : int
        Devices (GPUs), one data-parallel rank each.
    steps : int
        Optimizer steps of the whole job.
    grad_bytes : float
        Bytes all-reduced per step (parameters × bytes per gradient).
    link : Interconnect or str
        The link the ring runs over, e.g. ``"NVLink 3"``, ``"InfiniBand HDR"``.
    overlap : float
        Fraction of the compute the all-reduce can hide behind (0 to 1).
    """
    from gpulab.comms import dp_step_time, interconnect

    u = _utilisation(utilisation)
    n_devices = positive_int("n_devices", n_devices)
    steps = positive_int("steps", steps)
    spec, dtype, peak = _peak(device, dtype)
    the_link = interconnect(link) if isinstance(link, str) else link
    compute_s = job.flops / steps / (n_devices * peak * u)
    step = dp_step_time(compute_s, grad_bytes, n_devices, link=the_link, overlap=overlap)
    notes = (
        f"utilisation {u:.0%} of the {dtype} peak",
        f"{steps:,} steps, global batch fixed; {grad_bytes / 1e6:,.0f} MB of gradients "
        f"all-reduced per step (ring) over {the_link.name}, "
        f"{the_link.bandwidth_gbs:g} GB/s per GPU each way; overlap {overlap:.0%}",
    )
    return TimeToTrain(
        job,
        spec.name,
        n_devices,
        dtype,
        peak,
        u,
        steps * step.total_s,
        spec.source_url,
        link=the_link.name,
        comm_fraction=step.exposed_comm_s / step.total_s,
        assumptions=notes + tuple(assumptions),
    )


def plot_extrapolation(
    measured: Mapping[str, float],
    predictions: Mapping[str, float],
    assumptions: Sequence[str],
    *,
    published: Mapping[str, float] | None = None,
    xlabel: str = "time to train",
    durations: bool = True,
    title: str | None = None,
    ax=None,
):
    """The course's figure "from our measurement to the full-scale prediction".

    Horizontal bars on a log scale, one per entry, in the order given: what was measured
    here (solid), what the model predicts (hatched, "prediction" in the legend) and,
    optionally, published results (solid, another colour). Each bar is labelled with its
    value, and the assumptions behind the predictions are written under the axes.

    Parameters
    ----------
    measured, predictions, published : mapping of label to value
        Values in seconds when ``durations`` is true, else in the unit of ``xlabel``.
    assumptions : sequence of str
        One short sentence each; shown on the figure.
    xlabel : str
        Axis label.
    durations : bool
        Values are seconds: label bars "13.5 min", "2.1 days" and mark minutes, hours,
        days and years on the axis.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from gpulab.plotting import COLORS

    published = dict(published or {})
    groups = [
        ("measured", dict(measured)),
        ("prediction", dict(predictions)),
        ("published", published),
    ]
    bars = [(label, float(v), kind) for kind, group in groups for label, v in group.items()]
    if not bars:
        raise ValueError("nothing to plot: measured, predictions and published are all empty")
    for label, value, _ in bars:
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"value {value!r} for {label!r} must be a positive number (log axis)")
    if isinstance(assumptions, str):
        raise ValueError("assumptions must be a sequence of sentences, not one string")
    style = {
        "measured": dict(color=COLORS["cpu"], hatch=None, name="measured here"),
        "prediction": dict(
            color=COLORS["prediction"],
            hatch="//",
            name="PREDICTION (model + datasheet, not measured)",
        ),
        "published": dict(color="#8C8C8C", hatch=None, name="published result (cited)"),
    }
    ax = ax or plt.subplots(figsize=(8, 0.42 * len(bars) + 2.4))[1]
    for i, (_, value, kind) in enumerate(bars):
        ax.barh(
            i,
            value,
            color=style[kind]["color"],
            hatch=style[kind]["hatch"],
            edgecolor="white",
            zorder=3,
        )
        text = format_duration(value) if durations else f"{value:.3g}"
        ax.annotate(
            text, (value, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8
        )
    ax.set_yticks(range(len(bars)), [label for label, _, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    low, high = min(v for _, v, _ in bars), max(v for _, v, _ in bars)
    ax.set_xlim(low / 3, high * 20)  # room for the value labels
    if durations:
        marks = [
            (1.0, "1 s"),
            (_MINUTE, "1 min"),
            (_HOUR, "1 h"),
            (_DAY, "1 day"),
            (30 * _DAY, "1 month"),
            (_YEAR, "1 year"),
            (10 * _YEAR, "10 years"),
        ]
        shown = [(v, t) for v, t in marks if low / 3 <= v <= high * 20]
        if len(shown) >= 2:
            ax.set_xticks([v for v, _ in shown], [t for _, t in shown])
            ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    kinds = [k for k, group in groups if group]
    handles = [
        mpl.patches.Patch(
            facecolor=style[k]["color"],
            hatch=style[k]["hatch"],
            edgecolor="white",
            label=style[k]["name"],
        )
        for k in kinds
    ]
    # Legend and assumptions sit at fixed distances (in points) under the axes' label.
    below = mpl.transforms.offset_copy(ax.transAxes, fig=ax.figure, y=-34, units="points")
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0, 0),
        bbox_transform=below,
        ncol=len(handles),
        fontsize=8,
    )
    if assumptions:
        text = "Assumptions behind the predictions:\n" + "\n".join(f"• {a}" for a in assumptions)
        ax.annotate(
            text,
            xy=(0, 0),
            xycoords="axes fraction",
            xytext=(0, -58),
            textcoords="offset points",
            va="top",
            ha="left",
            fontsize=8,
        )
    return ax
