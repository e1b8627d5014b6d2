"""Explanatory diagrams drawn from the course's own data: nothing in them is typed in by hand.

Each drawing takes its numbers from the registries (:mod:`gpulab.hardware`), a cost model
(:mod:`gpulab.costmodels`), the kernel simulator (:mod:`gpulab.kernels`) or a recorded
measurement from a lab, and returns the figure together with the data it drew, so tests can
check the picture says what the data says. This package only draws; the models live where
they are computed. Call the drawings as ``gl.diagrams.draw_...``:

* :mod:`~gpulab.diagrams.hardware`: CPU against GPU, the memory ladder, the SM;
* :mod:`~gpulab.diagrams.dispatch`: the operators a forward and backward pass sends to kernels;
* :mod:`~gpulab.diagrams.block_roofline`: one transformer block's operations on the roofline,
  with the tokens per step as the knob;
* :mod:`~gpulab.diagrams.fusion`: eager kernels against one fused kernel, bytes per kernel;
* :mod:`~gpulab.diagrams.kernels`: a launch mapped onto blocks, warps and SMs; tiling; which
  thread touched which element of a graded kernel;
* :mod:`~gpulab.diagrams.memory`: one GPU's training memory as one stacked bar;
* :mod:`~gpulab.diagrams.warmup`: the kernel warm-up graded, with its drawing;
* :mod:`~gpulab.diagrams.collectives`: the ring all-reduce step by step; tree vs ring;
* :mod:`~gpulab.diagrams.parallelism`: ZeRO stages, tensor-parallel linear layers;
* :mod:`~gpulab.diagrams.schedules`: pipeline schedules (GPipe, 1F1B) and the input pipeline;
* :mod:`~gpulab.diagrams.pipeline_runs`: pipeline steps as they ran, interleaved and ZB-H1 too;
* :mod:`~gpulab.diagrams.recorded`: reading a lab's recorded measurements for them.

Every figure has an opaque white background, so it reads the same on the book's light and
dark themes.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "block_roofline": ("draw_block_roofline",),
    "collectives": ("draw_ring_allreduce", "draw_tree_vs_ring"),
    "dispatch": ("dispatch_log", "draw_dispatch"),
    "fusion": ("draw_fusion",),
    "hardware": ("draw_cpu_vs_gpu", "draw_memory_ladder", "draw_sm_anatomy"),
    "kernels": ("draw_launch_mapping", "draw_tiling", "draw_touches"),
    "memory": ("draw_training_memory",),
    "parallelism": ("draw_tensor_parallel", "draw_zero_stages"),
    "pipeline_runs": ("draw_schedule_runs",),
    "schedules": ("draw_input_pipeline", "draw_pipeline_gantt"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
_MODULES = (*_EXPORTS, "recorded")

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MODULES))
