"""Profiling one step in a lab: what to record on this device, and where the trace goes.

See also the chapter *Frameworks*, ``notebooks/frameworks_lab`` and ``tests/test_lab_reports.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gpulab._checks import text
from gpulab.measure.device import torch_device

__all__ = ["TRACE_FOLDER", "profiler_activities", "save_chrome_trace"]

#: Traces go into this folder under the system's temporary folder.
TRACE_FOLDER = "gpulab_traces"


def profiler_activities(device=None) -> list:
    """``torch.profiler`` activities for ``device``: the CPU's operators, and on a CUDA GPU
    its kernels too.

    Examples
    --------
    >>> [a.name for a in profiler_activities("cpu")]
    ['CPU']
    """
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU]
    if torch_device(device).type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    return activities


def save_chrome_trace(prof, name: str) -> Path:
    """Write ``prof``'s Chrome trace (a timeline Perfetto or ``chrome://tracing`` opens) to
    ``<temporary folder>/gpulab_traces/<name>``, print where and its size, return the path.

    Parameters
    ----------
    prof : torch.profiler.profile
        A finished profile.
    name : str
        The file's name, ending in ``.json``.
    """
    text("name", name)
    if not name.endswith(".json") or Path(name).name != name:
        raise ValueError(f"name={name!r} must be a file name ending in .json")
    if not hasattr(prof, "export_chrome_trace"):
        raise TypeError(f"prof={prof!r} must be a torch.profiler.profile")
    trace = Path(tempfile.gettempdir()) / TRACE_FOLDER / name
    trace.parent.mkdir(exist_ok=True)
    prof.export_chrome_trace(str(trace))
    print(f"Trace written to {trace} ({trace.stat().st_size / 1024:.0f} KiB).")
    return trace
