"""A tiny GPT in plain torch, with a preallocated KV cache: the inference lab's model.

Token and position embeddings, ``layers`` pre-LayerNorm transformer blocks (causal
self-attention and a 4x MLP) and a head that scores the next token. Its weights are random:
the inference lab measures speed and compares outputs, and neither needs a trained model.

``model(idx)`` computes every position of ``idx`` (batch x tokens); ``model(idx, cache,
start)`` writes the keys and values of positions ``start .. start + len`` into ``cache``
(from :meth:`TinyGPT.new_cache`) and attends to every position cached so far, so a decode
step computes only the new token.

Examples
--------
>>> import torch
>>> from gpulab.labkit.tiny_gpt import TinyGPT
>>> _ = torch.manual_seed(0)
>>> gpt = TinyGPT(vocab=32, d_model=16, layers=2, heads=2, max_len=8).eval()
>>> idx = torch.randint(0, 32, (1, 5))
>>> cache = gpt.new_cache(1)
>>> with torch.no_grad():
...     whole = gpt(idx)                                      # every position at once
...     first = gpt(idx[:, :4], cache, 0)                     # prefill four tokens
...     last = gpt(idx[:, 4:], cache, 4)                      # decode the fifth from the cache
>>> bool(torch.allclose(whole[:, -1], last[:, -1], atol=1e-5))
True
>>> tuple(cache.shape)  # layers x (key, value) x batch x heads x positions x head dim
(2, 2, 1, 2, 8, 8)
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from gpulab._checks import positive_int

__all__ = ["TinyGPT"]


class _Block(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x, kv=None, start=0):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, self.head_dim).transpose(
            1, 3).unbind(2)
        if kv is not None:  # write this chunk's keys and values, read all cached so far
            kv[0, :, :, start:start + t], kv[1, :, :, start:start + t] = k, v
            k, v = kv[0, :, :, :start + t], kv[1, :, :, :start + t]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """A GPT of ``layers`` blocks of width ``d_model`` with ``heads`` heads, for ``max_len``
    positions and a vocabulary of ``vocab`` tokens (see the module's docstring).

    Parameters
    ----------
    vocab, d_model, layers, heads, max_len : int
        Positive; ``d_model`` a multiple of ``heads``.
    """

    def __init__(self, vocab: int = 512, d_model: int = 384, layers: int = 6, heads: int = 6,
                 max_len: int = 128):
        super().__init__()
        for name, value in (("vocab", vocab), ("d_model", d_model), ("layers", layers),
                            ("heads", heads), ("max_len", max_len)):
            positive_int(name, value)
        if d_model % heads:
            raise ValueError(f"d_model={d_model} must be a multiple of heads={heads}")
        self.layers, self.heads, self.max_len = layers, heads, max_len
        self.head_dim = d_model // heads
        self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, heads) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab)

    def forward(self, idx, cache=None, start=0):
        x = self.tok(idx) + self.pos(torch.arange(start, start + idx.shape[1], device=idx.device))
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i], start)
        return self.head(self.ln_f(x))

    def new_cache(self, batch: int, dtype=torch.float32) -> torch.Tensor:
        """An empty KV cache on the model's device, allocated once for ``max_len`` positions:
        layers x (key, value) x batch x heads x positions x head dim."""
        positive_int("batch", batch)
        device = self.tok.weight.device
        return torch.zeros(self.layers, 2, batch, self.heads, self.max_len, self.head_dim,
                           dtype=dtype, device=device)
