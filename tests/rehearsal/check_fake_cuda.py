"""Checks of the rehearsal GPU itself, run by ``tests/test_rehearsal.py`` in a process
started with ``GPULAB_REHEARSAL`` set (the layer cannot be uninstalled from a process).

Each check is a function; the script runs them all and prints ``ok <name>`` for each, or
raises at the first that fails.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def check_torch_reports_the_gpu():
    assert torch.cuda.is_available() and torch.cuda.device_count() >= 1
    assert torch.cuda.get_device_name() in ("Tesla T4", "NVIDIA H100 80GB HBM3")


def check_cuda_tensors_say_where_they_are():
    x = torch.randn(3, device="cuda")
    assert x.device == torch.device("cuda", 0) and x.is_cuda and x.get_device() == 0
    assert x.to("cpu").device.type == "cpu" and not x.cpu().is_cuda
    assert torch.zeros(2).cuda().is_cuda and torch.ones(2).to(x).is_cuda
    assert (x * 2 + 1).is_cuda and x.sum().is_cuda
    assert "device='cuda:0'" in repr(x)


def check_mixing_devices_raises_as_on_a_gpu():
    x = torch.randn(3, device="cuda")
    for mixed in (
        lambda: x + torch.ones(3),
        lambda: torch.ones(3) @ x,
        lambda: torch.cat([x, torch.ones(3)]),
    ):
        try:
            mixed()
        except RuntimeError as err:
            assert "Expected all tensors to be on the same device" in str(err), err
        else:
            raise AssertionError("a CPU tensor was mixed with a CUDA one without an error")
    assert (x + torch.tensor(2.0)).is_cuda  # a 0-dim CPU tensor is a scalar, as on a GPU
    assert x[torch.tensor([0, 2])].shape == (2,)  # CPU indices are moved, as on a GPU
    x.copy_(torch.ones(3))  # a host-to-device copy
    assert x.sum().item() == 3
    host = torch.zeros(3)
    assert host.copy_(x, non_blocking=True) is host and not host.is_cuda  # device to host
    assert host.sum().item() == 3


def check_numpy_needs_a_copy_to_the_host_first():
    x = torch.randn(3, device="cuda")
    for convert in (x.numpy, lambda: np.asarray(x)):
        try:
            convert()
        except TypeError as err:
            assert "Use Tensor.cpu()" in str(err)
        else:
            raise AssertionError("numpy() accepted a CUDA tensor")
    assert x.cpu().numpy().shape == (3,)


def check_a_model_moves_trains_and_keeps_its_parameters():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    weight = model.weight
    opt = torch.optim.Adam(model.parameters(), lr=0.1)  # made before the move, as often
    model.to("cuda")
    assert model.weight is weight and weight.is_cuda and isinstance(weight, nn.Parameter)
    x = torch.randn(8, 4, device="cuda")
    before = model(x).pow(2).mean().item()
    for _ in range(20):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    assert weight.grad.is_cuda and model(x).pow(2).mean().item() < before


def check_models_and_tensors_copy_and_save():
    import copy
    import io

    model = nn.Linear(4, 2).cuda()
    twin = copy.deepcopy(model)
    assert twin.weight is not model.weight and twin.weight.is_cuda
    assert twin.weight.shape == (2, 4) and torch.equal(twin.weight.cpu(), model.weight.cpu())
    kept = copy.deepcopy(model.state_dict())
    with torch.no_grad():
        model.weight.zero_()
    model.load_state_dict(kept)
    assert torch.equal(model.weight.cpu(), twin.weight.cpu())
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert torch.equal(loaded["weight"], twin.weight.cpu())


def check_gradients_flow_back_through_a_copy_to_the_gpu():
    a = torch.ones(3, requires_grad=True)
    (a.cuda() * 2).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0] and not a.grad.is_cuda


def check_generators_live_on_a_device():
    g = torch.Generator(device="cuda").manual_seed(0)
    assert g.device.type == "cuda" and torch.rand(2, device="cuda", generator=g).is_cuda
    try:
        torch.rand(2, generator=g)
    except RuntimeError as err:
        assert "generator" in str(err)
    else:
        raise AssertionError("a CUDA generator made a CPU tensor")


def check_autocast_runs_in_the_dtype_asked_for():
    model = nn.Linear(4, 2).cuda()
    x = torch.randn(3, 4, device="cuda")
    for dtype in (torch.float16, torch.bfloat16):
        with torch.autocast("cuda", dtype=dtype):
            assert model(x).dtype == dtype
    scaler = torch.amp.GradScaler("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() > 0


def check_tf32_rounds_matmul_inputs_where_the_gpu_has_it():
    import gpulab as gl

    gen = torch.Generator().manual_seed(0)
    a64 = torch.randn(64, 64, generator=gen, dtype=torch.float64)
    exact = a64 @ a64

    def error(tf32: bool) -> float:
        a = a64.float().cuda()
        with gl.tf32(tf32):
            c = (a @ a).double().cpu()
        return float(torch.linalg.norm(c - exact) / torch.linalg.norm(exact))

    has_tf32 = torch.cuda.get_device_capability() >= (8, 0)
    assert (error(True) > 10 * error(False)) == has_tf32, (error(True), error(False))


def check_memory_statistics_count_live_tensors():
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    x = torch.empty(1024, 1024, device="cuda")  # 4 MiB
    assert torch.cuda.memory_allocated() - start == 4 * 2**20
    del x
    assert torch.cuda.memory_allocated() == start
    assert torch.cuda.max_memory_allocated() - start == 4 * 2**20
    free, total = torch.cuda.mem_get_info()
    assert total == torch.cuda.get_device_properties(0).total_memory and free <= total


def check_events_time_with_the_host_clock():
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.randn(256, 256, device="cuda") @ torch.randn(256, 256, device="cuda")
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) > 0


def check_a_cuda_graph_replays_its_operators_on_the_same_tensors():
    static_in = torch.zeros(4, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = static_in * 2 + 1
    static_in.copy_(torch.arange(4.0))
    graph.replay()
    assert static_out.cpu().tolist() == [1.0, 3.0, 5.0, 7.0]
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            static_in.sum().item()
    except RuntimeError as err:
        assert "capturing" in str(err)
    else:
        raise AssertionError("a host synchronisation was captured")


def check_a_cuda_profile_has_the_rows_of_a_gpu_profile():
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    from gpulab.measure.profiling import region_times

    a = torch.randn(64, 64, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("work"):
            for _ in range(4):
                a = a @ a / 64
    rows = prof.key_averages()
    work = [r for r in rows if r.key == "work"]
    assert sorted(str(r.device_type) for r in work) == ["DeviceType.CPU", "DeviceType.CUDA"]
    assert [r.cpu_time_total for r in work if r.device_type == DeviceType.CUDA] == [0]
    times = region_times(rows, ["work"], device="cuda")
    assert times.matmul_clock == "device" and 0 < times.matmul_s


def check_sizes_stay_at_cpu_scale():
    import gpulab as gl

    assert gl.best_device().type == "cuda"
    assert gl.scale(cpu=1, gpu=2) == 1
    assert gl.measure.device.scale_to_memory(cpu=8, gpu=2**30, n_arrays=2) == 8


if __name__ == "__main__":
    for name, check in list(globals().items()):
        if name.startswith("check_"):
            check()
            print("ok", name)
