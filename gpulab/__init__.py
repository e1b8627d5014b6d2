"""gpulab: the helper package of the gpulab course, imported as ``import gpulab as gl``.

Measure how GPUs accelerate deep-learning training on your own hardware: find the device
(:func:`detect_device`, :func:`doctor`), time code correctly (:func:`benchmark`,
:func:`timer`), check an exercise's answer
(:func:`check`), look up datasheet figures with their sources (:func:`get_spec`), predict
what a GPU you do not have would do (:func:`predict_time`), model what communication between
GPUs costs (:func:`allreduce_time`, :func:`dp_step_time`), and size labs to the machine
(:func:`check`), plan a workshop (:func:`make_agenda`), hand out labs without their
solutions (:func:`write_student_copies`), record the standard benchmarks (:func:`run_bench`),
look up datasheet figures with their sources (:func:`get_spec`), predict
what a GPU you do not have would do (:func:`predict_time`), and size labs to the machine
GPUs costs (:func:`allreduce_time`, :func:`dp_step_time`), launch multi-process jobs
safely (:func:`torchrun`), and size labs to the machine
(:func:`scale`).
"""

from gpulab.bench import BenchResult, Stopwatch, benchmark, synchronize, timer
from gpulab.check import CheckResult, check
from gpulab.chooser import (
    DEFAULT_UTILISATION,
    EXAMPLE_PRICES,
    NAMED_MODELS,
    DeviceOption,
    ExamplePrice,
    NamedModel,
    TrainingPlan,
    chooser_widget,
    epoch_seconds,
    get_model,
    plan_training,
    run_cost,
    training_flops_per_sample,
    transformer_activation_bytes,
)
from gpulab.comms import (
    COLLECTIVES,
    Interconnect,
    StepTime,
    allgather_time,
    allreduce_bytes_per_rank,
    allreduce_time,
    broadcast_time,
    bus_bandwidth,
    collective_time,
    dp_step_time,
    fit_alpha_beta,
    interconnect,
    list_interconnects,
    reduce_scatter_time,
)
from gpulab.cpu import (
    CpuPeak,
    cpu_cores,
    cpu_model,
    estimate_cpu_peak,
    measure_memory_bandwidth,
)
from gpulab.datasets import SyntheticDataset
from gpulab.device import DeviceInfo, advice, best_device, detect_device, doctor, in_colab
from gpulab.energy import (
    ENERGY_METHODS,
    EnergyMeter,
    PowerAssumption,
    assumed_power,
    cpu_watts_per_core,
    measure_energy,
)
from gpulab.extrapolate import (
    IMAGENET_1K_TRAIN_IMAGES,
    TimeToTrain,
    TrainingJob,
    eager_cost,
    format_duration,
    plot_extrapolation,
    resnet_training_job,
    time_to_train,
    time_to_train_data_parallel,
    training_dtype,
    transformer_training_job,
)
from gpulab.flops import conv2d_flops, count_flops, linear_flops, matmul_flops
from gpulab.labs import LabInfo, lab_table, list_labs
from gpulab.launch import DistPlan, LaunchResult, dist_plan, launch_env, torchrun
from gpulab.memory import (
    OPTIMIZERS,
    PRECISIONS,
    MemoryEstimate,
    activation_bytes,
    bytes_per_param,
    estimate_training_memory,
    gpus_that_fit,
    measure_training_memory,
    memory_calculator,
    memory_report,
)
from gpulab.parallel import (
    ShardedMemory,
    amdahl_speedup,
    pipeline_bubble,
    scaling_curve,
    sharded_memory,
)
from gpulab.plotting import (
    COLORS,
    course_style,
    plot_measured_vs_predicted,
    plot_spec_trend,
    tidy_point_labels,
    use_course_style,
)
from gpulab.provenance import provenance, provenance_line, seed_everything
from gpulab.report import run_bench, validate_report
from gpulab.roofline import (
    Ceilings,
    Prediction,
    RooflinePoint,
    arithmetic_intensity,
    attainable_flops,
    measure_ceilings,
    plot_roofline,
    predict_time,
    roofline_readout,
)
from gpulab.roofline_widget import roofline_explorer
from gpulab.scaling_widget import ScalingEstimate, scaling_calculator, scaling_estimate
from gpulab.simt import Dim3, ThreadContext, launch, thread_map
from gpulab.sizing import scale
from gpulab.specs import DTYPES, DeviceSpec, find_spec, get_spec, list_specs
from gpulab.student import student_copy, write_student_copies
from gpulab.train import TrainStats, train
from gpulab.workshop import Agenda, make_agenda

__version__ = "0.1.0"


def setup_lab(seed: int = 0) -> DeviceInfo:
    """What every lab's first cell calls: seed, apply the plot style, report the device.

    Prints one line naming the device the lab will use, so the recorded outputs say
    where they came from.
    """
    seed_everything(seed)
    use_course_style()
    info = detect_device()
    print(f"gpulab {__version__} | {info.summary()}")
    if not info.is_gpu:
        print("No GPU here: this lab runs its CPU version.")
        print("GPU figures below are labelled predictions, not measurements.")
    return info


__all__ = [
    "Agenda",
    "BenchResult",
    "COLLECTIVES",
    "COLORS",
    "Ceilings",
    "CheckResult",
    "CpuPeak",
    "DEFAULT_UTILISATION",
    "DTYPES",
    "DeviceInfo",
    "DeviceOption",
    "DeviceSpec",
    "Dim3",
    "DistPlan",
    "ENERGY_METHODS",
    "EXAMPLE_PRICES",
    "EnergyMeter",
    "ExamplePrice",
    "IMAGENET_1K_TRAIN_IMAGES",
    "Interconnect",
    "LabInfo",
    "LaunchResult",
    "MemoryEstimate",
    "NAMED_MODELS",
    "NamedModel",
    "OPTIMIZERS",
    "PRECISIONS",
    "PowerAssumption",
    "Prediction",
    "RooflinePoint",
    "ScalingEstimate",
    "ShardedMemory",
    "StepTime",
    "Stopwatch",
    "SyntheticDataset",
    "ThreadContext",
    "TimeToTrain",
    "TrainStats",
    "TrainingJob",
    "TrainingPlan",
    "__version__",
    "activation_bytes",
    "advice",
    "allgather_time",
    "allreduce_bytes_per_rank",
    "allreduce_time",
    "amdahl_speedup",
    "arithmetic_intensity",
    "assumed_power",
    "attainable_flops",
    "benchmark",
    "best_device",
    "broadcast_time",
    "bus_bandwidth",
    "bytes_per_param",
    "check",
    "chooser_widget",
    "collective_time",
    "conv2d_flops",
    "count_flops",
    "course_style",
    "cpu_cores",
    "cpu_model",
    "cpu_watts_per_core",
    "detect_device",
    "dist_plan",
    "doctor",
    "dp_step_time",
    "eager_cost",
    "epoch_seconds",
    "estimate_cpu_peak",
    "estimate_training_memory",
    "find_spec",
    "fit_alpha_beta",
    "format_duration",
    "get_model",
    "get_spec",
    "gpus_that_fit",
    "in_colab",
    "interconnect",
    "lab_table",
    "launch",
    "launch_env",
    "linear_flops",
    "list_interconnects",
    "list_labs",
    "list_specs",
    "make_agenda",
    "matmul_flops",
    "measure_ceilings",
    "measure_energy",
    "measure_memory_bandwidth",
    "measure_training_memory",
    "memory_calculator",
    "memory_report",
    "pipeline_bubble",
    "plan_training",
    "plot_extrapolation",
    "plot_measured_vs_predicted",
    "plot_roofline",
    "plot_spec_trend",
    "predict_time",
    "provenance",
    "provenance_line",
    "reduce_scatter_time",
    "resnet_training_job",
    "roofline_explorer",
    "roofline_readout",
    "run_bench",
    "run_cost",
    "scale",
    "scaling_calculator",
    "scaling_curve",
    "scaling_estimate",
    "seed_everything",
    "setup_lab",
    "sharded_memory",
    "student_copy",
    "synchronize",
    "thread_map",
    "tidy_point_labels",
    "time_to_train",
    "time_to_train_data_parallel",
    "timer",
    "torchrun",
    "train",
    "training_dtype",
    "training_flops_per_sample",
    "transformer_activation_bytes",
    "transformer_training_job",
    "use_course_style",
    "validate_report",
    "write_student_copies",
]
