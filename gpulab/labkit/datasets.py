"""A synthetic dataset whose samples can be made slow to load, for input-pipeline experiments.

Real datasets spend time per sample reading files and decoding them; when that is slower
than the model, the accelerator waits. :class:`SyntheticDataset` makes the delay explicit
(``load_s`` seconds of waiting per sample, standing in for storage or network latency), so a
lab can starve the training loop on purpose and then fix it with ``DataLoader`` workers.
It lives in the package, not in a notebook, so worker processes can import it on every
platform.

See also the chapter "Mini-batches" (``book/minibatches.md``) and its lab.
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real

from gpulab._checks import (
    MAX_ARRAY_BYTES,
    MAX_RUN_TIME_S,
    MAX_SAMPLES,
    MAX_SEED,
    at_most,
    non_negative_int,
    non_negative_number,
    positive_int,
    wrong_type,
)

__all__ = ["SyntheticDataset"]


class SyntheticDataset:
    """``n`` random samples of ``shape`` with integer labels, the same every time.

    Sample ``i`` is drawn from a generator seeded with ``seed + i``, so any worker process
    produces the same sample for the same index. The label is a fixed function of the sample
    (the sign pattern of its first features), so a model can learn it.

    Parameters
    ----------
    n : int
        Number of samples, at most ``MAX_SAMPLES`` (10**12).
    shape : tuple of int
        Shape of one input sample, of float32 elements: at most ``MAX_ARRAY_BYTES`` (64 GiB).
    n_classes : int
        Labels are in ``range(n_classes)`` (at least 2).
    load_s : float
        Seconds each ``__getitem__`` waits before returning, simulating slow storage; 0 for
        none. The wait does not use the CPU, like waiting for a disk or a network. At most
        ``MAX_RUN_TIME_S`` (600 s).
    seed : int
        Base seed, from 0 to 2**32 - 1.

    Examples
    --------
    >>> ds = SyntheticDataset(10, (3, 4), n_classes=5)
    >>> x, y = ds[2]
    >>> tuple(x.shape), 0 <= int(y) < 5, len(ds)
    ((3, 4), True, 10)
    >>> bool((ds[2][0] == x).all())
    True
    """

    def __init__(
        self, n: int, shape: tuple[int, ...], n_classes: int = 10, load_s: float = 0.0, seed=0
    ):
        n = at_most("n", positive_int("n", n), MAX_SAMPLES, "samples of a dataset")
        if not isinstance(shape, (tuple, list)) or not all(
            isinstance(size, Real) and not isinstance(size, bool) for size in shape
        ):
            raise wrong_type("shape", shape, "a tuple of positive integers")
        if not shape or not all(isinstance(size, Integral) and size >= 1 for size in shape):
            raise ValueError(f"shape={shape!r} must be a non-empty tuple of positive integers")
        sample_bytes = 4 * math.prod(shape)  # float32
        if sample_bytes > MAX_ARRAY_BYTES:
            raise ValueError(
                f"shape={shape!r} is {sample_bytes} bytes of float32 per sample; at most "
                f"{MAX_ARRAY_BYTES} (64 GiB)"
            )
        n_classes = positive_int("n_classes", n_classes)
        if n_classes < 2:
            raise ValueError(f"n_classes={n_classes!r} must be an integer of at least 2")
        self.n, self.shape, self.n_classes = n, tuple(int(size) for size in shape), n_classes
        self.load_s = non_negative_number("load_s", load_s)
        at_most("load_s", self.load_s, MAX_RUN_TIME_S, "a sample's wait", unit="s")
        self.seed = at_most("seed", non_negative_int("seed", seed), MAX_SEED, "a seed: 2**32 - 1")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        import torch

        if isinstance(index, bool) or not isinstance(index, Integral):
            raise TypeError(f"index={index!r} must be an int")
        if not 0 <= index < self.n:
            raise IndexError(f"index={index} is outside range({self.n})")
        if self.load_s:
            time.sleep(self.load_s)
        generator = torch.Generator().manual_seed(self.seed + index)
        x = torch.randn(self.shape, generator=generator)
        bits = (x.flatten()[:8] > 0).long()
        y = int((bits * (2 ** torch.arange(len(bits)))).sum()) % self.n_classes
        return x, torch.tensor(y)
