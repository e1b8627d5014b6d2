"""What the labs are built from: answers checked, claims tied to data, training loops, data.

* :mod:`~gpulab.labkit.answers`: :func:`check` for exercises;
* :mod:`~gpulab.labkit.claims`: sentences printed only when the measurement supports them;
* :mod:`~gpulab.labkit.accuracy_output`, :mod:`~gpulab.labkit.roofline_check`,
  :mod:`~gpulab.labkit.fusion_report`, :mod:`~gpulab.labkit.memory_check`,
  :mod:`~gpulab.labkit.batch_sweep`, :mod:`~gpulab.labkit.matmul_sweep`,
  :mod:`~gpulab.labkit.speedup_claims`, :mod:`~gpulab.labkit.lab_tables`: the labs' verdicts
  on the course's models, retries when the load changes, measured sentences, tables and
  figures;
* :mod:`~gpulab.labkit.training_loop`: :func:`train` with progress bar and timing;
* :mod:`~gpulab.labkit.same_training`: loss curves of a faster loop checked against the
  baseline's, gradient-scaler skips included;
* :mod:`~gpulab.labkit.networks`: the torch networks the case studies train;
* :mod:`~gpulab.labkit.datasets`, :mod:`~gpulab.labkit.corpus`, :mod:`~gpulab.labkit.envs`:
  synthetic data, the course's own text, a vectorised game;
* :mod:`~gpulab.labkit.launcher`: multi-process jobs with ``torchrun`` and timeouts;
* :mod:`~gpulab.labkit.plotting`, :mod:`~gpulab.labkit.widgets`, :mod:`~gpulab.labkit.scoreboard`:
  figures, calculators and result tables; :mod:`~gpulab.labkit.coalescing_plot`, the kernels
  lab's copy-pattern figure;
* :mod:`~gpulab.labkit.selfcheck`: the chapters' "predict, then check" questions;
* :mod:`~gpulab.labkit.trace_report`: the GPU trace lab's tables, figures and sentences;
* :mod:`~gpulab.labkit.trace_files`, :mod:`~gpulab.labkit.simulated_stream`: profiling one
  step (activities, the Chrome trace) and a simulated stream for showing asynchrony on a CPU;
* :mod:`~gpulab.labkit.pytorch_launches`: what a line of PyTorch becomes, operators on the
  host and kernels on the GPU;
* :mod:`~gpulab.labkit.wording`: counts from data worded as a person writes them.
* :mod:`~gpulab.labkit.capstone`, :mod:`~gpulab.labkit.case_studies`,
  :mod:`~gpulab.labkit.energy_report`, :mod:`~gpulab.labkit.launch_overhead`,
  :mod:`~gpulab.labkit.parallel_reports`, :mod:`~gpulab.labkit.tiny_gpt`: the labs'
  workloads, reports and verdicts, so that a lab cell shows the measurement and one call;
* :mod:`~gpulab.labkit.calculators`, :mod:`~gpulab.labkit.svgchart`: the book's live
  calculators, declared once, and their charts (standard library only: they run in the
  reader's browser).
"""

from __future__ import annotations

from gpulab._lazy import submodule_loader

_MODULES = (
    "accuracy_output",
    "answers",
    "batch_sweep",
    "calculators",
    "capstone",
    "case_studies",
    "claims",
    "coalescing_plot",
    "corpus",
    "datasets",
    "energy_report",
    "envs",
    "fusion_report",
    "lab_tables",
    "launch_overhead",
    "launcher",
    "matmul_sweep",
    "memory_check",
    "networks",
    "parallel_reports",
    "plotting",
    "pytorch_launches",
    "roofline_check",
    "same_training",
    "scoreboard",
    "selfcheck",
    "simulated_stream",
    "speedup_claims",
    "svgchart",
    "tiny_gpt",
    "trace_files",
    "trace_report",
    "training_loop",
    "widgets",
    "wording",
)


__getattr__, __dir__ = submodule_loader(__name__, _MODULES)
