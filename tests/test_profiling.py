"""Where a profiled step's time went (gpulab.measure.profiling), from real CPU profiles and
from CUDA profiles built the way torch builds them.

Without a GPU a CUDA profile cannot be recorded, so ``_cuda_rows`` makes one from
:class:`torch.autograd.profiler_util.FunctionEvent` objects, the events torch makes from a
Kineto trace, and lets torch's own ``EventList.key_averages()`` group them. As in a real
trace with ``ProfilerActivity.CUDA``, each ``record_function`` label then has two rows: the
CPU row and a ``gpu_user_annotation`` row (device type CUDA, no CPU time); a matmul's
kernel is a CUDA row of its own and is attached to the CPU operator that launched it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import EventList, FunctionEvent
from torch.profiler import ProfilerActivity, profile, record_function

from gpulab.measure.profiling import MATMUL_OPS, RegionTimes, region_times

ROOT = Path(__file__).resolve().parents[1]
REGIONS = ["load batch", "forward+backward", "optimizer"]


def _event(i, name, start_us, end_us, *, device_type=DeviceType.CPU, annotation=False, thread=1):
    return FunctionEvent(
        id=i, name=name, thread=thread, start_us=start_us, end_us=end_us, use_device="cuda",
        device_type=device_type, is_user_annotation=annotation, stack=[], input_shapes=[],
    )  # fmt: skip


def _cuda_rows(*, region_us=(20, 100, 10), mm_launch_us=10, mm_kernel_us=30):
    """key_averages() of one step profiled with CUDA activity, as torch groups it.

    Each region is a CPU user annotation lasting ``region_us`` on the host, with its GPU
    user-annotation twin (device type CUDA, ``cpu_time_total`` 0); ``forward+backward``
    holds an ``aten::mm`` that takes ``mm_launch_us`` on the host to launch a kernel of
    ``mm_kernel_us`` on the GPU."""
    events, start, i = [], 0.0, 0
    for label, host_us in zip(REGIONS, region_us, strict=True):
        i += 1
        events.append(_event(i, label, start, start + host_us, annotation=True))
        i += 1  # the GPU twin: the span of the region's kernels on the device's timeline
        gpu = _event(i, label, start + 5, start + 5 + host_us / 2, device_type=DeviceType.CUDA,
                     annotation=True, thread=7)  # fmt: skip
        events.append(gpu)
        if label == "forward+backward":
            i += 1
            mm = _event(i, "aten::mm", start + 1, start + 1 + mm_launch_us)
            mm.append_kernel("ampere_sgemm_64x32_nn", 0, mm_kernel_us)
            events.append(mm)
            i += 1
            events.append(_event(i, "ampere_sgemm_64x32_nn", start + 5, start + 5 + mm_kernel_us,
                                 device_type=DeviceType.CUDA, thread=7))  # fmt: skip
        start += host_us
    rows = EventList(events, use_device="cuda")
    rows._build_tree()
    return rows.key_averages()


def _cpu_profile():
    a = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function("matmuls"):
                for _ in range(4):
                    b = torch.nn.functional.linear(a, a, a[0])  # aten::addmm
                    b = a @ b  # aten::mm
            with record_function("add"):
                a + 1
    return prof.key_averages()


def test_the_fake_cuda_rows_have_the_shape_that_broke_the_capstone_lab():
    rows = _cuda_rows()
    for label in REGIONS:
        twins = [r for r in rows if r.key == label]
        assert sorted(str(r.device_type) for r in twins) == ["DeviceType.CPU", "DeviceType.CUDA"]
        assert [r.cpu_time_total for r in twins if r.device_type == DeviceType.CUDA] == [0]
    # The lab's old reading kept the last row of each label: every region 0, then 0 / 0.
    old = {e.key: e.cpu_time_total for e in rows if e.key in REGIONS}
    assert set(old.values()) == {0}
    with pytest.raises(ZeroDivisionError):
        {k: v / sum(old.values()) for k, v in old.items()}


def test_on_cuda_regions_take_the_host_time_of_their_cpu_rows():
    t = region_times(_cuda_rows(region_us=(20, 100, 10)), REGIONS, device="cuda")
    assert t.times_s == pytest.approx(
        {"load batch": 20e-6, "forward+backward": 100e-6, "optimizer": 10e-6}
    )
    assert t.bottleneck == "forward+backward"
    assert sum(t.shares.values()) == pytest.approx(1)
    assert t.shares["forward+backward"] == pytest.approx(100 / 130)


def test_on_cuda_the_matmul_time_is_its_kernel_time_not_its_launch_time():
    rows = _cuda_rows(mm_launch_us=10, mm_kernel_us=30)
    on_gpu = region_times(rows, REGIONS, device="cuda")
    assert on_gpu.matmul_clock == "device"
    assert on_gpu.matmul_s == pytest.approx(30e-6)
    assert on_gpu.matmul_share == pytest.approx(30 / 130)
    # Read as a CPU profile, the same rows give the launch time: what the lab used to take.
    as_cpu = region_times(rows, REGIONS, device="cpu")
    assert as_cpu.matmul_clock == "host"
    assert as_cpu.matmul_s == pytest.approx(10e-6)


def test_regions_that_all_took_no_time_are_refused_not_divided_by():
    rows = _cuda_rows(region_us=(0, 0, 0))
    with pytest.raises(ValueError, match=r"every region .* took 0 s"):
        region_times(rows, REGIONS, device="cuda")


def test_a_cuda_profile_needs_cuda_activity():
    with pytest.raises(ValueError, match=r"no GPU time.*ProfilerActivity.CUDA"):
        region_times(_cpu_profile(), ["matmuls", "add"], device="cuda")


def test_a_real_cpu_profile_gives_each_region_its_cpu_rows_time():
    rows = _cpu_profile()
    t = region_times(rows, ["matmuls", "add"], device="cpu")
    cpu_rows = {r.key: r for r in rows if r.device_type == DeviceType.CPU}
    assert t.times_s == {
        "matmuls": cpu_rows["matmuls"].cpu_time_total / 1e6,
        "add": cpu_rows["add"].cpu_time_total / 1e6,
    }
    assert t.times_s["matmuls"] > 0 and t.times_s["add"] > 0
    assert sum(t.shares.values()) == pytest.approx(1)
    assert t.bottleneck in t.times_s and t.shares[t.bottleneck] == max(t.shares.values())


def test_a_real_cpu_profile_counts_every_matmul_operator_by_its_own_cpu_time():
    rows = _cpu_profile()
    t = region_times(rows, ["matmuls", "add"], device="cpu")
    found = {r.key for r in rows} & set(MATMUL_OPS)
    assert {"aten::mm", "aten::addmm"} <= found
    expected = sum(r.self_cpu_time_total for r in rows if r.key in MATMUL_OPS) / 1e6
    assert t.matmul_clock == "host"
    assert t.matmul_s == pytest.approx(expected) and t.matmul_s > 0
    # The matmuls ran inside the "matmuls" region: their own time is part of it.
    assert t.matmul_s <= t.times_s["matmuls"]
    assert 0 < t.matmul_share < 1


def test_a_label_missing_from_the_profile_is_named():
    with pytest.raises(ValueError, match=r"labels=.*'log' has no CPU row"):
        region_times(_cuda_rows(), [*REGIONS, "log"], device="cuda")


@pytest.mark.parametrize(
    "rows, labels, error, match",
    [
        (42, REGIONS, TypeError, r"rows=42 must be the rows of prof.key_averages"),
        ("rows", REGIONS, TypeError, r"rows='rows'"),
        (["x"], REGIONS, TypeError, r"rows\[0\]='x' must be a row"),
        ([], REGIONS, ValueError, r"rows=\[\] holds no rows"),
        (None, "load batch", TypeError, r"labels='load batch' must be a list"),
        (None, ["load batch", 3], TypeError, r"labels=.* must be a list of record_function"),
        (None, [], ValueError, r"labels=\[\] must name at least one"),
        (None, ["log", "log"], ValueError, r"names a label twice"),
    ],
)
def test_bad_arguments_are_refused_by_name(rows, labels, error, match):
    with pytest.raises(error, match=match):
        region_times(_cuda_rows() if rows is None else rows, labels, device="cuda")


def test_a_bad_device_is_refused_by_name():
    with pytest.raises(ValueError, match="device='tpu'"):
        region_times(_cuda_rows(), REGIONS, device="tpu")


def test_the_record_checks_its_fields():
    t = RegionTimes({"a": 1.0, "b": 3.0}, matmul_s=2.0, matmul_clock="device")
    assert (t.total_s, t.bottleneck, t.matmul_share) == (4.0, "b", 0.5)
    with pytest.raises(ValueError, match=r"times_s=.*took 0 s"):
        RegionTimes({"a": 0.0}, matmul_s=0.0)
    with pytest.raises(ValueError, match=r"times_s\['a'\]=-1.0"):
        RegionTimes({"a": -1.0}, matmul_s=0.0)
    with pytest.raises(TypeError, match="times_s=42"):
        RegionTimes(42, matmul_s=0.0)
    with pytest.raises(ValueError, match="matmul_clock='wall'"):
        RegionTimes({"a": 1.0}, matmul_s=0.0, matmul_clock="wall")


def test_the_capstone_lab_reads_its_profiles_through_region_times():
    nb = json.loads((ROOT / "notebooks" / "capstone_lab.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    profiled = [s for s in code if "key_averages()" in s and ".table(" not in s]
    assert len(profiled) == 2, "the bottleneck cell and the autocast cell"
    for source in profiled:
        assert "region_times(" in source
        assert "cpu_time_total" not in source, "a row's CPU time is 0 on a GPU's twin row"


class _OlderTorchRow:
    """A row of ``key_averages()`` as torch 2.1 to 2.3 make it: the device clocks are called
    ``cuda_time_total`` and ``self_cuda_time_total``, and the ``device`` names do not exist
    (they came with https://github.com/pytorch/pytorch/pull/123247)."""

    def __init__(self, row):
        self.key, self.device_type = row.key, row.device_type
        self.cpu_time_total, self.self_cpu_time_total = row.cpu_time_total, row.self_cpu_time_total
        self.cuda_time_total = row.device_time_total
        self.self_cuda_time_total = row.self_device_time_total


def test_rows_of_a_torch_before_2_4_give_the_same_times():
    rows = _cuda_rows(mm_launch_us=10, mm_kernel_us=30)
    older = [_OlderTorchRow(row) for row in rows]
    assert not any(hasattr(row, "self_device_time_total") for row in older)
    new, old = (region_times(r, REGIONS, device="cuda") for r in (rows, older))
    assert old.matmul_s == new.matmul_s == pytest.approx(30e-6)
    assert old.times_s == new.times_s and old.matmul_clock == "device"
    # Without CUDA activity the older rows are refused for the same reason as the newer ones.
    cpu_only = [_OlderTorchRow(row) for row in _cpu_profile()]
    with pytest.raises(ValueError, match=r"no GPU time.*ProfilerActivity.CUDA"):
        region_times(cpu_only, ["matmuls", "add"], device="cuda")


def test_a_newer_torch_is_read_by_its_device_names_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a deprecated cuda_* name would raise FutureWarning
        t = region_times(_cuda_rows(), REGIONS, device="cuda")
    assert t.matmul_s == pytest.approx(30e-6)
