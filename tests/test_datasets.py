import time

import pytest
import torch
from torch.utils.data import DataLoader

import gpulab as gl


def test_samples_are_reproducible_and_labels_in_range():
    ds = gl.SyntheticDataset(20, (5,), n_classes=3, seed=7)
    x1, y1 = ds[4]
    x2, y2 = gl.SyntheticDataset(20, (5,), n_classes=3, seed=7)[4]
    assert torch.equal(x1, x2) and int(y1) == int(y2)
    assert {int(ds[i][1]) for i in range(20)} <= {0, 1, 2}
    with pytest.raises(IndexError, match="index=20"):
        ds[20]
    with pytest.raises(TypeError, match="index=1.0"):
        ds[1.0]


def test_load_time_is_spent_per_sample():
    ds = gl.SyntheticDataset(5, (2,), load_s=0.01)
    start = time.perf_counter()
    for i in range(5):
        ds[i]
    assert time.perf_counter() - start >= 0.05


def test_works_with_dataloader_workers():
    ds = gl.SyntheticDataset(16, (3,), n_classes=4)
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    batches = list(loader)
    assert [tuple(x.shape) for x, _ in batches] == [(8, 3), (8, 3)]
    assert torch.equal(batches[1][0][0], ds[8][0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n": 0, "shape": (2,)}, ValueError, "n=0"),
        ({"n": 4, "shape": ()}, ValueError, r"shape=\(\)"),
        ({"n": 4, "shape": (2,), "n_classes": 1}, ValueError, "n_classes=1"),
        ({"n": 4, "shape": (2,), "load_s": -1}, ValueError, "load_s=-1"),
        ({"n": True, "shape": (2,)}, TypeError, "n=True"),
        ({"n": "4", "shape": (2,)}, TypeError, "n='4'"),
        # A sequence of numbers with a number that is not allowed is a bad value (as in the
        # contract test); an element that is not a number at all is the wrong type.
        ({"n": 4, "shape": (2.0,)}, ValueError, r"shape=\(2.0,\)"),
        ({"n": 4, "shape": (2, 0)}, ValueError, r"shape=\(2, 0\)"),
        ({"n": 4, "shape": (True,)}, TypeError, r"shape=\(True,\)"),
        ({"n": 4, "shape": ("2",)}, TypeError, r"shape=\('2',\)"),
        ({"n": 4, "shape": 2}, TypeError, "shape=2"),
        ({"n": 4, "shape": (2,), "load_s": float("nan")}, ValueError, "load_s=nan"),
        ({"n": 4, "shape": (2,), "load_s": float("inf")}, ValueError, "load_s=inf"),
        ({"n": 4, "shape": (2,), "seed": -1}, ValueError, "seed=-1"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        gl.SyntheticDataset(**kwargs)
