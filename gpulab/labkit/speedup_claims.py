"""Measured speed-ups in words: which way they went, and the reading that fits.

A lab compares two ways to run the same work (one thread and all cores, a CPU and a GPU,
eager and fused) and states what it saw. The reading depends on the numbers of this run, so
it is chosen from them, never typed; each function here returns the sentence as a
:class:`~gpulab.labkit.claims.Claim` for the measuring cell to show.

See also ``tests/test_speedup_claims.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpulab._checks import flag, positive_int, positive_number, text, wrong_type
from gpulab.labkit.claims import Claim, claim

__all__ = ["NOISE", "amp_claim", "break_even_claim", "fusion_claim", "thread_speedup_claim"]

#: Speed-ups within 20% of 1 can be the noise of a shared 2-core machine.
NOISE = 0.2
#: A step within 10% of fp32's time ran "about as fast": a busy machine's run-to-run noise.
AMP_NOISE = 0.1
#: The fused speed-up counts as "about the traffic ratio" within 20% either way.
TRAFFIC_MARGIN = 0.2


def thread_speedup_claim(slow_name: str, fast_name: str, add_x: float, mm_x: float, *,
                         on_gpu: bool, cores: int) -> Claim:
    """An elementwise add and a matmul, run two ways: how much faster each ran, and why.

    Parameters
    ----------
    slow_name, fast_name : str
        The two ways, e.g. ``"CPU, 1 thread"`` and ``"CPU, 2 threads"``, or a CPU and a GPU.
    add_x, mm_x : float
        The fast way's speed-up on the add and on the matmul (slow time over fast time).
    on_gpu : bool
        The fast way is a GPU. Which lead is larger then depends on the host as much as on
        the GPU: against a server socket with dozens of cores the ratio of peaks can be the
        smaller one (an H100 has about 9x a Xeon 8480+'s FP32 peak but 11x its bandwidth), so
        the data decides.
    cores : int
        The CPU threads of the fast way (on a CPU).

    Examples
    --------
    >>> print(thread_speedup_claim("CPU, 1 thread", "CPU, 2 threads", 1.1, 1.9,
    ...                            on_gpu=False, cores=2))  # doctest: +ELLIPSIS
    **Measured here:** CPU, 2 threads ran the elementwise add 1.1x and the matmul 1.9x as fast as CPU, 1 thread. The add gained less than the matmul: ...
    """  # noqa: E501
    text("slow_name", slow_name)
    text("fast_name", fast_name)
    positive_number("add_x", add_x)
    positive_number("mm_x", mm_x)
    flag("on_gpu", on_gpu)
    positive_int("cores", cores)
    measured = (f"**Measured here:** {fast_name} ran the elementwise add {add_x:.1f}x and the "
                f"matmul {mm_x:.1f}x as fast as {slow_name}.")
    if on_gpu:
        larger = "on the matmul" if mm_x > add_x else "on the add"
        reading = ("The GPU's lead on the add follows the ratio of memory bandwidths, on the "
                   f"matmul the ratio of arithmetic peaks; against this host the lead {larger} "
                   "is the larger one.")
    elif max(add_x, mm_x) < 1 + NOISE:
        reading = ("Neither gained from the extra threads on this run. That happens when other "
                   "programs share the cores (look at the IQR column): rerun the cell on an "
                   "idle machine.")
    elif add_x < mm_x:
        reading = ("The add gained less than the matmul: it is limited by memory bandwidth, "
                   "which the cores share, while the matmul reuses each number it loads.")
    else:
        reading = (f"The add gained at least as much as the matmul: {cores} cores do not yet "
                   "saturate this machine's memory bandwidth, so each extra core still adds "
                   "bandwidth. On a socket with dozens of cores the add stops gaining once a "
                   "handful of cores saturate the memory channels they share, while the matmul "
                   "keeps scaling with the cores.")
    return claim(f"{measured} {reading}")


def break_even_claim(slow_name: str, fast_name: str, speedup: Mapping[int, float]) -> Claim:
    """Where a parallel version starts to win: the sizes it lost at, the sizes it won at.

    Parameters
    ----------
    slow_name, fast_name : str
        The two versions, e.g. ``"1 thread"`` and ``"2 threads"``.
    speedup : mapping
        Matrix side ``n`` -> the fast version's speed-up at that size (sizes increasing).

    Examples
    --------
    >>> print(break_even_claim("1 thread", "2 threads", {32: 0.5, 64: 0.9, 128: 1.4}))
    **Measured here:** 2 threads against 1 thread, fp32 matmul: 0.50x at n = 32, 1.40x at n = 128. The parallel version was slower up to n = 64 and faster from n = 128: the break-even lies between them.
    """  # noqa: E501
    text("slow_name", slow_name)
    text("fast_name", fast_name)
    if not isinstance(speedup, Mapping) or not speedup:
        raise wrong_type("speedup", speedup, "a non-empty mapping size -> speed-up")
    sizes = sorted(speedup)
    for n in sizes:
        positive_number(f"speedup[{n}]", speedup[n])
    lost = [n for n in sizes if speedup[n] < 1]
    won = [n for n in sizes if speedup[n] >= 1]
    summary = (f"**Measured here:** {fast_name} against {slow_name}, fp32 matmul: "
               f"{speedup[sizes[0]]:.2f}x at n = {sizes[0]}, "
               f"{speedup[sizes[-1]]:.2f}x at n = {sizes[-1]}. ")
    if lost and won and max(lost) < min(won):
        summary += (f"The parallel version was slower up to n = {max(lost)} and faster from "
                    f"n = {min(won)}: the break-even lies between them.")
    elif lost and won:
        summary += (f"It lost at n = {', '.join(map(str, lost))} and won at n = "
                    f"{', '.join(map(str, won))}: no clean break-even on this run, a sign of "
                    "noise from other programs on the machine (compare the IQR columns).")
    elif lost:
        summary += ("It lost at every size tried here. When even the largest size loses, the "
                    "parallel threads were most likely waiting for cores that other programs "
                    "held (compare the IQR columns): rerun the cell on an idle machine.")
    else:
        summary += (f"It won even at n = {sizes[0]}: on this machine the break-even lies below "
                    "the smallest size tried.")
    return claim(summary)


def fusion_claim(compile_s: float, fused_x: float, traffic_x: float) -> Claim:
    """``torch.compile``'s first call and its fused kernel's speed-up against the traffic
    it saves.

    Parameters
    ----------
    compile_s : float
        Seconds of the first call (tracing, code generation, compiling).
    fused_x : float
        Eager time over fused time.
    traffic_x : float
        Eager passes over memory over the fused kernel's.

    Examples
    --------
    >>> print(fusion_claim(12.0, 8.5, 9))  # doctest: +ELLIPSIS
    **Measured here:** the first call took 12.0 s (...); fusion gave 8.5x for 9x less traffic, about the traffic ratio: the time follows the passes over memory.
    """  # noqa: E501
    positive_number("compile_s", compile_s)
    positive_number("fused_x", fused_x)
    positive_number("traffic_x", traffic_x)
    if fused_x < (1 - TRAFFIC_MARGIN) * traffic_x:
        how = ("less than the traffic ratio: the fused loop is limited by arithmetic (`tanh` on "
               "each element) more than by memory, or the machine was busy")
    elif fused_x > traffic_x / (1 - TRAFFIC_MARGIN):
        how = ("more than the traffic ratio: the eager version also pays for allocating its "
               "seven temporaries (fresh memory, first touched) and for eight passes through the "
               "cache")
    else:
        how = "about the traffic ratio: the time follows the passes over memory"
    return claim(f"**Measured here:** the first call took {compile_s:.1f} s (tracing, code "
                 f"generation, compiling); fusion gave {fused_x:.1f}x for {traffic_x:.0f}x less "
                 f"traffic, {how}.")


def amp_claim(times_s: Mapping[str, float], peaks_bytes: Mapping[str, float]) -> Claim:
    """Mixed precision against FP32: the step's speed and its peak memory, in words.

    Parameters
    ----------
    times_s, peaks_bytes : mapping
        Seconds per step and peak bytes, keyed ``"fp32"`` and the autocast precision
        (``"amp_fp16"`` or ``"amp_bf16"``), FP32 first.

    Examples
    --------
    >>> print(amp_claim({"fp32": 2.0, "amp_fp16": 1.0}, {"fp32": 100, "amp_fp16": 60}))
    **Measured here:** the amp_fp16 step ran 2.00x as fast as fp32, and its peak memory fell to 0.60x, the activations being the larger part here.
    """  # noqa: E501
    for name, table in (("times_s", times_s), ("peaks_bytes", peaks_bytes)):
        if not isinstance(table, Mapping) or len(table) != 2 or next(iter(table)) != "fp32":
            raise ValueError(f"{name}={table!r} must hold two entries, 'fp32' first, then the "
                             "autocast precision")
        for key, value in table.items():
            positive_number(f"{name}[{key!r}]", value)
    if list(times_s) != list(peaks_bytes):
        raise ValueError(f"times_s and peaks_bytes must have the same keys: {list(times_s)} "
                         f"against {list(peaks_bytes)}")
    amp = list(times_s)[1]
    speed_x = times_s["fp32"] / times_s[amp]
    memory_x = peaks_bytes[amp] / peaks_bytes["fp32"]
    if speed_x > 1 + AMP_NOISE:
        speed = f"ran {speed_x:.2f}x as fast as fp32"
    elif speed_x < 1 - AMP_NOISE:
        speed = f"was slower than fp32 ({speed_x:.2f}x the speed)"
    else:
        speed = f"ran about as fast as fp32 ({speed_x:.2f}x)"
    memory = (
        f"its peak memory fell to {memory_x:.2f}x, the activations being the larger part here"
        if memory_x < 1
        else f"its peak memory did not fall ({memory_x:.2f}x): in this small model the fp32 "
        "weights and gradients, which autocast keeps, plus its 16-bit weight copies outweigh "
        "the activations it halves"
    )
    return claim(f"**Measured here:** the {amp} step {speed}, and {memory}.")
