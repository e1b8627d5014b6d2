"""The course's colours: one per kind of result, the same in every figure.

Measured on a CPU, a GPU or a TPU, or a prediction from the spec registry and a cost model.
Pure data at the bottom of the package, so a cost model that draws (the roofline) and the
plotting helpers above it share one palette without an import running up the layers.

Examples
--------
>>> from gpulab.palette import COLORS
>>> sorted(COLORS)
['cpu', 'gpu', 'prediction', 'tpu']
"""

from __future__ import annotations

__all__ = ["COLORS"]

#: Colour of each kind of result: measured on a CPU, a GPU, a TPU, or predicted.
COLORS = {"cpu": "#4C72B0", "gpu": "#55A868", "tpu": "#C44E52", "prediction": "#8172B2"}
