"""The GPU chooser as the labs call it: the cost model, with a CNN's activations measured.

:func:`gpulab.costmodels.chooser.estimate_training_plan` is arithmetic on numbers it is given. For a
named CNN the activation memory is not a formula: it is measured on a real forward pass of
the network :mod:`gpulab.labkit.networks` builds (:func:`cnn_activation_bytes_per_image`).
That network lives a layer above the cost models, so the measurement is made here and handed
down; :func:`plan_training` (``gl.plan_training``) does both. The live book's calculator does
the same with numbers measured when the book is built
(:func:`gpulab.labkit.calculators.build_time_data`).

See also the chapter "Choosing a GPU" (``book/choosing_gpu.md``) and its lab.
"""

from __future__ import annotations

import dataclasses
import functools

from gpulab.costmodels import chooser
from gpulab.costmodels.chooser import TrainingPlan
from gpulab.costmodels.published_models import named_model_or_none
from gpulab.costmodels.training_time import DEFAULT_UTILISATION

__all__ = ["cnn_activation_bytes_per_image", "plan_training"]

#: The note a plan carries when its CNN activations were measured here.
MEASURED_NOTE = "Activations measured on a real forward pass (gl.activation_bytes)."


@functools.cache
def cnn_activation_bytes_per_image(name: str, image_size: int, precision: str) -> int | None:
    """Activations of one image through a real forward pass of a named CNN.

    Measured with :func:`gpulab.costmodels.memory.activation_bytes` on the network that
    :mod:`gpulab.labkit.networks` builds for ``name``; None where torch or that network is not
    available (the live book ships these numbers, measured when the book is built).

    Examples
    --------
    >>> from gpulab.labkit.planning import cnn_activation_bytes_per_image
    >>> cnn_activation_bytes_per_image("ResNet-50", 64, "fp32") > 0
    True
    >>> cnn_activation_bytes_per_image("No such CNN", 64, "fp32") is None
    True
    """
    try:
        import torch

        from gpulab.costmodels.memory import activation_bytes
        from gpulab.labkit import networks
    except ImportError:
        return None
    builder = getattr(networks, name.lower().replace("-", ""), None)
    if builder is None:
        return None
    model = builder()
    example = torch.zeros(1, 3, image_size, image_size)
    return int(activation_bytes(model, example, precision=precision))


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
    specs=None,
    activations_bytes: int | None = None,
    headroom: float = 0.9,
) -> TrainingPlan:
    """Memory, fit, time per epoch and cost of a training job on each device.

    :func:`gpulab.costmodels.chooser.estimate_training_plan`, with the same parameters, and
    one thing more: where ``model`` is a named CNN and ``activations_bytes`` is not given, the
    activations of one image are measured on a real forward pass
    (:func:`cnn_activation_bytes_per_image`) and multiplied by ``batch_size``. Without torch
    the plan leaves them out and says so in its notes.

    Examples
    --------
    >>> import gpulab as gl
    >>> plan = gl.plan_training("ResNet-50", batch_size=2, image_size=64, specs=["T4"])
    >>> plan.notes[0]
    'Activations measured on a real forward pass (gl.activation_bytes).'
    >>> plan.memory.activations_bytes > 0
    True
    """
    arguments = dict(
        precision=precision, optimizer=optimizer, batch_size=batch_size, seq_len=seq_len,
        image_size=image_size, samples_per_epoch=samples_per_epoch, utilisation=utilisation,
        price_per_hour=price_per_hour, specs=specs, headroom=headroom,
    )  # fmt: skip
    plan = chooser.estimate_training_plan(model, **arguments, activations_bytes=activations_bytes)
    if activations_bytes is not None:
        return plan
    named = named_model_or_none(model)  # model is valid: plan_training checked every argument
    if named is None or named.family != "cnn":
        return plan
    size = named.image_size if image_size is None else image_size
    per_image = cnn_activation_bytes_per_image(named.name, size, precision)
    if per_image is None:
        return plan
    activations = per_image * batch_size
    measured = chooser.estimate_training_plan(model, **arguments, activations_bytes=activations)
    return dataclasses.replace(measured, notes=(MEASURED_NOTE, *measured.notes))
