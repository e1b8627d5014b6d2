"""Global-memory loads of a tiled matrix multiply, counted by walking the blocks."""

from __future__ import annotations

from gpulab._checks import positive_int

__all__ = ["tile_loads"]


def tile_loads(n: int, tile: int) -> dict:
    """Count the global-memory loads of each element of A and B in a tiled ``n × n`` matmul.

    Block ``(i, j)`` computes the ``tile × tile`` output tile ``C[i, j]``; for each ``k`` it
    loads tile ``A[i, k]`` and ``B[k, j]`` into shared memory once and uses each loaded
    element ``tile`` times. The counts are made by walking the blocks, not from a formula.

    Returns
    -------
    dict
        ``a_loads``, ``b_loads`` (n × n arrays of load counts; ``n / tile`` everywhere),
        ``reuse_per_load`` (``tile``), ``naive_loads`` (``n`` per element without tiling).

    Examples
    --------
    >>> import gpulab as gl
    >>> counts = tile_loads(8, 4)
    >>> int(counts["a_loads"].max()), int(counts["b_loads"].min()), counts["reuse_per_load"]
    (2, 2, 4)
    """
    n = positive_int("n", n)
    tile = positive_int("tile", tile)
    if n % tile or n > 256:
        raise ValueError(f"tile={tile!r} must divide n={n!r}, and n be at most 256")
    import numpy as np

    t = n // tile
    a_loads = np.zeros((n, n), dtype=int)
    b_loads = np.zeros((n, n), dtype=int)
    for i in range(t):
        for j in range(t):
            for k in range(t):
                a_loads[i * tile : (i + 1) * tile, k * tile : (k + 1) * tile] += 1
                b_loads[k * tile : (k + 1) * tile, j * tile : (j + 1) * tile] += 1
    return {"a_loads": a_loads, "b_loads": b_loads, "reuse_per_load": tile, "naive_loads": n}
