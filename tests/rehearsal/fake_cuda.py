"""A rehearsal GPU: run code written for a CUDA GPU on a CPU-only build of torch.

The labs' ``cuda`` branches have never run on a GPU when they are written. This module lets
them run in CI: after :func:`install`, torch reports a T4 or an H100 (``tests/fake_gpu.py``),
and a tensor created on ``"cuda"`` (or moved there) is a :class:`FakeCudaTensor`: a CPU tensor
that says it is on ``cuda:0`` and behaves as a real GPU tensor does where a CPU run would
hide a bug:

* mixing it with a CPU tensor in one operator raises torch's own "Expected all tensors to
  be on the same device" error (a 0-dim CPU tensor is allowed, as on a GPU; so are CPU
  index tensors);
* ``.numpy()`` and ``np.asarray`` refuse it, as they refuse a GPU tensor: copy with
  ``.cpu()`` first;
* ``.to("cuda")``, ``.cuda()``, ``.cpu()``, ``Module.to``, ``pin_memory`` and factories with
  ``device="cuda"`` move data as torch would (a new tensor each time, gradients flowing
  back through the copy);
* ``torch.cuda`` answers as a GPU's would: streams and events (timed with the host clock),
  ``synchronize``, memory statistics (bytes of live fake-CUDA tensors, so peaks and frees
  are real counts), ``set_device``, RNG seeding; a CUDA graph records the operators run
  while capturing and re-runs them on the same tensors at each replay, refusing a host
  synchronisation during capture as CUDA does;
* ``torch.autocast("cuda")`` autocasts (done by the CPU's autocast, in the dtype asked for,
  FP16 included); ``torch.amp.GradScaler("cuda")`` scales; an FP32 matmul with TF32 allowed
  rounds its inputs to TF32 where the GPU has TF32 (compute capability 8.0 and later);
* a profile taken with ``ProfilerActivity.CUDA`` has the rows a GPU profile has: a
  ``gpu_user_annotation`` twin (device type CUDA, no CPU time) for each ``record_function``
  label and a kernel (device time) under each operator that would launch one;
* ``torch.distributed`` with ``"nccl"`` runs on gloo, on the fake tensors' CPU data.

What it cannot do: time anything as a GPU would (every timing is the CPU's, with each
operator routed through Python, so a measured claim is printed rather than judged; the
course's models judge those for a T4 and an H100 in ``tests/test_claims_on_gpus.py``), run
CuPy or Numba's CUDA target (they stay absent, so the labs take their fallbacks: the
``kernels_lab`` cells under ``if on_gpu:`` do not run; ``tests/test_kernels.py`` runs the
Numba kernels themselves in Numba's CUDA simulator), compile with ``torch.compile`` for a
GPU (it returns the function uncompiled: Inductor's GPU code needs a GPU), or see a kernel
fail on the device (out of memory at GPU sizes, an illegal address, a Triton kernel that
compiles only in the interpreter, such as a BF16 ``tl.dot`` on a T4's sm_75). Nor does it
compute as a GPU's kernels do: cuBLAS picks other algorithms and summation orders, SDPA
picks a flash, memory-efficient or cuDNN kernel (the CPU's fused kernel runs instead), and
reductions in reduced precision round differently, so a tolerance or an exact comparison
that holds here may not hold there. ``torch.inference_mode`` acts as ``torch.no_grad``
(torch cannot make views of a tensor subclass's inference tensors). It installs nothing:
a CUDA build of torch, CuPy, a driver that is too old or a missing wheel on the GPU machine
are problems it cannot see.
Sizes stay at CPU scale: ``gl.scale``, ``gl.measure.device.scale_to_memory`` and a
distributed plan's ``scale`` compute the GPU answer (so their checks run) and then return the
CPU size; ``gl.benchmark`` repeats for
at most :data:`REHEARSAL_MIN_RUN_TIME_S`.

Used through ``tests/rehearsal/sitecustomize.py``: a Python started with that folder on
``PYTHONPATH`` and ``GPULAB_REHEARSAL=T4`` (or ``H100``; ``T4x2`` for two GPUs) installs the
layer before anything else runs; ``tests/test_rehearsal.py`` runs every lab that way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import weakref

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
# Operators that, on a real GPU, accept CPU tensors beside CUDA ones: indices (moved by
# torch), and copies (``cuda_tensor.copy_(cpu_tensor)`` is a host-to-device transfer).
_MIXING_ALLOWED = {
    "aten::index.Tensor",
    "aten::index_put_",
    "aten::index_put",
    "aten::_index_put_impl_",
    "aten::copy_",
    "aten::_to_copy",
    "aten::lift_fresh",
}
_SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices, "


def _is_cuda(device) -> bool:
    if device is None:
        return False
    if isinstance(device, int):
        return True  # ``.cuda(0)``, ``.to(0)``: an index names a CUDA device
    return torch.device(device).type == "cuda"


def _is_cpu(device) -> bool:
    return device is not None and not isinstance(device, int) and torch.device(device).type == "cpu"


class _Memory:
    """Bytes held by fake-CUDA tensors, counted per storage as the caching allocator would."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # storage address -> bytes
        self.allocated = 0
        self.peak = 0

    def track(self, elem: torch.Tensor) -> None:
        storage = elem.untyped_storage()
        key = storage.data_ptr()
        if key == 0 or key in self.live:
            return
        n = storage.nbytes()
        self.live[key] = n
        self.allocated += n
        self.peak = max(self.peak, self.allocated)
        weakref.finalize(storage, self.free, key)

    def free(self, key: int) -> None:
        self.allocated -= self.live.pop(key, 0)

    def reset_peak(self) -> None:
        self.peak = self.allocated


MEMORY = _Memory()


class _Capture:
    """The operators run while a CUDA graph captures, to run again at each replay."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []


_capturing: list[_Capture] = []


class FakeCudaTensor(torch.Tensor):
    """A CPU tensor (``elem``) that reports itself on ``cuda:0``; see the module docstring."""

    elem: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False):
        assert type(elem) is torch.Tensor and not elem.requires_grad, type(elem)
        r = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=CPU,
            requires_grad=requires_grad,
        )
        r.elem = elem
        MEMORY.track(elem)
        return r

    # What Python code asks a tensor about its device.
    @property
    def device(self) -> torch.device:
        return CUDA

    @property
    def is_cuda(self) -> bool:
        return True

    def get_device(self) -> int:
        return 0

    # The data's own storage and address, as a GPU tensor has them (on the GPU, there).
    def untyped_storage(self):
        return self.elem.untyped_storage()

    def data_ptr(self) -> int:
        return self.elem.data_ptr()

    def __deepcopy__(self, memo):
        # torch's own deep copy makes an empty tensor and swaps its storage in, which a
        # wrapper's fixed sizes do not follow: copy the data instead.
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            copied = FakeCudaTensor(self.elem.clone())
        if isinstance(self, torch.nn.Parameter):
            copied = torch.nn.Parameter(copied, requires_grad=self.requires_grad)
        elif self.requires_grad:
            copied.requires_grad_(True)
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol):
        # torch.save of a GPU tensor: saved as its data on the host (torch.load then gives a
        # CPU tensor; on a GPU, a CUDA one unless map_location says otherwise).
        return self.elem.detach().clone().__reduce_ex__(protocol)

    def __repr__(self, *, tensor_contents=None) -> str:
        return repr(self.elem)[:-1] + ", device='cuda:0')"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        name = func.name()
        if name == "aten::_local_scalar_dense" and _capturing:
            raise RuntimeError(
                "CUDA error: operation not permitted when stream is capturing "
                "(a value was copied to the host, e.g. .item(), inside torch.cuda.graph)"
            )
        inputs: list[FakeCudaTensor] = []
        cpu: list[torch.Tensor] = []
        uargs = _unwrap(args, inputs, cpu)
        ukwargs = {}
        if kwargs:
            ukwargs = {k: _unwrap(v, inputs, cpu) for k, v in kwargs.items()}
            if _is_cuda(ukwargs.get("device")):
                ukwargs["device"] = CPU
        if name not in _MIXING_ALLOWED and any(t.dim() > 0 for t in cpu):
            raise RuntimeError(
                f"{_SAME_DEVICE}cuda:0 and cpu! (when checking arguments for {name})"
            )
        if _TF32_HARDWARE and name in _MATMULS and _tf32_on():
            uargs = _tf32_operands(name, uargs)
        out = func(*uargs, **ukwargs)
        # An output that is an input (in-place, out=) stays that input: a CPU tensor that
        # received a copy from the GPU stays on the CPU.
        same = {id(t): t for t in cpu}
        same.update((id(t.elem), t) for t in inputs)
        wrapped = _wrap(out, same)
        if _capturing:
            _capturing[-1].ops.append((func, args, ukwargs, wrapped))
        return wrapped


# TF32: from compute capability 8.0, with ``torch.backends.cuda.matmul.allow_tf32`` on, cuBLAS
# multiplies FP32 matrices on Tensor Cores with their inputs rounded to TF32 (10 explicit
# mantissa bits), accumulating in FP32. The rehearsal rounds the operands the same way.
_TF32_HARDWARE = False
_MATMULS = {"aten::mm": (0, 1), "aten::bmm": (0, 1), "aten::addmm": (1, 2), "aten::baddbmm": (1, 2)}


def _tf32_on() -> bool:
    """Whether cuBLAS would use TF32 for an FP32 matmul now (the new API's setting, else the
    legacy flag; torch refuses to read the legacy one once the new one was set)."""
    matmul = torch.backends.cuda.matmul
    for precision in (getattr(matmul, "fp32_precision", "none"),
                      getattr(torch.backends, "fp32_precision", "none")):  # fmt: skip
        if precision != "none":
            return precision == "tf32"
    try:
        return bool(matmul.allow_tf32)
    except RuntimeError:
        return False


def _round_to_tf32(t: torch.Tensor) -> torch.Tensor:
    """Round-to-nearest-even of FP32 values to TF32's 10 explicit mantissa bits."""
    bits = t.contiguous().view(torch.int32)
    bits = (bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF
    return bits.view(torch.float32).view(t.shape)


def _tf32_operands(name: str, args: tuple) -> tuple:
    args = list(args)
    for i in _MATMULS[name]:
        if args[i].dtype == torch.float32:
            args[i] = _round_to_tf32(args[i])
    return tuple(args)


def _unwrap(x, inputs: list, cpu: list):
    """``x`` with each fake-CUDA tensor replaced by its data; note them in ``inputs``, and
    CPU tensors in ``cpu`` (a GPU operator refuses those of more than 0 dimensions)."""
    kind = type(x)
    if kind is FakeCudaTensor:
        inputs.append(x)
        return x.elem
    if kind is torch.Tensor or isinstance(x, torch.Tensor):
        cpu.append(x)
        return x
    if kind is tuple or kind is list:
        return kind(_unwrap(item, inputs, cpu) for item in x)
    return x


def _wrap(out, inputs_by_data: dict):
    """Wrap the tensors in an operator's result; an input's own data (in-place) is that input."""
    if isinstance(out, torch.Tensor):
        same = inputs_by_data.get(id(out))
        return same if same is not None else FakeCudaTensor(out)
    if type(out) is tuple or type(out) is list:
        return type(out)(_wrap(item, inputs_by_data) for item in out)
    return out


def _replay(capture: _Capture) -> None:
    for func, args, kwargs, outputs in capture.ops:
        fresh = func(*_unwrap(args, [], []), **kwargs)
        for old, new in zip(pytree.tree_leaves(outputs), pytree.tree_leaves(fresh), strict=True):
            if isinstance(old, FakeCudaTensor) and old.elem is not new:
                with torch.no_grad():
                    old.elem.copy_(new)


class _ToCuda(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> FakeCudaTensor:
        return FakeCudaTensor(x.detach().clone())

    @staticmethod
    def backward(ctx, grad):
        return grad.elem.clone() if isinstance(grad, FakeCudaTensor) else grad


class _ToCpu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: FakeCudaTensor) -> torch.Tensor:
        return x.elem.clone()

    @staticmethod
    def backward(ctx, grad):
        return FakeCudaTensor(grad.detach().clone())


def to_cuda(t: torch.Tensor) -> FakeCudaTensor:
    """A fake-CUDA copy of ``t`` (``t`` itself if it is one), differentiable."""
    if isinstance(t, FakeCudaTensor):
        return t
    moved = _ToCuda.apply(t) if t.requires_grad else FakeCudaTensor(t.detach().clone())
    return moved


def to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU copy of ``t`` (``t`` itself if it is on the CPU), differentiable."""
    if not isinstance(t, FakeCudaTensor):
        return t
    return _ToCpu.apply(t) if t.requires_grad else t.elem.clone()


def _with_requires_grad(t, requires_grad: bool):
    if requires_grad and isinstance(t, torch.Tensor):
        t.requires_grad_(True)
    return t


_NUMPY_REFUSAL = (
    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
    "to host memory first."
)


class FakeCudaMode(TorchFunctionMode):
    """Routes every ``device="cuda"`` and every device move through :class:`FakeCudaTensor`."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        handler = _METHODS.get(func)
        if handler is not None:
            return handler(func, args, kwargs)
        generator = kwargs.get("generator")
        if getattr(generator, "fake_cuda", False) and not _is_cuda(kwargs.get("device")):
            if not any(isinstance(a, FakeCudaTensor) for a in pytree.arg_tree_leaves(*args)):
                raise RuntimeError("Expected a 'cpu' device type for generator but found 'cuda'")
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = CPU
            requires_grad = kwargs.pop("requires_grad", False)
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            out = pytree.tree_map_only(torch.Tensor, to_cuda, out)
            return pytree.tree_map_only(
                torch.Tensor, lambda t: _with_requires_grad(t, requires_grad), out
            )
        return func(*args, **kwargs)


def _tensor_to(func, args, kwargs):
    self, rest = args[0], list(args[1:])
    other = None
    if rest and isinstance(rest[0], torch.Tensor):  # .to(other): other's device and dtype
        other = rest.pop(0)
        kwargs.setdefault("dtype", other.dtype)
        kwargs["device"] = other.device
    copy = kwargs.pop("copy", False)
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **kwargs)
    out = self
    if dtype is not None or memory_format is not None or copy:
        out = out.to(dtype=dtype, memory_format=memory_format or torch.preserve_format, copy=copy)
    if _is_cuda(device):
        return to_cuda(out)
    if _is_cpu(device):
        return to_cpu(out)
    return out


def _tensor_cuda(func, args, kwargs):
    return to_cuda(args[0])


def _tensor_cpu(func, args, kwargs):
    return to_cpu(args[0])


def _tensor_numpy(func, args, kwargs):
    if isinstance(args[0], FakeCudaTensor):
        raise TypeError(_NUMPY_REFUSAL)
    return func(*args, **kwargs)


def _pin_memory(func, args, kwargs):
    t = args[0]
    if isinstance(t, FakeCudaTensor):
        raise RuntimeError(
            "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"
        )
    pinned = t.clone()
    _PINNED.add(pinned)
    return pinned


def _is_pinned(func, args, kwargs):
    return args[0] in _PINNED


_PINNED: weakref.WeakSet = weakref.WeakSet()
_METHODS = {
    torch.Tensor.to: _tensor_to,
    torch.Tensor.cuda: _tensor_cuda,
    torch.Tensor.cpu: _tensor_cpu,
    torch.Tensor.numpy: _tensor_numpy,
    torch.Tensor.__array__: _tensor_numpy,
    torch.Tensor.pin_memory: _pin_memory,
    torch.Tensor.is_pinned: _is_pinned,
}


# ----------------------------------------------------------------------------- torch.cuda


class FakeStream:
    """A CUDA stream: everything already ran, so waiting is immediate."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        self.device = CUDA
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        event = event or FakeEvent()
        event.record(self)
        return event

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


_DEFAULT_STREAM = FakeStream()
_Generator = torch.Generator


class FakeCudaGenerator(_Generator):
    """``torch.Generator(device="cuda")``: a CPU generator that says it is on ``cuda:0``."""

    def __new__(cls, device=None):
        return _Generator.__new__(cls, "cpu")

    def __init__(self, device=None) -> None:
        self.fake_cuda = _is_cuda(device)

    @property
    def device(self) -> torch.device:
        return CUDA if self.fake_cuda else CPU


class FakeEvent:
    """A CUDA event timed with the host clock (the work it brackets ran on the CPU)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, **kwargs) -> None:
        self.enable_timing = enable_timing
        self.t: float | None = None

    def record(self, stream=None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: FakeEvent) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'")
        if self.t is None or end.t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time")
        return (end.t - self.t) * 1e3


class FakeCUDAGraph:
    """``torch.cuda.CUDAGraph``: replays the operators recorded while capturing."""

    def __init__(self, *args, **kwargs) -> None:
        self.capture: _Capture | None = None

    def replay(self) -> None:
        if self.capture is None:
            raise RuntimeError("CUDA graph replayed before it was captured")
        _replay(self.capture)

    def reset(self) -> None:
        self.capture = None

    def pool(self):
        return None


@contextlib.contextmanager
def _graph(cuda_graph: FakeCUDAGraph, pool=None, stream=None, **kwargs):
    capture = _Capture()
    _capturing.append(capture)
    try:
        with torch.no_grad():  # torch.cuda.graph captures without autograd, unless asked
            yield
    finally:
        _capturing.pop()
    cuda_graph.capture = capture


def _synchronize(device=None) -> None:
    pass


def _inference_mode(mode=True):
    """``torch.inference_mode`` as ``torch.no_grad``: torch cannot make views of inference
    tensors of a Python tensor subclass (a version counter it refuses to set)."""
    if callable(mode):  # @torch.inference_mode, without parentheses
        return torch.no_grad()(mode)
    return torch.no_grad() if mode else contextlib.nullcontext()


class _FakeAutocast(torch.amp.autocast_mode.autocast):
    """``torch.autocast("cuda", dtype)`` done by the CPU's autocast, in the same dtype."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        self.fake_cuda = device_type == "cuda"
        if self.fake_cuda:
            dtype = torch.float16 if dtype is None else dtype
            device_type = "cpu"
        super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def _key_averages_with_cuda_rows(original):
    """``prof.key_averages()`` of a profile with CUDA activity, shaped as on a GPU."""

    @functools.wraps(original)
    def key_averages(self, *args, **kwargs):
        if not getattr(self, "fake_cuda_activity", False):
            return original(self, *args, **kwargs)
        from torch.autograd import DeviceType
        from torch.autograd.profiler_util import EventList, FunctionEvent

        events, next_id = [], 10**9
        for e in self.events():
            twin_of = FunctionEvent(
                id=e.id, name=e.name, thread=e.thread, start_us=e.time_range.start,
                end_us=e.time_range.end, use_device="cuda", device_type=DeviceType.CPU,
                is_user_annotation=e.is_user_annotation, stack=[], input_shapes=[],
            )  # fmt: skip
            events.append(twin_of)
            if e.is_user_annotation:  # the label's row on the GPU timeline
                next_id += 1
                events.append(FunctionEvent(
                    id=next_id, name=e.name, thread=7, start_us=e.time_range.start,
                    end_us=e.time_range.end, use_device="cuda", device_type=DeviceType.CUDA,
                    is_user_annotation=True, stack=[], input_shapes=[],
                ))  # fmt: skip
            elif e.name.startswith("aten::") and e.self_cpu_time_total > 0:
                # The operator's own arithmetic, as the kernel it would launch on a GPU.
                kernel = f"fake_cuda_kernel<{e.name[6:]}>"
                twin_of.append_kernel(kernel, 0, e.self_cpu_time_total)
                next_id += 1
                events.append(FunctionEvent(
                    id=next_id, name=kernel, thread=7, start_us=e.time_range.start,
                    end_us=e.time_range.end, use_device="cuda", device_type=DeviceType.CUDA,
                    stack=[], input_shapes=[],
                ))  # fmt: skip
        rows = EventList(events, use_device="cuda")
        rows._build_tree()
        return rows.key_averages(*args, **kwargs)

    return key_averages


def _profile_init(original):
    """``torch.profiler.profile`` that records CPU activity where CUDA activity is asked for
    (a CPU build of torch has no CUDA profiler), keeping the request for ``key_averages``."""

    @functools.wraps(original)
    def __init__(self, *args, activities=None, **kwargs):
        cuda = torch.profiler.ProfilerActivity.CUDA
        asked = list(activities) if activities is not None else None
        cpu_only = [a for a in asked if a != cuda] if asked is not None else None
        original(self, *args, activities=cpu_only, **kwargs)
        # On a GPU machine the default activities include CUDA.
        self.fake_cuda_activity = asked is None or cuda in asked

    return __init__


def _init_process_group(original):
    @functools.wraps(original)
    def init_process_group(backend=None, *args, **kwargs):
        if backend == "nccl":
            backend = "gloo"  # NCCL's collectives on the fake tensors' CPU data
        return original(backend, *args, **kwargs)

    return init_process_group


def _cpu_sized(original, name: str):
    """``gl.scale``-like sizing: compute the GPU answer (its checks run), return the CPU one."""

    @functools.wraps(original)
    def sized(*args, **kwargs):
        original(*args, **kwargs)
        return original(*args, **dict(kwargs, device="cpu"))

    sized.__name__ = name
    return sized


#: The longest a rehearsal's ``gl.benchmark`` repeats a function: its times are the CPU's
#: anyway, so only the code path matters, not the precision of the median.
REHEARSAL_MIN_RUN_TIME_S = 0.05


def _briefly(benchmark):
    @functools.wraps(benchmark)
    def brief(*args, min_run_time_s: float = 0.2, **kwargs):
        short = min_run_time_s
        if isinstance(min_run_time_s, (int, float)) and min_run_time_s > 0:
            short = min(min_run_time_s, REHEARSAL_MIN_RUN_TIME_S)
        return benchmark(*args, min_run_time_s=short, **kwargs)

    return brief


#: Starts the line a rehearsal prints for a measured claim its CPU timings do not support.
UNJUDGED_CLAIM = "[rehearsal] claim not judged on CPU timings:"


def _unjudged(claim):
    """``gl.claim`` that prints, instead of raising, when the rehearsal's data refuses it.

    A rehearsal's timings are the CPU's at CPU sizes, with every operator routed through
    Python: a claim about GPU timings cannot be judged on them (``tests/test_claims_on_gpus.py``
    judges each one with the course's models for a T4 and an H100 instead). The claim's
    arguments are still checked, and its code runs."""

    @functools.wraps(claim)
    def rehearsed(text, holds=True, *, reason=None, timings=False):
        from gpulab.labkit.claims import ClaimError

        try:
            return claim(text, holds, reason=reason, timings=timings)
        except ClaimError as refused:
            print(UNJUDGED_CLAIM, refused)
            return claim(text, True, reason=reason, timings=timings)

    return rehearsed


def install(gpu: str = "T4") -> None:
    """Make this process a rehearsal of a run on ``gpu`` (``"T4"``, ``"H100"``, ``"T4x2"``)."""
    import sys

    from fake_gpu import GPUS, install_fake_gpu

    base, _, count = gpu.partition("x")
    if base not in GPUS or (count and not count.isdigit()):
        raise ValueError(f"GPULAB_REHEARSAL={gpu!r}: expected one of {sorted(GPUS)}, e.g. T4x2")
    # Triton compiles for the GPU it sees unless told to interpret: a rehearsal interprets.
    os.environ["TRITON_INTERPRET"] = "1"
    patch = _Patcher()
    fake = install_fake_gpu(patch, base, n_gpus=int(count or 1))
    global _TF32_HARDWARE
    _TF32_HARDWARE = fake.capability >= (8, 0)
    cuda = torch.cuda
    for name, value in {
        "_lazy_init": lambda: None,
        "init": lambda: None,
        "synchronize": _synchronize,
        "set_device": lambda device: None,
        "Stream": FakeStream,
        "Event": FakeEvent,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
        "default_stream": lambda device=None: _DEFAULT_STREAM,
        "stream": lambda s: contextlib.nullcontext(s),
        "CUDAGraph": FakeCUDAGraph,
        "graph": _graph,
        "empty_cache": lambda: None,
        "memory_allocated": lambda device=None: MEMORY.allocated,
        "max_memory_allocated": lambda device=None: MEMORY.peak,
        "memory_reserved": lambda device=None: MEMORY.allocated,
        "max_memory_reserved": lambda device=None: MEMORY.peak,
        "reset_peak_memory_stats": lambda device=None: MEMORY.reset_peak(),
        "reset_max_memory_allocated": lambda device=None: MEMORY.reset_peak(),
        "mem_get_info": lambda device=None: (
            cuda.get_device_properties(0).total_memory - MEMORY.allocated,
            cuda.get_device_properties(0).total_memory,
        ),
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
    }.items():
        setattr(cuda, name, value)
    # Module.to swaps each parameter's contents for its moved copy, keeping the Python
    # object (as ``.data =`` does on a GPU), so optimizers made before the move still hold it.
    torch.__future__.set_swap_module_params_on_conversion(True)
    torch.autocast = _FakeAutocast
    torch.Generator = FakeCudaGenerator
    torch.inference_mode = _inference_mode
    torch.amp.autocast = _FakeAutocast
    torch.compile = lambda model=None, **kwargs: model if model is not None else (lambda fn: fn)
    prof = torch.profiler.profile
    prof.__init__ = _profile_init(prof.__init__)
    prof.key_averages = _key_averages_with_cuda_rows(prof.key_averages)
    import torch.distributed as dist

    if dist.is_available():
        dist.init_process_group = _init_process_group(dist.init_process_group)
        dist.is_nccl_available = lambda: True

    import gpulab.measure.device as device_module

    device_module.scale = _cpu_sized(device_module.scale, "scale")
    device_module.scale_to_memory = _cpu_sized(device_module.scale_to_memory, "scale_to_memory")
    from gpulab.labkit.launcher import DistPlan

    gpu_sized = DistPlan.scale
    DistPlan.scale = lambda plan, cpu, gpu: (gpu_sized(plan, cpu, gpu), cpu)[1]
    import gpulab.measure.bench as bench

    bench.benchmark = _briefly(bench.benchmark)
    import gpulab.labkit.claims as claims

    claims.claim = _unjudged(claims.claim)
    FakeCudaMode().__enter__()  # for the rest of the process, on the main thread
    sys.modules[__name__].INSTALLED = gpu


class _Patcher:
    """The two methods of pytest's MonkeyPatch that ``install_fake_gpu`` uses, for good."""

    _UNSET = object()

    def setattr(self, target, name, value=_UNSET):
        if value is self._UNSET:  # setattr("package.module.attribute", value)
            import importlib

            module, _, attribute = target.rpartition(".")
            setattr(importlib.import_module(module), attribute, name)
        else:
            setattr(target, name, value)

    def setitem(self, mapping, key, value):
        mapping[key] = value


INSTALLED: str | None = None


def install_from_environment() -> None:
    """Install the layer if ``GPULAB_REHEARSAL`` names a GPU (see the module docstring)."""
    gpu = os.environ.get("GPULAB_REHEARSAL")
    if gpu:
        install(gpu)
