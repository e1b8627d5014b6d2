"""The error policy, checked on every public callable: a bad argument is refused by name.

For each public callable (functions and class constructors: those in ``gl.__all__`` and in
the ``__all__`` of the modules listed in ``CONTRACT_MODULES``) this file holds one valid call
(``BASELINES``). Each test changes one parameter of that call to a bad value and requires
the exception the policy names (``gpulab._checks``): a ``TypeError`` for a value of the wrong
type, a ``ValueError`` for a value of the right type that is not allowed, with a message
that names the parameter, within ``CALL_LIMIT_S`` seconds. Tests that vary a parameter of a
call that takes a ``spec=`` also vary it from a second device (``SPEC_VARIANTS``).
The bad values depend on what the parameter is (``KINDS``): NaN,
infinities, bools and numeric strings for numbers; 0 and negative numbers where the value
must be positive; unknown names for registry entries and choices; wrong types everywhere.

Fixed bad values are tried one by one; Hypothesis then draws more of the same kinds
(derandomized, so a run is repeatable). A parameter's kind is inferred from its valid value
(an int is a count of 0 or more, a float a quantity of 0 or more, a str a choice) unless
``KINDS`` says otherwise. Adding a public name to ``gpulab._EXPORTS`` without a valid call
here fails :func:`test_every_public_callable_has_a_valid_call`.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import importlib
import inspect
import io
import math
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import matplotlib
import numpy as _np

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gpulab as gl  # noqa: E402
from gpulab.costmodels.published_mfu import (  # noqa: E402
    leave_one_out_mfu as _leave_one_out_mfu,
)
from gpulab.costmodels.published_mfu import (  # noqa: E402
    published_mfu_runs as _published_mfu_runs,
)
from gpulab.costmodels.published_runs import (  # noqa: E402
    leave_one_out as _leave_one_out,
)
from gpulab.costmodels.published_runs import (  # noqa: E402
    published_runs as _published_runs,
)
from gpulab.costmodels.published_runs import (  # noqa: E402
    published_utilisation as _published_utilisation,
)

_BERT = "BERT-large to 0.72 masked-LM accuracy"

#: Longest a call with one bad argument may take before it counts as not refusing it.
CALL_LIMIT_S = 5

#: Modules whose public callables (their ``__all__``) the contract covers besides
#: ``gl.__all__``. Left out: the course-authoring tools, the kernels written for Numba and
#: Triton, the torch networks, game and corpus the labs train on (torch modules and data),
#: the readers of recorded lab outputs, and ``_checks`` (the checks themselves).
CONTRACT_MODULES = (
    "gpulab.units",
    "gpulab.hardware.interconnects",
    "gpulab.hardware.memory_ladder",
    "gpulab.hardware.precision",
    "gpulab.hardware.sm",
    "gpulab.hardware.specs",
    "gpulab.measure.bench",
    "gpulab.measure.bench_report",
    "gpulab.measure.caches",
    "gpulab.measure.cpu",
    "gpulab.measure.device",
    "gpulab.measure.energy",
    "gpulab.measure.profiling",
    "gpulab.measure.provenance",
    "gpulab.measure.toolchain",
    "gpulab.costmodels.chooser",
    "gpulab.costmodels.comms",
    "gpulab.costmodels.flops",
    "gpulab.costmodels.inference",
    "gpulab.costmodels.memory",
    "gpulab.costmodels.overhead",
    "gpulab.costmodels.parallelism",
    "gpulab.costmodels.published_models",
    "gpulab.costmodels.published_runs",
    "gpulab.costmodels.published_mfu",
    "gpulab.costmodels.roofline",
    "gpulab.costmodels.rounding",
    "gpulab.costmodels.training_time",
    "gpulab.kernels.occupancy",
    "gpulab.kernels.simulator",
    "gpulab.kernels.tiling",
    "gpulab.labkit.answers",
    "gpulab.labkit.claims",
    "gpulab.labkit.datasets",
    "gpulab.labkit.launcher",
    "gpulab.labkit.plotting",
    "gpulab.labkit.scoreboard",
    "gpulab.labkit.training_loop",
    "gpulab.labkit.widgets",
    "gpulab.diagrams.collectives",
    "gpulab.diagrams.dispatch",
    "gpulab.diagrams.fusion",
    "gpulab.diagrams.hardware",
    "gpulab.diagrams.kernels",
    "gpulab.diagrams.parallelism",
    "gpulab.diagrams.schedules",
)


def _public() -> dict[str, object]:
    """Every callable the contract covers, by name (names are unique across the package)."""
    found = {name: getattr(gl, name) for name in gl.__all__}
    for module_name in CONTRACT_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            assert found.setdefault(name, value) is value, f"two public things are called {name}"
    return {name: value for name, value in found.items() if callable(value)}


PUBLIC = _public()

NAN, INF = float("nan"), float("inf")

# --------------------------------------------------------------------------- valid calls

_TMP = Path(tempfile.mkdtemp(prefix="gpulab-contract-"))  # torchrun's script lives here
(_TMP / "ok.py").write_text("pass\n")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def _fields(record) -> tuple[tuple, dict]:
    """A dataclass instance as constructor keyword arguments (a record gpulab returned)."""
    return (), {f.name: getattr(record, f.name) for f in dataclasses.fields(record) if f.init}


def _axes_with_labels():
    ax = plt.subplots()[1]
    ax.scatter([1, 2], [1, 2])
    ax.annotate("a", (1, 1))
    ax.annotate("b", (2, 2))
    return ax


def _tiny_training():
    model = torch.nn.Linear(4, 2)
    batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]
    return (model, batches), dict(
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), progress=False, device="cpu"
    )


def _copy_kernel(src, dst):
    dst[cuda.grid(1)] = src[cuda.grid(1)]  # noqa: F821 - the simulator supplies ``cuda``


def _triple_kernel(a, out):  # the kernel warm-up's first step
    out[cuda.threadIdx.x] = 3 * a[cuda.threadIdx.x]  # noqa: F821 - the simulator's ``cuda``


def _warmup_report():
    from gpulab.kernels import gym, gym_warmup

    return gym.grade_kernel(_triple_kernel, gym_warmup.TASKS["map"], quiet=True)


def _copy_args():
    return _np.arange(32, dtype=_np.float32), _np.zeros(32, dtype=_np.float32)


def _committed_report() -> dict:
    """A benchmark report as the repository keeps them (results/*.json), which is valid."""
    import json

    folder = Path(__file__).resolve().parents[1] / "results"
    return json.loads(sorted(folder.glob("*.json"))[0].read_text(encoding="utf-8"))


def _job():
    return gl.resnet_training_job(4.1e9, images=1000, epochs=1, batch_size=100, n_params=25e6)


def _plan():
    return gl.plan_training("BERT-base", batch_size=8, seq_len=128)


def _parallel_plan():
    return gl.suggest_parallelism(7e9, layers=32, hidden=4096, seq_len=4096, n_gpus=64)


@functools.cache
def _profile_rows():
    """``prof.key_averages()`` of a profile with one labelled region (made once)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("work"):
            torch.ones(64, 64) @ torch.ones(64, 64)
    return prof.key_averages()


_LINK = dict(alpha_s=1e-6, bandwidth_bytes_per_s=1e9)

#: One valid call per public callable: name -> function returning (args, kwargs).
BASELINES = {
    # ---- bench
    "benchmark": lambda: ((lambda: None,), dict(min_run_time_s=0.01)),
    "BenchResult": lambda: ((), dict(times_s=(1e-3, 2e-3), calls_per_block=10)),
    "Stopwatch": lambda: ((), dict(label="x", elapsed_s=1.0)),
    "synchronize": lambda: ((), {}),
    "timer": lambda: (("block",), dict(verbose=False)),
    # ---- check
    "check": lambda: ((1.0, 1.0), dict(quiet=True)),
    "CheckResult": lambda: _fields(gl.check(1.0, 1.0, quiet=True)),
    # ---- claims
    "claim": lambda: (("The add ran 1.7x faster.", True), dict(reason="above noise")),
    "Claim": lambda: (("The add ran 1.7x faster.",), {}),
    "recorded_number": lambda: (
        (Path(__file__).parents[1] / "notebooks" / "frameworks_lab.ipynb", r"(\d+) operator calls"),
        {},
    ),
    "recorded_output": lambda: (
        (Path(__file__).parents[1] / "notebooks" / "frameworks_lab.ipynb", r"operator calls"),
        {},
    ),
    # ---- chooser
    "DeviceOption": lambda: _fields(_plan().options[0]),
    "ExamplePrice": lambda: _fields(gl.EXAMPLE_PRICES[0]),
    "plan_training": lambda: (
        ("BERT-base",),
        dict(batch_size=8, seq_len=128, price_per_hour=2.0, specs=["T4", "A100 80GB"]),
    ),
    "estimate_training_plan": lambda: (
        ("ResNet-50",),
        dict(batch_size=8, price_per_hour=2.0, specs=["T4"], activations_bytes=2**20),
    ),
    "run_cost": lambda: ((3600.0, 2.0, 8), {}),
    "TrainingPlan": lambda: _fields(_plan()),
    "transformer_activation_bytes": lambda: (
        (),
        dict(layers=2, hidden=64, heads=4, seq_len=16, batch_size=2, precision="amp_bf16"),
    ),
    # ---- comms
    "allgather_time": lambda: ((1e6, 4), dict(_LINK)),
    "allreduce_bytes_per_rank": lambda: ((1e6, 4), {}),
    "allreduce_time": lambda: ((1e6, 4), dict(_LINK)),
    "broadcast_time": lambda: ((1e6, 4), dict(_LINK)),
    "bus_bandwidth": lambda: ((1e9, 0.01, 2), {}),
    "collective_time": lambda: (("allreduce", 1e6, 4), dict(_LINK)),
    "dp_step_time": lambda: ((0.1, 1e8, 8), dict(link="PCIe 4", buckets=2)),
    "ddp_buckets": lambda: ((1.6e6,), dict(bucket_cap_mb=25.0)),
    # ---- published runs
    "PublishedRun": lambda: _fields(_published_runs()[0]),
    "published_runs": lambda: ((), {}),
    "published_utilisation": lambda: ((_BERT, "H200"), {}),
    "UtilisationEstimate": lambda: _fields(_published_utilisation(_BERT, "H200")),
    "leave_one_out": lambda: ((list(_published_runs()),), {}),
    "LeaveOneOut": lambda: _fields(_leave_one_out()[0]),
    "ReportedMfuRun": lambda: _fields(_published_mfu_runs()[0]),
    "published_mfu_runs": lambda: ((), {}),
    "leave_one_out_mfu": lambda: ((list(_published_mfu_runs()),), {}),
    "MfuLeaveOneOut": lambda: _fields(_leave_one_out_mfu()[0]),
    "published_llm_utilisation": lambda: (("H100",), {}),
    "fit_alpha_beta": lambda: (
        ([1e3, 1e5, 1e7], [gl.allreduce_time(n, 4, **_LINK) for n in (1e3, 1e5, 1e7)], 4),
        {},
    ),
    "Interconnect": lambda: _fields(gl.interconnect("PCIe 4")),
    "interconnect": lambda: (("PCIe 4",), {}),
    "list_interconnects": lambda: (("pcie",), {}),
    "reduce_scatter_time": lambda: ((1e6, 4), dict(_LINK)),
    "StepTime": lambda: _fields(gl.dp_step_time(0.1, 1e8, 8, link="PCIe 4")),
    # ---- cpu
    "cpu_cores": lambda: ((), {}),
    # ---- diagrams
    "draw_ring_allreduce": lambda: ((3,), dict(seed=0)),
    "draw_tree_vs_ring": lambda: (("InfiniBand HDR",), dict(n_gpus=8)),
    "RingStep": lambda: _fields(
        gl.costmodels.comms.simulate_ring_allreduce([[1.0, 2.0], [3.0, 4.0]])[1]
    ),
    "simulate_ring_allreduce": lambda: (([[1.0, 2.0], [3.0, 4.0]],), {}),
    "draw_cpu_vs_gpu": lambda: (("blocks",), {}),
    "draw_memory_ladder": lambda: (("H100 SXM",), {}),
    "draw_sm_anatomy": lambda: (("T4",), dict(other="H100 SXM")),
    "memory_ladder": lambda: (("H100 SXM",), {}),
    "MemoryLevel": lambda: _fields(gl.hardware.memory_ladder.memory_ladder("H100 SXM")[3]),
    "draw_launch_mapping": lambda: ((100, 32), dict(spec="T4")),
    "draw_tiling": lambda: ((8, 2), dict(block=(1, 2))),
    "draw_touches": lambda: ((_warmup_report(),), {}),
    "dispatch_log": lambda: ((lambda: (torch.ones(3, requires_grad=True) * 2.0).sum(),), {}),
    "draw_dispatch": lambda: (
        (lambda: (torch.ones(3, requires_grad=True) * 2.0).sum(),),
        dict(title="x"),
    ),
    "draw_fusion": lambda: ((lambda x: x * 2.0 + 1.0, 64), dict(spec="T4", title="x")),
    "fusion_traffic": lambda: ((lambda x: x * 2.0 + 1.0, 64), dict(precision="bf16")),
    "tile_loads": lambda: ((8, 2), {}),
    "draw_tensor_parallel": lambda: ((2,), dict(hidden=4)),
    "draw_zero_stages": lambda: (
        (1e9, 8),
        dict(weight_bytes_per_param=2, grad_bytes_per_param=2, optimizer_bytes_per_param=12),
    ),
    "draw_input_pipeline": lambda: ((0.06, 0.05, 0.2, 0.1), dict(n_workers=2, n_batches=3)),
    "draw_pipeline_gantt": lambda: (
        ([gl.simulate_pipeline([1.0, 1.0], [2.0, 2.0], 2)],),
        dict(measured_bubble=0.3, title="x"),
    ),
    "PipelineOp": lambda: _fields(gl.simulate_pipeline([1.0], [2.0], 1).ops[0]),
    "PipelineSchedule": lambda: _fields(gl.simulate_pipeline([1.0], [2.0], 1)),
    "simulate_pipeline": lambda: (([1.0, 1.0], [2.0, 2.0], 2), dict(schedule="1f1b", comm_s=0.1)),
    "stage_times_from_measurement": lambda: ((0.08, 0.3, 4), dict(n_stages=2, backward_ratio=2.0)),
    "cpu_model": lambda: ((), {}),
    "CpuPeak": lambda: _fields(gl.estimate_cpu_peak(cores=2, clock_hz=3e9)),
    "estimate_cpu_peak": lambda: (
        (),
        dict(cores=2, clock_hz=3e9, flags={"avx2", "fma"}, fma_units=2),
    ),
    "measure_memory_bandwidth": lambda: ((), dict(array_bytes=2**20, min_run_time_s=0.01)),
    # ---- datasets
    "SyntheticDataset": lambda: ((8, (3,)), {}),
    # ---- device
    "advice": lambda: ((gl.DeviceInfo(kind="cpu", name="x"),), {}),
    "best_device": lambda: ((), {}),
    "cache_bytes": lambda: ((), dict(device="cpu")),
    "compile_problem": lambda: ((), dict(device="cpu", error=RuntimeError("no compiler"))),
    "missing_build_tools": lambda: (("cpu",), {}),
    "python_include_dir": lambda: ((), {}),
    "detect_device": lambda: ((), {}),
    "DeviceInfo": lambda: _fields(gl.detect_device()),
    "doctor": lambda: ((), dict(info=gl.DeviceInfo(kind="cpu", name="x"), file=io.StringIO())),
    "in_colab": lambda: ((), {}),
    # ---- distributed
    "dist_plan": lambda: ((), dict(n_gpus=0)),
    "DistPlan": lambda: _fields(gl.dist_plan(n_gpus=0)),
    "launch_env": lambda: ((), dict(base={})),
    "LaunchResult": lambda: (
        (),
        dict(
            command=("python", "x.py"),
            returncode=1,
            stdout="",
            stderr="",
            elapsed_s=1.0,
            timed_out=False,
            failed_rank=1,
            message="x.py failed",
        ),
    ),
    "torchrun": lambda: (("ok.py", 2), dict(cwd=_TMP, timeout_s=60.0, echo=False)),
    # ---- energy
    "assumed_power": lambda: (("cpu",), dict(cores=2)),
    "cpu_watts_per_core": lambda: ((), {}),
    "EnergyMeter": lambda: (("cpu",), dict(cores=2, verbose=False)),
    "measure_energy": lambda: (("cpu",), dict(cores=2, verbose=False)),
    "gpu_energy_problem": lambda: (("cpu",), {}),
    "PowerAssumption": lambda: _fields(gl.measure.energy.assumed_power("cpu", cores=2)),
    # ---- extrapolate
    "plot_extrapolation": lambda: (({"here": 10.0}, {"A100": 100.0}, ["an assumption"]), {}),
    # ---- flops
    "conv2d_flops": lambda: ((1, 4, 8, 3, 16), {}),
    "count_flops": lambda: ((torch.nn.Linear(4, 4), torch.randn(2, 4)), {}),
    "eager_cost": lambda: ((lambda: torch.ones(4, 4) @ torch.ones(4, 4),), {}),
    "linear_flops": lambda: ((8, 16, 32), {}),
    "matmul_flops": lambda: ((8, 16, 32), {}),
    # ---- memory
    "activation_bytes": lambda: ((torch.nn.Linear(4, 4), torch.randn(2, 4)), {}),
    "bytes_per_param": lambda: (("fp32", "adam"), {}),
    "zero_bytes_per_param": lambda: (("amp_bf16", "adam"), {}),
    "estimate_training_memory": lambda: ((1_000_000,), dict(precision="fp32")),
    "estimate_step_memory": lambda: (
        (torch.nn.Linear(4, 4), torch.randn(2, 4)),
        dict(precision="fp32", optimizer="adam", foreach=False),
    ),
    "optimizer_temporaries_bytes": lambda: (
        ([16, 4],),
        dict(optimizer="adam", precision="fp32", foreach=False),
    ),
    "gpus_that_fit": lambda: ((gl.estimate_training_memory(1_000_000),), dict(headroom=0.9)),
    "measure_training_memory": lambda: (
        (torch.nn.Linear(4, 2), torch.randn(8, 4), torch.randint(0, 2, (8,))),
        {},
    ),
    "memory_report": lambda: ((gl.estimate_training_memory(1_000_000),), dict(headroom=0.9)),
    "MemoryEstimate": lambda: _fields(gl.estimate_training_memory(1_000_000)),
    # ---- parallel
    "amdahl_speedup": lambda: ((8, 0.05), {}),
    "pipeline_bubble": lambda: ((4, 8), {}),
    "scaling_curve": lambda: ((0.1, 1e9, [1, 2, 8]), dict(link="PCIe 4")),
    "sharded_memory": lambda: ((1e9, 8, 2), {}),
    "ShardedMemory": lambda: _fields(gl.sharded_memory(1e9, 8, 2)),
    # ---- parallelism
    "context_parallel_bytes": lambda: ((1, 1024, 256, 4), {}),
    "expert_parallel_bytes": lambda: ((512, 256, 4), dict(top_k=2)),
    "layer_activation_bytes": lambda: ((1, 128, 64, 4), dict(tensor_parallel=2)),
    "ParallelPlan": lambda: _fields(_parallel_plan()),
    "pipeline_inflight_microbatches": lambda: ((2, 4, "1f1b"), dict(stage=0)),
    "suggest_parallelism": lambda: (
        (7e9,),
        dict(layers=32, hidden=4096, seq_len=4096, n_gpus=64, spec="H100 SXM5 80GB"),
    ),
    "tensor_parallel_comm": lambda: ((8, 1, 512, 2), dict(bytes_per_value=4, block="mlp")),
    "TensorParallelComm": lambda: _fields(gl.tensor_parallel_comm(8, 1, 512, 2)),
    # ---- plotting
    "course_style": lambda: ((), {}),
    "plot_measured_vs_predicted": lambda: (
        (["a", "b"], [1.0, 2.0], [False, True]),
        dict(unit="GFLOP/s"),
    ),
    "plot_spec_trend": lambda: (("fp32",), {}),
    "tidy_point_labels": lambda: ((_axes_with_labels(),), dict(fontsize=8)),
    "use_course_style": lambda: ((), {}),
    # ---- precision
    "compute_bytes": lambda: (("fp32",), {}),
    "peak_precision": lambda: (("amp_bf16",), {}),
    "supported_precisions": lambda: ((), dict(device="cpu")),
    "mixed_precision": lambda: ((), dict(device="cpu")),
    "MixedPrecision": lambda: _fields(gl.measure.device.mixed_precision("cpu")),
    "matmul_speedup": lambda: ((gl.measure.device.mixed_precision("cpu"),), dict(device="cpu")),
    "tf32": lambda: ((False,), {}),
    # ---- provenance
    "provenance": lambda: ((), dict(info=None)),
    "provenance_line": lambda: (
        ({"date": "2026-01-01", "device": "cpu", "gpulab": "0.1.0", "python": "3.11"},),
        {},
    ),
    "seed_everything": lambda: ((0,), {}),
    # ---- report
    "run_bench": lambda: ((), dict(quick=True, notes="")),
    "validate_report": lambda: ((_committed_report(),), dict(source="report")),
    # ---- roofline
    "arithmetic_intensity": lambda: ((1e6, 1e6), {}),
    "attainable_flops": lambda: (("T4", 10.0), {}),
    "Ceilings": lambda: _fields(gl.Ceilings.from_spec("T4", "fp16")),
    "measure_ceilings": lambda: (
        ("cpu",),
        dict(copy_bytes=2**16, matmul_n=32, min_run_time_s=0.01, num_threads=1, repeats=1),
    ),
    "plot_roofline": lambda: (("T4", [gl.RooflinePoint("add", 1e6, 12e6)]), {}),
    "predict_time": lambda: (("T4", 1e9, 1e9), {}),
    "Prediction": lambda: _fields(gl.predict_time("T4", 1e9, 1e9)),
    "roofline_readout": lambda: (("T4", 10.0), {}),
    "RooflinePoint": lambda: (("add", 1e6, 12e6), dict(time_s=1e-3)),
    # ---- overhead
    "OverheadModel": lambda: ((), dict(fixed_s=5e-3, per_item_s=2e-8, note="x")),
    "size_for_ratio": lambda: (
        (gl.costmodels.overhead.OverheadModel(5e-3, 2e-8), 16, 4, [2**18, 2**20]),
        {},
    ),
    # ---- rounding
    "matmul_error_range": lambda: ((256, "fp32"), dict(accumulate="fp32")),
    "matmul_rounding_error": lambda: (
        (4096, "bf16"),
        dict(accumulate="fp32", summation="pairwise", inputs="truncate"),
    ),
    # ---- setup
    "setup_lab": lambda: ((0,), {}),
    # ---- simt
    "Dim3": lambda: ((2, 2, 1), {}),
    "launch": lambda: ((lambda ctx: None, 2, 4), {}),
    "thread_map": lambda: ((10, 4), {}),
    "simulate": lambda: ((lambda: None, 2, 4), {}),
    "KernelCounts": lambda: _fields(gl.simulate(_copy_kernel, 1, 32, *_copy_args())),
    "ThreadContext": lambda: (
        (
            gl.kernels.simulator.Dim3(0),
            gl.kernels.simulator.Dim3(1),
            gl.kernels.simulator.Dim3(4),
            gl.kernels.simulator.Dim3(2),
        ),
        {},
    ),
    # ---- sizing
    "scale": lambda: ((), dict(cpu=1, gpu=2, device="cpu")),
    "scale_to_memory": lambda: ((), dict(cpu=2**10, gpu=2**20, n_arrays=3, device="cpu")),
    # ---- profiling
    "region_times": lambda: ((_profile_rows(), ["work"]), dict(device="cpu")),
    "device_time_us": lambda: ((_profile_rows()[0],), {}),
    "RegionTimes": lambda: ((), dict(times_s={"a": 1.0, "b": 3.0}, matmul_s=0.5)),
    # ---- occupancy
    "occupancy": lambda: (("T4", 256, 32, 1024), {}),
    "Occupancy": lambda: _fields(gl.occupancy("A100 80GB", 256, 64)),
    "matmul_waves": lambda: (("A100 80GB", 3072), dict(tile=128, precision="fp16")),
    "WavePrediction": lambda: _fields(gl.matmul_waves("T4", 1000)),
    "occupancy_calculator": lambda: (
        ("T4",),
        dict(threads_per_block=256, registers_per_thread=32, shared_per_block_bytes=0),
    ),
    # ---- sm
    "list_sm_architectures": lambda: ((), {}),
    "sm_architecture": lambda: (("T4",), {}),
    "SmArchitecture": lambda: _fields(gl.sm_architecture("A100 80GB")),
    # ---- specs
    "DeviceSpec": lambda: _fields(gl.get_spec("T4")),
    "find_spec": lambda: (("Tesla T4",), {}),
    "get_spec": lambda: (("T4",), {}),
    "list_specs": lambda: (("gpu",), {}),
    # ---- train
    "train": _tiny_training,
    "TrainStats": lambda: ((), dict(steps=2, samples=16, time_s=0.1, losses=[1.0, 0.5])),
    # ---- training_time
    "epoch_seconds": lambda: ((1e15, "A100 80GB"), dict(precision="amp_bf16", utilisation=0.4)),
    "get_model": lambda: (("BERT-base",), {}),
    "gradient_bytes": lambda: (("amp_bf16",), {}),
    "NamedModel": lambda: _fields(gl.get_model("BERT-base")),
    "resnet_training_job": lambda: (
        (4.1e9,),
        dict(images=1000, epochs=2, batch_size=100, n_params=25e6, name="ResNet"),
    ),
    "ScalingEstimate": lambda: _fields(gl.scaling_estimate(1e9, "A100 80GB", 16, "NVLink 3")),
    "scaling_estimate": lambda: (
        (1e9, "A100 80GB", 16, "NVLink 3"),
        dict(precision="amp_bf16", utilisation=0.4, overlap=0.5),
    ),
    "time_to_train": lambda: (
        (_job(), "A100 80GB"),
        dict(
            n_gpus=8,
            precision="amp_bf16",
            utilisation=0.4,
            link="NVLink 3",
            overlap=0.5,
            assumptions=["an assumption"],
        ),
    ),
    "TimeToTrain": lambda: _fields(
        gl.time_to_train(_job(), "A100 80GB", n_gpus=8, utilisation=0.4, link="NVLink 3")
    ),
    "TrainingJob": lambda: _fields(_job()),
    "training_flops_per_sample": lambda: (("BERT-base",), dict(seq_len=128)),
    "training_flops_per_token": lambda: ((1e6,), dict(layers=2, hidden=64, seq_len=128)),
    "training_precision": lambda: (("A100 80GB",), {}),
    "transformer_training_job": lambda: (
        (1e8, 1e9),
        dict(layers=2, hidden=64, seq_len=128, embedding_params=1e6, steps=100, name="x"),
    ),
    # ---- widgets
    "chooser_widget": lambda: (
        ("BERT-base",),
        dict(batch_size=8, seq_len=128, samples_per_epoch=1000, price_per_hour=2.0),
    ),
    "memory_calculator": lambda: ((), dict(n_params=1_000_000, batch_size=8)),
    "parallelism_calculator": lambda: (
        (7e9,),
        dict(layers=32, hidden=4096, seq_len=4096, n_gpus=64, spec="H100 SXM5 80GB"),
    ),
    "roofline_explorer": lambda: (("Tesla T4", "fp16", 4.0), {}),
    "scaling_calculator": lambda: (
        (),
        dict(n_params=1e9, spec="H100 SXM", n_gpus=8, link="NVLink 4", precision="amp_bf16"),
    ),
    # ---- inference
    "kv_cache_bytes": lambda: ((), dict(layers=2, heads=4, head_dim=16, seq_len=32, batch_size=2)),
    "model_kv_cache_bytes": lambda: (("Llama-2-7B",), dict(seq_len=128, batch_size=2)),
    "weight_bytes": lambda: ((6.7e9,), dict(weight_format="int8")),
    "decode_estimate": lambda: (
        ("A100 80GB", 6.7e9),
        dict(weight_format="int8", batch_size=4, kv_bytes=1e9, precision="bf16"),
    ),
    "DecodeEstimate": lambda: _fields(gl.decode_estimate("T4", 1e9)),
    "generation_timing": lambda: ((0.0, [0.5, 0.6, 0.7]), {}),
    "greedy_agreement": lambda: (
        ([5, 1, 0], [5, 2, 3], lambda i: [0.1, 2.0, 1.9995, -1.0]),
        {"tolerance": 1e-3},
    ),
    "GenerationTiming": lambda: _fields(gl.generation_timing(0.0, [0.5, 0.6])),
    "GreedyAgreement": lambda: _fields(
        gl.costmodels.inference.greedy_agreement(
            [5, 1, 0], [5, 2, 3], lambda i: [0.1, 2.0, 1.9995, -1.0]
        )
    ),
    # ---- scoreboard
    "Scoreboard": lambda: ((gl.measure.bench.BenchResult((1e-3,), 1),), dict(label="baseline")),
    "faster_beyond_noise": lambda: (
        (
            gl.measure.bench.BenchResult((2e-3,) * 4, 1),
            gl.measure.bench.BenchResult((1e-3,) * 4, 1),
        ),
        {},
    ),
    "ScoreboardRow": lambda: _fields(
        gl.Scoreboard(gl.measure.bench.BenchResult((1e-3,), 1), label="baseline").rows[0]
    ),
    # ---- look-ups shared between modules
    "lookup": lambda: (("T4",), {}),
    "match_driver_name": lambda: (("NVIDIA A100-SXM4-80GB",), {}),
    # The look-ups name the parameter they are told to (their first argument): given their
    # own parameter's name, the message must name it.
    "resolve_spec": lambda: (("value", "T4"), {}),
    "resolve_link": lambda: (("name", "PCIe 4"), {}),
    "resolve_model": lambda: (("name", "BERT-base"), {}),
    "named_model_or_none": lambda: (("BERT-base",), {}),
    "torch_device": lambda: ((), dict(device="cpu")),
    "dispatch_mode_class": lambda: ((), {}),
    "bench_schema": lambda: ((), {}),
    "reference_for": lambda: ((gl.detect_device(),), {}),
    # ---- utilisation
    "hfu": lambda: ((8e12, 1.0, 1e13), dict(n_gpus=1)),
    "mfu": lambda: ((6e12, 1.0, 1e13), dict(n_gpus=1)),
    "recompute_flops": lambda: ((6e12, 1.0), {}),
    # ---- units
    "format_bytes": lambda: ((1e9,), {}),
    "format_duration": lambda: ((1.5,), {}),
    "format_rate": lambda: ((1e9, "FLOP/s"), {}),
}

#: Public callables this file cannot drive, with the reason. Keep it short.
EXCLUDED: dict[str, str] = {
    "ClaimError": "an exception class (AssertionError), raised by claim, not called by a user",
    "NoiseTest": "a result record that faster_beyond_noise builds; not called by a user",
}

#: Valid calls not run as such (each parameter is still checked with a bad value).
BASELINE_NOT_RUN = {
    "run_bench": "runs the whole benchmark suite (minutes)",
    "torchrun": "starts processes, which this file forbids (see _no_processes)",
}

# --------------------------------------------------------------------------- bad values

#: Bad values of each kind of parameter, always tried.
FIXED = {
    "count": [0, -1, 2.5, True, False, "8", NAN, INF],  # an int of 1 or more
    "count0": [-1, 2.5, True, "8", NAN, INF],  # an int of 0 or more
    "int": [2.5, True, "8", NAN, INF],  # any int
    "pos": [0, -1.5, NAN, INF, -INF, True, "8"],  # a finite number above 0
    "nonneg": [-1.5, NAN, INF, -INF, True, "8"],  # a finite number of 0 or more
    "real": [NAN, INF, -INF, True, "8"],  # a finite number
    "frac": [1.5, -0.1, NAN, INF, True, "0.5"],  # 0 to 1
    "frac_open": [0, 1.5, -0.1, NAN, INF, True, "0.5"],  # above 0, at most 1
    "choice": ["no-such-choice", 42],  # one of a few names
    "spec": ["Z9000 Ultra", "", 42],  # a registry entry or its name
    "specs": ["Z9000 Ultra", "", 42, [], ["Z9000 Ultra"]],  # one entry or a list of them
    "link": ["token ring", 42],  # an interconnect or its name
    "device": ["tpu", 42],  # a torch device
    "path": [42, ""],
    "text": [42],  # free text: only the type is checked
    "seq": [],  # a sequence of numbers: see _seq_bad_values
}
_NUMERIC_STRINGS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_NON_INTEGERS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: x != int(x) if math.isfinite(x) else True
)
_NOT_A_NAME = st.text(alphabet="#%&~^", min_size=1, max_size=4)
_WRONG_TYPES = st.one_of(st.integers(), st.floats(), st.lists(st.integers(), max_size=2))

#: More bad values of each kind, drawn by Hypothesis.
GENERATED = {
    "count": st.one_of(st.integers(max_value=0), _NON_INTEGERS, _NUMERIC_STRINGS),
    "count0": st.one_of(st.integers(max_value=-1), _NON_INTEGERS, _NUMERIC_STRINGS),
    "int": st.one_of(_NON_INTEGERS, _NUMERIC_STRINGS),
    "pos": st.one_of(st.floats(max_value=0.0), st.integers(max_value=0), _NUMERIC_STRINGS),
    "nonneg": st.one_of(st.floats(max_value=-1e-300), st.integers(max_value=-1), _NUMERIC_STRINGS),
    "real": st.one_of(st.sampled_from([NAN, INF, -INF]), _NUMERIC_STRINGS),
    "frac": st.one_of(
        st.floats(min_value=1.0, exclude_min=True),
        st.floats(max_value=0.0, exclude_max=True),
        _NUMERIC_STRINGS,
    ),
    "frac_open": st.one_of(
        st.floats(min_value=1.0, exclude_min=True), st.floats(max_value=0.0), _NUMERIC_STRINGS
    ),
    "choice": st.one_of(_NOT_A_NAME, _WRONG_TYPES),
    "spec": st.one_of(
        st.text(alphabet="#%&~^", min_size=0, max_size=3).map(lambda s: "Z9" + s), _WRONG_TYPES
    ),
    "specs": st.one_of(
        st.text(alphabet="#%&~^", min_size=0, max_size=3).map(lambda s: "Z9" + s),
        st.integers(),
        st.floats(),
        st.lists(st.integers(), max_size=2),
    ),
    "link": st.one_of(_NOT_A_NAME, _WRONG_TYPES),
    "device": st.one_of(_NOT_A_NAME, st.integers(), st.floats()),
    "path": st.one_of(st.integers(), st.floats(), st.just("")),
    "text": _WRONG_TYPES,
    "seq": st.one_of(st.sampled_from([NAN, INF, -1.0, True, "8"]), _NUMERIC_STRINGS),
}

#: Free-text parameters: any str is valid, so only a wrong type is bad.
FREE_TEXT = {
    "architecture",
    "basis",
    "cite",
    "date",
    "desc",
    "device_name",
    "formula",
    "interconnect",
    "label",
    "memory_type",
    "message",
    "name",
    "note",
    "notes",
    "reason",
    "source",
    "source_url",
    "stderr",
    "stdout",
    "title",
    "unit",
    "vendor",
    "xlabel",
}

#: Where the kind inferred from the valid value is wrong, or a parameter has no valid value
#: to infer from (None): callable -> parameter -> a kind of FIXED, a list of bad values, or
#: None (not checked: any value is valid).
KINDS: dict[str, dict] = {
    "resolve_spec": {"name": None, "value": "spec"},
    "resolve_link": {"param": None, "name": "link"},
    "resolve_model": {"param": None, "name": "choice"},
    "named_model_or_none": {"value": None, "param": None},  # a number is valid: a size
    "torch_device": {"device": "device", "name": None},
    "cache_bytes": {"device": "device"},
    "compile_problem": {"device": "device", "error": ["boom", 42]},
    "allgather_time": {"n_gpus": "count", "bandwidth_bytes_per_s": "pos"},
    "allreduce_bytes_per_rank": {"n_gpus": "count"},
    "allreduce_time": {"n_gpus": "count", "bandwidth_bytes_per_s": "pos"},
    "broadcast_time": {"n_gpus": "count", "bandwidth_bytes_per_s": "pos"},
    "reduce_scatter_time": {"n_gpus": "count", "bandwidth_bytes_per_s": "pos"},
    "collective_time": {"n_gpus": "count", "bandwidth_bytes_per_s": "pos"},
    "bus_bandwidth": {"n_gpus": "count", "time_s": "pos"},
    "fit_alpha_beta": {"n_gpus": "count", "times_s": "seq", "n_bytes": "seq"},
    "dp_step_time": {
        "compute_s": "pos",
        "n_gpus": "count",
        "link": "link",
        "overlap": "frac",
        "alpha_s": "nonneg",
        "buckets": "count",
    },
    "ddp_buckets": {"bucket_cap_mb": "pos"},
    "PublishedRun": {
        **dict.fromkeys(("round", "benchmark", "submitter", "system"), "text"),
        **dict.fromkeys(
            ("n_gpus", "n_params", "embedding_params", "layers", "hidden", "seq_len"), "count"
        ),
        **dict.fromkeys(("train_samples", "run_start_ms", "run_stop_ms"), "count"),
    },
    "published_utilisation": {"benchmark": "text"},
    "UtilisationEstimate": {"value": "pos", "runs": ["runs", 42], "basis": "choice"},
    "leave_one_out": {"runs": ["runs", 42]},
    "LeaveOneOut": {"run": ["run", 42], "estimate": ["estimate", 42], "predicted_s": "pos"},
    "interconnect": {"name": "link"},
    "Interconnect": {"bandwidth": "pos", "latency_s": "nonneg", "year": "count"},
    "StepTime": {"n_gpus": "count"},
    "amdahl_speedup": {"n_gpus": "count", "serial_fraction": "frac"},
    "pipeline_bubble": {"n_stages": "count", "n_microbatches": "count"},
    "sharded_memory": {
        "n_gpus": "count",
        "stage": "count0",  # 0 to 3; stage=4 is in tests/test_parallel.py
        "weight_bytes_per_param": "nonneg",
        "grad_bytes_per_param": "nonneg",
        "optimizer_bytes_per_param": "nonneg",
    },
    "ShardedMemory": {"n_gpus": "count", "stage": "count0"},
    "context_parallel_bytes": {
        "batch_size": "count",
        "seq_len": "count",
        "kv_hidden": "count",
        "n_gpus": "count",
        "bytes_per_value": "count",  # 1, 2, 4 or 8; 3 is in tests/test_parallelism.py
        "backward": [1, "yes", None],
    },  # fmt: skip
    "expert_parallel_bytes": {
        "tokens_per_gpu": "count",
        "hidden": "count",
        "n_gpus": "count",
        "top_k": "count",
        "bytes_per_value": "count",  # 1, 2, 4 or 8; 3 is in tests/test_parallelism.py
        "backward": [1, "yes", None],
    },  # fmt: skip
    "layer_activation_bytes": {
        "batch_size": "count",
        "seq_len": "count",
        "hidden": "count",
        "heads": "count",
        "tensor_parallel": "count",
        "sequence_parallel": [1, "yes", None],
    },  # fmt: skip
    "pipeline_inflight_microbatches": {
        "n_stages": "count",
        "n_microbatches": "count",
        "stage": "count0",  # below n_stages; stage=2 of 2 is in tests/test_parallelism.py
    },  # fmt: skip
    "tensor_parallel_comm": {
        "batch_size": "count",
        "seq_len": "count",
        "hidden": "count",
        "n_gpus": "count",
        "layers": "count",
        "bytes_per_value": "count",  # 1, 2, 4 or 8; 3 is in tests/test_parallelism.py
    },  # fmt: skip
    "TensorParallelComm": {"n_allreduces": "count0", "message_bytes": "count0"},
    "suggest_parallelism": {
        "n_params": "pos",
        "layers": "count",
        "hidden": "count",
        "seq_len": "count",
        "n_gpus": "count",
        "spec": "spec",
        "gpus_per_node": "count",
        "headroom": "frac_open",
        "state_share": "frac_open",
    },  # fmt: skip
    "ParallelPlan": {
        "tensor": "count",
        "pipeline": "count",
        "context": "count",
        "data": "count",
        "memory_bytes": "pos",
        "lines": [42, "x", ("a", 2), ["a"]],
    },  # fmt: skip
    "mfu": {
        "model_flops_per_step": "pos",
        "step_time_s": "pos",
        "peak_flops": "pos",
        "n_gpus": "count",
    },
    "hfu": {
        "hardware_flops_per_step": "pos",
        "step_time_s": "pos",
        "peak_flops": "pos",
        "n_gpus": "count",
    },
    "recompute_flops": {"model_flops_per_step": "pos", "recomputed_fraction": "frac"},
    "scaling_curve": {
        "compute_s": "pos",
        "n_gpus": [[1, 0], [1, -2], 8, [], ["2"], [True], "8"],
        "link": "link",
        "overlap": "frac",
        "alpha_s": "nonneg",
    },
    "arithmetic_intensity": {"n_bytes": "pos"},
    "attainable_flops": {"spec": "spec"},
    "predict_time": {"spec": "spec"},
    "roofline_readout": {"spec": "spec"},
    "Ceilings": {"peak_flops": "pos", "memory_bandwidth": "pos", "note": "text"},
    "RooflinePoint": {"n_bytes": "pos", "time_s": "pos"},
    "size_for_ratio": {
        "model": [42, "model"],
        "first": "pos",
        "ratio": "pos",
        "candidates": [[0], [-1], [True], ["8"], 8, "8"],
    },
    "matmul_error_range": {"n_terms": "count"},
    "matmul_rounding_error": {"n_terms": "count"},
    "measure_ceilings": {
        "device": "device",
        "copy_bytes": "count",
        "matmul_n": "count",
        "min_run_time_s": "pos",
        "num_threads": "count",
        "repeats": "count",
    },
    "plot_roofline": {
        "ceilings": "specs",
        "points": [[("add", 1, 12)], 42],
        "intensity_range": [(10, 1), (0, 10), (1, INF), (NAN, 10), 5, "ab"],
    },
    "conv2d_flops": {
        name: "count"
        for name in (
            "batch_size",
            "in_channels",
            "out_channels",
            "kernel_size",
            "input_size",
            "stride",
            "dilation",
            "groups",
        )
    }
    | {"padding": "count0"},
    "linear_flops": {"rows": "count", "in_features": "count", "out_features": "count"},
    "matmul_flops": {"m": "count", "k": "count", "n": "count"},
    "count_flops": {"module_or_fn": [42, "fn"]},
    "eager_cost": {"fn": [42, "fn"]},
    "check": {"answer": None, "expected": "real", "hint": "text"},
    "CheckResult": {"answer": "real", "expected": "real"},
    "claim": {"text": "text", "holds": [1, 0.5, "yes", None], "reason": "text"},
    "Claim": {"text": "text"},
    # a str of a required form (a regular expression with a group): "choice" refuses a str
    # as a bad value and anything else as the wrong type
    "recorded_number": {"lab": "path", "pattern": "choice"},
    "recorded_output": {"lab": "path", "pattern": "choice"},
    "DistPlan": {"n_ranks": "count"},
    "launch_env": {"base": [42, "x", ["a"]]},
    "LaunchResult": {"returncode": "int", "command": [["python"], "python", ("python", 1)]},
    "torchrun": {
        "script": "path",
        "n_ranks": "count",
        "timeout_s": "pos",
        "cwd": "path",
        "args": ["--epochs 2", 42],
        "env": [{"RANK": 0}, "x"],
    },
    "SyntheticDataset": {
        "n": "count",
        "shape": [(), (0,), (2.5,), (True,), 3, "3"],
        "n_classes": "count",
    },
    "ThreadContext": {k: ["x", 42, None] for k in ("blockIdx", "threadIdx", "blockDim", "gridDim")},
    "launch": {"kernel": [42], "grid": "count", "block": "count"},
    "thread_map": {"n": "count", "block": "count"},
    "simulate": {"kernel": [42, "copy"], "grid": "count", "block": "count"},
    "KernelCounts": {"active_fraction": "frac"},
    "occupancy": {"spec": "spec", "threads_per_block": "count"},
    "Occupancy": {"limiter": "choice", "threads_per_block": "count", "max_warps_per_sm": "count"},
    "matmul_waves": {"spec": "spec", "n": "count", "tile": "count", "precision": "choice"},
    "WavePrediction": {
        "n": "count",
        "tile": "count",
        "tiles": "count",
        "sm_count": "count",
        "waves": "count",
        "time_s": "pos",
        "ideal_time_s": "pos",
    },
    "occupancy_calculator": {"spec": "spec", "threads_per_block": "count"},
    "scale": {"cpu": None, "gpu": None, "mps": None, "device": "device"},
    "scale_to_memory": {
        "cpu": "count",
        "gpu": "count",
        "n_arrays": "count",
        "element_bytes": "count",
        "fraction": "frac_open",
        "device": "device",
    },
    "mixed_precision": {"device": "device"},
    "matmul_speedup": {"amp": [42, "amp_bf16", None], "device": "device"},
    "MixedPrecision": {"precision": "choice"},
    "region_times": {
        "rows": [42, "rows", ["x"], []],  # the rows of prof.key_averages()
        "labels": ["work", 42, [], ["work", 42]],  # a list of record_function labels
        "device": "device",
    },
    "RegionTimes": {"times_s": [42, "x", None], "matmul_clock": "choice"},
    "device_time_us": {"row": [42, "row", None], "total": "choice"},  # a key_averages() row
    "gpu_energy_problem": {"device": "device", "nvml": None},
    "plot_spec_trend": {"specs": ["T4", ["T4"], 42]},
    "plot_measured_vs_predicted": {
        "labels": [42],
        "values": [[NAN, 1.0], [0.0, 1.0], [-1.0, 1.0], ["3", 1.0], 1.0],
        "predicted": [["yes", True], 1],
    },
    "tidy_point_labels": {"ax": [None, 42], "fontsize": "pos"},
    "draw_ring_allreduce": {"n_gpus": "count", "seed": "count0"},
    "draw_tree_vs_ring": {"link": "link", "n_gpus": "count"},
    "simulate_ring_allreduce": {"values": [[1.0, 2.0], [[1.0, True], [1.0, 2.0]], "ab", 42]},
    "draw_memory_ladder": {"spec": "spec"},
    "draw_sm_anatomy": {"spec": "spec", "other": "spec"},
    "memory_ladder": {"spec": "spec"},
    "draw_launch_mapping": {"n": "count", "block": "count", "spec": "spec"},
    "draw_tiling": {"n": "count", "tile": "count", "block": [(4, 0), (1,), "x", (True, 0)]},
    "draw_touches": {"report": [3, "report"]},
    "dispatch_log": {"forward": [42, "x", lambda: 3.0]},
    "draw_dispatch": {"forward": [42, "x", lambda: 3.0], "title": "text"},
    "draw_fusion": {
        "fn": [42, "x * 2", lambda x, y: x + y],
        "n_elem": "count",
        "spec": "spec",
        "precision": "choice",
        "measured": [42, "x", {"eager_s": 1.0, "fused_s": "1"}],
        "title": "text",
    },
    "fusion_traffic": {
        "fn": [42, "x * 2", lambda x, y: x + y],
        "n_elem": "count",
        "precision": "choice",
    },
    "tile_loads": {"n": "count", "tile": "count"},
    "draw_tensor_parallel": {"n_gpus": "count", "hidden": "count"},
    "draw_zero_stages": {
        "n_params": "pos",
        "n_gpus": "count",
        "weight_bytes_per_param": "nonneg",
        "grad_bytes_per_param": "nonneg",
        "optimizer_bytes_per_param": "nonneg",
    },
    "draw_input_pipeline": {
        name: "pos" for name in ("load_s", "compute_s", "starved_step_s", "fixed_step_s")
    }
    | {"n_workers": "count", "n_batches": "count"},
    "draw_pipeline_gantt": {"schedules": [[], [None], "x", 42], "measured_bubble": "frac"},
    "simulate_pipeline": {
        "forward_s": [[0.0, 1.0], [NAN, 1.0], [1.0], "1", 42],
        "backward_s": [[0.0, 1.0], [1.0], "1", 42],
        "n_microbatches": "count",
        "comm_s": "nonneg",
    },
    # counts, not real numbers ("seq" would expect ValueError for a float element)
    "PipelineSchedule": {"peak_in_flight": [8, "8", (1, -1), (True,), ("8",), (2, None)]},
    "stage_times_from_measurement": {
        "step_s": "pos",
        "bubble": "frac",  # below 1; bubble=1.0 is in tests/test_parallel.py
        "n_microbatches": "count",
        "n_stages": "count",
        "backward_ratio": "pos",
    },
    "provenance": {"info": ["cpu", 42]},
    "provenance_line": {
        "record": ["x", 42, {"date": 42, "device": "cpu", "gpulab": "0.1.0", "python": "3.11"}]
    },
    "seed_everything": {"seed": "count0"},
    "setup_lab": {"seed": "count0"},
    "format_rate": {"value": "real", "unit": "text"},  # unit="" is in tests/test_units.py
    # ---- other modules
    "benchmark": {
        "fn": [42],
        "min_run_time_s": "pos",
        "num_threads": "count",
        "repeats": "count",
    },
    "BenchResult": {"times_s": "seq", "calls_per_block": "count"},
    "Stopwatch": {"elapsed_s": ["1", True, None]},  # NaN is valid: "still running"
    "timer": {"label": "text"},
    "advice": {"info": ["cpu", 42]},
    "doctor": {"info": ["cpu", 42], "file": [42]},
    "DeviceInfo": {
        "compute_capability": [(8,), "8.0", (8.5, 0)],
        "memory_bytes": "count",
        "sm_count": "count",
        "cpu_cores": "count",
        "n_gpus": "count0",
        "problems": ["x", ("ok", 1)],
    },
    "estimate_cpu_peak": {
        "cores": "count",
        "clock_hz": "pos",
        "fma_units": "count",
        "flags": ["avx2", 42],
    },
    "CpuPeak": {
        "cores": "count",
        "clock_hz": "pos",
        "vector_bits": "count",
        "fma_units": "count",
        "flops_per_cycle": "count",
        "peak_flops": "pos",
    },
    "measure_memory_bandwidth": {"array_bytes": "count", "min_run_time_s": "pos"},
    "assumed_power": {"device": "device", "spec": "spec", "cores": "count"},
    "EnergyMeter": {
        "device": "device",
        "spec": "spec",
        "cores": "count",
        "interval_s": "pos",
        "nvml": [object(), 42, "pynvml"],  # None (pynvml) or a stand-in with its functions
        "warmup_fn": [42, "later"],  # a function to call first, or None
    },
    "measure_energy": {
        "device": "device",
        "spec": "spec",
        "cores": "count",
        "interval_s": "pos",
        "nvml": [object(), 42, "pynvml"],  # None (pynvml) or a stand-in with its functions
        "warmup_fn": [42, "later"],  # a function to call first, or None
    },
    "PowerAssumption": {"watts": "pos"},
    "chooser_widget": {
        "model": [True, 2.5, None, ["BERT-base"]],  # bad names and counts: test_widgets.py
        "batch_size": "count",
        "seq_len": "count",
        "image_size": "count",
        "samples_per_epoch": "count",
        "utilisation": "frac_open",
        "price_per_hour": "pos",
    },
    "epoch_seconds": {"spec": "spec", "utilisation": "frac_open", "precision": "choice"},
    "get_model": {"name": "choice"},
    "NamedModel": {
        "family": "choice",
        "n_params": "count",
        "layers": "count",
        "hidden": "count",
        "heads": "count",
        "seq_len": "count",
        "image_size": "count",
        "forward_flops": "pos",
    },
    "plan_training": {
        # a name or an int; model="GPT-9" and model=-1 are in tests/test_chooser.py
        "model": [True, 2.5, NAN, None, ["BERT-base"]],
        "batch_size": "count",
        "seq_len": "count",
        "image_size": "count",
        "samples_per_epoch": "count",
        "utilisation": "frac_open",
        "price_per_hour": "pos",
        "specs": [["T4", 42], 42],
        "activations_bytes": "count0",
        "headroom": "frac_open",
    },
    "estimate_training_plan": {
        "model": [True, 2.5, NAN, None, ["ResNet-50"]],
        "batch_size": "count",
        "seq_len": "count",
        "image_size": "count",
        "samples_per_epoch": "count",
        "utilisation": "frac_open",
        "price_per_hour": "pos",
        "specs": [["T4", 42], 42],
        "activations_bytes": "count0",
        "headroom": "frac_open",
    },
    "run_cost": {"price_per_hour": "pos", "n_gpus": "count"},
    "training_flops_per_sample": {
        # a name or a number; unknown names and bad numbers are in tests/test_training_time.py
        "model": [True, None, ["BERT-base"]],
        "seq_len": "count",
        "image_size": "count",
    },
    "training_flops_per_token": {
        "n_params": "pos",
        "layers": "count",
        "hidden": "count",
        "seq_len": "count",
    },
    "training_precision": {"spec": "spec"},
    "transformer_activation_bytes": {
        k: "count" for k in ("layers", "hidden", "heads", "seq_len", "batch_size")
    },
    "DeviceOption": {"spec": [42, "T4"], "fits": ["yes"], "epoch_s": "nonneg", "cost": "nonneg"},
    "ExamplePrice": {"spec_name": "spec", "low": "pos", "high": "pos"},
    "TrainingPlan": {
        "batch_size": "count",
        "samples_per_epoch": "count",
        "utilisation": "frac_open",
        "headroom": "frac_open",
        "n_params": "count",
        "flops_per_sample": "pos",
        "price_per_hour": "pos",
        "options": [42, ["T4"]],
    },
    "resnet_training_job": {
        "forward_flops_per_image": "pos",
        "images": "count",
        "epochs": "count",
        "backward_factor": "pos",
        "batch_size": "count",
        "n_params": "pos",
        "name": "text",
    },
    "transformer_training_job": {
        "model": [True, None, ["BERT-base"]],  # the rest: tests/test_training_time.py
        "n_tokens": "pos",
        "layers": "count",
        "hidden": "count",
        "seq_len": "count",
        "embedding_params": "nonneg",
        "steps": "count",
        "name": "text",
    },
    "time_to_train": {
        "job": [42],
        "spec": "spec",
        "n_gpus": "count",
        "precision": "choice",
        "utilisation": "frac_open",
        "link": "link",
        "overlap": "frac",
        "assumptions": [42, "one string", ["a sentence", 42]],
    },
    "TimeToTrain": {
        "job": [42],
        "spec": [42, "T4"],
        "n_gpus": "count",
        "precision": "choice",
        "peak_flops": "pos",
        "utilisation": "frac_open",
        "time_s": "nonneg",
        "comm_share": "frac",
        "overlap": "frac",
        "assumptions": [42, "one string", ["a sentence", 42]],
    },
    "TrainingJob": {"flops": "nonneg", "n_params": "pos", "steps": "count"},
    "scaling_estimate": {
        "model": [True, None, ["BERT-base"]],  # the rest: tests/test_training_time.py
        "spec": "spec",
        "n_gpus": "count",
        "link": "link",
        "tokens_per_gpu": "pos",
        "precision": "choice",
        "utilisation": "frac_open",
        "overlap": "frac",
    },
    "ScalingEstimate": {"tokens_per_gpu": "pos", "prediction": [42]},
    "plot_extrapolation": {
        "measured": [{"here": "1"}, {"here": True}, {1: 10.0}, 42],
        "predictions": [{"A100": "1"}, 42],
        "assumptions": [42],
        "published": [{"x": "1"}, 42],
        "title": "text",
    },
    "activation_bytes": {"model": [42]},
    "estimate_training_memory": {"n_params": "count"},
    "estimate_step_memory": {"model": [42], "foreach": ["yes", 1]},
    "optimizer_temporaries_bytes": {
        "param_sizes": [42, [], [0], ["16"], [True]],
        "foreach": ["yes", 1],
    },
    "gpus_that_fit": {"estimate": [42], "headroom": "frac_open"},
    "measure_training_memory": {"model": [42]},
    "memory_calculator": {"n_params": "count", "batch_size": "count"},
    "memory_report": {"estimate": [42], "headroom": "frac_open"},
    "parallelism_calculator": {
        "n_params": "pos",
        "layers": "count",
        "hidden": "count",
        "seq_len": "count",
        "n_gpus": "count",
        "spec": "spec",
        "node_link": "link",
        "network": "link",
    },  # fmt: skip
    "run_bench": {"notes": "text"},
    "validate_report": {"report": [42, "x", ["x"], None]},
    "roofline_explorer": {"spec": "spec", "intensity": "pos"},
    "scaling_calculator": {
        "n_params": "pos",
        "spec": "spec",
        "n_gpus": "count",
        "link": "link",
        "tokens_per_gpu": "pos",
        "precision": "choice",
        "utilisation": "frac_open",
        "overlap": "frac",
    },
    "DeviceSpec": {
        "year": "count",
        "memory_bytes": "pos",
        "memory_bandwidth": "pos",
        # bad figures ({"fp32": -1.0}, {"int4": 1.0}) are in tests/test_specs.py
        "peak_flops": [{"fp32": "1e12"}, {"fp32": True}, {16: 1.0}, ["fp32"], 42],
        "tdp": "pos",
        "interconnect_bandwidth": "pos",
        "interconnect_direction": "choice",
        "sm_count": "count",
        "launch_price_usd": "pos",
    },
    "find_spec": {"device_name": "text"},
    "faster_beyond_noise": {
        "before": [1.0, None, "fast"],
        "after": [1.0, None, "fast"],
        "alpha": "frac",
    },
    "sm_architecture": {"spec": "spec"},
    "SmArchitecture": {"l1_shared_per_sm_bytes": "count"},
    "kv_cache_bytes": {
        p: "count" for p in ("layers", "heads", "head_dim", "seq_len", "batch_size")
    },
    "model_kv_cache_bytes": {"seq_len": "count", "batch_size": "count"},
    "decode_estimate": {"spec": "spec", "n_params": "pos", "batch_size": "count"},
    "DecodeEstimate": {"batch_size": "count", "n_bytes": "pos", "step_s": "pos"},
    "generation_timing": {"start_s": "real"},
    "greedy_agreement": {"logits_at": None, "tolerance": "frac"},
    "GenerationTiming": {"n_tokens": "count"},
    "GreedyAgreement": {
        "n_tokens": "count",
        "first_difference": "count0",  # None too, when the tokens are the same
        "gap": "nonneg",  # at most 2; None when the tokens are the same
        "tolerance": "frac",
    },
    "get_spec": {"name": "spec"},
    "train": {
        "model": [42],
        "epochs": "count",
        "accumulation_steps": "count",
        "max_steps": "count",
        "device": "device",
        "precision": "choice",
        "warmup_steps": "count0",
        "optimizer": [42],
        "batches": [42, "3"],  # a str is iterable, but its characters are not batches
    },
    # NaN, infinite and negative losses are valid records (a diverging run, a negative
    # log-likelihood), so only the type of the list and its elements is checked.
    "TrainStats": {"time_s": "nonneg", "losses": [[True, 0.5], ["8", 0.5], [None], 8, "8"]},
}


def _infer(name: str, value, record: bool):
    """The kind of a parameter from its valid value, or None where it cannot be told."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "count0"
    if isinstance(value, float):
        return "nonneg"
    if isinstance(value, str):
        return "text" if record or name in FREE_TEXT else "choice"
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return "seq"
    return None


# --------------------------------------------------------------------------- the cases


def _callables() -> dict[str, object]:
    return {n: v for n, v in PUBLIC.items() if not isinstance(v, type(gl))}


def _baseline(name: str):
    """The valid call's arguments, bound to the callable's signature (built afresh: some
    hold objects a call may change, such as a model, an optimizer or a figure)."""
    fn = PUBLIC[name]
    args, kwargs = BASELINES[name]()
    return inspect.signature(fn).bind(*args, **kwargs)


def _params(name: str) -> dict[str, object]:
    """Parameter -> kind (a FIXED key or a list of bad values) for one callable."""
    fn = PUBLIC[name]
    record = inspect.isclass(fn) and dataclasses.is_dataclass(fn)
    bound = _baseline(name)
    overrides = KINDS.get(name, {})
    kinds = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name in overrides:
            kind = overrides[param.name]
        else:
            value = bound.arguments.get(param.name, param.default)
            value = None if value is inspect.Parameter.empty else value
            kind = _infer(param.name, value, record)
        if kind is not None:
            kinds[param.name] = kind
    return kinds


def _cases() -> list:
    cases = []
    for name in sorted(_callables(), key=lambda n: (n.lower(), n)):
        if name in EXCLUDED or name not in BASELINES:
            continue
        for param, kind in _params(name).items():
            cases.append(pytest.param(name, param, kind, id=f"{name}-{param}"))
    return cases


def _seq_bad_values(valid) -> list:
    """A sequence of numbers made bad: one element bad, or not a sequence at all."""
    items = list(valid)
    bad = [[b] + items[1:] for b in (NAN, INF, -1.0, True, "8")]
    return [*bad, 8, "8"]


def _fixed(kind, valid) -> list:
    if isinstance(kind, list):
        return kind
    if kind == "seq":
        return _seq_bad_values(valid)
    return FIXED[kind]


class _TookTooLong(BaseException):
    """Raised in a call that ran past CALL_LIMIT_S (BaseException: no ``except`` eats it)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    def stop(signum, frame):
        raise _TookTooLong

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_NUMBER_KINDS = ("pos", "nonneg", "real", "frac", "frac_open")
_COUNT_KINDS = ("count", "count0", "int")
_NAME_KINDS = ("choice", "spec", "link", "device", "path", "text")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _expected_error(kind, bad) -> type[Exception]:
    """TypeError for a bad value of the wrong type for ``kind``, ValueError otherwise."""
    if isinstance(kind, list) or kind == "seq":  # a sequence of numbers
        if not isinstance(bad, (list, tuple)):
            return TypeError
        return ValueError if all(_is_number(v) for v in bad) else TypeError
    if kind in _COUNT_KINDS:
        return ValueError if _is_number(bad) and isinstance(bad, int) else TypeError
    if kind in _NUMBER_KINDS:
        return ValueError if _is_number(bad) else TypeError
    if kind in _NAME_KINDS:
        return ValueError if isinstance(bad, str) else TypeError
    if kind == "specs":  # a list is the right type; its entries are checked one by one
        if isinstance(bad, (list, tuple)):
            return ValueError if all(isinstance(v, str) for v in bad) else TypeError
        return ValueError if isinstance(bad, str) else TypeError
    raise AssertionError(f"no rule for kind {kind!r}")


def _call(name: str, param: str, bad, kind=None, spec=None):
    """Call ``name`` with its valid arguments but ``param=bad``; return the exception.

    ``spec``, when given, replaces the valid call's ``spec=`` (see ``SPEC_VARIANTS``)."""
    fn = PUBLIC[name]
    with _time_limit(60):  # building the valid arguments (once per value) is not timed
        bound = _baseline(name)
    arguments = dict(bound.arguments)
    if spec is not None:
        arguments["spec"] = spec
    arguments[param] = bad
    call = inspect.BoundArguments(bound.signature, arguments)
    try:
        with _time_limit(CALL_LIMIT_S):
            result = fn(*call.args, **call.kwargs)
            if isinstance(result, contextlib._GeneratorContextManager):
                with result:  # a @contextmanager function checks its arguments on entry
                    pass
    except (ValueError, TypeError) as exc:
        expected = _expected_error(kind, bad)
        if type(exc) is not expected and not (
            expected is ValueError and isinstance(exc, ValueError)
        ):
            pytest.fail(
                f"{name}({param}={bad!r}) raised {type(exc).__name__}: {exc}; a value of "
                f"{'the wrong type' if expected is TypeError else 'the right type'} must "
                f"raise {expected.__name__} (gpulab._checks)"
            )
        return exc
    except _TookTooLong:
        pytest.fail(f"{name}({param}={bad!r}) ran for {CALL_LIMIT_S} s instead of refusing it")
    except Exception as exc:
        pytest.fail(
            f"{name}({param}={bad!r}) raised {type(exc).__name__}: {exc}; "
            "expected a ValueError or TypeError naming the parameter"
        )
    finally:
        plt.close("all")
    pytest.fail(f"{name}({param}={bad!r}) accepted the bad value (returned {result!r:.80})")


def _assert_refused(name: str, param: str, bad, kind, spec=None) -> None:
    exc = _call(name, param, bad, kind, spec)
    # The name as a word of its own ("n=0", "shape=(2.5,)", "times_s[1]=inf"), so that a
    # short name such as "n" is not found inside other words.
    assert re.search(rf"(?<![\w.]){re.escape(param)}(?!\w)", str(exc)), (
        f"{name}({param}={bad!r}) raised {type(exc).__name__} without naming {param!r}: {exc}"
    )


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    """No call here may start a process: torchrun must refuse bad arguments before that."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)


# --------------------------------------------------------------------------- the tests


def test_every_public_callable_has_a_valid_call():
    public = set(_callables())
    missing = sorted(public - set(BASELINES) - set(EXCLUDED))
    stale = sorted((set(BASELINES) | set(EXCLUDED) | set(KINDS)) - public)
    assert not missing, f"public callables without a valid call in BASELINES: {missing}"
    assert not stale, f"BASELINES, EXCLUDED or KINDS name what is no longer public: {stale}"
    for name, overrides in KINDS.items():
        unknown = set(overrides) - set(inspect.signature(PUBLIC[name]).parameters)
        assert not unknown, f"KINDS[{name!r}] names parameters it does not have: {unknown}"


@pytest.mark.parametrize(
    "name", sorted(set(BASELINES) - set(BASELINE_NOT_RUN), key=lambda n: (n.lower(), n))
)
def test_the_valid_call_works(name):
    """Each valid call runs: the bad-value tests change exactly one thing about it."""
    if name not in _callables():
        pytest.skip(f"{name} is not exported (see test_every_public_callable_has_a_valid_call)")
    bound = _baseline(name)
    try:
        result = PUBLIC[name](*bound.args, **bound.kwargs)
        if isinstance(result, contextlib._GeneratorContextManager):
            with result:
                pass
    finally:
        plt.close("all")


@pytest.mark.parametrize("name, param, kind", _cases())
def test_each_fixed_bad_value_is_refused_by_name(name, param, kind):
    for bad in _fixed(kind, _baseline(name).arguments.get(param)):
        _assert_refused(name, param, bad, kind)


#: A second device for calls that take a ``spec=``: bad values must be refused whatever
#: device the call is about, not only from the one baseline (a GPU and a CPU entry, so that
#: checks that depend on the kind of device run both ways).
SPEC_VARIANTS = ("H100 SXM", "Xeon 6980P")


def _spec_cases() -> list:
    cases = []
    for case in _cases():
        name, param, kind = case.values
        bound = _baseline(name)
        if param == "spec" or "spec" not in bound.arguments:
            continue
        for spec in SPEC_VARIANTS:
            arguments = dict(bound.arguments, spec=spec)
            call = inspect.BoundArguments(bound.signature, arguments)
            try:
                with _time_limit(CALL_LIMIT_S):
                    PUBLIC[name](*call.args, **call.kwargs)
            except (ValueError, TypeError):
                continue  # this device does not fit the call (e.g. a CPU for a GPU model)
            finally:
                plt.close("all")
            cases.append(pytest.param(name, param, kind, spec, id=f"{name}-{param}-{spec}"))
    return cases


@pytest.mark.parametrize("name, param, kind, spec", _spec_cases())
def test_each_fixed_bad_value_is_refused_for_another_device(name, param, kind, spec):
    for bad in _fixed(kind, _baseline(name).arguments.get(param)):
        _assert_refused(name, param, bad, kind, spec)


@pytest.mark.parametrize("name, param, kind", _cases())
@settings(
    max_examples=8,
    deadline=None,  # _time_limit bounds each call; a deadline would double-count imports
    derandomize=True,
    database=None,  # nothing written to disk, nothing replayed: every run is the same
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing value is reported
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_bad_values_are_refused_by_name(name, param, kind, data):
    if isinstance(kind, list):
        bad = data.draw(st.sampled_from(kind), label=param)
    elif kind == "seq":
        valid = list(_baseline(name).arguments.get(param) or [1.0])
        element = data.draw(GENERATED["seq"], label=f"{param}[0]")
        bad = [element, *valid[1:]]
    else:
        bad = data.draw(st.one_of(st.sampled_from(FIXED[kind]), GENERATED[kind]), label=param)
    _assert_refused(name, param, bad, kind)
