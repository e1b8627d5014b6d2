"""Loss curves of a faster loop against the baseline's, with a gradient scaler that skips
updates (gpulab/labkit/same_training.py).

A T4 runs the capstone's autocast in FP16 with a ``GradScaler``. Here the same happens on the
CPU: autocast in float16 with a real ``torch.amp.GradScaler`` whose initial scale is large
enough that the first scaled gradients overflow, so that it skips updates while it finds its
scale, as it does on a GPU.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpulab.labkit.same_training import replay_losses, same_training, watch_updates

STEPS = 8
torch.manual_seed(0)
X, Y = torch.randn(STEPS, 64, 16), torch.randint(0, 4, (STEPS, 64))


class Trainer:
    """The capstone's Trainer in small: one optimizer step per call, losses kept."""

    def __init__(self, fp16_scale: float | None = None):
        torch.manual_seed(1)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)
        )
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.5)
        self.fp16 = fp16_scale is not None
        self.scaler = torch.amp.GradScaler("cpu", init_scale=fp16_scale or 1.0, enabled=self.fp16)
        self.losses = []

    def step(self):
        k = len(self.losses) % STEPS
        self.opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16, enabled=self.fp16):
            out = self.model(X[k])
        loss = F.cross_entropy(out.float(), Y[k])
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        self.losses.append(loss.item())


def tolerance(name):
    return ("autocast", 2e-2) if "autocast" in name else ("FP32", 1e-4)


def _run(trainer, steps=STEPS):
    log = watch_updates(trainer)
    scales = []
    for _ in range(steps):
        before = trainer.scaler.get_scale()
        trainer.step()
        scales.append(trainer.scaler.get_scale() < before)
    return log, scales


def test_the_log_names_the_steps_the_scaler_skipped():
    fp16 = Trainer(fp16_scale=2.0**24)  # gradients x 2**24 overflow float16 at first
    log, scale_fell = _run(fp16)
    assert log.skipped, "the scaler skipped nothing: the test no longer has its case"
    assert log.skipped == [k for k, fell in enumerate(scale_fell) if fell]
    assert log.applied == [not fell for fell in scale_fell]
    quiet, _ = _run(Trainer(fp16_scale=2.0**16))  # this one finds no overflow at all
    assert quiet.skipped == []


def test_a_skipped_update_fails_the_plain_check_and_passes_against_its_replay():
    baseline = replay_losses(Trainer(), STEPS)
    fp16 = Trainer(fp16_scale=2.0**24)
    log, _ = _run(fp16)
    curves = {"baseline": baseline, "D6 autocast (FP16)": fp16.losses}
    # Against the baseline, every step after the first skip is an update behind: beyond the
    # autocast tolerance although the arithmetic is fine.
    diff = max(abs(a - b) for a, b in zip(fp16.losses, baseline, strict=True))
    assert diff > 2e-2
    with pytest.raises(AssertionError, match=r"D6 autocast \(FP16\): loss of step \d"):
        same_training(curves, baseline, tolerance=tolerance, n=STEPS)
    with pytest.raises(ValueError, match="give replay"):
        same_training(curves, baseline, tolerance=tolerance, skipped={
            "D6 autocast (FP16)": log.skipped}, n=STEPS)  # fmt: skip
    # Against an FP32 run that skips the same updates, what is left is the FP16 arithmetic.
    replayed = []

    def replay(steps):
        replayed.append(steps)
        return replay_losses(Trainer(), STEPS, steps)

    text = same_training(curves, baseline, tolerance=tolerance, n=STEPS,
                         skipped={"D6 autocast (FP16)": log.skipped}, replay=replay)  # fmt: skip
    assert replayed == [log.skipped]
    assert text.startswith(
        f"The first {STEPS} losses of every version match the baseline "
        "(FP32 within 0.0001, autocast within 0.02). D6 autocast (FP16): its gradient scaler "
        f"skipped the update of step{'s' if len(log.skipped) > 1 else ''} "
    )
    assert text.endswith("compared with an FP32 run that skips the same updates.") or (
        len(log.skipped) == 1 and text.endswith("the same update.")
    )
    # The replay must leave out the same updates: one that leaves out none is the baseline.
    with pytest.raises(AssertionError):
        same_training(curves, baseline, tolerance=tolerance, n=STEPS,
                      skipped={"D6 autocast (FP16)": log.skipped},
                      replay=lambda steps: replay_losses(Trainer(), STEPS))  # fmt: skip


def test_without_skips_the_sentence_is_the_one_the_lab_prints():
    baseline = replay_losses(Trainer(), STEPS)
    text = same_training({"baseline": baseline, "D1": list(baseline)}, baseline,
                         tolerance=tolerance, n=STEPS)  # fmt: skip
    assert text == ("The first 8 losses of every version match the baseline (FP32 within 0.0001).")


def test_a_baseline_that_does_not_learn_and_bad_arguments_are_refused():
    flat = [2.3] * STEPS
    with pytest.raises(AssertionError, match="the baseline does not learn"):
        same_training({"baseline": flat}, flat, tolerance=tolerance, n=STEPS)
    with pytest.raises(AssertionError, match="fewer than the 8 compared"):
        same_training({"D1": [2.3]}, [2.3, 2.2] * 4, tolerance=tolerance)
    with pytest.raises(AssertionError, match="D1: loss of step 0 is nan"):
        same_training({"D1": [float("nan")] * 8}, [2.3, 2.2] * 4, tolerance=tolerance)
    with pytest.raises(ValueError, match=r"skipped\['D1'\]=\[-1\] must hold step indices"):
        same_training({"D1": [2.3, 2.2] * 4}, [2.3, 2.2] * 4, tolerance=tolerance,
                      skipped={"D1": [-1]}, replay=lambda s: [])  # fmt: skip
    with pytest.raises(TypeError, match="trainer="):
        watch_updates(object())
    with pytest.raises(TypeError, match="curves="):
        same_training({}, [2.3], tolerance=tolerance)
