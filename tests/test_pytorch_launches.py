"""What a line of PyTorch becomes: the operators profiled here, the kernels an A100 ran.

The A100 side is read from the shipped traces and checked against what they hold (counted
independently here from the raw events); the host side is profiled on this machine's CPU;
the GPU side of a profile is checked on a small trace written here, whose kernels are known.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gpulab.labkit import pytorch_launches as pl
from gpulab.measure import gpu_trace as gt


def _x(name, cat, ts, dur, corr=None, tid=1) -> dict:
    args = {"correlation": corr, "device": 0} if corr is not None else {}
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "tid": tid, "pid": 1,
            "args": args}


def test_a100_launches_match_the_raw_trace():
    relu, mm, linear = pl.trace_launches()
    # Counted here without operator_kernels: each relu_ call's launch and its kernel.
    raw = gt.read_trace("a100_alexnet")
    n_relu = sum(e.name == "aten::relu_" for e in raw.of("cpu_op"))
    assert relu.calls == n_relu == 14
    assert relu.sequences == ((("vectorized_elementwise_kernel",), 14),)
    assert relu.kernels_per_call == (1, 1)
    assert relu.device.startswith("NVIDIA A100")
    # The DDP trace's last step is cut off: 6 calls of aten::mm, 4 with their kernels.
    assert sum(e.name == "aten::mm" for e in gt.read_trace("a100_ddp_nccl").of("cpu_op")) == 6
    assert mm.calls == 4 and mm.kernels_per_call == (1, 2)
    assert dict(mm.sequences) == {
        ("cutlass_80_simt_sgemm_128x32_8x5_nn_align1", "splitKreduce_kernel"): 2,
        ("ampere_sgemm_32x128_nt",): 2}
    assert linear.calls == 6 and sum(n for _, n in linear.sequences) == 6
    assert all(seq[-2:] == ("ampere_sgemm_32x32_sliced1x4_tn", "globalKernel")
               for seq, _ in linear.sequences)
    kernels = Counter(k for seq, n in linear.sequences for k in seq for _ in range(n))
    assert kernels == Counter(k.kernel for k in gt.operator_kernels(raw, "aten::addmm"))


def test_trace_launches_takes_one_call_and_refuses_others():
    (only,) = pl.trace_launches(pl.CALLS[0])
    assert only.call.code == "torch.relu(x)"
    with pytest.raises(TypeError, match="calls"):
        pl.trace_launches("torch.relu(x)")
    with pytest.raises(TypeError, match="calls"):
        pl.trace_launches([])
    missing = pl.PyTorchCall("torch.relu(x)", "a100_alexnet", "aten::relu", "nowhere")
    with pytest.raises(ValueError, match="aten::relu.*similar name: aten::relu_"):
        pl.trace_launches([missing])


def test_profile_on_this_cpu(tmp_path):
    calls = pl.profile_calls("cpu", folder=tmp_path)
    assert [c.code for c in calls] == [c.code for c in pl.CALLS]
    assert [c.operators[:2] for c in calls] == [
        ("aten::relu", "aten::clamp_min"), ("aten::matmul", "aten::mm"),
        ("aten::linear", "aten::addmm")]
    assert all(c.kernels == () and c.device == "CPU only" for c in calls)
    assert not any(set(c.operators) & pl.VIEW_OPERATORS for c in calls)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"launches_{i}.json" for i in range(3)]
    with pytest.raises(ValueError, match="device='gpu'"):
        pl.profile_calls("gpu")


def test_a_gpu_profile_lists_the_kernels_of_its_call(tmp_path):
    """The GPU branch of profile_calls, on a trace whose kernels are known."""
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"traceEvents": [
        _x("aten::linear", "cpu_op", 0, 100),
        _x("aten::t", "cpu_op", 5, 5),
        _x("aten::addmm", "cpu_op", 20, 70),
        _x("cudaLaunchKernel", "cuda_runtime", 30, 5, corr=1),
        _x("cudaLaunchKernel", "cuda_runtime", 50, 5, corr=2),
        _x("cudaLaunchKernel", "cuda_runtime", 150, 5, corr=3),  # after the call: not its own
        _x("ampere_sgemm_32x32_sliced1x4_tn", "kernel", 60, 30, corr=1, tid=7),
        _x("void epilogue::impl::globalKernel<float>(int)", "kernel", 95, 3, corr=2, tid=7),
        _x("void at::native::vectorized_elementwise_kernel<4>(int)", "kernel", 160, 3, corr=3,
           tid=7),
    ], "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}))
    got = pl._launches(gt.read_trace(path), "F.linear(x, w, b)")
    assert got == pl.CallLaunches("F.linear(x, w, b)", ("aten::linear", "aten::addmm"),
                                  ("ampere_sgemm_32x32_sliced1x4_tn", "globalKernel"),
                                  "NVIDIA H100 80GB HBM3")
    table = pl.launches_table([got]).text.splitlines()
    assert table[0] == ("| you write | operators recorded (NVIDIA H100 80GB HBM3) | "
                        "kernels launched here |")
    assert table[2].endswith("| `ampere_sgemm_32x32_sliced1x4_tn`, `globalKernel` |")


def test_the_table_beside_the_a100():
    here = [pl.CallLaunches(c.code, ("aten::x",), (), "CPU only") for c in pl.CALLS]
    text = pl.launches_table(here, pl.trace_launches()).text
    lines = text.splitlines()
    assert len(lines) == 2 + len(pl.CALLS)
    assert "kernels launched here" not in lines[0]  # a CPU launched none: said in the prose
    assert lines[3].count(" or ") == 1 and "(2 of 4 calls)" in lines[3]
    assert "(AlexNet's in-place ReLUs)" in lines[2]
    html = pl.launches_table(here, pl.trace_launches())._repr_html_()
    assert html.count("<tr>") == 1 + len(pl.CALLS)


def test_the_table_refuses_bad_input():
    here = [pl.CallLaunches("torch.relu(x)", ("aten::relu",), (), "CPU only")]
    with pytest.raises(TypeError, match="here"):
        pl.launches_table([])
    with pytest.raises(TypeError, match="here"):
        pl.launches_table("torch.relu(x)")
    with pytest.raises(TypeError, match="a100"):
        pl.launches_table(here, ["aten::relu_"])
    with pytest.raises(ValueError, match="same order"):
        pl.launches_table(here, pl.trace_launches()[1:2])


def test_the_chapter_shows_what_pytorch_launches_before_cuda():
    page = (Path(__file__).resolve().parents[1] / "book" / "gpu_basics.md").read_text()
    assert page.index("## What PyTorch launches") < page.index("```cuda")
    cell = page[page.index("## What PyTorch launches"):page.index("pl.launches_table(here, a100)")]
    # The profiler's own log lines (stderr) stay off the page.
    assert ":tags: [remove-input, remove-stderr]" in cell
