import pytest
import torch

import gpulab as gl


@pytest.mark.parametrize("device, expected", [("cpu", 1), ("cuda", 2), ("cuda:1", 2), ("mps", 3)])
def test_scale_picks_the_value_for_the_device(device, expected):
    assert gl.scale(cpu=1, gpu=2, mps=3, device=device) == expected


def test_mps_falls_back_to_the_cpu_size():
    assert gl.scale(cpu=1, gpu=2, device="mps") == 1


def test_accepts_torch_devices_and_device_info():
    assert gl.scale(cpu="small", gpu="big", device=torch.device("cuda", 0)) == "big"
    assert gl.scale(cpu="small", gpu="big", device=torch.device("mps")) == "small"
    assert gl.scale(cpu="small", gpu="big", device=gl.DeviceInfo(kind="cpu", name="x")) == "small"
    assert gl.scale(cpu="small", gpu="big", device=gl.DeviceInfo(kind="cuda", name="T4")) == "big"


def _pretend(monkeypatch, *, cuda: bool, mps: bool) -> None:
    """Make torch report (or not) a CUDA GPU and an Apple GPU, as best_device() sees them."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)


@pytest.mark.parametrize(
    "cuda, mps, expected",
    [
        (True, False, "gpu size"),
        (True, True, "gpu size"),
        (False, True, "mps size"),
        (False, False, "cpu size"),
    ],  # fmt: skip
)
def test_without_a_device_the_best_one_present_decides(monkeypatch, cuda, mps, expected):
    _pretend(monkeypatch, cuda=cuda, mps=mps)
    assert gl.scale(cpu="cpu size", gpu="gpu size", mps="mps size") == expected


def test_an_apple_gpu_without_its_own_value_gets_the_cpu_value(monkeypatch):
    _pretend(monkeypatch, cuda=False, mps=True)
    assert gl.scale(cpu=512, gpu=8192) == 512


def test_values_are_returned_as_they_are_not_copied_or_converted():
    big = [1, 2, 3]
    assert gl.scale(cpu=None, gpu=big, device="cuda") is big
    assert gl.scale(cpu=None, gpu=big, device="cpu") is None


@pytest.mark.parametrize("device", ["tpu", "", "CUDA", "cuda:x", "gpu"])
def test_unknown_device_is_a_clear_error(device):
    with pytest.raises(ValueError, match=r"device=.* is not a device; use 'cpu', 'cuda'"):
        gl.scale(cpu=1, gpu=2, device=device)


@pytest.mark.parametrize("device", [42, 1.5, True, float("nan"), object()])
def test_a_device_of_the_wrong_type_is_a_type_error(device):
    with pytest.raises(TypeError, match=r"device=.* must be a torch.device or a device name"):
        gl.scale(cpu=1, gpu=2, device=device)


def test_cpu_and_gpu_values_are_required():
    with pytest.raises(TypeError, match="gpu"):
        gl.scale(cpu=1)  # type: ignore[call-arg]
