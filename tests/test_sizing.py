import ast
import json
from pathlib import Path

import pytest
import torch

import gpulab as gl
from gpulab.measure.device import DeviceInfo, scale_to_memory
from tests.fake_gpu import FakeGpu


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


# ---- scale_to_memory: GPU problem sizes cut to the GPU's memory

GiB = 2**30
MEMORY_LAB = Path(__file__).resolve().parents[1] / "notebooks" / "memory_bandwidth_lab.ipynb"


def test_a_gpu_with_room_gets_the_gpu_size(any_fake_gpu):
    # 6 arrays of 1 GiB: 6.4 GB, within half of a T4's 16 GB and of an A100's or H100's 80 GB
    assert scale_to_memory(cpu=2**25, gpu=2**28, n_arrays=6, device="cuda") == 2**28


def test_the_size_is_halved_until_the_arrays_fit_in_the_budget(fake_gpu):
    gpu = fake_gpu(FakeGpu("NVIDIA GeForce RTX 3070", (8, 6), 8 * GiB, 46, "RTX 3070"))
    n = scale_to_memory(cpu=2**25, gpu=2**28, n_arrays=6, device="cuda")
    assert n == 2**27  # 6 x 512 MiB = 3 GiB <= 4 GiB < 6 x 1 GiB
    assert 6 * 4 * n <= 0.5 * gpu.total_memory < 6 * 4 * (2 * n)
    assert scale_to_memory(cpu=1, gpu=2**28, n_arrays=6, fraction=0.25, device="cuda") == 2**26


def test_the_memory_can_come_from_a_device_info():
    info = DeviceInfo(kind="cuda", name="Tesla T4", memory_bytes=16 * 10**9)
    assert scale_to_memory(cpu=1, gpu=2**28, n_arrays=9, device=info) == 2**27
    assert scale_to_memory(cpu=1, gpu=2**28, n_arrays=9, element_bytes=2, device=info) == 2**28
    assert scale_to_memory(cpu=7, gpu=2**28, n_arrays=9, device=DeviceInfo("cpu", "x")) == 7
    with pytest.raises(ValueError, match="memory_bytes=None"):
        scale_to_memory(cpu=1, gpu=2, n_arrays=1, device=DeviceInfo(kind="cuda", name="T4"))


def test_a_cpu_and_an_apple_gpu_get_the_cpu_size():
    assert scale_to_memory(cpu=2**25, gpu=2**28, n_arrays=6, device="cpu") == 2**25
    assert scale_to_memory(cpu=2**25, gpu=2**28, n_arrays=6, device="mps") == 2**25


def test_without_a_gpu_cuda_cannot_be_sized(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        scale_to_memory(cpu=1, gpu=2, n_arrays=1, device="cuda")


def test_arrays_that_cannot_fit_at_all_are_refused():
    info = DeviceInfo(kind="cuda", name="tiny", memory_bytes=1000)
    with pytest.raises(ValueError, match="n_arrays=1000 arrays"):
        scale_to_memory(cpu=1, gpu=2**10, n_arrays=1000, device=info)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_arrays=0), ValueError, "n_arrays=0"),
        (dict(n_arrays=2.0), TypeError, "n_arrays=2.0"),
        (dict(gpu=-1), ValueError, "gpu=-1"),
        (dict(cpu="8"), TypeError, "cpu='8'"),
        (dict(element_bytes=0), ValueError, "element_bytes=0"),
        (dict(fraction=0), ValueError, "fraction=0"),
        (dict(fraction=1.5), ValueError, "fraction=1.5"),
        (dict(fraction="half"), TypeError, "fraction='half'"),
        (dict(device="tpu"), ValueError, "device='tpu'"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    args = dict(cpu=2**10, gpu=2**20, n_arrays=3, device="cpu") | kwargs
    with pytest.raises(error, match=match):
        scale_to_memory(**args)


def _constant(node: ast.expr):
    """The value of a constant expression such as ``2**28`` (nothing else is evaluated)."""
    if not all(isinstance(n, (ast.Constant, ast.BinOp, ast.operator)) for n in ast.walk(node)):
        raise AssertionError(f"not a constant: {ast.unparse(node)}")
    return eval(compile(ast.Expression(node), "<lab>", "eval"), {"__builtins__": {}})


def _lab_sizing_calls() -> list[dict]:
    """The keyword arguments of each scale_to_memory call in the memory-bandwidth lab."""
    nb = json.loads(MEMORY_LAB.read_text(encoding="utf-8"))
    calls = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "scale_to_memory":
                calls.append({k.arg: _constant(k.value) for k in node.keywords
                              if k.arg != "device"})  # fmt: skip
    return calls


#: What the memory-bandwidth lab allocates on a GPU besides its arrays of the sizes it asks
#: scale_to_memory for: gl.measure_ceilings' 1 GiB copy (source and destination) and 8192 x
#: 8192 matmul (three operands), the largest fixed allocation it makes. The CUDA context and
#: the allocator's rounding take the rest of the margin.
LAB_FIXED_BYTES = 2 * GiB + 3 * 4 * 8192**2


@pytest.mark.parametrize("name", ["T4", "H100"])
def test_the_memory_bandwidth_lab_fits_the_simulated_gpu_with_margin(fake_gpu, name):
    gpu = fake_gpu(name)
    calls = _lab_sizing_calls()
    assert [c["n_arrays"] for c in calls] == [3, 6], "section 1's arrays, then sections 3-4's"
    for call in calls:
        n = scale_to_memory(**call, device="cuda")
        live = call["n_arrays"] * n * call.get("element_bytes", 4)
        assert live + LAB_FIXED_BYTES <= 0.75 * gpu.total_memory, (call, n)
        assert n == call["gpu"], "a T4 has room for the full GPU size: the lesson stays the same"


def test_the_memory_bandwidth_lab_sizes_its_large_gpu_arrays_by_memory():
    sources = "".join("".join(c["source"]) for c in json.loads(MEMORY_LAB.read_text())["cells"])
    assert "gpu=2**28" in sources
    assert sources.count("gpu=2**28") == sources.count("scale_to_memory(cpu=")
