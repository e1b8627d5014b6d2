"""What hardware and software this machine has, and advice when something is off.

``detect_device()`` answers "what will the labs run on?"; ``doctor()`` prints the answer
with concrete next steps (switch Colab to a GPU runtime, install the CuPy wheel that
matches torch's CUDA version, ...). ``best_device()`` is the one call labs use to pick
where tensors go.

See also the chapter "What a GPU is" (``book/gpu_basics.md``) and ``python -m gpulab doctor``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import TypeVar

from gpulab._checks import (
    MAX_DEVICE_INDEX,
    choice,
    flag,
    non_negative_int,
    positive_int,
    text,
    wrong_type,
)
from gpulab._checks import fraction as checked_fraction
from gpulab.hardware.precision import TORCH_DTYPE_NAMES
from gpulab.measure.cpu import cpu_cores, cpu_model
from gpulab.units import format_bytes

__all__ = [
    "DEVICE_KINDS",
    "DeviceInfo",
    "MixedPrecision",
    "advice",
    "best_device",
    "detect_device",
    "doctor",
    "in_colab",
    "matmul_speedup",
    "mixed_precision",
    "scale",
    "scale_to_memory",
    "supported_precisions",
    "tf32",
    "torch_device",
]

#: The kinds of torch device the course runs on.
DEVICE_KINDS = ("cpu", "cuda", "mps")
_DEVICE_NAME = re.compile(r"^(cpu|cuda|mps)(:\d+)?$")
_CUPY_WHEELS = ("cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x", "cupy")


@dataclass(frozen=True)
class DeviceInfo:
    """The accelerator (if any) and software the labs will use.

    Attributes
    ----------
    kind : {"cuda", "mps", "cpu"}
        Where tensors go by default.
    name : str
        GPU name, or the CPU model when there is no GPU.
    compute_capability : tuple of int or None
        CUDA compute capability, e.g. ``(9, 0)`` for Hopper.
    memory_bytes : int or None
        GPU memory in bytes.
    sm_count : int or None
        Streaming multiprocessors on the GPU.
    n_gpus : int
        CUDA devices visible to this process.
    cpu_model : str
    cpu_cores : int
        Logical CPUs this process may use.
    python_version, platform : str
    torch_version : str or None
        None when torch is not installed.
    torch_cuda : str or None
        CUDA version torch was built with (``torch.version.cuda``), None for CPU builds.
    cupy_version : str or None
    cupy_package : str or None
        The installed CuPy wheel, e.g. ``"cupy-cuda12x"``.
    cupy_usable : bool
        CuPy imports, sees a GPU and compiles a kernel on it (``cupy.is_available()``
        alone does not check NVRTC, CuPy's compiler: see :func:`cupy_missing_reason`).
    driver_version : str or None
        NVIDIA driver version from NVML, when a driver is present.
    in_colab : bool
    problems : tuple of str
        Things that went wrong while probing (shown by :func:`doctor`).
    """

    kind: str
    name: str
    compute_capability: tuple[int, int] | None = None
    memory_bytes: int | None = None
    sm_count: int | None = None
    n_gpus: int = 0
    cpu_model: str = ""
    cpu_cores: int = 1
    python_version: str = field(default_factory=platform.python_version)
    platform: str = field(default_factory=platform.platform)
    torch_version: str | None = None
    torch_cuda: str | None = None
    cupy_version: str | None = None
    cupy_package: str | None = None
    cupy_usable: bool = False
    driver_version: str | None = None
    in_colab: bool = False
    problems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        choice("kind", self.kind, ("cuda", "mps", "cpu"))
        for name in ("name", "cpu_model", "python_version", "platform"):
            text(name, getattr(self, name))
        for name in (
            "torch_version", "torch_cuda", "cupy_version", "cupy_package", "driver_version"
        ):  # fmt: skip
            text(name, getattr(self, name), optional=True)
        cc = self.compute_capability
        if cc is not None:
            if not isinstance(cc, tuple) or not all(_is_number(v) for v in cc):
                raise wrong_type("compute_capability", cc, "a (major, minor) pair of ints")
            if len(cc) != 2 or not all(_is_count(v) for v in cc):
                raise ValueError(
                    f"compute_capability={cc!r} must be a (major, minor) pair of ints of 0 or more"
                )
        for name in ("memory_bytes", "sm_count"):
            if getattr(self, name) is not None:
                positive_int(name, getattr(self, name))
        non_negative_int("n_gpus", self.n_gpus)
        positive_int("cpu_cores", self.cpu_cores)
        for name in ("cupy_usable", "in_colab"):
            flag(name, getattr(self, name))
        if not isinstance(self.problems, tuple) or not all(
            isinstance(p, str) for p in self.problems
        ):
            raise wrong_type("problems", self.problems, "a tuple of sentences (str)")

    @property
    def is_gpu(self) -> bool:
        """True when the labs will run on a GPU (CUDA or Apple MPS)."""
        return self.kind in ("cuda", "mps")

    def cupy_missing_reason(self) -> str:
        """Why :attr:`cupy_usable` is False, in one sentence ('' where it is True).

        Examples
        --------
        >>> import gpulab as gl
        >>> gl.DeviceInfo(kind="cpu", name="x").cupy_missing_reason()
        'CuPy is not installed'
        """
        if self.cupy_usable:
            return ""
        if self.cupy_package is None:
            return "CuPy is not installed"
        about_cupy = [p for p in self.problems if p.startswith("CuPy")]
        return about_cupy[0] if about_cupy else "CuPy sees no CUDA GPU here"

    def summary(self) -> str:
        """One line: the device and the torch version, for provenance lines and headers."""
        where = f"{self.name} ({self.kind})"
        if self.kind == "cpu":
            where = f"CPU only: {self.cpu_model}, {self.cpu_cores} cores"
        return f"{where}; torch {self.torch_version or 'not installed'}"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def in_colab() -> bool:
    """True inside Google Colab."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def _probe_torch() -> dict:
    try:
        import torch
    except ImportError:
        return {"problems": ("torch is not installed",)}
    info: dict = {"torch_version": torch.__version__, "torch_cuda": torch.version.cuda}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            kind="cuda",
            name=props.name,
            compute_capability=(props.major, props.minor),
            memory_bytes=int(props.total_memory),
            sm_count=int(props.multi_processor_count),
            n_gpus=torch.cuda.device_count(),
        )
    elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        info.update(kind="mps", name="Apple GPU (Metal)")
    return info


def _installed_cupy_package() -> str | None:
    for name in _CUPY_WHEELS:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return name
    return None


def _probe_cupy() -> dict:
    package = _installed_cupy_package()
    if package is None:
        return {}
    info: dict = {"cupy_package": package}
    try:
        import cupy
    except Exception as exc:  # a wheel for the wrong CUDA fails at import with various errors
        return {**info, "problems": (f"CuPy ({package}) is installed but fails to import: {exc}",)}
    info["cupy_version"] = cupy.__version__
    try:
        usable = bool(cupy.is_available())
    except Exception as exc:
        return {**info, "problems": (f"CuPy cannot reach a GPU: {exc}",)}
    problem = _cupy_compile_problem(cupy, package) if usable else ""
    if problem:
        info["problems"] = (problem,)
    info["cupy_usable"] = usable and not problem
    return info


#: The smallest CUDA C kernel there is: thread 0 writes one number. Compiling it needs
#: NVRTC, which ``cupy.is_available()`` does not load.
_PROBE_KERNEL = 'extern "C" __global__ void gpulab_probe(float* out) { out[0] = 1.0f; }'


@functools.cache
def _cupy_compile_problem(cupy, package: str) -> str:
    """'' where ``cupy`` compiles and runs :data:`_PROBE_KERNEL`, else one sentence saying
    why not and what to install. Worked out once per CuPy module (a few milliseconds, and
    CuPy caches the compiled kernel on disk)."""
    try:
        kernel = cupy.RawKernel(_PROBE_KERNEL, "gpulab_probe")
        out = cupy.zeros(1, dtype="float32")
        kernel((1,), (1,), (out,))
        wrote = float(out[0]) == 1.0
    except Exception as exc:  # noqa: BLE001 - any failure here would stop a RawKernel cell
        text = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        extra = f'pip install -U "{package}[ctk]"' if package != "cupy" else "install NVRTC"
        return (
            f"CuPy sees a GPU but cannot compile a kernel on it ({why}); CuPy compiles with "
            f"NVRTC, which comes with the CUDA toolkit, not the driver: {extra} (CuPy 14 and "
            "later install the toolkit's libraries with it) and restart Python"
        )
    if not wrote:
        return "CuPy compiled a one-line kernel but it did not write its result"
    return ""


def _probe_nvml() -> dict:
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:  # no NVIDIA driver on this machine: nothing to report
        return {}
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        return {"driver_version": version.decode() if isinstance(version, bytes) else version}
    finally:
        pynvml.nvmlShutdown()


def detect_device() -> DeviceInfo:
    """Find the best device the labs can use and the versions of the software around it.

    Never raises for missing hardware or packages: what is missing is recorded in
    :attr:`DeviceInfo.problems` and explained by :func:`doctor`.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.detect_device().kind in ("cuda", "mps", "cpu")
    True
    """
    model = cpu_model()
    fields: dict = {"kind": "cpu", "name": model, "cpu_model": model}
    fields["cpu_cores"] = cpu_cores()
    fields["in_colab"] = in_colab()
    problems: list[str] = []
    for probe in (_probe_torch, _probe_cupy, _probe_nvml):
        found = probe()
        problems.extend(found.pop("problems", ()))
        fields.update(found)
    return DeviceInfo(**fields, problems=tuple(problems))


def best_device():
    """The ``torch.device`` labs should put tensors on: CUDA, then Apple MPS, then the CPU.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.best_device().type in ("cuda", "mps", "cpu")
    True
    """
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def torch_device(device=None, *, name: str = "device"):
    """The one check of a ``device=`` argument: a :class:`torch.device` for it.

    Accepts a :class:`torch.device` or a name torch understands of a kind in
    :data:`DEVICE_KINDS` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``; an index below
    ``MAX_DEVICE_INDEX``, 128); None means
    :func:`best_device`. The device need not be present: ``"cuda"`` is a valid answer to
    "which device?" on a machine without one (the cost models size for it).

    Raises
    ------
    TypeError
        For anything but None, a str or a torch.device.
    ValueError
        For a name that is not one of those devices.

    Examples
    --------
    >>> torch_device("cuda:1")
    device(type='cuda', index=1)
    >>> torch_device("banana")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device='banana' is not a device; use 'cpu', 'cuda', 'cuda:N', 'mps' or a ...
    """
    if device is None:
        return best_device()
    if isinstance(device, str):
        if not _DEVICE_NAME.match(device):
            raise ValueError(
                f"{name}={device!r} is not a device; use 'cpu', 'cuda', 'cuda:N', 'mps' "
                "or a torch.device"
            )
        index = device.partition(":")[2]
        if index and int(index) >= MAX_DEVICE_INDEX:
            raise ValueError(
                f"{name}={device!r}: a device index must be below {MAX_DEVICE_INDEX}"
            )
        import torch

        return torch.device(device)
    import torch

    if not isinstance(device, torch.device):
        raise TypeError(
            f"{name}={device!r} must be a torch.device or a device name such as 'cuda', "
            f"not {type(device).__name__}"
        )
    if device.type not in DEVICE_KINDS:
        raise ValueError(f"{name}={device!r}: the course runs on {', '.join(DEVICE_KINDS)}")
    return device


def _check_info(info) -> DeviceInfo:
    if not isinstance(info, DeviceInfo):
        raise wrong_type("info", info, "a DeviceInfo (gl.detect_device())")
    return info


def _cuda_major(version: str | None) -> int | None:
    if not version:
        return None
    try:
        return int(version.split(".")[0])
    except ValueError:
        return None


def advice(info: DeviceInfo) -> list[str]:
    """Concrete next steps for the problems visible in ``info`` (empty when all is well).

    Examples
    --------
    >>> import gpulab as gl
    >>> advice(gl.DeviceInfo(kind="cpu", name="x", in_colab=True, torch_version="2.4"))[0]
    'No GPU in this Colab session: Runtime > Change runtime type > T4 GPU, then run the lab again.'
    """
    _check_info(info)
    tips: list[str] = list(info.problems)
    if info.torch_version is None:
        tips.append(
            "Install PyTorch: pip install torch (https://pytorch.org/get-started/locally/)."
        )
    if info.kind == "cpu":
        if info.in_colab:
            tips.append(
                "No GPU in this Colab session: Runtime > Change runtime type > T4 GPU, "
                "then run the lab again."
            )
        else:
            tips.append(
                "No GPU found: the labs run their CPU versions and show labelled predictions "
                "for GPUs. For a GPU, open a lab in Colab (the rocket icon on each lab page)."
            )
        if info.torch_version and info.driver_version and not info.torch_cuda:
            tips.append(
                f"An NVIDIA driver ({info.driver_version}) is present but torch "
                f"{info.torch_version} is a CPU-only build: install a CUDA build of torch."
            )
    torch_major = _cuda_major(info.torch_cuda)
    if info.cupy_package and info.cupy_package.startswith("cupy-cuda") and torch_major:
        cupy_major = int(info.cupy_package.removeprefix("cupy-cuda").rstrip("x"))
        if cupy_major != torch_major:
            tips.append(
                f"CuPy wheel {info.cupy_package} is built for CUDA {cupy_major} but torch uses "
                f"CUDA {info.torch_cuda}: pip uninstall -y {info.cupy_package} && "
                f"pip install cupy-cuda{torch_major}x"
            )
    if info.kind == "cuda" and info.cupy_package is None and torch_major:
        tips.append(
            f"CuPy is not installed (the labs' raw-kernel cells need it): "
            f"pip install cupy-cuda{torch_major}x"
        )
    return tips


def _report(info: DeviceInfo) -> str:
    def gib(n: int | None) -> str:
        return format_bytes(n, binary=True) if n else "-"

    cc = ".".join(map(str, info.compute_capability)) if info.compute_capability else "-"
    cupy = info.cupy_version or "not installed"
    if info.cupy_package:
        if info.cupy_usable:
            state = "usable"
        elif any(p.startswith("CuPy") for p in info.problems):
            state = "not usable: see the advice below"
        else:
            state = "no GPU"
        cupy += f" ({info.cupy_package}, {state})"
    rows = [
        ("Device", f"{info.kind}: {info.name}"),
        ("GPUs visible", str(info.n_gpus)),
        ("Compute capability", cc),
        ("GPU memory", gib(info.memory_bytes)),
        ("SMs", str(info.sm_count or "-")),
        ("CPU", f"{info.cpu_model}, {info.cpu_cores} cores"),
        ("Python", f"{info.python_version} on {info.platform}"),
        ("torch", f"{info.torch_version or 'not installed'} (CUDA {info.torch_cuda or '-'})"),
        ("CuPy", cupy),
        ("NVIDIA driver", info.driver_version or "-"),
        ("Colab", "yes" if info.in_colab else "no"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = ["gpulab doctor", "=" * 13]
    lines += [f"{k:<{width}}  {v}" for k, v in rows]
    tips = advice(info)
    lines.append("")
    lines.append("Advice:" if tips else "Everything the labs need is in place.")
    lines += [f"  - {tip}" for tip in tips]
    return "\n".join(lines)


def doctor(info: DeviceInfo | None = None, file=None) -> DeviceInfo:
    """Print a readable report of this machine for the labs, with advice; return the info.

    Parameters
    ----------
    info : DeviceInfo, optional
        Report on this instead of probing the machine (useful in tests and docs).
    file : file-like, optional
        Where to print; default ``sys.stdout``.

    Examples
    --------
    >>> import gpulab as gl
    >>> info = gl.doctor()  # doctest: +SKIP
    """
    info = detect_device() if info is None else _check_info(info)
    if file is not None and not hasattr(file, "write"):
        raise wrong_type("file", file, "a writable file-like object, or None")
    print(_report(info), file=sys.stdout if file is None else file)
    return info


# The precisions supported_precisions reports on: the ones a matmul can run in.
_MATMUL_PRECISIONS = tuple(TORCH_DTYPE_NAMES)


def supported_precisions(device=None) -> dict[str, str | None]:
    """For each matmul precision, None when ``device`` runs it natively, else the reason.

    On a CUDA GPU the answer follows the compute capability (https://developer.nvidia.com/cuda-gpus
    lists each GPU's): FP16 Tensor Cores came with Volta (7.0), TF32 and BF16 Tensor Cores
    with Ampere (8.0). Below 8.0 TF32 does not exist, so switching it on changes nothing and
    a "tf32" matmul is really FP32; BF16 still runs (torch emulates it) but without Tensor
    Cores. On a CPU TF32 does not exist either; FP32, FP16 and BF16 all run (16-bit ones fast
    only on CPUs with matrix or BF16 instructions).

    Parameters
    ----------
    device : torch.device or str, optional
        The device to ask about; default :func:`gpulab.best_device`.

    Returns
    -------
    dict
        ``{"fp32": ..., "tf32": ..., "fp16": ..., "bf16": ...}``: None for a precision the
        device runs natively, otherwise one sentence saying why not.

    Examples
    --------
    >>> supported_precisions("cpu")["tf32"]
    'TF32 is a mode of NVIDIA Tensor Cores (compute capability 8.0 or later); a CPU has none'
    >>> supported_precisions("cpu")["fp32"] is None
    True
    """
    import torch

    dev = torch_device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: this machine has no CUDA GPU")
    support: dict[str, str | None] = dict.fromkeys(_MATMUL_PRECISIONS)
    if dev.type != "cuda":
        support["tf32"] = (
            "TF32 is a mode of NVIDIA Tensor Cores (compute capability 8.0 or later); "
            f"a {dev.type.upper()} has none"
        )
        return support
    major, minor = torch.cuda.get_device_capability(dev)
    this = f"this GPU: {major}.{minor}"
    if (major, minor) < (8, 0):
        support["tf32"] = (
            f"TF32 needs compute capability 8.0 or later ({this}): a tf32 matmul here is FP32"
        )
        support["bf16"] = (
            f"BF16 Tensor Cores need compute capability 8.0 or later ({this}): "
            "BF16 runs without Tensor Cores"
        )
    if major < 7:
        support["fp16"] = (
            f"FP16 Tensor Cores need compute capability 7.0 or later ({this}): "
            "FP16 runs without Tensor Cores"
        )
    return support


def tf32(enabled: bool):
    """Context manager: TF32 on (or off) for FP32 matmuls and cuDNN convolutions, then restored.

    TF32 is FP32 storage with Tensor Core arithmetic on a 10-bit mantissa (Ampere and later),
    a switch rather than a dtype. ``tf32(False)`` makes "fp32" mean IEEE FP32 even for
    convolutions, which cuDNN otherwise runs in TF32 by default. Uses PyTorch's
    ``fp32_precision`` settings ("ieee"/"tf32") where they exist and the older
    ``allow_tf32`` flags otherwise (reading the old flags raises once the new ones were set);
    whatever was set before is restored on exit, also when the block raises. On a CPU nothing
    changes what runs.

    Parameters
    ----------
    enabled : bool
        True for TF32, False for IEEE FP32.

    Examples
    --------
    >>> import torch
    >>> with tf32(False):
    ...     c = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> c.sum().item()
    8.0
    """
    flag("enabled", enabled)
    return _tf32(enabled)


@contextlib.contextmanager
def _tf32(enabled: bool):
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    conv = getattr(cudnn, "conv", None)
    if hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):
        switches, value = (
            [(matmul, "fp32_precision"), (conv, "fp32_precision")],
            ("tf32" if enabled else "ieee"),
        )
    else:
        switches, value = [(matmul, "allow_tf32"), (cudnn, "allow_tf32")], enabled
    before = [(owner, name, getattr(owner, name)) for owner, name in switches]
    try:
        for owner, name in switches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, old in reversed(before):
            setattr(owner, name, old)


T = TypeVar("T")


def scale(*, cpu: T, gpu: T, mps: T | None = None, device=None) -> T:
    """Return the value meant for the device the lab runs on.

    Parameters
    ----------
    cpu : any
        Value for a CPU-only machine (keep the lab to about a minute on 2 cores).
    gpu : any
        Value for a CUDA GPU.
    mps : any, optional
        Value for an Apple GPU; defaults to ``cpu`` (they are far smaller than CUDA cards).
    device : str, torch.device or DeviceInfo, optional
        The device to size for (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``); default
        :func:`gpulab.best_device`.

    Raises
    ------
    TypeError
        For a ``device`` that is not a str, a torch.device, a DeviceInfo or None.
    ValueError
        For a device name that is none of CPU, CUDA or MPS (see :func:`torch_device`).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.scale(cpu=512, gpu=8192, device="cpu")
    512
    >>> gl.scale(cpu=512, gpu=8192, device="cuda")
    8192
    """
    kind = device.kind if isinstance(device, DeviceInfo) else torch_device(device).type
    if kind == "cuda":
        return gpu
    if kind == "mps" and mps is not None:
        return mps
    return cpu


#: The mixed precisions :func:`mixed_precision` chooses from, and the autocast dtype of each.
_AMP_DTYPES = {"amp_bf16": "bfloat16", "amp_fp16": "float16"}


@dataclass(frozen=True)
class MixedPrecision:
    """The mixed precision to train in on one device; see :func:`mixed_precision`.

    Attributes
    ----------
    precision : {"amp_bf16", "amp_fp16"}
        FP32 weights with BF16 or FP16 arithmetic (``torch.autocast``).
    reason : str
        Why this one, in a sentence.

    Examples
    --------
    >>> amp = MixedPrecision("amp_fp16", reason="FP16 Tensor Cores; no BF16 ones")
    >>> amp.dtype, amp.needs_grad_scaler
    (torch.float16, True)
    """

    precision: str
    reason: str = ""

    def __post_init__(self) -> None:
        choice("precision", self.precision, tuple(_AMP_DTYPES))
        text("reason", self.reason)

    @property
    def dtype(self):
        """The ``torch.dtype`` to pass to ``torch.autocast``."""
        import torch

        return getattr(torch, _AMP_DTYPES[self.precision])

    @property
    def needs_grad_scaler(self) -> bool:
        """True for FP16: its narrow range needs the loss scaled (``torch.amp.GradScaler``)
        so that small gradients do not round to zero; BF16 has FP32's range and needs none."""
        return self.precision == "amp_fp16"


def mixed_precision(device=None) -> MixedPrecision:
    """The mixed precision to train in on ``device``: BF16 where it runs natively, else FP16.

    On a CUDA GPU the choice follows :func:`supported_precisions`: from compute capability
    8.0 (Ampere) BF16 has Tensor Cores, and BF16 needs no loss scaling. Below 8.0 (a T4 is
    7.5) torch still runs BF16 (``torch.cuda.is_bf16_supported()`` is True there, since it
    counts emulation), but without Tensor Cores, slower than FP32; FP16 has Tensor Cores
    from 7.0 and needs a ``torch.amp.GradScaler``. On a CPU autocast runs BF16 (fast on
    CPUs with AVX-512 BF16 or AMX instructions). On an Apple GPU, FP16 (BF16 there needs a
    recent macOS).

    Parameters
    ----------
    device : torch.device or str, optional
        Default: :func:`gpulab.best_device`.

    Returns
    -------
    MixedPrecision
        ``precision``, ``dtype`` (for ``torch.autocast``), ``needs_grad_scaler`` and the
        ``reason``.

    Examples
    --------
    >>> amp = mixed_precision("cpu")
    >>> amp.precision, amp.dtype, amp.needs_grad_scaler
    ('amp_bf16', torch.bfloat16, False)
    """
    dev = torch_device(device)
    if dev.type == "cpu":
        return MixedPrecision(
            "amp_bf16", "a CPU autocasts to BF16 (fast where it has BF16 or AMX instructions)"
        )
    if dev.type == "mps":
        return MixedPrecision("amp_fp16", "an Apple GPU autocasts to FP16")
    support = supported_precisions(dev)
    if support["bf16"] is None:
        return MixedPrecision(
            "amp_bf16", "BF16 Tensor Cores (compute capability 8.0 or later): no loss scaling"
        )
    fp16 = support["fp16"] or "FP16 runs on Tensor Cores (compute capability 7.0 or later)"
    return MixedPrecision("amp_fp16", f"{support['bf16']}; {fp16}, with a GradScaler")


def matmul_speedup(amp: MixedPrecision, device=None) -> float:
    """How many times faster ``amp``'s 16-bit matrix multiplies run than FP32 ones, by the
    hardware: the part of a step that autocast speeds up is sped up this much.

    On a CUDA GPU it is the datasheet's 16-bit peak over its FP32 peak (the registry entry
    of the name the driver reports; 1 for a GPU the registry does not know, or whose entry
    has no such peak). On a CPU it is 2 where the CPU has native BF16 dot-product
    instructions (AVX-512 BF16 or AMX, which multiply two BF16 pairs per 32-bit lane) and
    1 where it has not. On an Apple GPU, 1: no published peaks to compare.

    Parameters
    ----------
    amp : MixedPrecision
        The mixed precision, from :func:`mixed_precision`.
    device : torch.device or str, optional
        Default: :func:`gpulab.best_device`.

    Returns
    -------
    float
        At least 1 where the hardware has faster 16-bit arithmetic; the ratio of peaks.

    Raises
    ------
    TypeError
        For an ``amp`` that is not a MixedPrecision, or a bad device.

    Examples
    --------
    >>> matmul_speedup(mixed_precision("cpu"), "cpu") in (1.0, 2.0)
    True
    """
    if not isinstance(amp, MixedPrecision):
        raise wrong_type("amp", amp, "a MixedPrecision (gl.measure.device.mixed_precision())")
    dev = torch_device(device)
    import torch

    if dev.type == "cuda":
        from gpulab.hardware.precision import peak_precision
        from gpulab.hardware.specs import find_spec

        spec = find_spec(torch.cuda.get_device_name(dev))
        low = peak_precision(amp.precision)
        if spec is None or low not in spec.peak_flops or "fp32" not in spec.peak_flops:
            return 1.0
        return spec.peak(low) / spec.peak("fp32")
    if dev.type == "cpu":
        return 2.0 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else 1.0
    return 1.0


def _total_memory(device) -> int:
    """Bytes of memory of a CUDA device (a DeviceInfo's figure, or what torch reports)."""
    if isinstance(device, DeviceInfo):
        if device.memory_bytes is None:
            raise ValueError(f"device={device.name!r} reports no memory size (memory_bytes=None)")
        return device.memory_bytes
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: this machine has no CUDA GPU to size for")
    return int(torch.cuda.get_device_properties(device).total_memory)


def scale_to_memory(
    *,
    cpu: int,
    gpu: int,
    n_arrays: int,
    element_bytes: int = 4,
    fraction: float = 0.5,
    device=None,
) -> int:
    """Elements per array, like :func:`scale`, with the GPU size cut to fit the GPU's memory.

    A lab that keeps ``n_arrays`` arrays of the returned length alive at once asks for
    ``gpu`` elements on a CUDA GPU; on a card whose memory cannot hold them within
    ``fraction`` of its total, the size is halved until it can. The rest of the memory is
    the margin: the CUDA context, operands of fixed size, the allocator's rounding. A CPU
    (or an Apple GPU) gets ``cpu``, sized for time rather than memory.

    Parameters
    ----------
    cpu, gpu : int
        Elements per array on a CPU, and the most on a CUDA GPU.
    n_arrays : int
        How many arrays of that length are alive at once, at the most (count the
        temporaries an expression creates).
    element_bytes : int
        Bytes per element (4 for float32).
    fraction : float
        The share of the GPU's memory the arrays may take, above 0 and at most 1.
    device : str, torch.device or DeviceInfo, optional
        Default :func:`gpulab.best_device`. A DeviceInfo gives its ``memory_bytes``; a CUDA
        device, what torch reports as its ``total_memory``.

    Returns
    -------
    int
        ``cpu``, or ``gpu`` halved as often as needed (at least 1).

    Raises
    ------
    TypeError
        For counts that are not ints, a fraction that is not a number, a bad device.
    ValueError
        For counts below 1, a fraction outside (0, 1], or a GPU on which not even one
        element per array fits.

    Examples
    --------
    >>> info = DeviceInfo(kind="cuda", name="Tesla T4", memory_bytes=16 * 10**9)
    >>> scale_to_memory(cpu=2**24, gpu=2**28, n_arrays=6, device=info)  # 6 GiB in 8 GB
    268435456
    >>> scale_to_memory(cpu=2**24, gpu=2**28, n_arrays=9, device=info)  # 9 GiB: halved
    134217728
    >>> scale_to_memory(cpu=2**24, gpu=2**28, n_arrays=9, device="cpu")
    16777216
    """
    for name, value in (("cpu", cpu), ("gpu", gpu), ("n_arrays", n_arrays)):
        positive_int(name, value)
    positive_int("element_bytes", element_bytes)
    budget = checked_fraction("fraction", fraction, allow_zero=False)
    kind = device.kind if isinstance(device, DeviceInfo) else torch_device(device).type
    if kind != "cuda":
        return cpu
    dev = device if isinstance(device, DeviceInfo) else torch_device(device)
    allowed = budget * _total_memory(dev)
    n = gpu
    while n > 1 and n_arrays * n * element_bytes > allowed:
        n //= 2
    if n_arrays * n * element_bytes > allowed:
        raise ValueError(
            f"n_arrays={n_arrays} arrays of {element_bytes} bytes do not fit in "
            f"fraction={fraction} of this GPU's memory"
        )
    return n
