import csv
from pathlib import Path

import pytest

import gpulab as gl

DATA = Path(gl.__file__).parent / "data" / "gpu_specs.csv"


def test_every_registry_entry_has_a_source_url():
    specs = gl.list_specs()
    assert len(specs) == len(list(csv.DictReader(DATA.open()))) >= 20
    for spec in specs:
        assert spec.source_url.startswith("https://"), spec.name


def test_lookup_returns_the_sourced_datasheet_figures():
    h100 = gl.get_spec("H100 SXM5 80GB")
    assert h100.peak("bf16") == pytest.approx(989.5e12)
    assert h100.peak("fp32") == pytest.approx(67e12)
    assert h100.memory_bandwidth == pytest.approx(3350e9)
    assert h100.memory_bytes == pytest.approx(80e9)
    assert h100.source_url == "https://www.nvidia.com/en-us/data-center/h100/"
    t4 = gl.get_spec("Tesla T4")
    assert t4.peak("fp16") == pytest.approx(65e12) and t4.tdp == 70
    assert t4.sm_count == 40


@pytest.mark.parametrize(
    "query, expected",
    [
        ("h100 sxm", "H100 SXM5 80GB"),
        ("H100-SXM5", "H100 SXM5 80GB"),
        ("t4", "Tesla T4"),
        ("A100 80GB", "A100 80GB SXM4"),
        ("rtx 4090", "GeForce RTX 4090"),
        ("epyc 7763", "AMD EPYC 7763"),
        ("  mi300x ", "Instinct MI300X"),
    ],
)
def test_forgiving_name_matching(query, expected):
    assert gl.get_spec(query).name == expected


def test_ambiguous_name_lists_the_candidates():
    with pytest.raises(ValueError, match="several devices") as err:
        gl.get_spec("H100")
    assert "H100 SXM5 80GB" in str(err.value) and "H100 PCIe 80GB" in str(err.value)


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError, match="close names") as err:
        gl.get_spec("Tesla T40 turbo")
    assert "Tesla T4" in str(err.value)


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_empty_name_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="give a device name"):
        gl.get_spec(bad)


def test_missing_precision_names_device_and_source():
    with pytest.raises(ValueError, match="no bf16 figure") as err:
        gl.get_spec("T4").peak("bf16")
    assert "nvidia.com" in str(err.value)
    with pytest.raises(ValueError, match="dtype='int4'"):
        gl.get_spec("T4").peak("int4")


def test_kinds_and_order():
    cpus = gl.list_specs("cpu")
    assert {s.kind for s in cpus} == {"cpu"} and len(cpus) == 3
    years = [s.year for s in gl.list_specs()]
    assert years == sorted(years)
    with pytest.raises(ValueError, match="kind='fpga'"):
        gl.list_specs("fpga")


def test_ridge_point_matches_the_fact_sheet():
    # A100-80GB ridge for 16-bit tensor math: 312e12 / 2039e9 ≈ 153 FLOP/byte (datasheet row).
    a100 = gl.get_spec("A100 80GB")
    assert a100.peak("bf16") / a100.memory_bandwidth == pytest.approx(153, abs=0.5)
    assert a100.ridge_point == pytest.approx(19.5e12 / 2039e9)
