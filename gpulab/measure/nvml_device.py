"""Which NVML device is CUDA GPU ``i``: matched by UUID or PCI bus id, not by index.

CUDA numbers the GPUs a process may see (``CUDA_VISIBLE_DEVICES`` picks and reorders them,
and by default CUDA lists the fastest first), while NVML numbers every GPU on the machine in
PCI order. With ``CUDA_VISIBLE_DEVICES=3`` CUDA's GPU 0 is NVML's GPU 3, so reading NVML's
GPU 0 would measure another GPU's power. The two agree on each GPU's **UUID** and **PCI bus
id**, which torch reports in its device properties (``uuid``; ``pci_domain_id``,
``pci_bus_id``, ``pci_device_id`` in newer releases) and NVML looks up
(``nvmlDeviceGetHandleByUUID``, ``nvmlDeviceGetHandleByPciBusId``). The index is used only
where it is known to mean the same GPU: ``CUDA_VISIBLE_DEVICES`` unset and either one GPU
on the machine or ``CUDA_DEVICE_ORDER=PCI_BUS_ID``.

See also :mod:`gpulab.measure.energy`, which reads the GPU's energy through the handle found
here.
"""

from __future__ import annotations

import os

__all__ = ["cuda_ids", "nvml_handle"]


def cuda_ids(index: int) -> dict[str, str]:
    """The UUID (``"GPU-..."``, as NVML writes it) and PCI bus id (``"00000000:3B:00.0"``) of
    CUDA GPU ``index``, as far as torch reports them; an empty dict without CUDA.

    >>> cuda_ids(0) if not __import__("torch").cuda.is_available() else {}
    {}
    """
    try:
        import torch

        props = torch.cuda.get_device_properties(index)
    except Exception:  # no torch, no CUDA, no such GPU: nothing to match by
        return {}
    ids = {}
    uuid = getattr(props, "uuid", None)
    if uuid is not None and str(uuid).strip():
        text = str(uuid).strip()
        ids["uuid"] = text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"
    parts = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
    if all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
        domain, bus, device = parts
        ids["pci_bus_id"] = f"{domain:08X}:{bus:02X}:{device:02X}.0"
    return ids


def _index_is_safe(nvml) -> tuple[bool, str]:
    """Whether NVML's index ``i`` is CUDA's GPU ``i`` here, and why (one clause)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return False, "CUDA_VISIBLE_DEVICES renumbers the GPUs CUDA sees"
    if os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID":
        return True, "CUDA_DEVICE_ORDER=PCI_BUS_ID numbers the GPUs as NVML does"
    try:
        count = nvml.nvmlDeviceGetCount()
    except Exception:  # a stand-in or an old binding without it
        count = None
    if count == 1:
        return True, "the machine has one GPU"
    if count is None:
        return True, "CUDA_VISIBLE_DEVICES is unset"
    return False, f"CUDA lists the machine's {count} GPUs fastest first, NVML in PCI order"


def nvml_handle(nvml, index: int, ids: dict[str, str] | None = None):
    """NVML's handle of CUDA GPU ``index``, and how it was matched.

    Parameters
    ----------
    nvml : module
        ``pynvml`` (or a stand-in with the same functions), already initialised.
    index : int
        The CUDA device index (as in ``"cuda:1"``).
    ids : dict, optional
        The GPU's ids as :func:`cuda_ids` gives them; default: asked from torch.

    Returns
    -------
    tuple
        ``(handle, how)``: ``how`` is ``"by UUID"``, ``"by PCI bus id"`` or ``"by index
        (<why the index is safe>)"``.

    Raises
    ------
    LookupError
        When no match can be trusted: torch reports neither id (or NVML knows neither) and
        the index may name another GPU; the message says why.

    Examples
    --------
    >>> class Nvml:  # a machine with four GPUs, of which this process sees the fourth
    ...     def nvmlDeviceGetHandleByUUID(self, uuid): return ("handle", uuid)
    >>> nvml_handle(Nvml(), 0, ids={"uuid": "GPU-4c1f"})  # the ids torch reports for cuda:0
    (('handle', 'GPU-4c1f'), 'by UUID')
    """
    ids = cuda_ids(index) if ids is None else ids
    tried = []
    lookups = (
        ("uuid", "nvmlDeviceGetHandleByUUID", "by UUID"),
        ("pci_bus_id", "nvmlDeviceGetHandleByPciBusId", "by PCI bus id"),
    )
    for key, function, how in lookups:
        if key not in ids:
            continue
        lookup = getattr(nvml, function, None)
        if lookup is None:
            tried.append(f"this NVML binding has no {function}")
            continue
        try:
            return lookup(ids[key]), how
        except Exception as exc:  # noqa: BLE001 - the next way of matching may work
            tried.append(f"NVML does not know {key.replace('_', ' ')} {ids[key]} ({exc})")
    if not ids:
        tried.append("torch reports neither the GPU's UUID nor its PCI bus id")
    safe, why = _index_is_safe(nvml)
    if safe:
        return nvml.nvmlDeviceGetHandleByIndex(index), f"by index ({why})"
    raise LookupError(
        f"cannot tell which NVML device is CUDA GPU {index}: {'; '.join(tried)}, and "
        f"{why}, so NVML's GPU {index} may be another one"
    )
