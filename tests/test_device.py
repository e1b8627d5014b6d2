import io
import subprocess
import sys

import pytest

import gpulab as gl
from gpulab.measure import device


def test_detect_device_on_this_machine_is_consistent():
    # What detect_device reports matches what this machine says through other routes: torch's
    # own device calls, /proc/cpuinfo read here, and the CPUs this thread may run on (pinned
    # to one CPU, it must report 1). No margins: these are exact facts about the machine.
    import os
    from pathlib import Path

    import torch

    info = gl.detect_device()
    assert info.kind == gl.best_device().type  # the kind is where labs put their tensors
    assert (info.torch_version, info.torch_cuda) == (torch.__version__, torch.version.cuda)
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
             if line.split(":", 1)[0].strip() == "model name"]  # fmt: skip
    if names:
        assert info.cpu_model == names[0]
    if info.kind == "cuda":
        props = torch.cuda.get_device_properties(0)
        assert (info.name, info.memory_bytes) == (props.name, props.total_memory)
        assert info.n_gpus == torch.cuda.device_count() and info.is_gpu
    else:  # no CUDA: no GPU fields, and the CPU stands in as the device
        assert (info.n_gpus, info.memory_bytes, info.sm_count) == (0, None, None)
        assert info.compute_capability is None
    if info.kind == "cpu":
        assert info.name == info.cpu_model and not info.is_gpu
        assert info.summary() == (
            f"CPU only: {info.cpu_model}, {info.cpu_cores} cores; torch {torch.__version__}"
        )
    if hasattr(os, "sched_setaffinity"):
        allowed = os.sched_getaffinity(0)
        assert info.cpu_cores == len(allowed)
        try:
            os.sched_setaffinity(0, {min(allowed)})
            assert gl.detect_device().cpu_cores == 1
        finally:
            os.sched_setaffinity(0, allowed)


def test_best_device_prefers_cuda_then_mps_then_the_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert gl.best_device() == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert gl.best_device() == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert gl.best_device() == torch.device("cuda")


def test_a_simulated_gpu_is_detected_as_the_driver_reports_it(any_fake_gpu):
    gpu = any_fake_gpu
    info = gl.detect_device()
    assert (info.kind, info.name, info.is_gpu) == ("cuda", gpu.name, True)
    assert info.compute_capability == gpu.capability
    assert (info.memory_bytes, info.sm_count, info.n_gpus) == (
        gpu.total_memory,
        gpu.multi_processor_count,
        1,
    )
    assert info.torch_cuda == "12.4" and info.driver_version is None  # NVML absent
    assert info.problems == ()
    assert gl.best_device().type == "cuda"
    assert info.summary() == f"{gpu.name} (cuda); torch {info.torch_version}"


def test_figures_of_the_simulated_gpus_are_the_registrys(any_fake_gpu):
    spec = gl.get_spec(any_fake_gpu.registry_name)
    assert any_fake_gpu.multi_processor_count == spec.sm_count  # 40, 108, 132
    assert gl.find_spec(any_fake_gpu.name) == spec


def test_labs_size_their_problems_for_the_gpu(any_fake_gpu):
    assert gl.scale(cpu=512, gpu=8192) == 8192


def test_several_gpus_are_counted(fake_gpu):
    fake_gpu("A100", n_gpus=8)
    assert gl.detect_device().n_gpus == 8


def test_cpu_only_advice_points_to_colab_gpu():
    tips = gl.measure.device.advice(gl.DeviceInfo(kind="cpu", name="x", torch_version="2.4.0"))
    assert len(tips) == 1 and "No GPU found" in tips[0] and "Colab" in tips[0]
    colab = gl.measure.device.advice(
        gl.DeviceInfo(kind="cpu", name="x", torch_version="2.4.0", in_colab=True)
    )
    assert "Runtime > Change runtime type" in colab[0]


def test_cupy_wheel_for_the_wrong_cuda_major_is_flagged_with_the_fix():
    info = gl.DeviceInfo(
        kind="cuda",
        name="Tesla T4",
        torch_version="2.6.0+cu124",
        torch_cuda="12.4",
        cupy_package="cupy-cuda11x",
        cupy_version="13.3.0",
    )
    tips = gl.measure.device.advice(info)
    assert any("pip uninstall -y cupy-cuda11x && pip install cupy-cuda12x" in t for t in tips)


def test_matching_cupy_wheel_gives_no_advice():
    info = gl.DeviceInfo(
        kind="cuda",
        name="Tesla T4",
        torch_version="2.6.0+cu124",
        torch_cuda="12.4",
        cupy_package="cupy-cuda12x",
        cupy_version="13.3.0",
        cupy_usable=True,
    )
    assert gl.measure.device.advice(info) == []


def test_gpu_without_cupy_suggests_the_matching_wheel():
    info = gl.DeviceInfo(kind="cuda", name="H100", torch_version="2.9", torch_cuda="13.0")
    assert gl.measure.device.advice(info) == [
        "CuPy is not installed (the labs' raw-kernel cells need it): pip install cupy-cuda13x"
    ]


def test_missing_torch_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(device, "_probe_torch", lambda: {"problems": ("torch is not installed",)})
    info = gl.detect_device()
    assert info.kind == "cpu" and info.torch_version is None
    out = io.StringIO()
    gl.doctor(info, file=out)
    assert "torch is not installed" in out.getvalue()
    assert "pip install torch" in out.getvalue()


def test_broken_cupy_import_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(device, "_installed_cupy_package", lambda: "cupy-cuda12x")
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy now raises ImportError
    info = gl.detect_device()
    assert info.cupy_package == "cupy-cuda12x" and not info.cupy_usable
    assert any("fails to import" in p for p in info.problems)


def test_doctor_report_lists_every_field():
    out = io.StringIO()
    info = gl.DeviceInfo(
        kind="cuda",
        name="NVIDIA H200",
        compute_capability=(9, 0),
        memory_bytes=141 * 2**30,
        sm_count=132,
        n_gpus=1,
        cpu_model="Xeon",
        cpu_cores=16,
        torch_version="2.9.0",
        torch_cuda="12.8",
        cupy_package="cupy-cuda12x",
        cupy_version="13.6.0",
        cupy_usable=True,
        driver_version="570.1",
    )
    gl.doctor(info, file=out)
    text = out.getvalue()
    for expected in (
        "cuda: NVIDIA H200",
        "9.0",
        "141 GiB",
        "132",
        "Xeon, 16 cores",
        "2.9.0 (CUDA 12.8)",
        "13.6.0 (cupy-cuda12x, usable)",
        "570.1",
        "Everything the labs need is in place.",
    ):
        assert expected in text


def test_summary_line():
    cpu = gl.DeviceInfo(kind="cpu", name="EPYC", cpu_model="EPYC", cpu_cores=2, torch_version="2.4")
    assert cpu.summary() == "CPU only: EPYC, 2 cores; torch 2.4"


def test_python_m_gpulab_doctor_runs_on_this_machine():
    proc = subprocess.run(
        [sys.executable, "-m", "gpulab", "doctor"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    info = gl.detect_device()  # the same machine, seen from this process
    out = proc.stdout
    assert out.startswith("gpulab doctor\n") and f"Device              {info.kind}: " in out
    tips = gl.measure.device.advice(info)
    if tips:  # e.g. no GPU here: advice, one line per tip
        assert "\nAdvice:\n" in out and all(f"  - {tip}" in out for tip in tips)
    else:  # a healthy GPU machine has nothing to advise
        assert "Advice" not in out and out.rstrip().endswith(
            "Everything the labs need is in place."
        )


def test_doctor_on_a_healthy_gpu_machine_gives_no_advice(fake_gpu):
    fake_gpu("H100", cuda="12.4", cupy_package="cupy-cuda12x")
    out = io.StringIO()
    info = gl.doctor(file=out)
    text = out.getvalue()
    assert info.cupy_usable and info.problems == ()
    assert "cuda: NVIDIA H100 80GB HBM3" in text and "74.5 GiB" in text
    assert "Advice" not in text and text.endswith("Everything the labs need is in place.\n")


def test_doctor_on_a_gpu_without_cupy_advises_the_wheel_for_torchs_cuda(fake_gpu):
    fake_gpu("T4", cuda="12.4")
    out = io.StringIO()
    gl.doctor(file=out)
    assert "Advice:\n  - CuPy is not installed" in out.getvalue()
    assert "pip install cupy-cuda12x" in out.getvalue()


def test_doctor_flags_a_cupy_wheel_for_another_cuda(fake_gpu):
    fake_gpu("A100", cuda="11.8", cupy_package="cupy-cuda12x")
    tips = gl.measure.device.advice(gl.detect_device())
    assert tips == [
        "CuPy wheel cupy-cuda12x is built for CUDA 12 but torch uses CUDA 11.8: "
        "pip uninstall -y cupy-cuda12x && pip install cupy-cuda11x"
    ]


def test_advice_and_doctor_refuse_what_is_not_a_device_info():
    with pytest.raises(TypeError, match="info='cuda' must be a DeviceInfo"):
        gl.measure.device.advice("cuda")
    with pytest.raises(TypeError, match="info='cpu' must be a DeviceInfo"):
        gl.doctor("cpu")
    with pytest.raises(TypeError, match="file=3 must be a writable"):
        gl.doctor(gl.DeviceInfo(kind="cpu", name="x"), file=3)


@pytest.mark.parametrize(
    "field, error",
    [
        ({"kind": "tpu"}, ValueError),
        ({"kind": 3}, TypeError),
        ({"compute_capability": (8,)}, ValueError),
        ({"compute_capability": (8, -1)}, ValueError),
        ({"compute_capability": (8.5, 0)}, ValueError),
        ({"compute_capability": "8.0"}, TypeError),
        ({"compute_capability": (8, "0")}, TypeError),
        ({"memory_bytes": 0}, ValueError),
        ({"n_gpus": -1}, ValueError),
        ({"n_gpus": 1.0}, TypeError),
        ({"in_colab": 1}, TypeError),
        ({"problems": "x"}, TypeError),
        ({"problems": ("ok", 1)}, TypeError),
    ],
)
def test_device_info_refuses_bad_fields_by_name(field, error):
    (name,) = field
    with pytest.raises(error, match=f"{name}="):
        gl.DeviceInfo(**{"kind": "cpu", "name": "x", **field})


@pytest.mark.cuda
def test_cuda_fields_are_filled_on_a_gpu():
    info = gl.detect_device()
    assert info.kind == "cuda" and info.memory_bytes > 2**30 and info.sm_count > 0
    assert info.compute_capability[0] >= 3


def test_cupy_that_sees_a_gpu_but_cannot_compile_is_not_usable_and_says_what_to_install(
    fake_gpu,
):
    """``cupy.is_available()`` is True without NVRTC; a RawKernel cell would then fail."""
    from fake_gpu import NO_NVRTC

    fake_gpu("T4", cuda="12.4", cupy_package="cupy-cuda12x", nvrtc=False)
    info = gl.detect_device()
    assert info.kind == "cuda" and not info.cupy_usable
    reason = info.cupy_missing_reason()
    assert reason.startswith("CuPy sees a GPU but cannot compile a kernel on it")
    assert NO_NVRTC.split(":")[0] in reason and 'pip install -U "cupy-cuda12x[ctk]"' in reason
    out = io.StringIO()
    gl.doctor(info, file=out)
    assert "(cupy-cuda12x, not usable: see the advice below)" in out.getvalue()
    assert f"  - {reason}" in out.getvalue()


def test_cupy_compile_probe_runs_once_per_cupy_and_passes_where_nvrtc_loads(fake_gpu):
    fake_gpu("H100", cuda="12.4", cupy_package="cupy-cuda12x")
    cupy = sys.modules["cupy"]
    first, second = gl.detect_device(), gl.detect_device()
    assert first.cupy_usable and second.cupy_usable and first.cupy_missing_reason() == ""
    assert cupy.RawKernel.launches == 1  # cached: the second detect_device did not compile


def test_cupy_missing_reason_without_cupy_or_without_a_gpu():
    assert gl.DeviceInfo(kind="cpu", name="x").cupy_missing_reason() == "CuPy is not installed"
    no_gpu = gl.DeviceInfo(kind="cpu", name="x", cupy_package="cupy-cuda12x")
    assert no_gpu.cupy_missing_reason() == "CuPy sees no CUDA GPU here"


def test_cache_bytes_of_a_gpu_comes_from_the_driver_or_the_registrys_memory_ladder(fake_gpu):
    from gpulab.hardware.memory_ladder import memory_ladder
    from gpulab.measure import caches

    assert caches.cache_bytes("cpu") is None
    fake_gpu("H100")  # the fake driver reports no L2 size: the registry's figure, with a source
    (l2,) = [lv for lv in memory_ladder("H100 SXM") if lv.level == "L2 cache"]
    assert caches.cache_bytes("cuda") == l2.capacity_bytes == 50_000_000
    fake_gpu("T4")  # no figure in the ladder for it
    assert caches.cache_bytes("cuda") is None


def test_cache_bytes_prefers_what_the_driver_reports(fake_gpu, monkeypatch):
    import torch

    from gpulab.measure import caches

    fake_gpu("T4")
    props = torch.cuda.get_device_properties(0)
    reported = type("Props", (), {"name": props.name, "L2_cache_size": 4 * 2**20})()
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: reported)
    assert caches.cache_bytes("cuda") == 4 * 2**20
