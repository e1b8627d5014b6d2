import pytest

import gpulab as gl


@pytest.mark.parametrize("device, expected", [("cpu", 1), ("cuda", 2), ("cuda:1", 2), ("mps", 3)])
def test_scale_picks_the_value_for_the_device(device, expected):
    assert gl.scale(cpu=1, gpu=2, mps=3, device=device) == expected


def test_mps_falls_back_to_the_cpu_size():
    assert gl.scale(cpu=1, gpu=2, device="mps") == 1


def test_accepts_torch_devices_and_device_info():
    import torch

    assert gl.scale(cpu="small", gpu="big", device=torch.device("cuda", 0)) == "big"
    assert gl.scale(cpu="small", gpu="big", device=gl.DeviceInfo(kind="cpu", name="x")) == "small"


def test_default_device_is_this_machine():
    expected = 2 if gl.best_device().type == "cuda" else 1
    assert gl.scale(cpu=1, gpu=2) == expected


def test_unknown_device_is_a_clear_error():
    with pytest.raises(ValueError, match="device='tpu'"):
        gl.scale(cpu=1, gpu=2, device="tpu")
