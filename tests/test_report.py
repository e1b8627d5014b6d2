"""The benchmark report: its schema, the bench command, and the gallery's table and figure."""

import copy
import json

import pytest

import gpulab as gl
from gpulab.__main__ import main
from gpulab.course import gallery
from gpulab.measure import bench_report as rep


@pytest.fixture(scope="module")
def committed_reports(root):
    reports = gallery.load_reports(root / "results")
    assert reports, "results/ holds no report"
    return reports


TINY = {"matmul_n": (64, 64), "copy_bytes": (2**20, 2**20)}


@pytest.fixture
def tiny_sizes(monkeypatch):
    """Problem sizes small enough for a test, on a CPU or a GPU; the code paths are real."""
    monkeypatch.setitem(rep._SIZES, "cpu", TINY)
    monkeypatch.setitem(rep._SIZES, "gpu", TINY)
    monkeypatch.setattr(rep, "_TRANSFER_BYTES", (2**20, 2**20))
    monkeypatch.setattr(rep, "MLP_WIDTHS", (32, 32, 10))
    monkeypatch.setattr(rep, "MLP_BATCH", 8)


def _good(committed_reports) -> dict:
    report = copy.deepcopy(committed_reports[0])
    report.pop("_file")
    return report


def test_committed_reports_validate_and_carry_provenance(committed_reports):
    for report in committed_reports:
        prov = report["provenance"]
        assert prov["device"] and prov["torch"] and prov["date"] and prov["gpulab"]
        assert report["notes"], f"{report['_file']}: say under what conditions it was measured"
        names = {e["name"] for e in report["results"]}
        assert {"matmul", "copy", "train_step"} <= names
        if prov["kind"] == "cuda":
            assert {"h2d", "d2h"} <= names


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda r: r.pop("provenance"), "(top level): 'provenance' is a required property"),
        (
            lambda r: r["results"][0].update(value=-1.0),
            "results/0/value: -1.0 is less than or equal",
        ),
        (lambda r: r["results"][0].update(unit="GB/s"), "results/0/unit: 'GB/s' is not one of"),
        (lambda r: r["results"].clear(), "results: [] should be non-empty"),
        (lambda r: r["provenance"].update(date="2 Dec"), "provenance/date: '2 Dec' does not match"),
        (lambda r: r["reference"].update(kind="rumour"), "reference/kind: 'rumour' is not one of"),
        (lambda r: r["results"][0].update(speed=1), "results/0: Additional properties"),
    ],
)
def test_broken_report_fails_with_a_clear_message(committed_reports, breakage, message):
    report = _good(committed_reports)
    rep.validate_report(report)  # valid before it is broken
    breakage(report)
    with pytest.raises(ValueError) as err:
        rep.validate_report(report, source="x.json")
    assert str(err.value).startswith("x.json does not match bench_report.schema.json: ")
    assert message in str(err.value)


def test_a_report_that_is_not_a_dict_is_the_wrong_type():
    with pytest.raises(ValueError, match="'provenance' is a required property"):
        rep.validate_report({})  # a dict, but not a report
    for bad in (42, "x", [{}], None):
        with pytest.raises(TypeError, match="report=.* must be a dict"):
            rep.validate_report(bad)
    with pytest.raises(TypeError, match="source=3"):
        rep.validate_report({}, source=3)


def test_datasheet_reference_needs_its_source(committed_reports):
    report = _good(committed_reports)
    report["reference"] = {"kind": "datasheet", "label": "datasheet", "name": "Tesla T4"}
    with pytest.raises(ValueError, match="'peak_flops' is a required property"):
        rep.validate_report(report)


def test_load_reports_names_the_bad_file(tmp_path, committed_reports):
    (tmp_path / "good.json").write_text(json.dumps(_good(committed_reports)))
    assert [r["_file"] for r in gallery.load_reports(tmp_path)] == ["good.json"]
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        gallery.load_reports(tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="bad.json does not match"):
        gallery.load_reports(tmp_path)
    with pytest.raises(FileNotFoundError, match="folder="):
        gallery.load_reports(tmp_path / "missing")


def test_reference_is_the_datasheet_for_a_known_gpu_and_an_estimate_for_a_cpu():
    t4 = rep.reference_for(gl.DeviceInfo(kind="cuda", name="Tesla T4"))
    assert t4["kind"] == "datasheet" and t4["name"] == "Tesla T4"
    assert t4["memory_bandwidth"] == 320e9 and t4["source_url"].startswith("https://")
    assert (
        rep.reference_for(gl.DeviceInfo(kind="cuda", name="NVIDIA Tesla T4"))["name"] == "Tesla T4"
    )
    unknown = rep.reference_for(gl.DeviceInfo(kind="cuda", name="Imaginary X1"))
    assert unknown["kind"] == "none" and "not in the registry" in unknown["label"]
    cpu = rep.reference_for(gl.DeviceInfo(kind="cpu", name="CPU", cpu_model="Test CPU"))
    assert cpu["kind"] == "estimate" and "estimate" in cpu["label"] and cpu["name"] == "Test CPU"
    assert cpu["peak_flops"]["fp32"] == pytest.approx(gl.estimate_cpu_peak().peak_flops)
    assert cpu["formula"] == gl.estimate_cpu_peak().formula


@pytest.mark.parametrize(
    "driver_name, registry_name, bandwidth",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 3350e9),
        ("NVIDIA H100 PCIe", "H100 PCIe 80GB", 2000e9),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4", 2039e9),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935e9),
    ],
)
def test_reference_for_names_as_the_driver_reports_them(driver_name, registry_name, bandwidth):
    ref = rep.reference_for(gl.DeviceInfo(kind="cuda", name=driver_name))
    assert (ref["kind"], ref["name"], ref["memory_bandwidth"]) == (
        "datasheet",
        registry_name,
        bandwidth,
    )


def test_a_card_missing_from_the_registry_gets_no_siblings_figures():
    ref = rep.reference_for(gl.DeviceInfo(kind="cuda", name="NVIDIA A100-PCIE-40GB"))
    assert ref["kind"] == "none" and "peak_flops" not in ref
    assert "NVIDIA A100-PCIE-40GB is not in the registry" in ref["label"]
    assert "A100 40GB SXM4 is the SXM4 module, not PCIe" in ref["label"]
    with pytest.raises(TypeError, match="info='cuda' must be a DeviceInfo"):
        rep.reference_for("cuda")


def test_reference_on_a_simulated_gpu_is_its_datasheet(any_fake_gpu):
    ref = rep.reference_for(gl.detect_device())
    spec = gl.get_spec(any_fake_gpu.registry_name)
    assert ref["kind"] == "datasheet" and ref["name"] == spec.name
    assert ref["peak_flops"] == spec.peak_flops and ref["source_url"] == spec.source_url


def test_a_gpu_run_is_sized_for_the_gpu(any_fake_gpu):
    import torch

    device = gl.best_device()
    assert device.type == "cuda"
    assert rep._problem_sizes(device, quick=True) == {
        "matmul_n": rep._SIZES["gpu"]["matmul_n"][0],
        "copy_bytes": rep._SIZES["gpu"]["copy_bytes"][0],
        "transfer_bytes": rep._TRANSFER_BYTES[0],
    }
    assert rep._problem_sizes(torch.device("cpu"), quick=False)["matmul_n"] == 1024


@pytest.mark.parametrize(
    "gpu, skipped",
    [
        ("T4", {"tf32", "bf16"}),  # Turing, 7.5: no TF32 or BF16 Tensor Cores
        ("A100", set()),  # Ampere, 8.0
        ("H100", set()),  # Hopper, 9.0
    ],
)
def test_precisions_measured_follow_the_compute_capability(fake_gpu, gpu, skipped):
    import torch

    fake_gpu(gpu)
    support = rep._dtype_support(torch, torch.device("cuda"), probe=False)
    assert list(support) == ["fp32", "bf16", "fp16", "tf32"]
    assert {dtype for dtype, reason in support.items() if reason} == skipped
    if gpu == "T4":
        # torch would run BF16 on a T4 by emulation; the report does not time the emulation.
        assert torch.cuda.is_bf16_supported()
        assert support["bf16"].startswith("BF16 Tensor Cores need compute capability 8.0")
        assert "(this GPU: 7.5)" in support["tf32"]


def test_a_simulated_gpu_cannot_run_kernels(any_fake_gpu):
    import torch

    if torch.backends.cuda.is_built():
        pytest.skip("this torch is a CUDA build: kernels would run on the machine's real GPU")
    # On a CPU build the fake reports a GPU but has none: the probe's tiny matmul would fail,
    # which is why the capability-based decision is tested with probe=False.
    with pytest.raises((RuntimeError, AssertionError)):
        torch.ones(2, device="cuda")


def test_run_bench_measures_every_standard_quantity(tiny_sizes):
    seen = []
    report = rep.run_bench(quick=True, notes="test", progress=seen.append)
    rep.validate_report(report)
    by_name = {(e["name"], e["dtype"]) for e in report["results"]}
    assert ("matmul", "fp32") in by_name and ("copy", None) in by_name
    assert ("train_step", "fp32") in by_name
    matmul = next(e for e in report["results"] if e["name"] == "matmul")
    assert matmul["params"] == {"n": 64}
    assert matmul["value"] == pytest.approx(2 * 64**3 / matmul["median_s"])
    train = next(e for e in report["results"] if e["name"] == "train_step")
    assert train["params"]["model"] == "MLP 32-32-10" and train["params"]["batch"] == 8
    assert seen[0] == "matmul fp32" and "train step" in seen
    names = {e["name"] for e in report["results"]}
    if report["device_type"] == "cuda":  # on a GPU machine the tiny sizes are used too
        assert {"h2d", "d2h"} <= names
        h2d = next(e for e in report["results"] if e["name"] == "h2d")
        assert h2d["params"]["bytes"] == 2**20
    else:
        assert {"name": "h2d/d2h", "dtype": None, "reason": "no CUDA GPU here"} in report["skipped"]
    with pytest.raises(TypeError, match="quick='yes'"):
        rep.run_bench(quick="yes")
    with pytest.raises(TypeError, match="notes=3 must be a str"):
        rep.run_bench(quick=True, notes=3)
    with pytest.raises(TypeError, match="progress=3 must be a callable"):
        rep.run_bench(quick=True, progress=3)


@pytest.mark.cuda
def test_run_bench_on_a_gpu_measures_transfers(tiny_sizes):
    report = rep.run_bench(quick=True)
    memories = {e["params"]["host_memory"] for e in report["results"] if e["name"] == "h2d"}
    assert memories == {"pageable", "pinned"}
    assert report["reference"]["kind"] in ("datasheet", "none")


def test_bench_command_writes_a_valid_report(tmp_path, tiny_sizes, capsys):
    out = tmp_path / "results" / "x.json"
    assert main(["bench", "--quick", "--out", str(out), "--notes", "in a test"]) == 0
    report = json.loads(out.read_text())
    rep.validate_report(report)
    assert report["notes"] == "in a test" and report["quick"] is True
    assert "checked against bench_report.schema.json" in capsys.readouterr().out


def test_gallery_table_sets_measured_beside_reference(committed_reports):
    table = gallery.gallery_table(committed_reports)
    assert len(table.splitlines()) == 2 + sum(len(r["results"]) for r in committed_reports)
    for report in committed_reports:
        lines = gallery.gallery_table([report]).splitlines()[2:]
        assert report["provenance"]["date"] in lines[0] and all("**" not in x for x in lines[1:])
        ref = report["reference"]
        row = next(line for line in lines if "matmul FP32" in line)
        if ref.get("peak_flops", {}).get("fp32"):
            fp32 = next(
                e for e in report["results"] if (e["name"], e["dtype"]) == ("matmul", "fp32")
            )
            ratio = f"{100 * fp32['value'] / ref['peak_flops']['fp32']:.0f}%"
            assert row.endswith(f"| {ratio} |") and f"({ref['kind']})" in row
        copy_row = next(line for line in lines if "memory copy" in line)
        if not ref.get("memory_bandwidth"):
            assert copy_row.endswith("| — | — |")


def test_gallery_figure_has_a_panel_per_report(committed_reports):
    import matplotlib.pyplot as plt

    fig = gallery.plot_reports(committed_reports)
    assert len(fig.axes) == len(committed_reports)
    plt.close(fig)
    with pytest.raises(ValueError, match="reports=\\[\\] is empty"):
        gallery.plot_reports([])


# Breakages that reach every keyword the schema uses, for comparing the standard-library
# checker with jsonschema: each breaks the committed report in one way (or several).
_BREAKAGES = {
    "valid": lambda r: None,
    "version": lambda r: r.update(schema_version=2),
    "version_bool": lambda r: r.update(schema_version=True),
    "missing": lambda r: [r.pop(k) for k in ("notes", "quick")],
    "notes_type": lambda r: r.update(notes=3),
    "quick_int": lambda r: r.update(quick=1),
    "threads_zero": lambda r: r.update(threads=0),
    "threads_float": lambda r: r.update(threads=2.0),
    "threads_half": lambda r: r.update(threads=2.5),
    "kind": lambda r: r["provenance"].update(kind="tpu"),
    "device_empty": lambda r: r["provenance"].update(device=""),
    "torch_null": lambda r: r["provenance"].update(torch=None),
    "torch_number": lambda r: r["provenance"].update(torch=2),
    "date": lambda r: r["provenance"].update(date="2026/12/02"),
    "results_empty": lambda r: r["results"].clear(),
    "results_dict": lambda r: r.update(results={}),
    "value_zero": lambda r: r["results"][0].update(value=0),
    "value_bool": lambda r: r["results"][0].update(value=True),
    "iqr_negative": lambda r: r["results"][0].update(iqr_s=-0.1),
    "runs_zero": lambda r: r["results"][0].update(runs=0, samples="3"),
    "extra_fields": lambda r: r["results"][0].update(speed=1, colour="red"),
    "matmul_unit": lambda r: r["results"][0].update(unit="B/s"),
    "matmul_dtype_null": lambda r: r["results"][0].update(dtype=None),
    "matmul_no_n": lambda r: r["results"][0]["params"].clear(),
    "copy_as_h2d": lambda r: r["results"].append(
        {**r["results"][0], "name": "h2d", "unit": "B/s", "params": {"bytes": 8}}
    ),
    "item_not_object": lambda r: r["results"].append("matmul"),
    "skipped_no_reason": lambda r: r.update(skipped=[{"name": "h2d", "reason": ""}]),
    "reference_kind": lambda r: r["reference"].update(kind="rumour"),
    "estimate_no_formula": lambda r: r["reference"].pop("formula"),
    "peak_name": lambda r: r["reference"]["peak_flops"].update(fp64=1.0, fp16=-1.0),
    "bandwidth_zero": lambda r: r["reference"].update(memory_bandwidth=0),
    "datasheet": lambda r: r["reference"].update(kind="datasheet", source_url="ftp://x"),
    "not_a_report": lambda r: r.clear(),
}


#: Edges the schema allows: no change, a null torch version, 2.0 as an integer (JSON Schema).
_STILL_VALID = {"valid", "torch_null", "threads_float"}


@pytest.mark.parametrize("breakage", sorted(_BREAKAGES))
def test_the_standard_library_checker_agrees_with_jsonschema(committed_reports, breakage):
    jsonschema = pytest.importorskip("jsonschema")
    from gpulab._schema import schema_errors

    report = _good(committed_reports)
    _BREAKAGES[breakage](report)
    validator = jsonschema.Draft202012Validator(rep.bench_schema())
    expected = sorted((tuple(e.absolute_path), e.message) for e in validator.iter_errors(report))
    found = sorted(schema_errors(report, rep.bench_schema()))
    assert [where for where, _ in found] == [where for where, _ in expected]
    assert (found == []) == (breakage in _STILL_VALID)
    if _words_messages_as_the_checker():
        assert found == expected


def _words_messages_as_the_checker() -> bool:
    """Whether the installed jsonschema words its messages as the checker does (4.21 on)."""
    from importlib.metadata import version

    major, minor = (int(part) for part in version("jsonschema").split(".")[:2])
    return (major, minor) >= (4, 21)


def test_the_checker_refuses_a_keyword_it_does_not_know():
    from gpulab._schema import schema_errors

    with pytest.raises(ValueError, match="'maxLength' is not supported"):
        list(schema_errors("abc", {"maxLength": 2}))


def test_a_report_is_checked_without_jsonschema(committed_reports, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as in a core install
    report = _good(committed_reports)
    rep.validate_report(report)
    report["results"][0]["value"] = -1.0
    with pytest.raises(ValueError, match="results/0/value: -1.0 is less than or equal"):
        rep.validate_report(report)
