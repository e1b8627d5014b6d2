"""The cost models the book teaches, each compared with a measurement in a lab.

* :mod:`~gpulab.costmodels.flops`: FLOPs and bytes of operations, eager against fused;
* :mod:`~gpulab.costmodels.roofline`: time from FLOPs, bytes and a device's ceilings;
* :mod:`~gpulab.costmodels.block_ops`: one transformer block's operations, FLOPs and bytes
  per step, with the tokens per step as the knob;
* :mod:`~gpulab.costmodels.overhead`: a step of many small calls, fixed cost against work;
* :mod:`~gpulab.costmodels.rounding`: the rounding error of a matrix product, from its
  formats and the length of its sums;
* :mod:`~gpulab.costmodels.memory`: training memory (parameters, gradients, optimizer, activations);
* :mod:`~gpulab.costmodels.comms`: collectives (α–β) and the data-parallel step;
* :mod:`~gpulab.costmodels.parallelism`: pipeline, tensor, sequence, context, expert and
  sharded data parallelism, and a rule for combining them;
* :mod:`~gpulab.costmodels.pipeline_schedules`: GPipe, 1F1B, interleaved 1F1B and ZB-H1 as
  per-rank orders, simulated, with their bubble formulas;
* :mod:`~gpulab.costmodels.split_layers`: sequence-parallel collectives, causal work per
  context-parallel rank, expert capacity;
* :mod:`~gpulab.costmodels.training_time`: time to train, MFU and HFU;
* :mod:`~gpulab.costmodels.published_models`: published models' sizes and shapes;
* :mod:`~gpulab.costmodels.inference`: KV cache, weights and decode speed;
* :mod:`~gpulab.costmodels.chooser`: which GPU fits a training job, and its cost.

Each module imports only the standard library when it is imported; NumPy, torch and
matplotlib are loaded inside the functions that measure or draw.
"""

from __future__ import annotations

from gpulab._lazy import submodule_loader

_MODULES = (
    "block_ops",
    "chooser",
    "comms",
    "flops",
    "inference",
    "memory",
    "overhead",
    "parallelism",
    "pipeline_schedules",
    "published_models",
    "roofline",
    "rounding",
    "split_layers",
    "training_time",
)


__getattr__, __dir__ = submodule_loader(__name__, _MODULES)
