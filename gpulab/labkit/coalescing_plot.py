"""The kernels lab's copy-pattern figure: counted sector efficiency, the T4's predicted
bandwidth, and this GPU's measured bandwidth where there is one.

See also the chapter *Kernels*, ``notebooks/kernels_lab`` and ``tests/test_lab_reports.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpulab._checks import fraction, non_negative_number, wrong_type
from gpulab.hardware.specs import resolve_spec
from gpulab.palette import COLORS

__all__ = ["plot_copy_patterns"]


def plot_copy_patterns(efficiency: Mapping[str, float], measured_gbs: Mapping[str, float] | None
                       = None, *, spec="T4"):
    """Bars of each pattern's counted sector efficiency; on a second axis the prediction
    ``spec``'s datasheet bandwidth × efficiency (labelled as one) and, where given, the
    bandwidth measured on this GPU.

    Parameters
    ----------
    efficiency : mapping
        Pattern name -> sector efficiency (useful bytes over bytes moved, 0 to 1), in the
        order the bars are drawn.
    measured_gbs : mapping, optional
        Pattern name -> GB/s of useful bytes measured here (every pattern of ``efficiency``).
    spec : str or DeviceSpec
        The GPU whose datasheet bandwidth the prediction uses.

    Returns
    -------
    matplotlib Figure

    Examples
    --------
    >>> fig = plot_copy_patterns({"stride 1": 1.0, "stride 2": 0.5})
    >>> [line.get_label() for line in fig.axes[1].lines]
    ['Tesla T4: datasheet × efficiency (prediction)']
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if not isinstance(efficiency, Mapping) or not efficiency:
        raise wrong_type("efficiency", efficiency, "a non-empty mapping pattern -> efficiency")
    for name, value in efficiency.items():
        fraction(f"efficiency[{name!r}]", value)
    measured_gbs = dict(measured_gbs or {})
    if measured_gbs and set(measured_gbs) != set(efficiency):
        raise ValueError(f"measured_gbs has patterns {sorted(measured_gbs)}; it needs every "
                         f"pattern of efficiency, {sorted(efficiency)}")
    for name, value in measured_gbs.items():
        non_negative_number(f"measured_gbs[{name!r}]", value)
    gpu = resolve_spec("spec", spec, kinds=("gpu",))
    names = list(efficiency)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.bar(x, [efficiency[k] for k in names], color=COLORS["gpu"], zorder=3,
           label="sector efficiency (counted)")
    ax.set_xticks(x, names)
    ax.set_ylabel("sector efficiency (counted)")
    ax.set_ylim(0, 1.1)
    ax2 = ax.twinx()
    ax2.plot(x, [gpu.memory_bandwidth / 1e9 * efficiency[k] for k in names], "s--",
             color=COLORS["prediction"], label=f"{gpu.name}: datasheet × efficiency (prediction)")
    if measured_gbs:
        ax2.plot(x, [measured_gbs[k] for k in names], "o-", color="black",
                 label="this GPU (measured)")
    ax2.set_ylabel("GB/s")
    ax2.set_ylim(0, None)
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="upper right")
    ax.set_title("Copy patterns: counted sectors, predicted and measured bandwidth")
    fig.tight_layout()
    return fig
