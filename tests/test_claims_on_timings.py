"""Claims on timings: printed, not judged, in the test suite's runs of the labs; judged when
a lab is recorded.

The suite runs each lab beside its other tests on shared cores, so a claim whose condition
compares this run's timings (``gl.claim(..., timings=True)``) can fail there because of the
load alone. ``conftest.py`` sets ``GPULAB_TIMING_CLAIMS=print`` for the suite: such a claim is
printed and reported as a warning. A recording (``python -m gpulab record``) sets it back to
``judge``, so a recording that misses stops, as the page "How good are the course's models?"
says. Every other claim is judged everywhere.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest

import gpulab as gl
from gpulab.course import record as rec
from gpulab.labkit.claims import (
    TIMING_CLAIMS_ENV,
    UNJUDGED_TIMING_CLAIM,
    ClaimError,
    timing_claims_mode,
)

ROOT = Path(__file__).resolve().parents[1]
MISSED = "The roofline's median |error| is 44%, within 25%."


def test_the_suite_prints_claims_on_timings():
    assert os.environ.get(TIMING_CLAIMS_ENV) == "print"  # set by conftest.py
    assert timing_claims_mode() == "print"


def test_a_refused_claim_on_timings_is_printed_where_the_machine_is_shared(monkeypatch, capsys):
    monkeypatch.setenv(TIMING_CLAIMS_ENV, "print")
    got = gl.claim(MISSED, False, reason="target 25%", timings=True)
    assert got.text == MISSED
    printed = capsys.readouterr().out
    assert printed.startswith(UNJUDGED_TIMING_CLAIM)
    assert MISSED in printed and "(target 25%)" in printed


def test_a_claim_on_timings_that_holds_prints_nothing(monkeypatch, capsys):
    monkeypatch.setenv(TIMING_CLAIMS_ENV, "print")
    assert gl.claim("Fast.", True, reason="r", timings=True).text == "Fast."
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("mode", ["judge", None])
def test_a_refused_claim_on_timings_is_judged_by_default_and_where_recorded(monkeypatch, mode):
    if mode is None:
        monkeypatch.delenv(TIMING_CLAIMS_ENV, raising=False)
    else:
        monkeypatch.setenv(TIMING_CLAIMS_ENV, mode)
    with pytest.raises(ClaimError, match="the data does not support"):
        gl.claim(MISSED, False, reason="target 25%", timings=True)


def test_any_other_claim_is_judged_even_where_the_machine_is_shared(monkeypatch):
    monkeypatch.setenv(TIMING_CLAIMS_ENV, "print")
    with pytest.raises(ClaimError):
        gl.claim("The formula counts the bytes within 2%.", False, reason="r")


@pytest.mark.parametrize("value", ["Print", "", "yes"])
def test_an_unknown_mode_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(TIMING_CLAIMS_ENV, value)
    with pytest.raises(ValueError, match=rf"{TIMING_CLAIMS_ENV}={value!r} must be 'judge' or"):
        gl.claim("Fast.", True, timings=True)
    assert gl.claim("Fast.", True).text == "Fast."  # not a claim on timings: not read


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_timings_is_a_flag(bad):
    with pytest.raises(TypeError, match="^timings="):
        gl.claim("Fast.", True, timings=bad)


def _lab_with_a_missed_claim(folder: Path) -> Path:
    cells = [
        nbformat.v4.new_markdown_cell("(filled when recorded)", metadata={"tags": ["provenance"]})
    ]
    cells.append(
        nbformat.v4.new_code_cell(
            "import gpulab as gl\n"
            f"gl.claim({MISSED!r}, 0.44 <= 0.25, reason='target 25%', timings=True)"
        )
    )
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = folder / "missed_lab.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_recording_judges_a_claim_on_timings_even_from_the_suite(tmp_path):
    lab = _lab_with_a_missed_claim(tmp_path)
    before = lab.read_text(encoding="utf-8")
    assert os.environ[TIMING_CLAIMS_ENV] == "print"  # as in the suite
    with pytest.raises(rec.RecordingError, match="ClaimError: the data does not support"):
        rec.record_notebook(lab, timeout_s=120)
    assert lab.read_text(encoding="utf-8") == before  # a failed recording changes nothing
    assert os.environ[TIMING_CLAIMS_ENV] == "print"  # and the suite's setting is back


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Cell:
    """What the harness reads of an nbval cell: its id and the outputs of its run."""

    nodeid = "notebooks/x_lab.ipynb::Cell 9"

    def __init__(self, outputs):
        self.test_outputs = outputs


def test_the_suite_warns_of_each_claim_it_printed_instead_of_judging():
    line = f"{UNJUDGED_TIMING_CLAIM} the data does not support: 'x' (r)"
    cell = _Cell(
        [
            {"output_type": "stream", "name": "stdout", "text": f"a table\n{line}\n"},
            {"output_type": "display_data", "data": {"text/plain": line}},
        ]
    )
    with pytest.warns(UserWarning, match=r"x_lab.ipynb::Cell 9: \[shared machine\]"):
        assert _root_conftest().report_unjudged_claims(cell) == [line]
    assert _root_conftest().report_unjudged_claims(_Cell(None)) == []
