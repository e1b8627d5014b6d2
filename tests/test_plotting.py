import os
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import gpulab as gl  # noqa: E402


def test_spec_trend_plots_every_device_with_the_figure():
    ax = gl.plot_spec_trend("bandwidth")
    plotted = sum(len(c.get_offsets()) for c in ax.collections)
    assert plotted == sum(1 for s in gl.list_specs() if s.memory_bandwidth)
    assert ax.get_yscale() == "log" and "GB/s" in ax.get_ylabel()
    plt.close("all")


def test_tensor_trend_leaves_out_devices_without_tensor_figures():
    ax = gl.plot_spec_trend("tensor")
    plotted = sum(len(c.get_offsets()) for c in ax.collections)
    with_tensor = [s for s in gl.list_specs() if "bf16" in s.peak_flops or "fp16" in s.peak_flops]
    assert plotted == len(with_tensor) < len(gl.list_specs())
    plt.close("all")
    with pytest.raises(ValueError, match="which='int8'"):
        gl.plot_spec_trend("int8")


def test_predictions_are_hatched_and_labelled():
    ax = gl.plot_measured_vs_predicted(["here", "T4"], [1.0, 10.0], [False, True], unit="GFLOP/s")
    bars = ax.patches
    assert bars[0].get_hatch() is None and bars[1].get_hatch() == "//"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("prediction" in t and "not measured" in t for t in labels)
    plt.close("all")
    with pytest.raises(ValueError, match="same length"):
        gl.plot_measured_vs_predicted(["a"], [1.0, 2.0], [False], unit="x")
    with pytest.raises(TypeError, match="unit=3"):
        gl.plot_measured_vs_predicted(["a"], [1.0], [False], unit=3)


@pytest.mark.parametrize(
    "values, predicted, log, error, match",
    [
        ([float("nan")], [False], True, ValueError, r"values\[0\]=nan"),
        ([float("inf")], [False], False, ValueError, r"values\[0\]=inf"),
        ([0.0], [False], True, ValueError, r"values\[0\]=0.0 must be a positive"),
        ([-1.0], [False], False, ValueError, r"values\[0\]=-1.0 must be 0 or more"),
        (["3"], [False], True, TypeError, r"values\[0\]='3'"),
        ([1.0], ["yes"], True, TypeError, r"predicted\[0\]='yes'"),
        (1.0, [False], True, TypeError, "values=1.0"),
        ([1.0], [False], "yes", TypeError, "log='yes'"),
    ],
)
def test_bars_refuse_values_that_cannot_be_drawn(values, predicted, log, error, match):
    with pytest.raises(error, match=match):
        gl.plot_measured_vs_predicted(["a"], values, predicted, unit="x", log=log)
    plt.close("all")


def test_bars_accept_zero_on_a_linear_axis_and_numpy_arrays():
    import numpy as np

    ax = gl.plot_measured_vs_predicted(
        ["a", "b"], np.array([0.0, 2.0]), np.array([False, True]), unit="x", log=False
    )
    assert [bar.get_width() for bar in ax.patches] == [0.0, 2.0]
    plt.close("all")


def test_spec_trend_and_label_tidying_name_bad_arguments():
    with pytest.raises(TypeError, match="specs='T4'"):
        gl.plot_spec_trend("fp32", specs="T4")
    with pytest.raises(TypeError, match=r"specs=\['T4'\]"):
        gl.plot_spec_trend("fp32", specs=["T4"])
    with pytest.raises(TypeError, match="which=3"):
        gl.plot_spec_trend(3)
    ax = plt.subplots()[1]
    with pytest.raises(ValueError, match="fontsize=0"):
        gl.tidy_point_labels(ax, fontsize=0)
    with pytest.raises(TypeError, match="fontsize='8'"):
        gl.tidy_point_labels(ax, fontsize="8")
    with pytest.raises(TypeError, match="ax=None"):
        gl.tidy_point_labels(None)
    plt.close("all")


def test_course_style_is_scoped():
    before = matplotlib.rcParams["axes.spines.top"]
    with gl.labkit.plotting.course_style():
        assert matplotlib.rcParams["axes.spines.top"] is False
    assert matplotlib.rcParams["axes.spines.top"] == before


def test_tidy_point_labels_merges_coinciding_points_and_separates_the_rest():
    fig, ax = plt.subplots()
    ax.scatter([1, 1, 2], [1, 1, 1.001])
    for name, (x, y) in zip(["A", "B", "C"], [(1, 1), (1, 1), (2, 1.001)], strict=True):
        ax.annotate(name, (x, y), xytext=(4, 2), textcoords="offset points")
    gl.tidy_point_labels(ax)
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["A / B", "C"] or labels == ["B / A", "C"]
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert not boxes[0].overlaps(boxes[1])
    plt.close(fig)


def test_an_empty_list_of_devices_is_refused_not_an_empty_plot():
    with pytest.raises(ValueError, match=r"^specs=\[\] is empty"):
        gl.labkit.plotting.plot_spec_trend("fp32", specs=[])
    plt.close("all")


def test_a_lab_shows_its_figures_as_recorded_under_any_matplotlib_backend(root, tmp_path):
    # ipykernel picks the inline backend only when MPLBACKEND is unset; under Agg (as on CI
    # machines) plt.show() would show nothing. The energy lab's bar chart (cell 10) is run
    # with the cells before it and must give the recorded outputs' kinds and text.
    import nbformat
    from run_notebook import run_notebook

    lab = nbformat.read(root / "notebooks" / "energy_lab.ipynb", as_version=4)
    recorded = lab.cells[10].outputs
    assert recorded and "plt.show()" in lab.cells[10].source
    lab.cells = lab.cells[:11]
    for cell in lab.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(root))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    run_notebook(lab, tmp_path, env)
    shown = lab.cells[10].outputs
    assert [o.output_type for o in shown] == [o.output_type for o in recorded]
    assert [sorted(o.data) for o in shown] == [sorted(o.data) for o in recorded]
    assert [o.data["text/plain"] for o in shown] == [o.data["text/plain"] for o in recorded]
