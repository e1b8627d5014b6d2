"""Text the course itself provides, as tokens for a small masked language model.

The BERT case study trains on the book's own chapters (``book/*.md``) when the repository
is at hand, and on the gpulab package's source otherwise (always installed, e.g. on Colab),
so it needs no download. Tokens are characters: a tiny vocabulary that a small model
learns in seconds (BERT itself uses 30,522 WordPiece tokens).

See also the chapter "Case study: BERT-style language models" (``book/case_bert.md``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path

import torch

from gpulab._checks import fraction, positive_int, wrong_type
from gpulab._checks import path as check_path
from gpulab._checks import text as check_text

__all__ = ["CharVocab", "course_text", "mask_tokens"]

_SPECIALS = ("[PAD]", "[UNK]", "[MASK]")


def course_text(book: str | Path | None = None) -> tuple[str, str]:
    """The course's own text and a sentence saying where it came from.

    Parameters
    ----------
    book : path, optional
        Folder of chapter files (``*.md``). Default: ``book/`` next to the current folder
        or above it. Where there is none, the gpulab package's ``.py`` files are used.

    Returns
    -------
    text : str
    source : str
    """
    if book is not None:
        book = check_path("book", book)
    candidates = [book] if book is not None else [Path("book"), Path("../book")]
    for folder in candidates:
        files = sorted(folder.glob("*.md")) if folder.is_dir() else []
        if files:
            text = "\n".join(f.read_text(encoding="utf-8") for f in files)
            return text, f"{len(files)} chapter files in {folder}/"
    if book is not None:
        raise FileNotFoundError(f"book={str(book)!r} holds no chapter files (*.md)")
    package = Path(__file__).parent
    files = sorted(package.glob("*.py"))
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    return text, f"{len(files)} source files of the gpulab package (no book/ folder here)"


@dataclass(frozen=True)
class CharVocab:
    """Characters seen at least ``min_count`` times, after ``[PAD]``, ``[UNK]``, ``[MASK]``.

    Examples
    --------
    >>> vocab = CharVocab.build("abracadabra", min_count=2)
    >>> vocab.chars
    ('a', 'b', 'r')
    >>> vocab.encode("abc").tolist()       # 'c' is rare: unknown
    [3, 4, 1]
    """

    chars: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.chars, tuple) or not all(isinstance(c, str) for c in self.chars):
            raise wrong_type("chars", self.chars, "a tuple of single characters")
        if not all(len(c) == 1 for c in self.chars):
            raise ValueError(f"chars={self.chars!r} must be a tuple of single characters")
        if len(set(self.chars)) != len(self.chars):
            raise ValueError("chars must not repeat a character")

    @classmethod
    def build(cls, text: str, min_count: int = 1) -> CharVocab:
        """The vocabulary of ``text``: characters seen at least ``min_count`` times."""
        check_text("text", text)
        min_count = positive_int("min_count", min_count)
        counts = Counter(text)
        return cls(tuple(sorted(c for c, n in counts.items() if n >= min_count)))

    @property
    def size(self) -> int:
        return len(_SPECIALS) + len(self.chars)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def unk_id(self) -> int:
        return 1

    @property
    def mask_id(self) -> int:
        return 2

    def encode(self, text: str) -> torch.Tensor:
        check_text("text", text)
        index = {c: i + len(_SPECIALS) for i, c in enumerate(self.chars)}
        return torch.tensor([index.get(c, self.unk_id) for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """The characters of ``ids`` (token ids, e.g. a tensor); special tokens read ``_``."""
        names = _SPECIALS + self.chars
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        for i in values:
            if isinstance(i, bool) or not isinstance(i, Integral):
                raise TypeError(
                    f"ids holds {i!r}, a {type(i).__name__}; token ids are ints from 0 to "
                    f"{len(names) - 1}"
                )
            if not 0 <= i < len(names):
                raise ValueError(f"ids holds {i!r}; token ids are ints from 0 to {len(names) - 1}")
        return "".join(names[i] if i >= len(_SPECIALS) else "_" for i in values)


def mask_tokens(
    tokens: torch.Tensor,
    vocab: CharVocab,
    *,
    rate: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: pick ``rate`` of the tokens to predict; of those, 80% become
    ``[MASK]``, 10% a random token and 10% stay as they are.

    Returns
    -------
    inputs : tensor
        The tokens with the masking applied.
    targets : tensor
        The original token where one must be predicted, −100 elsewhere (ignored by
        :func:`torch.nn.functional.cross_entropy`).

    Examples
    --------
    >>> vocab = CharVocab.build("hello world")
    >>> tokens = vocab.encode("hello world" * 20)
    >>> inputs, targets = mask_tokens(tokens, vocab, generator=torch.Generator().manual_seed(0))
    >>> bool(((targets == -100) == (inputs == tokens)).float().mean() > 0.9)
    True
    """
    rate = fraction("rate", rate, allow_zero=False, allow_one=False)
    if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point():
        raise TypeError(
            f"tokens must be an integer tensor, as CharVocab.encode returns, not "
            f"{tokens.dtype if isinstance(tokens, torch.Tensor) else type(tokens).__name__}"
        )
    if not isinstance(vocab, CharVocab):
        raise wrong_type("vocab", vocab, "a CharVocab")
    chosen = torch.rand(tokens.shape, generator=generator) < rate
    targets = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    roll = torch.rand(tokens.shape, generator=generator)
    random_ids = torch.randint(3, vocab.size, tokens.shape, generator=generator)
    inputs = torch.where(chosen & (roll < 0.8), torch.full_like(tokens, vocab.mask_id), tokens)
    inputs = torch.where(chosen & (roll >= 0.8) & (roll < 0.9), random_ids, inputs)
    return inputs, targets
