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
    "kwargs, match",
    [
        ({"rtol": -0.1}, "rtol=-0.1"),
        ({"atol": "x"}, "atol='x'"),
        ({"expected": float("nan")}, "expected=nan"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, match):
    args = {"expected": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        gl.check(1.0, **args)
