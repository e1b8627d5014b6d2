"""Choosing a device for a training job: memory needed, which devices fit, time and cost.

The arithmetic of the course's GPU chooser, in four steps:

1. **Memory**: parameters, gradients and optimizer states from
   :func:`gpulab.memory.estimate_training_memory`, plus activations: for transformers the
   per-layer formula of Korthikanti et al. (2022), for CNNs a real forward pass measured
   with :func:`gpulab.memory.activation_bytes`.
2. **Fit**: which registry devices hold that in 90% of their memory.
3. **Time per epoch**: training FLOPs ÷ (peak FLOP/s at the precision × utilisation). The
   utilisation is an input; the default, :data:`DEFAULT_UTILISATION`, sits inside the range of
   published model-FLOPs utilisations (21% for GPT-3 to 52% for Megatron-LM on A100s).
4. **Cost**: hours × a price per hour that *you* enter. Cloud prices change every month;
   the only prices shipped here are dated examples derived from a cited paper
   (:data:`EXAMPLE_PRICES`).

Every time and cost this module returns is a **prediction** from datasheet peaks, not a
measurement.

See also the chapter "Choosing a GPU" (``book/choosing_gpu.md``) and its lab.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from numbers import Real

from gpulab.specs import DeviceSpec, get_spec, list_specs

__all__ = [
    "DEFAULT_UTILISATION",
    "EXAMPLE_PRICES",
    "NAMED_MODELS",
    "DeviceOption",
    "ExamplePrice",
    "NamedModel",
    "TrainingPlan",
    "chooser_widget",
    "epoch_seconds",
    "get_model",
    "plan_training",
    "run_cost",
    "training_flops_per_sample",
    "transformer_activation_bytes",
]

#: Fraction of peak FLOP/s a training run is assumed to sustain, unless you say otherwise.
#: Published model-FLOPs utilisations: GPT-3 21.3%, PaLM 46.2%, Megatron-LM 52% (facts.md).
DEFAULT_UTILISATION = 0.4

# Which registry peak each training precision runs at (fp32 matmuls use the FP32 rate:
# PyTorch leaves TF32 off for matmuls by default).
_PEAK_FOR_PRECISION = {"fp32": "fp32", "amp_bf16": "bf16", "amp_fp16": "fp16", "bf16": "bf16"}
_BYTES_PER_ACTIVATION = {"fp32": 4, "amp_bf16": 2, "amp_fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class NamedModel:
    """A well-known model: its published size and the shape the cost formulas need.

    Attributes
    ----------
    name : str
    family : {"transformer", "cnn"}
    n_params : int
        Parameter count as published.
    source : str
        Where ``n_params`` and the shape come from (paper and URL).
    cite : str
        The bibliography key the book cites it with.
    layers, hidden, heads : int, optional
        Transformer shape (layers L, hidden size h, attention heads a).
    seq_len : int, optional
        Transformer context length used in pre-training.
    image_size : int, optional
        CNN input side in pixels at which ``forward_flops`` is quoted.
    forward_flops : float, optional
        CNN forward FLOPs per image at ``image_size`` (one multiply-add = 2 FLOPs).
    """

    name: str
    family: str
    n_params: int
    source: str
    cite: str
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    seq_len: int | None = None
    image_size: int | None = None
    forward_flops: float | None = None


#: Models the chooser knows by name, with their published sizes.
NAMED_MODELS = {
    m.name: m
    for m in (
        NamedModel(
            "ResNet-50", "cnn", 25_557_032,
            "torchvision ResNet-50 (v1.5): 25,557,032 parameters, 4.09 G multiply-adds at "
            "224x224; https://pytorch.org/vision/stable/models/generated/"
            "torchvision.models.resnet50.html",
            "he2016resnet", image_size=224, forward_flops=2 * 4.09e9,
        ),
        NamedModel(
            "BERT-base", "transformer", 110_000_000,
            "Devlin et al. 2019: L=12, H=768, A=12, 110M parameters, sequences of 512 tokens; "
            "https://arxiv.org/abs/1810.04805",
            "devlin2019bert", layers=12, hidden=768, heads=12, seq_len=512,
        ),
        NamedModel(
            "BERT-large", "transformer", 340_000_000,
            "Devlin et al. 2019: L=24, H=1024, A=16, 340M parameters, sequences of 512 tokens; "
            "https://arxiv.org/abs/1810.04805",
            "devlin2019bert", layers=24, hidden=1024, heads=16, seq_len=512,
        ),
        NamedModel(
            "GPT-2 XL", "transformer", 1_542_000_000,
            "Radford et al. 2019, Table 2: 1542M parameters, 48 layers, d_model 1600, "
            "context 1024; 25 heads in the released hparams (https://github.com/openai/gpt-2)",
            "radford2019gpt2", layers=48, hidden=1600, heads=25, seq_len=1024,
        ),
        NamedModel(
            "Llama-2-7B", "transformer", 6_700_000_000,
            "Touvron et al. 2023 (LLaMA, Table 2): 6.7B parameters, dimension 4096, 32 heads, "
            "32 layers; Llama 2 keeps this shape with a 4096-token context "
            "(https://arxiv.org/abs/2307.09288)",
            "touvron2023llama2", layers=32, hidden=4096, heads=32, seq_len=4096,
        ),
        NamedModel(
            "GPT-3 175B", "transformer", 175_000_000_000,
            "Brown et al. 2020, Table 2.1: 175.0B parameters, 96 layers, d_model 12288, "
            "96 heads, context 2048; https://arxiv.org/abs/2005.14165",
            "brown2020gpt3", layers=96, hidden=12288, heads=96, seq_len=2048,
        ),
    )
}  # fmt: skip


@dataclass(frozen=True)
class ExamplePrice:
    """An hourly price from a dated public source, shown only as an example.

    Attributes
    ----------
    device : str
        Registry name of the GPU.
    low, high : float
        US dollars per GPU-hour.
    date : str
        When the price applied.
    source : str
        Where it comes from and how it was derived.
    """

    device: str
    low: float
    high: float
    date: str
    source: str


#: Example prices only: Strubell et al. (2019) priced BERT-base pre-training (64 V100 GPUs ×
#: 79 h = 5,056 GPU-hours) at $3,751 (preemptible) to $12,571 (on-demand) on Google Cloud.
EXAMPLE_PRICES = (
    ExamplePrice(
        "Tesla V100 SXM2 32GB",
        round(3751 / (64 * 79), 2),
        round(12571 / (64 * 79), 2),
        "2019",
        "derived from Strubell et al. 2019 (https://arxiv.org/abs/1906.02243), Table 3: "
        "$3,751-$12,571 for 64 V100 x 79 h on Google Cloud, preemptible to on-demand",
    ),
)


def _positive(name: str, value, *, integer: bool = False, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    kind = int if integer else Real
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        what = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{name}={value!r} must be {what}")
    if not integer and not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number")


def _choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not known; use one of {', '.join(allowed)}")


def _words(text: str) -> str:
    return "".join(re.findall(r"[a-z0-9]+", text.lower()))


def get_model(name: str) -> NamedModel:
    """A named model, looked up forgivingly (``"bert base"``, ``"BERT-base"``, ``"resnet50"``).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.get_model("bert large").n_params
    340000000
    """
    for model in NAMED_MODELS.values():
        if isinstance(name, str) and _words(model.name) == _words(name):
            return model
    raise ValueError(f"model={name!r} is not a named model; use one of {', '.join(NAMED_MODELS)}")


def transformer_activation_bytes(
    *, layers: int, hidden: int, heads: int, seq_len: int, batch_size: int, precision: str
) -> int:
    """Activation memory a transformer keeps for backward, by Korthikanti et al. (2022).

    Per layer, with 16-bit activations and no recomputation or parallelism, the saved
    tensors take ``s·b·h·(34 + 5·a·s/h)`` bytes (their Eq. 1): ``32·sbh + 4·as²b`` bytes of
    16-bit values and ``2·sbh + as²b`` bytes of one-byte dropout masks. For fp32 training
    the values take 4 bytes each and the masks stay at one. Embeddings and the output layer
    add a little more and are left out.

    Examples
    --------
    >>> import gpulab as gl
    >>> s, b, h, a = 512, 8, 768, 12   # BERT-base shape
    >>> per_layer = s * b * h * (34 + 5 * a * s / h)
    >>> gl.transformer_activation_bytes(layers=12, hidden=h, heads=a, seq_len=s,
    ...                                 batch_size=b, precision="amp_bf16") == 12 * per_layer
    True
    """
    for name, value in (
        ("layers", layers), ("hidden", hidden), ("heads", heads),
        ("seq_len", seq_len), ("batch_size", batch_size),
    ):  # fmt: skip
        _positive(name, value, integer=True)
    _choice("precision", precision, tuple(_BYTES_PER_ACTIVATION))
    width = _BYTES_PER_ACTIVATION[precision]
    s, b, h, a = seq_len, batch_size, hidden, heads
    per_layer = s * b * h * (16 * width + 2) + a * s * s * b * (2 * width + 1)
    return layers * per_layer


@functools.cache
def _cnn_activation_bytes_per_image(name: str, image_size: int, precision: str) -> int | None:
    """Activations of one image through a real forward pass (needs gpulab.models)."""
    try:
        import torch

        from gpulab import models
        from gpulab.memory import activation_bytes
    except ImportError:
        return None
    builder = getattr(models, name.lower().replace("-", ""), None)
    if builder is None:
        return None
    model = builder()
    example = torch.zeros(1, 3, image_size, image_size)
    return int(activation_bytes(model, example, precision=precision))


def training_flops_per_sample(
    model: NamedModel | int, *, seq_len: int | None = None, image_size: int | None = None
) -> float:
    """FLOPs to train on one sample (forward and backward), by the standard approximations.

    * Transformers: ``6·N + 6·L·s·h`` per token (Kaplan et al. 2020: 2N forward, twice that
      backward, plus the attention scores), times ``s`` tokens per sample.
    * CNNs: 3 × the forward FLOPs (backward ≈ 2 × forward), scaled by the pixel count.
    * A bare parameter count: ``6·N`` per token, times ``seq_len`` tokens (default 1).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.training_flops_per_sample(gl.get_model("ResNet-50")) / 1e9   # 3 x 2 x 4.09 G
    24.54
    >>> gl.training_flops_per_sample(1_000_000, seq_len=100)
    600000000.0
    """
    if isinstance(model, NamedModel):
        if model.family == "cnn":
            size = model.image_size if image_size is None else image_size
            _positive("image_size", size, integer=True)
            return 3 * model.forward_flops * (size / model.image_size) ** 2
        tokens = model.seq_len if seq_len is None else seq_len
        _positive("seq_len", tokens, integer=True)
        per_token = 6 * model.n_params + 6 * model.layers * tokens * model.hidden
        return float(per_token * tokens)
    _positive("n_params", model, integer=True)
    tokens = 1 if seq_len is None else seq_len
    _positive("seq_len", tokens, integer=True)
    return float(6 * model * tokens)


def _spec(device: DeviceSpec | str, parameter: str = "device") -> DeviceSpec:
    if isinstance(device, DeviceSpec):
        return device
    try:
        return get_spec(device)
    except ValueError as exc:
        raise ValueError(
            f"{parameter}={device!r} is not in the spec registry: {exc.args[0]} "
            "(python -m gpulab specs lists them)"
        ) from None


def epoch_seconds(
    flops: float,
    device: DeviceSpec | str,
    *,
    precision: str = "amp_bf16",
    utilisation: float = DEFAULT_UTILISATION,
) -> float:
    """Predicted seconds to do ``flops`` of training on ``device``: FLOPs ÷ (peak × utilisation).

    Raises ValueError when the datasheet has no peak for the precision (a V100 has no BF16).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.epoch_seconds(312e12, "A100 80GB", precision="amp_bf16", utilisation=0.5)
    2.0
    """
    if isinstance(flops, bool) or not isinstance(flops, Real) or flops < 0:
        raise ValueError(f"flops={flops!r} must be a number of 0 or more")
    _choice("precision", precision, tuple(_PEAK_FOR_PRECISION))
    if (
        isinstance(utilisation, bool)
        or not isinstance(utilisation, Real)
        or not (0 < utilisation <= 1)
    ):
        raise ValueError(f"utilisation={utilisation!r} must be a fraction in (0, 1]")
    spec = _spec(device)
    return flops / (spec.peak(_PEAK_FOR_PRECISION[precision]) * utilisation)


def run_cost(seconds: float, price_per_hour: float, devices: int = 1) -> float:
    """Cost of holding ``devices`` devices for ``seconds`` at ``price_per_hour`` each.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.run_cost(5400, price_per_hour=2.0, devices=8)   # 1.5 h x $2 x 8
    24.0
    """
    if isinstance(seconds, bool) or not isinstance(seconds, Real) or seconds < 0:
        raise ValueError(f"seconds={seconds!r} must be a number of 0 or more")
    _positive("price_per_hour", price_per_hour)
    _positive("devices", devices, integer=True)
    return seconds / 3600 * price_per_hour * devices


@dataclass(frozen=True)
class DeviceOption:
    """One device's row in a :class:`TrainingPlan`.

    Attributes
    ----------
    spec : DeviceSpec
    fits : bool or None
        Memory fits in the usable fraction; None where the registry gives no capacity (CPUs).
    epoch_s : float or None
        Predicted seconds per epoch; None where the datasheet has no peak at this precision.
    cost : float or None
        Predicted cost of one epoch; None without a price.
    note : str
        Why a value is missing.
    """

    spec: DeviceSpec
    fits: bool | None
    epoch_s: float | None
    cost: float | None
    note: str = ""


@dataclass(frozen=True)
class TrainingPlan:
    """What :func:`plan_training` returns: memory, fit, time and cost per device.

    All times and costs are predictions from datasheet peaks and the stated utilisation.
    """

    model: str
    n_params: int
    precision: str
    optimizer: str
    batch_size: int
    sample_shape: str
    memory: object
    flops_per_sample: float
    samples_per_epoch: int
    utilisation: float
    price_per_hour: float | None
    headroom: float
    options: tuple[DeviceOption, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def fitting(self) -> list[DeviceOption]:
        """Options whose memory holds the job, fastest first (unknown times last)."""
        rows = [o for o in self.options if o.fits]
        return sorted(rows, key=lambda o: (o.epoch_s is None, o.epoch_s or 0.0))

    def table(self) -> str:
        """A Markdown table: device, memory, fits, predicted time per epoch, cost."""
        cost_head = "Cost / epoch (your price)" if self.price_per_hour else "Cost / epoch"
        lines = [
            f"| Device | Memory (GB) | Fits? | Time / epoch (prediction) | {cost_head} |",
            "|---|---|---|---|---|",
        ]
        for o in self.options:
            mem = f"{o.spec.memory_bytes / 1e9:.0f}" if o.spec.memory_bytes else "host RAM"
            fits = {True: "yes", False: "no", None: "depends on RAM"}[o.fits]
            time_ = _duration(o.epoch_s) if o.epoch_s is not None else f"– ({o.note})"
            cost = f"${o.cost:,.2f}" if o.cost is not None else "enter a price"
            if o.epoch_s is None:
                cost = "–"
            lines.append(f"| {o.spec.name} | {mem} | {fits} | {time_} | {cost} |")
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (
            f"{self.model} ({self.n_params / 1e6:,.1f} M parameters), {self.precision}, "
            f"{self.optimizer}, batch {self.batch_size} of {self.sample_shape}\n"
            f"{self.memory}\n"
            f"PREDICTION: {self.flops_per_sample:.3g} FLOP per sample × "
            f"{self.samples_per_epoch:,} samples per epoch, at {self.utilisation:.0%} of peak"
        )
        return "\n".join([head, *self.notes, self.table()])


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.3g} {unit}"
    return f"{seconds:.3g} s"


def _default_devices() -> list[DeviceSpec]:
    return [s for s in list_specs() if s.kind in ("gpu", "tpu")]


def plan_training(
    model: str | int,
    *,
    precision: str = "amp_bf16",
    optimizer: str = "adamw",
    batch_size: int = 32,
    seq_len: int | None = None,
    image_size: int | None = None,
    samples_per_epoch: int = 1_000_000,
    utilisation: float = DEFAULT_UTILISATION,
    price_per_hour: float | None = None,
    devices=None,
    activations_bytes: int | None = None,
    headroom: float = 0.9,
) -> TrainingPlan:
    """Memory, fit, time per epoch and cost of a training job on each device.

    Parameters
    ----------
    model : str or int
        A name from :data:`NAMED_MODELS` (``"BERT-base"``) or a parameter count.
    precision : str
        One of ``gl.TRAINING_PRECISIONS``: ``"fp32"``, ``"amp_bf16"``, ``"amp_fp16"``, ``"bf16"``.
    optimizer : str
        One of ``gl.memory.OPTIMIZERS``: ``"sgd"``, ``"sgd_momentum"``, ``"adam"``, ``"adamw"``.
    batch_size : int
        Samples per step on one device.
    seq_len, image_size : int, optional
        Tokens per sample (transformers, bare parameter counts) or image side (CNNs);
        default: the model's published value.
    samples_per_epoch : int
        Samples in one pass over the data (ImageNet-1k: 1,281,167 images).
    utilisation : float
        Fraction of peak FLOP/s assumed, in (0, 1].
    price_per_hour : float, optional
        Your price per device-hour in dollars; no price, no cost.
    devices : sequence of str or DeviceSpec, optional
        Default: every GPU and TPU in the registry.
    activations_bytes : int, optional
        Override the activation memory (required knowledge for a bare parameter count;
        default 0 there, with a note).
    headroom : float
        Usable fraction of device memory.

    Returns
    -------
    TrainingPlan

    Examples
    --------
    >>> import gpulab as gl
    >>> plan = gl.plan_training("BERT-large", batch_size=32, devices=["T4", "A100 80GB"])
    >>> [(o.spec.name, o.fits) for o in plan.options]
    [('Tesla T4', False), ('A100 80GB SXM4', True)]
    """
    from gpulab.memory import OPTIMIZERS, estimate_training_memory
    from gpulab.precision import TRAINING_PRECISIONS as PRECISIONS

    _choice("precision", precision, PRECISIONS)
    _choice("optimizer", optimizer, OPTIMIZERS)
    _positive("batch_size", batch_size, integer=True)
    _positive("seq_len", seq_len, integer=True, allow_none=True)
    _positive("image_size", image_size, integer=True, allow_none=True)
    _positive("samples_per_epoch", samples_per_epoch, integer=True)
    _positive("price_per_hour", price_per_hour, allow_none=True)
    if (
        isinstance(utilisation, bool)
        or not isinstance(utilisation, Real)
        or not (0 < utilisation <= 1)
    ):
        raise ValueError(f"utilisation={utilisation!r} must be a fraction in (0, 1]")
    if isinstance(headroom, bool) or not isinstance(headroom, Real) or not 0 < headroom <= 1:
        raise ValueError(f"headroom={headroom!r} must be a fraction in (0, 1]")
    if activations_bytes is not None and (
        not isinstance(activations_bytes, int) or activations_bytes < 0
    ):
        raise ValueError(f"activations_bytes={activations_bytes!r} must be an integer >= 0")

    notes = []
    if isinstance(model, str):
        named = get_model(model)
        name, n_params, flops_model = named.name, named.n_params, named
    elif isinstance(model, int) and not isinstance(model, bool):
        _positive("model", model, integer=True)
        named, name, n_params, flops_model = None, f"{model:,}-parameter model", model, model
    else:
        raise ValueError(f"model={model!r} must be a named model or a parameter count (int)")

    if named is not None and named.family == "cnn":
        size = named.image_size if image_size is None else image_size
        shape = f"{size}x{size} images"
        if activations_bytes is None:
            per_image = _cnn_activation_bytes_per_image(named.name, size, precision)
            if per_image is None:
                activations_bytes = 0
                notes.append("Activations not included: measuring them needs gpulab.models.")
            else:
                activations_bytes = per_image * batch_size
                notes.append("Activations measured on a real forward pass (gl.activation_bytes).")
    else:
        tokens = seq_len or (named.seq_len if named else None)
        shape = f"{tokens} tokens" if tokens else "samples"
        if activations_bytes is None and named is not None:
            activations_bytes = transformer_activation_bytes(
                layers=named.layers, hidden=named.hidden, heads=named.heads,
                seq_len=tokens, batch_size=batch_size, precision=precision,
            )  # fmt: skip
            notes.append("Activations by Korthikanti et al. (2022), per layer, no recomputation.")
        elif activations_bytes is None:
            activations_bytes = 0
            notes.append("Activations not included: pass activations_bytes= for your model.")
    memory = estimate_training_memory(
        n_params, precision=precision, optimizer=optimizer, activations_bytes=activations_bytes
    )
    flops = training_flops_per_sample(flops_model, seq_len=seq_len, image_size=image_size)

    specs = _default_devices() if devices is None else [_spec(d, "devices") for d in devices]
    options = []
    for spec in specs:
        fits = None if spec.memory_bytes is None else memory.fits(spec, headroom=headroom)
        try:
            seconds = epoch_seconds(
                flops * samples_per_epoch, spec, precision=precision, utilisation=utilisation
            )
            note = ""
        except ValueError:
            seconds, note = None, f"no {_PEAK_FOR_PRECISION[precision]} peak in its datasheet"
        cost = (
            run_cost(seconds, price_per_hour)
            if seconds is not None and price_per_hour is not None
            else None
        )
        options.append(DeviceOption(spec, fits, seconds, cost, note))
    return TrainingPlan(
        model=name,
        n_params=n_params,
        precision=precision,
        optimizer=optimizer,
        batch_size=batch_size,
        sample_shape=shape,
        memory=memory,
        flops_per_sample=flops,
        samples_per_epoch=samples_per_epoch,
        utilisation=float(utilisation),
        price_per_hour=price_per_hour,
        headroom=float(headroom),
        options=tuple(options),
        notes=tuple(notes),
    )


def chooser_widget(model: str = "BERT-base", **defaults):
    """The GPU chooser as ipywidgets controls over :func:`plan_training`.

    Parameters
    ----------
    model : str
        Initial named model (or ``"custom"`` to type a parameter count).
    **defaults
        Initial values for ``precision``, ``optimizer``, ``batch_size``, ``seq_len``,
        ``image_size``, ``samples_per_epoch``, ``utilisation``, ``price_per_hour`` and
        ``params_millions`` (custom models).

    Returns
    -------
    ipywidgets.VBox
        Controls and an output area that shows the plan for the current values.
    """
    import ipywidgets as w
    from IPython.display import Markdown, clear_output, display

    from gpulab.memory import OPTIMIZERS
    from gpulab.precision import TRAINING_PRECISIONS as PRECISIONS

    style = {"description_width": "150px"}
    layout = w.Layout(width="420px")

    def box(widget_type, description, value, **kwargs):
        return widget_type(
            description=description, value=value, style=style, layout=layout, **kwargs
        )

    controls = {
        "model": box(w.Dropdown, "Model", model, options=[*NAMED_MODELS, "custom"]),
        "params_millions": box(
            w.BoundedFloatText, "Parameters (M), custom", defaults.get("params_millions", 100.0),
            min=0.001, max=1e7,
        ),
        "precision": box(
            w.Dropdown, "Precision", defaults.get("precision", "amp_bf16"), options=PRECISIONS
        ),
        "optimizer": box(
            w.Dropdown, "Optimizer", defaults.get("optimizer", "adamw"), options=OPTIMIZERS
        ),
        "batch_size": box(
            w.BoundedIntText, "Batch size", defaults.get("batch_size", 32), min=1, max=1 << 20
        ),
        "seq_len": box(
            w.BoundedIntText, "Tokens (0 = model's)", defaults.get("seq_len", 0),
            min=0, max=1 << 20,
        ),
        "image_size": box(
            w.BoundedIntText, "Image side (0 = model's)", defaults.get("image_size", 0),
            min=0, max=1 << 14,
        ),
        "samples_per_epoch": box(
            w.BoundedIntText, "Samples per epoch", defaults.get("samples_per_epoch", 1_000_000),
            min=1, max=10**13,
        ),
        "utilisation": box(
            w.FloatSlider, "Utilisation of peak", defaults.get("utilisation", DEFAULT_UTILISATION),
            min=0.05, max=1.0, step=0.05,
        ),
        "price_per_hour": box(
            w.BoundedFloatText, "Your $ per GPU-hour", defaults.get("price_per_hour", 0.0),
            min=0.0, max=1e4,
        ),
    }  # fmt: skip
    out = w.Output()

    def update(model, params_millions, precision, optimizer, batch_size, seq_len, image_size,
               samples_per_epoch, utilisation, price_per_hour):  # fmt: skip
        with out:
            clear_output(wait=True)
            try:
                plan = plan_training(
                    round(params_millions * 1e6) if model == "custom" else model,
                    precision=precision, optimizer=optimizer, batch_size=batch_size,
                    seq_len=seq_len or None, image_size=image_size or None,
                    samples_per_epoch=samples_per_epoch, utilisation=utilisation,
                    price_per_hour=price_per_hour or None,
                )  # fmt: skip
            except ValueError as exc:
                print(f"Cannot plan this job: {exc}")
                return
            print(plan.memory)
            print(
                f"PREDICTION: {plan.flops_per_sample:.3g} FLOP/sample x "
                f"{plan.samples_per_epoch:,} samples at {plan.utilisation:.0%} of peak"
            )
            for note in plan.notes:
                print(note)
            display(Markdown(plan.table()))

    w.interactive_output(update, controls)
    return w.VBox([*controls.values(), out])
