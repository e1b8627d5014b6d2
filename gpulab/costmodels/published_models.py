"""Published models by name: their sizes and the shapes the cost formulas need, with sources.

The torch networks the labs train are in :mod:`gpulab.labkit.networks`; this module only
describes well-known models (ResNet-50, BERT, GPT-3, ...) as numbers from their papers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpulab._checks import choice, positive_int, positive_number, text, wrong_type

__all__ = ["NAMED_MODELS", "NamedModel", "get_model", "named_model_or_none", "resolve_model"]


@dataclass(frozen=True)
class NamedModel:
    """A well-known model: its published size and the shape the cost formulas need.

    Attributes
    ----------
    name : str
    family : {"transformer", "cnn"}
    n_params : int
        Parameter count as published (embeddings included).
    source : str
        Where ``n_params`` and the shape come from (paper and URL).
    cite : str
        The bibliography key the book cites it with.
    layers, hidden, heads : int, optional
        Transformer shape (layers L, hidden size h, attention heads a).
    seq_len : int, optional
        Transformer context length used in pre-training.
    image_size : int, optional
        CNN input side in pixels at which ``forward_flops`` is quoted.
    forward_flops : float, optional
        CNN forward FLOPs per image at ``image_size`` (one multiply-add = 2 FLOPs).
    """

    name: str
    family: str
    n_params: int
    source: str
    cite: str
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    seq_len: int | None = None
    image_size: int | None = None
    forward_flops: float | None = None

    def __post_init__(self) -> None:
        for name in ("name", "source", "cite"):
            text(name, getattr(self, name))
        choice("family", self.family, ("transformer", "cnn"))
        positive_int("n_params", self.n_params)
        for name in ("layers", "hidden", "heads", "seq_len", "image_size"):
            if getattr(self, name) is not None:
                positive_int(name, getattr(self, name))
        if self.forward_flops is not None:
            positive_number("forward_flops", self.forward_flops)


#: Models known by name, with their published sizes.
NAMED_MODELS = {
    m.name: m
    for m in (
        NamedModel(
            "ResNet-50", "cnn", 25_557_032,
            "torchvision ResNet-50 (v1.5): 25,557,032 parameters, 4.09 G multiply-adds at "
            "224x224; https://pytorch.org/vision/stable/models/generated/"
            "torchvision.models.resnet50.html",
            "he2016resnet", image_size=224, forward_flops=2 * 4.09e9,
        ),
        NamedModel(
            "BERT-base", "transformer", 110_000_000,
            "Devlin et al. 2019: L=12, H=768, A=12, 110M parameters, sequences of 512 tokens; "
            "https://arxiv.org/abs/1810.04805",
            "devlin2019bert", layers=12, hidden=768, heads=12, seq_len=512,
        ),
        NamedModel(
            "BERT-large", "transformer", 340_000_000,
            "Devlin et al. 2019: L=24, H=1024, A=16, 340M parameters, sequences of 512 tokens; "
            "https://arxiv.org/abs/1810.04805",
            "devlin2019bert", layers=24, hidden=1024, heads=16, seq_len=512,
        ),
        NamedModel(
            "GPT-2 XL", "transformer", 1_542_000_000,
            "Radford et al. 2019, Table 2: 1542M parameters, 48 layers, d_model 1600, "
            "context 1024; 25 heads in the released hparams (https://github.com/openai/gpt-2)",
            "radford2019gpt2", layers=48, hidden=1600, heads=25, seq_len=1024,
        ),
        NamedModel(
            "Llama-2-7B", "transformer", 6_700_000_000,
            "Touvron et al. 2023 (LLaMA, Table 2): 6.7B parameters, dimension 4096, 32 heads, "
            "32 layers; Llama 2 keeps this shape with a 4096-token context "
            "(https://arxiv.org/abs/2307.09288)",
            "touvron2023llama2", layers=32, hidden=4096, heads=32, seq_len=4096,
        ),
        NamedModel(
            "GPT-3 175B", "transformer", 175_000_000_000,
            "Brown et al. 2020, Table 2.1: 175.0B parameters, 96 layers, d_model 12288, "
            "96 heads, context 2048; https://arxiv.org/abs/2005.14165",
            "brown2020gpt3", layers=96, hidden=12288, heads=96, seq_len=2048,
        ),
    )
}  # fmt: skip


def _words(text: str) -> str:
    return "".join(re.findall(r"[a-z0-9]+", text.lower()))


def resolve_model(param: str, name) -> NamedModel:
    """The named model called ``name``; an error naming ``param`` if there is none.

    Examples
    --------
    >>> resolve_model("model", "bert base").name
    'BERT-base'
    """
    if not isinstance(name, str):
        raise wrong_type(param, name, f"the name of a model, one of {', '.join(NAMED_MODELS)}")
    for model in NAMED_MODELS.values():
        if _words(model.name) == _words(name):
            return model
    raise ValueError(f"{param}={name!r} is not a named model; use one of {', '.join(NAMED_MODELS)}")


def get_model(name: str) -> NamedModel:
    """A named model, looked up forgivingly (``"bert base"``, ``"BERT-base"``, ``"resnet50"``).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.get_model("bert large").n_params
    340000000
    """
    return resolve_model("name", name)


def named_model_or_none(value, param: str = "model") -> NamedModel | None:
    """A NamedModel for a name or NamedModel; None for a parameter count."""
    if isinstance(value, NamedModel):
        return value
    if isinstance(value, str):
        return resolve_model(param, value)
    return None
