"""Choosing a device for a training job: memory needed, which devices fit, time and cost.

The arithmetic of the course's GPU chooser, in four steps:

1. **Memory**: parameters, gradients and optimizer states from
   :func:`gpulab.costmodels.memory.estimate_training_memory`, plus activations: for transformers the
   per-layer formula of Korthikanti et al. (2022), for CNNs a real forward pass measured
   with :func:`gpulab.costmodels.memory.activation_bytes` and passed in as
   ``activations_bytes`` (``gl.plan_training``, :mod:`gpulab.labkit.planning`, measures it on
   the network :mod:`gpulab.labkit.networks` builds: that network is a layer above this one).
2. **Fit**: which registry devices hold that in 90% of their memory.
3. **Time per epoch**: training FLOPs ÷ (peak FLOP/s at the precision × utilisation), by
   the course's one time-to-train model (:mod:`gpulab.costmodels.training_time`). The utilisation is
   an input; the default is :data:`gpulab.DEFAULT_UTILISATION`.
4. **Cost**: hours × a price per hour that *you* enter. Cloud prices change every month;
   the only prices shipped here are dated examples derived from a cited paper
   (:data:`EXAMPLE_PRICES`).

Every time and cost this module returns is a **prediction** from datasheet peaks, not a
measurement, with one exception beside it: where others published the best matrix multiply
they measured on a device (:func:`gpulab.costmodels.published_gpu.published_matmul`), each row
also gives the time per epoch with every FLOP at that measured rate, labelled as a published
measurement with its source. No training run reaches its fastest multiply's rate, so that time
is a floor. The interactive version is :func:`gpulab.chooser_widget`.

See also the chapter "Choosing a GPU" (``book/choosing_gpu.md``) and its lab.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpulab._checks import (
    choice,
    finite_result,
    fraction,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.costmodels.published_models import NamedModel, resolve_model
from gpulab.costmodels.training_time import (
    DEFAULT_UTILISATION,
    epoch_seconds,
    training_flops_per_sample,
)
from gpulab.hardware.precision import TRAINING_PRECISIONS, compute_bytes, peak_precision
from gpulab.hardware.specs import DeviceSpec, list_specs, resolve_spec
from gpulab.units import format_duration

__all__ = [
    "EXAMPLE_PRICES",
    "DeviceOption",
    "ExamplePrice",
    "TrainingPlan",
    "estimate_training_plan",
    "run_cost",
    "transformer_activation_bytes",
]


@dataclass(frozen=True)
class ExamplePrice:
    """An hourly price from a dated public source, shown only as an example.

    Attributes
    ----------
    spec_name : str
        Registry name of the GPU.
    low, high : float
        US dollars per GPU-hour.
    date : str
        When the price applied.
    source : str
        Where it comes from and how it was derived.
    """

    spec_name: str
    low: float
    high: float
    date: str
    source: str

    def __post_init__(self) -> None:
        resolve_spec("spec_name", self.spec_name)
        low = positive_number("low", self.low)
        if positive_number("high", self.high) < low:
            raise ValueError(f"high={self.high!r} must be at least low={self.low!r}")
        text("date", self.date)
        text("source", self.source)


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


def transformer_activation_bytes(
    *, layers: int, hidden: int, heads: int, seq_len: int, batch_size: int, precision: str
) -> int:
    """Activation memory a transformer keeps for backward, by Korthikanti et al. (2022).

    Per layer, with 16-bit activations and no recomputation or parallelism, the saved
    tensors take ``s·b·h·(34 + 5·a·s/h)`` bytes (their Eq. 1): ``32·sbh + 4·as²b`` bytes of
    16-bit values and ``2·sbh + as²b`` bytes of one-byte dropout masks. For fp32 training
    the values take 4 bytes each and the masks stay at one. Embeddings and the output layer
    add a little more and are left out. The per-layer formula is
    :func:`gpulab.layer_activation_bytes` (one place for it), without parallelism.

    Examples
    --------
    >>> import gpulab as gl
    >>> s, b, h, a = 512, 8, 768, 12   # BERT-base shape
    >>> per_layer = s * b * h * (34 + 5 * a * s / h)
    >>> gl.transformer_activation_bytes(layers=12, hidden=h, heads=a, seq_len=s,
    ...                                 batch_size=b, precision="amp_bf16") == 12 * per_layer
    True
    """
    from gpulab.costmodels.parallelism import layer_activation_bytes

    positive_int("layers", layers)
    choice("precision", precision, TRAINING_PRECISIONS)
    per_layer = layer_activation_bytes(
        batch_size, seq_len, hidden, heads, value_bytes=compute_bytes(precision)
    )
    return layers * round(per_layer)


def run_cost(time_s: float, price_per_hour: float, n_gpus: int = 1) -> float:
    """Cost of holding ``n_gpus`` GPUs for ``time_s`` seconds at ``price_per_hour`` each.

    Examples
    --------
    >>> import gpulab as gl
    >>> run_cost(5400, price_per_hour=2.0, n_gpus=8)   # 1.5 h x $2 x 8
    24.0
    """
    time_s = non_negative_number("time_s", time_s)
    price = positive_number("price_per_hour", price_per_hour)
    cost = time_s / 3600 * price * positive_int("n_gpus", n_gpus)
    return finite_result(cost, time_s=time_s, price_per_hour=price_per_hour, n_gpus=n_gpus)


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
    published : PublishedMeasurement or None
        The best matrix multiply published for this device at the job's 16-bit arithmetic
        (:func:`gpulab.costmodels.published_gpu.published_matmul`): a measurement by others,
        with its source (``published.source``, ``published.where``); None where there is none.
    published_epoch_s : float or None
        Seconds per epoch with every FLOP at that published rate: a floor, since no training
        run reaches its fastest multiply's rate; None without a published measurement.
    published_note : str
        ``"no published measurement"`` (and why) where ``published`` is None, else ``""``.
    """

    spec: DeviceSpec
    fits: bool | None
    epoch_s: float | None
    cost: float | None
    note: str = ""
    published: object = None
    published_epoch_s: float | None = None
    published_note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.spec, DeviceSpec):
            raise wrong_type("spec", self.spec, "a DeviceSpec (gl.get_spec(name))")
        if self.fits is not None and not isinstance(self.fits, bool):
            raise wrong_type("fits", self.fits, "True, False or None")
        for name in ("epoch_s", "cost", "published_epoch_s"):
            if getattr(self, name) is not None:
                non_negative_number(name, getattr(self, name))
        text("note", self.note)
        text("published_note", self.published_note)
        from gpulab.costmodels.published_gpu import PublishedMeasurement

        if self.published is not None and not isinstance(self.published, PublishedMeasurement):
            raise wrong_type("published", self.published, "a PublishedMeasurement or None")
        if (self.published is None) != (self.published_epoch_s is None):
            raise ValueError(
                f"published_epoch_s={self.published_epoch_s!r} needs a published measurement, "
                "and a published measurement needs its time"
            )


@dataclass(frozen=True)
class TrainingPlan:
    """What :func:`estimate_training_plan` and ``gl.plan_training`` return: memory, fit, time, cost.

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

    def __post_init__(self) -> None:
        from gpulab.costmodels.memory import OPTIMIZERS, MemoryEstimate

        if not isinstance(self.memory, MemoryEstimate):
            raise wrong_type("memory", self.memory, "a MemoryEstimate")
        for name in ("model", "sample_shape"):
            text(name, getattr(self, name))
        positive_int("n_params", self.n_params)
        choice("precision", self.precision, TRAINING_PRECISIONS)
        choice("optimizer", self.optimizer, OPTIMIZERS)
        positive_int("batch_size", self.batch_size)
        positive_number("flops_per_sample", self.flops_per_sample)
        positive_int("samples_per_epoch", self.samples_per_epoch)
        fraction("utilisation", self.utilisation, allow_zero=False)
        if self.price_per_hour is not None:
            positive_number("price_per_hour", self.price_per_hour)
        fraction("headroom", self.headroom, allow_zero=False)
        if isinstance(self.options, (str, bytes)) or not all(
            isinstance(o, DeviceOption) for o in _iterable("options", self.options)
        ):
            raise wrong_type("options", self.options, "a sequence of DeviceOption")
        if isinstance(self.notes, str) or not all(
            isinstance(n, str) for n in _iterable("notes", self.notes)
        ):
            raise wrong_type("notes", self.notes, "a sequence of sentences (str)")

    def fitting(self) -> list[DeviceOption]:
        """Options whose memory holds the job, fastest first (unknown times last).

        Only devices one can buy or rent now: an announced part (``spec.status``) is never
        in this list, even when it was asked for and would fit.
        """
        rows = [o for o in self.options if o.fits and o.spec.status == "available"]
        return sorted(rows, key=lambda o: (o.epoch_s is None, o.epoch_s or 0.0))

    def table(self) -> str:
        """A Markdown table: device, memory, fits, predicted time per epoch, the time at the
        best published multiply where one was measured, cost."""
        cost_head = "Cost / epoch (your price)" if self.price_per_hour else "Cost / epoch"
        lines = [
            "| Device | Memory (GB) | Fits? | Time / epoch (prediction) "
            f"| {PUBLISHED_HEAD} | {cost_head} |",
            "|---|---|---|---|---|---|",
        ]
        for o in self.options:
            mem = f"{o.spec.memory_bytes / 1e9:.0f}" if o.spec.memory_bytes else "host RAM"
            fits = {True: "yes", False: "no", None: "depends on RAM"}[o.fits]
            time_ = format_duration(o.epoch_s) if o.epoch_s is not None else f"– ({o.note})"
            published = o.published_note
            if o.published is not None:
                rate = f"{o.published.value:,.1f} {o.published.unit}"
                published = f"{format_duration(o.published_epoch_s)} at {rate} (published)"
            cost = f"${o.cost:,.2f}" if o.cost is not None else "enter a price"
            if o.epoch_s is None:
                cost = "–"
            name = o.spec.name
            if o.spec.status != "available":
                name = f"{name} ({o.spec.status})"
            lines.append(f"| {name} | {mem} | {fits} | {time_} | {published} | {cost} |")
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


#: The table's column of times at the best published matrix multiply.
PUBLISHED_HEAD = "Time / epoch at the best published multiply (floor)"

#: What a row says where nobody published a multiply measured on that device.
NO_PUBLISHED = "no published measurement"


def _published(spec: DeviceSpec, peak_name: str, flops: float):
    """``(measurement, seconds, note)`` at the best published multiply on ``spec``, if any.

    The published multiplies are BF16 (:func:`gpulab.costmodels.published_gpu.published_matmul`).
    They stand for an FP16 job only where the datasheet gives FP16 the same peak as BF16 (the
    same Tensor Core rate); FP32 and TF32 run on other units, and nothing is published there.
    """
    from gpulab.costmodels.published_gpu import published_matmul

    measured = published_matmul(spec, "bf16")
    if measured is None:
        return None, None, NO_PUBLISHED
    fp16 = spec.peak_flops.get("fp16")
    same_rate = peak_name == "bf16" or (
        peak_name == "fp16" and fp16 is not None and fp16 == spec.peak_flops.get("bf16")
    )
    if not same_rate:
        return None, None, f"{NO_PUBLISHED} at {peak_name} (only BF16)"
    return measured, flops / (measured.value * 1e12), ""


def _published_sources(options) -> list[str]:
    """One sentence per source of the published column: address, table, date, devices."""
    by_source: dict[tuple[str, str, str], list[str]] = {}
    for o in options:
        if o.published is not None:
            m = o.published
            table = m.where.rpartition(", row ")[0] or m.where
            by_source.setdefault((m.source, table, m.read_on), []).append(o.spec.name)
    return [
        "PUBLISHED MEASUREMENT, not a prediction: the column "
        f"'{PUBLISHED_HEAD}' puts every FLOP at the fastest BF16 matrix multiply measured on "
        f"the device ({', '.join(names)}), from {source} ({table}; read {read_on}). No "
        "training run reaches its fastest multiply's rate: that time is a floor."
        for (source, table, read_on), names in by_source.items()
    ]


def _iterable(name: str, value):
    try:
        return iter(value)
    except TypeError:
        raise wrong_type(name, value, "a sequence") from None


def _default_devices() -> list[DeviceSpec]:
    """Every GPU and TPU one can buy or rent now; announced parts are left out."""
    return [s for s in list_specs() if s.kind in ("gpu", "tpu") and s.status == "available"]


def estimate_training_plan(
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
    specs=None,
    activations_bytes: int | None = None,
    headroom: float = 0.9,
) -> TrainingPlan:
    """Memory, fit, time per epoch and cost of a training job on each device, from numbers.

    The arithmetic of ``gl.plan_training`` (:func:`gpulab.labkit.planning.plan_training`),
    which calls this and, for a named CNN, first measures its activations on a real forward
    pass; here they are what ``activations_bytes`` says (0 with a note when not given).

    Parameters
    ----------
    model : str or int
        A name from :data:`gpulab.NAMED_MODELS` (``"BERT-base"``) or a parameter count.
    precision : str
        One of ``gl.TRAINING_PRECISIONS``: ``"fp32"``, ``"amp_bf16"``, ``"amp_fp16"``, ``"bf16"``.
    optimizer : str
        One of ``gl.OPTIMIZERS``: ``"sgd"``, ``"sgd_momentum"``, ``"adam"``, ``"adamw"``.
    batch_size : int
        Samples per step on one device.
    seq_len, image_size : int, optional
        Tokens per sample (transformers, bare parameter counts) or image side (CNNs);
        default: the model's published value.
    samples_per_epoch : int
        Samples in one pass over the data (ImageNet-1k: 1,281,167 images).
    utilisation : float
        Fraction of peak FLOP/s assumed, above 0 and at most 1.
    price_per_hour : float, optional
        Your price per device-hour in dollars; no price, no cost.
    specs : sequence of str or DeviceSpec, optional
        Registry devices to compare; default: every GPU and TPU in the registry that can be
        bought or rented now (announced parts only when named here, and never ranked by
        :meth:`TrainingPlan.fitting`).
    activations_bytes : int, optional
        Override the activation memory (required knowledge for a bare parameter count or a
        CNN; default 0 there, with a note). ``gl.plan_training``
        (:func:`gpulab.labkit.planning.plan_training`) measures a named CNN's.
    headroom : float
        Usable fraction of device memory.

    Returns
    -------
    TrainingPlan

    Examples
    --------
    >>> import gpulab as gl
    >>> from gpulab.costmodels.chooser import estimate_training_plan
    >>> plan = estimate_training_plan("BERT-large", batch_size=32, specs=["T4", "A100 80GB"])
    >>> [(o.spec.name, o.fits) for o in plan.options]
    [('Tesla T4', False), ('A100 80GB SXM4', True)]
    """
    from gpulab.costmodels.memory import OPTIMIZERS, estimate_training_memory

    choice("precision", precision, TRAINING_PRECISIONS)
    choice("optimizer", optimizer, OPTIMIZERS)
    batch_size = positive_int("batch_size", batch_size)
    if seq_len is not None:
        seq_len = positive_int("seq_len", seq_len)
    if image_size is not None:
        image_size = positive_int("image_size", image_size)
    samples_per_epoch = positive_int("samples_per_epoch", samples_per_epoch)
    if price_per_hour is not None:
        price_per_hour = positive_number("price_per_hour", price_per_hour)
    utilisation = fraction("utilisation", utilisation, allow_zero=False)
    headroom = fraction("headroom", headroom, allow_zero=False)
    if activations_bytes is not None:
        activations_bytes = non_negative_int("activations_bytes", activations_bytes)
    if specs is None:
        chosen = _default_devices()
    elif isinstance(specs, (str, DeviceSpec)):
        chosen = [resolve_spec("specs", specs)]
    else:
        chosen = [resolve_spec("specs", s) for s in _iterable("specs", specs)]
        if not chosen:
            raise ValueError(f"specs={specs!r} is empty: name a device, or None for the usual ones")

    notes = []
    if isinstance(model, (str, NamedModel)):
        named = model if isinstance(model, NamedModel) else resolve_model("model", model)
        name, n_params, flops_model = named.name, named.n_params, named
    elif isinstance(model, int) and not isinstance(model, bool):
        positive_int("model", model)
        named, name, n_params, flops_model = None, f"{model:,}-parameter model", model, model
    else:
        raise wrong_type("model", model, "a named model or a parameter count (int)")

    if named is not None and named.family == "cnn":
        size = named.image_size if image_size is None else image_size
        shape = f"{size}x{size} images"
        if activations_bytes is None:
            activations_bytes = 0
            notes.append(
                "Activations not included: measuring a CNN's needs torch (gl.plan_training "
                "measures them on a real forward pass), or pass activations_bytes=."
            )
    else:
        tokens = (named.seq_len if named else None) if seq_len is None else seq_len
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

    options = []
    peak_name = peak_precision(precision)
    for spec in chosen:
        spec = spec.per_gpu()  # every row is one GPU: one of a K80 board's two, not the board
        fits = None if spec.memory_bytes is None else memory.fits(spec, headroom=headroom)
        seconds, cost, note = None, None, f"no {peak_name} peak in its datasheet"
        if peak_name in spec.peak_flops:
            seconds = epoch_seconds(
                flops * samples_per_epoch, spec, precision=precision, utilisation=utilisation
            )
            note = ""
            if price_per_hour is not None:
                cost = run_cost(seconds, price_per_hour)
        if spec.status != "available":
            note = "; ".join(filter(None, [f"{spec.status}, not yet sold", note]))
        published = _published(spec, peak_name, flops * samples_per_epoch)
        options.append(DeviceOption(spec, fits, seconds, cost, note, *published))
    notes += _published_sources(options)
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
        utilisation=utilisation,
        price_per_hour=price_per_hour,
        headroom=headroom,
        options=tuple(options),
        notes=tuple(notes),
    )
