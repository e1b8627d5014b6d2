"""Global-memory loads of a tiled matrix multiply, counted by walking the blocks."""

from __future__ import annotations

from gpulab._checks import positive_int

__all__ = ["tile_loads"]


def tile_loads(n: int, tile: int) -> dict:
    """Count the global-memory loads of each element of A and B in a tiled ``n × n`` matmul.

    The grid has ``ceil(n / tile)`` × ``ceil(n / tile)`` blocks. Block ``(i, j)`` computes
    the ``tile × tile`` output tile ``C[i, j]``; for each ``k`` it loads tile ``A[i, k]``
    and ``B[k, j]`` into shared memory once and uses each loaded element ``tile`` times.
    Where ``tile`` does not divide ``n`` the last tiles overhang the matrices; their
    elements outside them are zeros, not loads. The counts are made by walking the blocks,
    not from a formula: every element is loaded once per block of its row (A) or column (B)
    of blocks, ``ceil(n / tile)`` times, ``2 n² ceil(n / tile)`` loads in all, which is
    ``2 n³ / tile`` only when ``tile`` divides ``n``.

    Returns
    -------
    dict
        ``a_loads``, ``b_loads`` (n × n arrays of load counts; ``ceil(n / tile)``
        everywhere), ``global_loads`` (their sum), ``reuse_per_load`` (``tile``),
        ``naive_loads`` (``n`` per element without tiling).

    Examples
    --------
    >>> import gpulab as gl
    >>> counts = tile_loads(8, 4)
    >>> int(counts["a_loads"].max()), int(counts["b_loads"].min()), counts["reuse_per_load"]
    (2, 2, 4)
    >>> tile_loads(50, 16)["global_loads"]  # 2 * 50**2 * 4, not 2 * 50**3 / 16 = 15625
    20000
    """
    n = positive_int("n", n)
    tile = positive_int("tile", tile)
    if n > 256:
        raise ValueError(f"n={n!r} must be at most 256")
    import numpy as np

    t = -(-n // tile)
    a_loads = np.zeros((n, n), dtype=int)
    b_loads = np.zeros((n, n), dtype=int)
    for i in range(t):
        for j in range(t):
            for k in range(t):  # slices clip where a tile overhangs the edge
                a_loads[i * tile : (i + 1) * tile, k * tile : (k + 1) * tile] += 1
                b_loads[k * tile : (k + 1) * tile, j * tile : (j + 1) * tile] += 1
    return {
        "a_loads": a_loads,
        "b_loads": b_loads,
        "global_loads": int(a_loads.sum() + b_loads.sum()),
        "reuse_per_load": tile,
        "naive_loads": n,
    }
