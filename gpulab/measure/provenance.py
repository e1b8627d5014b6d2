"""Where, when and with what a result was produced.

Every recorded lab output and every measurement the book shows carries this line, so a
reader can tell an H100 run from a laptop run.
"""

from __future__ import annotations

import datetime as _dt
import random

from gpulab._checks import MAX_SEED, at_most, non_negative_int, wrong_type

_REQUIRED = ("date", "device", "gpulab", "python")  # what provenance_line writes out

__all__ = ["provenance", "provenance_line", "seed_everything"]


def provenance(info=None) -> dict:
    """Device, software versions and the UTC date, as a plain dict (JSON-ready).

    Parameters
    ----------
    info : DeviceInfo, optional
        Use this instead of probing the machine.
    """
    from gpulab._version import __version__
    from gpulab.measure.device import DeviceInfo, detect_device

    if info is not None and not isinstance(info, DeviceInfo):
        raise wrong_type("info", info, "a DeviceInfo (gl.detect_device()) or None")
    info = detect_device() if info is None else info
    return {
        "device": info.summary(),
        "kind": info.kind,
        "name": info.name,
        "cpu": f"{info.cpu_model}, {info.cpu_cores} cores",
        "torch": info.torch_version,
        "torch_cuda": info.torch_cuda,
        "cupy": info.cupy_version,
        "driver": info.driver_version,
        "python": info.python_version,
        "gpulab": __version__,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
    }


def provenance_line(record: dict | None = None) -> str:
    """One sentence saying which device and software produced a set of outputs.

    Examples
    --------
    >>> import gpulab as gl
    >>> rec = {"date": "2026-01-01", "device": "Tesla T4 (cuda); torch 2.4.0",
    ...        "cupy": "13.3.0", "gpulab": "0.1.0", "python": "3.11.7"}
    >>> gl.provenance_line(rec).split("; ")[-2:]
    ['gpulab 0.1.0', 'Python 3.11.7.']
    """
    rec = provenance() if record is None else record
    if not isinstance(rec, dict):
        raise wrong_type("record", record, "a dict from gl.provenance() or None")
    missing = [key for key in _REQUIRED if key not in rec]
    if missing:
        raise ValueError(f"record={record!r} lacks {', '.join(missing)}; gl.provenance() has them")
    for key in _REQUIRED:
        if not isinstance(rec[key], str):
            raise wrong_type(f"record[{key!r}]", rec[key], "a str")
    cupy = rec.get("cupy") or "not installed"
    return (
        f"Outputs recorded on {rec['date']} on {rec['device']}; CuPy {cupy}; "
        f"gpulab {rec['gpulab']}; Python {rec['python']}."
    )


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and torch's random generators so lab outputs reproduce.

    ``seed`` is an integer from 0 to ``MAX_SEED`` (2**32 - 1, the range NumPy's global
    generator takes).
    """
    import numpy as np

    seed = at_most("seed", non_negative_int("seed", seed), MAX_SEED, "a seed: 2**32 - 1")
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
