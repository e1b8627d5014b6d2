"""The benchmark report: its schema, the bench command, and the gallery's table and figure."""

import copy
import json

import pytest

import gpulab as gl
from gpulab import report as rep
from gpulab.__main__ import main
from gpulab.course import gallery


@pytest.fixture(scope="module")
def committed_reports(root):
    reports = gallery.load_reports(root / "results")
    assert reports, "results/ holds no report"
    return reports


@pytest.fixture
def tiny_sizes(monkeypatch):
    """Problem sizes small enough for a test; the code paths are the real ones."""
    monkeypatch.setitem(rep._SIZES, "cpu", {"matmul_n": (64, 64), "copy_bytes": (2**20, 2**20)})
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
    cpu = rep.reference_for(gl.detect_device()) if not gl.detect_device().is_gpu else None
    if cpu is not None:
        assert cpu["kind"] == "estimate" and "estimate" in cpu["label"]
        assert cpu["peak_flops"]["fp32"] == pytest.approx(gl.estimate_cpu_peak().peak_flops)


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
    if report["device_type"] != "cuda":
        assert {"name": "h2d/d2h", "dtype": None, "reason": "no CUDA GPU here"} in report["skipped"]
    with pytest.raises(ValueError, match="quick='yes'"):
        rep.run_bench(quick="yes")


@pytest.mark.cuda
def test_run_bench_on_a_gpu_measures_transfers(tiny_sizes, monkeypatch):
    monkeypatch.setitem(rep._SIZES, "gpu", {"matmul_n": (256, 256), "copy_bytes": (2**22, 2**22)})
    monkeypatch.setattr(rep, "_TRANSFER_BYTES", (2**22, 2**22))
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
