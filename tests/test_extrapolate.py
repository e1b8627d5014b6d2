"""The figure "from our measurement to the full-scale prediction".

The predictions it draws come from gpulab.costmodels.training_time (tests/test_training_time.py).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab import plot_extrapolation  # noqa: E402


def test_extrapolation_figure_styles_measured_predicted_and_published():
    fig, ax = plt.subplots()
    plot_extrapolation(
        {"small run here": 30.0},
        {"A100": 3600.0, "H100": 1800.0},
        ["utilisation 40%", "3 x forward FLOPs"],
        published={"MLPerf 8 x H100": 808.0},
        ax=ax,
    )
    bars = ax.patches
    assert len(bars) == 4
    assert [bool(b.get_hatch()) for b in bars] == [False, True, True, False]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["small run here", "A100", "H100", "MLPerf 8 x H100"]
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "utilisation 40%" in texts and "60.0 min" in texts and "13.5 min" in texts
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("PREDICTION" in t for t in legend)
    plt.close("all")


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (({}, {"A100": 0.0}, []), {}, ValueError,
         r"predictions\['A100'\]=0.0 must be a positive number"),
        (({"here": float("nan")}, {}, []), {}, ValueError, r"measured\['here'\]=nan"),
        (({"here": -1.0}, {}, []), {}, ValueError, r"measured\['here'\]=-1.0"),
        (({}, {"A100": float("inf")}, []), {}, ValueError, r"predictions\['A100'\]=inf"),
        (({}, {"A100": "3600"}, []), {}, TypeError, r"predictions\['A100'\]='3600'"),
        (({}, {}, []), {"published": {"x": -1}}, ValueError, r"published\['x'\]=-1"),
        (({}, {}, []), {"published": {"x": float("nan")}}, ValueError, r"published\['x'\]=nan"),
        (({}, {}, []), {}, ValueError, "nothing to plot"),
        (({}, {"A100": 1.0}, "one sentence"), {}, TypeError,
         "assumptions=.one sentence. must be a sequence"),
        (({}, [1.0], []), {}, TypeError, "predictions=.* must be a mapping"),
        (({1: 10.0}, {}, []), {}, TypeError, "measured=.* must have str labels"),
        (({}, {"A100": 1.0}, []), {"durations": "yes"}, TypeError,
         "durations='yes' must be True or False"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_before_anything_is_drawn(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        plot_extrapolation(*args, **kwargs)
