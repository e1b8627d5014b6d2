"""The course's standard measurements as one JSON report: ``python -m gpulab bench``.

:func:`run_bench` times, with :func:`gpulab.benchmark`,

* matrix multiplication by dtype: FP32, BF16 and FP16 where the device supports them, and
  TF32 on GPUs with TF32 Tensor Cores (compute capability 8.0 or later);
* a device-memory copy (bytes read plus bytes written, per second);
* on CUDA GPUs, host-to-device and device-to-host transfers from pageable and from pinned
  host memory;
* one training step (forward, backward, SGD update) of a small fixed MLP, in samples/s;

and returns a report with the machine's provenance (:func:`gpulab.measure.provenance`) and the
figures it should be compared with: the registry's datasheet entry for the device where
there is one, or, for a CPU, the labelled estimate of :func:`gpulab.estimate_cpu_peak`.
Every report is checked against ``gpulab/data/bench_report.schema.json``
(:func:`validate_report`). The book's gallery page renders every report in ``results/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from importlib import resources

from gpulab._checks import flag, text, wrong_type
from gpulab._schema import schema_errors
from gpulab.hardware.precision import TORCH_DTYPE_NAMES
from gpulab.measure.device import supported_precisions, tf32

__all__ = [
    "SCHEMA_VERSION",
    "bench_schema",
    "reference_for",
    "run_bench",
    "validate_report",
]

SCHEMA_VERSION = 1
MLP_WIDTHS = (1024, 1024, 1024, 10)  # the fixed model of the training-step measurement
MLP_BATCH = 256
MIN_SAMPLES_FOR_SPREAD = 3  # fewer timing blocks than this give no meaningful IQR
UNITS = {"matmul": "FLOP/s", "copy": "B/s", "h2d": "B/s", "d2h": "B/s", "train_step": "samples/s"}

# (quick, full) problem sizes per device kind.
_SIZES = {
    "cpu": {"matmul_n": (512, 1024), "copy_bytes": (32 * 2**20, 256 * 2**20)},
    "gpu": {"matmul_n": (4096, 8192), "copy_bytes": (256 * 2**20, 2**30)},
}
_TRANSFER_BYTES = (64 * 2**20, 256 * 2**20)


# --------------------------------------------------------------------------- schema


def bench_schema() -> dict:
    """The JSON schema every benchmark report must satisfy (kept in ``gpulab/data``)."""
    schema = resources.files("gpulab").joinpath("data/bench_report.schema.json").read_text("utf-8")
    return json.loads(schema)


def validate_report(report: dict, source: str = "report") -> None:
    """Raise ``ValueError`` naming every way ``report`` breaks the schema.

    A ``report`` that is not a dict at all raises ``TypeError``. The check needs only the
    standard library (:mod:`gpulab._schema`), so it runs in a core install too.

    Parameters
    ----------
    report : dict
        A report as written by :func:`run_bench` (or read from JSON).
    source : str
        What to call the report in the message, e.g. its file name.

    Examples
    --------
    >>> from gpulab.measure.bench_report import validate_report
    >>> validate_report({"schema_version": 1})
    Traceback (most recent call last):
    ...
    ValueError: report does not match bench_report.schema.json: \
(top level): 'provenance' is a required property; (top level): 'notes' is a required \
property; (top level): 'quick' is a required property; (top level): 'results' is a \
required property; (top level): 'reference' is a required property
    """
    text("source", source)
    if not isinstance(report, dict):
        raise wrong_type("report", report, "a dict (a benchmark report, as JSON)")
    errors = sorted(schema_errors(report, bench_schema()), key=lambda error: list(error[0]))
    if errors:
        problems = "; ".join(
            f"{'/'.join(map(str, where)) or '(top level)'}: {message}" for where, message in errors
        )
        raise ValueError(f"{source} does not match bench_report.schema.json: {problems}")


# --------------------------------------------------------------------------- reference figures


def reference_for(info) -> dict:
    """The figures to set beside this device's measurements, with where they come from.

    A GPU whose exact part is in the registry (:func:`gpulab.find_spec`: same model, form
    factor and memory) gives its datasheet peaks and memory bandwidth with the source URL;
    a CPU gets :func:`gpulab.estimate_cpu_peak` (FP32 only), labelled as an estimate;
    anything else gets ``{"kind": "none"}`` with the reason, never a sibling's figures.

    Parameters
    ----------
    info : DeviceInfo
        What :func:`gpulab.detect_device` found.

    Examples
    --------
    >>> import gpulab as gl
    >>> ref = reference_for(gl.DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3"))
    >>> ref["kind"], ref["name"], ref["peak_flops"]["bf16"] / 1e12
    ('datasheet', 'H100 SXM5 80GB', 989.5)
    >>> reference_for(gl.DeviceInfo(kind="cuda", name="NVIDIA A100-PCIE-40GB"))["kind"]
    'none'
    """
    from gpulab.hardware.specs import match_driver_name
    from gpulab.measure.cpu import estimate_cpu_peak
    from gpulab.measure.device import DeviceInfo

    if not isinstance(info, DeviceInfo):
        raise wrong_type("info", info, "a DeviceInfo (gl.detect_device())")
    if info.kind == "cpu":
        try:
            peak = estimate_cpu_peak()
        except (RuntimeError, ValueError) as exc:
            return {"kind": "none", "label": f"no CPU estimate: {exc}"}
        return {
            "kind": "estimate",
            "label": "estimate (gl.estimate_cpu_peak), an upper bound",
            "name": info.cpu_model,
            "peak_flops": {"fp32": peak.peak_flops},
            "memory_bandwidth": None,
            "formula": peak.formula,
        }
    if info.kind == "mps":
        return {"kind": "none", "label": "Apple GPUs publish no peak figures the registry holds"}
    spec, why = match_driver_name(info.name)
    if spec is None:
        return {"kind": "none", "label": f"{info.name} is not in the registry: {why}"}
    return {
        "kind": "datasheet",
        "label": "datasheet (gpulab registry)",
        "name": spec.name,
        "peak_flops": dict(spec.peak_flops),
        "memory_bandwidth": spec.memory_bandwidth,
        "source_url": spec.source_url,
    }


# --------------------------------------------------------------------------- measurements


def _entry(name: str, result, work: float, params: dict, dtype: str | None = None) -> dict:
    return {
        "name": name,
        "dtype": dtype,
        "params": params,
        "unit": UNITS[name],
        "value": work / result.median_s,
        "median_s": result.median_s,
        "iqr_s": result.iqr_s,
        "runs": result.runs,
        "samples": len(result.times_s),
    }


def _dtype_support(torch, device, *, probe: bool = True) -> dict[str, str | None]:
    """For each dtype, None when it can be measured here, else the reason it cannot.

    ``probe`` runs a tiny matmul in each remaining dtype to catch what the capability does
    not tell (a build without a kernel for it).
    """
    if device.type == "cuda":
        # Below compute capability 8.0 TF32 does not exist and BF16 is only emulated: a
        # measurement would time FP32 or the emulation, not the hardware, so both are skipped
        # with the reason. FP16 is timed on every GPU (below 7.0 on the ordinary lanes).
        native = supported_precisions(device)
        support = {d: native[d] for d in ("fp32", "bf16", "tf32")}
        support["fp16"] = None
        support = {d: support[d] for d in ("fp32", "bf16", "fp16", "tf32")}
    else:
        support = {"fp32": None, "bf16": None, "fp16": None}
    for dtype, reason in support.items():
        if probe and reason is None and dtype != "tf32":
            try:
                dtype_ = getattr(torch, TORCH_DTYPE_NAMES[dtype])
                probe_ = torch.ones(8, 8, dtype=dtype_, device=device)
                probe_ @ probe_
            except (RuntimeError, TypeError) as exc:
                support[dtype] = f"matmul in {dtype} is not supported here ({exc})"
    return support


def _problem_sizes(device, quick: bool) -> dict[str, int]:
    """Matmul size, copy bytes and transfer bytes for ``device`` (GPU sizes on any GPU)."""
    kind = "cpu" if device.type == "cpu" else "gpu"
    pick = 0 if quick else 1
    return {
        "matmul_n": _SIZES[kind]["matmul_n"][pick],
        "copy_bytes": _SIZES[kind]["copy_bytes"][pick],
        "transfer_bytes": _TRANSFER_BYTES[pick],
    }


def _matmuls(torch, device, n: int, bench: Callable, support: dict) -> tuple[list, list]:
    entries, skipped = [], []
    for dtype, reason in support.items():
        if reason:
            skipped.append({"name": "matmul", "dtype": dtype, "reason": reason})
            continue
        a = torch.randn(n, n, device=device, dtype=getattr(torch, TORCH_DTYPE_NAMES[dtype]))
        b = torch.randn_like(a)
        with tf32(dtype == "tf32"):
            result = bench(lambda a=a, b=b: a @ b, f"matmul {dtype}")
        entries.append(_entry("matmul", result, 2 * n**3, {"n": n}, dtype))
    return entries, skipped


def _copy(torch, device, nbytes: int, bench: Callable) -> dict:
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    result = bench(lambda: dst.copy_(src), "copy")
    return _entry("copy", result, 2 * nbytes, {"bytes": nbytes, "counted": "read + write"})


def _transfers(torch, device, nbytes: int, bench: Callable) -> list[dict]:
    entries = []
    on_device = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    for memory in ("pageable", "pinned"):
        host = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=memory == "pinned")
        params = {"bytes": nbytes, "host_memory": memory}
        h2d = bench(lambda h=host: on_device.copy_(h, non_blocking=True), f"h2d {memory}")
        entries.append(_entry("h2d", h2d, nbytes, params))
        d2h = bench(lambda h=host: h.copy_(on_device, non_blocking=True), f"d2h {memory}")
        entries.append(_entry("d2h", d2h, nbytes, params))
    return entries


def _train_step(torch, device, bench: Callable) -> dict:
    from gpulab.measure.provenance import seed_everything

    seed_everything(0)
    layers = []
    for fan_in, fan_out in zip(MLP_WIDTHS[:-1], MLP_WIDTHS[1:], strict=True):
        layers += [torch.nn.Linear(fan_in, fan_out), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(MLP_BATCH, MLP_WIDTHS[0], device=device)
    y = torch.randint(0, MLP_WIDTHS[-1], (MLP_BATCH,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()

    result = bench(step, "train step")
    model_name = "MLP " + "-".join(map(str, MLP_WIDTHS))
    params = {"model": model_name, "batch": MLP_BATCH, "optimizer": "SGD"}
    return _entry("train_step", result, MLP_BATCH, params, "fp32")


def run_bench(quick: bool = False, notes: str = "", progress: Callable[[str], None] | None = None):
    """Run the standard measurements on this machine's best device; return the report.

    Parameters
    ----------
    quick : bool
        Smaller problems and shorter timing (about half a minute on a 2-core CPU).
    notes : str
        Conditions worth knowing (a shared machine, a laptop on battery, ...).
    progress : callable, optional
        Called with the name of each measurement before it starts (e.g. ``print``).

    Returns
    -------
    dict
        The report, checked with :func:`validate_report`.
    """
    import torch

    from gpulab.measure.bench import benchmark, synchronize
    from gpulab.measure.device import best_device, detect_device
    from gpulab.measure.provenance import provenance

    flag("quick", quick)
    text("notes", notes)
    if progress is not None and not callable(progress):
        raise wrong_type("progress", progress, "a callable such as print, or None")
    info = detect_device()
    device = best_device()
    sizes = _problem_sizes(device, quick)
    min_run_time_s = 0.2 if quick else 1.0
    say = (lambda _: None) if progress is None else progress

    def bench(fn, label):
        say(label)
        min_time_s = min_run_time_s
        if not quick:  # time one call so that slow ones still get enough blocks for an IQR
            fn()
            synchronize()
            start = time.perf_counter()
            fn()
            synchronize()
            min_time_s = max(
                min_run_time_s, 1.2 * MIN_SAMPLES_FOR_SPREAD * (time.perf_counter() - start)
            )
        return benchmark(fn, label=label, min_run_time_s=min_time_s)

    results, skipped = [], []
    support = _dtype_support(torch, device)
    matmuls, skipped_mm = _matmuls(torch, device, sizes["matmul_n"], bench, support)
    results += matmuls
    skipped += skipped_mm
    results.append(_copy(torch, device, sizes["copy_bytes"], bench))
    if device.type == "cuda":
        results += _transfers(torch, device, sizes["transfer_bytes"], bench)
    else:
        skipped.append({"name": "h2d/d2h", "dtype": None, "reason": "no CUDA GPU here"})
    results.append(_train_step(torch, device, bench))
    report = {
        "schema_version": SCHEMA_VERSION,
        "provenance": provenance(info),
        "notes": notes,
        "quick": quick,
        "device_type": device.type,
        "threads": torch.get_num_threads(),
        "results": results,
        "skipped": skipped,
        "reference": reference_for(info),
    }
    validate_report(report)
    return report
