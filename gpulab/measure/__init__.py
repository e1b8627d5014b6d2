"""Measuring this machine: what it has, how fast it runs, what it draws, and the record of it.

* :mod:`~gpulab.measure.device`: the device the labs use (:func:`detect_device`,
  :func:`best_device`, :func:`torch_device`, :func:`scale`, precisions it runs natively);
* :mod:`~gpulab.measure.cpu`: the CPU's cores, estimated peak and memory bandwidth;
* :mod:`~gpulab.measure.bench`: timing done right (:func:`benchmark`, :func:`timer`);
* :mod:`~gpulab.measure.bench_report`: the standard benchmark report (``python -m gpulab bench``);
* :mod:`~gpulab.measure.energy`: energy from NVML or a labelled TDP estimate;
* :mod:`~gpulab.measure.provenance`: which device, software and date produced a result.
"""

from __future__ import annotations

import importlib

_MODULES = ("bench", "bench_report", "cpu", "device", "energy", "provenance")


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULES))
