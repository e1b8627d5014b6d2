import csv
import dataclasses
from pathlib import Path

import pytest

import gpulab as gl
from gpulab.hardware.specs import match_driver_name

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
        gl.get_spec("A100")  # two SXM4 modules (40 and 80 GB) and a PCIe card
    for name in ("A100 40GB SXM4", "A100 80GB SXM4", "A100 80GB PCIe"):
        assert repr(name) in str(err.value)
    with pytest.raises(ValueError, match="several devices"):
        gl.get_spec("Tesla")  # one SXM module among different products: no default


def test_a_name_without_form_factor_means_the_sxm_module():
    assert gl.get_spec("H100").name == gl.get_spec("H100 80GB").name == "H100 SXM5 80GB"
    assert gl.get_spec("A100 80GB").name == "A100 80GB SXM4"
    assert gl.get_spec("A100 80GB PCIe").name == "A100 80GB PCIe"
    assert gl.get_spec("h100 pcie").name == "H100 PCIe 80GB"


def test_a_name_without_memory_size_means_the_larger_of_variants_equal_in_all_else():
    # The V100 SXM2 module in 16 and 32 GB: the same datasheet column, only memory differs.
    assert gl.get_spec("V100").name == gl.get_spec("Tesla V100").name == "Tesla V100 SXM2 32GB"
    assert gl.get_spec("V100 16GB").name == "Tesla V100 SXM2 16GB"
    # The A100 40GB and 80GB differ in bandwidth too: which one stays a question.
    with pytest.raises(ValueError, match="several devices"):
        gl.get_spec("A100 SXM4")


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError, match="close names") as err:
        gl.get_spec("Tesla T40 turbo")
    assert "Tesla T4" in str(err.value)


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_name_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="give a device name"):
        gl.get_spec(bad)


@pytest.mark.parametrize("bad", [None, 42, ["T4"]])
def test_a_name_that_is_not_a_str_is_a_type_error(bad):
    with pytest.raises(TypeError, match=r"name=.* must be a device name"):
        gl.get_spec(bad)


def test_missing_precision_names_device_and_source():
    with pytest.raises(ValueError, match="no bf16 figure") as err:
        gl.get_spec("T4").peak("bf16")
    assert "nvidia.com" in str(err.value)
    with pytest.raises(ValueError, match="precision='int4' is not known"):
        gl.get_spec("T4").peak("int4")
    with pytest.raises(TypeError, match="precision=True must be one of"):
        gl.get_spec("T4").peak(True)


def test_mixed_precision_runs_at_the_16_bit_peak():
    a100 = gl.get_spec("A100 80GB")
    assert a100.peak("amp_bf16") == a100.peak("bf16") == 312e12
    assert a100.peak(precision="amp_fp16") == a100.peak("fp16")


def test_kinds_and_order():
    cpus = gl.list_specs("cpu")
    assert {s.kind for s in cpus} == {"cpu"} and len(cpus) == 5
    years = [s.year for s in gl.list_specs()]
    assert years == sorted(years)
    with pytest.raises(ValueError, match="kind='fpga'"):
        gl.list_specs("fpga")
    with pytest.raises(TypeError, match="kind=42"):
        gl.list_specs(42)


def test_ridge_point_follows_from_the_datasheet():
    # NVIDIA A100 datasheet (the row's source_url): 312 TFLOP/s BF16 dense, 2,039 GB/s.
    a100 = gl.get_spec("A100 80GB")
    assert a100.peak("bf16") / a100.memory_bandwidth == pytest.approx(153, abs=0.5)
    assert a100.ridge_point == pytest.approx(19.5e12 / 2039e9)


# Names exactly as the CUDA driver reports them (torch.cuda.get_device_name(), nvidia-smi).
DRIVER_NAMES = [
    ("Tesla T4", "Tesla T4"),
    ("NVIDIA L4", "L4"),
    ("Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"),
    ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB"),  # the original 2017 module
    ("Tesla V100-PCIE-16GB", None),  # the PCIe card is not; never the SXM2 module's figures
    ("Tesla P100-PCIE-16GB", "Tesla P100 PCIe 16GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM4"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4"),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ("NVIDIA A100-PCIE-40GB", None),  # not in the datasheet the registry cites
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),  # HBM3: the SXM5 module (PCIe has HBM2e)
    ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
    ("NVIDIA H100 NVL", None),
    ("NVIDIA H200", "H200 SXM 141GB"),
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 3090 Ti", None),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", None),
    ("NVIDIA A10", "A10"),
    ("NVIDIA A10G", "A10G (AWS)"),  # AWS's own part: a row of its own, never the A10's
    ("NVIDIA GeForce GTX 1050", None),
]


@pytest.mark.parametrize("driver_name, registry_name", DRIVER_NAMES)
def test_find_spec_maps_driver_names_to_the_exact_part(driver_name, registry_name):
    spec = gl.find_spec(driver_name)
    assert (spec.name if spec else None) == registry_name


def test_a_pcie_card_never_gets_an_sxm_modules_figures():
    pcie = gl.find_spec("NVIDIA A100 80GB PCIe")
    sxm = gl.find_spec("NVIDIA A100-SXM4-80GB")
    assert pcie.form_factor.startswith("PCIe") and sxm.form_factor.startswith("SXM4")
    # Same chip and compute, different memory bandwidth and power (datasheet columns).
    assert pcie.peak("bf16") == sxm.peak("bf16")
    assert (pcie.memory_bandwidth, pcie.tdp) == (1935e9, 300)
    assert (sxm.memory_bandwidth, sxm.tdp) == (2039e9, 400)
    # Whatever the model, a name that says PCIe (or SXM) gets that form factor or nothing.
    models = {
        next(w for w in spec.name.split() if any(c.isdigit() for c in w))
        for spec in gl.list_specs("gpu")
    }
    for model in models:
        for word in ("PCIe", "SXM"):
            found = gl.find_spec(f"NVIDIA {model} {word}")
            assert found is None or found.form_factor.startswith(word), (model, word)


def test_a_missing_part_says_which_entries_were_refused_and_why():
    spec, why = match_driver_name("NVIDIA A100-PCIE-40GB")
    assert spec is None
    assert "A100 40GB SXM4 is the SXM4 module, not PCIe" in why
    assert "A100 80GB PCIe has 80 GB, not 40 GB" in why
    assert (
        "Tesla V100 SXM2 16GB is the SXM2 module, not PCIe"
        in (match_driver_name("Tesla V100-PCIE-16GB")[1])
    )
    with pytest.raises(TypeError, match="device_name=None must be a name"):
        gl.find_spec(None)


def test_every_entry_states_its_form_factor():
    for spec in gl.list_specs():
        assert spec.form_factor, spec.name


def test_every_row_states_whether_it_can_be_bought():
    header = next(csv.reader(DATA.open()))
    assert "status" in header
    for spec in gl.list_specs():
        assert spec.status in ("available", "announced"), spec.name
    with pytest.raises(ValueError, match="status='rumoured'"):
        dataclasses.replace(gl.get_spec("T4"), status="rumoured")
    assert dataclasses.replace(gl.get_spec("T4"), status="announced").status == "announced"


@pytest.mark.parametrize(
    "peak_flops, error, match",
    [
        ({"fp32": -1.0}, ValueError, r"peak_flops\['fp32'\]=-1.0"),
        ({"fp32": float("nan")}, ValueError, r"peak_flops\['fp32'\]=nan"),
        ({"int4": 1.0}, ValueError, "peak_flops has a figure for 'int4'"),
        ({"fp32": "1e12"}, TypeError, r"peak_flops\['fp32'\]='1e12'"),
        ({16: 1.0}, TypeError, "peak_flops="),
        (["fp32"], TypeError, "peak_flops="),
    ],
)
def test_an_entry_refuses_impossible_peaks(peak_flops, error, match):
    with pytest.raises(error, match=match):
        dataclasses.replace(gl.get_spec("T4"), peak_flops=peak_flops)


@pytest.mark.parametrize(
    "name, precision, tflops, bandwidth_gbs, memory_gb",
    [
        # AMD MI325X: same CDNA 3 compute as the MI300X, 256 GB HBM3E at 6 TB/s.
        ("MI325X", "bf16", 1307.4, 6000, 256),
        # Google's TPU pages: v5p 459 TFLOPS BF16, 2,765 GBps; v6e 918, 1,638 GBps.
        ("TPU v5p", "bf16", 459, 2765, 95),
        ("Trillium", "bf16", 918, 1638, 32),
        # TPU7x: 4,614 TFLOPS FP8 and 192 GiB; its HBM bandwidth was not read, so None.
        ("Ironwood", "fp8", 4614, None, 192),
        # CPUs: 12 channels x 6,400 MT/s x 8 bytes; FP32 derived as cores x GHz x 64.
        ("EPYC 9755", "fp32", 22.1, 614.4, None),
        ("Xeon 6980P", "fp32", 16.4, 614.4, None),
    ],
)
def test_late_2026_rows_carry_their_sourced_figures(
    name, precision, tflops, bandwidth_gbs, memory_gb
):
    spec = gl.get_spec(name)
    assert spec.peak(precision) == pytest.approx(tflops * 1e12)
    if bandwidth_gbs is None:
        assert spec.memory_bandwidth is None
    else:
        assert spec.memory_bandwidth == pytest.approx(bandwidth_gbs * 1e9)
    assert spec.memory_bytes == (None if memory_gb is None else pytest.approx(memory_gb * 1e9))
    if spec.kind == "cpu":
        assert spec.memory_bandwidth == pytest.approx(12 * 6400e6 * 8)


def test_a_figure_the_primary_source_does_not_give_stays_empty():
    # NVIDIA's Blackwell Ultra blog gives 288 GB, 8 TB/s and 15 PFLOPS dense NVFP4 only.
    b300 = gl.get_spec("B300")
    assert (b300.memory_bytes, b300.memory_bandwidth, b300.sm_count) == (288e9, 8e12, 160)
    assert b300.peak_flops == {} and b300.tdp is None and b300.ridge_point is None
    with pytest.raises(ValueError, match="B300 .* has no bf16 figure"):
        b300.peak("bf16")
    assert "15 PFLOPS DENSE NVFP4" in b300.notes


def test_the_ridge_point_does_not_rise_with_every_generation():
    # 16-bit peak / bandwidth: H100 SXM 989.5/3,350 = 295; the H200 keeps that compute with
    # 4,800 GB/s (206); the HGX B200 has 2,250/7,700 = 292. Chapters must not say it always rises.
    def ridge(name):
        spec = gl.get_spec(name)
        return spec.peak("bf16") / spec.memory_bandwidth

    assert round(ridge("A100 80GB")) == 153
    assert round(ridge("H100 SXM")) == 295
    assert round(ridge("H200")) == 206 and round(ridge("B200")) == 292
    assert ridge("B200") < ridge("H100 SXM") and ridge("H200") < ridge("H100 SXM")


def test_the_rows_for_common_cloud_gpus_say_what_they_were_derived_from():
    # The V100 datasheet gives one SXM2 column for 16 and 32 GB: only the memory differs.
    v16, v32 = gl.find_spec("Tesla V100-SXM2-16GB"), gl.get_spec("V100 SXM2 32GB")
    assert v16.memory_bytes == 16e9 and v32.memory_bytes == 32e9
    assert v16.peak_flops == v32.peak_flops and v16.memory_bandwidth == v32.memory_bandwidth
    assert v16.source_url == v32.source_url and "Derived from" in v16.notes
    # No primary source gives the A10G's peaks or bandwidth: empty, never the A10's.
    a10g, a10 = gl.find_spec("NVIDIA A10G"), gl.get_spec("A10")
    assert a10g.memory_bytes == 24e9 and a10g.peak_flops == {}
    assert a10g.memory_bandwidth is None and a10.peak("fp32") == pytest.approx(31.2e12)
    assert "Left EMPTY" in a10g.notes and "docs.aws.amazon.com" in a10g.source_url


def test_every_link_figure_says_which_directions_it_counts():
    header = next(csv.reader(DATA.open()))
    assert header[header.index("interconnect_bandwidth_gbs") + 1] == "interconnect_direction"
    for spec in gl.list_specs():
        if spec.interconnect_bandwidth is None:
            assert spec.interconnect_direction == "", spec.name
        else:
            assert spec.interconnect_direction in ("both", "each", "unstated"), spec.name
    with pytest.raises(ValueError, match="interconnect_direction='sideways'"):
        dataclasses.replace(gl.get_spec("T4"), interconnect_direction="sideways")


def test_a_one_way_copy_gets_half_of_a_both_ways_figure():
    t4 = gl.get_spec("T4")  # NVIDIA: 32 GB/s for PCIe Gen3 x16, both directions together
    assert t4.interconnect_bandwidth == 32e9 and t4.interconnect_direction == "both"
    assert t4.interconnect_bandwidth_one_way == 16e9
    # Within 2% of the per-direction figure the link registry derives from the encoding.
    assert t4.interconnect_bandwidth_one_way == pytest.approx(
        gl.interconnect(t4.interconnect).bandwidth, rel=0.02
    )
    h100 = gl.get_spec("H100 SXM")  # NVLink 4: 900 GB/s both ways, 450 each way
    assert h100.interconnect_bandwidth_one_way == gl.interconnect("NVLink 4").bandwidth
    each = dataclasses.replace(t4, interconnect_direction="each")
    assert each.interconnect_bandwidth_one_way == 32e9
    assert gl.get_spec("MI250X").interconnect_bandwidth_one_way is None  # source does not say
    assert gl.get_spec("Xeon 8380").interconnect_bandwidth_one_way is None


def test_announced_parts_carry_only_primary_figures():
    for name in ("Rubin", "MI455X"):
        spec = gl.get_spec(name)
        assert spec.status == "announced" and spec.memory_type == "HBM4"
        assert spec.peak_flops == {} and spec.memory_bytes is None  # secondary sources only
        assert "SECONDARY SOURCES ONLY" in spec.notes


def test_the_b200_row_is_nvidias_current_hgx_table():
    b200 = gl.get_spec("B200")
    assert b200.peak("fp32") == 75e12 and b200.peak("tf32") == 1100e12
    assert b200.peak("bf16") == 2250e12 and b200.memory_bandwidth == 7.7e12
    assert b200.source_url == "https://www.nvidia.com/en-us/data-center/hgx/"


def test_packages_of_several_gpus_say_so_and_give_one_gpus_share():
    # Datasheets quote a K80 board (two GK210 GPUs) and an MI250X (two GCDs) whole; software
    # sees each GPU as a device of its own. The notes say so; the column makes it usable.
    several = {s.name: s.gpus_per_package for s in gl.list_specs() if s.gpus_per_package > 1}
    assert several == {"Tesla K80": 2, "Instinct MI250X": 2}
    assert "two GPUs" in gl.get_spec("K80").notes.replace("TWO", "two")
    assert "two GCDs" in gl.get_spec("MI250X").notes.replace("of two GCDs", "two GCDs")
    k80, one = gl.get_spec("K80"), gl.get_spec("K80").per_gpu()
    assert (one.memory_bytes, one.memory_bandwidth) == (12e9, 240e9)  # the datasheet's per-GPU
    assert one.peak("fp32") == pytest.approx(k80.peak("fp32") / 2)
    assert one.tdp == 150 and one.sm_count == 13 and one.gpus_per_package == 1
    assert "derived" in one.notes and one.name == "Tesla K80 (one of 2 GPUs)"
    gcd = gl.get_spec("MI250X").per_gpu()
    assert gcd.memory_bytes == 64e9 and gcd.peak("bf16") == pytest.approx(191.5e12)
    # Ratios of two package figures are unchanged: FLOP/s per W and per byte compare alike.
    assert one.peak("fp32") / one.tdp == pytest.approx(k80.peak("fp32") / k80.tdp)
    assert one.ridge_point == pytest.approx(k80.ridge_point)
    with pytest.raises(ValueError, match="gpus_per_package=0"):
        dataclasses.replace(gl.get_spec("T4"), gpus_per_package=0)


def test_a_driver_name_finds_one_gpu_and_memory_fits_count_one_gpu():
    assert gl.find_spec("Tesla K80").memory_bytes == 12e9      # what one K80 device reports
    assert gl.find_spec("Tesla T4") is gl.get_spec("T4")
    est = gl.estimate_training_memory(1_000_000_000, precision="amp_bf16")  # about 16 GB
    assert not est.fits("K80") and est.fits("Tesla V100 SXM2 32GB")
    plan = gl.plan_training("BERT-base", specs=["K80"])
    assert plan.options[0].spec.name == "Tesla K80 (one of 2 GPUs)"


def test_the_rtx_4090_fp8_peak_is_the_fp32_accumulate_figure_of_the_ada_whitepaper():
    # Ada whitepaper v2.02+, Appendix A: FP8 dense is 330.3 TFLOPS with FP32 accumulate and
    # 660.6 with FP16 accumulate (footnote 4: earlier versions printed 660.6 for both).
    rtx = gl.get_spec("RTX 4090")
    assert rtx.peak("fp8") == pytest.approx(330.3e12)
    assert rtx.peak("fp8") == pytest.approx(2 * rtx.peak("bf16"), rel=1e-3)  # both FP32 accum.
    assert "FP8 with FP32 accumulate = 330.3" in rtx.notes
    assert "FP8 with FP16 accumulate = 660.6" in rtx.notes
    assert "nvidia-ada-gpu-architecture.pdf" in rtx.source_url
    bib = (Path(gl.__file__).parents[1] / "book" / "references.bib").read_text(encoding="utf-8")
    assert "@misc{nvidia2022ada," in bib and rtx.source_url in bib


def test_chapters_name_a_board_of_two_gpus_per_gpu_wherever_they_list_fits():
    # gl.gpus_that_fit counts one GPU of a K80 board or an MI250X: a listing that prints the
    # registry's name would show the board ("Tesla K80") for what one GPU holds.
    book = Path(gl.__file__).parents[1] / "book"
    listings = [f"{p.name}: {line.strip()}" for p in sorted(book.glob("*.md"))
                for line in p.read_text(encoding="utf-8").splitlines()
                if "gpus_that_fit(" in line and ".name" in line]
    assert listings, "no chapter lists gl.gpus_that_fit any more: update this test"
    assert [x for x in listings if ".per_gpu().name" not in x] == []
    est = gl.estimate_training_memory(3_000_000_000, precision="amp_bf16")
    names = [s.per_gpu().name for s in gl.gpus_that_fit(est)]
    assert names[0] == "Instinct MI250X (one of 2 GPUs)"
    # The memory table shows the same per-GPU rows and says so.
    text = (book / "memory_bandwidth.md").read_text(encoding="utf-8")
    assert "s.per_gpu() for s in memory_specs" in text and "two GPUs per board" in text
