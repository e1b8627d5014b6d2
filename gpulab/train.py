"""One small, readable training loop that the labs share, reporting samples per second.

:func:`train` runs epochs of forward, loss, backward and optimizer steps, with optional
mixed precision (``torch.autocast``, plus a gradient scaler for float16) and gradient
accumulation, shows a tqdm progress bar in samples/s, and returns :class:`TrainStats`.
The clock is read only after the device has finished its queued work, so the
throughput is honest on a GPU too (GPU work is asynchronous).

See also the chapters "Frameworks" (``book/frameworks.md``) and "Mini-batches"
(``book/minibatches.md``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gpulab._checks import positive_int
from gpulab.bench import synchronize
from gpulab.device import best_device

__all__ = ["TrainStats", "train"]

_AMP_NAMES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}


@dataclass
class TrainStats:
    """What a training run did and how fast.

    Attributes
    ----------
    steps : int
        Optimizer steps taken.
    samples : int
        Samples processed (each micro-batch's first dimension, summed).
    seconds : float
        Wall-clock seconds, measured after synchronizing the device.
    losses : list of float
        Loss of each optimizer step (the mean over its micro-batches).

    Examples
    --------
    >>> stats = TrainStats(steps=2, samples=64, seconds=0.5, losses=[2.3, 2.1])
    >>> stats.samples_per_s, stats.final_loss
    (128.0, 2.1)
    """

    steps: int
    samples: int
    seconds: float
    losses: list[float] = field(default_factory=list)

    @property
    def samples_per_s(self) -> float:
        """Throughput: samples per second (0.0 when no time was measured)."""
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    @property
    def final_loss(self) -> float:
        """Loss of the last optimizer step (NaN when no step was taken)."""
        return self.losses[-1] if self.losses else math.nan


def _amp_dtype(amp_dtype):
    import torch

    if amp_dtype is None:
        return None
    if isinstance(amp_dtype, str) and amp_dtype in _AMP_NAMES:
        return getattr(torch, _AMP_NAMES[amp_dtype])
    if amp_dtype in (torch.bfloat16, torch.float16):
        return amp_dtype
    raise ValueError(
        f"amp_dtype={amp_dtype!r} is not supported; use None, torch.bfloat16, torch.float16, "
        "'bf16' or 'fp16'"
    )


def _to(inputs, device):
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.to(device, non_blocking=True)
    if isinstance(inputs, tuple | list):
        return type(inputs)(_to(x, device) for x in inputs)
    return inputs


def _batch_size(inputs) -> int:
    import torch

    first = inputs[0] if isinstance(inputs, tuple | list) else inputs
    if not isinstance(first, torch.Tensor) or first.dim() == 0:
        raise ValueError(
            "each batch's inputs must be a tensor (or tuple of tensors) with a batch dim"
        )
    return int(first.shape[0])


def _unpack(batch) -> tuple:
    if not isinstance(batch, tuple | list) or len(batch) != 2:
        raise ValueError(
            f"each batch must be a pair (inputs, targets); got {type(batch).__name__}"
            + (f" of length {len(batch)}" if isinstance(batch, tuple | list) else "")
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
    loss_fn=None,
    epochs: int = 1,
    device=None,
    amp_dtype=None,
    accumulation_steps: int = 1,
    max_steps: int | None = None,
    progress: bool = True,
    desc: str = "training",
) -> TrainStats:
    """Train ``model`` on ``batches`` and report how many samples per second it managed.

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
        Passes over ``batches``.
    device : str or torch.device, optional
        Where to train; :func:`gpulab.best_device` by default.
    amp_dtype : torch.dtype or str, optional
        ``torch.bfloat16``/``"bf16"`` or ``torch.float16``/``"fp16"`` turns on autocast
        (float16 also turns on a gradient scaler); None trains in the model's precision.
    accumulation_steps : int
        Micro-batches whose gradients are summed (each loss divided by this number)
        before one optimizer step. A last, incomplete group in an epoch is stepped too.
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
    ValueError
        For a non-positive ``epochs``/``accumulation_steps``/``max_steps``, an unknown
        ``amp_dtype``, a one-shot iterator with ``epochs > 1``, no batches, or a batch that
        is not an ``(inputs, targets)`` pair.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(4, 3)
    >>> data = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(5)]
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> stats = train(model, data, optimizer=opt, epochs=2, device="cpu", progress=False)
    >>> stats.steps, stats.samples, len(stats.losses)
    (10, 80, 10)
    """
    import torch
    import torch.nn.functional as F

    positive_int("epochs", epochs)
    positive_int("accumulation_steps", accumulation_steps)
    if max_steps is not None:
        positive_int("max_steps", max_steps)
    dtype = _amp_dtype(amp_dtype)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model={type(model).__name__} must be a torch.nn.Module")
    if not (hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")):
        raise ValueError(f"optimizer={optimizer!r} must be a torch.optim.Optimizer")
    if isinstance(batches, Iterator) and epochs > 1:
        raise ValueError(
            f"batches is a one-shot iterator but epochs={epochs}: pass a list or a DataLoader"
        )
    loss_fn = loss_fn or F.cross_entropy
    device = torch.device(device) if device is not None else best_device()
    model.to(device)
    model.train()
    autocast = (
        torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()
    )
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)

    steps = samples = pending = 0
    step_loss = None
    losses = []  # loss tensors, read once at the end so the loop never waits for the device
    bar = _progress_bar(progress, desc)

    def optimizer_step():
        nonlocal steps, pending, step_loss
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss * (accumulation_steps / pending))
        steps += 1
        pending = 0
        step_loss = None

    synchronize()
    start = time.perf_counter()
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
        seconds = time.perf_counter() - start
    finally:
        if bar is not None:
            bar.close()
    if samples == 0:
        raise ValueError("batches yielded no batches: nothing to train on")
    return TrainStats(
        steps=steps,
        samples=samples,
        seconds=seconds,
        losses=[float(v) for v in losses],
    )
