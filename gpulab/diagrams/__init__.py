"""Explanatory diagrams drawn from the course's own data: nothing in them is typed in by hand.

Each drawing takes its numbers from the spec registry (:mod:`gpulab.specs`,
:mod:`gpulab.comms`), a cost model (:func:`gpulab.allreduce_time`,
:func:`gpulab.sharded_memory`, :func:`gpulab.thread_map`) or a recorded measurement from a
lab, and returns the figure together with the data it drew, so tests can check the picture
says what the data says.

* :mod:`~gpulab.diagrams.hardware`: CPU against GPU, the memory ladder, the SM;
* :mod:`~gpulab.diagrams.dispatch`: the operators a forward and backward pass sends to kernels;
* :mod:`~gpulab.diagrams.fusion`: eager kernels against one fused kernel, bytes per kernel;
* :mod:`~gpulab.diagrams.kernels`: a launch mapped onto blocks, warps and SMs; tiling;
* :mod:`~gpulab.diagrams.collectives`: the ring all-reduce simulated step by step; tree vs ring;
* :mod:`~gpulab.diagrams.parallelism`: ZeRO stages, tensor-parallel linear layers;
* :mod:`~gpulab.diagrams.schedules`: pipeline schedules (GPipe, 1F1B) and the input pipeline;
* :mod:`~gpulab.diagrams.recorded`: reading a lab's recorded measurements for them.

Every figure has an opaque white background, so it reads the same on the book's light and
dark themes.
"""
