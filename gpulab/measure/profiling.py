"""Where a profiled step's time went: its labelled regions, and its matrix multiplies.

``torch.profiler`` labels a block of code with ``record_function("name")``, and
``prof.key_averages()`` sums the profile into rows, one per name **and device type**. With
only CPU activity each label has one row. With CUDA activity on (``ProfilerActivity.CUDA``)
it has two: the CPU row, whose ``cpu_time_total`` is the time the host spent inside the
block, and a ``gpu_user_annotation`` row (``device_type`` CUDA) whose ``cpu_time_total`` is
0 and whose ``device_time_total`` spans the GPU kernels launched from the block's thread.
Code that keeps "the row of a label" keeps whichever comes last, on a GPU the one with no
CPU time. :func:`region_times` reads the rows by device type instead.

Which clock, for what:

* **A region's time** is the host's time inside it (the CPU row), on every device. It is
  the wall time the step spends there, waits for the GPU included, and it counts the
  backward pass: on a GPU the autograd engine launches the backward kernels from a thread
  of its own, outside the label's GPU row, so that row misses them
  (https://github.com/pytorch/pytorch/issues/144778).
* **The matrix multiplies' time** (``aten::mm``, ``aten::addmm``, ``aten::bmm``) is the
  time of the kernels they launched on a CUDA GPU (their ``self_device_time_total``),
  forward and backward: their host time there is only the time to launch them. On a CPU it
  is their own CPU time (``self_cpu_time_total``), which is the arithmetic.

Versions: torch before 2.4 names the device clocks ``cuda_time_total`` and
``self_cuda_time_total``; the ``device_time`` names came with the profiler's unification of
devices (https://github.com/pytorch/pytorch/pull/123247, April 2024), which deprecates the
``cuda`` ones with a ``FutureWarning``. :func:`region_times` reads the ``device`` name where
the row has it and the ``cuda`` one otherwise, so the ``torch>=2.1`` that ``pyproject.toml``
admits works, and a newer torch gives no warning.

See also the capstone lab (``notebooks/capstone_lab.ipynb``), which profiles a training
loop with this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpulab._checks import choice, non_negative_number, wrong_type
from gpulab.measure.device import torch_device

__all__ = ["MATMUL_OPS", "RegionTimes", "device_time_us", "region_times"]

#: The operators whose time is the matrix-multiply arithmetic of a step (the ones autocast
#: runs in 16 bits): ``nn.Linear`` calls ``aten::addmm`` (``aten::mm`` without a bias and in
#: the backward pass), batched products ``aten::bmm``.
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm")

#: How :attr:`RegionTimes.matmul_s` was measured: the host's time in the operators, or the
#: device time of the kernels they launched.
MATMUL_CLOCKS = ("host", "device")

_ROW_ATTRIBUTES = ("key", "device_type", "cpu_time_total", "self_cpu_time_total")


@dataclass(frozen=True)
class RegionTimes:
    """The time of each labelled region of a profile, and of its matrix multiplies.

    Returned by :func:`region_times`.

    Attributes
    ----------
    times_s : dict of str to float
        Seconds the host spent in each region, summed over its calls, in the order the
        labels were given.
    matmul_s : float
        Seconds of matrix multiplies (:data:`MATMUL_OPS`) in the profile.
    matmul_clock : {"host", "device"}
        ``"device"``: the time of the GPU kernels the matrix multiplies launched;
        ``"host"``: the operators' own time on the host (the arithmetic, on a CPU).

    Examples
    --------
    >>> t = RegionTimes({"load": 1.0, "compute": 3.0}, matmul_s=1.5, matmul_clock="host")
    >>> t.bottleneck, t.shares["compute"], t.matmul_share
    ('compute', 0.75, 0.375)
    """

    times_s: Mapping[str, float]
    matmul_s: float
    matmul_clock: str = "host"

    def __post_init__(self) -> None:
        times = self.times_s
        if not isinstance(times, Mapping) or not all(isinstance(k, str) for k in times):
            raise wrong_type("times_s", times, "a dict of region name (str) to seconds")
        if not times:
            raise ValueError("times_s={} must name at least one region")
        checked = {k: non_negative_number(f"times_s[{k!r}]", v) for k, v in times.items()}
        if sum(checked.values()) == 0:
            raise ValueError(f"times_s={times!r}: every region took 0 s, so none has a share")
        object.__setattr__(self, "times_s", checked)
        object.__setattr__(self, "matmul_s", non_negative_number("matmul_s", self.matmul_s))
        choice("matmul_clock", self.matmul_clock, MATMUL_CLOCKS)

    @property
    def total_s(self) -> float:
        """Seconds in all the regions together."""
        return sum(self.times_s.values())

    @property
    def shares(self) -> dict[str, float]:
        """Each region's fraction of :attr:`total_s` (they sum to 1)."""
        return {name: t / self.total_s for name, t in self.times_s.items()}

    @property
    def bottleneck(self) -> str:
        """The region with the largest share."""
        return max(self.times_s, key=self.times_s.get)

    @property
    def matmul_share(self) -> float:
        """Matrix-multiply seconds over :attr:`total_s`: the part 16-bit arithmetic speeds up."""
        return self.matmul_s / self.total_s


def device_time_us(row, total: str = "self_device_time_total") -> float:
    """A profiler row's device clock in microseconds, by its torch 2.4+ name or the older one.

    ``total`` is ``"self_device_time_total"`` or ``"device_time_total"``; a row from a torch
    older than 2.4 has the same clock as ``self_cuda_time_total`` / ``cuda_time_total``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> device_time_us(SimpleNamespace(self_device_time_total=30.0))  # torch 2.4 and later
    30.0
    >>> device_time_us(SimpleNamespace(self_cuda_time_total=30.0))  # torch 2.1 to 2.3
    30.0
    >>> device_time_us(SimpleNamespace(key="aten::mm"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: row=namespace(key='aten::mm') has neither self_device_time_total nor ...
    """
    choice("total", total, ("self_device_time_total", "device_time_total"))
    older = total.replace("device", "cuda")
    for name in (total, older):
        value = getattr(row, name, None)
        if value is not None:
            return float(value)
    raise TypeError(
        f"row={row!r} has neither {total} nor {older}: it is not a row of prof.key_averages()"
    )


def _checked_rows(rows) -> list:
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise wrong_type("rows", rows, "the rows of prof.key_averages() (a list of them)")
    found = list(rows)
    for i, row in enumerate(found):
        if not all(hasattr(row, a) for a in _ROW_ATTRIBUTES):
            raise wrong_type(f"rows[{i}]", row, "a row of prof.key_averages() (a FunctionEventAvg)")
    if not found:
        raise ValueError("rows=[] holds no rows: profile some work first")
    return found


def _checked_labels(labels) -> tuple[str, ...]:
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise wrong_type("labels", labels, "a list of record_function labels (str)")
    for label in labels:
        if not isinstance(label, str):
            raise wrong_type("labels", labels, "a list of record_function labels (str)")
    if not labels:
        raise ValueError("labels=[] must name at least one record_function label")
    if len(set(labels)) < len(labels):
        raise ValueError(f"labels={list(labels)!r} names a label twice")
    return tuple(labels)


def region_times(rows, labels: Sequence[str], *, device=None) -> RegionTimes:
    """Each labelled region's time and share of a profile, and its matrix multiplies' time.

    Reads the rows of ``prof.key_averages()`` by device type (see the module's docstring):
    a region's time is the host's time in its CPU row, whatever the device, and the
    matrix multiplies' time (:data:`MATMUL_OPS`) is the time of the kernels they launched
    on a CUDA GPU, their own CPU time elsewhere.

    Parameters
    ----------
    rows : list of FunctionEventAvg
        ``prof.key_averages()`` of a ``torch.profiler.profile`` run; on a CUDA GPU with
        ``activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]``.
    labels : list of str
        The ``record_function`` labels whose times to report: the parts of the step, each
        once, not nested in one another (their shares are of their sum).
    device : torch.device or str, optional
        Where the profiled work ran; default :func:`gpulab.best_device`.

    Returns
    -------
    RegionTimes
        ``times_s``, ``shares`` and ``bottleneck`` of the regions; ``matmul_s`` and
        ``matmul_share``.

    Raises
    ------
    TypeError
        For rows that are not profiler rows, labels that are not a list of str, or a bad
        device.
    ValueError
        For a label with no CPU row in the profile, regions that all took 0 s (nothing
        to share out), or a CUDA device whose profile holds no GPU time (profiled without
        ``ProfilerActivity.CUDA``).

    Examples
    --------
    >>> import torch
    >>> from torch.profiler import profile, record_function
    >>> a = torch.ones(64, 64)
    >>> with profile() as prof:
    ...     with record_function("matmul"):
    ...         b = a @ a
    >>> t = region_times(prof.key_averages(), ["matmul"], device="cpu")
    >>> t.bottleneck, t.shares, t.matmul_clock
    ('matmul', {'matmul': 1.0}, 'host')
    >>> region_times(prof.key_averages(), ["load"], device="cpu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: labels=['load']: 'load' has no CPU row in the profile; ...
    """
    import torch

    found = _checked_rows(rows)
    wanted = _checked_labels(labels)
    dev = torch_device(device)
    cpu = torch.autograd.DeviceType.CPU

    host_us = dict.fromkeys(wanted, 0.0)
    seen: set[str] = set()
    for row in found:
        if row.key in host_us and row.device_type == cpu:
            host_us[row.key] += row.cpu_time_total
            seen.add(row.key)
    missing = [label for label in wanted if label not in seen]
    if missing:
        raise ValueError(
            f"labels={list(wanted)!r}: {', '.join(map(repr, missing))} has no CPU row in the "
            "profile; name the regions exactly as in record_function(...)"
        )
    if sum(host_us.values()) == 0:
        raise ValueError(
            f"rows: every region of labels={list(wanted)!r} took 0 s of host time, so none "
            "has a share; profile with ProfilerActivity.CPU and run some work in them"
        )

    matmuls = [row for row in found if row.key in MATMUL_OPS and row.device_type == cpu]
    if dev.type == "cuda":
        if not any(
            row.device_type != cpu or device_time_us(row, "device_time_total") > 0 for row in found
        ):
            raise ValueError(
                f"device={device!r}: the rows hold no GPU time; profile with "
                "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"
            )
        matmul_us = sum(device_time_us(row) for row in matmuls)
        clock = "device"
    else:
        matmul_us = sum(row.self_cpu_time_total for row in matmuls)
        clock = "host"
    return RegionTimes({label: host_us[label] / 1e6 for label in wanted}, matmul_us / 1e6, clock)
