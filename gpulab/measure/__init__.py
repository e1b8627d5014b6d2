"""Measuring this machine: what it has, how fast it runs, what it draws, and the record of it.

* :mod:`~gpulab.measure.device`: the device the labs use (:func:`detect_device`,
  :func:`best_device`, :func:`torch_device`, :func:`scale`, :func:`scale_to_memory`,
  precisions it runs natively, the mixed precision to train in);
* :mod:`~gpulab.measure.caches`: the device's last-level cache (a GPU's L2), for sizing;
* :mod:`~gpulab.measure.cpu`: the CPU's cores, estimated peak and memory bandwidth;
* :mod:`~gpulab.measure.bench`: timing done right (:func:`benchmark`, :func:`timer`);
* :mod:`~gpulab.measure.interleaved`: two versions compared on a shared machine (interleaved
  runs, the fastest of each);
* :mod:`~gpulab.measure.bench_report`: the standard benchmark report (``python -m gpulab bench``);
* :mod:`~gpulab.measure.energy`: energy from NVML or a labelled TDP estimate;
* :mod:`~gpulab.measure.profiling`: where a profiled step's time went (:func:`region_times`);
* :mod:`~gpulab.measure.gpu_trace`: reading a profiler trace: GPU time by kind, idle time,
  overlap, top kernels, launches, the kernels an operator launched;
* :mod:`~gpulab.measure.hta_reading`: the same trace read by HolisticTraceAnalysis, compared;
* :mod:`~gpulab.measure.provenance`: which device, software and date produced a result;
* :mod:`~gpulab.measure.toolchain`: whether Triton and ``torch.compile`` can build their code
  here (a C or C++ compiler, Python's headers).
"""

from __future__ import annotations

from gpulab._lazy import submodule_loader

_MODULES = (
    "bench",
    "bench_report",
    "caches",
    "cpu",
    "device",
    "energy",
    "gpu_trace",
    "hta_reading",
    "interleaved",
    "profiling",
    "provenance",
    "toolchain",
)


__getattr__, __dir__ = submodule_loader(__name__, _MODULES)
