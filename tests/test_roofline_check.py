"""The memory-bandwidth lab's comparison of kernels with the roofline: timed again when the
load changes, errors worded by sign, judged against the target, recorded for the accuracy
page."""

from __future__ import annotations

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from gpulab.costmodels.roofline import Ceilings
from gpulab.course.accuracy import ACCURACY_KEY as PAGE_KEY
from gpulab.labkit.accuracy_output import ACCURACY_KEY, AccuracyClaim
from gpulab.labkit.claims import ClaimError, claim
from gpulab.labkit.roofline_check import (
    ROOFLINE_TARGET,
    RooflineCheck,
    sign_wording,
    time_on_the_roofline,
)

QUIET = Ceilings("box", "fp32", 100e9, 10e9, overhead_s=1e-6)
BUSY = Ceilings("box", "fp32", 60e9, 7e9, overhead_s=3e-6)  # 40% and 30% lower


def _kernels(n: int = 8) -> dict:
    """n memory-bound kernels of 10 MB each (1 ms on QUIET's roof)."""
    return {f"k{i}": (lambda: None, 1e6, 10e6) for i in range(n)}


def test_the_kernels_are_timed_again_while_the_ceilings_move(capsys):
    rounds = []
    after = iter([QUIET, QUIET])

    def time_kernel(fn):
        rounds.append(1)
        return 1.1e-3

    check = time_on_the_roofline(_kernels(), BUSY, remeasure=lambda: next(after),
                                 time_kernel=time_kernel)
    # BUSY then QUIET: moved 40%, timed again; QUIET against QUIET: kept.
    assert len(rounds) == 2 * 8
    assert capsys.readouterr().out.count("timing them again") == 1
    assert check.roof.peak_flops == QUIET.peak_flops
    assert check.errors["k0"] == pytest.approx(1.1e-3 / (1e-3 + 1e-6) - 1)


def test_after_the_last_try_the_errors_are_kept_and_the_line_says_so(capsys):
    flip = iter([QUIET, BUSY, QUIET])
    check = time_on_the_roofline(_kernels(2), BUSY, remeasure=lambda: next(flip),
                                 time_kernel=lambda fn: 1e-3, tries=3)
    out = capsys.readouterr().out
    assert out.count("timing them again") == 2
    assert "after 3 tries, the errors below include it" in out
    # Each roof at its least disturbed of the last two measurements.
    assert check.roof.memory_bandwidth == QUIET.memory_bandwidth


def test_a_quiet_run_times_the_kernels_once(capsys):
    calls = []
    time_on_the_roofline(_kernels(3), QUIET, remeasure=lambda: QUIET,
                         time_kernel=lambda fn: calls.append(fn) or 1e-3)
    assert len(calls) == 3 and capsys.readouterr().out == ""


@pytest.mark.parametrize("kwargs, error, match", [
    ({"kernels": {}}, TypeError, "kernels="),
    ({"roof": "cpu"}, TypeError, "roof="),
    ({"load_change": 1.5}, ValueError, "load_change="),
    ({"tries": 0}, ValueError, "tries="),
])
def test_bad_arguments_are_named(kwargs, error, match):
    args = {"kernels": _kernels(1), "roof": QUIET} | kwargs
    with pytest.raises(error, match=match):
        time_on_the_roofline(args.pop("kernels"), args.pop("roof"), remeasure=lambda: QUIET,
                             time_kernel=lambda fn: 1e-3, **args)


def test_sign_wording_counts_and_names_the_negative_errors():
    assert sign_wording({"b": -0.1, "a": -0.2, "c": 0.3}) == (
        "There are two negative errors (a, b) and one positive one, so most errors are "
        "negative (the kernels beat the model).")
    assert sign_wording({"a": 0.1, "b": 0.0}) == (
        "There are no negative errors and two positive ones, so most errors are positive "
        "(the kernels are slower than the model).")


def _check(errors: list[float]) -> RooflineCheck:
    time_on = {f"k{i}": (lambda: None, 1e6, 10e6) for i in range(len(errors))}
    times = iter([(1e-3 + 1e-6) * (1 + e) for e in errors])
    return time_on_the_roofline(time_on, QUIET, remeasure=lambda: QUIET,
                                time_kernel=lambda fn: next(times))


def test_the_verdict_states_the_median_and_records_it_for_the_accuracy_page(monkeypatch):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "judge")
    check = _check([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.15, -0.05, 0.5])
    assert check.median_error == pytest.approx(0.15)
    verdict = check.verdict()
    assert verdict.text.startswith("**Measured here:** median |error| 15% over 9 kernels "
                                   "(target: at most 25%). There are three negative errors")
    assert verdict.text.endswith("The largest is k8's, +50%.")
    assert check.table().endswith("median |error| over 9 kernels: 15%")
    data, metadata = verdict._repr_mimebundle_()
    assert data == {"text/markdown": verdict.text}
    assert metadata[ACCURACY_KEY] == {
        "model": "roofline", "metric": "median |error|", "value": pytest.approx(0.15),
        "target": ROOFLINE_TARGET, "n": 9, "detail": "9 kernels, ceilings measured in the same run"}
    assert ACCURACY_KEY == PAGE_KEY  # the page reads the key the labs write


def test_the_verdict_refuses_a_miss_and_too_few_kernels(monkeypatch):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "judge")
    with pytest.raises(ClaimError, match="median \\|error\\| at most 25%"):
        _check([0.3] * 8).verdict()
    with pytest.raises(ClaimError, match="at least 8 kernels"):
        _check([0.1] * 7).verdict()
    assert _check([0.3] * 8).verdict(target=0.35).value == pytest.approx(0.3)


def test_a_miss_is_printed_not_raised_on_a_shared_machine(monkeypatch, capsys):
    monkeypatch.setenv("GPULAB_TIMING_CLAIMS", "print")
    _check([0.3] * 8).verdict()
    assert "claim on timings not judged" in capsys.readouterr().out


def test_a_cell_showing_the_verdict_records_the_metadata_in_the_notebook():
    """As the last value of a cell, Jupyter writes the Markdown and the metadata together."""
    shell = InteractiveShell.instance()
    out = AccuracyClaim(claim("Off by 3%."), "training memory", "largest |error|", 0.03, 0.1, 8,
                        "8 configurations")
    data, metadata = shell.display_formatter.format(out)
    assert data["text/markdown"] == "Off by 3%."
    assert metadata[ACCURACY_KEY]["value"] == 0.03
    json.dumps(metadata)  # storable in the notebook


@pytest.mark.parametrize("field, value, error", [
    ("claim", "text", TypeError), ("model", " ", ValueError), ("value", -0.1, ValueError),
    ("n", 1.5, TypeError),
])
def test_an_accuracy_claim_refuses_bad_fields(field, value, error):
    fields = {"claim": claim("x"), "model": "roofline", "metric": "median |error|", "value": 0.1,
              "target": 0.25, "n": 3, "detail": "3 kernels"} | {field: value}
    with pytest.raises(error, match=f"{field}="):
        AccuracyClaim(**fields)
