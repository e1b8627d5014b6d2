"""The capstone lab's workload and its keep-or-revert ladder of fixes.

The capstone lab speeds up a deliberately slow training loop one defect at a time. What the
learner reads in the lab is the loop itself (its ``step()``, where the defects are) and each
fix with its prediction; the rest is here:

- the synthetic task and a *slow* data set (:class:`SlowDataset`: fetching waits 30 µs per
  sample, as reading from network storage would; a ``time.sleep``, so it uses no CPU);
- the model (:class:`MLP`: two hidden layers of 128 and an activation the lab chooses);
- :class:`TrainerSetup`: the model, optimizer, gradient scaler and ``DataLoader`` a
  configuration asks for, on which the lab's ``Trainer`` writes its ``step()``;
- :func:`measure_steps`: time a trainer's step with :func:`gl.benchmark`, longer where a step
  is slow, and keep the losses the same-training check compares;
- :class:`FixLadder`: measure each fix on top of the last kept version and keep it only if
  it is faster beyond the run-to-run noise (a one-sided Mann-Whitney U test,
  :func:`~gpulab.labkit.scoreboard.faster_beyond_noise`).

Examples
--------
>>> from gpulab.labkit.capstone import EFFECTIVE_BATCH, MLP, synthetic_data
>>> x, y = synthetic_data()
>>> tuple(x.shape), tuple(y.shape), EFFECTIVE_BATCH
((4096, 64), (4096,), 64)
>>> sum(p.numel() for p in MLP(torch.relu).parameters())
26122
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable

import torch
from torch import nn

from gpulab._checks import non_negative_int, positive_int

__all__ = [
    "CLASSES",
    "EFFECTIVE_BATCH",
    "FEATURES",
    "HIDDEN",
    "LOAD_S_PER_SAMPLE",
    "MLP",
    "N_SAMPLES",
    "FixLadder",
    "SlowDataset",
    "TrainerSetup",
    "measure_steps",
    "synthetic_data",
]

FEATURES, HIDDEN, CLASSES = 64, 128, 10
#: Samples per optimizer step, the same in every version of the loop.
EFFECTIVE_BATCH = 64
#: The slow data set: seconds of waiting per sample fetched (30 µs).
LOAD_S_PER_SAMPLE = 3e-5
#: The data cycle through this many samples.
N_SAMPLES = 64 * 64


def synthetic_data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The task: ``N_SAMPLES`` random inputs, each labelled by a fixed random linear teacher.

    Seeds torch's global generator with ``seed`` (so a model made next starts from the same
    weights on every machine) and returns ``(inputs, labels)``.
    """
    torch.manual_seed(non_negative_int("seed", seed))
    teacher = torch.randn(FEATURES, CLASSES)
    x = torch.randn(N_SAMPLES, FEATURES)
    return x, (x @ teacher).argmax(dim=1)


class SlowDataset(torch.utils.data.Dataset):
    """Sample i is always sample ``i % len(x)`` of ``(x, y)``; fetching waits
    ``load_s_per_sample`` per sample (a sleep: the CPU is free meanwhile). Endless.

    Examples
    --------
    >>> ds = SlowDataset(torch.arange(4.0), torch.arange(4), load_s_per_sample=0.0)
    >>> ds[5], len(ds.__getitems__([0, 1, 2]))
    ((tensor(1.), tensor(1)), 3)
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor,
                 load_s_per_sample: float = LOAD_S_PER_SAMPLE):
        if len(x) != len(y) or len(x) == 0:
            raise ValueError(f"x and y must hold the same number of samples (> 0), not "
                             f"{len(x)} and {len(y)}")
        if not load_s_per_sample >= 0:
            raise ValueError(f"load_s_per_sample={load_s_per_sample!r} must be >= 0 seconds")
        self.x, self.y, self.load_s = x, y, float(load_s_per_sample)

    def __len__(self):
        return 10**9  # endless: index i is sample i % len(x)

    def __getitem__(self, i):
        time.sleep(self.load_s)
        return self.x[i % len(self.x)], self.y[i % len(self.x)]

    def __getitems__(self, indices):  # the DataLoader fetches a whole batch with one call
        time.sleep(self.load_s * len(indices))
        return [(self.x[i % len(self.x)], self.y[i % len(self.x)]) for i in indices]


class MLP(nn.Module):
    """A classifier with two hidden layers of ``HIDDEN`` and the activation ``act``."""

    def __init__(self, act: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        if not callable(act):
            raise TypeError(f"act={act!r} must be a function of a tensor (an activation)")
        self.l1, self.l2 = nn.Linear(FEATURES, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.l3 = nn.Linear(HIDDEN, CLASSES)
        self.act = act

    def forward(self, x):
        return self.l3(self.act(self.l2(self.act(self.l1(x)))))


class TrainerSetup:
    """What the capstone's ``Trainer`` trains with, built as its configuration says.

    A subclass sets, as class attributes, ``acts`` (the activation without and with the
    fused-GELU fix, D5), ``initial`` (the model's initial weights), ``data`` (inputs and
    labels for :class:`SlowDataset`), ``device`` and ``amp`` (the mixed-precision choice,
    ``gl.measure.device.mixed_precision``), and writes ``step()`` with :meth:`next_batch`
    and :meth:`optimizer_step`, appending each step's loss to ``losses`` (``log`` collects
    its log lines). ``Trainer(cfg)`` then builds, from the same weights and the same data
    order every time, the model, SGD optimizer, gradient scaler and ``DataLoader`` that
    ``cfg`` (the lab's ``Config``: ``batch_size``, ``num_workers``, ``pin_memory``,
    ``autocast``, ``fused_gelu``) asks for.
    """

    acts: tuple = ()
    initial: dict | None = None
    data: tuple | None = None
    device = "cpu"
    amp = None
    lr = 0.5

    def __init__(self, cfg):
        if len(self.acts) != 2 or self.initial is None or self.data is None or self.amp is None:
            raise TypeError(f"{type(self).__name__} must set the class attributes acts (two "
                            "activations), initial, data, device and amp")
        self.cfg, self.device = cfg, torch.device(self.device)
        torch.manual_seed(0)
        self.model = MLP(self.acts[bool(cfg.fused_gelu)]).to(self.device)
        self.model.load_state_dict(self.initial)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.lr)
        self.scaler = torch.amp.GradScaler(self.device.type,
                                           enabled=cfg.autocast and self.amp.needs_grad_scaler)
        loader = torch.utils.data.DataLoader(
            SlowDataset(*self.data), batch_size=cfg.batch_size, num_workers=cfg.num_workers,
            pin_memory=cfg.pin_memory and self.device.type == "cuda",
            persistent_workers=cfg.num_workers > 0)
        self.batches = iter(loader)
        self.losses, self.log = [], io.StringIO()

    def next_batch(self):
        """The next batch on the device (profiled as "load batch"); copies are non-blocking
        where the configuration pins memory."""
        from torch.profiler import record_function

        with record_function("load batch"):
            x, y = next(self.batches)
            pinned = self.cfg.pin_memory
            return x.to(self.device, non_blocking=pinned), y.to(self.device, non_blocking=pinned)

    def optimizer_step(self):
        """The update through the gradient scaler (a no-op scaler outside FP16), profiled as
        "optimizer"."""
        from torch.profiler import record_function

        with record_function("optimizer"):
            self.scaler.step(self.opt)
            self.scaler.update()

    def step(self):
        raise NotImplementedError("the lab's Trainer writes step()")

    def close(self):
        """Stop the DataLoader's worker processes."""
        del self.batches


def measure_steps(trainer, label: str, *, min_run_time_s: float = 0.6, check_steps: int = 8):
    """Time ``trainer.step`` and keep the losses of its first ``check_steps`` steps.

    :func:`gl.benchmark` times the step (two warm-up steps, at least ``min_run_time_s``);
    where that gives fewer than 8 timed runs (a slow step on a busy machine), the step is
    timed again for 9 medians, so that the noise test of :class:`FixLadder` has enough runs
    to judge. Steps are then run until there are ``check_steps`` losses. The trainer is
    closed at the end.

    Returns
    -------
    (BenchResult, torch.Tensor, list of int)
        The timing, the losses (one per step run) and the steps whose update a gradient
        scaler skipped.
    """
    from gpulab.labkit.same_training import watch_updates
    from gpulab.measure.bench import benchmark

    positive_int("check_steps", check_steps)
    updates = watch_updates(trainer)
    result = benchmark(trainer.step, min_run_time_s=min_run_time_s, warmup=2, label=label)
    if len(result.times_s) < 8:  # a slow step (a busy machine): enough runs to test the noise
        result = benchmark(trainer.step, min_run_time_s=9 * result.median_s, label=label)
    while len(trainer.losses) < check_steps:
        trainer.step()
    losses = torch.tensor([float(v) for v in trainer.losses])
    trainer.close()
    return result, losses, updates.skipped


class FixLadder:
    """Fixes tried one after another, each on top of the last kept version.

    ``measure(cfg, name)`` returns ``(BenchResult, losses)`` for a configuration. A fix is
    kept (later fixes build on it) only if its step is faster than the current version's
    beyond the noise: a one-sided Mann-Whitney U test at 5% on the timed blocks. With fewer
    than 4 timed runs on a side the test cannot judge, and the medians decide. Every
    version's losses go into ``curves`` (kept or not) for the same-training check.

    Attributes
    ----------
    board : Scoreboard
        Every fix: predicted and measured speed-up, kept or reverted.
    current : object
        The configuration of the last kept version.
    curves : dict
        Name -> losses, for every version.
    final_curve : torch.Tensor
        The losses of the last kept version.
    """

    def __init__(self, measure, cfg, baseline, baseline_losses, *, label: str = "baseline"):
        from gpulab.labkit.scoreboard import Scoreboard

        if not callable(measure):
            raise TypeError(f"measure={measure!r} must be a function of (cfg, name)")
        self._measure = measure
        self.board = Scoreboard(baseline, label=label)
        self.curves = {"baseline": baseline_losses}
        self.current, self.final_curve = cfg, baseline_losses

    def try_fix(self, name: str, cfg, predicted: float):
        """Measure ``cfg`` as the fix ``name`` with its predicted speed-up; keep it only if it
        is faster beyond the noise. Returns its BenchResult."""
        from gpulab.labkit.scoreboard import faster_beyond_noise

        result, self.curves[name] = self._measure(cfg, name)
        test = faster_beyond_noise(self.board.current, result)
        keep = test.faster if test.judged else result.median_s < self.board.current_s
        self.board.add(name, result, predicted=predicted, keep=keep,
                       note="" if keep else str(test))
        if keep:
            self.current, self.final_curve = cfg, self.curves[name]
        return result
