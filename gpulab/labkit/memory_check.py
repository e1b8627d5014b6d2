"""The step-memory model against measured peaks, over a list of training configurations.

The mini-batches lab builds each configuration (a network, a batch shape, an optimizer, a
precision), models its step's peak with :func:`gpulab.estimate_step_memory` and measures it
with :func:`gpulab.measure_training_memory`. :class:`MemoryCheck` prints the comparison and
states the errors, judged against the course's target on a CPU, :data:`MEMORY_TARGET`, and
recorded for the page "How good are the course's models?".

See also the chapter *Mini-batches*, ``notebooks/minibatches_lab`` and
``tests/test_lab_reports.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpulab._checks import flag, positive_number, wrong_type
from gpulab.costmodels.memory import MemoryEstimate, estimate_step_memory, measure_training_memory
from gpulab.labkit.accuracy_output import AccuracyClaim
from gpulab.labkit.claims import claim

__all__ = ["MEMORY_TARGET", "MemoryCheck", "check_step_memory"]

#: The course's accuracy for the step-memory model on a CPU: within 10% of the measured peak
#: on every configuration. On a GPU the measured peak also holds the cuBLAS and cuDNN
#: workspaces PyTorch allocates during the step, which the model leaves out, so there the
#: errors are reported without the target.
MEMORY_TARGET = 0.10


@dataclass(frozen=True)
class MemoryCheck:
    """Each configuration's modelled step memory and its measured peak.

    Attributes
    ----------
    rows : sequence of (str, MemoryEstimate, int)
        ``(configuration, the model's estimate, measured peak bytes)``.
    on_gpu : bool
        Whether the peaks were measured on a GPU (CUDA or MPS: workspaces included, target
        not judged).
    """

    rows: Sequence[tuple[str, MemoryEstimate, int]]
    on_gpu: bool

    def __post_init__(self) -> None:
        flag("on_gpu", self.on_gpu)
        if not self.rows:
            raise ValueError("rows=[] is empty: at least one configuration is needed")
        for i, (_, est, measured) in enumerate(self.rows):
            if not isinstance(est, MemoryEstimate):
                raise wrong_type(f"rows[{i}] estimate", est, "a MemoryEstimate")
            positive_number(f"rows[{i}] measured bytes", measured)
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))

    @property
    def estimates(self) -> list[MemoryEstimate]:
        return [est for _, est, _ in self.rows]

    @property
    def peak_errors(self) -> list[float]:
        """Modelled peak over measured peak, minus one, per configuration."""
        return [est.peak_bytes / measured - 1 for _, est, measured in self.rows]

    @property
    def state_errors(self) -> list[float]:
        """The state alone (``total_bytes``) over the measured peak, minus one."""
        return [est.total_bytes / measured - 1 for _, est, measured in self.rows]

    @property
    def peak_moments(self) -> list[str]:
        """The moment of the step that holds each modelled peak."""
        return [max(est.phases(), key=est.phases().get) for est in self.estimates]

    def table(self) -> str:
        lines = [f"{'configuration':<52}{'state':>9}{'peak':>9}{'measured':>10}{'error':>7}"
                 "  peak at"]
        for (name, est, measured), err, moment in zip(self.rows, self.peak_errors,
                                                      self.peak_moments, strict=True):
            lines.append(f"{name:<52}{est.total_bytes / 2**20:>5.1f}MiB"
                         f"{est.peak_bytes / 2**20:>5.1f}MiB{measured / 2**20:>6.1f}MiB"
                         f"{err:>+7.1%}  {moment}")
        return "\n".join(lines)

    def verdict(self, target: float = MEMORY_TARGET) -> AccuracyClaim:
        """The errors of the modelled peak and of the state alone, in a sentence; on a CPU
        judged against ``target`` (every configuration within it), on a GPU reported.

        Raises
        ------
        gpulab.labkit.claims.ClaimError
            On a CPU, when a configuration's modelled peak misses ``target``.
        """
        positive_number("target", target)
        peaks, states = self.peak_errors, self.state_errors
        n = len(peaks)
        within = sum(abs(e) <= target for e in peaks)
        judged = (f"all {n} within the {target:.0%} target" if within == n
                  else f"{within} of {n} within {target:.0%}")
        sentence = claim(
            f"**Measured here:** the modelled peak was off by {min(peaks):+.1%} to "
            f"{max(peaks):+.1%} of the measured peak, {judged}. The state alone "
            f"(`total_bytes`) was off by {min(states):+.0%} to {max(states):+.0%}: it misses "
            "the short-lived buffers and counts activations and gradients as if they coexisted.",
            self.on_gpu or within == n,
            reason=f"the step-memory model's target on a CPU: every configuration within "
            f"{target:.0%} of the measured peak; errors {peaks}",
        )
        return AccuracyClaim(sentence, "training memory", "largest |error|",
                             max(abs(e) for e in peaks), target, n,
                             f"modelled peak against measured, {n} configurations")


def check_step_memory(
    configs: Sequence[tuple[str, Callable[[], object], tuple[int, ...], str, str]],
    device=None,
) -> MemoryCheck:
    """Model and measure one training step's peak memory for each configuration (with a
    progress bar).

    Parameters
    ----------
    configs : sequence
        ``(name, make_model, input shape, optimizer, precision)``. A model with a ``vocab``
        attribute (:class:`gpulab.labkit.networks.TinyEncoder`) gets token ids below it, any
        other random normal inputs; the targets are 10 classes. Each model is built after
        ``torch.manual_seed(0)``.
    device : torch.device or str, optional
        Where the steps run (default the CPU).

    Examples
    --------
    >>> from torch import nn
    >>> check = check_step_memory([("linear", lambda: nn.Linear(8, 10), (4, 8), "sgd", "fp32")])
    >>> len(check.rows), check.on_gpu
    (1, False)
    """
    import torch
    from tqdm.auto import tqdm

    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence) or not configs:
        raise wrong_type("configs", configs,
                         "a non-empty list of (name, make_model, shape, optimizer, precision)")
    device = torch.device(device or "cpu")
    rows = []
    for name, make, shape, optimizer, precision in tqdm(configs, desc="configurations"):
        torch.manual_seed(0)
        net = make().to(device)
        vocab = getattr(net, "vocab", None)
        x = (torch.randint(0, vocab, shape, device=device) if vocab
             else torch.randn(*shape, device=device))
        y = torch.randint(0, 10, (shape[0],), device=device)
        est = estimate_step_memory(net, x, precision=precision, optimizer=optimizer)
        measured = measure_training_memory(net, x, y, precision=precision, optimizer=optimizer)
        rows.append((f"{name}, {optimizer}, {precision}", est, measured))
    return MemoryCheck(rows, on_gpu=device.type != "cpu")
