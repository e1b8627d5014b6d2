"""Facts about hardware, with their sources: data and look-ups only, no measuring.

* :mod:`~gpulab.hardware.specs`: the datasheet registry (:class:`DeviceSpec`,
  :func:`get_spec`, :func:`find_spec`, :func:`resolve_spec`);
* :mod:`~gpulab.hardware.precision`: the course's precision names and their bytes;
* :mod:`~gpulab.hardware.sm`: per-SM limits and anatomy by compute capability;
* :mod:`~gpulab.hardware.interconnects`: links between GPUs and hosts;
* :mod:`~gpulab.hardware.memory_ladder`: registers to network for one GPU.

Nothing here imports NumPy or torch.
"""

from __future__ import annotations

from gpulab._lazy import submodule_loader

_MODULES = ('interconnects', 'memory_ladder', 'precision', 'sm', 'specs')


__getattr__, __dir__ = submodule_loader(__name__, _MODULES)
