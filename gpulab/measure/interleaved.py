"""Compare a few functions' times on a shared machine: interleaved runs, fastest of each.

On a machine other programs load, a slow run says more about the load than about the code:
load only ever adds time. To compare two versions of a step (a plain and a checkpointed
model, say), :func:`fastest_interleaved` runs them in turn, round after round, so that both
meet the same load, and keeps each one's fastest run. The device is synchronized around
every run (:func:`gpulab.measure.bench.synchronize`), and each function runs once unmeasured
first (warm-up).

Examples
--------
>>> from gpulab.measure.interleaved import fastest_interleaved
>>> calls = []
>>> best = fastest_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
...                            repeats=2)
>>> calls  # one warm-up each, then the rounds alternate
['a', 'b', 'a', 'b', 'a', 'b']
>>> sorted(best), all(s >= 0 for s in best.values())
(['a', 'b'], True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from gpulab._checks import positive_int, wrong_type

__all__ = ["fastest_interleaved"]


def fastest_interleaved(
    fns: Mapping[str, Callable[[], object]], *, repeats: int = 10, threads: int | None = None
) -> dict[str, float]:
    """The fastest of ``repeats`` interleaved runs of each function, in seconds.

    Parameters
    ----------
    fns : mapping of str to callable
        Name -> function of no arguments (one step). At least one.
    repeats : int
        Rounds; in each, every function runs once, in the order given.
    threads : int, optional
        torch's CPU threads while timing (restored afterwards); None leaves them as they are.

    Returns
    -------
    dict
        Name -> seconds of its fastest run.
    """
    if not isinstance(fns, Mapping):
        raise wrong_type("fns", fns, "a mapping of names to functions of no arguments")
    if not fns:
        raise ValueError("fns={} must hold at least one function")
    for name, fn in fns.items():
        if not callable(fn):
            raise wrong_type(f"fns[{name!r}]", fn, "a function of no arguments")
    positive_int("repeats", repeats)
    if threads is not None:
        positive_int("threads", threads)
    from gpulab.measure.bench import synchronize

    before = None
    if threads is not None:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(threads)
    try:
        for fn in fns.values():
            fn()  # warm-up
        times = {name: [] for name in fns}
        for _ in range(repeats):
            for name, fn in fns.items():
                synchronize()
                start = time.perf_counter()
                fn()
                synchronize()
                times[name].append(time.perf_counter() - start)
    finally:
        if before is not None:
            torch.set_num_threads(before)
    return {name: min(t) for name, t in times.items()}
