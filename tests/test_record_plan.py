"""Recording the labs in commands that fit a time limit: the run-time model, the plan, the
bench inside the budget (gpulab/course/run_time_model.py, record_plan.py, record.py)."""

from __future__ import annotations

import json

import nbformat
import pytest

from gpulab.__main__ import main
from gpulab.course import record as rec
from gpulab.course.record_plan import BENCH, plan_lines, plan_recording
from gpulab.course.recordings import bench_estimate, lab_estimate
from gpulab.course.run_time_model import compile_counts, estimate_gpu_run_time, parse_compile_costs

H100 = "cuda:H100 SXM5 80GB"


def _lab(folder, name, code=("print(1)",), run_time_s=None):
    """A lab with a setup cell, a provenance cell and ``code``, and its recorded run times."""
    setup = nbformat.v4.new_code_cell("SETUP = True", metadata={"tags": ["setup"]})
    stamped = nbformat.v4.new_markdown_cell("(filled when recorded)")
    stamped.metadata["tags"] = ["provenance"]
    nb = nbformat.v4.new_notebook(
        cells=[setup, stamped, *(nbformat.v4.new_code_cell(c) for c in code)]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    if run_time_s is not None:
        nb.metadata["gpulab"] = {"run_time_s": run_time_s}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_lab.ipynb"
    nbformat.write(nb, path)
    return path


def test_compile_counts_count_each_kind_of_site_in_code_cells_only():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("a = tk.vector_add(x, y)\nb = tk.matmul(p, q, tile=t)"),
            nbformat.v4.new_code_cell("r = gym_triton.grade_triton(answer, 'triton_add')"),
            nbformat.v4.new_code_cell("f = ck.compile_for_gpu(k)\n@cuda.jit\ndef g(): pass"),
            nbformat.v4.new_code_cell("rep = gym.grade_kernel(answer, 'copy', time_on_gpu=on_gpu)"),
            nbformat.v4.new_code_cell("s = gym.grade_kernel(starter, 'copy')"),  # simulator only
            nbformat.v4.new_code_cell("m = torch.compile(model)\nok = tk.triton_available()"),
            nbformat.v4.new_markdown_cell("tk.softmax( torch.compile( in prose"),
        ]
    )
    assert compile_counts(nb) == {"triton": 3, "numba": 3, "inductor": 1}
    with pytest.raises(TypeError, match="nb="):
        compile_counts("notebooks/a_lab.ipynb")


def test_the_course_labs_that_compile_are_counted(root):
    """The labs with Triton, Numba or Inductor work have their sites found (a pattern that
    stopped matching the labs' code would leave their GPU estimates at the CPU time)."""
    counts = {
        lab.stem: compile_counts(json.loads(lab.read_text()))
        for lab in (root / "notebooks").glob("*_lab.ipynb")
    }
    assert counts["kernels_lab"]["triton"] >= 4 and counts["kernels_lab"]["numba"] >= 3
    assert counts["kernel_gym_attention_lab"]["triton"] >= 3
    assert counts["kernel_gym_lab"]["numba"] >= 3
    assert counts["frameworks_lab"]["inductor"] >= 1 and counts["inference_lab"]["inductor"] >= 1
    assert counts["choosing_gpu_lab"] == {"triton": 0, "numba": 0, "inductor": 0}


@pytest.mark.parametrize(
    "text, match",
    [
        ("cuda=1", "'cuda' is not a compiler"),
        ("triton=-1", "triton='-1' must be seconds per compile"),
        ("triton=fast", "triton='fast' must be"),
        ("numba=nan", "numba='nan' must be"),
        ("inductor=1e9", "inductor='1e9' must be"),
    ],
)
def test_compile_costs_refuse_bad_figures(text, match):
    with pytest.raises(ValueError, match=match):
        parse_compile_costs(text)


def test_the_model_adds_priced_compiles_and_marks_unpriced_ones():
    counts = {"triton": 3, "numba": 2, "inductor": 1}
    full = estimate_gpu_run_time(10.0, counts, {"triton": 2.0, "numba": 0.5, "inductor": 20.0})
    assert full.seconds == pytest.approx(10 + 6 + 1 + 20) and full.complete
    assert full.basis.startswith("ESTIMATE: the CPU run's 10 s + 3 Triton compiles x 2.0 s")
    part = estimate_gpu_run_time(10.0, counts, {"triton": 2.0})
    assert (
        part.seconds == 16.0 and not part.complete and part.unpriced == {"numba": 2, "inductor": 1}
    )
    assert part.shown() == ">= 16 s" and "a lower bound" in part.basis
    assert estimate_gpu_run_time(None, counts, {}).seconds is None
    with pytest.raises(ValueError, match="cpu_s=-1"):
        estimate_gpu_run_time(-1, counts, {})


def test_a_recording_of_the_same_class_beats_the_model(tmp_path):
    lab = _lab(tmp_path, "a", ["torch.compile(f)"], {"cpu": 30.0, H100: 12.0})
    assert (lab_estimate(lab, H100).seconds, lab_estimate(lab, H100).recorded) == (12.0, True)
    t4 = lab_estimate(lab, "cuda:Tesla T4", {"inductor": 5.0})
    assert (t4.seconds, t4.recorded, t4.complete) == (35.0, False, True)
    assert "recorded on GPU (H100 SXM5 80GB), another class; ESTIMATE" in t4.basis
    assert lab_estimate(_lab(tmp_path, "b"), "cpu").seconds is None


def test_the_plan_packs_labs_in_order_within_the_limit(tmp_path):
    for name, cpu_s in zip("abcdef", (200.0, 300.0, 150.0, 700.0, 100.0, 50.0), strict=True):
        _lab(tmp_path, name, run_time_s={"cpu": cpu_s})
    _lab(tmp_path, "g", ["tk.softmax(x)"], {"cpu": 10.0})  # a Triton compile, unpriced
    _lab(tmp_path, "h", run_time_s={"cpu": 20.0})
    labs = sorted(tmp_path.glob("*_lab.ipynb"))
    bench = bench_estimate(None, H100)
    commands = plan_recording(labs, H100, 600, bench=bench, folder=str(tmp_path))
    assert [c.labs for c in commands] == [
        ("a_lab.ipynb", "b_lab.ipynb"),  # 500 s; c would make 650
        ("c_lab.ipynb",),  # d alone: past the limit by itself
        ("d_lab.ipynb",),
        ("e_lab.ipynb", "f_lab.ipynb"),
        ("g_lab.ipynb",),  # a lower bound: a command of its own
        ("h_lab.ipynb",),
        (BENCH,),  # its time is not known: a command of its own
    ]
    assert commands[0].command == (
        f"python -m gpulab record --all --folder {tmp_path} --start-at a_lab.ipynb "
        "--stop-before c_lab.ipynb --budget-s 600"
    )
    assert commands[-2].command.endswith("--start-at h_lab.ipynb --budget-s 600")
    assert commands[-1].command.startswith("python -m gpulab bench --out results/")
    assert bench.seconds is None
    text = "\n".join(plan_lines(commands, H100, 600))
    assert "estimated past the limit on its own" in text  # d: 700 s
    assert "at least 10 s, fit not known" in text and "# time not known" in text
    # With the Triton compile priced, g joins h; a bench of known time joins the last command.
    bench = bench.__class__(40.0, "recorded in x.json", recorded=True)
    priced = plan_recording(labs, H100, 600, costs={"triton": 3.0}, bench=bench)
    assert priced[-1].labs == ("e_lab.ipynb", "f_lab.ipynb", "g_lab.ipynb", "h_lab.ipynb", BENCH)
    assert priced[-1].seconds == pytest.approx(100 + 50 + 13 + 20 + 40)
    assert priced[-1].command.endswith("--budget-s 600 --compile-s triton=3")
    with pytest.raises(ValueError, match="limit_s=0"):
        plan_recording(labs, H100, 0)


def test_the_bench_estimate_comes_from_a_report_of_the_same_class(tmp_path):
    def report(name, gpu, seconds):
        prov = {"kind": "cuda", "name": gpu, "device": gpu, "date": name[:10]}
        data = {"provenance": prov} | ({"run_time_s": seconds} if seconds else {})
        (tmp_path / f"{name}.json").write_text(json.dumps(data))

    report("2026-12-01-t4", "Tesla T4", 90.0)
    report("2026-12-02-h100", "NVIDIA H100 80GB HBM3", 45.0)
    report("2026-12-03-h100", "NVIDIA H100 80GB HBM3", None)  # written by `bench`: no time
    (tmp_path / "2026-12-04-broken.json").write_text("{")
    assert bench_estimate(tmp_path, H100).seconds == 45.0
    assert bench_estimate(tmp_path, "cuda:Tesla T4").seconds == 90.0
    assert bench_estimate(tmp_path, "cuda:A100 80GB SXM4").seconds is None


def _fake_run(monkeypatch, seconds_per_lab, bench_s):
    """record_notebook and run_bench without running anything, on a clock that they move."""
    now = [0.0]
    ran = []
    monkeypatch.setattr(rec, "_clock", lambda: now[0])

    def record_notebook(path, **_):
        ran.append(path.name)
        now[0] += seconds_per_lab[path.name]
        return {"device": "H100 (cuda)", "run_time_s": seconds_per_lab[path.name]}

    def run_bench(**_):
        ran.append(BENCH)
        now[0] += bench_s
        return {"provenance": {"device": "NVIDIA H100", "date": "2026-12-05", "kind": "cuda",
                               "name": "NVIDIA H100 80GB HBM3"}}  # fmt: skip

    monkeypatch.setattr(rec, "record_notebook", record_notebook)
    monkeypatch.setattr("gpulab.measure.bench_report.run_bench", run_bench)
    here = {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3"}
    monkeypatch.setattr(rec, "provenance", lambda: here)
    return ran


def test_the_bench_runs_within_the_budget_only(tmp_path, monkeypatch):
    labs, results = tmp_path / "notebooks", tmp_path / "results"
    _lab(labs, "a", run_time_s={"cpu": 100.0})
    _lab(labs, "b", run_time_s={"cpu": 100.0})
    ran = _fake_run(monkeypatch, {"a_lab.ipynb": 100.0, "b_lab.ipynb": 100.0}, bench_s=30.0)
    lines = []
    # No report with a run time from this class: within a budget the bench is not run, and
    # the progress names the command that runs it alone.
    rec.record_all(labs, results=results, budget_s=600, progress=lines.append)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]
    assert any("run it alone: python -m gpulab bench --out" in line for line in lines)
    # Without a budget it runs, and its report keeps its run time for the next estimate.
    ran.clear()
    rec.record_all(labs, results=results, progress=_quiet)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb", BENCH]
    (written,) = results.glob("*.json")
    assert json.loads(written.read_text())["run_time_s"] == 30.0
    assert bench_estimate(results, H100).seconds == 30.0
    # Known and within the budget: it runs; known but past it: it does not.
    ran.clear()
    rec.record_all(labs, results=results, budget_s=230, progress=_quiet)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb", BENCH]
    ran.clear()
    rec.record_all(labs, results=results, budget_s=220, progress=_quiet)
    assert ran == ["a_lab.ipynb", "b_lab.ipynb"]
    # A run that stops before the last lab leaves the bench to the run that ends the labs.
    ran.clear()
    lines.clear()
    rec.record_all(labs, results=results, stop_before="b_lab", progress=lines.append)
    assert ran == ["a_lab.ipynb"]
    assert "the bench is left for the run that records the last labs (b_lab.ipynb)" in lines


def _quiet(_line):
    pass


def test_record_all_refuses_a_stop_before_its_start(tmp_path, monkeypatch):
    for name in "ab":
        _lab(tmp_path, name)
    ran = _fake_run(monkeypatch, {}, bench_s=0.0)
    with pytest.raises(ValueError, match="stop_before='a_lab' must come after start_at='b_lab'"):
        rec.record_all(tmp_path, results=None, start_at="b_lab", stop_before="a_lab")
    with pytest.raises(ValueError, match="stop_before='z' is not a lab"):
        rec.record_all(tmp_path, results=None, stop_before="z")
    with pytest.raises(TypeError, match="compile_s="):
        rec.record_all(tmp_path, results=None, compile_s="triton=2")
    assert ran == []


def test_the_plan_command_prints_commands_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, cpu_s in (("a", 300.0), ("b", 250.0), ("c", 200.0)):
        _lab(tmp_path / "notebooks", name, run_time_s={"cpu": cpu_s})
    ran = _fake_run(monkeypatch, {}, bench_s=0.0)
    argv = ["record", "--all", "--plan", "--limit-s", "600", "--device-class", "H100 80GB HBM3"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert ran == []
    assert out[0].startswith("Plan for GPU (H100 SXM5 80GB): 3 command(s) of at most 10.0 min")
    assert out[1].startswith(
        "1. python -m gpulab record --all --start-at a_lab.ipynb --stop-before c_lab.ipynb "
        "--budget-s 600   # estimated 9.2 min"
    )
    for bad, message in [
        (["--all", "--plan"], "--plan needs --limit-s"),
        (["--all", "--limit-s", "600"], "--plan needs --limit-s"),
        (["--all", "--plan", "--limit-s", "0"], "--limit-s 0 must be a number of seconds"),
        (["--all", "--compile-s", "cuda=2"], "--compile-s 'cuda=2': 'cuda' is not a compiler"),
        (["--all", "--stop-before", "z"], "--stop-before z is not a lab in notebooks"),
        (["--all", "--plan", "--limit-s", "60", "--device-class", "tpu:x"], "--device-class"),
    ]:
        assert main(["record", *bad]) == 2, bad
        assert message in capsys.readouterr().err, bad
