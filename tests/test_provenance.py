import random

import numpy as np
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


def test_bad_seed_is_rejected():
    import pytest

    with pytest.raises(ValueError, match="seed=-1"):
        gl.seed_everything(-1)
