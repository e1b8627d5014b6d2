"""The models the case studies train and extrapolate from, in plain torch.

- :func:`resnet18`, :func:`resnet50`: the ResNets of He et al. (2015) as torchvision builds
  them ("ResNet v1.5": the stride-2 of a bottleneck sits in its 3×3 convolution). ResNet-50
  has 25,557,032 parameters and about 4.1 G multiply-adds (8.2 GFLOPs) per 224×224 image.
- :func:`small_resnet`: the same building blocks, narrow and shallow, for images of 8×8 to
  32×32 pixels, small enough to train on a laptop CPU in seconds.
- :class:`TransformerEncoder`: a BERT-style encoder (token and position embeddings,
  post-LN or pre-LN blocks, a masked-language-model head) with :func:`transformer_param_count`,
  its parameter count in closed form; :data:`BERT_BASE` is BERT-base's configuration.
- :class:`PolicyNet`: a small policy network for board games, with illegal moves masked.
- :func:`small_cnn`, :class:`TinyEncoder`: a two-convolution CNN and a two-layer transformer
  encoder, the small networks whose training memory the mini-batches lab measures.

See also the case-study chapters (``book/case_resnet.md``, ``book/case_bert.md``,
``book/case_alphago.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from gpulab._checks import (
    MAX_BLOCKS,
    MAX_LAYER_WIDTH,
    at_most,
    flag,
    non_negative_int,
    positive_int,
    wrong_type,
)

__all__ = [
    "BERT_BASE",
    "BasicBlock",
    "Bottleneck",
    "PolicyNet",
    "ResNet",
    "TransformerConfig",
    "TinyEncoder",
    "TransformerEncoder",
    "count_parameters",
    "resnet18",
    "resnet50",
    "small_cnn",
    "small_resnet",
    "transformer_param_count",
]


def count_parameters(model: nn.Module) -> int:
    """Number of parameters (trainable or not) of ``model``, shared ones counted once.

    Examples
    --------
    >>> import torch
    >>> count_parameters(torch.nn.Linear(10, 3))
    33
    """
    if not isinstance(model, nn.Module):
        raise wrong_type("model", model, "a torch.nn.Module")
    return sum(p.numel() for p in model.parameters())


def _layer_size(name: str, value) -> int:
    """A layer's features, channels or stride: a positive int of at most ``MAX_LAYER_WIDTH``."""
    return at_most(name, positive_int(name, value), MAX_LAYER_WIDTH, "features of one layer")


def _block_args(c_in, width, stride, expansion: int) -> None:
    _layer_size("c_in", c_in)
    _layer_size("width", width)
    _layer_size("stride", stride)
    if width * expansion > MAX_LAYER_WIDTH:
        raise ValueError(
            f"width={width!r} gives {width * expansion:_} output channels ({expansion} x "
            f"width), more than {MAX_LAYER_WIDTH:_} (features of one layer)"
        )


# --------------------------------------------------------------------------- ResNet


def _conv3x3(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)


def _conv1x1(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with a shortcut (ResNet-18 and -34).

    ``c_in`` input channels, ``width`` output channels and ``stride``: positive ints of at
    most ``MAX_LAYER_WIDTH`` (65_536).
    """

    expansion = 1

    def __init__(self, c_in: int, width: int, stride: int = 1):
        _block_args(c_in, width, stride, self.expansion)
        super().__init__()
        c_out = width * self.expansion
        self.conv1 = _conv3x3(c_in, width, stride)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, c_out)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or c_in != c_out:  # a projection shortcut where the shape changes
            self.downsample = nn.Sequential(_conv1x1(c_in, c_out, stride), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1×1 reduce, 3×3 (carrying the stride: "v1.5"), 1×1 expand ×4, with a shortcut.

    ``c_in`` input channels, ``width`` (the 3×3's channels; the block puts out 4 × width)
    and ``stride``: positive ints, the channels of each layer at most ``MAX_LAYER_WIDTH``
    (65_536).
    """

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int = 1):
        _block_args(c_in, width, stride, self.expansion)
        super().__init__()
        c_out = width * self.expansion
        self.conv1 = _conv1x1(c_in, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = _conv1x1(width, c_out)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(_conv1x1(c_in, c_out, stride), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """A residual network: a stem, four stages of blocks, global average pooling, a classifier.

    Parameters
    ----------
    block : BasicBlock or Bottleneck
        The block type.
    layers : sequence of int
        Blocks per stage, e.g. ``(3, 4, 6, 3)`` for ResNet-50; each at most ``MAX_BLOCKS``
        (1_000).
    num_classes : int
        Outputs of the classifier, at most ``MAX_LAYER_WIDTH`` (65_536).
    in_channels : int
        Channels of the input images (3 for RGB, 1 for greyscale), at most
        ``MAX_LAYER_WIDTH``.
    width : int
        Channels of the first stage (64 in the paper); stage *i* has ``width · 2**i``, and a
        block of the last stage puts out ``width · 2**(len(layers) - 1)`` times the block's
        expansion (1 or 4) channels, at most ``MAX_LAYER_WIDTH``.
    small_input : bool
        For images of 8–32 pixels: a 3×3 stride-1 stem without max-pooling instead of the
        7×7 stride-2 stem and 3×3 max-pool that shrink a 224×224 image four times.
    """

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        layers: Sequence[int],
        *,
        num_classes: int = 1000,
        in_channels: int = 3,
        width: int = 64,
        small_input: bool = False,
    ):
        super().__init__()
        if not (isinstance(block, type) and issubclass(block, (BasicBlock, Bottleneck))):
            raise wrong_type("block", block, "BasicBlock or Bottleneck (the class)")
        if (
            not isinstance(layers, Sequence)
            or isinstance(layers, str)
            or any(isinstance(n, bool) or not isinstance(n, int) for n in layers)
        ):
            raise wrong_type("layers", layers, "a non-empty sequence of positive ints")
        if len(layers) == 0 or any(n < 1 for n in layers):
            raise ValueError(f"layers={layers!r} must be a non-empty sequence of positive ints")
        if max(layers) > MAX_BLOCKS:
            raise ValueError(
                f"layers={layers!r:.80} has a stage of more than {MAX_BLOCKS:_} blocks; at "
                f"most {MAX_BLOCKS:_} blocks per stage"
            )
        _layer_size("num_classes", num_classes)
        _layer_size("in_channels", in_channels)
        _layer_size("width", width)
        flag("small_input", small_input)
        # the last stage's blocks put out width * 2**(stages - 1) * expansion channels
        widest = width * block.expansion
        if len(layers) > MAX_LAYER_WIDTH.bit_length() or widest << (len(layers) - 1) > (
            MAX_LAYER_WIDTH
        ):
            raise ValueError(
                f"width={width!r} with {len(layers)} stage{'s' * (len(layers) != 1)} in "
                f"layers: the last stage would have width x 2**{len(layers) - 1} x "
                f"{block.expansion} channels, more than {MAX_LAYER_WIDTH:_} (features of one "
                "layer); use fewer stages or a smaller width"
            )
        if small_input:
            self.stem = nn.Sequential(
                _conv3x3(in_channels, width), nn.BatchNorm2d(width), nn.ReLU(inplace=True)
            )
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, stride=2, padding=1),
            )
        stages, c_in = [], width
        for i, n_blocks in enumerate(layers):
            stage_width = width * 2**i
            stride = 1 if i == 0 else 2
            blocks = []
            for j in range(n_blocks):
                blocks.append(block(c_in, stage_width, stride if j == 0 else 1))
                c_in = stage_width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet18(num_classes: int = 1000, in_channels: int = 3) -> ResNet:
    """ResNet-18 (He et al., 2015): 11,689,512 parameters with 1,000 classes.

    Examples
    --------
    >>> count_parameters(resnet18())
    11689512
    """
    return ResNet(BasicBlock, (2, 2, 2, 2), num_classes=num_classes, in_channels=in_channels)


def resnet50(num_classes: int = 1000, in_channels: int = 3) -> ResNet:
    """ResNet-50 v1.5 as torchvision builds it: 25,557,032 parameters with 1,000 classes.

    Examples
    --------
    >>> count_parameters(resnet50())
    25557032
    """
    return ResNet(Bottleneck, (3, 4, 6, 3), num_classes=num_classes, in_channels=in_channels)


def small_resnet(
    num_classes: int = 10,
    in_channels: int = 1,
    width: int = 16,
    layers: Sequence[int] = (1, 1, 1),
) -> ResNet:
    """A narrow, shallow ResNet of basic blocks for 8×8 to 32×32 images.

    The defaults (three stages of one block, 16/32/64 channels) suit scikit-learn's 8×8
    digits; the structure (residual blocks, batch norm, global pooling) is ResNet-50's.

    Examples
    --------
    >>> import torch
    >>> model = small_resnet()
    >>> model(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 10])
    """
    return ResNet(
        BasicBlock,
        tuple(layers) if isinstance(layers, Sequence) and not isinstance(layers, str) else layers,
        num_classes=num_classes,
        in_channels=in_channels,
        width=width,
        small_input=True,
    )


# --------------------------------------------------------------------------- transformer


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of a BERT-style encoder.

    Attributes
    ----------
    vocab_size : int
        Tokens in the vocabulary.
    hidden : int
        Model width (d_model).
    layers : int
        Transformer blocks.
    heads : int
        Attention heads; must divide ``hidden``.
    intermediate : int
        Width of each block's feed-forward layer (4 × hidden in BERT).
    max_positions : int
        Longest sequence (learned position embeddings).
    type_vocab_size : int
        Segment ("token type") embeddings; BERT has 2, the course's small models 0.
    pooler : bool
        BERT's pooler: a hidden × hidden layer on the first token, for sentence tasks.
    pre_ln : bool
        Layer norm before each sub-layer (GPT-2 and most later models) instead of after it
        (the original Transformer and BERT). Same parameter count.
    """

    vocab_size: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    type_vocab_size: int = 0
    pooler: bool = False
    pre_ln: bool = False

    def __post_init__(self):
        for name in ("vocab_size", "hidden", "layers", "heads", "intermediate", "max_positions"):
            positive_int(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"heads={self.heads} must divide hidden={self.hidden}")
        non_negative_int("type_vocab_size", self.type_vocab_size)
        flag("pooler", self.pooler)
        flag("pre_ln", self.pre_ln)


#: BERT-base (Devlin et al., 2019): L=12, H=768, A=12, WordPiece vocabulary of 30,522.
BERT_BASE = TransformerConfig(
    vocab_size=30522,
    hidden=768,
    layers=12,
    heads=12,
    intermediate=3072,
    max_positions=512,
    type_vocab_size=2,
    pooler=True,
)


def transformer_param_count(config: TransformerConfig, mlm_head: bool = False) -> dict[str, int]:
    """Parameters of a :class:`TransformerEncoder`, by part, in closed form.

    With ``V`` = vocabulary, ``P`` = positions, ``T`` = token types, ``H`` = hidden,
    ``I`` = intermediate and ``L`` = layers:

    - embeddings: ``(V + P + T)·H`` plus a layer norm ``2H``;
    - one block: attention ``4(H² + H)`` (Q, K, V, output), feed-forward
      ``2HI + I + H``, two layer norms ``4H``;
    - pooler ``H² + H``; masked-LM head ``H² + H + 2H + V`` (its output matrix is the
      token embedding, shared; only its bias is new).

    Returns
    -------
    dict
        ``embeddings``, ``per_layer``, ``layers`` (all blocks), ``pooler``, ``mlm_head``,
        ``non_embedding`` (blocks and pooler: the N of the 6·N·D rule) and ``total``.

    Examples
    --------
    >>> counts = transformer_param_count(BERT_BASE)
    >>> counts["total"], counts["non_embedding"]
    (109482240, 85645056)
    """
    if not isinstance(config, TransformerConfig):
        raise wrong_type("config", config, "a TransformerConfig")
    flag("mlm_head", mlm_head)
    h, inter, n_layers = config.hidden, config.intermediate, config.layers
    embeddings = (config.vocab_size + config.max_positions + config.type_vocab_size) * h + 2 * h
    per_layer = 4 * (h * h + h) + (2 * h * inter + inter + h) + 4 * h
    pooler = h * h + h if config.pooler else 0
    head = h * h + h + 2 * h + config.vocab_size if mlm_head else 0
    layers = n_layers * per_layer
    return {
        "embeddings": embeddings,
        "per_layer": per_layer,
        "layers": layers,
        "pooler": pooler,
        "mlm_head": head,
        "non_embedding": layers + pooler,
        "total": embeddings + layers + pooler + head,
    }


class _Block(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        h = config.hidden
        self.attn = nn.MultiheadAttention(h, config.heads, batch_first=True)
        self.ln1 = nn.LayerNorm(h)
        self.ff = nn.Sequential(
            nn.Linear(h, config.intermediate), nn.GELU(), nn.Linear(config.intermediate, h)
        )
        self.ln2 = nn.LayerNorm(h)
        self.pre_ln = config.pre_ln

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None) -> torch.Tensor:
        if self.pre_ln:
            y = self.ln1(x)
            x = x + self.attn(y, y, y, key_padding_mask=pad_mask, need_weights=False)[0]
            return x + self.ff(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)[0])
        return self.ln2(x + self.ff(x))


class TransformerEncoder(nn.Module):
    """A BERT-style encoder with a masked-language-model head.

    ``forward(tokens)`` takes integer tokens of shape (batch, sequence) and returns logits
    over the vocabulary of shape (batch, sequence, vocab_size). The head's output layer
    shares its weight matrix with the token embedding, as BERT's does.

    Parameters
    ----------
    config : TransformerConfig
    mlm_head : bool
        Add the masked-LM head (without it, ``forward`` returns the hidden states).

    Examples
    --------
    >>> import torch
    >>> cfg = TransformerConfig(vocab_size=50, hidden=32, layers=2, heads=4,
    ...                         intermediate=64, max_positions=16)
    >>> model = TransformerEncoder(cfg)
    >>> model(torch.zeros(3, 10, dtype=torch.long)).shape
    torch.Size([3, 10, 50])
    >>> count_parameters(model) == transformer_param_count(cfg, mlm_head=True)["total"]
    True
    """

    def __init__(self, config: TransformerConfig, mlm_head: bool = True):
        if not isinstance(config, TransformerConfig):
            raise wrong_type("config", config, "a TransformerConfig")
        flag("mlm_head", mlm_head)
        super().__init__()
        h = config.hidden
        self.config = config
        self.tokens = nn.Embedding(config.vocab_size, h)
        self.positions = nn.Embedding(config.max_positions, h)
        self.types = nn.Embedding(config.type_vocab_size, h) if config.type_vocab_size else None
        self.ln = nn.LayerNorm(h)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.layers))
        self.pooler = nn.Linear(h, h) if config.pooler else None
        self.head = None
        if mlm_head:
            self.head = nn.Sequential(nn.Linear(h, h), nn.GELU(), nn.LayerNorm(h))
            self.head_bias = nn.Parameter(torch.zeros(config.vocab_size))
        for module in self.modules():  # BERT's initialisation: N(0, 0.02) weights, zero biases
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.MultiheadAttention):
                nn.init.normal_(module.in_proj_weight, std=0.02)

    def forward(self, tokens: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (with the MLM head) or hidden states; ``pad_mask`` is True at padding."""
        seq = tokens.shape[1]
        if seq > self.config.max_positions:
            raise ValueError(
                f"sequence length {seq} exceeds max_positions={self.config.max_positions}"
            )
        pos = torch.arange(seq, device=tokens.device)
        x = self.tokens(tokens) + self.positions(pos)
        if self.types is not None:
            x = x + self.types(torch.zeros_like(tokens))
        x = self.ln(x)
        for block in self.blocks:
            x = block(x, pad_mask)
        if self.head is None:
            return x
        return self.head(x) @ self.tokens.weight.T + self.head_bias


# --------------------------------------------------------------------------- policy


class PolicyNet(nn.Module):
    """A two-layer policy network for a board game: board in, logits over moves out.

    Illegal moves get a logit of −∞, so a softmax never picks them.

    Parameters
    ----------
    n_inputs : int
        Length of the board encoding.
    n_actions : int
        Number of moves (cells).
    hidden : int
        Width of the hidden layer.

    Each is a positive int of at most ``MAX_LAYER_WIDTH`` (65_536).

    Examples
    --------
    >>> import torch
    >>> net = PolicyNet(27, 9)
    >>> legal = torch.tensor([[True] * 8 + [False]])
    >>> logits = net(torch.zeros(1, 27), legal)
    >>> bool(torch.isinf(logits[0, 8])), bool(torch.isfinite(logits[0, :8]).all())
    (True, True)
    """

    def __init__(self, n_inputs: int, n_actions: int, hidden: int = 64):
        super().__init__()
        for name, value in (("n_inputs", n_inputs), ("n_actions", n_actions), ("hidden", hidden)):
            _layer_size(name, value)
        self.net = nn.Sequential(
            nn.Linear(n_inputs, hidden), nn.ReLU(), nn.Linear(hidden, n_actions)
        )

    def forward(self, obs: torch.Tensor, legal: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.net(obs)
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        return logits


def small_cnn(in_channels: int = 3, n_classes: int = 10) -> nn.Sequential:
    """Two 3×3 convolutions (32 and 64 channels) with ReLUs, global average pooling and a
    linear classifier: tiny weights, activations the size of the image times the channels.

    Examples
    --------
    >>> net = small_cnn()
    >>> net(torch.zeros(2, 3, 32, 32)).shape, count_parameters(net)
    (torch.Size([2, 10]), 20042)
    """
    positive_int("in_channels", in_channels)
    positive_int("n_classes", n_classes)
    return nn.Sequential(
        nn.Conv2d(in_channels, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, n_classes),
    )


class TinyEncoder(nn.Module):
    """Transformer encoder layers (PyTorch's, dropout 0.1) over token ids, mean-pooled into
    ``n_classes`` scores.

    Parameters
    ----------
    d : int
        Model width; 4 heads and a feed-forward width of ``4 * d``.
    vocab : int
        Token ids run from 0 to ``vocab - 1``.
    layers : int
        Encoder layers.
    n_classes : int
        Scores per sequence.

    Examples
    --------
    >>> net = TinyEncoder()
    >>> net(torch.zeros(2, 64, dtype=torch.long)).shape
    torch.Size([2, 10])
    """

    def __init__(self, d: int = 128, vocab: int = 1000, layers: int = 2, n_classes: int = 10):
        super().__init__()
        positive_int("d", d)
        self.vocab = positive_int("vocab", vocab)
        positive_int("layers", layers)
        positive_int("n_classes", n_classes)
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.emb(tokens)).mean(1))
