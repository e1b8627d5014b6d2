"""Recording labs: one lab in place, or every lab in one run that stops at the first failure."""

from __future__ import annotations

import json
import os

import nbformat
import pytest

from gpulab.__main__ import main
from gpulab.course import record as rec


def _lab(folder, name, code, *, provenance=True):
    cells = [nbformat.v4.new_code_cell(src) for src in code]
    if provenance:
        cells.insert(0, nbformat.v4.new_markdown_cell("(filled when recorded)"))
        cells[0].metadata["tags"] = ["provenance"]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = folder / f"{name}_lab.ipynb"
    nbformat.write(nb, path)
    return path


def test_record_all_stops_at_the_first_failure_naming_lab_and_cell(tmp_path):
    good = _lab(tmp_path, "a", ["print(6 * 7)"])
    bad = _lab(tmp_path, "b", ["x = 1", "raise ValueError('broken on purpose')"])
    later = _lab(tmp_path, "c", ["print('never')"])
    later_before = later.read_text()
    with pytest.raises(rec.RecordingError, match=r"b_lab\.ipynb: cell 2 failed.*broken on purpose"):
        rec.record_all(tmp_path, results=None, timeout_s=60, progress=lambda _: None)
    recorded = nbformat.read(good, as_version=4)
    assert recorded.cells[0].source.startswith("**Provenance.**")
    assert recorded.cells[1].outputs[0]["text"] == "42\n"
    assert "run_time_s" in recorded.metadata["gpulab"]
    assert "Provenance" not in nbformat.read(bad, as_version=4).cells[0].source
    assert later.read_text() == later_before  # the run stopped before it


def test_record_all_checks_every_provenance_cell_before_running_any(tmp_path):
    first = _lab(tmp_path, "a", ["print(1)"])
    _lab(tmp_path, "b", ["print(2)"], provenance=False)
    before = first.read_text()
    with pytest.raises(ValueError, match=r"b_lab\.ipynb needs exactly one markdown cell"):
        rec.record_all(tmp_path, results=None, progress=lambda _: None)
    assert first.read_text() == before


def test_record_all_writes_a_bench_report(tmp_path, monkeypatch):
    labs = tmp_path / "labs"
    labs.mkdir()
    _lab(labs, "a", ["print(1)"])
    report = {"provenance": {"date": "2026-12-03", "device": "NVIDIA H200; torch 2.9"}, "x": 1}
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", lambda **_: report)
    rec.record_all(labs, results=tmp_path / "results", progress=lambda _: None)
    written = tmp_path / "results" / "2026-12-03-nvidia-h200.json"
    assert json.loads(written.read_text()) == report


def test_record_command_needs_labs_or_all(tmp_path, capsys):
    assert main(["record"]) == 2
    assert "name the labs to record, or give --all" in capsys.readouterr().err
    bad = _lab(tmp_path, "b", ["1 / 0"])
    assert main(["record", str(bad), "--timeout", "60"]) == 1
    assert "cell 1 failed while recording (ZeroDivisionError" in capsys.readouterr().err


def _fake_gpu_provenance(monkeypatch):
    real = rec.provenance

    def on_a_gpu():
        record = real()
        record.update(kind="cuda", name="NVIDIA H100 80GB HBM3", device="NVIDIA H100 (cuda)")
        return record

    monkeypatch.setattr(rec, "provenance", on_a_gpu)


def test_gpu_recording_goes_beside_the_lab_and_leaves_its_cpu_outputs(tmp_path, monkeypatch):
    lab = _lab(tmp_path, "a", ["open('side.txt', 'a').write('ran;'); print(6 * 7)"])
    rec.record_notebook(lab, timeout_s=60)  # the CPU recording, in place
    assert (tmp_path / "side.txt").read_text() == "ran;"
    cpu_before = nbformat.read(lab, as_version=4)
    _fake_gpu_provenance(monkeypatch)
    record = rec.record_notebook(lab, timeout_s=60)

    target = tmp_path / "recordings" / "cuda" / "a_lab.ipynb"
    assert record["path"] == str(target)
    gpu = nbformat.read(target, as_version=4)
    assert gpu.cells[1].outputs[0]["text"] == "42\n"
    assert "NVIDIA H100 (cuda)" in gpu.cells[0].source
    # The lab keeps its CPU outputs and provenance and learns of the GPU run time.
    after = nbformat.read(lab, as_version=4)
    assert after.cells == cpu_before.cells
    assert set(after.metadata["gpulab"]["run_time_s"]) == {"cpu", "cuda"}
    assert after.metadata["gpulab"]["recorded"]["cuda"]["name"] == "NVIDIA H100 80GB HBM3"
    # It ran in a copy of the folder: the file it wrote beside itself is untouched.
    assert (tmp_path / "side.txt").read_text() == "ran;"


def test_lab_recordings_lists_each_kind_with_its_provenance(tmp_path, monkeypatch):
    from gpulab.course.recordings import lab_recordings, recordings_summary

    lab = _lab(tmp_path, "a", ["print(1)"])
    assert lab_recordings(lab) == {}  # never recorded: nothing to show
    rec.record_notebook(lab, timeout_s=60)
    found = lab_recordings(lab)
    assert list(found) == ["cpu"]
    assert recordings_summary(found)[-1].startswith("No GPU recording yet")
    _fake_gpu_provenance(monkeypatch)
    rec.record_notebook(lab, timeout_s=60)
    found = lab_recordings(lab)
    assert list(found) == ["cpu", "cuda"]
    assert found["cuda"].label == "GPU (NVIDIA H100 80GB HBM3)"
    summary = recordings_summary(found)
    assert len(summary) == 2 and not any("No GPU recording" in line for line in summary)
    assert summary[1].startswith("GPU (NVIDIA H100 80GB HBM3): outputs recorded on")


def test_the_kernel_waits_passively_and_the_environment_is_restored(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    lab = _lab(tmp_path, "a", ["import os; print(os.environ.get('OMP_WAIT_POLICY'))"])
    rec.record_notebook(lab, timeout_s=60)
    assert nbformat.read(lab, as_version=4).cells[1].outputs[0]["text"] == "PASSIVE\n"
    assert "OMP_WAIT_POLICY" not in os.environ
