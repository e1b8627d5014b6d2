"""An interactive roofline: pick a device from the registry, a precision and a kernel's
arithmetic intensity; see the attainable FLOP/s, what bounds it, and the plot.

ipywidgets is imported only when the explorer is built, so the rest of gpulab works
without a notebook front end.

See also the chapter "Memory bandwidth" (``book/memory_bandwidth.md``) and its lab.
"""

from __future__ import annotations

from gpulab.roofline import RooflinePoint, plot_roofline, roofline_readout
from gpulab.specs import DTYPES, list_specs

__all__ = ["roofline_explorer"]


def _devices() -> list[str]:
    return [s.name for s in list_specs() if s.memory_bandwidth and s.peak_flops]


def _show(device: str, dtype: str, intensity: float) -> None:
    """Print the readout and draw the roofline with one hollow point (the prediction)."""
    import matplotlib.pyplot as plt

    try:
        print(roofline_readout(device, intensity, precision=dtype))
    except ValueError as exc:  # the datasheet has no figure for this precision
        print(f"{exc}. Choose another precision.")
        return
    # A kernel of this intensity; its FLOPs scale cancels out on the plot.
    kernel = RooflinePoint(f"{intensity:.3g} FLOP/byte", flops=intensity * 1e9, bytes_moved=1e9)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    plot_roofline(
        device,
        [kernel],
        precision=dtype,
        ax=ax,
        intensity_range=(min(0.01, intensity / 3), max(1e4, intensity * 3)),
    )
    ax.set_title(f"{device}: roofline from the datasheet (prediction)", fontsize=10)
    plt.show()


def roofline_explorer(device: str = "A100 80GB SXM4", dtype: str = "bf16", intensity: float = 10.0):
    """A widget: registry device × precision × intensity → attainable FLOP/s and the bound.

    Parameters
    ----------
    device : str
        Registry name to start with (any device with a bandwidth figure).
    dtype : str
        Precision to start with, one of :data:`gpulab.specs.DTYPES`.
    intensity : float
        Arithmetic intensity to start with, in FLOP/byte (0.01 to 10,000).

    Returns
    -------
    ipywidgets.interactive
        Display it in a notebook. Readers of the static book see the output for the
        starting values.

    Examples
    --------
    >>> import gpulab as gl
    >>> w = gl.roofline_explorer("Tesla T4", "fp16", 4.0)  # doctest: +SKIP
    """
    try:
        import ipywidgets as widgets
    except ImportError as exc:
        raise ImportError(
            "the roofline explorer needs ipywidgets: pip install ipywidgets "
            "(gl.roofline_readout gives the same numbers without it)"
        ) from exc
    devices = _devices()
    if device not in devices:
        raise ValueError(
            f"device={device!r} is not a registry device with a bandwidth; "
            f"use one of {', '.join(devices)}"
        )
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not known; use one of {', '.join(DTYPES)}")
    if not 0.01 <= intensity <= 1e4:
        raise ValueError(f"intensity={intensity!r} must be between 0.01 and 10000 FLOP/byte")
    return widgets.interactive(
        _show,
        device=widgets.Dropdown(options=devices, value=device, description="Device"),
        dtype=widgets.Dropdown(options=list(DTYPES), value=dtype, description="Precision"),
        intensity=widgets.FloatLogSlider(
            value=intensity,
            base=10,
            min=-2,
            max=4,
            step=0.05,
            description="FLOP/byte",
            readout_format=".3g",
        ),
    )
