"""How much memory training needs: parameters, gradients, optimizer states and activations.

:func:`estimate_training_memory` adds the four parts up for a model of ``n_params``
parameters trained at a given precision with a given optimizer; :func:`activation_bytes`
measures the fourth part for a real model by counting the tensors autograd saves for the
backward pass; :func:`gpus_that_fit` lists the registry GPUs whose memory holds the total;
:func:`measure_training_memory` measures the peak of one real training step, so the
estimate can be checked.

Bytes per parameter, by precision (``amp_*`` keep fp32 master weights, as
``torch.autocast`` does; ``bf16`` stores everything in bfloat16):

============  =======  ========  ==========================
precision     weights  gradient  each optimizer state tensor
============  =======  ========  ==========================
fp32          4        4         4
amp_bf16      4        4         4
amp_fp16      4        4         4
bf16          2        2         2
============  =======  ========  ==========================

SGD keeps no state, SGD with momentum one tensor the size of the weights, Adam and AdamW
two (first and second moments). The estimate is the memory that lives through a step; a
real step also allocates short-lived buffers (optimizer temporaries, gradients of
activations, kernel workspaces), so the measured peak is usually higher. (It can be a little
lower when activations dominate and the optimizer keeps no state: backward frees each saved
activation as it allocates gradients.)

See also the chapter "Mini-batches" (``book/minibatches.md``) and its lab.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

from gpulab._checks import choice, fraction, non_negative_int, positive_int, resolve_spec
from gpulab.precision import TRAINING_PRECISIONS
from gpulab.specs import list_specs
from gpulab.units import format_bytes

__all__ = [
    "OPTIMIZERS",
    "MemoryEstimate",
    "activation_bytes",
    "bytes_per_param",
    "estimate_training_memory",
    "gpus_that_fit",
    "measure_training_memory",
    "memory_report",
]

#: Optimizers the estimator knows, by how many state tensors they keep per parameter.
OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw")

_WEIGHT_BYTES = {"fp32": 4, "amp_bf16": 4, "amp_fp16": 4, "bf16": 2}
_STATES_PER_PARAM = {"sgd": 0, "sgd_momentum": 1, "adam": 2, "adamw": 2}
_PARTS = ("parameters", "gradients", "optimizer states", "activations")


def _check_count(name: str, value, *, allow_zero: bool) -> None:
    (non_negative_int if allow_zero else positive_int)(name, value)


def bytes_per_param(precision: str = "fp32", optimizer: str = "adam") -> dict[str, int]:
    """Bytes each parameter costs in weights, gradient and optimizer states.

    Examples
    --------
    >>> bytes_per_param("amp_bf16", "adam")
    {'parameters': 4, 'gradients': 4, 'optimizer states': 8}
    >>> sum(bytes_per_param("bf16", "sgd").values())
    4
    """
    choice("precision", precision, TRAINING_PRECISIONS)
    choice("optimizer", optimizer, OPTIMIZERS)
    width = _WEIGHT_BYTES[precision]
    return {
        "parameters": width,
        "gradients": width,
        "optimizer states": width * _STATES_PER_PARAM[optimizer],
    }


_FIELDS_BYTES = ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes")


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory one training step keeps alive, part by part, in bytes.

    Attributes
    ----------
    params_bytes, grads_bytes, optimizer_bytes, activations_bytes : int
        Weights (including fp32 master weights under AMP), gradients, optimizer state
        and the activations saved for the backward pass of one batch.
    precision : str
        One of :data:`TRAINING_PRECISIONS`.
    optimizer : str
        One of :data:`OPTIMIZERS`.
    """

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    precision: str
    optimizer: str

    def __post_init__(self) -> None:
        for name in _FIELDS_BYTES:
            non_negative_int(name, getattr(self, name))
        choice("precision", self.precision, TRAINING_PRECISIONS)
        choice("optimizer", self.optimizer, OPTIMIZERS)

    @property
    def total_bytes(self) -> int:
        """All four parts together."""
        return sum(self.breakdown().values())

    def breakdown(self) -> dict[str, int]:
        """Bytes by part: parameters, gradients, optimizer states, activations."""
        values = (self.params_bytes, self.grads_bytes, self.optimizer_bytes, self.activations_bytes)
        return dict(zip(_PARTS, values, strict=True))

    def fits(self, spec, *, headroom: float = 0.9) -> bool:
        """Whether the total fits in ``headroom`` of the device's memory.

        Parameters
        ----------
        spec : DeviceSpec or str
            A registry entry or its name (``"T4"``, ``"A100 80GB"``).
        headroom : float
            Usable fraction of the memory (the CUDA context, the allocator's cache and
            fragmentation take the rest); in (0, 1].

        Examples
        --------
        >>> est = estimate_training_memory(1_000_000_000, precision="amp_bf16")
        >>> est.fits("A100 80GB"), est.fits("T4")
        (True, False)
        """
        headroom = fraction("headroom", headroom, allow_zero=False)
        spec = resolve_spec("spec", spec)
        if spec.memory_bytes is None:
            raise ValueError(
                f"{spec.name} has no fixed memory size in the registry (it depends on the "
                "DIMMs installed); pick a GPU or TPU entry"
            )
        return self.total_bytes <= headroom * spec.memory_bytes

    def __str__(self) -> str:
        lines = [f"Training memory ({self.precision}, {self.optimizer})"]
        total = self.total_bytes or 1
        for name, nbytes in self.breakdown().items():
            lines.append(
                f"  {name:<17} {format_bytes(nbytes, binary=True):>11}  {nbytes / total:6.1%}"
            )
        lines.append(f"  {'total':<17} {format_bytes(self.total_bytes, binary=True):>11}")
        return "\n".join(lines)


def estimate_training_memory(
    n_params: int,
    *,
    precision: str = "fp32",
    optimizer: str = "adam",
    activations_bytes: int = 0,
) -> MemoryEstimate:
    """Memory a training step keeps alive for a model of ``n_params`` parameters.

    Parameters
    ----------
    n_params : int
        Number of trainable parameters.
    precision : str
        One of :data:`TRAINING_PRECISIONS`.
    optimizer : str
        One of :data:`OPTIMIZERS`.
    activations_bytes : int
        Activations saved for the backward pass of one batch, e.g. from
        :func:`activation_bytes`; they grow with the batch size.

    Examples
    --------
    Mixed-precision Adam costs 16 bytes per parameter before activations:

    >>> est = estimate_training_memory(1_000_000, precision="amp_fp16", optimizer="adam")
    >>> est.total_bytes
    16000000
    >>> print(est)
    Training memory (amp_fp16, adam)
      parameters           3.81 MiB   25.0%
      gradients            3.81 MiB   25.0%
      optimizer states     7.63 MiB   50.0%
      activations               0 B    0.0%
      total                15.3 MiB
    """
    positive_int("n_params", n_params)
    non_negative_int("activations_bytes", activations_bytes)
    per_param = bytes_per_param(precision, optimizer)
    return MemoryEstimate(
        params_bytes=n_params * per_param["parameters"],
        grads_bytes=n_params * per_param["gradients"],
        optimizer_bytes=n_params * per_param["optimizer states"],
        activations_bytes=activations_bytes,
        precision=precision,
        optimizer=optimizer,
    )


def gpus_that_fit(estimate: MemoryEstimate, *, kind: str = "gpu", headroom: float = 0.9) -> list:
    """Registry devices of ``kind`` whose memory holds ``estimate``, smallest memory first.

    Examples
    --------
    >>> est = estimate_training_memory(3_000_000_000, precision="amp_bf16")
    >>> [s.name for s in gpus_that_fit(est)][:1]
    ['A100 80GB SXM4']
    """
    if not isinstance(estimate, MemoryEstimate):
        raise ValueError(f"estimate={estimate!r} must be a MemoryEstimate")
    headroom = fraction("headroom", headroom, allow_zero=False)
    specs = [s for s in list_specs(kind) if s.memory_bytes is not None]
    fitting = [s for s in specs if estimate.fits(s, headroom=headroom)]
    return sorted(fitting, key=lambda s: (s.memory_bytes, s.year, s.name))


def _model_device(model):
    import torch

    for tensor in model.parameters():
        return tensor.device
    return torch.device("cpu")


def _cast_inputs(inputs, dtype):
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.to(dtype) if inputs.is_floating_point() else inputs
    if isinstance(inputs, tuple | list):
        return type(inputs)(_cast_inputs(x, dtype) for x in inputs)
    return inputs


def _call(model, inputs):
    import torch

    if isinstance(inputs, tuple | list) and not isinstance(inputs, torch.Tensor):
        return model(*inputs)
    return model(inputs)


def _autocast(precision: str, device):
    import torch

    if precision == "amp_bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if precision == "amp_fp16":
        return torch.autocast(device.type, dtype=torch.float16)
    return contextlib.nullcontext()


def _prepare(model, inputs, precision):
    """The model and inputs as they run at ``precision`` (a bf16 copy for ``"bf16"``)."""
    import torch

    if precision == "bf16":
        return copy.deepcopy(model).to(torch.bfloat16), _cast_inputs(inputs, torch.bfloat16)
    return model, inputs


def activation_bytes(model, example_input, *, precision: str = "fp32") -> int:
    """Bytes autograd saves for the backward pass of one forward call on ``example_input``.

    Every tensor saved for backward passes through a saved-tensors hook; the distinct
    storages are summed, leaving out the model's own parameters and buffers (the
    estimator counts those separately). The input batch counts when a layer saves it.
    Under ``amp_*`` precisions the 16-bit copies of the weights that autocast makes are
    saved too, and counted. The loss function's own saved tensors are not included.

    Parameters
    ----------
    model : torch.nn.Module
        Runs on the device its parameters are on; train or eval mode as you set it.
    example_input : Tensor or tuple of Tensor
        One batch (a tuple is unpacked into the call).
    precision : str
        One of :data:`TRAINING_PRECISIONS`; ``"bf16"`` measures a bfloat16 copy of the model.

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.Linear(1000, 10)
    >>> activation_bytes(layer, torch.randn(32, 1000))  # Linear saves its input: 32*1000*4
    128000
    """
    import torch

    choice("precision", precision, TRAINING_PRECISIONS)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model={type(model).__name__} must be a torch.nn.Module")
    model, inputs = _prepare(model, example_input, precision)
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    saved: dict[tuple[str, int], int] = {}
    keep_alive = []  # saved tensors stay alive until the sum is taken, so no address is reused

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in own:
            saved[(str(tensor.device), storage.data_ptr())] = storage.nbytes()
            keep_alive.append(tensor)
        return tensor

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with _autocast(precision, _model_device(model)):
            output = _call(model, inputs)
    total = sum(saved.values())
    del output
    keep_alive.clear()
    return total


_OPTIMIZER_CLASSES = {
    "sgd": ("SGD", {"lr": 0.01}),
    "sgd_momentum": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "adam": ("Adam", {"lr": 1e-3}),
    "adamw": ("AdamW", {"lr": 1e-3}),
}


def _make_optimizer(name: str, params):
    import torch

    cls_name, kwargs = _OPTIMIZER_CLASSES[name]
    return getattr(torch.optim, cls_name)(params, **kwargs)


def _tensor_bytes(tensors) -> int:
    storages = {}
    for t in tensors:
        if t is not None:
            s = t.untyped_storage()
            storages[(str(t.device), s.data_ptr())] = s.nbytes()
    return sum(storages.values())


def _optimizer_state_tensors(opt):
    import torch

    for state in opt.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield value


def _allocation_events(prof) -> list[tuple[int, int]] | None:
    """(start ns, bytes) of every CPU allocation and free the profiler recorded.

    These come from ``prof.profiler.kineto_results``, a private PyTorch API (the public
    ``prof.events()`` keeps only allocations made outside operators); None when this
    version of torch does not have it.
    """
    try:
        events = prof.profiler.kineto_results.events()
        return [
            (e.start_ns(), e.nbytes())
            for e in events
            if e.name() == "[memory]" and e.device_type().name == "CPU"
        ]
    except AttributeError:
        return None


def _cpu_peak_during(step) -> int:
    """Peak bytes allocated on the CPU while ``step()`` runs, from the profiler's memory events."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = _allocation_events(prof)
    if events is None:
        raise RuntimeError(
            f"torch {torch.__version__} does not expose the profiler's memory events "
            "(prof.profiler.kineto_results), so the peak of a training step on the CPU "
            "cannot be measured here. Use estimate_training_memory alone, or measure on a "
            "CUDA GPU, where torch.cuda.max_memory_allocated gives the peak."
        )
    running = peak = 0
    for _, nbytes in sorted(events):
        running += nbytes
        peak = max(peak, running)
    return peak


def measure_training_memory(
    model,
    inputs,
    targets,
    *,
    precision: str = "fp32",
    optimizer: str = "adam",
    loss_fn=None,
) -> int:
    """Measured peak memory of one training step (forward, backward, optimizer step), in bytes.

    The bytes already held when the step starts (weights, optimizer states, the batch:
    summed from the tensors themselves) plus the peak of what the step allocates on top:
    on a CUDA GPU from ``torch.cuda.max_memory_allocated``, on a CPU from the memory
    events the PyTorch profiler records (``profile_memory=True``; they are read through a
    private PyTorch API, and a torch without it raises ``RuntimeError`` saying so rather
    than guessing). Other tensors the process holds do not count. One warm-up step runs
    first so the optimizer has created its state. The model is trained on a copy;
    ``model`` itself is not changed.

    Parameters
    ----------
    model : torch.nn.Module
    inputs, targets : Tensor
        One batch, on the model's device.
    precision : str
        One of :data:`TRAINING_PRECISIONS`.
    optimizer : str
        One of :data:`OPTIMIZERS` (built with PyTorch's defaults, as most code does).
    loss_fn : callable, optional
        ``loss_fn(outputs, targets)``; cross-entropy when omitted.
    """
    import torch
    import torch.nn.functional as F

    choice("precision", precision, TRAINING_PRECISIONS)
    choice("optimizer", optimizer, OPTIMIZERS)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model={type(model).__name__} must be a torch.nn.Module")
    if loss_fn is not None and not callable(loss_fn):
        raise ValueError(f"loss_fn={loss_fn!r} must be a callable (outputs, targets) -> loss")
    loss_fn = loss_fn or F.cross_entropy
    model, inputs = _prepare(copy.deepcopy(model), inputs, precision)
    device = _model_device(model)
    opt = _make_optimizer(optimizer, model.parameters())
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "amp_fp16")

    def step():
        with _autocast(precision, device):
            loss = loss_fn(_call(model, inputs), targets)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    step()
    opt.zero_grad(set_to_none=True)
    held = [*model.parameters(), *model.buffers(), *_optimizer_state_tensors(opt)]
    batch = [inputs, targets] if isinstance(inputs, torch.Tensor) else [*inputs, targets]
    held_bytes = _tensor_bytes([*held, *batch])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        torch.cuda.synchronize(device)
        return held_bytes + int(torch.cuda.max_memory_allocated(device)) - start
    if device.type != "cpu":
        raise ValueError(f"device={device.type!r}: peak memory is measured on CUDA or CPU only")
    return held_bytes + _cpu_peak_during(step)


def memory_report(estimate: MemoryEstimate, *, headroom: float = 0.9) -> str:
    """The estimate's table followed by the registry GPUs that hold it.

    Examples
    --------
    >>> est = estimate_training_memory(10**9, precision="bf16", optimizer="sgd")
    >>> print(memory_report(est).splitlines()[-1])
    Fits in 90% of: Tesla P100 PCIe 16GB, Tesla T4, Tesla K80, ... and 18 more (21 of 21 GPUs)
    """
    fitting = gpus_that_fit(estimate, headroom=headroom)
    total = len([s for s in list_specs("gpu") if s.memory_bytes is not None])
    if not fitting:
        where = f"Fits in no registry GPU at {headroom:.0%} of its memory (0 of {total})"
    else:
        names = [s.name for s in fitting]
        shown = ", ".join(names[:3]) + (
            f", ... and {len(names) - 3} more" if len(names) > 3 else ""
        )
        where = f"Fits in {headroom:.0%} of: {shown} ({len(names)} of {total} GPUs)"
    return f"{estimate}\n{where}"
