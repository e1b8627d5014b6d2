import pytest

import gpulab as gl


def test_right_answer_within_tolerance_passes(capsys):
    result = gl.check(101, expected=100, rtol=0.02, name="FLOPs")
    assert result and result.ok
    assert "Correct: FLOPs = 101" in capsys.readouterr().out


def test_wrong_answer_fails_with_ratio_and_hint(capsys):
    result = gl.check(50, expected=100, name="bytes", hint="count reads and writes")
    assert not result
    out = capsys.readouterr().out
    assert "Not yet" in out and "0.5×" in out and "Hint: count reads and writes" in out


def test_hint_is_not_shown_for_a_right_answer(capsys):
    gl.check(100, expected=100, hint="secret")
    assert "secret" not in capsys.readouterr().out


def test_unanswered_exercise_is_not_an_error(capsys):
    result = gl.check(None, expected=3.0, name="ridge point")
    assert not result and result.answer is None
    assert "Not answered yet" in capsys.readouterr().out


def test_non_number_answer_gets_a_sentence_not_a_traceback(capsys):
    assert not gl.check("12", expected=12)
    assert "should be a number" in capsys.readouterr().out


def test_absolute_tolerance_for_values_near_zero():
    assert gl.check(0.0005, expected=0.0, atol=1e-3, quiet=True)
    assert not gl.check(0.0005, expected=0.0, quiet=True)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"rtol": -0.1}, ValueError, "rtol=-0.1"),
        ({"rtol": float("nan")}, ValueError, "rtol=nan"),
        ({"rtol": float("inf")}, ValueError, "rtol=inf"),
        ({"rtol": True}, TypeError, "rtol=True"),
        ({"rtol": "0.01"}, TypeError, "rtol='0.01'"),
        ({"atol": "x"}, TypeError, "atol='x'"),
        ({"atol": float("inf")}, ValueError, "atol=inf"),
        ({"atol": -1e-9}, ValueError, "atol=-1e-09"),
        ({"expected": float("nan")}, ValueError, "expected=nan"),
        ({"expected": float("-inf")}, ValueError, "expected=-inf"),
        ({"expected": "12"}, TypeError, "expected='12'"),
        ({"name": 3}, TypeError, "name=3"),
        ({"unit": None}, TypeError, "unit=None"),
        ({"hint": 1}, TypeError, "hint=1"),
        ({"quiet": "yes"}, TypeError, "quiet='yes'"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, error, match):
    args = {"expected": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        gl.check(1.0, **args)


def test_an_infinite_tolerance_would_accept_anything_so_it_is_refused():
    # With rtol=inf every finite answer would be "Correct"; the check must not pass silently.
    with pytest.raises(ValueError, match="rtol=inf"):
        gl.check(1e9, expected=1.0, rtol=float("inf"), quiet=True)


@pytest.mark.parametrize("answer", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_answer_gets_a_sentence_not_a_traceback(capsys, answer):
    result = gl.check(answer, expected=1.0)
    assert not result and result.answer is None
    assert "should be a finite number" in capsys.readouterr().out


def test_check_result_checks_its_fields():
    with pytest.raises(ValueError, match="expected=nan"):
        gl.labkit.answers.CheckResult("x", None, float("nan"), False, "m")
    with pytest.raises(TypeError, match="ok=1"):
        gl.labkit.answers.CheckResult("x", 1.0, 1.0, 1, "m")


def test_a_check_result_records_its_tolerance_and_agrees_with_it():
    result = gl.check(1.05, 1.0, rtol=0.1, quiet=True)
    assert (result.ok, result.rtol, result.atol) == (True, 0.1, 0.0)
    with pytest.raises(ValueError, match=r"^ok=True does not agree with answer=1.05"):
        gl.labkit.answers.CheckResult("x", 1.05, 1.0, True, "Correct")  # the default rtol, 1%


def test_an_exact_whole_number_is_shown_in_full_with_separators(capsys):
    gl.check(12288, expected=12288.0, rtol=0, name="bytes")
    assert capsys.readouterr().out == "Correct: bytes = 12,288 (expected 12,288, within 0%).\n"
    gl.check(4096.5, expected=4096, rtol=0, name="loads")  # the answer is not whole: 4 digits
    assert capsys.readouterr().out.startswith("Not yet: loads = 4096, expected within 0% of")
    gl.check(12288, expected=12288, name="bytes")  # within 1%: an estimate, 4 digits
    said = capsys.readouterr().out
    assert said == "Correct: bytes = 1.229e+04 (expected 1.229e+04, within 1%).\n"
