"""The book's live calculators, declared once: their inputs, the model they call, their report.

Each :class:`Calculator` is data: a name, a title, its :class:`Field` inputs (with defaults
and ranges), and a function that turns the inputs into a :class:`Report` by calling the
course's cost models. The book's ``{calculator}`` directive (``book/_ext/live_calculators.py``)
writes the form and the report for the defaults at build time; in the reader's browser the
same functions run on Pyodide, from a zip of this package that the build makes, each time an
input changes. :func:`run` is the one entry point both use: raw form values (strings) in, a
JSON-ready dict out, so the page and CPython give the same answer for the same inputs.

The ipywidgets in :mod:`gpulab.labkit.widgets` remain the labs' calculators in Jupyter and
Colab; :data:`CALCULATORS` names the widget each live calculator stands for.

Numbers that need torch (a CNN's activation bytes, measured on a real forward pass) are
computed at build time (:func:`build_time_data`) and shipped beside the package in the zip.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpulab._checks import choice, text, wrong_type
from gpulab.costmodels.training_time import DEFAULT_UTILISATION
from gpulab.labkit.svgchart import Series, line_chart, stacked_bar
from gpulab.units import format_bytes, format_duration, format_rate

__all__ = [
    "CALCULATORS",
    "Calculator",
    "Field",
    "Report",
    "build_time_data",
    "parallelism_report",
    "render_report",
    "run",
]

#: Where the build puts :func:`build_time_data` inside the zip the browser loads.
BUILD_DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "live_build_data.json"
_FIELD_KINDS = ("select", "number", "range")


@dataclass(frozen=True)
class Field:
    """One input of a calculator's form.

    Attributes
    ----------
    name : str
        The keyword the compute function receives.
    label : str
        What the reader sees beside the input.
    kind : {"select", "number", "range"}
        A menu, a number box, or a slider.
    default : str, int or float
        The starting value (one of ``options`` for a menu).
    options : tuple of str
        A menu's choices.
    minimum, maximum, step : float, optional
        A number's or a slider's range and step (``step=1`` with an integer default: whole
        numbers only).
    """

    name: str
    label: str
    kind: str
    default: str | int | float
    options: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None

    def __post_init__(self) -> None:
        text("name", self.name)
        text("label", self.label)
        choice("kind", self.kind, _FIELD_KINDS)
        if self.kind == "select":
            if str(self.default) not in self.options:
                raise ValueError(f"default={self.default!r} must be one of options")
        elif (
            self.minimum is None
            or self.maximum is None
            or not (self.minimum <= self.default <= self.maximum)
        ):
            raise ValueError(
                f"{self.name}: default={self.default!r} must lie in [minimum, maximum] "
                f"= [{self.minimum}, {self.maximum}]"
            )

    @property
    def integer(self) -> bool:
        """Whether the value is a whole number."""
        return isinstance(self.default, int) and self.kind != "select"

    def read(self, raw) -> str | int | float:
        """The value from what the form holds (a string), checked against the field's range.

        Raises
        ------
        ValueError
            For a value that is not a number, not whole where it must be, out of range, or
            not among the options; the message names the input, the value and what is allowed.
        """
        if self.kind == "select":
            value = str(raw)
            if value not in self.options:
                raise ValueError(f"{self.label}: {value!r} is not one of the choices")
            return value
        try:
            number = float(str(raw).strip().replace(",", ""))
        except ValueError:
            raise ValueError(f"{self.label}: {raw!r} is not a number") from None
        if not math.isfinite(number) or not self.minimum <= number <= self.maximum:
            raise ValueError(
                f"{self.label}: {raw!r} must be between {self.minimum:g} and {self.maximum:g}"
            )
        if self.integer:
            if number != int(number):
                raise ValueError(f"{self.label}: {raw} must be a whole number")
            return int(number)
        return number


@dataclass(frozen=True)
class Report:
    """What a calculator shows: text, an optional table and chart, and its key numbers.

    Attributes
    ----------
    text : str
        The model's own report (several lines).
    table : tuple of tuple of str
        Rows of a table, the first row the header; empty for none.
    svg : str
        A chart (:func:`gpulab.labkit.svgchart.line_chart`), or "".
    numbers : dict
        The main results as numbers (SI units), for tests that compare runs.
    """

    text: str
    table: tuple[tuple[str, ...], ...] = ()
    svg: str = ""
    numbers: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Calculator:
    """A live calculator: inputs, the function that computes its report, and where it lives.

    Attributes
    ----------
    name : str
        Its id in the book (``{calculator} name``) and in :func:`run`.
    title : str
        Heading of the form.
    fields : tuple of Field
        The inputs, in order.
    compute : callable
        ``compute(**values) -> Report``.
    widget : str
        The ipywidgets function in :mod:`gpulab.labkit.widgets` it is the live version of
        ("" for none).
    examples : tuple of dict
        Inputs (raw, as a form sends them) that the tests run in the page and in CPython.
    """

    name: str
    title: str
    fields: tuple[Field, ...]
    compute: Callable[..., Report]
    widget: str = ""
    examples: tuple[Mapping[str, str], ...] = ()

    def defaults(self) -> dict[str, str]:
        """The form's starting values, as the form sends them (strings)."""
        return {f.name: str(f.default) for f in self.fields}


# --------------------------------------------------------------------------- build-time data


def build_time_data() -> dict:
    """Numbers the live calculators need that only torch can compute, for the build to ship.

    ``cnn_activation_bytes``: ``"model|image side|precision"`` → activation bytes of one
    image, measured on a real forward pass
    (:func:`gpulab.labkit.planning.cnn_activation_bytes_per_image`) for every CNN in
    :data:`gpulab.NAMED_MODELS` at its published image side and every training precision.
    """
    from gpulab.costmodels.published_models import NAMED_MODELS
    from gpulab.hardware.precision import TRAINING_PRECISIONS
    from gpulab.labkit.planning import cnn_activation_bytes_per_image

    table = {}
    for model in NAMED_MODELS.values():
        if model.family != "cnn":
            continue
        for precision in TRAINING_PRECISIONS:
            key = f"{model.name}|{model.image_size}|{precision}"
            table[key] = cnn_activation_bytes_per_image(model.name, model.image_size, precision)
    return {"cnn_activation_bytes": table}


_DATA: dict = {}


def _build_data() -> dict:
    """The shipped build-time data where it exists (the browser), else computed (CPython)."""
    if not _DATA:
        if BUILD_DATA_FILE.is_file():
            _DATA.update(json.loads(BUILD_DATA_FILE.read_text(encoding="utf-8")))
        else:
            _DATA.update(build_time_data())
    return _DATA


# --------------------------------------------------------------------------- the calculators


def _markdown_table(markdown: str) -> tuple[tuple[str, ...], ...]:
    """Rows of a simple pipe table (the header first, the ``|---|`` line dropped)."""
    rows = []
    for line in markdown.strip().splitlines():
        cells = tuple(c.strip() for c in line.strip().strip("|").split("|"))
        if not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append(cells)
    return tuple(rows)


def _chooser(model, precision, optimizer, batch_size, samples_per_epoch, utilisation, price):
    from gpulab.costmodels.chooser import estimate_training_plan
    from gpulab.costmodels.published_models import get_model

    named = get_model(model)
    activations = None
    note = ""
    if named.family == "cnn":
        key = f"{named.name}|{named.image_size}|{precision}"
        per_image = _build_data()["cnn_activation_bytes"].get(key)
        if per_image is not None:
            activations = per_image * batch_size
            note = "\nActivations measured when the book was built (gl.activation_bytes)."
    plan = estimate_training_plan(
        model, precision=precision, optimizer=optimizer, batch_size=batch_size,
        samples_per_epoch=samples_per_epoch, utilisation=utilisation,
        price_per_hour=price or None, activations_bytes=activations,
    )  # fmt: skip
    table = plan.table()
    head = str(plan).replace(table, "").rstrip()
    numbers = {"memory_bytes": plan.memory.total_bytes}
    numbers.update({f"epoch_s[{o.spec.name}]": o.epoch_s for o in plan.options})
    numbers.update({f"published_epoch_s[{o.spec.name}]": o.published_epoch_s for o in plan.options})
    return Report(head + note, _markdown_table(table), numbers=numbers)


def _memory(params_millions, batch_size, activation_mib, precision, optimizer):
    from gpulab.costmodels.memory import estimate_training_memory, memory_report

    estimate = estimate_training_memory(
        max(1, round(params_millions * 1e6)),
        precision=precision,
        optimizer=optimizer,
        activations_bytes=round(batch_size * activation_mib * 2**20),
    )
    parts = [("parameters", estimate.params_bytes), ("gradients", estimate.grads_bytes),
             ("optimizer state", estimate.optimizer_bytes),
             ("activations", estimate.activations_bytes)]  # fmt: skip
    svg = stacked_bar(parts, value_format=format_bytes,
                      title="One GPU's training memory, stacked part by part "
                      "(prediction from the training-memory model)")  # fmt: skip
    return Report(memory_report(estimate), svg=svg, numbers={"total_bytes": estimate.total_bytes})


def _roofline(device, precision, intensity):
    from gpulab.costmodels.roofline import Ceilings, roofline_readout
    from gpulab.hardware.specs import get_spec

    spec = get_spec(device)
    if precision not in spec.peak_flops:
        have = ", ".join(p for p in spec.peak_flops)
        raise ValueError(f"{spec.name}'s datasheet has no {precision} peak (it has: {have})")
    roof = Ceilings.from_spec(spec, precision)
    lo, hi = min(0.01, intensity / 3), max(1e4, intensity * 3)
    xs = tuple(lo * (hi / lo) ** (k / 120) for k in range(121))
    xs = tuple(sorted({*xs, roof.ridge_point}))
    svg = line_chart(
        [Series(f"{roof.device_name}, {precision}", xs, tuple(roof.attainable(x) for x in xs))],
        x_label="arithmetic intensity (FLOP/byte)", y_label="attainable FLOP/s",
        x_log=True, y_log=True, point=(intensity, roof.attainable(intensity), "your kernel"),
        y_format=lambda v: format_rate(v, "FLOP/s"),
        title=f"Roofline of {roof.device_name} at {precision} (prediction from the datasheet)",
    )  # fmt: skip
    return Report(
        roofline_readout(roof, intensity), svg=svg,
        numbers={"attainable_flops": roof.attainable(intensity), "ridge": roof.ridge_point},
    )  # fmt: skip


_GPU_COUNTS = tuple(2**k for k in range(11))


def _scaling(params_billions, device, link, n_gpus, tokens_per_gpu, utilisation, overlap,
             train_tokens_billions):  # fmt: skip
    from gpulab.costmodels.training_time import scaling_estimate

    def estimate(n):
        return scaling_estimate(
            params_billions * 1e9, device, n, link, tokens_per_gpu=tokens_per_gpu,
            utilisation=utilisation, overlap=overlap,
        )  # fmt: skip

    total_tokens = train_tokens_billions * 1e9

    def hours(step_s: float, n: int) -> float:
        return total_tokens / (n * tokens_per_gpu) * step_s / 3600

    chosen = estimate(int(n_gpus))
    curve = [estimate(n) for n in _GPU_COUNTS]
    ideal = [hours(curve[0].prediction.time_s, 1) / n for n in _GPU_COUNTS]
    with_comm = [hours(e.prediction.time_s, n) for e, n in zip(curve, _GPU_COUNTS, strict=True)]
    time_chosen = hours(chosen.prediction.time_s, int(n_gpus))
    svg = line_chart(
        [Series("with the all-reduce", _GPU_COUNTS, tuple(with_comm)),
         Series("perfect scaling", _GPU_COUNTS, tuple(ideal), dashed=True)],
        x_label="GPUs", y_label="hours to train", x_log=True, y_log=True,
        point=(int(n_gpus), time_chosen, f"{n_gpus} GPUs: {format_duration(time_chosen * 3600)}"),
        x_format=lambda v: f"{v:g}", y_format=lambda v: f"{v:g} h",
        title=f"Time to train on {device} over {link} against GPU count (prediction)",
    )  # fmt: skip
    text_ = (
        f"{chosen.summary()}\n"
        f"time to train on {train_tokens_billions:g} billion tokens: "
        f"{format_duration(time_chosen * 3600)} on {n_gpus} GPUs (PREDICTION)"
    )
    return Report(text_, svg=svg, numbers={"step_s": chosen.prediction.time_s,
                                            "train_s": time_chosen * 3600})  # fmt: skip


def parallelism_report(n_params, layers, hidden, seq_len, n_gpus, spec, node_link, network):
    """:func:`gpulab.suggest_parallelism`'s split, then what its communication costs.

    Tensor parallelism is priced on ``node_link`` (inside a node), context and data
    parallelism on ``network`` (between nodes), one sequence per micro-batch in bf16.

    Returns
    -------
    str
        The plan with its memory arithmetic, then one line per kind of communication.
    """
    from gpulab.costmodels.comms import allreduce_time
    from gpulab.costmodels.parallelism import (
        context_parallel_bytes,
        suggest_parallelism,
        tensor_parallel_comm,
    )
    from gpulab.hardware.interconnects import interconnect

    plan = suggest_parallelism(
        n_params, layers=layers, hidden=hidden, seq_len=seq_len, n_gpus=n_gpus, spec=spec
    )
    inside, between = interconnect(node_link), interconnect(network)

    def on(link):  # the alpha-beta figures of a registry link (no latency published: 0)
        return dict(alpha_s=link.latency_s or 0.0, bandwidth_bytes_per_s=link.bandwidth)

    lines = [str(plan), f"communication (one sequence per micro-batch, bf16), {inside.name} "
             f"inside a node, {between.name} between nodes:"]  # fmt: skip
    if plan.tensor > 1:
        tp = tensor_parallel_comm(1, seq_len // plan.context, hidden, plan.tensor)
        one = allreduce_time(tp.message_bytes, plan.tensor, **on(inside))
        lines.append(
            f"  tensor : {tp.n_allreduces} all-reduces of {format_bytes(tp.message_bytes)} per "
            f"layer and micro-batch, {format_duration(one)} each = "
            f"{format_duration(tp.n_allreduces * one)} per layer"
        )
    if plan.context > 1:
        cp = context_parallel_bytes(1, seq_len, hidden, plan.context)
        lines.append(
            f"  context: {format_bytes(cp)} per rank per layer (key/value blocks of multi-head "
            f"attention round the ring; grouped-query attention sends less) = "
            f"{format_duration(cp / between.bandwidth)} at {between.name}"
        )
    if plan.data > 1:
        grad_bytes = 2 * n_params / (plan.tensor * plan.pipeline)  # bf16 gradients, one shard
        t = allreduce_time(grad_bytes, plan.data, **on(between))
        lines.append(
            f"  data   : all-reduce of {format_bytes(grad_bytes)} of gradients over "
            f"{plan.data} ranks = {format_duration(t)} per step (overlaps the backward pass)"
        )
    return "\n".join(lines)


def _parallelism(params_billions, layers, hidden, seq_len, n_gpus, device, node_link, network):
    from gpulab.costmodels.parallelism import suggest_parallelism

    args = (params_billions * 1e9, layers, int(hidden), int(seq_len), int(n_gpus), device,
            node_link, network)  # fmt: skip
    plan = suggest_parallelism(args[0], layers=layers, hidden=int(hidden), seq_len=int(seq_len),
                               n_gpus=int(n_gpus), spec=device)  # fmt: skip
    numbers = {k: getattr(plan, k) for k in ("tensor", "pipeline", "context", "data")}
    return Report(parallelism_report(*args), numbers=numbers)


def _occupancy(device, threads_per_block, registers_per_thread, shared_per_block_bytes):
    from gpulab.kernels.occupancy import occupancy

    occ = occupancy(device, threads_per_block, registers_per_thread, shared_per_block_bytes)
    return Report(occ.summary(), numbers={"warps_per_sm": occ.warps_per_sm})


def _kv_cache(model, seq_len, batch_size, kv_precision, weight_format, device):
    from gpulab.costmodels.inference import decode_estimate, model_kv_cache_bytes, weight_bytes
    from gpulab.costmodels.published_models import get_model
    from gpulab.hardware.specs import get_spec

    named, spec = get_model(model), get_spec(device)
    kv = model_kv_cache_bytes(named, seq_len=seq_len, batch_size=batch_size,
                              precision=kv_precision)  # fmt: skip
    weights = weight_bytes(named.n_params, weight_format)
    total = kv + weights
    decode = decode_estimate(spec, named.n_params, weight_format=weight_format,
                             batch_size=batch_size, kv_bytes=kv)  # fmt: skip
    memory = spec.memory_bytes
    fits = (
        f"fits in its {format_bytes(memory)} ({100 * total / memory:.0f}% of it)"
        if total <= memory
        else f"does NOT fit in its {format_bytes(memory)} ({total / memory:.1f}x too much)"
    )
    lines = [
        f"{named.name}, {batch_size} sequence(s) of {seq_len:,} tokens, {weight_format} weights, "
        f"{kv_precision} KV cache, on {spec.name}",
        f"  weights   {format_bytes(weights):>10}",
        f"  KV cache  {format_bytes(kv):>10}  (layers x 2 x hidden x tokens x sequences x bytes)",
        f"  total     {format_bytes(total):>10}  {fits}",
        f"decode: {decode}",
        f"  one user sees at most {decode.tokens_per_s_per_sequence:,.1f} tokens/s "
        f"(one step: {format_duration(decode.step_s)}), with the whole KV cache read each step",
    ]
    return Report("\n".join(lines), numbers={"kv_bytes": kv, "total_bytes": total,
                                              "tokens_per_s": decode.tokens_per_s})  # fmt: skip


def _waves(device, n, tile, precision):
    from gpulab.kernels.occupancy import matmul_waves

    p = matmul_waves(device, n, tile=int(tile), precision=precision)
    step = max(1, int(tile) // 8)
    ns = tuple(range(max(int(tile), n - 2 * int(tile)), n + 2 * int(tile) + 1, step))
    eff = tuple(100 * matmul_waves(device, m, tile=int(tile), precision=precision).efficiency
                for m in ns)  # fmt: skip
    svg = line_chart(
        [Series("usable share of the peak", ns, eff)],
        x_label="matrix size n (n x n x n matmul)", y_label="% of peak",
        point=(n, 100 * p.efficiency, f"n = {n}: {100 * p.efficiency:.1f}%"),
        x_format=lambda v: f"{v:g}", y_format=lambda v: f"{v:g}%",
        title=f"Wave quantization on {p.device}: usable share of the peak against n (prediction)",
    )  # fmt: skip
    text_ = (
        f"{p.device}, {precision}, n = {n}, {tile} x {tile} tiles: {p.tiles:,} tiles on "
        f"{p.sm_count} SMs = {p.waves} wave(s), {p.tiles / (p.waves * p.sm_count):.0%} of the "
        f"wave slots busy\n"
        f"predicted time {format_duration(p.time_s)} against {format_duration(p.ideal_time_s)} "
        f"with the work spread perfectly: {p.efficiency:.1%} of the peak is usable. "
        f"PREDICTION: {p.label}"
    )
    return Report(text_, svg=svg, numbers={"waves": p.waves, "time_s": p.time_s})


def _specs(predicate) -> tuple[str, ...]:
    from gpulab.hardware.specs import list_specs

    return tuple(s.name for s in list_specs() if predicate(s))


def _links() -> tuple[str, ...]:
    from gpulab.hardware.interconnects import list_interconnects

    return tuple(x.name for x in list_interconnects())


def _occupancy_devices() -> tuple[str, ...]:
    from gpulab.hardware.sm import sm_architecture

    def known(s) -> bool:
        try:
            sm_architecture(s)
        except ValueError:
            return False
        return True

    return _specs(lambda s: s.kind == "gpu" and known(s))


def _calculators() -> dict[str, Calculator]:
    from gpulab.costmodels.inference import WEIGHT_FORMATS
    from gpulab.costmodels.memory import OPTIMIZERS
    from gpulab.costmodels.published_models import NAMED_MODELS
    from gpulab.hardware.precision import PEAK_PRECISIONS, TRAINING_PRECISIONS

    gpus = _specs(lambda s: s.kind in ("gpu", "tpu") and s.peak_flops and s.memory_bytes)
    roofline_devices = _specs(lambda s: s.memory_bandwidth and s.peak_flops)
    wave_devices = _specs(lambda s: s.kind == "gpu" and s.sm_count and s.peak_flops)
    transformers = tuple(n for n, m in NAMED_MODELS.items() if m.family == "transformer")
    powers = lambda lo, hi: tuple(str(2**k) for k in range(lo, hi + 1))  # noqa: E731
    precision = Field("precision", "Precision", "select", "amp_bf16", TRAINING_PRECISIONS)
    optimizer = Field("optimizer", "Optimizer", "select", "adamw", OPTIMIZERS)
    utilisation = Field("utilisation", "Utilisation of peak", "range", DEFAULT_UTILISATION,
                        minimum=0.05, maximum=1.0, step=0.05)  # fmt: skip
    calculators = [
        Calculator(
            "chooser", "GPU chooser: memory, fit and time per epoch",
            (
                Field("model", "Model", "select", "BERT-base", tuple(NAMED_MODELS)),
                precision, optimizer,
                Field("batch_size", "Batch size", "number", 32, minimum=1, maximum=65536,
                      step=1),
                Field("samples_per_epoch", "Samples per epoch", "number", 1_000_000,
                      minimum=1, maximum=10**13, step=1),
                utilisation,
                Field("price", "Your $ per GPU-hour (0: none)", "number", 0.0, minimum=0.0,
                      maximum=1000.0, step=0.01),
            ),
            lambda **v: _chooser(**v), widget="chooser_widget",
            examples=({"model": "ResNet-50", "batch_size": "256", "precision": "amp_fp16"},
                      {"model": "GPT-2 XL", "optimizer": "sgd", "price": "2.5"}),
        ),
        Calculator(
            "training_memory", "Training memory",
            (
                Field("params_millions", "Parameters (millions)", "number", 110.0,
                      minimum=0.001, maximum=1e7, step=1),
                Field("batch_size", "Batch size", "number", 32, minimum=1, maximum=65536,
                      step=1),
                Field("activation_mib", "Activations per sample (MiB)", "number", 100.0,
                      minimum=0.0, maximum=1e6, step=1),
                precision, optimizer,
            ),
            lambda **v: _memory(**v), widget="memory_calculator",
            examples=({"params_millions": "7000", "precision": "fp32", "optimizer": "sgd"},
                      {"batch_size": "1", "activation_mib": "0"}),
        ),
        Calculator(
            "roofline", "Roofline explorer",
            (
                Field("device", "Device", "select", "A100 80GB SXM4", roofline_devices),
                Field("precision", "Precision", "select", "bf16", PEAK_PRECISIONS),
                Field("intensity", "Arithmetic intensity (FLOP/byte)", "number", 10.0,
                      minimum=0.01, maximum=10000.0, step=0.01),
            ),
            lambda **v: _roofline(**v), widget="roofline_explorer",
            examples=({"device": "Tesla T4", "precision": "fp16", "intensity": "400"},
                      {"intensity": "0.25"}),
        ),
        Calculator(
            "scaling", "Scaling out: time to train against GPU count",
            (
                Field("params_billions", "Parameters (billions)", "number", 7.0, minimum=0.01,
                      maximum=10000.0, step=0.1),
                Field("device", "GPU", "select", "H100 SXM5 80GB", gpus),
                Field("link", "Link between GPUs", "select", "InfiniBand NDR (4x)", _links()),
                Field("n_gpus", "GPUs", "select", "64", tuple(map(str, _GPU_COUNTS))),
                Field("tokens_per_gpu", "Tokens per GPU per step", "number", 16384,
                      minimum=1, maximum=10**7, step=1),
                utilisation,
                Field("overlap", "Overlap of the all-reduce", "range", 0.0, minimum=0.0,
                      maximum=1.0, step=0.05),
                Field("train_tokens_billions", "Tokens to train on (billions)", "number",
                      100.0, minimum=0.001, maximum=1e6, step=1),
            ),
            lambda **v: _scaling(**v), widget="scaling_calculator",
            examples=({"link": "PCIe Gen4 x16", "n_gpus": "8", "device": "A100 80GB SXM4"},
                      {"overlap": "0.8", "n_gpus": "1024"}),
        ),
        Calculator(
            "parallelism", "Which parallelism, and what it costs",
            (
                Field("params_billions", "Parameters (billions)", "number", 405.0,
                      minimum=0.1, maximum=100000.0, step=0.1),
                Field("layers", "Layers", "number", 126, minimum=1, maximum=1024, step=1),
                Field("hidden", "Hidden size", "select", "16384", powers(8, 16)),
                Field("seq_len", "Sequence length (tokens)", "select", "8192", powers(9, 20)),
                Field("n_gpus", "GPUs", "select", "16384", powers(0, 17)),
                Field("device", "GPU", "select", "H100 SXM5 80GB",
                      _specs(lambda s: s.kind == "gpu" and s.memory_bytes)),
                Field("node_link", "Link inside a node", "select", "NVLink 4 (H100/H200)",
                      _links()),
                Field("network", "Network between nodes", "select", "InfiniBand NDR (4x)",
                      _links()),
            ),
            lambda **v: _parallelism(**v), widget="parallelism_calculator",
            examples=({"params_billions": "7", "layers": "32", "hidden": "4096",
                       "seq_len": "4096", "n_gpus": "64"},
                      {"seq_len": "131072"}),
        ),
        Calculator(
            "occupancy", "Occupancy of one SM",
            (
                Field("device", "Device", "select", "Tesla T4", _occupancy_devices()),
                Field("threads_per_block", "Threads per block", "range", 256, minimum=32,
                      maximum=1024, step=32),
                Field("registers_per_thread", "Registers per thread", "range", 32, minimum=0,
                      maximum=255, step=1),
                Field("shared_per_block_bytes", "Shared memory per block (bytes)", "range", 0,
                      minimum=0, maximum=227 * 1024, step=256),
            ),
            lambda **v: _occupancy(**v), widget="occupancy_calculator",
            examples=({"registers_per_thread": "128", "threads_per_block": "512"},
                      {"device": "A100 80GB SXM4", "shared_per_block_bytes": "49152"}),
        ),
        Calculator(
            "kv_cache", "Inference budget: weights, KV cache and decode speed",
            (
                Field("model", "Model", "select", "Llama-2-7B", transformers),
                Field("seq_len", "Tokens per sequence (prompt + output)", "number", 4096,
                      minimum=1, maximum=10**7, step=1),
                Field("batch_size", "Sequences served together", "number", 8, minimum=1,
                      maximum=65536, step=1),
                Field("kv_precision", "KV-cache precision", "select", "bf16",
                      ("fp32", "fp16", "bf16", "fp8")),
                Field("weight_format", "Weights stored as", "select", "bf16",
                      tuple(WEIGHT_FORMATS)),
                Field("device", "GPU", "select", "A100 80GB SXM4", gpus),
            ),
            lambda **v: _kv_cache(**v),
            examples=({"model": "GPT-2 XL", "batch_size": "64", "weight_format": "int8"},
                      {"device": "Tesla T4", "weight_format": "int4", "seq_len": "32000"}),
        ),
        Calculator(
            "matmul_waves", "Tile and wave quantization of a matmul",
            (
                Field("device", "GPU", "select", "A100 80GB SXM4", wave_devices),
                Field("n", "Matrix size n", "number", 3072, minimum=16, maximum=65536, step=1),
                Field("tile", "Output tile edge", "select", "128", ("64", "128", "256")),
                Field("precision", "Precision", "select", "fp16", PEAK_PRECISIONS),
            ),
            lambda **v: _waves(**v),
            examples=({"n": "3200"}, {"device": "Tesla T4", "n": "1000", "tile": "64"}),
        ),
    ]  # fmt: skip
    return {c.name: c for c in calculators}


class _Registry(Mapping):
    """The calculators by name, declared on first use (the declarations read the registry)."""

    def __init__(self) -> None:
        self._items: dict[str, Calculator] | None = None

    def _all(self) -> dict[str, Calculator]:
        if self._items is None:
            self._items = _calculators()
        return self._items

    def __getitem__(self, name: str) -> Calculator:
        return self._all()[name]

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


#: Every live calculator, by name.
CALCULATORS: Mapping[str, Calculator] = _Registry()


# --------------------------------------------------------------------------- running


def render_report(report: Report) -> str:
    """The report as the HTML the page shows (text, then table, then chart)."""
    parts = [f'<pre class="gl-calc-text">{html.escape(report.text)}</pre>']
    if report.table:
        head, *rows = report.table
        cells = "".join(f"<th>{html.escape(c)}</th>" for c in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        parts.append(
            f'<div class="gl-calc-table"><table><thead><tr>{cells}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>"
        )
    if report.svg:
        parts.append(f'<div class="gl-calc-chart">{report.svg}</div>')
    return "".join(parts)


def run(name: str, values: Mapping[str, str] | str | None = None) -> dict:
    """Run calculator ``name`` on raw form values; the result as a JSON-ready dict.

    Parameters
    ----------
    name : str
        A key of :data:`CALCULATORS`.
    values : mapping or JSON string, optional
        Input name → value as the form holds it (a string); missing inputs take their
        defaults. The browser passes a JSON string.

    Returns
    -------
    dict
        ``ok`` (bool), ``html`` (what the page shows), ``numbers`` (the main results, or
        ``{}``) and ``values`` (the inputs as read).

    Examples
    --------
    >>> out = run("occupancy", {"threads_per_block": "512"})
    >>> out["ok"], out["numbers"]["warps_per_sm"]
    (True, 32)
    >>> print(run("occupancy", {"threads_per_block": "64.5"})["html"])
    <p class="gl-calc-error">Cannot compute this: Threads per block: 64.5 must be a whole number</p>
    """
    calc = CALCULATORS[choice("name", name, tuple(CALCULATORS))]
    if isinstance(values, str):
        values = json.loads(values)
    values = dict(values or {})
    if not all(isinstance(k, str) for k in values):
        raise wrong_type("values", values, "a mapping of input names to strings")
    read = {}
    try:
        for f in calc.fields:
            read[f.name] = f.read(values.get(f.name, str(f.default)))
        report = calc.compute(**read)
    except (ValueError, TypeError) as exc:
        message = f'<p class="gl-calc-error">Cannot compute this: {html.escape(str(exc))}</p>'
        return {"ok": False, "html": message, "numbers": {}, "values": read}
    return {"ok": True, "html": render_report(report), "numbers": dict(report.numbers),
            "values": read}  # fmt: skip
