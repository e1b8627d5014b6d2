import importlib
import math

import pytest
import torch
from torch import nn

import gpulab as gl

TRAIN_MODULE = importlib.import_module("gpulab.labkit.training_loop")  # gl.train is the function

CPU = {"device": "cpu", "progress": False}


def _data(n_batches=6, batch=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_batches * batch, 8, generator=g)
    y = (x[:, 0] > 0).long()  # learnable: the sign of the first feature
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, len(x), batch)]


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def test_counts_steps_and_samples_and_learns():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    stats = gl.train(model, _data(), optimizer=opt, epochs=8, **CPU)
    assert (stats.steps, stats.samples) == (48, 768)
    assert (stats.warmup_steps, stats.warmup_samples, stats.timed_samples) == (3, 48, 720)
    assert len(stats.losses) == 48 and stats.time_s > 0 and stats.warmup_time_s > 0
    assert stats.samples_per_s == pytest.approx(720 / stats.time_s)
    assert stats.total_time_s == pytest.approx(stats.warmup_time_s + stats.time_s)
    assert stats.final_loss < 0.5 * stats.losses[0]


class CountingBatches:
    """Batches that count how many have been handed out; the fake clock reads the count."""

    def __init__(self, batches):
        self.batches, self.served = batches, 0

    def __iter__(self):
        for batch in self.batches:
            self.served += 1
            yield batch


@pytest.mark.parametrize("warmup_steps", [0, 2, 4])
def test_warmup_steps_train_but_are_not_timed(monkeypatch, warmup_steps):
    batches = CountingBatches(_data(n_batches=6, batch=16))
    # Each batch "takes" one second: the clock reads how many batches have been served.
    monkeypatch.setattr(TRAIN_MODULE, "_clock", lambda: float(batches.served))
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = gl.train(model, batches, optimizer=opt, warmup_steps=warmup_steps, **CPU)
    assert batches.served == stats.steps == len(stats.losses) == 6  # every step trained
    assert stats.warmup_steps == warmup_steps
    assert stats.warmup_samples == 16 * warmup_steps
    assert stats.warmup_time_s == warmup_steps  # seconds of the warm-up batches
    assert stats.time_s == 6 - warmup_steps  # only the batches after warm-up are timed
    assert stats.samples_per_s == 16.0
    assert stats.total_time_s == 6


def test_warmup_counts_optimizer_steps_not_micro_batches(monkeypatch):
    batches = CountingBatches(_data(n_batches=8, batch=16))
    monkeypatch.setattr(TRAIN_MODULE, "_clock", lambda: float(batches.served))
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = gl.train(model, batches, optimizer=opt, accumulation_steps=2, warmup_steps=1, **CPU)
    assert stats.steps == 4 and stats.warmup_samples == 32  # one step = two micro-batches
    assert (stats.warmup_time_s, stats.time_s, stats.samples_per_s) == (2, 6, 16.0)


def test_a_run_that_is_all_warmup_has_no_rate():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = gl.train(model, _data(2), optimizer=opt, warmup_steps=5, **CPU)
    assert stats.steps == stats.warmup_steps == 2 and stats.time_s == 0
    with pytest.raises(ValueError, match="no step was timed: all 2 steps were warm-up"):
        _ = stats.samples_per_s


def test_accumulation_takes_fewer_steps_and_matches_the_big_batch():
    small, big = _model(), _model()
    opt_small = torch.optim.SGD(small.parameters(), lr=0.1)
    opt_big = torch.optim.SGD(big.parameters(), lr=0.1)
    data = _data(n_batches=4)
    merged = [(torch.cat([x for x, _ in data]), torch.cat([y for _, y in data]))]
    s = gl.train(small, data, optimizer=opt_small, accumulation_steps=4, **CPU)
    b = gl.train(big, merged, optimizer=opt_big, **CPU)
    assert s.steps == b.steps == 1
    assert s.losses[0] == pytest.approx(b.losses[0], rel=1e-5)
    for p, q in zip(small.parameters(), big.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_an_incomplete_group_is_stepped_and_max_steps_stops():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = gl.train(model, _data(5), optimizer=opt, accumulation_steps=2, **CPU)
    assert stats.steps == 3 and stats.samples == 80
    stats = gl.train(model, _data(5), optimizer=opt, epochs=3, max_steps=4, **CPU)
    assert stats.steps == 4 and stats.samples == 64


def test_bf16_autocast_trains_on_the_cpu():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    stats = gl.train(
        model, _data(), optimizer=opt, epochs=4, device="cpu", precision="amp_bf16", progress=False
    )
    assert all(math.isfinite(v) for v in stats.losses)
    assert next(model.parameters()).dtype == torch.float32  # master weights stay fp32


def test_progress_bar_reports_samples(capsys):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gl.train(model, _data(2), optimizer=opt, device="cpu", desc="demo")
    err = capsys.readouterr().err
    assert "demo" in err and "32" in err and "sample" in err


def test_stats_without_steps_are_refused():
    # A run takes at least one step, so a record of none has no final loss to report.
    with pytest.raises(ValueError, match="steps=0"):
        gl.labkit.training_loop.TrainStats(steps=0, samples=0, time_s=0.0, losses=[])


def test_stats_all_warm_up_have_no_rate():
    stats = gl.labkit.training_loop.TrainStats(
        steps=1, samples=8, time_s=0.0, losses=[1.0], warmup_steps=1, warmup_samples=8
    )
    with pytest.raises(ValueError, match="no step was timed"):
        _ = stats.samples_per_s


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"losses": []}, "losses has 0 entries but steps=2"),
        ({"losses": [1.0, 0.5, 0.2]}, "losses has 3 entries"),
        ({"warmup_steps": 3}, "warmup_steps=3 must be at most steps=2"),
        ({"warmup_samples": 17}, "warmup_samples=17 must be at most samples=16"),
    ],
)
def test_inconsistent_stats_are_refused(kwargs, match):
    record = dict(steps=2, samples=16, time_s=0.1, losses=[1.0, 0.5]) | kwargs
    with pytest.raises(ValueError, match=match):
        gl.labkit.training_loop.TrainStats(**record)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epochs": 0}, ValueError, "epochs=0"),
        ({"accumulation_steps": 1.5}, TypeError, "accumulation_steps=1.5"),
        ({"max_steps": -1}, ValueError, "max_steps=-1"),
        ({"precision": "int8"}, ValueError, "precision='int8'"),
        # a bf16 model is cast by the caller
        ({"precision": "bf16"}, ValueError, "precision='bf16'"),
        ({"precision": torch.bfloat16}, TypeError, "precision=torch.bfloat16"),
        ({"warmup_steps": -1}, ValueError, "warmup_steps=-1"),
        ({"warmup_steps": 1.0}, TypeError, "warmup_steps=1.0"),
        # every step would be warm-up: nothing left to time
        ({"warmup_steps": 2, "max_steps": 2}, ValueError, "warmup_steps=2 with max_steps=2"),
        ({"warmup_steps": 10**30}, ValueError, "warmup_steps=1.000e.30 must be at most"),
        ({"epochs": True}, TypeError, "epochs=True"),
        ({"progress": "no"}, TypeError, "progress='no'"),
        ({"optimizer": "adam"}, TypeError, "optimizer='adam'"),
        ({"loss_fn": "mse"}, TypeError, "loss_fn='mse'"),
        ({"desc": 3}, TypeError, "desc=3"),
        ({"device": "tpu"}, ValueError, "device='tpu' is not a device"),
        ({"device": 0}, TypeError, "device=0 must be a torch.device"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    model = _model()
    args = {"optimizer": torch.optim.SGD(model.parameters(), lr=0.1), **CPU}
    with pytest.raises(error, match=match):
        gl.train(model, _data(1), **{**args, **kwargs})


def test_bad_batches_are_clear_errors():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="one-shot iterator"):
        gl.train(model, iter(_data(2)), optimizer=opt, epochs=2, **CPU)
    with pytest.raises(ValueError, match="no batches"):
        gl.train(model, [], optimizer=opt, **CPU)
    with pytest.raises(TypeError, match=r"pair \(inputs, targets\), not Tensor"):
        gl.train(model, [torch.randn(4, 8)], optimizer=opt, **CPU)
    with pytest.raises(ValueError, match=r"pair \(inputs, targets\); got a tuple of length 3"):
        gl.train(model, [(torch.randn(4, 8), torch.zeros(4), torch.zeros(4))], optimizer=opt,
                 **CPU)  # fmt: skip
    with pytest.raises(TypeError, match="batches=42"):
        gl.train(model, 42, optimizer=opt, **CPU)
    with pytest.raises(TypeError, match="model=42"):
        gl.train(42, _data(1), optimizer=opt, **CPU)
