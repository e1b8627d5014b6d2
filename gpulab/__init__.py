"""gpulab: the helper package of the gpulab course, imported as ``import gpulab as gl``.

Measure how GPUs accelerate deep-learning training on your own hardware: find the device
(:func:`detect_device`, :func:`doctor`), time code correctly (:func:`benchmark`,
:func:`timer`), check an exercise's answer
(:func:`check`), look up datasheet figures with their sources (:func:`get_spec`), predict
what a GPU you do not have would do (:func:`predict_time`), model what communication between
GPUs costs (:func:`allreduce_time`, :func:`dp_step_time`), launch multi-process jobs
safely (:func:`torchrun`), and size labs to the machine
(:func:`scale`).
"""

from gpulab.bench import BenchResult, Stopwatch, benchmark, synchronize, timer
from gpulab.check import CheckResult, check
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
from gpulab.device import DeviceInfo, advice, best_device, detect_device, doctor, in_colab
from gpulab.labs import LabInfo, lab_table, list_labs
from gpulab.launch import DistPlan, LaunchResult, dist_plan, launch_env, torchrun
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
from gpulab.roofline import Prediction, arithmetic_intensity, attainable_flops, predict_time
from gpulab.scaling_widget import ScalingEstimate, scaling_calculator, scaling_estimate
from gpulab.simt import Dim3, ThreadContext, launch, thread_map
from gpulab.sizing import scale
from gpulab.specs import DTYPES, DeviceSpec, get_spec, list_specs

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
    "BenchResult",
    "COLLECTIVES",
    "COLORS",
    "CheckResult",
    "CpuPeak",
    "DTYPES",
    "DeviceInfo",
    "DeviceSpec",
    "Dim3",
    "DistPlan",
    "Interconnect",
    "LabInfo",
    "LaunchResult",
    "Prediction",
    "ScalingEstimate",
    "ShardedMemory",
    "StepTime",
    "Stopwatch",
    "ThreadContext",
    "__version__",
    "advice",
    "allgather_time",
    "allreduce_bytes_per_rank",
    "allreduce_time",
    "amdahl_speedup",
    "arithmetic_intensity",
    "attainable_flops",
    "benchmark",
    "best_device",
    "broadcast_time",
    "bus_bandwidth",
    "check",
    "collective_time",
    "course_style",
    "cpu_cores",
    "cpu_model",
    "detect_device",
    "dist_plan",
    "doctor",
    "dp_step_time",
    "estimate_cpu_peak",
    "fit_alpha_beta",
    "get_spec",
    "in_colab",
    "interconnect",
    "lab_table",
    "launch",
    "launch_env",
    "list_interconnects",
    "list_labs",
    "list_specs",
    "measure_memory_bandwidth",
    "pipeline_bubble",
    "plot_measured_vs_predicted",
    "plot_spec_trend",
    "predict_time",
    "provenance",
    "provenance_line",
    "reduce_scatter_time",
    "scale",
    "scaling_calculator",
    "scaling_curve",
    "scaling_estimate",
    "seed_everything",
    "setup_lab",
    "sharded_memory",
    "synchronize",
    "thread_map",
    "tidy_point_labels",
    "timer",
    "torchrun",
    "use_course_style",
]
