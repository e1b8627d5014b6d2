"""The package calls the case-study, energy, inference, capstone and parallelism labs make instead
when the numbers do not support them, their tables check what they print, their records
carry what the accuracy page reads, and their workloads behave as the labs need."""

from types import SimpleNamespace

import pytest
import torch

from gpulab.labkit import (
    accuracy_output,
    capstone,
    case_studies,
    energy_report,
    launch_overhead,
    parallel_reports,
)
from gpulab.labkit.claims import Claim, ClaimError, claim
from gpulab.labkit.tiny_gpt import TinyGPT
from gpulab.measure.bench import BenchResult
from gpulab.measure.interleaved import fastest_interleaved


def _days(days):
    return SimpleNamespace(days=days, time_s=days * 86400)


# ------------------------------------------------------------------------ case studies
def test_bert_verdict_states_the_numbers_and_refuses_a_run_that_scales_well():
    said = case_studies.bert_verdict(_days(16.5), _days(2.1), _days(0.9), _days(2.1),
                                     strubell_utilisation=0.031, utilisation=0.4)
    assert "one V100 needs 16.5 days and eight 2.1 days" in said.text
    assert "only 2.3x faster than 8" in said.text  # 2.1 / 0.9
    with pytest.raises(ClaimError, match="under 4x faster"):  # 64 GPUs 5x faster than 8
        case_studies.bert_verdict(_days(16.5), _days(2.1), _days(0.4), _days(2.1),
                                  strubell_utilisation=0.031, utilisation=0.4)
    with pytest.raises(ClaimError):  # a published run near the assumed utilisation
        case_studies.bert_verdict(_days(16.5), _days(2.1), _days(0.9), _days(2.1),
                                  strubell_utilisation=0.3, utilisation=0.4)


def test_resnet_verdict_reads_the_ratios_and_refuses_when_fp32_comes_near_30():
    times = {"bf16": 1 / 53, "tf32": 1 / 26, "fp32": 1 / 3}
    said = case_studies.resnet_verdict(times, h100_sockets=26.2, h100_over_a100=2.0)
    assert "1/53 for an A100 in BF16" in said.text and "1/13 of one socket" in said.text
    with pytest.raises(ClaimError, match="plain FP32 far from it"):
        case_studies.resnet_verdict({**times, "fp32": 1 / 12}, h100_sockets=26.2,
                                    h100_over_a100=2.0)


def test_policy_claim_needs_fifteen_points_more_wins(capsys):
    before = {"win": 0.57, "draw": 0.14, "loss": 0.29}
    said = case_studies.policy_learning_claim(
        before, {"win": 0.92, "draw": 0.03, "loss": 0.05}, updates=40)
    assert "after 40 updates it won 92%, and lost 5% instead of 29%" in said.text
    assert "before training: wins 57.0%" in capsys.readouterr().out
    with pytest.raises(ClaimError):
        case_studies.policy_learning_claim(
            before, {"win": 0.70, "draw": 0.1, "loss": 0.2}, updates=40)


def test_update_size_claim_is_judged_on_timings_and_refused_without_the_trade(monkeypatch):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "judge")
    said = case_studies.update_size_claim({16: 0.01, 4096: 0.05})
    assert "updates per second fell from 100 to 20.0" in said.text
    with pytest.raises(ClaimError):  # the big update no slower: no trade to state
        case_studies.update_size_claim({16: 0.01, 4096: 0.015})
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "print")  # the suite on a shared machine
    assert isinstance(case_studies.update_size_claim({16: 0.01, 4096: 0.015}), Claim)


def test_extend_until_ratio_times_only_what_the_overhead_model_asks_for():
    timed = []

    def time_size(n):
        timed.append(n)
        return 1e-3 + 1e-7 * n

    already = {16: 1e-3, 4096: 5e-3}  # 5x: nothing more to time
    assert case_studies.extend_until_ratio(already, time_size, [2**18]) is None
    assert case_studies.extend_until_ratio({16: 1e-3, 256: 1.1e-3}, time_size, []) is None
    flat = {16: 1e-3, 256: 1.1e-3}
    n = case_studies.extend_until_ratio(flat, time_size, [2**12, 2**14, 2**16])
    assert n == 2**14 and timed == [2**14] and flat[n] == pytest.approx(1e-3 + 1e-7 * 2**14)


def test_published_figures_carry_their_sources_in_the_module():
    import inspect

    source = inspect.getsource(case_studies)
    assert "3.0-2053" in source and "arXiv:1709.05011" in source and "Nature 550" in source
    assert case_studies.RESNET50_PUBLISHED_S["You et al.: 1 x M40 GPU, 90 epochs"] == 14 * 86400
    assert case_studies.resnet50_assumptions(4.09e9, 0.4)[2].startswith("utilisation 40%")


# ------------------------------------------------------------------------------- energy
def test_host_included_claim_computes_the_bound_and_refuses_a_hungry_gpu(capsys):
    xeon = ("Intel Xeon Platinum 8380", 270.0, 3600 * 333.6, 90.1)
    t4 = ("Tesla T4", 70.0, 3600 * 30.2, 70 * 3600 * 30.2 / 3.6e6)
    said = energy_report.host_included_claim(xeon, [t4], cpu_label="Xeon")
    with_host = (70 + 270) * 30.2 / 1000  # kWh
    assert f"needs {with_host:.1f} kWh" in said.text and "than the Xeon's 90 kWh" in said.text
    assert "0.3x the Xeon's power" in capsys.readouterr().out
    slow_gpu = ("slow", 300.0, 3600 * 200.0, 60.0)  # (300 + 270) W x 200 h = 114 kWh
    with pytest.raises(ClaimError, match="below half the CPU's energy"):
        energy_report.host_included_claim(xeon, [t4, slow_gpu])
    with pytest.raises(ValueError, match="gpus="):
        energy_report.host_included_claim(xeon, [])


def test_energy_notes_speak_only_when_there_is_something_to_say(capsys):
    assert energy_report.gpu_energy_possible("cpu") is True
    energy_report.explain_estimate(SimpleNamespace(is_estimate=False))
    assert capsys.readouterr().out == ""
    energy_report.explain_estimate(SimpleNamespace(is_estimate=True))
    assert "%pip install nvidia-ml-py" in capsys.readouterr().out


# --------------------------------------------------------------------- accuracy records
def test_accuracy_record_and_its_display(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display",
                        lambda obj, **kw: shown.append((obj, kw)))
    said = claim("The formula is off by 7%.", True)
    accuracy_output.show_with_accuracy(said, model="m", metric="|error|", value=-0.07, n=2,
                                     target=0.1, detail="d")
    (obj, kw), = shown
    assert obj.data == "The formula is off by 7%."
    assert kw["metadata"] == {"gpulab_accuracy": {"model": "m", "metric": "|error|",
                                                  "value": 0.07, "target": 0.1, "n": 2,
                                                  "detail": "d"}}
    with pytest.raises(TypeError, match="claim="):
        accuracy_output.show_with_accuracy("text", model="m", metric="|error|", value=0.1)
    with pytest.raises(TypeError, match="value="):
        accuracy_output.accuracy_record(model="m", metric="|error|", value=True)


def test_the_accuracy_key_is_the_one_the_accuracy_page_reads():
    from gpulab.course.accuracy import ACCURACY_KEY

    assert accuracy_output.ACCURACY_KEY == ACCURACY_KEY


# ---------------------------------------------------------------------- parallel reports
def test_measured_idle_share_counts_what_no_rank_was_doing():
    ops = [(0, "F", 0, 0, 0.0, 1.0), (1, "F", 0, 0, 1.0, 2.0), (0, "B", 0, 0, 2.0, 3.0)]
    assert parallel_reports.measured_idle_share(ops, ranks=2) == pytest.approx(0.5)


def _stages(width):
    torch.manual_seed(0)
    return [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU()),
            torch.nn.Sequential(torch.nn.Linear(width, width))]


def test_microbatch_table_asserts_the_activation_model_row_by_row(monkeypatch, capsys):
    from gpulab.costmodels.memory import activation_bytes
    from gpulab.costmodels.parallelism import pipeline_inflight_microbatches

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(kw))
    width, batch = 8, 16
    stages = _stages(width)

    def row(schedule, m, **change):
        per_mb = [activation_bytes(s, torch.zeros(batch // m, width)) for s in stages]
        peak = [pipeline_inflight_microbatches(2, m, schedule, stage=i) * b
                for i, b in enumerate(per_mb)]
        return {"m": m, "schedule": schedule, "step_s": 0.01, "bubble": 0.3,
                "peak_activation_bytes": peak, "loss": 1.0, **change}

    pipe = {"rows": [row("gpipe", 1), row("gpipe", 4)], "rows_1f1b": [row("1f1b", 4)]}
    parallel_reports.microbatch_table(pipe, stages, batch=batch, width=width)
    out = capsys.readouterr().out
    assert out.count("gpipe") == 2 and "1f1b" in out and "the same for every m" in out
    assert shown[0]["metadata"] == {"gpulab_record": {"pipeline": pipe}}
    wrong = {**pipe, "rows_1f1b": [row("1f1b", 4, peak_activation_bytes=[1, 1])]}
    with pytest.raises(AssertionError):
        parallel_reports.microbatch_table(wrong, stages, batch=batch, width=width)
    drifted = {**pipe, "rows_1f1b": [row("1f1b", 4, loss=1.1)]}
    with pytest.raises(AssertionError, match="changed the loss"):
        parallel_reports.microbatch_table(drifted, stages, batch=batch, width=width)


def _ep(sent):
    return {"routed_per_expert": [260, 250, 254, 260], "kept_per_expert": [250, 250, 250, 250],
            "bytes_per_rank": sent, "capacity_factor": 1.0, "top_k": 2, "tokens_per_rank": 256,
            "n_experts": 4, "world": 2, "all_to_all": {"calls": 4, "bytes": 2 * max(sent),
                                                      "seconds": 0.02}}


def test_expert_report_and_claim(monkeypatch, capsys):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append((obj, kw)))
    ep = _ep([243712, 243712])
    error = parallel_reports.expert_report(ep, 128, 262144.0, lambda *a: 1.3e-3)
    assert error == pytest.approx(243712 / 262144 - 1)
    out = capsys.readouterr().out
    assert "dropped 24 of 1024" in out and "alpha-beta model 1.3 ms" in out
    parallel_reports.expert_bytes_claim(ep, 262144.0)
    (obj, kw), = shown
    assert "sent 93% of the bytes" in obj.data
    assert kw["metadata"]["gpulab_accuracy"]["value"] == pytest.approx(-error)
    with pytest.raises(ClaimError):  # 20% more bytes than the formula: not explained
        parallel_reports.expert_bytes_claim(_ep([314573, 314573]), 262144.0)


def test_schedule_claim_reports_the_largest_gap(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append((obj, kw)))
    rows = {"gpipe": (0.55, SimpleNamespace(bubble=0.33), 0.2, 0.19),
            "zb-h1": (0.30, SimpleNamespace(bubble=0.35), 0.1, 0.2)}
    parallel_reports.schedule_claim(rows)
    (obj, kw), = shown
    assert "within 22 percentage points" in obj.data and "zb-h1 10%" in obj.data
    assert kw["metadata"]["gpulab_accuracy"]["value"] == pytest.approx(0.22)


# ------------------------------------------------------------------------------ capstone
class _Cfg(SimpleNamespace):
    pass


def _config(**change):
    base = dict(per_sample_loop=False, batch_size=8, num_workers=0, log_every_sample=False,
                fused_gelu=False, autocast=False, pin_memory=False)
    return _Cfg(**{**base, **change})


def test_trainer_setup_builds_the_same_start_and_refuses_a_subclass_without_its_parts():
    x, y = capstone.synthetic_data()
    initial = capstone.MLP(torch.relu).state_dict()

    class Incomplete(capstone.TrainerSetup):  # no initial weights, no mixed-precision choice
        acts, data = (torch.relu, torch.tanh), (x[:64], y[:64])

    with pytest.raises(TypeError, match="class attributes"):
        Incomplete(_config())

    class Ready(capstone.TrainerSetup):
        acts, data, amp = (torch.relu, torch.tanh), (x[:64], y[:64]), SimpleNamespace(
            needs_grad_scaler=False, dtype=torch.bfloat16)

    Ready.initial = initial
    a, b = Ready(_config()), Ready(_config(fused_gelu=True))
    assert a.model.act is torch.relu and b.model.act is torch.tanh
    assert torch.equal(a.model.l1.weight, b.model.l1.weight)
    xb, yb = a.next_batch()
    assert xb.shape == (8, capstone.FEATURES) and torch.equal(xb, x[:8])
    a.close()


def test_slow_dataset_waits_per_sample_and_cycles():
    ds = capstone.SlowDataset(torch.arange(3.0), torch.arange(3), load_s_per_sample=0.0)
    assert ds[4] == (torch.tensor(1.0), torch.tensor(1))
    with pytest.raises(ValueError, match="load_s_per_sample"):
        capstone.SlowDataset(torch.arange(3.0), torch.arange(3), load_s_per_sample=-1)
    with pytest.raises(ValueError, match="same number"):
        capstone.SlowDataset(torch.arange(3.0), torch.arange(2))


def _bench(ms):
    return BenchResult(times_s=tuple(t * 1e-3 for t in ms), calls_per_block=1)


def test_fix_ladder_keeps_a_clear_win_and_reverts_noise():
    results = {"win": _bench([5, 5.1, 5.2, 4.9, 5.0, 5.1, 5.0, 4.95]),
               "noise": _bench([5.0, 5.2, 4.9, 5.1, 5.05, 4.95, 5.1, 5.0])}
    ladder = capstone.FixLadder(lambda cfg, name: (results[name], [name]), "slow",
                                _bench([10, 10.2, 9.9, 10.1, 10.0, 9.95, 10.05, 10.1]),
                                [0.0], label="baseline")
    ladder.try_fix("win", "fast", predicted=2.0)
    assert ladder.current == "fast" and ladder.final_curve == ["win"]
    ladder.try_fix("noise", "same", predicted=1.5)
    assert ladder.current == "fast", "a change within the noise must be reverted"
    assert ladder.curves == {"baseline": [0.0], "win": ["win"], "noise": ["noise"]}
    assert [r.kept for r in ladder.board.rows[1:]] == [True, False]


# ---------------------------------------------------------------------------- measuring
def test_fastest_interleaved_alternates_and_restores_threads():
    order = []
    threads = torch.get_num_threads()
    best = fastest_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                               repeats=3, threads=1)
    assert order == ["a", "b"] * 4 and set(best) == {"a", "b"}
    assert torch.get_num_threads() == threads
    with pytest.raises(ValueError, match="fns="):
        fastest_interleaved({})
    with pytest.raises(TypeError, match=r"fns\['a'\]"):
        fastest_interleaved({"a": 3})
    with pytest.raises(ValueError, match="repeats="):
        fastest_interleaved({"a": lambda: None}, repeats=0)


def test_time_compiled_says_what_is_missing_and_goes_on(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise RuntimeError("no C compiler")

    monkeypatch.setattr(torch, "compile", refuse)
    assert launch_overhead.time_compiled(torch.nn.Identity(), torch.zeros(2)) is None
    assert capsys.readouterr().out.rstrip().endswith("torch.compile skipped.")


# ----------------------------------------------------------------------------- tiny GPT
def test_tiny_gpt_decodes_from_its_cache_what_it_computes_whole():
    torch.manual_seed(0)
    gpt = TinyGPT(vocab=64, d_model=32, layers=2, heads=4, max_len=16).eval()
    idx = torch.randint(0, 64, (2, 10))
    cache = gpt.new_cache(2)
    with torch.no_grad():
        whole = gpt(idx)
        gpt(idx[:, :6], cache, 0)
        steps = [gpt(idx[:, t:t + 1], cache, t) for t in range(6, 10)]
    for t, out in zip(range(6, 10), steps, strict=True):
        assert torch.allclose(whole[:, t], out[:, 0], atol=1e-5)
    with pytest.raises(ValueError, match="multiple of heads"):
        TinyGPT(d_model=30, heads=4)
    with pytest.raises(ValueError, match="batch="):
        gpt.new_cache(0)
