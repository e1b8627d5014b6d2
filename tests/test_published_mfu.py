"""Published LLM runs with a reported MFU, and the time-to-train model scored on them."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

import gpulab as gl
from gpulab.costmodels.published_mfu import (
    leave_one_out_mfu,
    published_llm_utilisation,
    published_mfu_runs,
)

LLAMA3 = "https://arxiv.org/abs/2407.21783"
PALM = "https://arxiv.org/abs/2204.02311"
LLM_FOUNDRY = (
    "https://github.com/mosaicml/llm-foundry/blob/061f2c7ce64e655100286584a7629e2a09f827ba/"
    "scripts/train/benchmarking/README.md"
)


def test_every_run_is_cited_to_a_table_of_a_primary_source():
    runs = published_mfu_runs()
    assert len(runs) >= 4
    assert {r.source for r in runs} == {
        LLAMA3,
        PALM,
        LLM_FOUNDRY,
    }
    assert all(r.where for r in runs)
    assert len({r.name for r in runs}) == len(runs)


def test_the_figures_are_the_ones_the_sources_print():
    by_name = {(r.model, r.n_gpus, r.seq_len, r.spec): r.mfu for r in published_mfu_runs()}
    # Llama 3 paper, Table 4: 430, 400 and 380 TFLOPs per GPU, 43%, 41% and 38% BF16 MFU.
    assert by_name["Llama 3 405B", 8192, 8192, "H100 SXM"] == 0.43
    assert by_name["Llama 3 405B", 16384, 8192, "H100 SXM"] == 0.41
    assert by_name["Llama 3 405B", 16384, 131072, "H100 SXM"] == 0.38
    # PaLM paper, Table 3: 46.2% on 6,144 TPU v4 chips.
    assert by_name["PaLM 540B", 6144, 2048, "TPU v4"] == 0.462
    # llm-foundry's benchmark tables, e.g. MPT-7B on 8 H100s at 46.44% and on 8 A100s at 64.23%.
    assert by_name["MPT-7B", 8, 2048, "H100 SXM"] == 0.4644
    assert by_name["MPT-7B", 8, 2048, "A100 80GB SXM4"] == 0.6423


def test_the_registry_peak_is_the_peak_the_sources_divide_by():
    # Llama 3's 430 TFLOPs per GPU is 43% of the H100's dense BF16 peak (989 TFLOPS), and
    # the registry's peak gives the same MFU to the printed precision.
    h100 = gl.get_spec("H100 SXM")
    assert 430e12 / h100.peak("bf16") == pytest.approx(0.43, abs=0.005)
    assert 380e12 / h100.peak("bf16") == pytest.approx(0.38, abs=0.005)


def test_leave_one_out_never_uses_a_run_for_itself_and_meets_the_target():
    scored = leave_one_out_mfu()
    runs = published_mfu_runs()
    assert [s.run for s in scored] == list(runs)
    for s in scored:
        assert s.run not in s.basis_runs
        assert s.predicted_mfu == statistics.median(r.mfu for r in s.basis_runs)
        assert s.error == pytest.approx(s.run.mfu / s.predicted_mfu - 1)
        if s.basis == "same architecture":
            assert {r.architecture for r in s.basis_runs} == {s.run.architecture}
    # PaLM is the file's only TPU v4 run: it is predicted from every other run.
    palm = next(s for s in scored if s.run.model == "PaLM 540B")
    assert palm.basis == "all other runs" and len(palm.basis_runs) == len(runs) - 1
    assert statistics.median(abs(s.error) for s in scored) <= 0.20


def test_the_median_error_beats_one_utilisation_for_every_run():
    # The course's single 40% would be 33% slow for the A100 runs that sustained 60%.
    scored = leave_one_out_mfu()
    learned = statistics.median(abs(s.error) for s in scored)
    single = statistics.median(abs(s.run.mfu / gl.DEFAULT_UTILISATION - 1) for s in scored)
    assert learned < single / 2


def test_two_runs_predict_each_other_and_one_predicts_nothing():
    a = published_mfu_runs()[4]
    b = dataclasses.replace(a, name="half as efficient", mfu=a.mfu / 2)
    first, second = leave_one_out_mfu([a, b])
    assert first.error == pytest.approx(1.0) and second.error == pytest.approx(-0.5)
    assert leave_one_out_mfu([a]) == []


def test_published_llm_utilisation_per_architecture():
    a100 = [r.mfu for r in published_mfu_runs() if r.spec == "A100 80GB SXM4"]
    assert published_llm_utilisation("A100 40GB") == statistics.median(a100)
    # No run on a Blackwell GPU: the median of every run.
    everything = [r.mfu for r in published_mfu_runs()]
    assert published_llm_utilisation("B200") == statistics.median(everything)


def test_bad_records_and_arguments_are_refused_by_name():
    run = published_mfu_runs()[0]
    with pytest.raises(ValueError, match="mfu"):
        dataclasses.replace(run, mfu=1.5)
    with pytest.raises(ValueError, match="source"):
        dataclasses.replace(run, source="arxiv 2407.21783")
    with pytest.raises(ValueError, match="precision"):
        dataclasses.replace(run, precision="FP8")
    with pytest.raises(TypeError, match="runs"):
        leave_one_out_mfu("runs")
    with pytest.raises(TypeError, match="path"):
        published_mfu_runs(3)
