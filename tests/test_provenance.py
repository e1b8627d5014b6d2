import random

import numpy as np
import pytest
import torch

import gpulab as gl


def test_provenance_record_names_device_versions_and_date():
    rec = gl.provenance()
    assert rec["torch"] == torch.__version__ and rec["gpulab"] == gl.__version__
    assert len(rec["date"]) == 10 and rec["date"][4] == "-"
    line = gl.provenance_line(rec)
    assert line.startswith(f"Outputs recorded on {rec['date']} on ") and rec["device"] in line


def test_seed_everything_makes_draws_repeat():
    gl.seed_everything(3)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    gl.seed_everything(3)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.mark.parametrize(
    "seed, error",
    [(-1, ValueError), (True, TypeError), (1.0, TypeError), ("3", TypeError),
     (float("nan"), TypeError), (2**32, ValueError)],
)  # fmt: skip
def test_bad_seed_is_rejected(seed, error):
    with pytest.raises(error, match="seed="):
        gl.seed_everything(seed)
    with pytest.raises(error, match="seed="):
        gl.setup_lab(seed)


def test_the_largest_seed_numpy_takes_is_accepted():
    gl.seed_everything(2**32 - 1)
    first = np.random.rand()
    gl.seed_everything(2**32 - 1)
    assert np.random.rand() == first


@pytest.mark.parametrize(
    "record, error, match",
    [({"date": "2026-01-01"}, ValueError, "lacks device, gpulab, python"),
     ("x", TypeError, "record='x' must be a dict"),
     ({"date": 2026, "device": "cpu", "gpulab": "0.1.0", "python": "3.11"}, TypeError,
      r"record\['date'\]=2026 must be a str")],
)  # fmt: skip
def test_a_record_without_its_fields_is_named(record, error, match):
    with pytest.raises(error, match=match):
        gl.provenance_line(record)


def test_provenance_takes_only_a_device_info():
    with pytest.raises(TypeError, match="info='cpu'"):
        gl.provenance("cpu")
    info = gl.DeviceInfo(kind="cuda", name="Tesla T4", cpu_model="Xeon", cpu_cores=2)
    assert gl.provenance(info)["name"] == "Tesla T4"
