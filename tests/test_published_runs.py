"""The published runs the time-to-train model learns its utilisation from, scored leave-one-out."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import pytest

import gpulab as gl
from gpulab.costmodels.published_runs import (
    leave_one_out,
    published_runs,
    published_utilisation,
)

BERT = "BERT-large to 0.72 masked-LM accuracy"
# BERT-large: 6 x 303,358,976 non-embedding parameters + 6 x 24 layers x 512 tokens x 1024.
BERT_FLOPS_PER_TOKEN = 6 * (335_141_888 - 31_782_912) + 6 * 24 * 512 * 1024


def test_every_run_is_a_cited_mlperf_log():
    runs = published_runs()
    assert len(runs) >= 4
    assert all(r.source.startswith("https://github.com/mlcommons/training_results_v") for r in runs)
    assert len({r.source for r in runs}) == len(runs)
    assert {r.spec for r in runs} >= {"B200", "H200", "H100 SXM"}


def test_the_b200_run_is_the_one_the_bert_case_study_quotes():
    root = Path(__file__).resolve().parents[1]
    (quoted,) = json.loads((root / "gpulab/data/mlperf_training.json").read_text())["runs"]
    b200 = next(r for r in published_runs() if r.spec == "B200")
    for key in ("n_gpus", "n_params", "embedding_params", "train_samples", "run_start_ms"):
        assert getattr(b200, key) == quoted[key]
    assert b200.run_stop_ms == quoted["run_stop_ms"] and b200.source == quoted["source"]


def test_implied_utilisation_by_hand():
    b200 = published_runs()[0]
    assert b200.time_s == pytest.approx(220.268)
    flops = 2_550_982 * 512 * BERT_FLOPS_PER_TOKEN
    assert b200.flops == pytest.approx(flops)
    assert b200.utilisation == pytest.approx(flops / (8 * 2.25e15 * 220.268))
    assert b200.utilisation == pytest.approx(0.624, abs=0.001)


def test_utilisation_comes_from_the_same_architecture_where_there_is_one():
    b200, h200, h100_4, h100_64 = published_runs()[:4]
    est = published_utilisation(BERT, "H200", exclude=h200)
    assert est.basis == "same architecture" and est.runs == (h100_4, h100_64)
    assert est.value == pytest.approx((h100_4.utilisation + h100_64.utilisation) / 2)
    # No other Blackwell run: the utilisation of every other BERT run, their median.
    est = published_utilisation(BERT, "B200", exclude=b200)
    assert est.basis == "same benchmark" and b200 not in est.runs
    assert est.value == pytest.approx(statistics.median(r.utilisation for r in est.runs))


def test_leave_one_out_never_uses_a_run_for_itself_and_meets_the_target():
    scored = leave_one_out()
    assert len(scored) == len(published_runs())
    for s in scored:
        assert s.run not in s.estimate.runs
        # FLOPs / (n x peak x u): the error is the ratio of the utilisations, less one.
        assert s.error == pytest.approx(s.run.utilisation / s.estimate.value - 1)
    assert statistics.median(abs(s.error) for s in scored) <= 0.20


def test_two_runs_predict_each_other():
    a = published_runs()[2]
    b = dataclasses.replace(
        a, name="twice as long", run_stop_ms=a.run_start_ms + 2 * (a.run_stop_ms - a.run_start_ms)
    )
    first, second = leave_one_out([a, b])
    assert first.error == pytest.approx(1.0) and second.error == pytest.approx(-0.5)
    # A benchmark with one run has nothing to learn from.
    assert leave_one_out([a]) == []


def test_bad_arguments_are_refused_by_name():
    run = published_runs()[0]
    with pytest.raises(ValueError, match="benchmark='chess' has no other published run"):
        published_utilisation("chess", "H100 SXM")
    with pytest.raises(TypeError, match="exclude="):
        published_utilisation(BERT, "H100 SXM", exclude="run 0")
    with pytest.raises(TypeError, match="runs="):
        leave_one_out("runs")
    with pytest.raises(ValueError, match="run_stop_ms="):
        dataclasses.replace(run, run_stop_ms=run.run_start_ms)
    with pytest.raises(TypeError, match="path="):
        published_runs(3)
    assert gl.get_spec(run.spec).architecture == run.architecture


def test_a_path_that_is_not_a_file_is_refused_by_name(tmp_path):
    for bad in ("", tmp_path, tmp_path / "missing.csv"):
        with pytest.raises(ValueError, match=r"^path=.* is not a file"):
            published_runs(bad)
