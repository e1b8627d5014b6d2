"""Published LLM runs with a reported model-FLOPs utilisation (MFU), scored leave-one-out.

:mod:`gpulab.costmodels.published_runs` implies a utilisation from MLPerf logs, which state
the samples trained and the time. Large language-model runs are published differently: a
paper or a benchmark table states the run's **model-FLOPs utilisation** directly, the model's
FLOPs per second (from the measured throughput) over the GPUs' datasheet peak. The runs are
kept with their sources in ``gpulab/data/published_mfu.csv``, each with the table and row it
was read from.

For a run whose FLOPs are fixed, the time to train is ``FLOPs / (n_gpus × peak × MFU)``, so a
utilisation ``u`` taken from other runs predicts a time ``published MFU / u`` times the real
one. :func:`leave_one_out_mfu` scores that honestly: each run's utilisation comes from the
*other* runs only, the median of those on GPUs of the same architecture, or of all of them
where none shares it.

Each source counts a model's FLOPs its own way (``6·N`` plus an attention term that the
papers count differently); the MFUs are compared as published.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gpulab._checks import choice, fraction, positive_int, text, wrong_type
from gpulab.costmodels.published_runs import checked_path, csv_rows, sequence_of
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "MfuLeaveOneOut",
    "ReportedMfuRun",
    "leave_one_out_mfu",
    "published_llm_utilisation",
    "published_mfu_runs",
]

_INTEGER_COLUMNS = ("n_params", "seq_len", "n_gpus")
_FLOAT_COLUMNS = ("mfu",)


@dataclass(frozen=True)
class ReportedMfuRun:
    """One published training run with the model-FLOPs utilisation its source reports.

    Attributes
    ----------
    name, model : str
        The run, and the model it trained.
    n_params : int
        Parameters of the model, as the source states them.
    seq_len : int
        Tokens per sequence.
    spec : str
        The GPU's (or accelerator's) name in the registry.
    n_gpus : int
        GPUs (or chips) that trained together.
    precision : str
        The arithmetic the MFU is relative to (``"BF16"``).
    mfu : float
        The reported model-FLOPs utilisation, a fraction of the datasheet peak.
    source, where : str
        URL of the paper or table, and where in it the figure is.
    """

    name: str
    model: str
    n_params: int
    seq_len: int
    spec: str
    n_gpus: int
    precision: str
    mfu: float
    source: str
    where: str

    def __post_init__(self) -> None:
        for name in ("name", "model", "source", "where"):
            text(name, getattr(self, name))
        resolve_spec("spec", self.spec)
        for name in _INTEGER_COLUMNS:
            positive_int(name, getattr(self, name))
        choice("precision", self.precision, ("BF16",))
        fraction("mfu", self.mfu, allow_zero=False)
        if not self.source.startswith("https://"):
            raise ValueError(f"source={self.source!r} must be an https:// URL")

    @property
    def architecture(self) -> str:
        """The GPU's architecture in the registry, e.g. ``"Hopper (GH100)"``."""
        return resolve_spec("spec", self.spec).architecture


@functools.cache
def _file_runs(path: str | None) -> tuple[ReportedMfuRun, ...]:
    runs = []
    for row in csv_rows(path, "data/published_mfu.csv"):
        for key in _INTEGER_COLUMNS:
            row[key] = int(row[key])
        for key in _FLOAT_COLUMNS:
            row[key] = float(row[key])
        runs.append(ReportedMfuRun(**row))
    return tuple(runs)


def published_mfu_runs(path=None) -> tuple[ReportedMfuRun, ...]:
    """Every run in ``gpulab/data/published_mfu.csv`` (or the CSV at ``path``), in order.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A CSV file with the same columns; default the package's own.

    Examples
    --------
    >>> from gpulab.costmodels.published_mfu import published_mfu_runs
    >>> run = published_mfu_runs()[0]
    >>> run.model, run.n_gpus, run.mfu
    ('Llama 3 405B', 8192, 0.43)
    """
    return _file_runs(checked_path(path))


@dataclass(frozen=True)
class MfuLeaveOneOut:
    """One run's utilisation predicted from the other runs.

    Attributes
    ----------
    run : ReportedMfuRun
    predicted_mfu : float
        The median MFU of ``basis_runs``.
    basis_runs : tuple of ReportedMfuRun
        The runs it came from (never ``run`` itself).
    basis : str
        ``"same architecture"`` or ``"all other runs"``.
    """

    run: ReportedMfuRun
    predicted_mfu: float
    basis_runs: tuple[ReportedMfuRun, ...]
    basis: str

    def __post_init__(self) -> None:
        if not isinstance(self.run, ReportedMfuRun):
            raise wrong_type("run", self.run, "a ReportedMfuRun")
        fraction("predicted_mfu", self.predicted_mfu, allow_zero=False)
        if not isinstance(self.basis_runs, tuple) or not self.basis_runs:
            raise wrong_type("basis_runs", self.basis_runs, "a non-empty tuple")
        if self.run in self.basis_runs:
            raise ValueError("basis_runs must not hold the run being predicted")
        choice("basis", self.basis, ("same architecture", "all other runs"))

    @property
    def error(self) -> float:
        """Predicted time to train against the published run's, as a signed fraction.

        The FLOPs and the GPUs are the run's own, so the times are in the inverse ratio of
        the utilisations: ``published MFU / predicted MFU - 1``.
        """
        return self.run.mfu / self.predicted_mfu - 1


def _as_runs(runs) -> tuple[ReportedMfuRun, ...]:
    return sequence_of("runs", runs, ReportedMfuRun, published_mfu_runs)


def _predict(run_architecture: str, others: Sequence[ReportedMfuRun]):
    alike = [r for r in others if r.architecture == run_architecture]
    basis_runs, basis = (alike, "same architecture") if alike else (others, "all other runs")
    return statistics.median(r.mfu for r in basis_runs), tuple(basis_runs), basis


def published_llm_utilisation(spec) -> float:
    """The utilisation published LLM runs sustained on GPUs like ``spec``: their median MFU.

    The runs on GPUs of the same architecture as ``spec``, or every run in the file where
    none shares it. Pass it as ``utilisation=`` to :func:`gpulab.time_to_train` for a
    language model's pre-training.

    Parameters
    ----------
    spec : DeviceSpec or str
        The GPU to predict for.

    Examples
    --------
    >>> from gpulab.costmodels.published_mfu import published_llm_utilisation
    >>> round(published_llm_utilisation("A100 80GB"), 3)     # six MPT runs on A100s
    0.597
    """
    architecture = resolve_spec("spec", spec).architecture
    return _predict(architecture, published_mfu_runs())[0]


def leave_one_out_mfu(runs: Sequence[ReportedMfuRun] | None = None) -> list[MfuLeaveOneOut]:
    """Predict every run's utilisation from the other runs, and so its time to train.

    Parameters
    ----------
    runs : sequence of ReportedMfuRun, optional
        Default :func:`published_mfu_runs`. With fewer than two runs nothing is scored.

    Examples
    --------
    >>> from gpulab.costmodels.published_mfu import leave_one_out_mfu
    >>> scored = leave_one_out_mfu()
    >>> all(s.run not in s.basis_runs for s in scored)
    True
    >>> palm = next(s for s in scored if s.run.model == "PaLM 540B")
    >>> palm.basis                      # no other TPU v4 run in the file
    'all other runs'
    """
    chosen = _as_runs(runs)
    found = []
    for run in chosen:
        others = [r for r in chosen if r != run]
        if others:
            found.append(MfuLeaveOneOut(run, *_predict(run.architecture, others)))
    return found
