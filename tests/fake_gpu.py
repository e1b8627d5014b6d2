"""GPU-simulation test mode: make torch report a T4, an A100 or an H100 on a CPU machine.

A pytest plugin (registered in ``tests/conftest.py``). Its fixtures patch the parts of
``torch.cuda`` that gpulab reads to learn what GPU it has, for one test:

* ``fake_gpu``: a function; ``gpu = fake_gpu("T4")`` (or ``"A100"``, ``"H100"``, or a
  :class:`FakeGpu`) makes torch report that GPU and returns it.
* ``any_fake_gpu``: the same, parametrized over the three: a test that takes it runs once
  per GPU.

What torch then reports, as it would on the real card: ``torch.cuda.is_available()``,
``device_count()``, ``current_device()``, ``get_device_name()`` (the name exactly as the
driver gives it), ``get_device_capability()``, ``get_device_properties()`` (``name``,
``major``, ``minor``, ``total_memory``, ``multi_processor_count``),
``is_bf16_supported()`` (torch's own rule: true from compute capability 8.0, and with
``including_emulation=True``, its default, on older GPUs too) and ``torch.version.cuda``.
``torch.cuda.is_initialized()`` is False: nothing has used the GPU. NVML is absent
(``import pynvml`` fails), CuPy is absent unless a wheel name is given (then a stand-in
whose ``RawKernel`` runs the course's one-line probe kernel, or, with ``nvrtc=False``,
fails as CuPy does without its compiler), and no real GPU on the test machine is seen.

What it cannot do: run a kernel on the simulated GPU. Only logic that decides from what
the device reports (sizing, advice, registry lookups, precision support, energy
fallbacks) can be tested this way. On a CPU build of torch a tensor on ``"cuda"`` still
fails ("Torch not compiled with CUDA enabled"), so a test that launches work by mistake
fails loudly; on a machine with a real GPU such work would run there instead, so tests
that use these fixtures must not launch any.

Memory and SM counts are the registry's datasheet figures (``gpulab/data/gpu_specs.csv``,
each row with its source): a real driver reports a little less memory than the datasheet
(``total_memory`` leaves out what the driver reserves). Compute capabilities are NVIDIA's
(https://developer.nvidia.com/cuda-gpus): Turing 7.5, A100 8.0, H100 9.0.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class FakeGpu:
    """One GPU as the CUDA driver describes it, and the registry entry it is."""

    name: str  # torch.cuda.get_device_name(), as the driver reports it
    capability: tuple[int, int]
    total_memory: int  # bytes
    multi_processor_count: int
    registry_name: str

    @property
    def major(self) -> int:
        return self.capability[0]

    @property
    def minor(self) -> int:
        return self.capability[1]


@dataclass(frozen=True)
class _Properties:
    """What ``torch.cuda.get_device_properties`` returns, the fields gpulab reads."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int


def _from_registry(driver_name: str, capability: tuple[int, int], registry_name: str):
    from gpulab.hardware.specs import get_spec

    spec = get_spec(registry_name)
    return FakeGpu(driver_name, capability, int(spec.memory_bytes), spec.sm_count, registry_name)


#: The three GPUs of the simulation, by short name.
GPUS = {
    "T4": _from_registry("Tesla T4", (7, 5), "Tesla T4"),
    "A100": _from_registry("NVIDIA A100-SXM4-80GB", (8, 0), "A100 80GB SXM4"),
    "H100": _from_registry("NVIDIA H100 80GB HBM3", (9, 0), "H100 SXM5 80GB"),
}


#: What CuPy raises at a kernel's first launch where NVRTC cannot be loaded (CuPy 13's words).
NO_NVRTC = (
    "CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object "
    "file: No such file or directory"
)


def _fake_cupy(version: str = "13.3.0", *, nvrtc: bool = True) -> types.ModuleType:
    """A CuPy module that sees a GPU and whose stream synchronizations are counted.

    ``RawKernel`` compiles at the first launch, as CuPy's does, and runs the one kernel the
    course probes with (thread 0 writes 1.0 into its first argument); without ``nvrtc`` the
    launch raises what CuPy raises when NVRTC is missing, while ``is_available()`` still says
    True, as CuPy's does (it loads the driver and runtime, not the compiler).
    """
    import numpy as np

    cupy = types.ModuleType("cupy")
    cupy.__version__ = version
    cupy.is_available = lambda: True
    cupy.zeros = np.zeros
    stream = types.SimpleNamespace(synchronized=0)

    def synchronize():
        stream.synchronized += 1

    class RawKernel:
        launches = 0

        def __init__(self, code: str, name: str) -> None:
            self.code, self.name = code, name

        def __call__(self, grid, block, args) -> None:
            if not nvrtc:
                raise RuntimeError(NO_NVRTC)
            if f"void {self.name}(" not in self.code:
                raise RuntimeError(f"no kernel named {self.name} in the source")
            RawKernel.launches += 1
            args[0][0] = 1.0

    stream.synchronize = synchronize
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    cupy.RawKernel = RawKernel
    return cupy


def install_fake_gpu(
    monkeypatch,
    gpu: str | FakeGpu,
    *,
    n_gpus: int = 1,
    cuda: str = "12.4",
    cupy_package: str | None = None,
    nvrtc: bool = True,
) -> FakeGpu:
    """Patch torch (and NVML, CuPy) for the rest of the test; return the GPU."""
    import torch

    gpu = GPUS[gpu] if isinstance(gpu, str) else gpu

    def index(device=None) -> int:
        i = device.index if isinstance(device, torch.device) else device
        i = 0 if i is None else int(str(i).rpartition(":")[2] or 0)
        if not 0 <= i < n_gpus:
            raise AssertionError(f"fake GPU index {i} asked for; {n_gpus} GPU(s) faked")
        return i

    def properties(device=None) -> _Properties:
        index(device)
        return _Properties(
            gpu.name, gpu.major, gpu.minor, gpu.total_memory, gpu.multi_processor_count
        )

    def name(device=None) -> str:
        return properties(device).name

    def capability(device=None) -> tuple[int, int]:
        index(device)
        return gpu.capability

    def bf16(including_emulation: bool = True) -> bool:
        return gpu.major >= 8 or including_emulation

    patches = {
        "is_available": lambda: True,
        "is_initialized": lambda: False,
        "device_count": lambda: n_gpus,
        "current_device": lambda: 0,
        "get_device_name": name,
        "get_device_capability": capability,
        "get_device_properties": properties,
        "is_bf16_supported": bf16,
    }
    for attr, value in patches.items():
        monkeypatch.setattr(torch.cuda, attr, value)
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    monkeypatch.setattr("gpulab.measure.device._installed_cupy_package", lambda: cupy_package)
    cupy = _fake_cupy(nvrtc=nvrtc) if cupy_package else None
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return gpu


@pytest.fixture
def fake_gpu(monkeypatch):
    """``fake_gpu("T4")`` makes torch report that GPU for this test; returns a FakeGpu."""

    def install(gpu: str | FakeGpu, **kwargs) -> FakeGpu:
        return install_fake_gpu(monkeypatch, gpu, **kwargs)

    return install


@pytest.fixture(params=sorted(GPUS))
def any_fake_gpu(request, monkeypatch) -> FakeGpu:
    """Torch reports a T4, an A100 and an H100 in turn (the test runs once for each)."""
    return install_fake_gpu(monkeypatch, request.param)
