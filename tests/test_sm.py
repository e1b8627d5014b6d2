"""The per-SM table: values from the CUDA C++ Programming Guide and the whitepapers."""

import csv
from importlib import resources

import pytest

import gpulab as gl


@pytest.mark.parametrize(
    "spec, cc, warps, blocks, shared_kb, lanes, tensor_cores",
    [
        ("T4", "7.5", 32, 16, 64, 64, 8),
        ("A100 80GB SXM4", "8.0", 64, 32, 164, 64, 4),
        ("H100 SXM5 80GB", "9.0", 64, 32, 228, 128, 4),
        ("H200", "9.0", 64, 32, 228, 128, 4),
        ("RTX 3090", "8.6", 48, 16, 100, 128, 4),
        ("L4", "8.9", 48, 24, 100, 128, 4),
        ("V100", "7.0", 64, 32, 96, 64, 8),
    ],
)
def test_registry_gpus_find_their_compute_capability(
    spec, cc, warps, blocks, shared_kb, lanes, tensor_cores
):
    arch = gl.sm_architecture(spec)
    assert arch.compute_capability == cc
    assert (arch.max_warps_per_sm, arch.max_blocks_per_sm) == (warps, blocks)
    assert arch.max_shared_per_sm_bytes == shared_kb * 1024
    assert (arch.fp32_lanes_per_sm, arch.tensor_cores_per_sm) == (lanes, tensor_cores)
    assert arch.max_threads_per_sm == arch.max_warps_per_sm * arch.warp_size
    assert arch.registers_per_sm == 65536 and arch.max_registers_per_thread == 255


# Architectures the per-SM table leaves out on purpose, and why (they are refused clearly).
WITHOUT_A_ROW = {
    "Kepler": "compute capability 3.7 is no longer in the current CUDA programming guide",
    "Blackwell": "the compute-capability 10.x limits and the Blackwell SM's anatomy are not yet "
    "taken from a primary source",
}


def test_every_nvidia_registry_gpu_with_an_sm_count_has_a_row():
    for spec in gl.list_specs("gpu"):
        if spec.vendor != "NVIDIA" or not spec.sm_count:
            continue
        if any(arch in spec.architecture for arch in WITHOUT_A_ROW):
            with pytest.raises(ValueError, match="spec"):
                gl.sm_architecture(spec)
        else:
            assert gl.sm_architecture(spec).fp32_lanes_per_sm > 0, spec.name


def test_fp32_lanes_times_sms_match_the_registry_core_counts():
    # The T4 registry note says 2560 CUDA cores on 40 SMs; the H100 SXM has 16896 on 132.
    assert gl.sm_architecture("T4").fp32_lanes_per_sm * gl.get_spec("T4").sm_count == 2560
    h100 = gl.get_spec("H100 SXM5 80GB")
    assert gl.sm_architecture(h100).fp32_lanes_per_sm * h100.sm_count == 16896


def test_every_row_has_sources_and_consistent_shared_limits():
    text = resources.files("gpulab").joinpath("data/sm_architecture.csv").read_text("utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == len(gl.hardware.sm.list_sm_architectures()) >= 3
    for arch in gl.hardware.sm.list_sm_architectures():
        assert arch.limits_source_url.startswith("https://docs.nvidia.com/cuda/")
        assert arch.anatomy_source_url.startswith("https://")
        assert arch.max_shared_per_block_bytes <= arch.max_shared_per_sm_bytes
        if arch.l1_shared_per_sm_bytes is not None:
            assert arch.max_shared_per_sm_bytes < arch.l1_shared_per_sm_bytes


@pytest.mark.parametrize("value", ["sm_75", "7.5", "75", "SM75"])
def test_compute_capability_strings(value):
    assert gl.sm_architecture(value).architecture == "Turing"


@pytest.mark.parametrize(
    "value, error, message",
    [
        ("Z9000", ValueError, "spec='Z9000'"),
        ("MI300X", ValueError, "spec='MI300X'"),
        ("Xeon 8380", ValueError, "spec='Xeon 8380'"),
        ("sm_120", ValueError, "compute capability 12.0"),
        (7.5, TypeError, "spec=7.5"),
    ],
)
def test_bad_specs_are_refused_by_name(value, error, message):
    with pytest.raises(error, match=message):
        gl.sm_architecture(value)
