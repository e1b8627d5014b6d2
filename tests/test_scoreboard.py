"""The capstone's scoreboard: speed-ups against the last kept step, predictions labelled."""

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import gpulab as gl  # noqa: E402


def timed(*seconds):
    return gl.measure.bench.BenchResult(tuple(seconds), 1, "")


def test_speedups_chain_from_the_last_kept_step():
    board = gl.Scoreboard(timed(0.100))
    a = board.add("a", timed(0.050), predicted=2.5)
    assert a.speedup == pytest.approx(2.0) and a.total == pytest.approx(2.0) and a.kept
    worse = board.add("b", timed(0.080), predicted=1.2, keep=False)
    assert worse.speedup == pytest.approx(0.625) and not worse.kept
    c = board.add("c", timed(0.025))
    assert c.speedup == pytest.approx(2.0)  # against a (b was reverted), not b
    assert c.total == pytest.approx(4.0)
    gpu = board.add("pinned memory", predicted=1.1, note="GPU only")
    assert gpu.speedup is None and gpu.total is None and not gpu.kept
    assert board.total_speedup == pytest.approx(4.0) and board.current_s == pytest.approx(0.025)


def test_table_shows_medians_iqr_and_reverted_rows():
    board = gl.Scoreboard(timed(0.1, 0.1, 0.12, 0.1))
    board.add("slower fix", timed(0.2), predicted=1.5, keep=False, note="bf16")
    board.add("gpu only", predicted=1.05, note="GPU only: prediction")
    lines = board.table().splitlines()
    assert lines[0].split()[:2] == ["step", "ms/step"]
    assert "100.00" in lines[1] and "1.00x" in lines[1]
    assert "1.50x" in lines[2] and "0.50x" in lines[2] and "reverted. bf16" in lines[2]
    assert "1.05x" in lines[3] and "GPU only: prediction" in lines[3]


def test_plot_draws_one_predicted_and_one_measured_bar_per_fix():
    board = gl.Scoreboard(timed(0.1))
    board.add("x", timed(0.05), predicted=2.0)
    board.add("y", predicted=1.1)
    ax = board.plot()
    assert len(ax.patches) == 3 and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
    plt.close("all")


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="baseline=0.1"):
        gl.Scoreboard(0.1)
    board = gl.Scoreboard(timed(0.1))
    with pytest.raises(ValueError, match="give a measurement, a prediction or both"):
        board.add("nothing")
    with pytest.raises(ValueError, match="predicted=0"):
        board.add("x", predicted=0)
    with pytest.raises(TypeError, match="predicted='2'"):
        board.add("x", predicted="2")
    with pytest.raises(TypeError, match="measured=0.05"):
        board.add("x", 0.05)
    with pytest.raises(TypeError, match="keep=1"):
        board.add("x", timed(0.05), keep=1)
    with pytest.raises(TypeError, match="name=3"):
        board.add(3, timed(0.05))


@pytest.mark.parametrize(
    "field, error",
    [({"name": 3}, TypeError), ({"total": -1.5}, ValueError), ({"speedup": 0.0}, ValueError),
     ({"speedup": "2"}, TypeError), ({"kept": 1}, TypeError), ({"note": 42}, TypeError),
     ({"measured": 0.1}, TypeError)],
)  # fmt: skip
def test_a_row_refuses_bad_fields_by_name(field, error):
    row = gl.Scoreboard(timed(0.1)).add("fix", timed(0.05), predicted=2.0)
    (name,) = field
    with pytest.raises(error, match=f"{name}="):
        dataclasses.replace(row, **field)


# --- the keep-or-revert test -------------------------------------------------------------


def _timed(*seconds):
    return gl.measure.bench.BenchResult(tuple(seconds), 1, "")


def test_a_clear_gain_is_faster_beyond_the_noise():
    from gpulab.labkit.scoreboard import faster_beyond_noise

    test = faster_beyond_noise(_timed(10, 11, 12, 13, 14), _timed(5, 6, 7, 8))
    assert test.faster and test.p_value < 0.05 and (test.n_before, test.n_after) == (5, 4)
    # Complete separation of 5 and 4 runs: exact one-sided p = 1 / C(9, 4) = 0.008.
    assert test.p_value == pytest.approx(1 / 126, abs=0.005)
    assert "faster beyond the noise" in str(test) and "p = 0.0" in str(test)


def test_a_lower_median_inside_the_spread_is_not_a_gain():
    # Like the capstone's D6 run: a median 2.35 ms under the old one's but an IQR of 1.97 ms.
    from gpulab.labkit.scoreboard import faster_beyond_noise

    before = _timed(2.6, 3.0, 3.4, 3.9, 4.4, 2.2, 3.1, 2.9)
    after = _timed(1.6, 2.2, 4.5, 2.4, 3.6, 2.1, 4.2, 2.3)
    assert sorted(after.times_s)[4] < sorted(before.times_s)[4]  # a lower median...
    test = faster_beyond_noise(before, after)
    assert not test.faster and test.p_value > 0.05  # ...that the noise explains
    assert str(test).startswith("not faster beyond the noise")


def test_identical_or_too_few_timings_are_never_a_gain():
    from gpulab.labkit.scoreboard import faster_beyond_noise

    same = faster_beyond_noise(_timed(1, 1, 1, 1), _timed(1, 1, 1, 1))
    assert not same.faster and same.p_value == 1.0
    few = faster_beyond_noise(_timed(10, 11, 12), _timed(1, 2, 3))
    assert not few.faster and not few.judged and "too few runs" in str(few)
    slower = faster_beyond_noise(_timed(1, 2, 3, 4), _timed(5, 6, 7, 8))
    assert not slower.faster and slower.p_value > 0.95


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"alpha": 0}, ValueError, "alpha=0"),
        ({"alpha": 1.5}, ValueError, "alpha=1.5"),
        ({"alpha": "5%"}, TypeError, "alpha='5%'"),
    ],
)
def test_the_level_is_checked(kwargs, error, match):
    from gpulab.labkit.scoreboard import faster_beyond_noise

    with pytest.raises(error, match=match):
        faster_beyond_noise(_timed(1, 2, 3, 4), _timed(1, 2, 3, 4), **kwargs)
    with pytest.raises(TypeError, match="before="):
        faster_beyond_noise(1.0, _timed(1, 2, 3, 4))


def test_the_board_tests_against_the_last_kept_step():
    board = gl.Scoreboard(_timed(10, 11, 12, 13))
    board.add("kept", _timed(5, 6, 7, 8))
    board.add("reverted", _timed(4, 9, 9, 9), keep=False)
    assert board.current.times_s == (5, 6, 7, 8)
