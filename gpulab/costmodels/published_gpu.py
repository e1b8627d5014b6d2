"""Measurements that others published on real GPUs, each with its conditions and source.

No GPU has been lent to this course, yet careful people have published what GPUs achieve,
with the software and the conditions they measured under. ``gpulab/data/
published_gpu_measurements.csv`` keeps those figures, one row per measurement, so that the
course's models can be checked against real hardware
(:mod:`gpulab.costmodels.published_gpu_checks`):

* ``matmul``: the best BF16 and FP8 matrix-multiply throughput found on 12 accelerators
  (the MAMF table of Stas Bekman's *Machine Learning Engineering*);
* ``decode``: tokens per second of Llama models at batch 1 on A100s and one MI250X GCD,
  16-bit, int8 and int4 weights, tensor parallel over 1 to 8 GPUs (the gpt-fast README);
* ``attention``: FlashAttention-2's forward plus backward throughput on an A100 and an H100,
  by sequence length, head dimension and causal mask (the values on the bars of the
  FlashAttention repository's benchmark charts; two A100 bars whose labels the chart's legend
  hides, 1k tokens in panel (a) and 512 in panel (b), are left out rather than guessed);
* ``allreduce``: NCCL all-reduce bus bandwidth on 8-GPU A100, H200 and B200 nodes
  (*Machine Learning Engineering*, network chapter).

Every row names its source file at a pinned commit, where in it the figure is (table and
row, or chart panel and bar), and the date it was read. The figures carry over with their
citation; nothing else from the sources does.

Each model the rows need is described in :data:`DECODE_MODELS` with its published shape.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gpulab._checks import choice, positive_int, positive_number, text
from gpulab.costmodels.published_runs import checked_path, csv_rows
from gpulab.hardware.interconnects import resolve_link
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "DECODE_MODELS",
    "FAMILIES",
    "DecodeModel",
    "PublishedMeasurement",
    "published_gpu_measurements",
    "published_matmul",
]

#: The kinds of measurement in the table, each checked by one model.
FAMILIES = ("matmul", "decode", "attention", "allreduce")

_UNITS = {"matmul": "TFLOP/s", "decode": "tokens/s", "attention": "TFLOP/s", "allreduce": "GB/s"}
_COMMIT = re.compile(r"[0-9a-f]{40}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class DecodeModel:
    """The published shape of a language model that a decode measurement ran.

    Attributes
    ----------
    name : str
    n_params : float
        Parameters as the model's paper names its size (embeddings included).
    layers, hidden, kv_heads, head_dim, vocab : int
        Transformer layers, model width, heads that keep keys and values (grouped-query
        attention keeps fewer than it has query heads), numbers per head, vocabulary.
    source : str
        Where the shape comes from.
    """

    name: str
    n_params: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    vocab: int
    source: str

    @property
    def weights_read_per_token(self) -> float:
        """Parameters a decode step reads: all but the input embedding table.

        Of the embedding table a step reads one row per token; every other weight
        (the output projection included) is read in full. gpt-fast's own bandwidth figure
        leaves the embedding out the same way.
        """
        return self.n_params - self.vocab * self.hidden


_LLAMA2 = "Touvron et al. 2023, Llama 2 (https://arxiv.org/abs/2307.09288), 32k vocabulary"
_LLAMA3 = "Llama Team 2024, The Llama 3 Herd of Models (https://arxiv.org/abs/2407.21783), Table 3"

#: The models of the gpt-fast rows, by the names the table uses.
DECODE_MODELS = {
    m.name: m
    for m in (
        DecodeModel("Llama-2-7B", 6.7e9, 32, 4096, 32, 128, 32_000,
                    _LLAMA2 + "; shape and 6.7B as in LLaMA's Table 2 (multi-head attention)"),
        DecodeModel("Llama-2-70B", 70e9, 80, 8192, 8, 128, 32_000,
                    _LLAMA2 + "; 80 layers, width 8192, 64 heads with grouped-query attention "
                    "over 8 key-value heads"),
        DecodeModel("Llama-3.1-8B", 8e9, 32, 4096, 8, 128, 128_256,
                    _LLAMA3 + " (8 key-value heads); vocabulary 128,256 in the released "
                    "tokenizer (the paper: 128K)"),
        DecodeModel("Llama-3.1-70B", 70e9, 80, 8192, 8, 128, 128_256, _LLAMA3),
        DecodeModel("Llama-3.1-405B", 405e9, 126, 16384, 8, 128, 128_256, _LLAMA3),
    )
}  # fmt: skip


@dataclass(frozen=True)
class PublishedMeasurement:
    """One published measurement on a real GPU, with its conditions and its source.

    Attributes
    ----------
    family : str
        One of :data:`FAMILIES`: which model checks it.
    device : str
        The device as the source names it.
    spec : str
        The registry's name for it (:func:`gpulab.get_spec` finds it).
    link : str
        The interconnect's registry name for a measurement over several GPUs, else ``""``.
    quantity, unit : str
        What was measured, in which unit (TFLOP/s, tokens/s or GB/s).
    value : float
        The figure as published.
    precision : str
        The arithmetic: ``"bf16"``, ``"fp16"`` or ``"fp8"``.
    n_gpus : int
        GPUs that worked together.
    model, weight_format : str
        For decoding: the model (a key of :data:`DECODE_MODELS`) and how its weights were
        stored (``"bf16"``, ``"int8"``, ``"int4"``); else ``""``.
    seq_len, head_dim : int or None
        For attention: tokens per sequence and numbers per head.
    causal : bool or None
        For attention: whether a causal mask was applied.
    shape, software, conditions : str
        The matrix shape or batch, the software and version, and everything else the source
        states about how it measured (power limit, warm-up, environment variables).
    source, where, commit, read_on : str
        The source file's address at a pinned commit, the table and row (or chart panel and
        bar) of the figure, that commit, and the date the figure was read (ISO).
    """

    family: str
    device: str
    spec: str
    link: str
    quantity: str
    value: float
    unit: str
    precision: str
    n_gpus: int
    model: str
    weight_format: str
    seq_len: int | None
    head_dim: int | None
    causal: bool | None
    shape: str
    software: str
    conditions: str
    source: str
    where: str
    commit: str
    read_on: str

    def __post_init__(self) -> None:
        choice("family", self.family, FAMILIES)
        for name in ("device", "quantity", "software", "conditions", "source", "where"):
            if not text(name, getattr(self, name)).strip():
                raise ValueError(f"{name}={getattr(self, name)!r} must not be empty")
        resolve_spec("spec", self.spec)
        positive_number("value", self.value)
        choice("unit", self.unit, (_UNITS[self.family],))
        choice("precision", self.precision, ("bf16", "fp16", "fp8"))
        positive_int("n_gpus", self.n_gpus)
        if not self.source.startswith("https://github.com/") or self.commit not in self.source:
            raise ValueError(f"source={self.source!r} must be a GitHub address at its commit")
        if not _COMMIT.fullmatch(self.commit):
            raise ValueError(f"commit={self.commit!r} must be 40 hexadecimal digits")
        if not _DATE.fullmatch(self.read_on):
            raise ValueError(f"read_on={self.read_on!r} must be a date, YYYY-MM-DD")
        if self.link or self.family == "allreduce" or (self.family == "decode" and self.n_gpus > 1):
            resolve_link("link", self.link)
        if self.family == "decode":
            choice("model", self.model, DECODE_MODELS)
            choice("weight_format", self.weight_format, ("bf16", "int8", "int4"))
        if self.family == "attention":
            positive_int("seq_len", self.seq_len)
            positive_int("head_dim", self.head_dim)
            choice("causal", self.causal, (True, False))

    @property
    def label(self) -> str:
        """A short description of the row for tables."""
        if self.family == "matmul":
            return f"{self.device}, {self.precision.upper()}"
        if self.family == "decode":
            gpus = f", {self.n_gpus} GPUs" if self.n_gpus > 1 else ""
            return f"{self.model} {self.weight_format}{gpus}, {self.device.split(' (')[0]}"
        if self.family == "attention":
            mask = "causal" if self.causal else "no mask"
            return f"{self.device}, {self.seq_len} tokens, head {self.head_dim}, {mask}"
        return f"{self.device}, {self.n_gpus} GPUs"


def _optional_int(value: str) -> int | None:
    return int(value) if value else None


@functools.cache
def _file_rows(path: str | None) -> tuple[PublishedMeasurement, ...]:
    rows = []
    for row in csv_rows(path, "data/published_gpu_measurements.csv"):
        row["value"] = float(row["value"])
        row["n_gpus"] = int(row["n_gpus"])
        row["seq_len"] = _optional_int(row["seq_len"])
        row["head_dim"] = _optional_int(row["head_dim"])
        row["causal"] = {"yes": True, "no": False, "": None}[row["causal"]]
        rows.append(PublishedMeasurement(**row))
    return tuple(rows)


def published_gpu_measurements(path=None, family: str | None = None):
    """Every row of ``gpulab/data/published_gpu_measurements.csv`` (or of the CSV at ``path``).

    Parameters
    ----------
    path : str or os.PathLike, optional
        A CSV file with the same columns; default the package's own.
    family : str, optional
        Keep only one of :data:`FAMILIES`.

    Returns
    -------
    tuple of PublishedMeasurement

    Examples
    --------
    >>> from gpulab.costmodels.published_gpu import published_gpu_measurements
    >>> h100 = next(m for m in published_gpu_measurements(family="matmul")
    ...             if m.device == "NVIDIA H100 SXM" and m.precision == "bf16")
    >>> h100.value, h100.unit, h100.software
    (794.5, 'TFLOP/s', 'torch 2.7.0+cu126')
    """
    rows = _file_rows(checked_path(path))
    if family is None:
        return rows
    choice("family", family, FAMILIES)
    return tuple(r for r in rows if r.family == family)


def published_matmul(spec, precision: str = "bf16") -> PublishedMeasurement | None:
    """The best published matrix-multiply throughput on ``spec`` in ``precision``, if any.

    Parameters
    ----------
    spec : DeviceSpec or str
        A registry device; a row measured on the same registry entry is returned.
    precision : {"bf16", "fp8"}

    Returns
    -------
    PublishedMeasurement or None
        None where no row was measured on that device in that precision.

    Examples
    --------
    >>> from gpulab.costmodels.published_gpu import published_matmul
    >>> published_matmul("A100 80GB").value
    271.2
    >>> published_matmul("Tesla T4") is None
    True
    """
    name = resolve_spec("spec", spec).name
    choice("precision", precision, ("bf16", "fp8"))
    for m in published_gpu_measurements(family="matmul"):
        if m.precision == precision and resolve_spec("spec", m.spec).name == name:
            return m
    return None
