"""The chores around the inference lab's remedies for launch overhead (GPU only).

At batch 1 a GPU waits for the CPU to launch each small kernel. The lab times two remedies:
``torch.compile(mode="reduce-overhead")`` and a CUDA graph captured by hand. What is not the
idea (compiling outside the timing and naming what is missing when Inductor cannot build;
the warm-up on a side stream that a capture needs) is here, so the lab's cell shows the
timings and the capture itself.

Examples
--------
>>> from gpulab.labkit.launch_overhead import warm_up_on_side_stream
>>> calls = []
>>> warm_up_on_side_stream(lambda: calls.append(1), runs=3)  # no GPU: runs it in place
>>> len(calls)
3
"""

from __future__ import annotations

from collections.abc import Callable

from gpulab._checks import positive_int

__all__ = ["time_compiled", "warm_up_on_side_stream"]


def time_compiled(model, x, *, min_run_time_s: float = 0.5, warmups: int = 3):
    """Time ``model(x)`` compiled with ``torch.compile(mode="reduce-overhead")``.

    The model is compiled and its CUDA graph recorded by ``warmups`` calls outside the
    timing. Where Inductor cannot build its kernels (no C compiler, no ``Python.h``), one
    sentence names what is missing and None is returned, so the rest of the lab still runs.

    Returns
    -------
    BenchResult or None
        :func:`gl.benchmark`'s result, labelled ``torch.compile (reduce-overhead)``.
    """
    import torch

    from gpulab.measure.bench import benchmark
    from gpulab.measure.toolchain import compile_problem

    positive_int("warmups", warmups)
    try:  # Inductor builds Triton kernels: a C compiler and Python.h, on first use
        compiled = torch.compile(model, mode="reduce-overhead")
        for _ in range(warmups):  # compile and record the graph outside the timing
            compiled(x)
        return benchmark(lambda: compiled(x), min_run_time_s=min_run_time_s,
                         label="torch.compile (reduce-overhead)")
    except Exception as err:  # the sentence names what is missing; the rest still runs
        print(f"{compile_problem(x.device, err)}: torch.compile skipped.")
        return None


def warm_up_on_side_stream(fn: Callable[[], object], runs: int = 3) -> None:
    """Run ``fn`` ``runs`` times on a side CUDA stream, as a CUDA-graph capture needs first.

    A capture records kernels, so their first-call work (loading modules, choosing
    algorithms, allocating workspaces) must already be done; PyTorch's CUDA-graph recipe does
    it on a side stream that the current stream then waits for. Without a GPU ``fn`` simply
    runs ``runs`` times.
    """
    import torch

    positive_int("runs", runs)
    if not torch.cuda.is_available():
        for _ in range(runs):
            fn()
        return
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(runs):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
