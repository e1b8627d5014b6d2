"""The course's one model of time to train: FLOPs ÷ (GPUs × peak × utilisation) + communication.

Every chapter and lab that predicts a training time uses the rules here, so the same job
gets the same answer everywhere:

* **FLOPs.** A transformer costs ``6·N + 6·L·s·h`` FLOPs per token (Kaplan et al. 2020,
  https://arxiv.org/abs/2001.08361: 2 per parameter forward, twice that backward, plus the
  attention scores; the second term only where the shape, ``L`` layers of attention width
  ``h`` over ``s`` tokens, is known). PaLM's MFU counts the attention products in full,
  ``12·L·s·h`` (Chowdhery et al. 2022, Appendix B, https://arxiv.org/abs/2204.02311):
  ``attention="palm"`` counts that way, to compare with a figure published so. A CNN costs
  3 × its forward FLOPs per image (backward ≈ 2 × forward). See
  :func:`training_flops_per_token` and :func:`training_flops_per_sample`.
* **Peak.** The registry's peak at the precision's arithmetic
  (:func:`gpulab.hardware.precision.peak_precision`: ``amp_bf16`` runs at the BF16 peak). Without a
  precision, a device trains in the best one its datasheet has (:func:`training_precision`).
* **Utilisation.** The fraction of peak a run sustains: an assumption, stated with every
  prediction, :data:`DEFAULT_UTILISATION` unless you say otherwise. For a benchmark with
  published runs, :func:`gpulab.costmodels.published_runs.published_utilisation` gives what
  runs of the same kind sustained, per GPU architecture; for a language model's
  pre-training, :func:`gpulab.costmodels.published_mfu.published_llm_utilisation` gives the
  median MFU that published LLM runs reported on GPUs of the same architecture.
* **Several GPUs.** Data parallelism with the global batch fixed: each GPU computes
  ``1/n_gpus`` of every step, then the gradients (``n_params ×`` :func:`gradient_bytes`)
  are all-reduced over a link, step by step (:func:`gpulab.dp_step_time`). Without a
  link the GPUs are assumed to scale perfectly.

Every result is a **prediction** from datasheet peaks, printed with its inputs.

See also the chapters "Choosing a GPU" (``book/choosing_gpu.md``) and the case studies
(``book/case_resnet.md``, ``book/case_bert.md``), and "Scaling out"
(``book/distributed.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpulab._checks import (
    choice,
    finite_result,
    fraction,
    non_negative_number,
    positive_int,
    positive_number,
    sentences,
    text,
    wrong_type,
)
from gpulab.costmodels.published_models import named_model_or_none
from gpulab.hardware.precision import peak_precision
from gpulab.hardware.specs import resolve_spec
from gpulab.units import format_duration

__all__ = [
    "ATTENTION_COUNTS",
    "DEFAULT_UTILISATION",
    "IMAGENET_1K_TRAIN_IMAGES",
    "TIME_PRECISIONS",
    "ScalingEstimate",
    "TimeToTrain",
    "TrainingJob",
    "epoch_seconds",
    "gradient_bytes",
    "hfu",
    "mfu",
    "recompute_flops",
    "resnet_training_job",
    "scaling_estimate",
    "time_to_train",
    "training_flops_per_sample",
    "training_flops_per_token",
    "training_precision",
    "transformer_training_job",
]

#: Fraction of peak FLOP/s a training run is assumed to sustain unless you say otherwise.
#: Published model-FLOPs utilisations of large runs span 21.3% (GPT-3) to 46.2% (PaLM 540B)
#: (Chowdhery et al. 2022, Table 3, https://arxiv.org/abs/2204.02311), and Megatron-LM
#: reached 52% of peak on 3,072 A100s (Narayanan et al. 2021,
#: https://arxiv.org/abs/2104.04473); 0.4 sits inside that range. Small models often reach
#: less: measure yours.
DEFAULT_UTILISATION = 0.4

#: Training images in ImageNet-1k (ILSVRC-2012), the dataset of the ResNet-50 benchmark.
IMAGENET_1K_TRAIN_IMAGES = 1_281_167

#: Precisions a time-to-train prediction accepts: those whose gradient width is known.
#: (FP8 training keeps 16- or 32-bit weights, so its gradient width depends on the recipe.)
TIME_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16")

# Gradients have the width of the stored weights: FP32 for fp32, tf32 (FP32 storage) and
# mixed precision (FP32 master weights, as torch.autocast keeps them); 16-bit for pure
# fp16/bf16. The same widths as gl.bytes_per_param (the tests check it).
_GRADIENT_BYTES = {"fp32": 4, "tf32": 4, "amp_fp16": 4, "amp_bf16": 4, "fp16": 2, "bf16": 2}

# Backward ≈ 2 × forward: a gradient for each layer's input and one for its weights.
_BACKWARD_FACTOR = 2.0

#: How a transformer's attention scores are counted, per token, forward and backward:
#: ``"kaplan"`` 6·L·s·h (Kaplan et al. 2020, Table 1: forward ``2·n_layer·n_ctx·d_attn``),
#: ``"palm"`` 12·L·s·h (Chowdhery et al. 2022, Appendix B: ``6N + 12LHQT``), the two products
#: ``Q·Kᵀ`` and ``scores·V`` counted in full, as PaLM's MFU and llm-foundry's benchmark tables
#: (``scripts/train/benchmarking/collect_results.py`` at the commit the course's MPT rows cite,
#: https://github.com/mosaicml/llm-foundry/blob/061f2c7ce64e655100286584a7629e2a09f827ba/scripts/train/benchmarking/collect_results.py)
#: count them.
ATTENTION_COUNTS = ("kaplan", "palm")
_ATTENTION_FACTOR = {"kaplan": 6, "palm": 12}


def training_flops_per_token(
    n_params: float,
    *,
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    attention: str = "kaplan",
) -> float:
    """Training FLOPs per token of a transformer: ``6·N``, plus an attention term given its shape.

    Forward costs about 2 FLOPs per parameter per token (one multiply-add per weight) and
    backward twice that. The attention scores add a term that the literature counts two ways
    (``attention``):

    * ``"kaplan"`` (the default): ``6·L·s·h`` (Kaplan et al. 2020, Table 1,
      https://arxiv.org/abs/2001.08361), the count of the course's time-to-train predictions;
    * ``"palm"``: ``12·L·s·h``, what the two attention products ``Q·Kᵀ`` and ``scores·V``
      cost when computed in full (``2·2·s·h`` per token and layer forward, three times that
      with the backward pass). PaLM's MFU is ``6N + 12LHQT`` (Chowdhery et al. 2022,
      Appendix B, https://arxiv.org/abs/2204.02311); compare an MFU with PaLM's, or with
      others counted the same way, in this count.

    Parameters
    ----------
    n_params : float
        N, the parameters that multiply (embedding tables may be left out).
    layers, hidden, seq_len : int, optional
        L, h and s: layers, the attention width (heads × head size, PaLM's ``H·Q``; the
        model width in most models, but 48 × 256 = 12,288 in PaLM 540B against a model
        width of 18,432) and tokens per sequence. All three for the attention term, or none.
    attention : str
        One of :data:`ATTENTION_COUNTS`: which attention count to add.

    Examples
    --------
    >>> import gpulab as gl
    >>> training_flops_per_token(1e6)
    6000000.0
    >>> training_flops_per_token(1e6, layers=2, hidden=64, seq_len=128)  # + 6*2*128*64
    6098304.0
    >>> training_flops_per_token(1e6, layers=2, hidden=64, seq_len=128, attention="palm")
    6196608.0
    """
    n = positive_number("n_params", n_params)
    factor = _ATTENTION_FACTOR[choice("attention", attention, ATTENTION_COUNTS)]
    shape = {"layers": layers, "hidden": hidden, "seq_len": seq_len}
    given = [k for k, v in shape.items() if v is not None]
    if not given:
        return finite_result(6.0 * n, n_params=n_params)
    if len(given) < 3:
        missing = ", ".join(k for k in shape if k not in given)
        raise ValueError(
            f"{given[0]}={shape[given[0]]!r} needs {missing} too: the attention term "
            f"{factor}·layers·seq_len·hidden takes all three"
        )
    L, h, s = (positive_int(k, shape[k]) for k in ("layers", "hidden", "seq_len"))
    return finite_result(6.0 * n + factor * L * s * h, n_params=n_params, **shape)


def training_flops_per_sample(
    model,
    *,
    seq_len: int | None = None,
    image_size: int | None = None,
    attention: str = "kaplan",
) -> float:
    """FLOPs to train on one sample (forward and backward).

    * A named transformer: :func:`training_flops_per_token` with its shape and the
      ``attention`` count (default ``"kaplan"``, ``6·L·s·h``), times ``seq_len`` tokens
      (default: its pre-training context).
    * A named CNN: 3 × its forward FLOPs, scaled by the pixel count at ``image_size``.
    * A bare parameter count: ``6·N`` per token, times ``seq_len`` tokens (default 1).

    Parameters
    ----------
    model : str, NamedModel or number
        A name from :data:`NAMED_MODELS` or a parameter count.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.training_flops_per_sample("ResNet-50") / 1e9   # 3 x 2 x 4.09 G
    24.54
    >>> gl.training_flops_per_sample(1_000_000, seq_len=100)
    600000000.0
    """
    named = named_model_or_none(model)
    choice("attention", attention, ATTENTION_COUNTS)
    if seq_len is not None:
        seq_len = positive_int("seq_len", seq_len)
    if image_size is not None:
        image_size = positive_int("image_size", image_size)
    if named is not None and named.family == "cnn":
        size = named.image_size if image_size is None else image_size
        scale = size / named.image_size  # squared by multiplying: a power raises on overflow
        flops = (1 + _BACKWARD_FACTOR) * named.forward_flops * scale * scale
        return finite_result(flops, image_size=image_size)
    if named is not None:
        tokens = named.seq_len if seq_len is None else seq_len
        per_token = training_flops_per_token(
            named.n_params, layers=named.layers, hidden=named.hidden, seq_len=tokens,
            attention=attention,
        )  # fmt: skip
        return finite_result(per_token * tokens, seq_len=seq_len)
    tokens = 1 if seq_len is None else seq_len
    n = positive_number("model", model)
    finite_result(6.0 * n, model=model)  # named so, not by the n_params it is passed as
    return finite_result(training_flops_per_token(n) * tokens, model=model, seq_len=seq_len)


def training_precision(spec) -> str:
    """The precision a device trains in best: BF16 mixed precision, else FP16, else FP32.

    Examples
    --------
    >>> import gpulab as gl
    >>> training_precision("V100"), training_precision("A100 80GB")
    ('amp_fp16', 'amp_bf16')
    >>> training_precision("K80")
    'fp32'
    """
    found = resolve_spec("spec", spec)
    for precision in ("amp_bf16", "amp_fp16", "fp32"):
        if peak_precision(precision) in found.peak_flops:
            return precision
    raise ValueError(f"spec={found.name!r} has no FP32, FP16 or BF16 peak in the registry")


def gradient_bytes(precision: str) -> int:
    """Bytes of one gradient at ``precision``: the width of the stored weights.

    Mixed precision keeps FP32 master weights, so its gradients are FP32 too (4 bytes);
    pure ``fp16``/``bf16`` training stores 2-byte gradients.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.gradient_bytes("amp_bf16"), gl.gradient_bytes("bf16")
    (4, 2)
    """
    choice("precision", precision, TIME_PRECISIONS)
    return _GRADIENT_BYTES[precision]


@dataclass(frozen=True)
class TrainingJob:
    """A full training job: the FLOPs it takes and, for data parallelism, its steps and size.

    Attributes
    ----------
    name : str
        For example ``"ResNet-50 × ImageNet-1k × 90 epochs"``.
    flops : float
        Total training FLOPs (a multiply-add counts as 2).
    formula : str
        How ``flops`` was computed, with the numbers filled in.
    n_params : float, optional
        Parameters trained; data parallelism all-reduces their gradients every step.
    steps : int, optional
        Optimizer steps of the whole job.
    """

    name: str
    flops: float
    formula: str
    n_params: float | None = None
    steps: int | None = None

    def __post_init__(self) -> None:
        text("name", self.name)
        text("formula", self.formula)
        non_negative_number("flops", self.flops)
        if self.n_params is not None:
            positive_number("n_params", self.n_params)
        if self.steps is not None:
            positive_int("steps", self.steps)

    def __str__(self) -> str:
        return f"{self.name}: {self.flops:.3g} FLOP = {self.formula}"


def resnet_training_job(
    forward_flops_per_image: float,
    *,
    images: int = IMAGENET_1K_TRAIN_IMAGES,
    epochs: int = 90,
    backward_factor: float = _BACKWARD_FACTOR,
    batch_size: int | None = None,
    n_params: float | None = None,
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
    batch_size, n_params : optional
        Global batch and parameter count, for data-parallel predictions: steps are
        ``epochs × ceil(images / batch_size)``.

    Examples
    --------
    >>> import gpulab as gl
    >>> job = gl.resnet_training_job(8.18e9)
    >>> f"{job.flops:.3e}"
    '2.830e+18'
    """
    fwd = positive_number("forward_flops_per_image", forward_flops_per_image)
    if text("name", name, optional=True) == "":
        raise ValueError("name='' must be a name for the job, or None for the default one")
    images = positive_int("images", images)
    epochs = positive_int("epochs", epochs)
    factor = 1 + positive_number("backward_factor", backward_factor)
    steps = None
    if batch_size is not None:
        steps = epochs * math.ceil(images / positive_int("batch_size", batch_size))
    flops = finite_result(
        factor * fwd * images * epochs,
        forward_flops_per_image=forward_flops_per_image,
        backward_factor=backward_factor,
        images=images,
        epochs=epochs,
    )
    if name is None:
        name = f"ResNet × {images:,} images × {epochs} epochs"
    formula = f"{factor:g} × {fwd / 1e9:.3g} GFLOP forward × {images:,} images × {epochs} epochs"
    return TrainingJob(name, flops, formula, n_params, steps)


def transformer_training_job(
    model,
    n_tokens: float,
    *,
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    embedding_params: float = 0,
    steps: int | None = None,
    name: str | None = None,
    attention: str = "kaplan",
) -> TrainingJob:
    """FLOPs to train a transformer on ``n_tokens`` tokens, by :func:`training_flops_per_token`.

    Parameters
    ----------
    model : str, NamedModel or number
        A named model (its size and shape come with it) or the number of parameters
        trained (all of them; their gradients are what data parallelism all-reduces).
    n_tokens : float
        D: tokens processed in training (steps × sequences per batch × sequence length).
    layers, hidden, seq_len : int, optional
        The shape, for the attention term per token (``6·L·s·h`` by default); all three or
        none (a named model brings its own).
    embedding_params : float
        Parameters of the embedding tables, left out of the ``6·N`` term: a lookup is not a
        matrix multiply (Kaplan et al. count N without them). Default 0.
    steps : int, optional
        Optimizer steps, for data-parallel predictions.
    attention : str
        One of :data:`ATTENTION_COUNTS`: ``"kaplan"`` (``6·L·s·h``, the default) or
        ``"palm"`` (``12·L·s·h``); see :func:`training_flops_per_token`. The job's formula
        states the count.

    Examples
    --------
    >>> import gpulab as gl
    >>> f"{gl.transformer_training_job(175e9, 300e9).flops:.3g}"   # GPT-3: 3.14e23 published
    '3.15e+23'
    >>> job = gl.transformer_training_job(1e6, 1e9, layers=2, hidden=64, seq_len=128)
    >>> job.flops == 1e9 * (6 * 1e6 + 6 * 2 * 128 * 64)
    True
    """
    named = named_model_or_none(model)
    if text("name", name, optional=True) == "":
        raise ValueError("name='' must be a name for the job, or None for the default one")
    if named is not None:
        if named.family != "transformer":
            raise ValueError(f"model={named.name!r} is not a transformer")
        n_params, label = named.n_params, named.name
        layers = named.layers if layers is None else layers
        hidden = named.hidden if hidden is None else hidden
        seq_len = named.seq_len if seq_len is None else seq_len
    else:
        n_params, label = positive_number("model", model), None
    d = positive_number("n_tokens", n_tokens)
    emb = non_negative_number("embedding_params", embedding_params)
    if emb >= n_params:
        raise ValueError(
            f"embedding_params={embedding_params!r} must be below the {n_params:.4g} parameters"
        )
    n = n_params - emb
    if named is None:
        finite_result(6.0 * n, model=model)  # named so, not by the n_params it is passed as
    per_token = training_flops_per_token(
        n, layers=layers, hidden=hidden, seq_len=seq_len, attention=attention
    )
    flops = finite_result(per_token * d, model=model, n_tokens=n_tokens)
    six_n = f"6 × {n:.4g} parameters"
    if per_token > 6 * n:
        six_n = (
            f"(6 × {n:.4g} parameters + {_ATTENTION_FACTOR[attention]} × {layers} layers × "
            f"{seq_len} tokens × {hidden})"
        )
    if name is None:
        name = f"{label or 'transformer'}, {n_params / 1e6:,.0f} M parameters × {d:.3g} tokens"
    return TrainingJob(name, flops, f"{six_n} × {d:.4g} tokens", n_params, steps)


@dataclass(frozen=True)
class TimeToTrain:
    """A predicted time to train, with every input that produced it.

    Attributes
    ----------
    job : TrainingJob
        What is trained, and its FLOPs.
    spec : DeviceSpec
        The registry entry of the GPU (or other device).
    n_gpus : int
        GPUs working together.
    precision : str
        Training precision; its peak is ``spec.peak(peak_precision(precision))``.
    peak_flops : float
        Peak FLOP/s of one GPU at that precision (datasheet).
    utilisation : float
        Fraction of peak assumed for the compute (0 to 1).
    time_s : float
        The prediction, in seconds.
    link : str or None
        The interconnect of a data-parallel prediction.
    comm_share : float
        Share of the time spent in exposed communication (0 without a link).
    overlap : float
        Fraction of each step's compute the all-reduce was allowed to hide behind.
    step : StepTime or None
        One step, split into compute and communication (with a link only).
    assumptions : tuple of str
        The assumptions, one sentence each.
    """

    job: TrainingJob
    spec: object
    n_gpus: int
    precision: str
    peak_flops: float
    utilisation: float
    time_s: float
    link: str | None = None
    comm_share: float = 0.0
    overlap: float = 0.0
    step: object = None
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        from gpulab.hardware.specs import DeviceSpec

        if not isinstance(self.job, TrainingJob):
            raise wrong_type("job", self.job, "a TrainingJob")
        if not isinstance(self.spec, DeviceSpec):
            raise wrong_type("spec", self.spec, "a DeviceSpec (gl.get_spec(name))")
        positive_int("n_gpus", self.n_gpus)
        choice("precision", self.precision, TIME_PRECISIONS)
        positive_number("peak_flops", self.peak_flops)
        fraction("utilisation", self.utilisation, allow_zero=False)
        non_negative_number("time_s", self.time_s)
        text("link", self.link, optional=True)
        fraction("comm_share", self.comm_share)
        fraction("overlap", self.overlap)
        sentences("assumptions", self.assumptions)
        self._check_step()

    def _check_step(self) -> None:
        from gpulab.costmodels.comms import StepTime

        if self.step is not None and not isinstance(self.step, StepTime):
            raise wrong_type("step", self.step, "a StepTime (gl.dp_step_time) or None")
        if (self.link is None) != (self.step is None):
            raise ValueError(
                f"link={self.link!r} and step={self.step!r:.40} disagree: a prediction "
                "with a link has its step, one without a link has none"
            )

    @property
    def hours(self) -> float:
        return self.time_s / 3600

    @property
    def days(self) -> float:
        return self.time_s / 86400

    @property
    def source_url(self) -> str:
        """Where the peak comes from."""
        return self.spec.source_url

    @property
    def label(self) -> str:
        """Short label for a figure, e.g. ``"8 × A100 80GB SXM4 (amp_bf16)"``."""
        return f"{self.n_gpus} × {self.spec.name} ({self.precision})"

    def __str__(self) -> str:
        lines = [
            f"PREDICTION (not measured): {self.job.name} on {self.label}: "
            f"{format_duration(self.time_s)}",
            f"  = {self.job.flops:.3g} FLOP / ({self.n_gpus} × "
            f"{self.peak_flops / 1e12:,.4g} TFLOP/s peak × {self.utilisation:.0%} utilisation)"
            + (
                f" + communication over {self.link} ({self.comm_share:.0%} of the time)"
                if self.link
                else ""
            ),
            f"  FLOPs: {self.job.formula}",
            f"  peak: {self.source_url}",
        ]
        lines += [f"  assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)


def time_to_train(
    job: TrainingJob,
    spec,
    *,
    n_gpus: int = 1,
    precision: str | None = None,
    utilisation: float = DEFAULT_UTILISATION,
    link=None,
    overlap: float = 0.0,
    assumptions: Sequence[str] = (),
) -> TimeToTrain:
    """Predict the time to train ``job`` on ``n_gpus`` devices of one kind.

    ::

        compute = job.flops / (n_gpus × peak × utilisation)

    Without a ``link`` that is the prediction (the GPUs scale perfectly: an upper bound on
    speed). With one, the job runs data-parallel with its global batch fixed: every one of
    ``job.steps`` steps computes ``compute / steps`` and then all-reduces ``job.n_params ×``
    :func:`gradient_bytes` bytes (ring) over the link, by :func:`gpulab.dp_step_time`.

    Parameters
    ----------
    job : TrainingJob
    spec : DeviceSpec or str
        A registry entry or a name :func:`get_spec` understands.
    n_gpus : int
        Devices working together.
    precision : str, optional
        One of :data:`TIME_PRECISIONS`; default :func:`training_precision` of the device.
    utilisation : float
        Fraction of peak the training reaches (above 0, at most 1): an assumption.
    link : Interconnect or str, optional
        The link the gradients are all-reduced over, e.g. ``"NVLink 3"``; needs the job's
        ``steps`` and ``n_params``.
    overlap : float
        Fraction of each step's compute the all-reduce can hide behind (0 to 1).
    assumptions : sequence of str
        Extra sentences to carry with the prediction.

    Examples
    --------
    >>> import gpulab as gl
    >>> job = TrainingJob("job", 312e12 * 3600, "one A100-hour at peak")
    >>> t = gl.time_to_train(job, "A100 80GB", utilisation=0.5)
    >>> t.hours, t.precision
    (2.0, 'amp_bf16')
    """
    from gpulab.costmodels.comms import dp_step_time
    from gpulab.hardware.interconnects import resolve_link

    if not isinstance(job, TrainingJob):
        raise wrong_type("job", job, "a TrainingJob (gl.resnet_training_job, ...)")
    found = resolve_spec("spec", spec)
    n_gpus = positive_int("n_gpus", n_gpus)
    u = fraction("utilisation", utilisation, allow_zero=False)
    if precision is None:
        precision = training_precision(found)
    choice("precision", precision, TIME_PRECISIONS)
    peak = found.peak(peak_precision(precision))
    overlap = fraction("overlap", overlap)
    sentences("assumptions", assumptions)
    notes = [f"utilisation {u:.0%} of the {peak_precision(precision)} peak"]
    compute_s = job.flops / (n_gpus * peak * u)
    if link is None:
        if n_gpus > 1:
            notes.append("GPUs scale perfectly (no communication)")
        return TimeToTrain(
            job, found, n_gpus, precision, peak, u, compute_s,
            assumptions=(*notes, *assumptions),
        )  # fmt: skip

    the_link = resolve_link("link", link)
    if job.steps is None or job.n_params is None:
        raise ValueError(
            f"link={link!r} needs the job's steps and n_params (to know what is all-reduced, "
            f"how often); job {job.name!r} has steps={job.steps!r}, n_params={job.n_params!r}"
        )
    if job.flops == 0:
        raise ValueError(f"job {job.name!r} has flops=0: nothing to compute per step")
    grad = job.n_params * gradient_bytes(precision)
    step = dp_step_time(compute_s / job.steps, grad, n_gpus, link=the_link, overlap=overlap)
    notes.append(
        f"{job.steps:,} steps, global batch fixed; {grad / 1e6:,.0f} MB of {precision} "
        f"gradients all-reduced per step (ring) over {the_link.name}, "
        f"{the_link.bandwidth / 1e9:g} GB/s per GPU each way; overlap {overlap:.0%}"
    )
    return TimeToTrain(
        job, found, n_gpus, precision, peak, u, job.steps * step.total_s,
        link=the_link.name, comm_share=step.comm_share, overlap=overlap, step=step,
        assumptions=(*notes, *assumptions),
    )  # fmt: skip


def epoch_seconds(
    flops: float,
    spec,
    *,
    precision: str | None = None,
    utilisation: float = DEFAULT_UTILISATION,
) -> float:
    """Predicted seconds to do ``flops`` of training on one ``spec``: FLOPs ÷ (peak × utilisation).

    The same arithmetic as :func:`time_to_train` on one device; raises ValueError when the
    datasheet has no peak for the precision (a V100 has no BF16).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.epoch_seconds(312e12, "A100 80GB", precision="amp_bf16", utilisation=0.5)
    2.0
    """
    flops = non_negative_number("flops", flops)
    job = TrainingJob("epoch", flops, f"{flops:.3g} FLOP")
    return time_to_train(job, spec, precision=precision, utilisation=utilisation).time_s


@dataclass(frozen=True)
class ScalingEstimate:
    """A predicted data-parallel training step, with the inputs it came from.

    Attributes
    ----------
    model : str
        The model's name, or its size for a bare parameter count.
    tokens_per_gpu : float
        Tokens each GPU processes per step.
    prediction : TimeToTrain
        The one-step job through :func:`time_to_train`; ``step`` is its breakdown.
    """

    model: str
    tokens_per_gpu: float
    prediction: TimeToTrain

    def __post_init__(self) -> None:
        text("model", self.model)
        positive_number("tokens_per_gpu", self.tokens_per_gpu)
        if not isinstance(self.prediction, TimeToTrain):
            raise wrong_type("prediction", self.prediction, "a TimeToTrain")
        if self.prediction.step is None:
            raise ValueError(
                "prediction has no step: a data-parallel estimate needs a TimeToTrain "
                "made with a link (time_to_train(..., link=...))"
            )

    @property
    def step(self):
        """The step: compute, exposed communication, efficiency (a :class:`StepTime`)."""
        return self.prediction.step

    @property
    def n_gpus(self) -> int:
        return self.prediction.n_gpus

    def summary(self) -> str:
        """A few lines for a reader: inputs, then step time, communication share, efficiency."""
        t, s = self.prediction, self.step
        return "\n".join(
            [
                f"PREDICTION for {self.model} on {t.n_gpus} x {t.spec.name}, linked by {t.link}",
                f"  assumptions: {self.tokens_per_gpu:,.0f} tokens per GPU per step, "
                f"utilisation {t.utilisation:.0%} of the {peak_precision(t.precision)} peak, "
                f"{gradient_bytes(t.precision)}-byte gradients ({t.precision}), "
                f"overlap {t.overlap:.0%}",
                f"  compute {s.compute_s:.3f} s + exposed all-reduce {s.exposed_comm_s:.3f} s "
                f"(of {s.comm_s:.3f} s) = step {s.total_s:.3f} s",
                f"  communication share {s.comm_share:.1%}, scaling efficiency "
                f"{s.efficiency:.1%}, speed-up {s.speedup:.1f}x over one GPU",
            ]
        )


def scaling_estimate(
    model,
    spec,
    n_gpus: int,
    link,
    *,
    tokens_per_gpu: float = 16384,
    precision: str | None = None,
    utilisation: float = DEFAULT_UTILISATION,
    overlap: float = 0.0,
) -> ScalingEstimate:
    """Predict one data-parallel step of a transformer on ``n_gpus`` GPUs.

    Each GPU trains on ``tokens_per_gpu`` tokens per step (the global batch grows with the
    GPUs): the step is a one-step :class:`TrainingJob` of ``n_gpus × tokens_per_gpu``
    tokens through :func:`time_to_train`, so its FLOPs, peak, gradient bytes and
    all-reduce are the course's one model.

    Parameters
    ----------
    model : str, NamedModel or number
        A named transformer or a parameter count.
    spec : DeviceSpec or str
        A registry GPU, e.g. ``"H100 SXM"``.
    n_gpus : int
        Data-parallel ranks.
    link : Interconnect or str
        The link each GPU all-reduces over, e.g. ``"NVLink 4"`` or ``"InfiniBand NDR"``.
    tokens_per_gpu : float
        Tokens each GPU processes per step (micro-batch × sequence length).
    precision : str, optional
        One of :data:`TIME_PRECISIONS`; default :func:`training_precision` of the GPU.
        ``"bf16"`` sends 2-byte gradients, mixed precision 4-byte ones.
    utilisation : float
        Model FLOPs utilisation, above 0 and at most 1 (default :data:`DEFAULT_UTILISATION`).
    overlap : float
        Fraction of compute the all-reduce can hide behind (0 to 1).

    Examples
    --------
    >>> import gpulab as gl
    >>> est = gl.scaling_estimate(7e9, "H100 SXM", 8, "NVLink 4", precision="bf16")
    >>> round(est.step.compute_s, 3), round(est.step.efficiency, 3)
    (1.739, 0.97)
    """
    from gpulab.hardware.interconnects import resolve_link

    tokens = positive_number("tokens_per_gpu", tokens_per_gpu)
    n_gpus = positive_int("n_gpus", n_gpus)
    link = resolve_link("link", link)  # required: the estimate is about its all-reduce
    named = named_model_or_none(model)
    if named is not None and named.family != "transformer":
        raise ValueError(f"model={named.name!r} is not a transformer")
    if named is None:
        n = positive_number("model", model)
        label = f"{n / 1e9:g}B parameters"
        finite_result(6.0 * n, model=model)  # named so, not by the n_params it is passed as
        per_token = training_flops_per_token(n)
    else:
        n, label = named.n_params, named.name
        per_token = training_flops_per_token(
            n, layers=named.layers, hidden=named.hidden, seq_len=named.seq_len
        )
    job = TrainingJob(
        f"one step of {label}",
        finite_result(per_token * tokens * n_gpus, model=model, tokens_per_gpu=tokens_per_gpu),
        f"{per_token:.4g} FLOP per token × {tokens:,.0f} tokens × {n_gpus} GPUs",
        n_params=n,
        steps=1,
    )
    prediction = time_to_train(
        job, spec, n_gpus=n_gpus, precision=precision, utilisation=utilisation, link=link,
        overlap=overlap,
    )  # fmt: skip
    return ScalingEstimate(label, tokens, prediction)


# --------------------------------------------------------------------------- utilisation
# MFU and HFU: how much of the peak a training run used.
#
# Model and hardware FLOPs utilisation (MFU, HFU): how much of the peak a training run used.
#
# * **MFU** (model FLOPs utilisation, Chowdhery et al. 2022, PaLM, Appendix B) counts only the
#   FLOPs the model needs: forward and backward once, about ``6·N`` per token for a transformer
#   of ``N`` parameters. It is the fair figure for comparing runs: recomputation, padding or a
#   slow kernel cannot raise it.
# * **HFU** (hardware FLOPs utilisation, Korthikanti et al. 2022) counts the FLOPs the hardware
#   really did, recomputed forward passes included. It is at least the MFU, and says how busy
#   the arithmetic units were.
#
# Both divide by the time the step took on all GPUs and by their peak:
# ``flops_per_step / (step_time_s · n_gpus · peak_flops)``. The peak is the datasheet's on a GPU
# (:meth:`DeviceSpec.peak <gpulab.hardware.specs.DeviceSpec.peak>`) and the estimate of
# :func:`gpulab.estimate_cpu_peak` on a CPU.
#


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
        To compare with a published MFU, count as the publication did: PaLM's and
        llm-foundry's add ``12·L·s·h`` per token for attention
        (``training_flops_per_token(..., attention="palm")``).
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
    PaLM 540B's reported 46.2% MFU (Chowdhery et al. 2022, Table 3 and Appendix B) from
    238.3 K tokens/s on 6,144 TPU v4 chips of 275 TFLOP/s, counted as the paper counts it,
    ``6N + 12LHQT`` per token (118 layers, 48 heads of 256, 2,048 tokens):

    >>> import gpulab as gl
    >>> from gpulab.costmodels.training_time import training_flops_per_token
    >>> tpu_v4 = gl.get_spec("TPU v4").peak("bf16")   # 275 TFLOP/s, from the registry
    >>> round(gl.mfu(238.3e3 * 6 * 540e9, 1.0, tpu_v4, n_gpus=6144), 3)   # 6·N only
    0.457
    >>> palm = training_flops_per_token(540e9, layers=118, hidden=48 * 256, seq_len=2048,
    ...                                 attention="palm")
    >>> round(gl.mfu(238.3e3 * palm, 1.0, tpu_v4, n_gpus=6144), 3)
    0.462
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
