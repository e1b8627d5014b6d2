"""Utilisation from published runs: what fraction of peak runs of the same kind sustained.

The time-to-train model (:func:`gpulab.time_to_train`) divides a job's FLOPs by the GPUs'
peak times a *utilisation*. One figure for every model and system (the course's
:data:`~gpulab.costmodels.training_time.DEFAULT_UTILISATION`, 40%) is a guess; this module
takes it instead from published runs of the same benchmark on the same GPU generation,
kept with their sources in ``gpulab/data/published_runs.csv``:

* each run's **implied utilisation** is its training FLOPs (the course's
  ``6·N + 6·L·s·h`` per token, ``seq_len`` tokens per sample) over
  ``n_gpus × peak × published time``;
* :func:`published_utilisation` states the utilisation for a benchmark on a system: the
  median implied utilisation of the runs of that benchmark on GPUs of the same architecture,
  or of that benchmark on any GPU where none shares it;
* :func:`leave_one_out` scores the model honestly: each run is predicted with a utilisation
  taken from the *other* runs only, never from itself.

Every run in the file is an MLPerf Training result whose log states the samples trained and
the ``run_start``/``run_stop`` times; the file's ``source`` column gives the log.
"""

from __future__ import annotations

import csv
import functools
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from gpulab._checks import choice, positive_int, positive_number, text, wrong_type
from gpulab.hardware.precision import peak_precision
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "LeaveOneOut",
    "PublishedRun",
    "UtilisationEstimate",
    "leave_one_out",
    "published_runs",
    "published_utilisation",
]

_INTEGER_COLUMNS = (
    "n_gpus", "n_params", "embedding_params", "layers", "hidden", "seq_len", "train_samples",
    "run_start_ms", "run_stop_ms",
)  # fmt: skip


@dataclass(frozen=True)
class PublishedRun:
    """One published training run: what was trained, on what, for how long, and the source.

    Attributes
    ----------
    name, round, benchmark, submitter, system : str
        The run as the results name it; ``benchmark`` groups runs of the same kind.
    spec : str
        The GPU's name in the registry (``gpulab/data/gpu_specs.csv``).
    n_gpus : int
        GPUs that trained together.
    n_params, embedding_params : int
        Parameters of the model, and those in its embedding tables (left out of ``6·N``).
    layers, hidden, seq_len : int
        The transformer's shape and the tokens counted per sample.
    train_samples : int
        Samples trained to the quality target, from the log.
    run_start_ms, run_stop_ms : int
        The log's ``run_start`` and ``run_stop`` times (Unix milliseconds).
    source : str
        URL of the submitted log the figures were read from.
    """

    name: str
    round: str
    benchmark: str
    submitter: str
    system: str
    spec: str
    n_gpus: int
    n_params: int
    embedding_params: int
    layers: int
    hidden: int
    seq_len: int
    train_samples: int
    run_start_ms: int
    run_stop_ms: int
    source: str

    def __post_init__(self) -> None:
        for name in ("name", "round", "benchmark", "submitter", "system", "source"):
            text(name, getattr(self, name))
        resolve_spec("spec", self.spec)
        for name in _INTEGER_COLUMNS:
            positive_int(name, getattr(self, name))
        if self.embedding_params >= self.n_params:
            raise ValueError(
                f"embedding_params={self.embedding_params!r} must be below "
                f"n_params={self.n_params!r}: the embeddings are part of the model"
            )
        if self.run_stop_ms <= self.run_start_ms:
            raise ValueError(
                f"run_stop_ms={self.run_stop_ms!r} must come after run_start_ms="
                f"{self.run_start_ms!r}"
            )

    @property
    def time_s(self) -> float:
        """Published time to train, run_start to run_stop, in seconds."""
        return (self.run_stop_ms - self.run_start_ms) / 1000

    @property
    def flops(self) -> float:
        """Training FLOPs by the course's count (:func:`gpulab.transformer_training_job`)."""
        from gpulab.costmodels.training_time import transformer_training_job

        job = transformer_training_job(
            self.n_params, self.train_samples * self.seq_len,
            layers=self.layers, hidden=self.hidden, seq_len=self.seq_len,
            embedding_params=self.embedding_params,
        )  # fmt: skip
        return job.flops

    @property
    def peak_flops(self) -> float:
        """Peak FLOP/s of one GPU in the precision it trains best in (datasheet)."""
        from gpulab.costmodels.training_time import training_precision

        found = resolve_spec("spec", self.spec)
        return found.peak(peak_precision(training_precision(found)))

    @property
    def architecture(self) -> str:
        """The GPU's architecture in the registry, e.g. ``"Hopper (GH100)"``."""
        return resolve_spec("spec", self.spec).architecture

    @property
    def utilisation(self) -> float:
        """Implied utilisation: FLOPs over ``n_gpus × peak × time_s``."""
        return self.flops / (self.n_gpus * self.peak_flops * self.time_s)


def csv_rows(path: str | None, package_file: str) -> list[dict[str, str]]:
    """The rows of the CSV file at ``path``, or of the package's ``gpulab/<package_file>``."""
    if path is None:
        content = resources.files("gpulab").joinpath(package_file).read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    return list(csv.DictReader(content.splitlines()))


def checked_path(path) -> str | None:
    """``path`` as a string if it names a file; None stays None (the package's own file)."""
    if path is None:
        return None
    if not isinstance(path, str | os.PathLike):
        raise wrong_type("path", path, "a path or None")
    if not os.path.isfile(path):
        raise ValueError(f"path={os.fspath(path)!r} is not a file")
    return os.fspath(path)


def sequence_of(name: str, values, kind: type, default) -> tuple:
    """``values`` as a tuple of ``kind`` (``default()`` when None), refused by ``name``."""
    if values is None:
        return default()
    wanted = f"a sequence of {kind.__name__}"
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise wrong_type(name, values, wanted)
    for value in values:
        if not isinstance(value, kind):
            raise wrong_type(name, value, wanted)
    return tuple(values)


@functools.cache
def _file_runs(path: str | None) -> tuple[PublishedRun, ...]:
    return tuple(
        PublishedRun(**{k: int(v) if k in _INTEGER_COLUMNS else v for k, v in row.items()})
        for row in csv_rows(path, "data/published_runs.csv")
    )


def published_runs(path=None) -> tuple[PublishedRun, ...]:
    """Every run in ``gpulab/data/published_runs.csv`` (or the CSV at ``path``), in order.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A CSV file with the same columns; default the package's own.

    Examples
    --------
    >>> from gpulab.costmodels.published_runs import published_runs
    >>> run = published_runs()[0]
    >>> run.spec, run.n_gpus, round(run.time_s, 3)
    ('B200', 8, 220.268)
    """
    return _file_runs(checked_path(path))


@dataclass(frozen=True)
class UtilisationEstimate:
    """A utilisation taken from published runs, and which runs it came from.

    Attributes
    ----------
    value : float
        The median implied utilisation of ``runs``.
    runs : tuple of PublishedRun
        The runs it was taken from.
    basis : str
        ``"same architecture"`` or ``"same benchmark"`` (no run shared the architecture).
    """

    value: float
    runs: tuple[PublishedRun, ...]
    basis: str

    def __post_init__(self) -> None:
        positive_number("value", self.value)
        if not isinstance(self.runs, tuple):
            raise wrong_type("runs", self.runs, "a non-empty tuple of PublishedRun")
        if not self.runs:
            raise ValueError("runs=() must hold at least one PublishedRun")
        if not all(isinstance(r, PublishedRun) for r in self.runs):
            raise wrong_type("runs", self.runs, "a non-empty tuple of PublishedRun")
        choice("basis", self.basis, ("same architecture", "same benchmark"))


def _as_runs(runs) -> tuple[PublishedRun, ...]:
    return sequence_of("runs", runs, PublishedRun, published_runs)


def published_utilisation(
    benchmark: str,
    spec,
    *,
    exclude: PublishedRun | None = None,
    runs: Sequence[PublishedRun] | None = None,
) -> UtilisationEstimate:
    """The utilisation published runs of ``benchmark`` sustained on GPUs like ``spec``.

    The median implied utilisation of the runs of ``benchmark`` on GPUs of the same
    architecture as ``spec``; where there are none, of the runs of ``benchmark`` on any GPU.

    Parameters
    ----------
    benchmark : str
        The ``benchmark`` column, e.g. ``"BERT-large to 0.72 masked-LM accuracy"``.
    spec : DeviceSpec or str
        The GPU to predict for.
    exclude : PublishedRun, optional
        A run to leave out (the one being predicted, in a leave-one-out score).
    runs : sequence of PublishedRun, optional
        Default :func:`published_runs`.

    Examples
    --------
    Eight H200s are Hopper GPUs, like the file's H100 runs:

    >>> from gpulab.costmodels.published_runs import published_runs, published_utilisation
    >>> h200 = published_runs()[1]
    >>> est = published_utilisation(h200.benchmark, "H200", exclude=h200)
    >>> est.basis, [r.n_gpus for r in est.runs]
    ('same architecture', [4, 64])
    """
    text("benchmark", benchmark)
    architecture = resolve_spec("spec", spec).architecture
    if exclude is not None and not isinstance(exclude, PublishedRun):
        raise wrong_type("exclude", exclude, "a PublishedRun or None")
    given = _as_runs(runs)
    same = [r for r in given if r.benchmark == benchmark and r != exclude]
    if not same:
        raise ValueError(
            f"benchmark={benchmark!r} has no other published run to learn from "
            f"among the {len(given)} runs"
        )
    alike = [r for r in same if r.architecture == architecture]
    chosen, basis = (alike, "same architecture") if alike else (same, "same benchmark")
    value = statistics.median(r.utilisation for r in chosen)
    return UtilisationEstimate(value, tuple(chosen), basis)


@dataclass(frozen=True)
class LeaveOneOut:
    """One run predicted from the others.

    Attributes
    ----------
    run : PublishedRun
    estimate : UtilisationEstimate
        The utilisation, from the other runs only.
    predicted_s : float
        :func:`gpulab.time_to_train` of the run's FLOPs at that utilisation.
    """

    run: PublishedRun
    estimate: UtilisationEstimate
    predicted_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.run, PublishedRun):
            raise wrong_type("run", self.run, "a PublishedRun")
        if not isinstance(self.estimate, UtilisationEstimate):
            raise wrong_type("estimate", self.estimate, "a UtilisationEstimate")
        positive_number("predicted_s", self.predicted_s)

    @property
    def error(self) -> float:
        """Prediction against the published time, as a signed fraction."""
        return self.predicted_s / self.run.time_s - 1


def leave_one_out(runs: Sequence[PublishedRun] | None = None) -> list[LeaveOneOut]:
    """Predict every run's time with a utilisation from the other runs of its benchmark.

    A run whose benchmark has no other run is left out (there is nothing to learn from). A
    utilisation above 1 (possible where the FLOP count overstates the work) is capped at 1,
    the most :func:`gpulab.time_to_train` accepts.

    Examples
    --------
    >>> from gpulab.costmodels.published_runs import leave_one_out
    >>> scored = leave_one_out()
    >>> len(scored), all(s.run not in s.estimate.runs for s in scored)
    (4, True)
    """
    from gpulab.costmodels.training_time import TrainingJob, time_to_train

    found = []
    for run in _as_runs(runs):
        try:
            estimate = published_utilisation(run.benchmark, run.spec, exclude=run, runs=runs)
        except ValueError:
            continue
        job = TrainingJob(run.name, run.flops, "from the published run")
        predicted = time_to_train(
            job, run.spec, n_gpus=run.n_gpus, utilisation=min(1.0, estimate.value)
        )
        found.append(LeaveOneOut(run, estimate, predicted.time_s))
    return found
