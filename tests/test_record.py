"""Recording labs: one lab in place, or every lab in one run that goes on after a failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest

from gpulab.__main__ import main
from gpulab.course import record as rec
from gpulab.units import format_bytes


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


def _full_lab(folder, name, code, *, setup=True, provenance=True, run_time_s=None):
    """A lab as the course writes them: setup cell (0), provenance cell (1), then ``code``."""
    cells = []
    if setup:
        cells.append(nbformat.v4.new_code_cell("SETUP = True", metadata={"tags": ["setup"]}))
    if provenance:
        cell = nbformat.v4.new_markdown_cell("(filled when recorded)")
        cell.metadata["tags"] = ["provenance"]
        cells.append(cell)
    cells += [nbformat.v4.new_code_cell(src) for src in code]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    if run_time_s is not None:
        nb.metadata["gpulab"] = {"run_time_s": run_time_s}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_lab.ipynb"
    nbformat.write(nb, path)
    return path


def _quiet(_line):
    pass


def test_record_all_goes_on_after_a_failing_lab_and_leaves_it_as_it_was(tmp_path):
    (tmp_path / "shared.txt").write_text("before")
    good = _full_lab(tmp_path, "a", ["open('a_side.txt', 'w').write('from a'); print(6 * 7)"])
    bad = _full_lab(
        tmp_path, "b",
        ["open('shared.txt', 'w').write('b was here'); raise ValueError('broken on purpose')"],
    )  # fmt: skip
    nb = nbformat.read(bad, as_version=4)  # outputs from an earlier recording, to keep
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="earlier\n")]
    nbformat.write(nb, bad)
    bad_before = bad.read_bytes()
    later = _full_lab(tmp_path, "c", ["print('after the failure')"])
    lines = []

    outcomes = rec.record_all(tmp_path, results=None, timeout_s=60, progress=lines.append)

    assert [(o.lab, o.status) for o in outcomes] == [
        ("a_lab.ipynb", "recorded"), ("b_lab.ipynb", "failed"), ("c_lab.ipynb", "recorded"),
    ]  # fmt: skip
    assert outcomes[1].cell == 2 and outcomes[1].error == "ValueError: broken on purpose"
    for lab, text in ((good, "42\n"), (later, "after the failure\n")):
        recorded = nbformat.read(lab, as_version=4)
        assert recorded.cells[1].source.startswith("**Provenance.**")
        assert recorded.cells[2].outputs[0]["text"] == text
        assert "cpu" in recorded.metadata["gpulab"]["run_time_s"]
    # The failing lab and the file it wrote before failing are exactly as they were; the
    # passing lab's side file is kept, as when labs ran in place.
    assert bad.read_bytes() == bad_before
    assert (tmp_path / "shared.txt").read_text() == "before"
    assert (tmp_path / "a_side.txt").read_text() == "from a"
    # The closing table: a row per lab, the failure's cell and error, and a count.
    table = lines[-5:]
    assert re.fullmatch(r"lab\s+status\s+run time\s+first error", table[0])
    assert re.fullmatch(r"a_lab\.ipynb\s+recorded\s+\d+\.\d s", table[1])
    assert re.fullmatch(
        r"b_lab\.ipynb\s+failed\s+\d+\.\d s\s+cell 2: ValueError: broken on purpose", table[2]
    )
    assert re.fullmatch(r"c_lab\.ipynb\s+recorded\s+\d+\.\d s", table[3])
    assert table[4] == "3 labs: 2 recorded, 1 failed"


def test_a_lab_whose_kernel_dies_is_reported_with_its_cell(tmp_path):
    dies = _full_lab(tmp_path, "a", ["x = 1", "import os; os._exit(1)"])
    before = dies.read_bytes()
    lines = []
    (outcome,) = rec.record_all(tmp_path, results=None, timeout_s=60, progress=lines.append)
    assert (outcome.status, outcome.cell) == ("failed", 3)
    assert outcome.error.startswith("DeadKernelError")
    assert dies.read_bytes() == before
    assert re.fullmatch(r"a_lab\.ipynb\s+failed\s+\d+\.\d s\s+cell 3: DeadKernelError.*", lines[-2])
    assert lines[1].split() == ["a_lab.ipynb", "-", "never", "recorded", "on", "CPU"]
    assert lines[2].split() == ["total", "-", "1", "lab(s)", "without", "an", "estimate"]


def _fake_recording(monkeypatch, fail=()):
    """record_notebook without a kernel: labs named in ``fail`` fail in cell 2."""
    ran = []

    def record_notebook(path, timeout_s=900, kernel_name="python3"):
        ran.append(path.name)
        if path.name in fail:
            raise rec.RecordingError(f"{path}: cell 2 failed", cell=2, error="ValueError: no")
        return {"device": "a test CPU", "run_time_s": 1.0, "kind": "cpu", "path": str(path)}

    monkeypatch.setattr(rec, "record_notebook", record_notebook)
    return ran


def test_record_all_command_prints_the_table_and_exits_1_if_a_lab_failed(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    report = {"provenance": {"date": "2026-12-03", "device": "a test CPU"}}
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", lambda **_: report)
    for name in "ab":
        _full_lab(tmp_path / "notebooks", name, ["print(1)"])
    ran = _fake_recording(monkeypatch, fail={"a_lab.ipynb"})
    assert main(["record", "--all", "--timeout", "60"]) == 1
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]  # the failure did not stop the run
    out = capsys.readouterr().out
    assert re.search(r"^a_lab\.ipynb\s+failed\s+\d+\.\d s\s+cell 2: ValueError: no$", out, re.M)
    assert re.search(r"^b_lab\.ipynb\s+recorded\s+\d+\.\d s$", out, re.M)
    assert out.rstrip().endswith("2 labs: 1 recorded, 1 failed")

    _fake_recording(monkeypatch)
    assert main(["record", "--all", "--timeout", "60"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("2 labs: 2 recorded, 0 failed")


def test_record_all_checks_every_labs_first_cells_before_running_any(tmp_path, monkeypatch):
    good = _full_lab(tmp_path, "a", ["print(1)"])
    _full_lab(tmp_path, "b", ["print(2)"], setup=False)
    _full_lab(tmp_path, "c", ["print(3)"], provenance=False)
    before = good.read_bytes()
    ran = _fake_recording(monkeypatch)
    with pytest.raises(rec.RecordingError, match="no lab was recorded") as refused:
        rec.record_all(tmp_path, results=None, progress=_quiet)
    message = str(refused.value)
    assert re.search(r"b_lab\.ipynb: no cell is tagged 'setup'", message)
    assert re.search(r"c_lab\.ipynb: 0 cells are tagged 'provenance'", message)
    assert "a_lab.ipynb" not in message
    assert ran == [] and good.read_bytes() == before


def test_record_all_command_prints_a_refusal_without_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # where results/ would go, were the refusal to fail
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", lambda **_: {})
    _fake_recording(monkeypatch)
    _full_lab(tmp_path / "notebooks", "b", ["print(2)"], setup=False)
    assert main(["record", "--all"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("no lab was recorded") and "Traceback" not in err


def _free_disk(monkeypatch, free_by_path):
    real = shutil.disk_usage

    def disk_usage(path):
        usage = real(path)
        free = free_by_path(Path(path))
        return usage._replace(free=usage.free if free is None else free)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)


def test_record_all_refuses_to_start_without_the_disk_space_it_needs(tmp_path, monkeypatch):
    labs = [_full_lab(tmp_path, name, ["print(1)"]) for name in "ab"]
    lab_bytes = sum(lab.stat().st_size for lab in labs)
    ran = _fake_recording(monkeypatch)
    # Less than DISK_MARGIN x the labs' size: refused before anything runs.
    _free_disk(monkeypatch, lambda path: lab_bytes)
    with pytest.raises(rec.RecordingError, match="not enough free disk space") as refused:
        rec.record_all(tmp_path, results=None, progress=_quiet)
    assert f"2 x the labs' {format_bytes(lab_bytes)} for their recordings" in str(refused.value)
    assert ran == []
    # The folder's disk has room, but the temporary folder the labs run in is elsewhere and
    # too full for the working copy.
    monkeypatch.setattr(rec, "_same_filesystem", lambda a, b: False)
    tmp = Path(tempfile.gettempdir())
    _free_disk(monkeypatch, lambda path: 10 if path == tmp else None)
    with pytest.raises(rec.RecordingError, match=rf"disk space in {re.escape(str(tmp))}.*copy"):
        rec.record_all(tmp_path, results=None, progress=_quiet)
    assert ran == []
    # Enough room: the labs run.
    _free_disk(monkeypatch, lambda path: 10**12)
    rec.record_all(tmp_path, results=None, progress=_quiet)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]


H100 = "cuda:H100 SXM5 80GB"
T4 = "cuda:Tesla T4"


def test_record_all_prints_run_time_estimates_for_this_device_class_first(tmp_path, monkeypatch):
    _full_lab(tmp_path, "a", ["print(1)"], run_time_s={"cpu": 40.0, H100: 10.0, T4: 25.0})
    _full_lab(tmp_path, "b", ["print(2)"], run_time_s={"cpu": 30.0})
    b_on_gpu = _full_lab(tmp_path / "recordings" / "cuda" / "h100-sxm5-80gb", "b", ["print(2)"])
    nb = nbformat.read(b_on_gpu, as_version=4)  # a GPU recording the lab's metadata lacks
    nb.metadata["gpulab"] = {"run_time_s": {H100: 7.0}, "recorded": {H100: {"x": 1}}}
    nbformat.write(nb, b_on_gpu)
    _full_lab(tmp_path, "c", ["y = torch.compile(f)"], run_time_s={"cpu": 20.0, T4: 9.0})
    _full_lab(tmp_path, "d", ["print(4)"])
    _fake_recording(monkeypatch)
    lines = []

    monkeypatch.setattr(
        rec, "provenance", lambda: {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3"}
    )
    rec.record_all(tmp_path, results=None, progress=lines.append)
    estimates = lines[: lines.index("recording a_lab.ipynb ...")]
    assert estimates[0] == "Estimated run times on this machine (GPU (H100 SXM5 80GB)):"
    # Only recordings of this class count (not a's T4 time); c was recorded on a T4 only, so
    # the model estimates it: its CPU time plus one Inductor compile of unmeasured cost.
    assert [line.split()[:4] for line in estimates[1:]] == [
        ["a_lab.ipynb", "10", "s", "recorded"],
        ["b_lab.ipynb", "7", "s", "recorded"],
        ["c_lab.ipynb", ">=", "20", "s"],
        ["d_lab.ipynb", "-", "no", "recording"],
        ["total", ">=", "37", "s"],
    ]
    assert estimates[3].endswith(
        "no recording on GPU (H100 SXM5 80GB); recorded on GPU (Tesla T4), another class; "
        "ESTIMATE: the CPU run's 20 s + 1 Inductor compile(s) of unmeasured cost "
        "(--compile-s): a lower bound"
    )
    assert estimates[5].endswith(
        "1 lab(s) estimated by the model; 1 of them a lower bound; 1 lab(s) without an estimate"
    )

    lines.clear()  # with a measured cost per compile the estimate is complete
    rec.record_all(tmp_path, results=None, progress=lines.append, compile_s={"inductor": 4.0})
    assert lines[3].split()[:3] == ["c_lab.ipynb", "24", "s"]
    assert "1 Inductor compiles x 4.0 s (measured cost given)" in lines[3]

    lines.clear()
    monkeypatch.setattr(rec, "provenance", lambda: {"kind": "cpu", "name": "AMD EPYC"})
    rec.record_all(tmp_path, results=None, progress=lines.append)
    assert lines[0] == "Estimated run times on this machine (CPU):"
    assert lines[2].split()[:3] == ["b_lab.ipynb", "30", "s"]
    assert lines[5].split()[:4] == ["total", ">=", "90", "s"]  # 40 + 30 + 20 s, d unknown


def test_the_labs_table_comes_before_a_bench_failure(tmp_path, monkeypatch):
    _full_lab(tmp_path, "a", ["print(1)"])
    _fake_recording(monkeypatch)

    def broken_bench(**_):
        raise OSError("no space left")

    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", broken_bench)
    lines = []
    with pytest.raises(rec.RecordingError, match="bench failed: OSError: no space left"):
        rec.record_all(tmp_path, results=tmp_path / "results", progress=lines.append)
    assert lines[-1] == "1 labs: 1 recorded, 0 failed"


def test_record_all_writes_a_bench_report(tmp_path, monkeypatch):
    labs = tmp_path / "labs"
    _full_lab(labs, "a", ["print(1)"])
    report = {"provenance": {"date": "2026-12-03", "device": "NVIDIA H200; torch 2.9"}, "x": 1}
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", lambda **_: report)
    rec.record_all(labs, results=tmp_path / "results", progress=_quiet)
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

    target = tmp_path / "recordings" / "cuda" / "h100-sxm5-80gb" / "a_lab.ipynb"
    assert record["path"] == str(target) and record["device_class"] == H100
    gpu = nbformat.read(target, as_version=4)
    assert gpu.cells[1].outputs[0]["text"] == "42\n"
    assert "NVIDIA H100 (cuda)" in gpu.cells[0].source
    # The lab keeps its CPU outputs and provenance and learns of the GPU run time.
    after = nbformat.read(lab, as_version=4)
    assert after.cells == cpu_before.cells
    assert set(after.metadata["gpulab"]["run_time_s"]) == {"cpu", H100}
    assert after.metadata["gpulab"]["recorded"][H100]["name"] == "NVIDIA H100 80GB HBM3"
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
    assert list(found) == ["cpu", H100]
    assert found[H100].label == "GPU (H100 SXM5 80GB)"
    summary = recordings_summary(found)
    assert len(summary) == 2 and not any("No GPU recording" in line for line in summary)
    assert summary[1].startswith("GPU (H100 SXM5 80GB): outputs recorded on")
    assert "NVIDIA H100 (cuda)" in summary[1]  # the driver's name, in the provenance
    # Each line is the recording's provenance sentence, as the lab's own provenance cell has it.
    from gpulab.measure.provenance import provenance_line

    for line, recording in zip(summary, found.values(), strict=True):
        sentence = provenance_line(recording.provenance).rstrip(".")
        assert line.startswith(f"{recording.label}: {sentence[0].lower()}{sentence[1:]}"), line


def test_the_kernel_waits_passively_and_the_environment_is_restored(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    lab = _lab(tmp_path, "a", ["import os; print(os.environ.get('OMP_WAIT_POLICY'))"])
    rec.record_notebook(lab, timeout_s=60)
    assert nbformat.read(lab, as_version=4).cells[1].outputs[0]["text"] == "PASSIVE\n"
    assert "OMP_WAIT_POLICY" not in os.environ


def _fake_clock(monkeypatch, seconds_per_lab):
    """record_all's clock advances only while a fake lab records, by its given seconds."""
    now = [0.0]
    monkeypatch.setattr(rec, "_clock", lambda: now[0])
    real = rec.record_notebook

    def record_notebook(path, **kwargs):
        now[0] += seconds_per_lab[path.name]
        return real(path, **kwargs)

    monkeypatch.setattr(rec, "record_notebook", record_notebook)


def test_record_all_starts_no_lab_past_its_budget_and_says_how_to_go_on(tmp_path, monkeypatch):
    for name, cpu_s in zip("abcd", (100.0, 200.0, 250.0, 10.0), strict=True):
        _full_lab(tmp_path, name, ["print(1)"], run_time_s={"cpu": cpu_s})
    ran = _fake_recording(monkeypatch)
    _fake_clock(
        monkeypatch,
        {"a_lab.ipynb": 110.0, "b_lab.ipynb": 190.0, "c_lab.ipynb": 1.0, "d_lab.ipynb": 1.0},
    )
    monkeypatch.setattr(rec, "provenance", lambda: {"kind": "cpu"})
    lines = []
    outcomes = rec.record_all(
        tmp_path, results=tmp_path / "results", budget_s=540, progress=lines.append
    )
    # a: 0 + 100 <= 540; b: 110 + 200 <= 540; c: 300 + 250 > 540, so c and d wait (d would
    # fit, but the labs are recorded in order, so that one command goes on from c).
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]
    assert [o.status for o in outcomes] == [
        "recorded",
        "recorded",
        rec.NOT_STARTED,
        rec.NOT_STARTED,
    ]
    assert any(
        line.endswith("go on with: python -m gpulab record --all --start-at c_lab.ipynb")
        for line in lines
    )
    assert re.search(r"^c_lab\.ipynb\s+not started \(budget\)\s+-$", "\n".join(lines), re.M)
    assert lines[-1] == "4 labs: 2 recorded, 0 failed, 2 not started (budget)"
    assert "the bench is left for the run that records the last labs" in lines
    assert not (tmp_path / "results").exists()

    ran.clear()
    outcomes = rec.record_all(
        tmp_path, results=None, budget_s=540, start_at="c_lab", progress=lines.append
    )
    assert ran == ["c_lab.ipynb", "d_lab.ipynb"] and not any(o.not_started for o in outcomes)


def test_record_all_budget_counts_a_gpu_run_at_its_recorded_time(tmp_path, monkeypatch):
    _full_lab(tmp_path, "a", ["print(1)"], run_time_s={"cpu": 900.0, H100: 30.0, T4: 800.0})
    _full_lab(tmp_path, "b", ["print(1)"], run_time_s={"cpu": 500.0})
    _full_lab(tmp_path, "c", ["print(1)"])  # never recorded: started only as a run's first
    ran = _fake_recording(monkeypatch)
    _fake_clock(monkeypatch, {"a_lab.ipynb": 30.0, "b_lab.ipynb": 400.0, "c_lab.ipynb": 1.0})
    monkeypatch.setattr(
        rec, "provenance", lambda: {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3"}
    )
    lines = []
    rec.record_all(tmp_path, results=None, budget_s=600, progress=lines.append)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]  # a at its H100 time, not its T4 one
    assert any(line.endswith("go on with: python -m gpulab record --all --start-at c_lab.ipynb")
               for line in lines)  # fmt: skip
    ran.clear()
    rec.record_all(tmp_path, results=None, budget_s=500, progress=_quiet)
    assert ran == ["a_lab.ipynb"]  # 30 s spent, then b's model estimate (500 s) would pass 500
    ran.clear()
    rec.record_all(tmp_path, results=None, budget_s=500, start_at="c_lab", progress=_quiet)
    assert ran == ["c_lab.ipynb"]  # unknown, but first: it runs


def test_two_gpu_classes_keep_two_recordings(tmp_path, fake_gpu):
    """A T4 and an H100 (the rehearsal's fake GPUs) record the same lab: neither overwrites
    the other's outputs or run time, and the lab page lists both beside the CPU."""
    from gpulab.course.recordings import lab_recordings

    lab = _lab(tmp_path, "a", ["print(6 * 7)"])
    rec.record_notebook(lab, timeout_s=60)
    fake_gpu("T4")
    on_t4 = rec.record_notebook(lab, timeout_s=60)
    fake_gpu("H100")
    on_h100 = rec.record_notebook(lab, timeout_s=60)
    assert (on_t4["device_class"], on_h100["device_class"]) == (T4, H100)
    assert on_t4["path"] != on_h100["path"]
    assert Path(on_t4["path"]).parent.name == "tesla-t4" and Path(on_t4["path"]).is_file()
    meta = nbformat.read(lab, as_version=4).metadata["gpulab"]
    assert set(meta["run_time_s"]) == set(meta["recorded"]) == {"cpu", T4, H100}
    assert meta["recorded"][T4]["name"] == "Tesla T4"
    found = lab_recordings(lab)
    assert list(found) == ["cpu", H100, T4]
    assert [r.label for r in found.values()] == ["CPU", "GPU (H100 SXM5 80GB)", "GPU (Tesla T4)"]
    assert all(r.run_time_s is not None for r in found.values())


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"budget_s": 0}, ValueError, "budget_s=0 must be"),
        ({"budget_s": -5.0}, ValueError, "budget_s=-5.0 must be"),
        ({"budget_s": float("nan")}, ValueError, "budget_s=nan"),
        ({"budget_s": 10**6}, ValueError, r"budget_s=1000000 must be at most 86400 s"),
        ({"budget_s": "540"}, TypeError, "budget_s='540'"),
        ({"start_at": "z_lab"}, ValueError, r"start_at='z_lab' is not a lab in .*a_lab\.ipynb"),
        ({"start_at": 3}, TypeError, "start_at=3"),
    ],
)
def test_record_all_refuses_a_bad_budget_or_start(tmp_path, monkeypatch, kwargs, error, match):
    _full_lab(tmp_path, "a", ["print(1)"])
    ran = _fake_recording(monkeypatch)
    with pytest.raises(error, match=match):
        rec.record_all(tmp_path, results=None, progress=_quiet, **kwargs)
    assert ran == []


def test_record_all_command_takes_a_budget_and_a_start(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", lambda **_: {})
    for name, cpu_s in (("a", 100.0), ("b", 500.0)):
        _full_lab(tmp_path / "notebooks", name, ["print(1)"], run_time_s={"cpu": cpu_s})
    ran = _fake_recording(monkeypatch)
    _fake_clock(monkeypatch, {"a_lab.ipynb": 100.0, "b_lab.ipynb": 500.0})
    monkeypatch.setattr(rec, "provenance", lambda: {"kind": "cpu"})
    assert main(["record", "--all", "--budget-s", "540"]) == 1  # b was not started
    assert ran == ["a_lab.ipynb"]
    assert capsys.readouterr().out.rstrip().endswith("1 not started (budget)")
    for argv, message in [
        (["--all", "--budget-s", "0"], "--budget-s 0 must be a number of seconds above 0"),
        (["--all", "--budget-s", "nan"], "--budget-s nan must be"),
        (["--all", "--budget-s", "1e9"], "at most 86400 (a day)"),
        (["--all", "--start-at", "z_lab"], "--start-at z_lab is not a lab in notebooks"),
        (["notebooks/a_lab.ipynb", "--budget-s", "60"], "--budget-s, --start-at, --stop-before"),
    ]:
        assert main(["record", *argv]) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert ran == ["a_lab.ipynb"]


def test_copying_back_keeps_edits_made_to_the_labs_folder_during_a_recording(tmp_path):
    # Only what the run created or changed comes back: another lab edited in the meantime
    # keeps its edit, the recorded lab is left to record_notebook.
    folder, work = tmp_path / "notebooks", tmp_path / "work"
    folder.mkdir()
    for name in ("other_lab.ipynb", "lab.ipynb", "data.csv"):
        (folder / name).write_text(f"{name} as it was\n")
    shutil.copytree(folder, work)
    copied = rec._digests(work)
    (folder / "other_lab.ipynb").write_text("edited during the recording\n")
    (work / "data.csv").write_text("rewritten by the lab\n")
    (work / "out").mkdir()
    (work / "out" / "new.txt").write_text("written by the lab\n")
    (work / "lab.ipynb").write_text("executed copy\n")

    rec._copy_back(work, folder, lab_name="lab.ipynb", copied=copied)

    assert (folder / "other_lab.ipynb").read_text() == "edited during the recording\n"
    assert (folder / "data.csv").read_text() == "rewritten by the lab\n"
    assert (folder / "out" / "new.txt").read_text() == "written by the lab\n"
    assert (folder / "lab.ipynb").read_text() == "lab.ipynb as it was\n"
