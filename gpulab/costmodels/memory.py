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
two (first and second moments).

Two figures come out. :attr:`MemoryEstimate.total_bytes` is the state, all four parts added
up. :attr:`MemoryEstimate.peak_bytes` models the peak of one step (forward, backward,
optimizer step), which also holds short-lived buffers and never holds all four parts at
once. Weights and optimizer states live throughout; on top of them the peak is the largest
of three moments:

* the start of backward: every saved activation, plus the gradient arriving at the largest
  activation and the one leaving it (two tensors of its size);
* the end of backward: every parameter gradient, plus that pair of activation gradients
  (most saved activations are freed by then);
* the optimizer step: every parameter gradient, plus the optimizer's temporaries. PyTorch's
  single-tensor Adam/AdamW (the CPU default) makes two temporaries the size of the parameter
  tensor it is updating, so two of the largest; the multi-tensor ``foreach`` version (the
  CUDA default) one temporary the size of all parameters. SGD, with or without momentum,
  updates in place.

:func:`estimate_step_memory` fills every term in from a real model;
:func:`measure_training_memory` measures the peak so the model can be checked (the course's
tests hold it within 10% on CPU for MLPs, a CNN and a transformer encoder, SGD and Adam,
fp32 and autocast). Kernel workspaces (cuBLAS, cuDNN) and the CUDA context are not modelled.

See also the chapter "Mini-batches" (``book/minibatches.md``) and its lab.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass

from gpulab._checks import (
    choice,
    flag,
    fraction,
    function,
    non_negative_int,
    positive_int,
    tensor_batch,
    torch_module,
    wrong_type,
)
from gpulab.hardware.precision import TRAINING_PRECISIONS
from gpulab.hardware.specs import list_specs, resolve_spec
from gpulab.units import format_bytes

__all__ = [
    "OPTIMIZERS",
    "MemoryEstimate",
    "activation_bytes",
    "bytes_per_param",
    "estimate_step_memory",
    "estimate_training_memory",
    "gpus_that_fit",
    "measure_training_memory",
    "memory_report",
    "optimizer_temporaries_bytes",
    "zero_bytes_per_param",
]

#: Optimizers the estimator knows, by how many state tensors they keep per parameter.
OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw")

_WEIGHT_BYTES = {"fp32": 4, "amp_bf16": 4, "amp_fp16": 4, "bf16": 2}
_STATES_PER_PARAM = {"sgd": 0, "sgd_momentum": 1, "adam": 2, "adamw": 2}
_PARTS = ("parameters", "gradients", "optimizer states", "activations")


def bytes_per_param(precision: str = "fp32", optimizer: str = "adam") -> dict[str, int]:
    """Bytes each parameter costs in weights, gradient and optimizer states, on one GPU.

    The split of :func:`estimate_training_memory`, for training as ``torch.autocast`` does
    it: under ``amp_*`` the parameters are the FP32 weights (``"parameters": 4``) and their
    gradients FP32 too; the 16-bit copies autocast makes are short-lived.

    This is **not** the ZeRO paper's split, which :func:`gpulab.sharded_memory` shards: in
    mixed precision ZeRO keeps 16-bit weights and gradients (2 + 2 bytes) and counts the FP32
    master weights as optimizer state (12 bytes with Adam), so stage 1 shards them too. Both
    add up to 16 bytes, but the 4/4/8 split here, fed to ``sharded_memory``, gives 60.9 GB
    per GPU at stage 1 for 7.5B parameters on 64 GPUs, against the paper's 31.4 GB; use
    ``sharded_memory(..., precision="amp_bf16")`` or :func:`zero_bytes_per_param`.

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


def zero_bytes_per_param(precision: str = "fp32", optimizer: str = "adam") -> dict[str, int]:
    """Bytes per parameter as the ZeRO paper splits them, the split ZeRO's stages shard.

    In mixed precision (``amp_*``) the weights and gradients are 16-bit (2 bytes each) and the
    optimizer state holds the FP32 master weights (4 bytes) besides its FP32 moments (4 bytes
    each): 2 + 2 + 12 = 16 bytes with Adam, the ``K = 12`` of Rajbhandari et al. 2020, §3.1
    (https://arxiv.org/abs/1910.02054). Without mixed precision there is no master copy and
    the split is :func:`bytes_per_param`'s. :func:`gpulab.sharded_memory` takes it through its
    ``precision`` argument.

    Examples
    --------
    >>> zero_bytes_per_param("amp_fp16", "adam")
    {'parameters': 2, 'gradients': 2, 'optimizer states': 12}
    >>> bytes_per_param("amp_fp16", "adam")   # one GPU under torch.autocast: the same 16 bytes
    {'parameters': 4, 'gradients': 4, 'optimizer states': 8}
    >>> zero_bytes_per_param("fp32", "sgd_momentum") == bytes_per_param("fp32", "sgd_momentum")
    True
    """
    split = bytes_per_param(precision, optimizer)
    if not precision.startswith("amp_"):
        return split
    return {
        "parameters": 2,
        "gradients": 2,
        "optimizer states": split["parameters"] + split["optimizer states"],
    }


_FIELDS_BYTES = (
    "params_bytes",
    "grads_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "activation_grads_bytes",
    "optimizer_temporaries_bytes",
)


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory of one training step, part by part, in bytes: its state and its modelled peak.

    Attributes
    ----------
    params_bytes, grads_bytes, optimizer_bytes, activations_bytes : int
        Weights (including fp32 master weights under AMP), gradients, optimizer state
        and the activations saved for the backward pass of one batch.
    precision : str
        One of :data:`TRAINING_PRECISIONS`.
    optimizer : str
        One of :data:`OPTIMIZERS`.
    activation_grads_bytes : int
        Short-lived gradients of activations alive together in backward: twice the
        largest saved activation (the gradient arriving at it and the one leaving). 0 when
        unknown.
    optimizer_temporaries_bytes : int
        Short-lived buffers of the optimizer step. 0 when unknown (or for SGD).
    """

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    precision: str
    optimizer: str
    activation_grads_bytes: int = 0
    optimizer_temporaries_bytes: int = 0

    def __post_init__(self) -> None:
        for name in _FIELDS_BYTES:
            non_negative_int(name, getattr(self, name))
        choice("precision", self.precision, TRAINING_PRECISIONS)
        choice("optimizer", self.optimizer, OPTIMIZERS)

    @property
    def total_bytes(self) -> int:
        """All four parts together: the state, without the step's short-lived buffers."""
        return sum(self.breakdown().values())

    def phases(self) -> dict[str, int]:
        """Bytes alive at the three moments that can hold the step's peak.

        Examples
        --------
        >>> est = estimate_training_memory(1000, optimizer="adam", activations_bytes=10_000,
        ...                                activation_grads_bytes=2_000,
        ...                                optimizer_temporaries_bytes=8_000)
        >>> est.phases()
        {'start of backward': 24000, 'end of backward': 18000, 'optimizer step': 24000}
        """
        held = self.params_bytes + self.optimizer_bytes
        return {
            "start of backward": held + self.activations_bytes + self.activation_grads_bytes,
            "end of backward": held + self.grads_bytes + self.activation_grads_bytes,
            "optimizer step": held + self.grads_bytes + self.optimizer_temporaries_bytes,
        }

    @property
    def peak_bytes(self) -> int:
        """The modelled peak of one step: the largest of :meth:`phases`.

        Weights and optimizer states live throughout; saved activations and parameter
        gradients do not all coexist (backward frees activations as it makes gradients), so
        the peak can be below :attr:`total_bytes` when the short-lived buffers are small.
        """
        return max(self.phases().values())

    @property
    def short_lived_bytes(self) -> int:
        """The step's short-lived buffers that the model counts (activation gradients and
        optimizer temporaries)."""
        return self.activation_grads_bytes + self.optimizer_temporaries_bytes

    def breakdown(self) -> dict[str, int]:
        """Bytes by part: parameters, gradients, optimizer states, activations."""
        values = (self.params_bytes, self.grads_bytes, self.optimizer_bytes, self.activations_bytes)
        return dict(zip(_PARTS, values, strict=True))

    def fits(self, spec, *, headroom: float = 0.9) -> bool:
        """Whether the larger of the state and the modelled peak fits in ``headroom`` of the
        device's memory.

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
        # One training process sees one GPU: a board of two (a K80) offers each half its memory.
        return max(self.total_bytes, self.peak_bytes) <= headroom * spec.per_gpu().memory_bytes

    def __str__(self) -> str:
        lines = [f"Training memory ({self.precision}, {self.optimizer})"]
        total = self.total_bytes or 1
        for name, nbytes in self.breakdown().items():
            lines.append(
                f"  {name:<17} {format_bytes(nbytes, binary=True):>11}  {nbytes / total:6.1%}"
            )
        lines.append(f"  {'total':<17} {format_bytes(self.total_bytes, binary=True):>11}")
        if self.short_lived_bytes:
            phase, peak = max(self.phases().items(), key=lambda item: item[1])
            lines.append(
                f"  {'peak of the step':<17} {format_bytes(peak, binary=True):>11}  ({phase}, "
                f"with {format_bytes(self.short_lived_bytes, binary=True)} short-lived)"
            )
        return "\n".join(lines)


def estimate_training_memory(
    n_params: int,
    *,
    precision: str = "fp32",
    optimizer: str = "adam",
    activations_bytes: int = 0,
    activation_grads_bytes: int = 0,
    optimizer_temporaries_bytes: int = 0,
) -> MemoryEstimate:
    """Memory of a training step for a model of ``n_params`` parameters.

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
    activation_grads_bytes, optimizer_temporaries_bytes : int
        The step's short-lived buffers (see :class:`MemoryEstimate`); with them
        :attr:`MemoryEstimate.peak_bytes` models the peak of the step.
        :func:`estimate_step_memory` works all of them out from a real model.

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
    non_negative_int("activation_grads_bytes", activation_grads_bytes)
    non_negative_int("optimizer_temporaries_bytes", optimizer_temporaries_bytes)
    per_param = bytes_per_param(precision, optimizer)
    return MemoryEstimate(
        params_bytes=n_params * per_param["parameters"],
        grads_bytes=n_params * per_param["gradients"],
        optimizer_bytes=n_params * per_param["optimizer states"],
        activations_bytes=activations_bytes,
        precision=precision,
        optimizer=optimizer,
        activation_grads_bytes=activation_grads_bytes,
        optimizer_temporaries_bytes=optimizer_temporaries_bytes,
    )


def gpus_that_fit(estimate: MemoryEstimate, *, kind: str = "gpu", headroom: float = 0.9) -> list:
    """Registry devices of ``kind`` whose memory holds ``estimate``, smallest memory first.

    A package of several GPUs (a K80 board, an MI250X) counts the memory of one of them.

    Examples
    --------
    >>> est = estimate_training_memory(3_000_000_000, precision="amp_bf16")
    >>> [s.name for s in gpus_that_fit(est)][:2]  # an MI250X's GCD has 64 GB, an A100 80
    ['Instinct MI250X', 'A100 80GB SXM4']
    """
    if not isinstance(estimate, MemoryEstimate):
        raise wrong_type("estimate", estimate, "a MemoryEstimate (gl.estimate_training_memory)")
    headroom = fraction("headroom", headroom, allow_zero=False)
    specs = [s for s in list_specs(kind) if s.memory_bytes is not None]
    fitting = [s for s in specs if estimate.fits(s, headroom=headroom)]
    return sorted(fitting, key=lambda s: (s.per_gpu().memory_bytes, s.year, s.name))


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
    return sum(nbytes for nbytes, _ in _saved_storages(model, example_input, precision))


def _saved_storages(
    model, example_input, precision: str, *, with_inputs: bool = False
) -> list[tuple[int, bool]]:
    """(bytes, is floating point) of each distinct storage autograd saves in one forward,
    and with ``with_inputs`` the input batch's storages too, saved or not."""
    import torch

    choice("precision", precision, TRAINING_PRECISIONS)
    torch_module("model", model)
    tensor_batch("example_input", example_input)
    model, inputs = _prepare(model, example_input, precision)
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    saved: dict[tuple[str, int], tuple[int, bool]] = {}
    keep_alive = []  # saved tensors stay alive until the sum is taken, so no address is reused

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in own:
            key = (str(tensor.device), storage.data_ptr())
            saved[key] = (storage.nbytes(), tensor.is_floating_point())
            keep_alive.append(tensor)
        return tensor

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with _autocast(precision, _model_device(model)):
            output = _call(model, inputs)
    if with_inputs:
        batch = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        for tensor in batch:
            if isinstance(tensor, torch.Tensor):
                key = (str(tensor.device), tensor.untyped_storage().data_ptr())
                saved.setdefault(key, (tensor.untyped_storage().nbytes(), False))
    result = list(saved.values())
    del output
    keep_alive.clear()
    return result


def optimizer_temporaries_bytes(
    param_sizes, *, optimizer: str = "adam", precision: str = "fp32", foreach: bool = False
) -> int:
    """Bytes of the short-lived buffers one optimizer step allocates (PyTorch's optimizers).

    Parameters
    ----------
    param_sizes : sequence of int
        Number of elements of each parameter tensor.
    optimizer : str
        One of :data:`OPTIMIZERS`. SGD, with or without momentum, updates in place: 0.
    precision : str
        One of :data:`TRAINING_PRECISIONS` (sets the width of the weights).
    foreach : bool
        The multi-tensor implementation (PyTorch's default on CUDA) instead of the
        single-tensor loop (its default on a CPU).

    Examples
    --------
    Single-tensor Adam computes ``sqrt(v)`` and then its quotient into two temporaries the
    size of the tensor it updates; the multi-tensor version computes ``sqrt`` for all
    tensors at once:

    >>> optimizer_temporaries_bytes([1024 * 1024, 1024, 10])
    8388608
    >>> optimizer_temporaries_bytes([1024 * 1024, 1024, 10], foreach=True)
    4198440
    >>> optimizer_temporaries_bytes([1024 * 1024], optimizer="sgd_momentum")
    0
    """
    choice("optimizer", optimizer, OPTIMIZERS)
    choice("precision", precision, TRAINING_PRECISIONS)
    flag("foreach", foreach)
    if isinstance(param_sizes, (str, bytes)) or not hasattr(param_sizes, "__iter__"):
        raise wrong_type("param_sizes", param_sizes, "a sequence of element counts")
    sizes = [positive_int(f"param_sizes[{i}]", n) for i, n in enumerate(param_sizes)]
    if not sizes:
        raise ValueError("param_sizes=[] is empty: give the element count of each parameter")
    if _STATES_PER_PARAM[optimizer] < 2:
        return 0
    width = _WEIGHT_BYTES[precision]
    return width * (sum(sizes) if foreach else 2 * max(sizes))


def estimate_step_memory(
    model,
    example_input,
    *,
    precision: str = "fp32",
    optimizer: str = "adam",
    foreach: bool | None = None,
) -> MemoryEstimate:
    """The memory model of one training step of ``model`` on ``example_input``, every term
    worked out from the model itself.

    Weights, gradients and optimizer states from the parameter count; saved activations
    as :func:`activation_bytes` counts them, plus the input batch when no layer saves it
    as it is (under autocast the first layer saves a 16-bit copy); the activation gradients
    alive together in backward as twice the largest floating-point tensor saved; the
    optimizer's temporaries with
    :func:`optimizer_temporaries_bytes`. Compare its ``peak_bytes`` with
    :func:`measure_training_memory`.

    Parameters
    ----------
    model : torch.nn.Module
    example_input : Tensor or tuple of Tensor
        One batch, on the model's device.
    precision : str
        One of :data:`TRAINING_PRECISIONS`.
    optimizer : str
        One of :data:`OPTIMIZERS`.
    foreach : bool, optional
        Whether the optimizer uses its multi-tensor implementation; default PyTorch's
        choice: True when the parameters are on a CUDA GPU.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(100, 50), torch.nn.ReLU(),
    ...                           torch.nn.Linear(50, 10))
    >>> est = estimate_step_memory(net, torch.randn(32, 100), optimizer="adam")
    >>> est.activation_grads_bytes == 2 * 32 * 100 * 4  # the input is the largest saved
    True
    >>> est.optimizer_temporaries_bytes == 2 * 50 * 100 * 4
    True
    """
    torch_module("model", model)
    tensor_batch("example_input", example_input)
    choice("optimizer", optimizer, OPTIMIZERS)
    if foreach is not None:
        flag("foreach", foreach)
    sizes = [p.numel() for p in model.parameters() if p.requires_grad]
    if not sizes:
        raise ValueError("model has no trainable parameters")
    if foreach is None:
        foreach = _model_device(model).type == "cuda"
    saved = _saved_storages(model, example_input, precision, with_inputs=True)
    largest = max((nbytes for nbytes, floating in saved if floating), default=0)
    return estimate_training_memory(
        sum(sizes),
        precision=precision,
        optimizer=optimizer,
        activations_bytes=sum(nbytes for nbytes, _ in saved),
        activation_grads_bytes=2 * largest,
        optimizer_temporaries_bytes=optimizer_temporaries_bytes(
            sizes, optimizer=optimizer, precision=precision, foreach=foreach
        ),
    )


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
    loss_fn: Callable | None = None,
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
    torch_module("model", model)
    tensor_batch("inputs", inputs)
    if not isinstance(targets, torch.Tensor):
        raise wrong_type("targets", targets, "a Tensor")
    function("loss_fn", loss_fn, wanted="a callable (outputs, targets) -> loss", optional=True)
    if loss_fn is None:
        loss_fn = F.cross_entropy
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
    >>> print(memory_report(est).splitlines()[-1])  # doctest: +NORMALIZE_WHITESPACE
    Fits in 90% of: Tesla K80, Tesla P100 PCIe 16GB, Tesla V100 SXM2 16GB,
    ... and 24 more (27 of 27 GPUs)
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
