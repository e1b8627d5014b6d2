"""The course's interactive calculators: controls over the same functions the chapters use.

===========================  ==============================================================
:func:`chooser_widget`       model, precision, batch, utilisation, price → memory, fit, time
                             and cost per GPU (:func:`gpulab.plan_training`)
:func:`scaling_calculator`   model size, GPU, GPU count, link → data-parallel step time and
                             efficiency (:func:`gpulab.scaling_estimate`)
:func:`roofline_explorer`    registry device, precision, arithmetic intensity → attainable
                             FLOP/s and what bounds it (:func:`gpulab.roofline_readout`)
:func:`memory_calculator`    model size, batch, precision, optimizer → training memory and
                             the GPUs that hold it (:func:`gpulab.memory_report`)
:func:`occupancy_calculator` threads, registers, shared memory per block, device → resident
                             warps per SM and the limiting resource (:func:`gpulab.occupancy`)
:func:`parallelism_calculator`  model size, sequence, GPUs, links → tensor, pipeline,
                             context and data parallelism, with the arithmetic
                             (:func:`gpulab.suggest_parallelism`)
===========================  ==============================================================

All of them behave alike. They check their arguments first (a value of the wrong type raises
``TypeError``, a bad value ``ValueError``; device names are looked up as forgivingly as
everywhere else, so ``"h100 sxm"`` works).
They return an ``ipywidgets.VBox`` whose output area already shows the report for the values
given, so a recorded notebook shows a useful answer, and which follows the controls. Without
ipywidgets, each prints one sentence saying so and how to get it, then that same report, and
returns None. ipywidgets is imported only when one of them is called.
"""

from __future__ import annotations

import base64
import io
import math

from gpulab._checks import choice, non_negative_int, positive_int, positive_number
from gpulab.costmodels.training_time import DEFAULT_UTILISATION
from gpulab.hardware.interconnects import resolve_link
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "chooser_widget",
    "memory_calculator",
    "occupancy_calculator",
    "parallelism_calculator",
    "roofline_explorer",
    "scaling_calculator",
]

_STYLE = {"description_width": "160px"}
_WIDTH = "440px"


def _ipywidgets():
    """The ipywidgets module, or None where it is not installed."""
    try:
        import ipywidgets
    except ImportError:
        return None
    return ipywidgets


def _fallback(what: str, report: str) -> None:
    """What every widget does without ipywidgets: one sentence, then the static report."""
    print(
        f"The interactive {what} needs ipywidgets, which is not installed here "
        "(pip install ipywidgets); this is its report for the values given:"
    )
    print(report)


def _control(w, kind, description: str, value, **kwargs):
    return kind(
        description=description,
        value=value,
        style=_STYLE,
        layout=w.Layout(width=_WIDTH),
        **kwargs,
    )


def _show(out, text: str, *, markdown: str | None = None, png: bytes | None = None) -> None:
    """Replace what the output area shows. Setting ``outputs`` directly (not ``with out:``)
    works with or without a running kernel, so tests and recorded notebooks see it too."""
    outputs = [{"output_type": "stream", "name": "stdout", "text": text + "\n"}]
    if markdown is not None:
        outputs.append(
            {
                "output_type": "display_data",
                "data": {"text/markdown": markdown, "text/plain": markdown},
                "metadata": {},
            }
        )
    if png is not None:
        outputs.append(
            {
                "output_type": "display_data",
                "data": {"image/png": base64.b64encode(png).decode("ascii")},
                "metadata": {},
            }
        )
    out.outputs = tuple(outputs)


def _watch(controls, update) -> None:
    for control in controls:
        control.observe(update, names="value")


# --- the GPU chooser -------------------------------------------------------------------------


def _plan_report(plan) -> tuple[str, str]:
    """A plan as (text, Markdown table)."""
    head, _, _ = str(plan).rpartition(plan.table())
    return head.rstrip(), plan.table()


def chooser_widget(
    model="BERT-base",
    *,
    precision: str = "amp_bf16",
    optimizer: str = "adamw",
    batch_size: int = 32,
    seq_len: int | None = None,
    image_size: int | None = None,
    samples_per_epoch: int = 1_000_000,
    utilisation: float = DEFAULT_UTILISATION,
    price_per_hour: float | None = None,
):
    """The GPU chooser: controls over :func:`gpulab.plan_training`.

    Parameters
    ----------
    model : str, NamedModel or int
        A named model (:data:`gpulab.NAMED_MODELS`) or a parameter count ("custom").
    precision, optimizer, batch_size, seq_len, image_size, samples_per_epoch, utilisation, \
price_per_hour
        Starting values, as in :func:`gpulab.plan_training`.

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area showing the plan (None without ipywidgets).

    Examples
    --------
    >>> import gpulab as gl
    >>> box = gl.chooser_widget("BERT-base", batch_size=8)  # doctest: +SKIP
    """
    from gpulab.costmodels.memory import OPTIMIZERS
    from gpulab.costmodels.published_models import NAMED_MODELS
    from gpulab.hardware.precision import TRAINING_PRECISIONS
    from gpulab.labkit.planning import plan_training

    first = plan_training(
        model, precision=precision, optimizer=optimizer, batch_size=batch_size,
        seq_len=seq_len, image_size=image_size, samples_per_epoch=samples_per_epoch,
        utilisation=utilisation, price_per_hour=price_per_hour,
    )  # fmt: skip
    text, table = _plan_report(first)
    w = _ipywidgets()
    if w is None:
        _fallback("GPU chooser", f"{text}\n{table}")
        return None

    custom = isinstance(model, int)
    c = {
        "model": _control(
            w, w.Dropdown, "Model", "custom" if custom else first.model,
            options=[*NAMED_MODELS, "custom"],
        ),
        "params_millions": _control(
            w, w.BoundedFloatText, "Parameters (M), custom",
            first.n_params / 1e6 if custom else 100.0, min=0.001, max=1e7,
        ),
        "precision": _control(w, w.Dropdown, "Precision", precision, options=TRAINING_PRECISIONS),
        "optimizer": _control(w, w.Dropdown, "Optimizer", optimizer, options=OPTIMIZERS),
        "batch_size": _control(
            w, w.BoundedIntText, "Batch size", first.batch_size, min=1, max=1 << 20
        ),
        "seq_len": _control(
            w, w.BoundedIntText, "Tokens (0 = model's)", seq_len or 0, min=0, max=1 << 20
        ),
        "image_size": _control(
            w, w.BoundedIntText, "Image side (0 = model's)", image_size or 0, min=0, max=1 << 14
        ),
        "samples_per_epoch": _control(
            w, w.BoundedIntText, "Samples per epoch", first.samples_per_epoch, min=1,
            max=10**13,
        ),
        "utilisation": _control(
            w, w.FloatSlider, "Utilisation of peak", first.utilisation, min=0.05, max=1.0,
            step=0.05,
        ),
        "price_per_hour": _control(
            w, w.BoundedFloatText, "Your $ per GPU-hour", price_per_hour or 0.0, min=0.0,
            max=1e4,
        ),
    }  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        v = {name: control.value for name, control in c.items()}
        chosen = round(v["params_millions"] * 1e6) if v["model"] == "custom" else v["model"]
        try:
            plan = plan_training(
                chosen, precision=v["precision"], optimizer=v["optimizer"],
                batch_size=v["batch_size"], seq_len=v["seq_len"] or None,
                image_size=v["image_size"] or None, samples_per_epoch=v["samples_per_epoch"],
                utilisation=v["utilisation"], price_per_hour=v["price_per_hour"] or None,
            )  # fmt: skip
        except ValueError as exc:
            _show(out, f"Cannot plan this job: {exc}")
            return
        plan_text, plan_table = _plan_report(plan)
        _show(out, plan_text, markdown=plan_table)

    _watch(c.values(), update)
    _show(out, text, markdown=table)
    return w.VBox([*c.values(), out])


# --- the scaling calculator ------------------------------------------------------------------


def scaling_calculator(
    n_params: float = 7e9,
    spec="H100 SXM5 80GB",
    n_gpus: int = 64,
    link="InfiniBand NDR (4x)",
    *,
    tokens_per_gpu: float = 16384,
    precision: str | None = None,
    utilisation: float = DEFAULT_UTILISATION,
    overlap: float = 0.0,
):
    """Sliders and menus over :func:`gpulab.scaling_estimate`: when does communication win?

    Parameters
    ----------
    n_params, spec, n_gpus, link, tokens_per_gpu, precision, utilisation, overlap
        Starting values, as in :func:`gpulab.scaling_estimate` (``precision=None``: the
        GPU's best training precision).

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area showing the estimate (None without ipywidgets).
    """
    from gpulab.costmodels.training_time import (
        TIME_PRECISIONS,
        scaling_estimate,
        training_flops_per_token,
    )
    from gpulab.hardware.interconnects import list_interconnects
    from gpulab.hardware.specs import list_specs

    n_params = positive_number("n_params", n_params)
    training_flops_per_token(n_params)  # refuses, by this name, a size whose FLOPs overflow
    first = scaling_estimate(
        n_params, spec, n_gpus, link, tokens_per_gpu=tokens_per_gpu, precision=precision,
        utilisation=utilisation, overlap=overlap,
    )  # fmt: skip
    w = _ipywidgets()
    if w is None:
        _fallback("scaling calculator", first.summary())
        return None

    t = first.prediction
    gpus = [s.name for s in list_specs() if s.kind in ("gpu", "tpu") and s.peak_flops]
    if t.spec.name not in gpus:
        gpus.append(t.spec.name)
    counts = sorted({2**k for k in range(11)} | {t.n_gpus})
    c = {
        "n_params": _control(
            w, w.FloatLogSlider, "Parameters", n_params, base=10,
            min=min(7, math.floor(math.log10(n_params))),
            max=max(12, math.ceil(math.log10(n_params))), step=0.1, readout_format=".2e",
        ),
        "spec": _control(w, w.Dropdown, "GPU", t.spec.name, options=gpus),
        "n_gpus": _control(w, w.SelectionSlider, "GPUs", t.n_gpus, options=counts),
        "link": _control(
            w, w.Dropdown, "Interconnect", t.link,
            options=[x.name for x in list_interconnects()],
        ),
        "tokens_per_gpu": _control(
            w, w.IntSlider, "Tokens per GPU per step", int(tokens_per_gpu), min=1024,
            max=131072, step=1024,
        ),
        "precision": _control(
            w, w.Dropdown, "Precision", precision,
            options=[("best for the GPU", None), *((p, p) for p in TIME_PRECISIONS)],
        ),
        "utilisation": _control(
            w, w.FloatSlider, "Utilisation of peak", t.utilisation, min=0.05, max=1.0,
            step=0.05,
        ),
        "overlap": _control(
            w, w.FloatSlider, "Overlap", t.overlap, min=0.0, max=1.0, step=0.05
        ),
    }  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        v = {name: control.value for name, control in c.items()}
        try:
            estimate = scaling_estimate(
                v["n_params"], v["spec"], v["n_gpus"], v["link"],
                tokens_per_gpu=v["tokens_per_gpu"], precision=v["precision"],
                utilisation=v["utilisation"], overlap=v["overlap"],
            )  # fmt: skip
        except ValueError as exc:
            _show(out, f"Cannot predict this: {exc}")
            return
        _show(out, estimate.summary())

    _watch(c.values(), update)
    _show(out, first.summary())
    return w.VBox([*c.values(), out])


# --- the roofline explorer -------------------------------------------------------------------


def _roofline_png(ceilings, intensity: float) -> bytes:
    """The roofline with one hollow point (the prediction), as PNG bytes."""
    from matplotlib.figure import Figure

    from gpulab.costmodels.roofline import RooflinePoint, plot_roofline
    from gpulab.labkit.plotting import course_style

    # A kernel of this intensity; its FLOPs scale cancels out on the plot.
    kernel = RooflinePoint(f"{intensity:.3g} FLOP/byte", flops=intensity * 1e9, n_bytes=1e9,
                           precision=ceilings.precision)
    with course_style():
        fig = Figure(figsize=(6.5, 4))
        ax = fig.subplots()
        plot_roofline(
            ceilings, [kernel], ax=ax,
            intensity_range=(min(0.01, intensity / 3), max(1e4, intensity * 3)),
        )  # fmt: skip
        title = f"{ceilings.device_name}: roofline from the datasheet (prediction)"
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def roofline_explorer(spec="A100 80GB SXM4", precision: str = "bf16", intensity: float = 10.0):
    """Registry device × precision × arithmetic intensity → attainable FLOP/s and the bound.

    Parameters
    ----------
    spec : DeviceSpec or str
        Registry device to start with (any with a memory bandwidth and a peak).
    precision : str
        One of :data:`gpulab.PEAK_PRECISIONS` the device's datasheet has a peak for.
    intensity : float
        Arithmetic intensity to start with, in FLOP/byte (0.01 to 10,000).

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area with the readout and the roofline plot (None
        without ipywidgets).

    Examples
    --------
    >>> import gpulab as gl
    >>> box = gl.roofline_explorer("t4", "fp16", 4.0)  # doctest: +SKIP
    """
    from gpulab.costmodels.roofline import Ceilings, roofline_readout
    from gpulab.hardware.precision import PEAK_PRECISIONS
    from gpulab.hardware.specs import list_specs

    found = resolve_spec("spec", spec)
    if not found.memory_bandwidth or not found.peak_flops:
        raise ValueError(
            f"spec={spec!r} ({found.name}) has no memory bandwidth or no peak in the registry; "
            "pick a device that has both"
        )
    choice("precision", precision, PEAK_PRECISIONS)
    if precision not in found.peak_flops:
        raise ValueError(
            f"precision={precision!r}: {found.name}'s datasheet has no {precision} peak; "
            f"use one of {', '.join(map(repr, found.peak_flops))}"
        )
    intensity = positive_number("intensity", intensity)
    if not 0.01 <= intensity <= 1e4:
        raise ValueError(f"intensity={intensity!r} must be between 0.01 and 10000 FLOP/byte")

    def report(spec_name: str, precision: str, intensity: float) -> tuple[str, object]:
        the_spec = resolve_spec("spec", spec_name)
        if precision not in the_spec.peak_flops:
            return (
                f"{the_spec.name}'s datasheet has no {precision} peak: choose another precision.",
                None,
            )
        roof = Ceilings.from_spec(the_spec, precision)
        return roofline_readout(roof, intensity), roof

    first_text, first_roof = report(found.name, precision, intensity)
    w = _ipywidgets()
    if w is None:
        _fallback("roofline explorer", first_text)
        return None

    devices = [s.name for s in list_specs() if s.memory_bandwidth and s.peak_flops]
    c = {
        "spec": _control(w, w.Dropdown, "Device", found.name, options=devices),
        "precision": _control(w, w.Dropdown, "Precision", precision, options=PEAK_PRECISIONS),
        "intensity": _control(
            w, w.FloatLogSlider, "FLOP/byte", intensity, base=10, min=-2, max=4, step=0.05,
            readout_format=".3g",
        ),
    }  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        text, roof = report(c["spec"].value, c["precision"].value, c["intensity"].value)
        png = None if roof is None else _roofline_png(roof, c["intensity"].value)
        _show(out, text, png=png)

    _watch(c.values(), update)
    _show(out, first_text, png=_roofline_png(first_roof, intensity))
    return w.VBox([*c.values(), out])


# --- the memory calculator -------------------------------------------------------------------


def memory_calculator(
    *,
    n_params: int = 110_000_000,
    batch_size: int = 32,
    activation_bytes_per_sample: int = 0,
    precision: str = "amp_bf16",
    optimizer: str = "adamw",
):
    """Model size, batch, precision, optimizer → training memory and the GPUs that hold it.

    Activations are ``batch_size × activation_bytes_per_sample``: measure the per-sample
    figure for your model with :func:`gpulab.activation_bytes` (the default, 0, leaves them
    out). The default model size is BERT-base's 110 million parameters.

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area with :func:`gpulab.memory_report` (None without
        ipywidgets).
    """
    from gpulab.costmodels.memory import OPTIMIZERS, estimate_training_memory, memory_report
    from gpulab.hardware.precision import TRAINING_PRECISIONS

    n_params = positive_int("n_params", n_params)
    batch_size = positive_int("batch_size", batch_size)
    per_sample = non_negative_int("activation_bytes_per_sample", activation_bytes_per_sample)
    choice("precision", precision, TRAINING_PRECISIONS)
    choice("optimizer", optimizer, OPTIMIZERS)

    def report(params_m: float, batch: int, act_mib: float, prec: str, opt: str) -> str:
        est = estimate_training_memory(
            max(1, round(params_m * 1e6)),
            precision=prec,
            optimizer=opt,
            activations_bytes=round(batch * act_mib * 2**20),
        )
        return memory_report(est)

    start = (n_params / 1e6, batch_size, per_sample / 2**20, precision, optimizer)
    w = _ipywidgets()
    if w is None:
        _fallback("memory calculator", report(*start))
        return None

    controls = [
        _control(
            w, w.FloatLogSlider, "Parameters (M)", start[0], base=10,
            min=min(0, math.floor(math.log10(start[0]))),
            max=max(6, math.ceil(math.log10(start[0]))),
        ),
        _control(w, w.IntSlider, "Batch size", batch_size, min=1, max=max(4096, batch_size)),
        _control(w, w.BoundedFloatText, "Activations (MiB/sample)", start[2], min=0, max=1e6),
        _control(w, w.Dropdown, "Precision", precision, options=TRAINING_PRECISIONS),
        _control(w, w.Dropdown, "Optimizer", optimizer, options=OPTIMIZERS),
    ]  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        _show(out, report(*(control.value for control in controls)))

    _watch(controls, update)
    update()
    return w.VBox([*controls, out])


# --- the occupancy calculator ----------------------------------------------------------------


def occupancy_calculator(
    spec="Tesla T4",
    *,
    threads_per_block: int = 256,
    registers_per_thread: int = 32,
    shared_per_block_bytes: int = 0,
):
    """Threads, registers and shared memory per block, device → resident warps per SM.

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area with :func:`gpulab.occupancy`'s summary and the
        limiting resource (None without ipywidgets).
    """
    from gpulab.hardware.sm import sm_architecture
    from gpulab.kernels.occupancy import occupancy

    first = occupancy(spec, threads_per_block, registers_per_thread, shared_per_block_bytes)
    w = _ipywidgets()
    if w is None:
        _fallback("occupancy calculator", first.summary())
        return None

    from gpulab.hardware.specs import list_specs

    names = []
    for s in list_specs("gpu"):
        try:
            sm_architecture(s)
        except ValueError:
            continue
        names.append(s.name)
    device = resolve_spec("spec", spec).name if first.device in names else names[0]
    controls = [
        _control(w, w.Dropdown, "Device", device, options=names),
        _control(
            w, w.IntSlider, "Threads/block", first.threads_per_block, min=32, max=1024, step=32
        ),
        _control(w, w.IntSlider, "Registers/thread", first.registers_per_thread, min=0, max=255),
        _control(
            w, w.IntSlider, "Shared bytes/block", first.shared_per_block_bytes,
            min=0, max=227 * 1024, step=256,
        ),
    ]  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        dev, threads, regs, shared = (c.value for c in controls)
        try:
            text = occupancy(dev, threads, regs, shared).summary()
        except ValueError as exc:  # e.g. more shared memory than this device allows a block
            text = str(exc)
        _show(out, text)

    _watch(controls, update)
    update()
    return w.VBox([*controls, out])


# --- which parallelism when ------------------------------------------------------------------


def parallelism_calculator(
    n_params: float = 405e9,
    *,
    layers: int = 126,
    hidden: int = 16384,
    seq_len: int = 8192,
    n_gpus: int = 16384,
    spec="H100 SXM5 80GB",
    node_link="NVLink 4 (H100/H200)",
    network="InfiniBand NDR (4x)",
):
    """Model size, sequence length, GPU count and memory, links → which parallelism, and why.

    Shows :func:`gpulab.suggest_parallelism`'s split with its memory arithmetic, then the
    communication each kind of parallelism adds, priced on the registry's links: tensor
    parallelism inside a node (``node_link``), context and data parallelism between nodes
    (``network``). The defaults are Llama 3 405B on 16,384 H100s (the Llama 3 paper's
    Table 4, https://arxiv.org/abs/2407.21783).

    Returns
    -------
    ipywidgets.VBox or None
        The controls and an output area with the report (None without ipywidgets).
    """
    from gpulab.hardware.interconnects import list_interconnects
    from gpulab.hardware.specs import list_specs
    from gpulab.labkit.calculators import parallelism_report

    n_params = positive_number("n_params", n_params)
    for name, value in (("layers", layers), ("hidden", hidden), ("seq_len", seq_len),
                        ("n_gpus", n_gpus)):  # fmt: skip
        positive_int(name, value)
    spec = resolve_spec("spec", spec)
    node_link = resolve_link("node_link", node_link).name
    network = resolve_link("network", network).name
    start = (n_params, layers, hidden, seq_len, n_gpus, spec.name, node_link, network)
    first = parallelism_report(*start)
    w = _ipywidgets()
    if w is None:
        _fallback("parallelism calculator", first)
        return None

    gpus = [s.name for s in list_specs() if s.kind == "gpu" and s.memory_bytes]
    links = [x.name for x in list_interconnects()]
    controls = [
        _control(w, w.FloatLogSlider, "Parameters", n_params, base=10, min=8, max=13, step=0.1,
                 readout_format=".2e"),
        _control(w, w.IntSlider, "Layers", layers, min=1, max=max(256, layers)),
        _control(w, w.SelectionSlider, "Hidden size", hidden,
                 options=sorted({2**k for k in range(8, 16)} | {hidden})),
        _control(w, w.SelectionSlider, "Sequence length", seq_len,
                 options=sorted({2**k for k in range(9, 21)} | {seq_len})),
        _control(w, w.SelectionSlider, "GPUs", n_gpus,
                 options=sorted({2**k for k in range(0, 17)} | {n_gpus})),
        _control(w, w.Dropdown, "GPU", spec.name, options=sorted(set(gpus) | {spec.name})),
        _control(w, w.Dropdown, "Link inside a node", node_link,
                 options=links),
        _control(w, w.Dropdown, "Network between nodes", network,
                 options=links),
    ]  # fmt: skip
    out = w.Output()

    def update(_change=None) -> None:
        try:
            _show(out, parallelism_report(*(control.value for control in controls)))
        except ValueError as exc:
            _show(out, f"Cannot plan this: {exc}")

    _watch(controls, update)
    _show(out, first)
    return w.VBox([*controls, out])
