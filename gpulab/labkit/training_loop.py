"""One small, readable training loop that the labs share, reporting samples per second.

:func:`train` runs epochs of forward, loss, backward and optimizer steps, with optional
mixed precision (``torch.autocast``, plus a gradient scaler for float16) and gradient
accumulation, shows a tqdm progress bar in samples/s, and returns :class:`TrainStats`.
The clock is read only after the device has finished its queued work, so the
throughput is honest on a GPU too (GPU work is asynchronous), and it starts only after a
few warm-up steps, so one-off start-up costs do not count against the steady rate that
the case studies extrapolate from.

See also the chapters "Frameworks" (``book/frameworks.md``) and "Mini-batches"
(``book/minibatches.md``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from numbers import Real

from gpulab._checks import (
    MAX_EPOCHS,
    MAX_STEPS,
    at_most,
    choice,
    flag,
    non_negative_int,
    non_negative_number,
    positive_int,
    text,
    wrong_type,
)
from gpulab.measure.bench import synchronize
from gpulab.measure.device import torch_device

__all__ = ["TrainStats", "train"]

#: Precisions :func:`train` runs (see :data:`gpulab.PRECISIONS`): the model's own, or mixed.
TRAIN_PRECISIONS = ("fp32", "amp_bf16", "amp_fp16")
_AUTOCAST = {"amp_bf16": "bfloat16", "amp_fp16": "float16"}

#: Optimizer steps run before the clock starts, by default (see :func:`train`).
DEFAULT_WARMUP_STEPS = 3

_clock = time.perf_counter  # the clock train() reads; tests replace it


@dataclass
class TrainStats:
    """What a training run did and how fast, once warmed up.

    The first ``warmup_steps`` optimizer steps train the model like any other but are not
    timed: they pay for one-off costs (CUDA initialisation, cuDNN autotuning, the
    allocator growing its cache, a DataLoader starting its workers) that a long run
    amortises. :attr:`samples_per_s` is measured over the steps after them.

    Attributes
    ----------
    steps : int
        Optimizer steps taken, warm-up included: at least one.
    samples : int
        Samples processed (each micro-batch's first dimension, summed), warm-up included.
    time_s : float
        Wall-clock seconds of the timed steps (after warm-up), read after synchronizing
        the device; above 0 when any step was timed.
    losses : list of float
        Loss of each optimizer step (the mean over its micro-batches): one per step.
    warmup_steps : int
        Steps run before the clock started, at most ``steps``.
    warmup_samples : int
        Samples processed in those steps, at most ``samples``.
    warmup_time_s : float
        Seconds the warm-up steps took.

    Examples
    --------
    >>> stats = TrainStats(steps=5, samples=160, time_s=0.5, losses=[2.5, 2.4, 2.3, 2.2, 2.1],
    ...                    warmup_steps=1, warmup_samples=32, warmup_time_s=0.4)
    >>> stats.timed_samples, stats.samples_per_s, stats.total_time_s, stats.final_loss
    (128, 256.0, 0.9, 2.1)
    """

    steps: int
    samples: int
    time_s: float
    losses: list[float] = field(default_factory=list)
    warmup_steps: int = 0
    warmup_samples: int = 0
    warmup_time_s: float = 0.0

    def __post_init__(self) -> None:
        positive_int("steps", self.steps)
        for name in ("samples", "warmup_steps", "warmup_samples"):
            non_negative_int(name, getattr(self, name))
        non_negative_number("time_s", self.time_s)
        non_negative_number("warmup_time_s", self.warmup_time_s)
        # NaN and infinite losses are allowed: they are what a diverging run records.
        if not isinstance(self.losses, list) or not all(
            isinstance(v, Real) and not isinstance(v, bool) for v in self.losses
        ):
            raise wrong_type("losses", self.losses, "a list of numbers")
        self._check_consistent()

    def _check_consistent(self) -> None:
        if len(self.losses) != self.steps:
            raise ValueError(
                f"losses has {len(self.losses)} entries but steps={self.steps!r}: "
                "a run records one loss per optimizer step"
            )
        if self.warmup_steps > self.steps:
            raise ValueError(
                f"warmup_steps={self.warmup_steps!r} must be at most steps={self.steps!r}"
            )
        if self.warmup_steps < self.steps and self.time_s == 0:
            raise ValueError(
                f"time_s=0 with {self.steps - self.warmup_steps} of {self.steps} steps timed "
                f"(warmup_steps={self.warmup_steps!r}): timed steps take time"
            )
        if self.warmup_samples > self.samples:
            raise ValueError(
                f"warmup_samples={self.warmup_samples!r} must be at most "
                f"samples={self.samples!r}"
            )

    @property
    def timed_samples(self) -> int:
        """Samples processed after warm-up, while the clock ran."""
        return self.samples - self.warmup_samples

    @property
    def samples_per_s(self) -> float:
        """Throughput once warmed up: timed samples per timed second.

        Raises
        ------
        ValueError
            When no step was timed (the run was all warm-up): there is no rate to report.
        """
        if self.warmup_steps >= self.steps:
            raise ValueError(
                f"no step was timed: all {self.steps} steps were warm-up "
                f"(warmup_steps={self.warmup_steps}); train for more steps or pass "
                "warmup_steps=0 to time them all"
            )
        if self.timed_samples <= 0:
            raise ValueError(
                f"timed_samples=0: the {self.steps - self.warmup_steps} timed steps processed "
                f"no samples (samples={self.samples}, warmup_samples={self.warmup_samples})"
            )
        return self.timed_samples / self.time_s

    @property
    def total_time_s(self) -> float:
        """Wall-clock seconds of the whole run, warm-up included."""
        return self.warmup_time_s + self.time_s

    @property
    def final_loss(self) -> float:
        """Loss of the last optimizer step."""
        return self.losses[-1] if self.losses else math.nan


def _autocast_dtype(precision: str):
    import torch

    choice("precision", precision, TRAIN_PRECISIONS)
    name = _AUTOCAST.get(precision)
    return None if name is None else getattr(torch, name)


def _to(inputs, device):
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.to(device, non_blocking=True)
    if isinstance(inputs, tuple | list):
        return type(inputs)(_to(x, device) for x in inputs)
    return inputs


def _batch_size(inputs) -> int:
    import torch

    first = inputs[0] if isinstance(inputs, tuple | list) and inputs else inputs
    if not isinstance(first, torch.Tensor):
        raise TypeError(
            "each batch's inputs must be a tensor (or tuple of tensors) with a batch dim, "
            f"not {type(first).__name__}"
        )
    if first.dim() == 0:
        raise ValueError(
            "each batch's inputs must be a tensor (or tuple of tensors) with a batch dim, "
            "not a 0-dimensional tensor"
        )
    return int(first.shape[0])


def _unpack(batch) -> tuple:
    if not isinstance(batch, tuple | list):
        raise TypeError(f"each batch must be a pair (inputs, targets), not {type(batch).__name__}")
    if len(batch) != 2:
        raise ValueError(
            f"each batch must be a pair (inputs, targets); got a {type(batch).__name__} "
            f"of length {len(batch)}"
        )
    return batch[0], batch[1]


def _call(model, inputs):
    import torch

    if isinstance(inputs, tuple | list) and not isinstance(inputs, torch.Tensor):
        return model(*inputs)
    return model(inputs)


def _progress_bar(progress: bool, desc: str):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc=desc, unit="sample", unit_scale=True, leave=True)


def train(
    model,
    batches: Iterable,
    *,
    optimizer,
    loss_fn: Callable | None = None,
    epochs: int = 1,
    device=None,
    precision: str = "fp32",
    accumulation_steps: int = 1,
    warmup_steps: int = DEFAULT_WARMUP_STEPS,
    max_steps: int | None = None,
    progress: bool = True,
    desc: str = "training",
) -> TrainStats:
    """Train ``model`` on ``batches`` and report how many samples per second it managed.

    Every step trains the model; the first ``warmup_steps`` are left out of the timing.

    Parameters
    ----------
    model : torch.nn.Module
        Moved to ``device`` and put in train mode.
    batches : iterable of (inputs, targets)
        A ``DataLoader`` or a list of pairs; it must be re-iterable when ``epochs > 1``.
        Tensors are moved to ``device`` (``non_blocking``: a pinned-memory DataLoader
        overlaps the copy with computation).
    optimizer : torch.optim.Optimizer
        Built over ``model.parameters()``.
    loss_fn : callable, optional
        ``loss_fn(outputs, targets)``; :func:`torch.nn.functional.cross_entropy` by default.
    epochs : int
        Passes over ``batches``, at most ``MAX_EPOCHS`` (100 000).
    device : str or torch.device, optional
        Where to train; :func:`gpulab.best_device` by default.
    precision : {"fp32", "amp_bf16", "amp_fp16"}
        ``"fp32"`` trains in the model's own precision; ``"amp_bf16"`` and ``"amp_fp16"``
        turn on mixed precision (``torch.autocast``; ``"amp_fp16"`` also a gradient scaler).
    accumulation_steps : int
        Micro-batches whose gradients are summed (each loss divided by this number)
        before one optimizer step. A last, incomplete group in an epoch is stepped too. At
        most ``MAX_STEPS`` (10**9).
    warmup_steps : int
        Optimizer steps that train but are not timed (see :class:`TrainStats`); the clock
        starts after them. 0 times every step. Below ``max_steps`` when that is given, and at
        most ``MAX_STEPS`` (10**9).
    max_steps : int, optional
        Stop after this many optimizer steps.
    progress : bool
        Show a tqdm progress bar with samples/s.
    desc : str
        The progress bar's label.

    Returns
    -------
    TrainStats

    Raises
    ------
    TypeError
        For an argument of the wrong type: a ``model`` that is not a torch module, an
        ``optimizer`` that is not an optimizer, ``batches`` that are not iterable, a count
        that is not an int, a ``device`` that is not a str or torch.device, a ``progress``
        that is not True or False; also for a batch that is not an ``(inputs, targets)``
        pair of tensors.
    ValueError
        For a non-positive ``epochs``/``accumulation_steps``/``max_steps``, a negative
        ``warmup_steps`` or one of at least ``max_steps``, a count above its limit, an
        unknown ``precision`` or device name, a one-shot iterator with ``epochs > 1``, no
        batches, or a batch of the wrong length.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(4, 3)
    >>> data = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(5)]
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> stats = train(model, data, optimizer=opt, epochs=2, device="cpu", progress=False)
    >>> stats.steps, stats.samples, len(stats.losses), stats.warmup_steps, stats.timed_samples
    (10, 80, 10, 3, 56)
    """
    import torch
    import torch.nn.functional as F

    positive_int("epochs", epochs)
    at_most("epochs", epochs, MAX_EPOCHS, "passes of one training run")
    positive_int("accumulation_steps", accumulation_steps)
    at_most("accumulation_steps", accumulation_steps, MAX_STEPS, "steps counted in one number")
    if max_steps is not None:
        positive_int("max_steps", max_steps)
    warmup_steps = non_negative_int("warmup_steps", warmup_steps)
    at_most("warmup_steps", warmup_steps, MAX_STEPS, "steps counted in one number")
    if max_steps is not None and warmup_steps >= max_steps:
        raise ValueError(
            f"warmup_steps={warmup_steps!r} with max_steps={max_steps!r}: every step would be "
            "warm-up and none timed; give fewer warm-up steps, or warmup_steps=0 to time them all"
        )
    dtype = _autocast_dtype(precision)
    text("desc", desc)
    if not isinstance(batches, Iterable) or isinstance(batches, (str, bytes)):
        raise wrong_type("batches", batches, "an iterable of (inputs, targets) pairs")
    flag("progress", progress)
    if not isinstance(model, torch.nn.Module):
        raise wrong_type("model", model, "a torch.nn.Module")
    if not (hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")):
        raise wrong_type("optimizer", optimizer, "a torch.optim.Optimizer")
    if loss_fn is not None and not callable(loss_fn):
        raise wrong_type("loss_fn", loss_fn, "a callable loss_fn(outputs, targets), or None")
    if isinstance(batches, Iterator) and epochs > 1:
        raise ValueError(
            f"batches is a one-shot iterator but epochs={epochs}: pass a list or a DataLoader"
        )
    if loss_fn is None:
        loss_fn = F.cross_entropy
    device = torch_device(device)
    model.to(device)
    model.train()
    autocast = (
        torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()
    )
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)

    steps = samples = pending = warm_samples = 0
    step_loss = None
    timed_from = None  # clock reading when warm-up ended
    losses = []  # loss tensors, read once at the end so the loop never waits for the device
    bar = _progress_bar(progress, desc)

    def optimizer_step():
        nonlocal steps, pending, step_loss, timed_from, warm_samples
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss * (accumulation_steps / pending))
        steps += 1
        pending = 0
        step_loss = None
        if steps == warmup_steps:  # warm-up done: the clock starts once its work has finished
            synchronize()
            timed_from, warm_samples = _clock(), samples

    synchronize()
    start = _clock()
    if warmup_steps == 0:
        timed_from = start
    try:
        optimizer.zero_grad(set_to_none=True)
        for _ in range(epochs):
            for batch in batches:
                inputs, targets = _unpack(batch)
                n = _batch_size(inputs)
                inputs, targets = _to(inputs, device), _to(targets, device)
                with autocast:
                    loss = loss_fn(_call(model, inputs), targets) / accumulation_steps
                scaler.scale(loss).backward()
                step_loss = loss.detach() if step_loss is None else step_loss + loss.detach()
                pending += 1
                samples += n
                if bar is not None:
                    bar.update(n)
                if pending == accumulation_steps:
                    optimizer_step()
                if max_steps is not None and steps >= max_steps:
                    break
            if pending:
                optimizer_step()
            if max_steps is not None and steps >= max_steps:
                break
        synchronize()
        end = _clock()
    finally:
        if bar is not None:
            bar.close()
    if samples == 0:
        raise ValueError("batches yielded no batches: nothing to train on")
    warm_end = end if timed_from is None else timed_from
    return TrainStats(
        steps=steps,
        samples=samples,
        time_s=end - warm_end,
        losses=[float(v) for v in losses],
        warmup_steps=min(steps, warmup_steps),
        warmup_samples=samples if timed_from is None else warm_samples,
        warmup_time_s=warm_end - start,
    )
