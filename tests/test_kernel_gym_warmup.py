"""The kernel warm-up: its worked kernels pass, its wrong ones get the right sentence, and
the drawing of which thread touched which element is the simulator's record."""

import gym_warmup_solutions as sol
import matplotlib
import numpy as np
import pytest

import gpulab as gl
from gpulab.diagrams import warmup
from gpulab.kernels import gym, gym_warmup

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def reports():
    return {name: gym.grade_kernel(kernel, gym_warmup.TASKS[name], quiet=True)
            for name, kernel in sol.SOLUTIONS.items()}  # fmt: skip


def test_there_is_a_worked_kernel_for_every_step_in_order():
    assert list(sol.SOLUTIONS) == list(gym_warmup.TASKS) == ["map", "guard", "pool", "dot",
                                                             "conv", "scan"]  # fmt: skip


@pytest.mark.parametrize("name", list(gym_warmup.TASKS))
def test_the_worked_kernels_pass(reports, name):
    assert reports[name].passed, str(reports[name])


WRONG = [
    ("guard", "n = 1: out of bounds: thread 1 of block 0 reads a[1] at line 3 of "
     "triple_unguarded (`out[i] = 3 * a[i]`), but a has shape (1,); guard the access"),
    ("pool", "a is read 34 times from global memory where 12 would do: let each thread copy "
     "its element into a shared array"),
    ("dot", "wrong result for n = 1: out[0] is read before any thread writes it"),
    ("conv", "a is read 57 times from global memory where 26 would do (each block's 8 "
     "elements and the 2 past them, once)"),
    ("scan", "n = 5: race on s[1]: thread 2 of block 0 reads it at line 9 of scan_no_barrier"),
]  # fmt: skip


@pytest.mark.parametrize("name, sentence", WRONG, ids=[w[0] for w in WRONG])
def test_the_wrong_kernels_get_their_sentence(name, sentence):
    report = gym.grade_kernel(sol.WRONG[name], gym_warmup.TASKS[name], quiet=True)
    assert not report.passed and report.first_problem.startswith(sentence), report.first_problem


def test_the_targets_are_the_counts_derived_by_hand(reports):
    # pool, n = 12: one global load of a per thread; conv, n = 20 in 3 blocks of 8: each
    # block loads its tile and the 2 elements past it that exist (8 + 2, 8 + 2, 4): 24.
    assert reports["pool"].targets[0].value == 12
    assert (reports["conv"].targets[0].value, reports["conv"].targets[0].goal) == (24, 26)
    assert reports["dot"].targets[0].value == 1  # out[0] written once
    # scan, n = 16: one barrier after the copy, two per step for steps 1, 2, 4, 8
    assert reports["scan"].counts.barriers == 1 + 2 * 4


def test_the_drawing_is_the_record_of_which_thread_touched_which_element(reports):
    fig, drawn = gl.diagrams.draw_touches(reports["guard"])
    assert fig.patch.get_facecolor()[:3] == (1.0, 1.0, 1.0) and fig.patch.get_alpha() == 1.0
    assert drawn["out"]["written"] == {i: [i] for i in range(20)}  # threads across blocks
    assert drawn["a"]["read"] == {i: [i] for i in range(20)} and drawn["a"]["written"] == {}
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"a", "out", "19"} <= texts
    _, conv = gl.diagrams.draw_touches(reports["conv"])
    assert conv["a"]["read"][8] == [0, 8] and conv["a"]["read"][18] == [18]  # halo and tile
    assert conv["w"]["read"] == {k: list(range(20)) for k in range(3)}
    assert conv["s (block 0)"]["read"][9] == [7]  # block 0's own copy, its thread numbers
    _, scan = gl.diagrams.draw_touches(reports["scan"])
    assert scan["s (block 0)"]["read"][3] == [3, 4, 5, 7, 11]  # itself, then 1, 2, 4, 8 on


def test_without_a_record_the_drawing_is_refused_and_grade_says_why(capsys):
    report = gym.grade_kernel(sol.WRONG["guard"], gym_warmup.TASKS["guard"], quiet=True)
    with pytest.raises(ValueError, match="report: triple_unguarded on task 'guard' has no "
                       "record of its accesses"):  # fmt: skip
        gl.diagrams.draw_touches(report)
    with pytest.raises(TypeError, match="report=3"):
        gl.diagrams.draw_touches(3)
    warmup.grade(sol.WRONG["guard"], "guard")
    assert capsys.readouterr().out.endswith(
        "No drawing: the kernel did not run to the end on every shape.\n"
    )
    assert warmup.grade(None, "map").score is None
    assert "no kernel yet" in capsys.readouterr().out
    with pytest.raises(ValueError, match="name='mapp' is not a warm-up step"):
        warmup.grade(sol.SOLUTIONS["map"], "mapp")
    with pytest.raises(TypeError, match="draw="):
        warmup.grade(sol.SOLUTIONS["map"], "map", draw="yes")


def test_the_steps_are_small_enough_to_draw_and_graded_on_awkward_sizes():
    for task in gym_warmup.TASKS.values():
        sizes = [s[0] for s in task.shapes]
        assert sizes[0] == 1 and max(sizes) <= 20, task.name
        grid, block = task.launch(task.count_shape)
        assert np.prod(grid) * block >= task.count_shape[0]
