import io
import subprocess
import sys

import pytest

import gpulab as gl
from gpulab import device


def test_detect_device_on_this_machine_is_consistent():
    info = gl.detect_device()
    assert info.kind in ("cuda", "mps", "cpu")
    assert info.cpu_cores == gl.cpu_cores() and info.cpu_model
    import torch

    assert info.torch_version == torch.__version__
    assert (info.kind == "cuda") == torch.cuda.is_available()
    if info.kind == "cpu":
        assert info.gpu_count == 0 and info.memory_bytes is None and not info.is_gpu


def test_best_device_agrees_with_detect_device():
    assert gl.best_device().type == gl.detect_device().kind


def test_cpu_only_advice_points_to_colab_gpu():
    tips = gl.advice(gl.DeviceInfo(kind="cpu", name="x", torch_version="2.4.0"))
    assert len(tips) == 1 and "No GPU found" in tips[0] and "Colab" in tips[0]
    colab = gl.advice(gl.DeviceInfo(kind="cpu", name="x", torch_version="2.4.0", in_colab=True))
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
    tips = gl.advice(info)
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
    assert gl.advice(info) == []


def test_gpu_without_cupy_suggests_the_matching_wheel():
    info = gl.DeviceInfo(kind="cuda", name="H100", torch_version="2.9", torch_cuda="13.0")
    assert gl.advice(info) == [
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
        gpu_count=1,
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
        "141.0 GiB",
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
    assert "gpulab doctor" in proc.stdout and "Device" in proc.stdout and "Advice" in proc.stdout


@pytest.mark.cuda
def test_cuda_fields_are_filled_on_a_gpu():
    info = gl.detect_device()
    assert info.kind == "cuda" and info.memory_bytes > 2**30 and info.sm_count > 0
    assert info.compute_capability[0] >= 3
