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
