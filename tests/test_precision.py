"""The TF32 switch and the per-device precision support (GPUs simulated, see fake_gpu.py)."""

from __future__ import annotations

import types

import pytest
import torch

from gpulab.hardware.specs import get_spec
from gpulab.measure.device import (
    MixedPrecision,
    matmul_speedup,
    mixed_precision,
    supported_precisions,
    tf32,
)


def _new_api(monkeypatch, matmul="none", conv="tf32"):
    """torch.backends with the current ``fp32_precision`` settings."""
    matmul_ns = types.SimpleNamespace(fp32_precision=matmul)
    cudnn_ns = types.SimpleNamespace(conv=types.SimpleNamespace(fp32_precision=conv))
    monkeypatch.setattr(torch.backends.cuda, "matmul", matmul_ns)
    monkeypatch.setattr(torch.backends, "cudnn", cudnn_ns)
    return matmul_ns, cudnn_ns.conv


def _old_api(monkeypatch, matmul=False, cudnn=True):
    """torch.backends as older PyTorch had it: only the ``allow_tf32`` flags."""
    matmul_ns = types.SimpleNamespace(allow_tf32=matmul)
    cudnn_ns = types.SimpleNamespace(allow_tf32=cudnn)
    monkeypatch.setattr(torch.backends.cuda, "matmul", matmul_ns)
    monkeypatch.setattr(torch.backends, "cudnn", cudnn_ns)
    return matmul_ns, cudnn_ns


@pytest.mark.parametrize("enabled, want", [(True, "tf32"), (False, "ieee")])
def test_new_api_is_set_inside_and_restored_after(monkeypatch, enabled, want):
    matmul, conv = _new_api(monkeypatch, matmul="none", conv="tf32")
    with tf32(enabled):
        assert (matmul.fp32_precision, conv.fp32_precision) == (want, want)
    assert (matmul.fp32_precision, conv.fp32_precision) == ("none", "tf32")


@pytest.mark.parametrize("enabled", [True, False])
def test_old_api_is_set_inside_and_restored_after(monkeypatch, enabled):
    matmul, cudnn = _old_api(monkeypatch, matmul=not enabled, cudnn=not enabled)
    with tf32(enabled):
        assert (matmul.allow_tf32, cudnn.allow_tf32) == (enabled, enabled)
    assert (matmul.allow_tf32, cudnn.allow_tf32) == (not enabled, not enabled)


def test_new_api_never_touches_the_old_flags(monkeypatch):
    # Once fp32_precision was set, reading allow_tf32 raises in current PyTorch.
    class Matmul:
        fp32_precision = "ieee"

        @property
        def allow_tf32(self):
            raise RuntimeError("mixed TF32 APIs")

    matmul = Matmul()
    monkeypatch.setattr(torch.backends.cuda, "matmul", matmul)
    monkeypatch.setattr(
        torch.backends,
        "cudnn",
        types.SimpleNamespace(conv=types.SimpleNamespace(fp32_precision="ieee")),
    )
    with tf32(True):
        assert matmul.fp32_precision == "tf32"
    assert matmul.fp32_precision == "ieee"


@pytest.mark.parametrize("api", ["new", "old"])
def test_restored_when_the_block_raises(monkeypatch, api):
    if api == "new":
        matmul, conv = _new_api(monkeypatch, matmul="ieee", conv="tf32")
        state = lambda: (matmul.fp32_precision, conv.fp32_precision)  # noqa: E731
    else:
        matmul, cudnn = _old_api(monkeypatch, matmul=False, cudnn=True)
        state = lambda: (matmul.allow_tf32, cudnn.allow_tf32)  # noqa: E731
    before = state()
    with pytest.raises(KeyError, match="inside"), tf32(api == "new"):
        raise KeyError("inside")
    assert state() == before


def test_nested_switches_unwind_in_order(monkeypatch):
    matmul, conv = _new_api(monkeypatch, matmul="none", conv="tf32")
    with tf32(False):
        with tf32(True):
            assert matmul.fp32_precision == "tf32"
        assert matmul.fp32_precision == "ieee"
    assert (matmul.fp32_precision, conv.fp32_precision) == ("none", "tf32")


@pytest.mark.parametrize("bad", [1, 0, "yes", None])
def test_tf32_refuses_non_bools(bad):
    with pytest.raises(TypeError, match="enabled="):
        tf32(bad)


def test_real_torch_is_left_as_it_was():
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    with tf32(True):
        assert matmul.fp32_precision == "tf32"
        assert (torch.ones(3, 3) @ torch.ones(3, 3)).sum().item() == 27.0
    assert matmul.fp32_precision == before


def test_cpu_has_no_tf32_and_runs_the_rest():
    support = supported_precisions("cpu")
    assert set(support) == {"fp32", "tf32", "fp16", "bf16"}
    assert "CPU has none" in support["tf32"]
    assert [p for p, reason in support.items() if reason is None] == ["fp32", "fp16", "bf16"]


def test_t4_has_no_tf32_and_no_bf16_tensor_cores(fake_gpu):
    fake_gpu("T4")
    support = supported_precisions("cuda")
    assert support["fp32"] is None and support["fp16"] is None
    assert "a tf32 matmul here is FP32" in support["tf32"] and "7.5" in support["tf32"]
    assert "without Tensor Cores" in support["bf16"] and "7.5" in support["bf16"]


@pytest.mark.parametrize("name", ["A100", "H100"])
def test_ampere_and_later_run_everything_natively(fake_gpu, name):
    fake_gpu(name)
    assert supported_precisions("cuda:0") == dict.fromkeys(("fp32", "tf32", "fp16", "bf16"))
    assert supported_precisions() == dict.fromkeys(("fp32", "tf32", "fp16", "bf16"))


def test_pascal_runs_fp16_without_tensor_cores(fake_gpu):
    from tests.fake_gpu import FakeGpu

    fake_gpu(FakeGpu("Tesla P100-PCIE-16GB", (6, 0), 16 * 2**30, 56, "Tesla P100"))
    support = supported_precisions("cuda")
    assert "7.0 or later (this GPU: 6.0)" in support["fp16"]
    assert support["tf32"] and support["bf16"] and support["fp32"] is None


@pytest.mark.parametrize(
    "bad, error", [(42, TypeError), ("tpu", ValueError), (None.__class__, TypeError)]
)
def test_supported_precisions_refuses_what_is_not_a_device(bad, error):
    with pytest.raises(error, match="device="):
        supported_precisions(bad)


def test_cuda_on_a_machine_without_one_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        supported_precisions("cuda")


# ---- the mixed precision a lab trains in (mixed_precision)


def test_a_t4_trains_in_fp16_with_a_grad_scaler_although_torch_says_it_has_bf16(fake_gpu):
    fake_gpu("T4")
    assert torch.cuda.is_bf16_supported()  # torch counts the emulation: the capstone's trap
    amp = mixed_precision("cuda")
    assert (amp.precision, amp.dtype, amp.needs_grad_scaler) == ("amp_fp16", torch.float16, True)
    assert "7.5" in amp.reason and "GradScaler" in amp.reason


@pytest.mark.parametrize("name", ["A100", "H100"])
def test_ampere_and_later_train_in_bf16_without_a_scaler(fake_gpu, name):
    fake_gpu(name)
    for device in ("cuda", "cuda:0", None):
        amp = mixed_precision(device)
        assert (amp.precision, amp.dtype, amp.needs_grad_scaler) == (
            "amp_bf16", torch.bfloat16, False
        )  # fmt: skip


def test_the_choice_follows_the_compute_capability_of_each_simulated_gpu(any_fake_gpu):
    expected = "amp_bf16" if any_fake_gpu.capability >= (8, 0) else "amp_fp16"
    assert mixed_precision("cuda").precision == expected


def test_a_gpu_without_fp16_tensor_cores_still_gets_fp16_with_a_scaler(fake_gpu):
    from tests.fake_gpu import FakeGpu

    fake_gpu(FakeGpu("Tesla P100-PCIE-16GB", (6, 0), 16 * 2**30, 56, "Tesla P100"))
    amp = mixed_precision("cuda")
    assert amp.precision == "amp_fp16" and amp.needs_grad_scaler
    assert "6.0" in amp.reason


def test_a_cpu_keeps_bf16_and_an_apple_gpu_fp16():
    cpu = mixed_precision("cpu")
    assert (cpu.precision, cpu.dtype, cpu.needs_grad_scaler) == ("amp_bf16", torch.bfloat16, False)
    assert mixed_precision("mps").precision == "amp_fp16"


def test_mixed_precision_refuses_bad_devices_and_a_missing_gpu(monkeypatch):
    with pytest.raises(TypeError, match="device=42"):
        mixed_precision(42)
    with pytest.raises(ValueError, match="device='tpu'"):
        mixed_precision("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        mixed_precision("cuda")


# ---- how much faster 16-bit matrix multiplies are (matmul_speedup)


@pytest.mark.parametrize(("name", "low"), [("T4", "fp16"), ("A100", "bf16"), ("H100", "bf16")])
def test_on_a_gpu_the_speedup_is_the_ratio_of_its_datasheet_peaks(fake_gpu, name, low):
    gpu = fake_gpu(name)
    spec = get_spec(gpu.registry_name)
    speedup = matmul_speedup(mixed_precision("cuda"), "cuda")
    assert speedup == pytest.approx(spec.peak(low) / spec.peak("fp32"))
    assert speedup > 4  # Tensor Cores: every one of these is several times its FP32 peak


def test_a_gpu_the_registry_does_not_know_gets_no_speedup(fake_gpu):
    from tests.fake_gpu import FakeGpu

    fake_gpu(FakeGpu("Imaginary GPU 9000", (9, 0), 80 * 2**30, 132, "H100 SXM5 80GB"))
    assert matmul_speedup(mixed_precision("cuda"), "cuda") == 1.0


def test_a_cpu_gets_two_with_bf16_instructions_and_one_without(monkeypatch):
    amp = mixed_precision("cpu")
    for has_bf16, expected in ((True, 2.0), (False, 1.0)):
        monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda h=has_bf16: h)
        assert matmul_speedup(amp, "cpu") == expected


def test_matmul_speedup_refuses_what_is_not_a_mixed_precision():
    with pytest.raises(TypeError, match="amp='amp_bf16'"):
        matmul_speedup("amp_bf16", "cpu")


def test_the_record_checks_its_fields():
    with pytest.raises(ValueError, match="precision='amp_fp8'"):
        MixedPrecision("amp_fp8")
    with pytest.raises(TypeError, match="reason=3"):
        MixedPrecision("amp_bf16", reason=3)
