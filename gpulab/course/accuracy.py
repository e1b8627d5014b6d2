"""How good are the course's cost models? Their measured errors, read from the recorded labs.

Each cost model the course teaches is compared with a measurement in some lab. This module
reads those comparisons back from the recorded notebooks (their outputs and provenance
metadata, and the distributed lab's JSON results where a run left them), so the page
"How good are the course's models?" (``book/model_accuracy.md``) is generated at build time
and cannot drift from the recordings. A model whose lab has recorded no comparison yet is
listed as such.

Two ways a lab reports a comparison, tried in this order:

1. a display output whose metadata holds ``gpulab_accuracy`` (a dict with ``model``,
   ``metric``, ``value`` as a fraction, and optionally ``target``, ``n`` and ``detail``),
   written by the cell that measured;
2. the printed lines of the measuring cell, read with a pattern per model (for labs written
   before the metadata existed).

Recordings come from ``notebooks/<lab>.ipynb`` and, when present, from per-device copies in
``notebooks/recordings/<kind>/[<GPU class>/]<lab>.ipynb``; each gives its device and date from
``metadata.gpulab.recorded``.

Time to train is also compared with published MLPerf Training runs whose logs state the
training work, listed with their sources in ``gpulab/data/published_runs.csv``: each run is
predicted with the utilisation the *other* runs of its benchmark sustained
(:func:`gpulab.costmodels.published_runs.leave_one_out`) when the page is built. The run the
BERT case study quotes is also in ``gpulab/data/mlperf_training.json``, which
:func:`mlperf_comparisons` predicts at a utilisation the chapter chooses. Published LLM runs
state their model-FLOPs utilisation instead of a time; ``gpulab/data/published_mfu.csv``
lists them, and each run's utilisation is predicted from the others
(:func:`gpulab.costmodels.published_mfu.leave_one_out_mfu`).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gpulab.labkit.accuracy_output import ACCURACY_KEY  # the key the labs write

__all__ = [
    "ACCURACY_KEY",
    "MODELS",
    "ModelAccuracy",
    "accuracy_table",
    "collect_accuracy",
    "find_root",
    "mlperf_comparisons",
]



@dataclass(frozen=True)
class ModelAccuracy:
    """One cost model's measured error in one recording (or the lack of one).

    Attributes
    ----------
    model : str
        The cost model, as the page names it.
    compared : str
        What the model predicts and what it is compared with.
    lab : str
        The lab notebook's name (without ``.ipynb``).
    error : str
        The measured error in words (e.g. ``"median |error| 8% over 10 kernels"``), or
        ``"no recorded comparison yet"``.
    value : float or None
        The error as a fraction (the headline figure), None when not recorded.
    target : float or None
        The accuracy the course states for the model, as a fraction, if it states one.
    device : str
        The recording's device, from its provenance; empty when not recorded.
    date : str
        The recording's date (YYYY-MM-DD); empty when not recorded.
    """

    model: str
    compared: str
    lab: str
    error: str
    value: float | None = None
    target: float | None = None
    device: str = ""
    date: str = ""

    @property
    def recorded(self) -> bool:
        return self.value is not None

    @property
    def meets_target(self) -> bool | None:
        """Whether the recorded error is within the target (None without both)."""
        if self.value is None or self.target is None:
            return None
        return abs(self.value) <= self.target


def find_root(start: str | Path | None = None) -> Path:
    """The repository root: the first folder at or above ``start`` (default: the current
    folder) that holds ``_toc.yml`` and ``notebooks/``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise FileNotFoundError(
        f"no course repository (with _toc.yml and notebooks/) at or above {here}"
    )


# --------------------------------------------------------------------------- reading labs


def _recordings(root: Path, lab: str) -> list[Path]:
    paths = [root / "notebooks" / f"{lab}.ipynb"]
    paths += sorted((root / "notebooks" / "recordings").glob(f"**/{lab}.ipynb"))
    return [p for p in paths if p.is_file()]


def _provenance(nb: dict) -> tuple[str, str]:
    recorded = nb.get("metadata", {}).get("gpulab", {}).get("recorded", {})
    if not isinstance(recorded, dict) or not recorded:
        return "", ""
    # One recording per notebook file; where several kinds are stamped, take the latest date.
    entries = [v for v in recorded.values() if isinstance(v, dict)]
    if not entries:
        return "", ""
    entry = max(entries, key=lambda v: str(v.get("date", "")))
    return str(entry.get("device", "")), str(entry.get("date", ""))


def _outputs(nb: dict):
    """(text, metadata) of every output of every code cell, in order."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text = output.get("text", "")
            else:
                data = output.get("data", {})
                text = data.get("text/markdown", data.get("text/plain", ""))
            text = "".join(text) if isinstance(text, list) else str(text)
            yield text, output.get("metadata", {}) or {}


def _text(nb: dict) -> str:
    return "\n".join(text for text, _ in _outputs(nb))


def _from_metadata(nb: dict, model_key: str) -> dict | None:
    for _, metadata in _outputs(nb):
        record = metadata.get(ACCURACY_KEY)
        if isinstance(record, dict) and record.get("model") == model_key:
            if isinstance(record.get("value"), int | float):
                return record
    return None


def _percent(value: float) -> str:
    return f"{100 * value:+.0f}%"


# --------------------------------------------------------------------------- one per model
# Each reader takes (notebook, root) and returns (error in words, value, target) or None.

Reading = tuple[str, float, float | None] | None


def _metadata_reader(model_key: str) -> Callable[[dict, Path], Reading]:
    def read(nb: dict, root: Path) -> Reading:
        record = _from_metadata(nb, model_key)
        if record is None:
            return None
        value = float(record["value"])
        target = record.get("target")
        target = float(target) if isinstance(target, int | float) else None
        words = f"{record.get('metric', 'error')} {100 * value:.1f}%"
        if isinstance(record.get("detail"), str) and record["detail"]:
            words += f" ({record['detail']})"
        return words, value, target

    return read


def _roofline_text(nb: dict, root: Path) -> Reading:
    match = re.search(r"median \|error\| (\d+(?:\.\d+)?)% over (\d+) kernels", _text(nb))
    if not match:
        return None
    value = float(match.group(1)) / 100
    return f"median |error| {match.group(1)}% over {match.group(2)} kernels", value, 0.25


def _allreduce(nb: dict, root: Path) -> Reading:
    match = re.search(r"model error: median \|error\| (\d+)%, largest ([+-]?\d+)%", _text(nb))
    if match:
        median, largest = float(match.group(1)) / 100, float(match.group(2)) / 100
        return (
            f"median |error| {match.group(1)}% over the message sizes, largest {_percent(largest)}",
            median,
            None,
        )
    return _allreduce_json(root)


def _allreduce_json(root: Path) -> Reading:
    """From ``notebooks/dist_lab/allreduce.json`` (rows of n_bytes, time_s; world)."""
    data = _json(root / "notebooks" / "dist_lab" / "allreduce.json")
    rows = data.get("rows") if isinstance(data, dict) else None
    world = data.get("world") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not isinstance(world, int) or world < 2:
        return None
    try:
        sizes = [int(row["n_bytes"]) for row in rows]
        times = [float(row["time_s"]) for row in rows]
    except (KeyError, TypeError, ValueError):
        return None
    if len(sizes) < 2:
        return None
    import gpulab as gl

    alpha, beta = gl.fit_alpha_beta(sizes, times, world)
    errors = [
        gl.allreduce_time(n, world, alpha_s=alpha, bandwidth_bytes_per_s=beta) / t - 1
        for n, t in zip(sizes, times, strict=True)
    ]
    median = statistics.median(abs(e) for e in errors)
    return f"median |error| {100 * median:.0f}% over {len(errors)} message sizes", median, None


#: The accuracy the course states for the data-parallel step-time model.
DP_STEP_TARGET = 0.15


def _dp_step(nb: dict, root: Path) -> Reading:
    """The lab's measured step against its model, with DDP's buckets where it can count them.

    The lab prints the model as one all-reduce of every gradient. DDP splits them into
    buckets (:func:`gpulab.costmodels.comms.ddp_buckets`), each one more all-reduce paying
    the ring's latency ``2(p-1)·α``; with the parameter count (4-byte gradients, as the
    lab's script counts them) and the fitted α and β the lab printed, the reader adds it.
    """
    text = _text(nb)
    measured = re.search(r"(\d+) ranks:\s+[\d,]+ samples/s \(([\d.]+) ms/step\)", text)
    model = re.search(r"model, overlap 0%: .*?step ([\d.]+) ms", text)
    if not (measured and model):
        return None
    measured_ms, model_ms = float(measured.group(2)), float(model.group(1))
    fitted = re.search(r"alpha = ([\d.]+) us, beta = ([\d.]+) GB/s", text)
    params = re.search(r"(\d+) ranks, ([\d,]+) parameters each", text)
    if not (fitted and params):
        value = model_ms / measured_ms - 1
        return (
            f"step on {measured.group(1)} ranks: model {model_ms:g} ms (no overlap) against "
            f"{measured_ms:g} ms measured, {_percent(value)}",
            value,
            None,
        )
    from gpulab.costmodels.comms import allreduce_time, ddp_buckets

    p = int(params.group(1))
    alpha, beta = float(fitted.group(1)) * 1e-6, float(fitted.group(2)) * 1e9
    buckets = ddp_buckets(4 * int(params.group(2).replace(",", "")))
    latency_ms = 1e3 * allreduce_time(0, p, alpha_s=alpha, bandwidth_bytes_per_s=beta)
    bucketed_ms = model_ms + (buckets - 1) * latency_ms
    value = bucketed_ms / measured_ms - 1
    return (
        f"step on {p} ranks: model {bucketed_ms:.1f} ms (no overlap; DDP's {buckets} gradient "
        f"buckets, each an all-reduce; {model_ms:g} ms as one) against {measured_ms:g} ms "
        f"measured, {_percent(value)}",
        value,
        DP_STEP_TARGET,
    )


#: A row of the distributed lab's pipeline table: schedule (absent in older recordings),
#: micro-batches, step time, measured bubble, modelled bubble.
_PIPELINE_ROW = re.compile(r"^\s*(gpipe|1f1b)?\s*(\d+)\s+[\d.]+ms\s+(\d+)%\s+(\d+)%", re.M)


def _pipeline(nb: dict, root: Path) -> Reading:
    rows = _PIPELINE_ROW.findall(_text(nb))
    gaps = [(float(measured) - float(model)) / 100 for _, _, measured, model in rows]
    schedules = sorted({name for name, *_ in rows if name}, key=["gpipe", "1f1b"].index)
    if not gaps:
        data = _json(root / "notebooks" / "dist_lab" / "pipeline.json")
        rows_json = data.get("rows") if isinstance(data, dict) else None
        world = data.get("world") if isinstance(data, dict) else None
        if isinstance(rows_json, list) and isinstance(world, int) and world >= 2:
            import gpulab as gl

            try:
                gaps = [
                    float(r["bubble"]) - gl.pipeline_bubble(world, int(r["m"])) for r in rows_json
                ]
            except (KeyError, TypeError, ValueError):
                gaps = []
    if not gaps:
        return None
    median = statistics.median(abs(g) for g in gaps)
    largest = max(gaps, key=abs)
    names = {"gpipe": "GPipe", "1f1b": "1F1B"}
    runs = (
        f"{len(gaps)} runs ({' and '.join(names[n] for n in schedules)})"
        if schedules
        else (f"{len(gaps)} micro-batch counts")
    )
    return (
        f"bubble fraction off by a median {100 * median:.0f} percentage points over "
        f"{runs}, largest {100 * largest:+.0f} points",
        median,
        None,
    )


def _sharded(nb: dict, root: Path) -> Reading:
    rows = re.findall(
        r"^\s*(DDP|FSDP)\s+(?:[\d.]+MB\s+){3}([\d.]+)MB\s+([\d.]+)MB\s*$", _text(nb), re.M
    )
    if not rows:
        return None
    errors = [float(model) / float(measured) - 1 for _, measured, model in rows]
    largest = max(errors, key=abs)
    names = " and ".join(name for name, _, _ in rows)
    return (
        f"training state per rank ({names}): largest error {100 * largest:+.1f}%",
        abs(largest),
        None,
    )


def _mlperf(nb: dict, root: Path) -> Reading:
    match = re.search(r"MLPerf[^\n]*?(?:error|off by)[^\n]*?([+-]?\d+(?:\.\d+)?)%", _text(nb), re.I)
    if not match:
        return None
    value = float(match.group(1)) / 100
    return match.group(0).strip(), abs(value), None


#: Where the published MLPerf runs and their cited inputs live, relative to the repository root.
MLPERF_RUNS = Path("gpulab") / "data" / "mlperf_training.json"


@dataclass(frozen=True)
class MLPerfComparison:
    """The course's time-to-train prediction of one published MLPerf run.

    Attributes
    ----------
    run : dict
        The run's entry in ``gpulab/data/mlperf_training.json`` (system, inputs, source).
    predicted_s : float
        :func:`gpulab.time_to_train` of the run's samples × sequence length tokens on its
        GPUs, at ``utilisation``, perfectly scaled on one node.
    published_s : float
        The run's time from ``run_start`` to ``run_stop`` in its log.
    utilisation : float
        The fraction of the 16-bit peak assumed.
    """

    run: dict
    predicted_s: float
    published_s: float
    utilisation: float

    @property
    def error(self) -> float:
        """Prediction against the published time, as a signed fraction."""
        return self.predicted_s / self.published_s - 1

    @property
    def date(self) -> str:
        """The run's date (UTC, from its ``run_start``), YYYY-MM-DD."""
        start = datetime.fromtimestamp(self.run["run_start_ms"] / 1000, tz=timezone.utc)
        return start.strftime("%Y-%m-%d")


def mlperf_comparisons(
    root: str | Path | None = None, utilisation: float | None = None
) -> list[MLPerfComparison]:
    """Predict every published MLPerf run in ``gpulab/data/mlperf_training.json``.

    Each run is a transformer: the job is ``train_samples × seq_len`` tokens at
    ``(6·N + 6·L·s·h)`` FLOPs per token (N without the embedding tables, as the course counts
    it), on ``n_gpus`` of the run's ``spec`` at their 16-bit peak and ``utilisation``.

    Parameters
    ----------
    root : path, optional
        The repository root; default: found from the current folder (:func:`find_root`).
    utilisation : float, optional
        Fraction of peak; default :data:`gpulab.DEFAULT_UTILISATION` (the course's 40%).

    Returns
    -------
    list of MLPerfComparison
        Empty when the repository has no such file.
    """
    import gpulab as gl  # the package proper, only when a comparison is asked for

    root = find_root() if root is None else Path(root)
    u = gl.DEFAULT_UTILISATION if utilisation is None else utilisation
    data = _json(root / MLPERF_RUNS)
    runs = data.get("runs", []) if isinstance(data, dict) else []
    found = []
    for run in runs:
        job = gl.transformer_training_job(
            run["n_params"],
            run["train_samples"] * run["seq_len"],
            embedding_params=run["embedding_params"],
            layers=run["layers"],
            hidden=run["hidden"],
            seq_len=run["seq_len"],
            name=run["name"],
        )
        predicted = gl.time_to_train(job, run["spec"], n_gpus=run["n_gpus"], utilisation=u)
        published = (run["run_stop_ms"] - run["run_start_ms"]) / 1000
        found.append(MLPerfComparison(run, predicted.time_s, published, u))
    return found


#: The published runs the time-to-train model is scored on, relative to the repository root.
PUBLISHED_RUNS = Path("gpulab") / "data" / "published_runs.csv"

#: The median error the course states for time to train, scored leave-one-out.
TIME_TO_TRAIN_TARGET = 0.20


def _utc_date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def _mlperf_published(root: Path, model: str, compared: str) -> list[ModelAccuracy]:
    """One row: every published run predicted with the other runs' utilisation."""
    path = root / PUBLISHED_RUNS
    if not path.is_file():
        return []
    from gpulab.costmodels.published_runs import leave_one_out, published_runs

    scored = leave_one_out(published_runs(path))
    if not scored:
        return []
    median = statistics.median(abs(s.error) for s in scored)
    each = ", ".join(f"{s.run.n_gpus} x {s.run.spec} {_percent(s.error)}" for s in scored)
    words = (
        f"median |error| {100 * median:.0f}% over {len(scored)} published MLPerf runs, each "
        f"predicted with the utilisation of the other runs of its benchmark ({each})"
    )
    gpus = ", ".join(dict.fromkeys(s.run.spec for s in scored))
    device = f"{len(scored)} published runs on {gpus}"
    date = max(_utc_date(s.run.run_start_ms) for s in scored)
    return [
        ModelAccuracy(
            model, compared, "case_bert_lab", words, median, TIME_TO_TRAIN_TARGET, device, date
        )
    ]


#: Published LLM runs with a reported MFU, relative to the repository root.
PUBLISHED_MFU = Path("gpulab") / "data" / "published_mfu.csv"


def _llm_published(root: Path, model: str, compared: str) -> list[ModelAccuracy]:
    """One row: every published LLM run's MFU predicted from the other runs' MFUs."""
    path = root / PUBLISHED_MFU
    if not path.is_file():
        return []
    from gpulab.costmodels.published_mfu import leave_one_out_mfu, published_mfu_runs

    scored = leave_one_out_mfu(published_mfu_runs(path))
    if not scored:
        return []
    median = statistics.median(abs(s.error) for s in scored)
    worst = max(scored, key=lambda s: abs(s.error))
    words = (
        f"median |error| {100 * median:.0f}% over {len(scored)} published LLM runs, each "
        f"predicted with the MFU of the other runs on its GPU architecture (largest: "
        f"{worst.run.name} {_percent(worst.error)})"
    )
    gpus = ", ".join(dict.fromkeys(s.run.spec for s in scored))
    device = f"{len(scored)} published runs on {gpus}"
    return [
        ModelAccuracy(
            model, compared, "choosing_gpu_lab", words, median, TIME_TO_TRAIN_TARGET, device, ""
        )
    ]


def _no_lab_reading(nb: dict, root: Path) -> Reading:
    return None


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _first(*readers: Callable[[dict, Path], Reading]) -> Callable[[dict, Path], Reading]:
    def read(nb: dict, root: Path) -> Reading:
        for reader in readers:
            result = reader(nb, root)
            if result is not None:
                return result
        return None

    return read


@dataclass(frozen=True)
class _Model:
    name: str
    compared: str
    labs: tuple[str, ...]
    read: Callable[[dict, Path], Reading]
    #: Comparisons with published results, read from the repository's data rather than a lab.
    published: Callable[[Path, str, str], list[ModelAccuracy]] | None = None


#: The course's cost models, where each is compared with a measurement, and how to read it.
MODELS: tuple[_Model, ...] = (
    _Model(
        "Roofline",
        "kernel time from measured peak FLOP/s, bandwidth and per-call overhead, against the "
        "measured time of elementwise kernels, a sum, softmax and matmuls",
        ("memory_bandwidth_lab",),
        _first(_metadata_reader("roofline"), _roofline_text),
    ),
    _Model(
        "Training memory",
        "modelled peak of one training step (gl.estimate_step_memory) against the measured "
        "peak, on MLPs, a CNN and a transformer encoder",
        ("minibatches_lab",),
        _metadata_reader("training memory"),
    ),
    _Model(
        "All-reduce α–β",
        "α + n/β fitted to measured all-reduce times, against those times",
        ("distributed_lab",),
        _allreduce,
    ),
    _Model(
        "Data-parallel step time",
        "compute time plus the α–β all-reduce of the gradients, one per DDP bucket, against a "
        "measured data-parallel step",
        ("distributed_lab",),
        _dp_step,
    ),
    _Model(
        "Pipeline bubble",
        "idle fraction (p − 1)/(m + p − 1) of the GPipe and 1F1B schedules, against the "
        "measured idle fraction",
        ("distributed_lab",),
        _pipeline,
    ),
    _Model(
        "Sequence-parallel activations",
        "bytes a transformer layer saves for backward per rank (Korthikanti et al.'s count, "
        "gl.layer_activation_bytes), unsplit, tensor parallel and sequence parallel, against "
        "the bytes counted by a saved-tensors hook",
        ("parallelism_lab",),
        _metadata_reader("sequence-parallel activations"),
    ),
    _Model(
        "Context-parallel load balance",
        "the busiest rank's share of causal attention work from its query-key pairs, against "
        "its measured share of the attention time (contiguous split)",
        ("parallelism_lab",),
        _metadata_reader("context-parallel load balance"),
    ),
    _Model(
        "Expert all-to-all bytes",
        "bytes each rank sends in a mixture-of-experts layer's four all-to-alls, 4kTh(e−1)/e, "
        "against the bytes sent",
        ("parallelism_lab",),
        _metadata_reader("expert all-to-all bytes"),
    ),
    _Model(
        "Pipeline schedules, simulated",
        "idle share of GPipe, 1F1B, interleaved 1F1B and ZB-H1 simulated from the measured "
        "per-operation and message times, against the measured idle share",
        ("parallelism_lab",),
        _metadata_reader("pipeline schedules (simulated)"),
    ),
    _Model(
        "Sharded memory",
        "bytes of weights, gradients and optimizer state per rank (ZeRO/FSDP), against the "
        "bytes each rank holds",
        ("distributed_lab",),
        _sharded,
    ),
    _Model(
        "Time to train vs MLPerf",
        "predicted time to train from FLOPs, datasheet peaks and the utilisation that other "
        "published runs of the same benchmark sustained (leave-one-out), against published "
        "MLPerf Training results",
        ("case_resnet_lab", "case_bert_lab"),
        _mlperf,
        _mlperf_published,
    ),
    _Model(
        "Time to train vs published LLM runs",
        "the utilisation of a language model's pre-training taken from other published runs "
        "on the same GPU architecture (leave-one-out), against the model-FLOPs utilisation "
        "each run reports; the time to train is in the inverse ratio",
        ("choosing_gpu_lab",),
        _no_lab_reading,
        _llm_published,
    ),
)


def collect_accuracy(root: str | Path | None = None) -> list[ModelAccuracy]:
    """Every cost model's recorded error, one entry per model and recording.

    Parameters
    ----------
    root : path, optional
        The repository root; default: found from the current folder (:func:`find_root`).

    Returns
    -------
    list of ModelAccuracy
        In the order of :data:`MODELS`. A model with no recorded comparison in any of its
        labs' recordings gets one entry saying so.
    """
    root = find_root() if root is None else Path(root)
    found: list[ModelAccuracy] = []
    for model in MODELS:
        entries = []
        for lab in model.labs:
            for path in _recordings(root, lab):
                nb = _json(path)
                if not isinstance(nb, dict):
                    continue
                reading = model.read(nb, root)
                if reading is None:
                    continue
                words, value, target = reading
                device, date = _provenance(nb)
                entries.append(
                    ModelAccuracy(
                        model.name, model.compared, lab, words, value, target, device, date
                    )
                )
        if model.published is not None:
            entries += model.published(root, model.name, model.compared)
        found += entries or [
            ModelAccuracy(model.name, model.compared, model.labs[0], "no recorded comparison yet")
        ]
    return found


def accuracy_table(entries: list[ModelAccuracy], *, lab_link: str | None = None) -> str:
    """A Markdown table of ``entries``: model, comparison, error, target, device, date, lab.

    ``lab_link``, a format string with ``{lab}`` (e.g. ``"../notebooks/{lab}.ipynb"``, for a
    cell rendered with ``markdown_format: myst`` so the link resolves to the lab's page),
    makes the lab's name a link; by default it is plain text.

    Examples
    --------
    >>> row = ModelAccuracy("Roofline", "kernel time", "memory_bandwidth_lab",
    ...                     "median |error| 8% over 10 kernels", 0.08, 0.25, "CPU", "2026-12-03")
    >>> for cell in accuracy_table([row]).splitlines()[-1].split(" | ")[2:5]:
    ...     print(cell)
    median \\|error\\| 8% over 10 kernels
    ≤ 25% (met)
    CPU
    """
    lines = [
        "| Model | Compared | Measured error | Target | Device | Recorded | Lab |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        if e.target is None:
            target = "none stated"
        else:
            met = {True: "met", False: "missed", None: "not yet measured"}[e.meets_target]
            target = f"≤ {100 * e.target:.0f}% ({met})"
        cells = [
            e.model,
            e.compared,
            e.error.replace("|", "\\|"),
            target,
            e.device or "—",
            e.date or "—",
            f"[{e.lab}]({lab_link.format(lab=e.lab)})" if lab_link else f"`{e.lab}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
