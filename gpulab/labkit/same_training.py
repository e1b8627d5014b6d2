"""Is a faster training loop still the same training? Loss curves compared step by step.

A fix that only reorders sums (one call per batch instead of per sample) leaves each loss
equal to rounding; a 16-bit autocast moves it by a stated tolerance. FP16 adds one more
difference: its gradient scaler (``torch.amp.GradScaler``) starts at a scale of 2**16 and,
while it looks for a scale at which the scaled gradients do not overflow, **skips** the
optimizer's update of every step whose gradients hold an inf or a NaN (it halves the scale
and goes on). A skipped step changes the training: every later step is one update behind,
on other data, so its loss differs from the baseline's by more than rounding, and a check
against the baseline fails on a T4 (FP16) although nothing is wrong.

So a run whose scaler skipped steps is compared with an FP32 run that skips the **same**
updates (:func:`replay_losses`): with the updates the same, what is left is the 16-bit
arithmetic, and the tolerance of autocast applies. :func:`watch_updates` records which steps
were skipped without asking the GPU anything (no host sync: it notes whether the scaler
called the optimizer's ``step``). :func:`same_training` does the comparison and words it.

See also the capstone chapter (``book/capstone.md``, "Keeping the results the same").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpulab._checks import positive_int, wrong_type

__all__ = ["UpdateLog", "replay_losses", "same_training", "watch_updates"]


@dataclass
class UpdateLog:
    """Which steps of a trainer applied their optimizer update (:func:`watch_updates`).

    ``applied[k]`` is True when step ``k`` called the optimizer's ``step`` at least once.
    """

    applied: list[bool] = field(default_factory=list)

    @property
    def skipped(self) -> list[int]:
        """The steps whose update was skipped (a gradient scaler found an inf or a NaN)."""
        return [k for k, done in enumerate(self.applied) if not done]


def _trainer_parts(trainer):
    for name in ("step", "opt", "losses"):
        if not hasattr(trainer, name):
            raise wrong_type(
                "trainer", trainer, "a trainer with .step(), .opt (a torch optimizer) and .losses"
            )
    if not callable(getattr(trainer.opt, "step", None)):
        raise wrong_type("trainer.opt", trainer.opt, "a torch optimizer (with .step())")


def watch_updates(trainer) -> UpdateLog:
    """Record, step by step, whether ``trainer`` applied its optimizer's update.

    ``trainer`` is an object with ``.step()`` (one optimizer step), ``.opt`` (its torch
    optimizer) and ``.losses``, such as the capstone lab's ``Trainer``. Its ``step`` and its
    optimizer's ``step`` are wrapped on this instance only; the cost is a Python call and a
    flag per step, and nothing waits for the GPU.

    Examples
    --------
    >>> import torch
    >>> class Tiny:
    ...     def __init__(self):
    ...         self.w = torch.nn.Parameter(torch.ones(1))
    ...         self.opt, self.losses = torch.optim.SGD([self.w], lr=0.1), []
    ...     def step(self, skip=False):
    ...         self.opt.zero_grad()
    ...         loss = (self.w ** 2).sum()
    ...         loss.backward()
    ...         if not skip:  # a GradScaler leaves the update out the same way
    ...             self.opt.step()
    ...         self.losses.append(loss.item())
    >>> t = Tiny()
    >>> log = watch_updates(t)
    >>> t.step(); t.step(skip=True); t.step()
    >>> log.skipped
    [1]
    """
    _trainer_parts(trainer)
    log = UpdateLog()
    step, update = trainer.step, trainer.opt.step

    def watched_update(*args, **kwargs):
        log.applied[-1] = True
        return update(*args, **kwargs)

    def watched_step(*args, **kwargs):
        log.applied.append(False)
        return step(*args, **kwargs)

    trainer.opt.step = watched_update
    trainer.step = watched_step
    return log


def replay_losses(trainer, steps: int, skipped: Sequence[int] = ()) -> list[float]:
    """The losses of ``steps`` steps of ``trainer``, its update left out at ``skipped`` steps.

    The reference for a run whose gradient scaler skipped those steps: give it a trainer of
    the same training in FP32, whose optimizer's update is then left out exactly where the
    scaler left it out (the optimizer must keep no state between steps that a skipped call
    would have changed, as plain SGD does).

    Examples
    --------
    >>> import torch
    >>> class Tiny:
    ...     def __init__(self):
    ...         self.w = torch.nn.Parameter(torch.ones(1))
    ...         self.opt, self.losses = torch.optim.SGD([self.w], lr=0.25), []
    ...     def step(self):
    ...         self.opt.zero_grad()
    ...         loss = (self.w ** 2).sum()
    ...         loss.backward()
    ...         self.opt.step()
    ...         self.losses.append(loss.item())
    >>> replay_losses(Tiny(), 3), replay_losses(Tiny(), 3, skipped=[0])
    ([1.0, 0.25, 0.0625], [1.0, 1.0, 0.25])
    """
    _trainer_parts(trainer)
    steps = positive_int("steps", steps)
    skip = _checked_steps("skipped", skipped)
    update = trainer.opt.step
    first = len(trainer.losses)
    try:
        for k in range(steps):
            trainer.opt.step = (lambda *a, **kw: None) if k in skip else update
            trainer.step()
    finally:
        trainer.opt.step = update
    return [float(v) for v in trainer.losses[first : first + steps]]


def _checked_steps(name: str, steps) -> set[int]:
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence | set | frozenset):
        raise wrong_type(name, steps, "a list of step indices (int)")
    for k in steps:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"{name}={list(steps)!r} must hold step indices (int, 0 or more)")
    return set(steps)


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(str(k) for k in steps)
    return f"step {shown}" if len(steps) == 1 else f"steps {shown}"


def same_training(
    curves: Mapping[str, Sequence[float]],
    baseline: Sequence[float],
    *,
    tolerance: Callable[[str], tuple[str, float]],
    skipped: Mapping[str, Sequence[int]] | None = None,
    replay: Callable[[list[int]], Sequence[float]] | None = None,
    n: int = 8,
) -> str:
    """Check that every version's first ``n`` losses match the baseline's; say so in words.

    Parameters
    ----------
    curves : dict
        Each version's losses, one per optimizer step, by name.
    baseline : sequence of float
        The baseline's losses.
    tolerance : callable
        ``tolerance(name)`` gives a version's kind of arithmetic and the largest absolute
        difference allowed for it, stated before measuring: ``("FP32", 1e-4)`` for fixes that
        only reorder sums, ``("autocast", 2e-2)`` for 16-bit arithmetic.
    skipped : dict, optional
        By version name, the steps whose update a gradient scaler skipped
        (:attr:`UpdateLog.skipped`); a version missing here skipped none.
    replay : callable, optional
        ``replay(steps)`` returns the losses of an FP32 run of the same training whose
        updates are left out at ``steps`` (:func:`replay_losses`); needed when a version
        skipped a step among the first ``n``.
    n : int
        How many first steps to compare.

    Returns
    -------
    str
        The sentence the lab prints.

    Raises
    ------
    AssertionError
        When a version's losses differ by more than its tolerance (naming the version, the
        step and the difference), or the baseline does not learn.

    Examples
    --------
    >>> def tol(name):
    ...     return ("autocast", 2e-2) if "autocast" in name else ("FP32", 1e-4)
    >>> base = [2.30, 2.20, 2.10]
    >>> print(same_training({"D1": [2.30, 2.20, 2.10], "D6 autocast": [2.31, 2.19, 2.10]},
    ...       base, tolerance=tol, n=3))  # doctest: +NORMALIZE_WHITESPACE
    The first 3 losses of every version match the baseline (FP32 within 0.0001,
    autocast within 0.02).
    >>> print(same_training({"D6 autocast": [2.31, 2.29, 2.21]}, base, tolerance=tol,
    ...       skipped={"D6 autocast": [0]}, replay=lambda steps: [2.30, 2.30, 2.20], n=3))
    ... # doctest: +NORMALIZE_WHITESPACE
    The first 3 losses of every version match the baseline (autocast within 0.02).
    D6 autocast: its gradient scaler skipped the update of step 0 while it found its scale,
    so it is compared with an FP32 run that skips the same update.
    """
    if not isinstance(curves, Mapping) or not curves:
        raise wrong_type("curves", curves, "a dict of losses by version name, not empty")
    n = positive_int("n", n)
    skipped = {} if skipped is None else skipped
    if not isinstance(skipped, Mapping):
        raise wrong_type("skipped", skipped, "a dict of step lists by version name, or None")
    if not callable(tolerance):
        raise wrong_type("tolerance", tolerance, "a function of a version's name: (kind, tol)")
    kinds = {name: tolerance(name) for name in curves}
    base = [float(v) for v in baseline]
    if len(base) < n:
        raise ValueError(f"baseline has {len(base)} losses; n={n} needs at least {n}")
    notes = []
    for name, losses in curves.items():
        losses = [float(v) for v in losses]
        tol = kinds[name][1]
        if len(losses) < n:
            raise AssertionError(f"{name}: {len(losses)} losses, fewer than the {n} compared")
        skips = sorted(k for k in _checked_steps(f"skipped[{name!r}]", skipped.get(name, ()))
                       if k < n)  # fmt: skip
        reference = base
        if skips:
            if replay is None:
                raise ValueError(
                    f"{name} skipped {_steps_text(skips)}: give replay, the losses of an FP32 "
                    "run that skips the same updates (replay_losses)"
                )
            reference = [float(v) for v in replay(skips)][:n]
            if len(reference) < n:
                raise ValueError(f"replay({skips}) gave {len(reference)} losses; {n} needed")
            notes.append(
                f"{name}: its gradient scaler skipped the update of {_steps_text(skips)} while "
                "it found its scale, so it is compared with an FP32 run that skips the same "
                f"update{'s' if len(skips) > 1 else ''}."
            )
        diffs = [abs(a - b) for a, b in zip(losses[:n], reference[:n], strict=True)]
        worst = max(range(n), key=lambda k: diffs[k] if not math.isnan(diffs[k]) else math.inf)
        if not diffs[worst] <= tol:  # a NaN fails too
            raise AssertionError(
                f"{name}: loss of step {worst} is {losses[worst]:.6g}, the reference's "
                f"{reference[worst]:.6g}: {diffs[worst]:.3g} apart, more than {tol:g}"
            )
    if not base[n - 1] < base[0]:
        raise AssertionError(
            f"the baseline does not learn: loss {base[0]:.4g} -> {base[n - 1]:.4g}"
        )
    within = ", ".join(f"{kind} within {tol:g}" for kind, tol in dict(kinds.values()).items())
    first = f"The first {n} losses of every version match the baseline ({within})."
    return " ".join([first, *notes])
