"""Kernels timed against the roofline of the same run, and the roofline's verdict on itself.

The memory-bandwidth lab predicts each kernel's time from ceilings it measured
(``overhead + max(FLOPs / peak, bytes / bandwidth)``) and times the kernel. The comparison is
fair only while other programs' load stays the same, so :func:`time_on_the_roofline`
measures the ceilings again after the kernels and times the kernels again when the two
measurements differ by more than :data:`LOAD_CHANGE`. :meth:`RooflineCheck.verdict` states
the errors and judges them against the course's target, :data:`ROOFLINE_TARGET`.

See also the chapter *Memory bandwidth and the roofline*, ``notebooks/memory_bandwidth_lab``
and ``tests/test_roofline_check.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpulab._checks import fraction, positive_int, wrong_type
from gpulab.costmodels.roofline import Ceilings, RooflinePoint, measure_ceilings
from gpulab.labkit.accuracy_output import AccuracyClaim
from gpulab.labkit.claims import claim
from gpulab.labkit.wording import count_phrase
from gpulab.measure.bench import benchmark

__all__ = ["LOAD_CHANGE", "ROOFLINE_TARGET", "RooflineCheck", "best_time", "sign_wording",
           "time_on_the_roofline"]

#: The course's target for the roofline on a CPU: median |error| at most 25% over the lab's
#: kernels, ceilings and kernels measured in the same run on one thread. A run that misses it
#: stops rather than print a wrong sentence; a repeatable miss is reported, not widened.
ROOFLINE_TARGET = 0.25
#: The fewest kernels a median |error| is stated over.
MIN_KERNELS = 8
#: Ceilings measured before and after the kernels that differ by more than this (relative)
#: say the load changed while the kernels ran. Two measurements on a quiet shared machine can
#: differ by about as much (the matmul peak is the noisier roof), so a quiet run may time the
#: kernels more than once: that costs seconds, not accuracy.
LOAD_CHANGE = 0.2
#: How many times the kernels are timed at most.
TRIES = 3


def best_time(fn: Callable[[], object], min_run_time_s: float = 0.1, *, rounds: int = 3,
              num_threads: int | None = None) -> float:
    """Median seconds per call of the least disturbed of a few rounds of ``gl.benchmark``.

    Other programs' load only ever adds time, so the fastest round's median is the closest
    to the kernel's own time.

    Examples
    --------
    >>> best_time(lambda: sum(range(100)), 0.01, rounds=2) > 0
    True
    """
    positive_int("rounds", rounds)
    return min(benchmark(fn, min_run_time_s=min_run_time_s, num_threads=num_threads).median_s
               for _ in range(rounds))


def sign_wording(errors: Mapping[str, float]) -> str:
    """Which way the errors lean, in words: counts, names of the negative ones, the verdict.

    Examples
    --------
    >>> sign_wording({"add": 0.1, "copy": 0.2, "mm": -0.3})
    'There is one negative error (mm) and two positive ones, so most errors are positive (the kernels are slower than the model).'
    >>> sign_wording({"a": -0.1, "b": 0.1})
    'There is one negative error (a) and one positive one, so as many errors are negative as positive.'
    """  # noqa: E501
    negative = sorted(name for name, e in errors.items() if e < 0)
    positive = sorted(name for name, e in errors.items() if e >= 0)
    if len(negative) > len(positive):
        lean = "most errors are negative (the kernels beat the model)"
    elif len(positive) > len(negative):
        lean = "most errors are positive (the kernels are slower than the model)"
    else:
        lean = "as many errors are negative as positive"
    names = f" ({', '.join(negative)})" if negative else ""
    return (f"There {'is' if len(negative) == 1 else 'are'} "
            f"{count_phrase(len(negative), 'negative error')}{names} and "
            f"{count_phrase(len(positive), 'positive one')}, so {lean}.")


@dataclass(frozen=True)
class RooflineCheck:
    """Kernels timed on a device and the roofline's predictions for them.

    Attributes
    ----------
    roof : Ceilings
        The ceilings the predictions use: each roof at its least disturbed of the
        measurements around the kernels.
    points : tuple of RooflinePoint
        Each kernel's FLOPs, bytes and measured seconds per call.
    """

    roof: Ceilings
    points: tuple[RooflinePoint, ...]

    @property
    def errors(self) -> dict[str, float]:
        """``(measured − predicted) / predicted`` per kernel."""
        return {p.name: (p.time_s - pred) / pred for p in self.points
                for pred in [self.roof.predict(p.flops, p.n_bytes).time_s]}

    @property
    def median_error(self) -> float:
        """The median of the absolute errors."""
        return float(statistics.median(abs(e) for e in self.errors.values()))

    def table(self) -> str:
        """Each kernel's intensity, bound, predicted and measured time and error; the median."""
        lines = [f"{'kernel':<13}{'FLOP/byte':>10}{'bound':>9}{'predicted':>12}{'measured':>12}"
                 f"{'error':>9}"]
        errors = self.errors
        for p in self.points:
            pred = self.roof.predict(p.flops, p.n_bytes)
            lines.append(f"{p.name:<13}{p.flops / p.n_bytes:>10.3g}{pred.bound:>9}"
                         f"{pred.time_s * 1e3:>10.3f}ms{p.time_s * 1e3:>10.3f}ms"
                         f"{100 * errors[p.name]:>+8.0f}%")
        lines.append(f"median |error| over {len(errors)} kernels: {100 * self.median_error:.0f}%")
        return "\n".join(lines)

    def verdict(self, target: float = ROOFLINE_TARGET) -> AccuracyClaim:
        """The errors in a sentence, judged against ``target`` and recorded for the
        accuracy page.

        Raises
        ------
        gpulab.labkit.claims.ClaimError
            When fewer than :data:`MIN_KERNELS` kernels were timed or the median |error|
            exceeds ``target`` (a claim on timings: printed instead under
            ``GPULAB_TIMING_CLAIMS=print``).
        """
        fraction("target", target)
        errors, median = self.errors, self.median_error
        worst = max(errors, key=lambda name: abs(errors[name]))
        sentence = claim(
            f"**Measured here:** median |error| {100 * median:.0f}% over {len(errors)} kernels "
            f"(target: at most {100 * target:.0f}%). {sign_wording(errors)} "
            f"The largest is {worst}'s, {100 * errors[worst]:+.0f}%.",
            len(errors) >= MIN_KERNELS and median <= target,
            reason=f"the roofline's target on this course: median |error| at most {target:.0%} "
            f"over at least {MIN_KERNELS} kernels; errors {errors}",
            timings=True,
        )
        return AccuracyClaim(sentence, "roofline", "median |error|", median, target,
                             len(errors), f"{len(errors)} kernels, ceilings measured in the "
                             "same run")


def time_on_the_roofline(
    kernels: Mapping[str, tuple[Callable[[], object], float, float]],
    roof: Ceilings,
    device=None,
    *,
    num_threads: int | None = None,
    load_change: float = LOAD_CHANGE,
    tries: int = TRIES,
    remeasure: Callable[[], Ceilings] | None = None,
    time_kernel: Callable[[Callable[[], object]], float] | None = None,
) -> RooflineCheck:
    """Time each kernel, measure the ceilings again, and time again if the load changed.

    Parameters
    ----------
    kernels : mapping
        ``name -> (fn, flops, n_bytes)``: a kernel called with no arguments, its FLOPs and
        the bytes it must move per call.
    roof : Ceilings
        The ceilings measured before the kernels (:func:`gpulab.measure_ceilings`).
    device : torch.device or str, optional
        Where the kernels run, for measuring the ceilings again.
    num_threads : int, optional
        CPU threads for the kernels and the ceilings (one on a CPU in the lab).
    load_change : float, default :data:`LOAD_CHANGE`
        The largest :meth:`Ceilings.difference` between the two measurements of the
        ceilings at which the kernels' timings are kept.
    tries : int, default :data:`TRIES`
        How many times the kernels are timed at most; after the last, the errors include
        whatever the load did, and a line says so.
    remeasure : callable, optional
        Returns the ceilings measured again; default
        ``measure_ceilings(device, num_threads=num_threads, repeats=3)``.
    time_kernel : callable, optional
        Seconds per call of one kernel; default :func:`best_time` with ``num_threads``.

    Returns
    -------
    RooflineCheck
        Each roof at its least disturbed of the measurements around the kept timings.

    Examples
    --------
    >>> quiet = Ceilings("box", "fp32", 100e9, 10e9)
    >>> check = time_on_the_roofline({"add": (lambda: None, 1e6, 12e6)}, quiet,
    ...                              remeasure=lambda: quiet, time_kernel=lambda fn: 1.3e-3)
    >>> round(check.errors["add"], 2)
    0.08
    """
    if not isinstance(kernels, Mapping) or not kernels:
        raise wrong_type("kernels", kernels, "a non-empty mapping name -> (fn, flops, n_bytes)")
    if not isinstance(roof, Ceilings):
        raise wrong_type("roof", roof, "Ceilings (from gl.measure_ceilings)")
    fraction("load_change", load_change)
    positive_int("tries", tries)
    if remeasure is None:
        def remeasure():
            return measure_ceilings(device, num_threads=num_threads, repeats=3)
    if time_kernel is None:
        def time_kernel(fn):
            return best_time(fn, num_threads=num_threads)
    for attempt in range(1, tries + 1):
        measured = {name: time_kernel(fn) for name, (fn, _, _) in kernels.items()}
        after = remeasure()
        change = roof.difference(after)
        if change <= load_change:
            break
        last = attempt == tries
        then = f"after {tries} tries, the errors below include it" if last else "timing them again"
        print(f"the ceilings moved by {change:.0%} while the kernels ran (the machine's load most "
              f"likely changed): {then}")
        if not last:
            roof = after
    points = tuple(RooflinePoint(name, flops, n_bytes, time_s=measured[name])
                   for name, (_, flops, n_bytes) in kernels.items())
    return RooflineCheck(Ceilings.least_disturbed(roof, after), points)
