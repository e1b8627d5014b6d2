"""The caches of the device at hand, for sizing work that must fit in them or stream past.

A kernel timed on arrays that fit in a GPU's L2 measures the cache, not the memory; a large
copy measured to find the memory's bandwidth must be several times larger than it. The
figure comes from the driver where torch reports it, else from the registry's memory ladder
(``gpulab/data/memory_ladder.csv``, each row with its source).

See also the chapter "Memory bandwidth" (``book/memory_bandwidth.md``).
"""

from __future__ import annotations

__all__ = ["cache_bytes"]


def cache_bytes(device=None) -> int | None:
    """The last-level cache of ``device`` in bytes: a CUDA GPU's L2.

    What the driver reports (``L2_cache_size`` of torch's device properties), else the
    registry's memory ladder for that GPU (``gpulab/data/memory_ladder.csv``, with its
    source); None for a CPU or an Apple GPU, or where neither knows the figure. Labs size
    work that must stay in the cache, or stream past it, from this.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.measure.caches.cache_bytes("cpu") is None
    True
    """
    from gpulab.measure.device import torch_device

    dev = torch_device(device)
    if dev.type != "cuda":
        return None
    import torch

    props = torch.cuda.get_device_properties(dev)
    reported = getattr(props, "L2_cache_size", None)
    if isinstance(reported, int) and reported > 0:
        return reported
    from gpulab.hardware.memory_ladder import memory_ladder
    from gpulab.hardware.specs import find_spec

    spec = find_spec(props.name)
    try:
        levels = memory_ladder(spec) if spec is not None else []
    except ValueError:  # the ladder has no figures for this GPU
        levels = []
    sizes = [lv.capacity_bytes for lv in levels if lv.level.startswith("L2") and lv.capacity_bytes]
    return int(sizes[0]) if sizes else None
