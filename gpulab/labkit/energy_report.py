"""The energy lab's sentences: whether the GPU's energy can be read, and the host-included bound.

The energy lab measures (or estimates) a small job's energy and predicts a large one's from
the registry's rated powers. What it says about them is assembled here, from the numbers the
lab computed in sight, so that a lab cell shows the measurement and one call.

Examples
--------
>>> from gpulab.labkit.energy_report import gpu_energy_possible
>>> gpu_energy_possible("cpu")  # a CPU always has at least an estimate
True
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.labkit.claims import Claim, claim

__all__ = ["explain_estimate", "gpu_energy_possible", "host_included_claim"]

_J_PER_KWH = 3.6e6


def gpu_energy_possible(kind: str, *, nvml=None) -> bool:
    """Whether the energy of the device of kind ``kind`` can be measured or estimated here.

    On a CUDA GPU with no NVML and no registry entry (an H100 NVL, a GH200) neither works:
    this prints one sentence saying so, and the lab goes on with the CPU's figure. ``nvml``
    stands in for the ``pynvml`` module (tests pass a fake).

    Examples
    --------
    >>> gpu_energy_possible("mps")
    True
    """
    if kind != "cuda":
        return True
    from gpulab.measure.energy import gpu_energy_problem

    problem = gpu_energy_problem("cuda", nvml=nvml)
    if problem:
        print(f"The GPU's energy is neither measured nor estimated here: {problem}. The lab "
              "goes on with the CPU's estimate.")
    return problem is None


def explain_estimate(meter) -> None:
    """Say what to do when a GPU's energy was estimated rather than read from NVML.

    ``meter`` is :func:`gl.measure_energy`'s result; nothing is printed for a measurement.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> explain_estimate(SimpleNamespace(is_estimate=False))
    >>> explain_estimate(SimpleNamespace(is_estimate=True))  # doctest: +ELLIPSIS
    The GPU's energy was estimated, not measured (the reason is printed above). If NVML is ...
    """
    if meter.is_estimate:
        print("The GPU's energy was estimated, not measured (the reason is printed above). If "
              "NVML is missing, as on some Colab runtimes: run  %pip install nvidia-ml-py  in "
              "a new cell, then rerun this one.")


def host_included_claim(
    cpu: tuple, gpus: Sequence[tuple], *, cpu_label: str | None = None
) -> Claim:
    """Give every GPU a whole CPU socket as its host, and compare the energy with the CPU's.

    A GPU does not run alone: a host CPU feeds it. As a deliberately pessimistic bound, each
    GPU gets a whole socket of the reference CPU at its TDP for the whole run (servers share
    one socket between two to four GPUs, and a busy GPU's host is rarely at TDP).

    Parameters
    ----------
    cpu : tuple
        ``(name, watts, seconds, kWh)`` of the reference CPU, which also serves as the host.
    gpus : sequence of tuple
        ``(name, watts, seconds, kWh)`` of each GPU, for the same job.
    cpu_label : str, optional
        What the sentences call the CPU (default: its name).

    Returns
    -------
    Claim
        The sentence, refused unless every GPU, host included, needs under half the CPU's
        energy.

    Examples
    --------
    >>> xeon = ("Xeon", 270.0, 3600.0 * 333.6, 90.1)
    >>> t4 = ("T4", 70.0, 3600.0 * 30.2, 2.1)
    >>> print(host_included_claim(xeon, [t4], cpu_label="Xeon"))  # doctest: +NORMALIZE_WHITESPACE
    T4: 0.3x the Xeon's power, 0.023x its energy; with a 270 W host socket: 10.3 kWh = 0.114x
    **Predicted here:** even with a whole 270 W host socket beside every GPU, the GPU that uses
    the most energy (T4) needs 10.3 kWh, 9x less than the Xeon's 90 kWh.
    """
    cpu_name, host_w, _, cpu_kwh = cpu
    cpu_name = cpu_name if cpu_label is None else cpu_label
    if not gpus:
        raise ValueError("gpus=[] must name at least one GPU's (name, watts, seconds, kWh)")
    with_host = {}
    for name, watts, seconds, kwh in gpus:
        with_host[name] = (watts + host_w) * seconds / _J_PER_KWH
        print(f"{name}: {watts / host_w:.1f}x the {cpu_name}'s power, {kwh / cpu_kwh:.3f}x its "
              f"energy; with a {host_w:.0f} W host socket: {with_host[name]:.1f} kWh = "
              f"{with_host[name] / cpu_kwh:.3f}x")
    worst = max(with_host, key=with_host.get)
    return claim(
        f"**Predicted here:** even with a whole {host_w:.0f} W host socket beside every GPU, "
        f"the GPU that uses the most energy ({worst}) needs {with_host[worst]:.1f} kWh, "
        f"{cpu_kwh / with_host[worst]:.0f}x less than the {cpu_name}'s {cpu_kwh:.0f} kWh.",
        all(kwh < cpu_kwh / 2 for kwh in with_host.values()),
        reason="the GPU side, host included, below half the CPU's energy",
    )
