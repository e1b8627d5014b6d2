"""gpulab: the helper package of the gpulab course, imported as ``import gpulab as gl``.

Measure how GPUs accelerate deep-learning training on your own hardware, and predict, with
stated assumptions, what hardware you do not have would do:

* **your machine**: :func:`detect_device`, :func:`doctor`, :func:`best_device`,
  :func:`setup_lab`;
* **timing done right**: :func:`benchmark`, :func:`timer`, :func:`synchronize`;
* **datasheets with sources**: :func:`get_spec`, :func:`find_spec`, :func:`list_specs`;
* **cost models** (each compared with a measurement in a lab): FLOPs (:func:`count_flops`),
  the roofline (:func:`predict_time`), training memory (:func:`estimate_training_memory`),
  communication (:func:`allreduce_time`, :func:`dp_step_time`), time to train
  (:func:`time_to_train`);
* **labs**: problem sizes by device (:func:`scale`), answers checked (:func:`check`),
  training loops (:func:`train`), multi-process jobs with timeouts (:func:`torchrun`),
  a CUDA grid simulator (:func:`launch`), figures in the course style.

Course-authoring tools (recording labs, student copies, workshop agendas, the gallery) live
in :mod:`gpulab.course`, which ``import gpulab`` never imports.

Vocabulary
----------
The same word means the same thing in every function:

``device``
    Where code runs: a :class:`torch.device` or a string torch accepts (``"cpu"``,
    ``"cuda"``, ``"cuda:1"``).
``spec``
    A registry entry: a :class:`DeviceSpec`, or a name :func:`get_spec` understands
    (``"A100 80GB"``, ``"h100 sxm"``). Unknown names raise ``ValueError`` listing close
    matches.
``n_gpus``
    How many GPUs (or other accelerators) work together.
``precision``
    One of :data:`PRECISIONS`: ``"fp32"``, ``"tf32"``, ``"fp16"``, ``"bf16"``, ``"fp8"``
    (the arithmetic), and ``"amp_fp16"``, ``"amp_bf16"`` (mixed-precision training: FP32
    weights, low-precision arithmetic). Each function says which of them it accepts.
Units
    SI units throughout: seconds, bytes, FLOPs, FLOP/s, bytes/s, watts. A parameter or
    attribute in seconds ends in ``_s`` (``timeout_s``); one in bytes ends in ``_bytes``.
    :func:`format_duration`, :func:`format_bytes` and :func:`format_rate` write them for
    a reader.
Bad input
    Every public function checks its arguments and raises ``ValueError`` naming the
    parameter, the value and what is allowed. NaN, infinities, bools and numeric strings
    are refused where a number is expected.

Imports are lazy: ``import gpulab`` is quick, and matplotlib's pyplot, ipywidgets and the
course tools load only when something that needs them is first used.
"""

from __future__ import annotations

import importlib

# These three functions share their module's name. Binding them now, before anything can
# import the submodule, keeps ``gl.check`` the function rather than the module.
from gpulab.check import check as check
from gpulab.provenance import provenance as provenance
from gpulab.train import train as train

__version__ = "0.1.0"

# Public name -> the module (under gpulab) that defines it; loaded on first use (PEP 562).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "bench": (
        "benchmark",
        "BenchResult",
        "Stopwatch",
        "synchronize",
        "timer",
    ),
    "check": (
        "check",
        "CheckResult",
    ),
    "claims": (
        "claim",
        "Claim",
        "ClaimError",
        "recorded_number",
    ),
    "chooser": (
        "DeviceOption",
        "EXAMPLE_PRICES",
        "ExamplePrice",
        "plan_training",
        "run_cost",
        "TrainingPlan",
        "transformer_activation_bytes",
    ),
    "comms": (
        "allgather_time",
        "allreduce_bytes_per_rank",
        "allreduce_time",
        "broadcast_time",
        "bus_bandwidth",
        "collective_time",
        "COLLECTIVES",
        "dp_step_time",
        "fit_alpha_beta",
        "Interconnect",
        "interconnect",
        "list_interconnects",
        "reduce_scatter_time",
        "StepTime",
    ),
    "cpu": (
        "cpu_cores",
        "cpu_model",
        "CpuPeak",
        "estimate_cpu_peak",
        "measure_memory_bandwidth",
    ),
    "datasets": ("SyntheticDataset",),
    "device": (
        "advice",
        "best_device",
        "detect_device",
        "DeviceInfo",
        "doctor",
        "in_colab",
    ),
    "diagrams.collectives": (
        "draw_ring_allreduce",
        "draw_tree_vs_ring",
        "RingStep",
        "simulate_ring_allreduce",
    ),
    "diagrams.dispatch": (
        "dispatch_log",
        "draw_dispatch",
    ),
    "diagrams.fusion": (
        "draw_fusion",
        "FUSION_PRECISIONS",
        "fusion_traffic",
    ),
    "diagrams.hardware": (
        "draw_cpu_vs_gpu",
        "draw_memory_ladder",
        "draw_sm_anatomy",
        "memory_ladder",
        "MemoryLevel",
    ),
    "diagrams.kernels": (
        "draw_launch_mapping",
        "draw_tiling",
        "tile_loads",
        "WARP_SIZE",
    ),
    "diagrams.parallelism": (
        "draw_tensor_parallel",
        "draw_zero_stages",
    ),
    "diagrams.schedules": (
        "draw_input_pipeline",
        "draw_pipeline_gantt",
        "PipelineOp",
        "PipelineSchedule",
        "SCHEDULES",
        "simulate_pipeline",
        "stage_times_from_measurement",
    ),
    "distributed": (
        "dist_plan",
        "DistPlan",
        "launch_env",
        "LaunchResult",
        "torchrun",
    ),
    "energy": (
        "assumed_power",
        "cpu_watts_per_core",
        "ENERGY_METHODS",
        "EnergyMeter",
        "measure_energy",
        "PowerAssumption",
    ),
    "extrapolate": ("plot_extrapolation",),
    "flops": (
        "eager_cost",
        "conv2d_flops",
        "count_flops",
        "linear_flops",
        "matmul_flops",
    ),
    "inference": (
        "decode_estimate",
        "DecodeEstimate",
        "generation_timing",
        "GenerationTiming",
        "kv_cache_bytes",
        "model_kv_cache_bytes",
        "WEIGHT_FORMATS",
        "weight_bytes",
    ),
    "memory": (
        "activation_bytes",
        "bytes_per_param",
        "estimate_step_memory",
        "estimate_training_memory",
        "gpus_that_fit",
        "measure_training_memory",
        "memory_report",
        "MemoryEstimate",
        "OPTIMIZERS",
        "optimizer_temporaries_bytes",
    ),
    "occupancy_calc": (
        "matmul_waves",
        "occupancy",
        "Occupancy",
        "WavePrediction",
    ),
    "parallel": (
        "amdahl_speedup",
        "pipeline_bubble",
        "scaling_curve",
        "sharded_memory",
        "ShardedMemory",
    ),
    "parallelism": (
        "context_parallel_bytes",
        "expert_parallel_bytes",
        "layer_activation_bytes",
        "ParallelPlan",
        "pipeline_inflight_microbatches",
        "RECOMPUTE",
        "SCHEDULES",
        "suggest_parallelism",
        "tensor_parallel_comm",
        "TensorParallelComm",
    ),
    "plotting": (
        "COLORS",
        "course_style",
        "plot_measured_vs_predicted",
        "plot_spec_trend",
        "tidy_point_labels",
        "use_course_style",
    ),
    "precision": (
        "PEAK_PRECISIONS",
        "PRECISIONS",
        "TRAINING_PRECISIONS",
        "compute_bytes",
        "peak_precision",
        "supported_precisions",
        "tf32",
    ),
    "provenance": (
        "provenance",
        "provenance_line",
        "seed_everything",
    ),
    "report": (
        "run_bench",
        "validate_report",
    ),
    "roofline": (
        "arithmetic_intensity",
        "attainable_flops",
        "Ceilings",
        "measure_ceilings",
        "plot_roofline",
        "predict_time",
        "Prediction",
        "roofline_readout",
        "RooflinePoint",
    ),
    "scoreboard": ("Scoreboard",),
    "simt": (
        "Dim3",
        "KernelCounts",
        "launch",
        "simulate",
        "thread_map",
        "ThreadContext",
    ),
    "sizing": ("scale",),
    "sm": (
        "list_sm_architectures",
        "sm_architecture",
        "SmArchitecture",
    ),
    "specs": (
        "DeviceSpec",
        "find_spec",
        "get_spec",
        "list_specs",
    ),
    "train": (
        "train",
        "TrainStats",
    ),
    "training_time": (
        "DEFAULT_UTILISATION",
        "epoch_seconds",
        "get_model",
        "gradient_bytes",
        "IMAGENET_1K_TRAIN_IMAGES",
        "NAMED_MODELS",
        "NamedModel",
        "resnet_training_job",
        "scaling_estimate",
        "ScalingEstimate",
        "TIME_PRECISIONS",
        "time_to_train",
        "TimeToTrain",
        "training_flops_per_sample",
        "training_flops_per_token",
        "training_precision",
        "TrainingJob",
        "transformer_training_job",
    ),
    "units": (
        "format_bytes",
        "format_duration",
        "format_rate",
    ),
    "utilisation": (
        "hfu",
        "mfu",
        "recompute_flops",
    ),
    "widgets": (
        "chooser_widget",
        "memory_calculator",
        "occupancy_calculator",
        "parallelism_calculator",
        "roofline_explorer",
        "scaling_calculator",
    ),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
_WHERE["setup_lab"] = "__init__"

__all__ = sorted([*_WHERE, "__version__"], key=lambda name: (name.lower(), name))


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None or module == "__init__":
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gpulab.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def setup_lab(seed: int = 0):
    """What every lab's first cell calls: seed, apply the plot style, report the device.

    Prints one line naming the device the lab will use, so the recorded outputs say
    where they came from. Returns the :class:`DeviceInfo`.
    """
    from gpulab.device import detect_device
    from gpulab.plotting import use_course_style
    from gpulab.provenance import seed_everything

    seed_everything(seed)
    use_course_style()
    info = detect_device()
    print(f"gpulab {__version__} | {info.summary()}")
    if not info.is_gpu:
        print("No GPU here: this lab runs its CPU version.")
        print("GPU figures below are labelled predictions, not measurements.")
    return info
