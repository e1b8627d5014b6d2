"""The energy meter: the TDP estimate on this CPU, and NVML's paths through a fake backend."""

import threading
import time

import numpy as np
import pytest
from fake_gpu import FakeGpu

import gpulab as gl


class FakeNvmlError(Exception):
    """Like pynvml's NVMLError: the NVML return code is on ``.value``."""

    def __init__(self, value, text="fake NVML error"):
        super().__init__(text)
        self.value = value


NOT_SUPPORTED, NO_PERMISSION, LIBRARY_NOT_FOUND = 3, 4, 12


@pytest.fixture(autouse=True)
def _cuda_numbers_gpus_as_nvml_does(monkeypatch):
    """The fake NVML's GPU i is CUDA's GPU i unless a test says otherwise (a machine running
    the tests may set CUDA_VISIBLE_DEVICES for its own GPUs)."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)


class FakeNvml:
    """A stand-in for the pynvml module: a counter in mJ, a power reading in mW."""

    def __init__(self, *, counter=None, power=None, init_error=None, power_fails_after=None):
        self.counter = counter  # list of successive mJ readings, or an error code
        self.power = power  # callable t -> mW, or an error code
        self.init_error = init_error
        self.power_fails_after = power_fails_after
        self.power_reads = 0
        self.shutdowns = 0

    def nvmlInit(self):
        if self.init_error is not None:
            raise FakeNvmlError(self.init_error, "NVML Shared Library Not Found")

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("handle", index)

    def nvmlDeviceGetName(self, handle):
        return b"Fake GPU"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if isinstance(self.counter, int):
            raise FakeNvmlError(self.counter, "Not Supported")
        return self.counter.pop(0)

    def nvmlDeviceGetPowerUsage(self, handle):
        if isinstance(self.power, int):
            raise FakeNvmlError(self.power, "Insufficient Permissions")
        self.power_reads += 1
        if self.power_fails_after is not None and self.power_reads > self.power_fails_after:
            raise FakeNvmlError(999, "GPU is lost")
        return self.power(time.perf_counter())


def test_cpu_estimate_is_assumed_power_times_time_and_says_so(capsys):
    watts_per_core, basis = gl.measure.energy.cpu_watts_per_core()
    # Registry: Xeon 8380 270 W / 40 cores, EPYC 7763 280 / 64, Xeon 8480+ 350 / 56,
    # EPYC 9755 500 / 128, Xeon 6980P 500 / 128.
    per_core = [270 / 40, 280 / 64, 350 / 56, 500 / 128, 500 / 128]
    assert watts_per_core == pytest.approx(np.median(per_core)) == pytest.approx(280 / 64)
    assert "Xeon Platinum 8380 6.75" in basis
    with gl.measure_energy("cpu", cores=2) as m:
        time.sleep(0.05)
    printed = capsys.readouterr().out
    assert "ESTIMATE, not a measurement" in printed and "2 cores × 4.38 W/core" in printed
    assert "exposes no energy counter" in printed
    assert m.method == "estimate-tdp" and m.is_estimate
    assert m.time_s >= 0.05
    assert m.joules == pytest.approx(2 * 280 / 64 * m.time_s)
    assert m.average_watts == pytest.approx(2 * 280 / 64)
    assert str(m).startswith("ESTIMATE (rated power × time, not measured): ")
    assert f"over {gl.format_duration(m.time_s)} (average 8.75 W) on this CPU" in str(m)


def test_estimate_from_a_named_registry_device():
    assert gl.measure.energy.assumed_power("cpu", spec="Xeon 8380", cores=4).watts == pytest.approx(
        27.0
    )
    assert (
        gl.measure.energy.assumed_power("cpu", spec="Xeon 8380", cores=400).watts == 270.0
    )  # whole socket
    gpu = gl.measure.energy.assumed_power("cuda", spec="A100 80GB")
    assert gpu.watts == 400 and "nvidia.com" in gpu.basis
    with gl.measure_energy("cpu", spec="EPYC 7763", cores=64, verbose=False) as m:
        pass
    assert m.average_watts == pytest.approx(280) and m.device_name == "AMD EPYC 7763"


def test_energy_counter_is_read_before_and_after():
    fake = FakeNvml(counter=[1_000_000, 1_250_000])  # mJ
    with gl.measure_energy("cuda", nvml=fake, verbose=False) as m:
        time.sleep(0.01)
    assert m.method == "nvml-energy-counter" and not m.is_estimate
    assert m.joules == pytest.approx(250.0)
    assert m.average_watts == pytest.approx(250.0 / m.time_s)
    assert m.device_name == "Fake GPU" and fake.shutdowns == 1
    assert str(m).startswith("Measured with NVML (energy counter): 250 J")


def test_without_a_counter_power_is_sampled_in_a_thread_and_integrated():
    fake = FakeNvml(counter=NOT_SUPPORTED, power=lambda t: 150_000)  # 150 W, constant
    with gl.measure_energy("cuda:0", nvml=fake, interval_s=0.01, verbose=False) as m:
        time.sleep(0.1)
    assert m.method == "nvml-power-sampling" and not m.is_estimate
    assert len(m.samples) >= 4  # first, several in the thread, last
    assert m.joules == pytest.approx(150.0 * m.time_s)  # trapezoid is exact for a constant
    assert "does not support read the energy counter" in m.fallback_reasons[0]
    assert not m._thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "gpulab-power"]
    assert fake.shutdowns == 1


def test_sampled_power_is_integrated_with_the_trapezoid_rule():
    start = time.perf_counter()
    fake = FakeNvml(counter=NOT_SUPPORTED, power=lambda t: 1000 * (100 + 500 * (t - start)))
    with gl.measure_energy("cuda", nvml=fake, interval_s=0.01, verbose=False) as m:
        time.sleep(0.08)
    times, watts = np.array(m.samples).T
    assert m.joules == pytest.approx(np.trapezoid(watts, times))
    assert watts[-1] > watts[0]  # the ramp was seen


def test_nvml_missing_falls_back_to_an_estimate_with_a_sentence(capsys):
    fake = FakeNvml(init_error=LIBRARY_NOT_FOUND)
    with gl.measure_energy("cuda", nvml=fake, spec="T4") as m:
        pass
    printed = capsys.readouterr().out
    assert "NVML is not available" in printed and "no NVIDIA driver" in printed
    assert m.method == "estimate-tdp" and m.average_watts == pytest.approx(70.0)


def test_no_permission_falls_back_to_an_estimate_naming_the_reason(capsys):
    fake = FakeNvml(counter=NO_PERMISSION, power=NO_PERMISSION)
    with gl.measure_energy("cuda", nvml=fake, spec="L4") as m:
        pass
    printed = capsys.readouterr().out
    assert "no permission" in printed and "ESTIMATE" in printed
    assert m.is_estimate and m.average_watts == pytest.approx(72.0)
    assert fake.shutdowns == 1


def test_pynvml_not_installed_is_explained(monkeypatch, capsys):
    monkeypatch.setattr("gpulab.measure.energy._default_nvml", lambda: None)
    with gl.measure_energy("cuda", spec="V100") as m:
        pass
    assert "pip install nvidia-ml-py" in capsys.readouterr().out
    assert m.is_estimate and m.average_watts == 300


def test_a_gpu_not_in_the_registry_without_nvml_asks_for_a_spec(fake_gpu):
    # A real card the registry lacks: the 40 GB PCIe A100 (only the SXM4 module is listed).
    # Its figures are NVIDIA's (capability 8.0, 40 GB, 108 SMs); torch reports it, whatever
    # GPU this machine has.
    fake_gpu(FakeGpu("NVIDIA A100-PCIE-40GB", (8, 0), 40 * 10**9, 108, registry_name=""))
    fake = FakeNvml(init_error=LIBRARY_NOT_FOUND)
    with pytest.raises(ValueError, match="pass spec= with the registry name") as err:
        with gl.measure_energy("cuda", nvml=fake, verbose=False):
            pass
    # The SXM4 module's 400 W is not silently used for the card.
    assert "'NVIDIA A100-PCIE-40GB'" in str(err.value)
    assert "A100 40GB SXM4 is the SXM4 module, not PCIe" in str(err.value)


def test_without_cuda_a_gpu_estimate_asks_for_a_spec(monkeypatch):
    import torch

    def no_cuda(device=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    monkeypatch.setattr(torch.cuda, "get_device_name", no_cuda)
    with pytest.raises(ValueError, match="torch cannot name it .*pass spec="):
        with gl.measure_energy("cuda", nvml=FakeNvml(init_error=LIBRARY_NOT_FOUND)):
            pass


def test_a_known_gpu_without_nvml_is_estimated_from_its_registry_tdp(any_fake_gpu, capsys):
    spec = gl.get_spec(any_fake_gpu.registry_name)  # T4 70 W, A100 SXM4 400 W, H100 SXM5 700 W
    with gl.measure_energy() as m:  # default device: the (simulated) GPU; pynvml absent
        pass
    printed = capsys.readouterr().out
    assert "NVML is not installed" in printed and "ESTIMATE" in printed
    assert m.is_estimate and m.device_name == spec.name
    assert m.average_watts == pytest.approx(spec.tdp)
    assert spec.source_url in m.assumptions[0]


def test_power_reading_failing_mid_block_is_reported_and_the_thread_stops():
    fake = FakeNvml(counter=NOT_SUPPORTED, power=lambda t: 100_000, power_fails_after=2)
    with pytest.raises(RuntimeError, match="NVML failed to read the power draw.*GPU is lost"):
        with gl.measure_energy("cuda", nvml=fake, interval_s=0.005, verbose=False):
            time.sleep(0.05)
    assert not [t for t in threading.enumerate() if t.name == "gpulab-power"]
    assert fake.shutdowns == 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="interval_s=0 must be a positive"):
        gl.measure_energy("cpu", interval_s=0)
    with pytest.raises(ValueError, match="device='tpu' is not a device"):
        with gl.measure_energy("tpu", verbose=False):
            pass
    with pytest.raises(TypeError, match="device=42 must be a torch.device"):
        gl.measure_energy(42, verbose=False)
    with pytest.raises(ValueError, match="cores=0 must be a positive integer"):
        gl.measure.energy.assumed_power("cpu", cores=0)
    with pytest.raises(ValueError, match="spec='Z9000': no device called 'Z9000'"):
        gl.measure.energy.assumed_power("cuda", spec="Z9000")
    with pytest.raises(ValueError, match="interval_s=nan must be a positive"):
        gl.measure_energy("cpu", interval_s=float("nan"))
    with pytest.raises(TypeError, match="cores=2.0 must be a positive integer"):
        gl.measure_energy("cpu", cores=2.0)
    with pytest.raises(TypeError, match="verbose=1"):
        gl.measure_energy("cpu", verbose=1)


@pytest.mark.parametrize(
    "device, error, match",
    [("banana", ValueError, "device='banana' is not a device"),
     ("cuda:x", ValueError, "device='cuda:x' is not a device"),
     (42, TypeError, "device=42 must be a torch.device"),
     (True, TypeError, "device=True must be a torch.device")],
)  # fmt: skip
def test_assumed_power_refuses_what_is_not_a_device(device, error, match):
    # Even with a spec= whose rated power would answer: the device must be one.
    with pytest.raises(error, match=match):
        gl.measure.energy.assumed_power(device, spec="T4")
    assert gl.measure.energy.ENERGY_METHODS == (
        "nvml-energy-counter",
        "nvml-power-sampling",
        "estimate-tdp",
    )


def test_warm_up_then_synchronize_then_the_first_reading(monkeypatch):
    """The order on entry: the warm-up, a synchronization, and only then the counter."""
    events = []
    clock = iter([10.0, 14.0])  # a fake clock: the block starts at 10 s and ends at 14 s
    monkeypatch.setattr("gpulab.measure.energy.time.perf_counter", lambda: next(clock))
    monkeypatch.setattr("gpulab.measure.bench.synchronize", lambda *a, **k: events.append("sync"))

    class OrderedNvml(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, handle):
            events.append("read")
            return super().nvmlDeviceGetTotalEnergyConsumption(handle)

    fake = OrderedNvml(counter=[5_000_000, 5_800_000])  # mJ
    meter = gl.measure_energy(
        "cuda", nvml=fake, verbose=False, warmup_fn=lambda: events.append("warm-up")
    )
    assert events == []  # nothing happens before the block is entered
    with meter as m:
        events.append("job")
    assert events == ["warm-up", "sync", "read", "job", "sync", "read"]
    assert m.time_s == 4.0 and m.joules == pytest.approx(800.0)  # the warm-up is not counted
    assert m.average_watts == pytest.approx(200.0)


def test_a_warmup_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="warmup_fn=3 must be a callable"):
        gl.measure_energy("cpu", warmup_fn=3)


class FourGpuNvml(FakeNvml):
    """A machine with four GPUs that NVML numbers 0-3, each with its UUID, PCI bus id and
    energy counter (GPU i reads i x 1000 J more at the end than at the start)."""

    UUIDS = [f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(4)]
    BUSES = [f"00000000:{0x18 + 0x20 * i:02X}:00.0" for i in range(4)]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reads = {i: [0, 1_000_000 * (i + 1)] for i in range(4)}
        self.opened = []

    def nvmlDeviceGetCount(self):
        return 4

    def nvmlDeviceGetHandleByIndex(self, index):
        self.opened.append(("index", index))
        return ("handle", index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.opened.append(("uuid", uuid))
        return ("handle", self.UUIDS.index(uuid))

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        self.opened.append(("pci", bus_id))
        if bus_id not in self.BUSES:
            raise FakeNvmlError(6, "Not Found")
        return ("handle", self.BUSES.index(bus_id))

    def nvmlDeviceGetName(self, handle):
        return f"GPU {handle[1]}".encode()

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return self.reads[handle[1]].pop(0)


def _cuda_sees(monkeypatch, fake_gpu, **ids):
    """CUDA_VISIBLE_DEVICES=3: torch's GPU 0 is the machine's fourth, with these ids."""
    import torch

    fake_gpu("H100")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    plain = torch.cuda.get_device_properties

    class Properties:
        def __init__(self, device=None):
            self._plain = plain(device)
            self.__dict__.update(ids)

        def __getattr__(self, name):
            return getattr(self._plain, name)

    monkeypatch.setattr(torch.cuda, "get_device_properties", Properties)


def test_with_cuda_visible_devices_the_meter_reads_the_gpu_by_its_uuid(monkeypatch, fake_gpu):
    _cuda_sees(monkeypatch, fake_gpu, uuid="00000003-aaaa-bbbb-cccc-dddddddddddd")
    nvml = FourGpuNvml()
    with gl.measure_energy("cuda:0", nvml=nvml, verbose=False) as m:
        pass
    assert nvml.opened == [("uuid", FourGpuNvml.UUIDS[3])]
    assert (m.device_name, m.joules, m.matched) == ("GPU 3", 4000.0, "by UUID")


def test_without_a_uuid_the_pci_bus_id_finds_the_gpu(monkeypatch, fake_gpu):
    _cuda_sees(monkeypatch, fake_gpu, pci_domain_id=0, pci_bus_id=0x78, pci_device_id=0)
    nvml = FourGpuNvml()
    with gl.measure_energy("cuda", nvml=nvml, verbose=False) as m:
        pass
    assert nvml.opened == [("pci", "00000000:78:00.0")]
    assert (m.device_name, m.joules, m.matched) == ("GPU 3", 4000.0, "by PCI bus id")


def test_an_index_that_may_name_another_gpu_is_not_read(monkeypatch, fake_gpu, capsys):
    """No id from torch and CUDA_VISIBLE_DEVICES set: NVML's GPU 0 is not this process's
    GPU 0, so the meter estimates (the H100's registry TDP) and says why."""
    _cuda_sees(monkeypatch, fake_gpu)
    nvml = FourGpuNvml()
    with gl.measure_energy("cuda", nvml=nvml) as m:
        pass
    assert nvml.opened == [] and m.is_estimate and m.average_watts == pytest.approx(700)
    printed = capsys.readouterr().out
    assert "cannot tell which NVML device is CUDA GPU 0" in printed
    assert "CUDA_VISIBLE_DEVICES renumbers the GPUs CUDA sees" in printed
    # Unset, on a machine with four GPUs CUDA's order (fastest first) is not NVML's either,
    # unless CUDA_DEVICE_ORDER=PCI_BUS_ID says it is.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with gl.measure_energy("cuda", nvml=FourGpuNvml(), verbose=False) as m:
        pass
    assert m.is_estimate and "fastest first, NVML in PCI order" in m.fallback_reasons[0]
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    with gl.measure_energy("cuda:0", nvml=FourGpuNvml(), verbose=False) as m:
        pass
    assert (m.device_name, m.joules) == ("GPU 0", 1000.0) and m.matched.startswith("by index")


def test_the_lab_learns_when_a_gpu_energy_is_neither_measured_nor_estimated(fake_gpu):
    unlisted = FakeGpu("NVIDIA H100 NVL", (9, 0), 94 * 10**9, 132, registry_name="")
    fake_gpu(unlisted)  # pynvml absent, as fake_gpu makes it
    problem = gl.measure.energy.gpu_energy_problem("cuda")
    assert problem.startswith("NVML is not installed (pip install nvidia-ml-py)")
    assert "no rated power known for 'NVIDIA H100 NVL'" in problem
    assert not problem.endswith(".") and "spec=" not in problem
    fake_gpu("T4")  # listed: estimated from its TDP
    assert gl.measure.energy.gpu_energy_problem("cuda") is None
    fake_gpu(unlisted)  # NVML present: measured
    assert gl.measure.energy.gpu_energy_problem("cuda", nvml=FakeNvml(counter=[0, 1])) is None
