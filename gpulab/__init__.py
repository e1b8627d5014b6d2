"""gpulab: the helper package of the gpulab course, imported as ``import gpulab as gl``.

Measure how GPUs accelerate deep-learning training on your own hardware, and predict, with
stated assumptions, what hardware you do not have would do.

How the namespace is organised
------------------------------
``gl.`` is the learner's namespace: the about 120 names the labs and exercises call,
grouped here by what they are for:

* **your machine**: :func:`detect_device`, :func:`doctor`, :func:`best_device`,
  :func:`setup_lab`, :func:`scale` (problem sizes by device);
* **timing done right**: :func:`benchmark`, :func:`timer`, :func:`synchronize`;
* **datasheets with sources**: :func:`get_spec`, :func:`find_spec`, :func:`list_specs`,
  :func:`interconnect`, :func:`sm_architecture`;
* **cost models** (each compared with a measurement in a lab): FLOPs (:func:`count_flops`),
  the roofline (:func:`predict_time`), training memory (:func:`estimate_training_memory`),
  communication (:func:`allreduce_time`, :func:`dp_step_time`), parallelism
  (:func:`pipeline_bubble`, :func:`suggest_parallelism`), time to train
  (:func:`time_to_train`);
* **labs**: answers checked (:func:`check`), claims tied to data (:func:`claim`),
  training loops (:func:`train`), multi-process jobs with timeouts (:func:`torchrun`),
  a CUDA grid simulator (:func:`launch`, :func:`simulate`), figures in the course style;
* **modules a lab calls into**: ``gl.diagrams`` (the book's explanatory drawings,
  ``gl.diagrams.draw_...``), ``gl.networks`` (the torch networks the case studies train),
  ``gl.envs`` (the game of the AlphaGo case study).

Everything else is one attribute path away, in the subpackage that holds its idea:
``gl.hardware`` (facts with sources: data and look-ups), ``gl.measure`` (this machine:
detection, timing, energy, provenance), ``gl.costmodels`` (the formulas), ``gl.kernels``
(the kernel simulator, occupancy, the chapter's kernels), ``gl.labkit`` (what labs are
built from). Result records live with the function that returns them
(``gl.measure.bench.BenchResult``, ``gl.costmodels.memory.MemoryEstimate``). Course-authoring
tools (recording labs, student copies, workshop agendas, the gallery) live in
:mod:`gpulab.course`, which ``import gpulab`` never imports. No module imports one that
imports it back: pure data (the spec registry) sits at the bottom, drawing at the top.

Vocabulary
----------
The same word means the same thing in every function:

``device``
    Where code runs: a :class:`torch.device` or its name (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, ``"mps"``); None means :func:`best_device`. Every function checks it the
    same way (:func:`gpulab.measure.device.torch_device`).
``spec``
    A registry entry: a :class:`DeviceSpec`, or a name :func:`get_spec` understands
    (``"A100 80GB"``, ``"h100 sxm"``). Unknown names raise ``ValueError`` listing close
    matches.
``n_gpus``
    How many GPUs (or other accelerators) work together; in the communication models, one
    rank per GPU.
``n_ranks``
    How many processes a distributed job starts (:func:`torchrun`): one per GPU, or CPU
    processes where there is no GPU.
``batch_size``
    Samples (images, sequences) processed together in one step. A linear layer's input
    rows, which for a transformer are ``batch_size × seq_len``, are ``rows``.
``warmup``
    How many untimed calls run before timing starts (a count). A function to call before
    a measurement is ``warmup_fn``.
``repeats``
    How many times a measurement is repeated.
``precision``
    One of :data:`PRECISIONS`: ``"fp32"``, ``"tf32"``, ``"fp16"``, ``"bf16"``, ``"fp8"``
    (the arithmetic), and ``"amp_fp16"``, ``"amp_bf16"`` (mixed-precision training: FP32
    weights, low-precision arithmetic). Each function says which of them it accepts.
Units
    SI units throughout: seconds, bytes, FLOPs, FLOP/s, bytes/s, watts. A parameter or
    attribute in seconds ends in ``_s`` (``timeout_s``); a total in bytes ends in ``_bytes``
    (``n_bytes``: the bytes a message, a copy or a kernel moves), and bytes per parameter
    end in ``_bytes_per_param``; a rate in bytes per second is ``bandwidth``.
    :func:`format_duration`, :func:`format_bytes` and :func:`format_rate` write them for
    a reader.
Bad input
    Every public function checks its arguments and raises naming the parameter, the value
    and what is allowed: ``TypeError`` for a value of the wrong type (a bool, a string or
    ``None`` where a number is expected, a float where a count is), ``ValueError`` for a
    value of the right type that is not allowed (0 where a count must be positive, NaN, an
    unknown name).

Imports are lazy: ``import gpulab`` loads the standard library only, and NumPy, torch,
matplotlib, ipywidgets and the course tools load when something that needs them is first
used (the cost models run without NumPy or torch at all).
"""

from __future__ import annotations

import importlib

from gpulab._version import __version__ as __version__

# Public name -> the module (under gpulab) that defines it; loaded on first use (PEP 562).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "costmodels.chooser": ("EXAMPLE_PRICES", "transformer_activation_bytes"),
    "costmodels.comms": (
        "allgather_time",
        "allreduce_time",
        "broadcast_time",
        "bus_bandwidth",
        "dp_step_time",
        "fit_alpha_beta",
        "reduce_scatter_time",
    ),
    "costmodels.flops": (
        "conv2d_flops",
        "count_flops",
        "eager_cost",
        "linear_flops",
        "matmul_flops",
    ),
    "costmodels.inference": (
        "decode_estimate",
        "generation_timing",
        "kv_cache_bytes",
        "model_kv_cache_bytes",
        "weight_bytes",
    ),
    "costmodels.memory": (
        "activation_bytes",
        "bytes_per_param",
        "estimate_step_memory",
        "estimate_training_memory",
        "gpus_that_fit",
        "measure_training_memory",
        "memory_report",
        "OPTIMIZERS",
    ),
    "costmodels.parallelism": (
        "amdahl_speedup",
        "context_parallel_bytes",
        "expert_parallel_bytes",
        "layer_activation_bytes",
        "pipeline_bubble",
        "pipeline_inflight_microbatches",
        "scaling_curve",
        "sharded_memory",
        "simulate_pipeline",
        "stage_times_from_measurement",
        "suggest_parallelism",
        "tensor_parallel_comm",
    ),
    "costmodels.published_models": ("get_model", "NAMED_MODELS"),
    "costmodels.roofline": (
        "arithmetic_intensity",
        "attainable_flops",
        "Ceilings",
        "measure_ceilings",
        "plot_roofline",
        "predict_time",
        "roofline_readout",
        "RooflinePoint",
    ),
    "costmodels.training_time": (
        "DEFAULT_UTILISATION",
        "epoch_seconds",
        "gradient_bytes",
        "hfu",
        "mfu",
        "recompute_flops",
        "resnet_training_job",
        "scaling_estimate",
        "time_to_train",
        "training_flops_per_sample",
        "transformer_training_job",
    ),
    "hardware.interconnects": ("Interconnect", "interconnect", "list_interconnects"),
    "hardware.precision": ("PEAK_PRECISIONS", "PRECISIONS", "TRAINING_PRECISIONS"),
    "hardware.sm": ("sm_architecture",),
    "hardware.specs": ("find_spec", "get_spec", "list_specs"),
    "kernels.occupancy": ("matmul_waves", "occupancy"),
    "kernels.simulator": ("launch", "simulate", "thread_map"),
    "labkit.answers": ("check",),
    "labkit.claims": ("claim", "recorded_number"),
    "labkit.datasets": ("SyntheticDataset",),
    "labkit.launcher": ("dist_plan", "torchrun"),
    "labkit.planning": ("plan_training",),
    "labkit.plotting": (
        "COLORS",
        "plot_extrapolation",
        "plot_measured_vs_predicted",
        "plot_spec_trend",
        "tidy_point_labels",
        "use_course_style",
    ),
    "labkit.scoreboard": ("Scoreboard",),
    "labkit.training_loop": ("train",),
    "labkit.widgets": (
        "chooser_widget",
        "memory_calculator",
        "occupancy_calculator",
        "parallelism_calculator",
        "roofline_explorer",
        "scaling_calculator",
    ),
    "measure.bench": ("benchmark", "synchronize", "timer"),
    "measure.cpu": ("estimate_cpu_peak", "measure_memory_bandwidth"),
    "measure.device": (
        "best_device",
        "detect_device",
        "DeviceInfo",
        "doctor",
        "scale",
        "supported_precisions",
        "tf32",
    ),
    "measure.energy": ("measure_energy",),
    "measure.provenance": ("provenance", "provenance_line", "seed_everything"),
    "units": ("format_bytes", "format_duration", "format_rate"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

#: Subpackages and modules reachable as attributes (``gl.diagrams.draw_fusion``,
#: ``gl.networks.resnet50``, ``gl.costmodels.memory.MemoryEstimate``), imported on first use.
_SUBMODULES = {
    "costmodels": "costmodels",
    "course": "course",
    "diagrams": "diagrams",
    "envs": "labkit.envs",
    "hardware": "hardware",
    "kernels": "kernels",
    "labkit": "labkit",
    "measure": "measure",
    "networks": "labkit.networks",
}

# In __all__: the modules a learner calls into directly. The others are reachable too.
_LEARNER_MODULES = ("diagrams", "envs", "networks")

__all__ = sorted(
    [*_WHERE, *_LEARNER_MODULES, "__version__", "setup_lab"], key=lambda n: (n.lower(), n)
)


def __getattr__(name: str):
    if name in _SUBMODULES:
        value = importlib.import_module(f"gpulab.{_SUBMODULES[name]}")
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"gpulab.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def setup_lab(seed: int = 0):
    """What every lab's first cell calls: seed, apply the plot style, report the device.

    Prints one line naming the device the lab will use, so the recorded outputs say
    where they came from. Returns the :class:`~gpulab.measure.device.DeviceInfo`.
    """
    from gpulab.labkit.plotting import use_course_style
    from gpulab.measure.device import detect_device
    from gpulab.measure.provenance import seed_everything

    seed_everything(seed)
    use_course_style()
    info = detect_device()
    print(f"gpulab {__version__} | {info.summary()}")
    if not info.is_gpu:
        print("No GPU here: this lab runs its CPU version.")
        print("GPU figures below are labelled predictions, not measurements.")
    return info
