"""Fused against unfused ``y = 3x + b``: traffic, allocation and caches told apart.

The memory-bandwidth lab times the unfused pair (``x * 3`` then ``+ b``, 5 arrays of traffic)
and the fused kernel (3 arrays), each as written (allocating its outputs) and writing into
existing arrays, and separately what a new array costs and how fast the fused kernel runs on
arrays that fit in the caches. :class:`FusionReport` holds those timings, prints them beside
the roofline's predictions and writes the measured sentence.

See also the chapter *Memory bandwidth and the roofline*, ``notebooks/memory_bandwidth_lab``
and ``tests/test_fusion_report.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpulab._checks import non_negative_int, positive_int, positive_number, wrong_type
from gpulab.costmodels.roofline import Ceilings
from gpulab.labkit.claims import Claim, claim

__all__ = ["FusionReport", "PREDICTED_SPEEDUP", "WRITE_ALLOCATE_SPEEDUP"]

#: Fusion removes 2 of 5 arrays of traffic: the roofline's speed-up for bandwidth-bound work.
PREDICTED_SPEEDUP = 5 / 3
#: Counting the read a CPU makes of each line before it writes it: the unfused pair moves
#: 3 + 4 arrays, the fused kernel 4 (a GPU writes whole lines and moves 5 and 3).
WRITE_ALLOCATE_SPEEDUP = (3 + 4) / 4
#: Allocation dominates when one new array costs more than half the fused kernel's time.
ALLOCATION_DOMINATES = 0.5
_VARIANTS = ("unfused, as written", "fused, as written", "unfused, existing arrays",
             "fused, existing array")
_WORD = 4  # bytes of a float32


@dataclass(frozen=True)
class FusionReport:
    """Timings of the four variants, a new array's cost and the fused kernel in the caches.

    Attributes
    ----------
    n : int
        float32 elements per large array.
    times_s : mapping
        Seconds per call of each variant, keyed ``"unfused, as written"``,
        ``"fused, as written"``, ``"unfused, existing arrays"``, ``"fused, existing array"``.
    new_arrays : mapping
        New arrays each variant allocates per call (2, 1, 0, 0 in the lab).
    fresh_fill_s, reused_fill_s : float
        Filling a new array, and filling an existing one, of ``n`` elements.
    small : int
        float32 elements per array of the in-cache run.
    cached_s : float
        Seconds per call of the fused kernel on arrays of ``small`` elements.
    roof : Ceilings
        The ceilings measured in section 2, for the predictions and the per-call overhead.

    Examples
    --------
    >>> roof = Ceilings("box", "fp32", 40e9, 10e9, overhead_s=2e-6)
    >>> r = FusionReport(2**20, dict(zip(_VARIANTS, (3e-3, 1.5e-3, 2e-3, 1.1e-3))),
    ...                  dict(zip(_VARIANTS, (2, 1, 0, 0))), 0.6e-3, 0.4e-3, 2**16, 2e-5, roof)
    >>> round(r.traffic_only, 2), round(r.new_array_s * 1e3, 2)
    (1.82, 0.2)
    """

    n: int
    times_s: Mapping[str, float]
    new_arrays: Mapping[str, int]
    fresh_fill_s: float
    reused_fill_s: float
    small: int
    cached_s: float
    roof: Ceilings

    def __post_init__(self) -> None:
        positive_int("n", self.n)
        positive_int("small", self.small)
        for name, table in (("times_s", self.times_s), ("new_arrays", self.new_arrays)):
            if not isinstance(table, Mapping) or set(table) != set(_VARIANTS):
                raise ValueError(f"{name}={table!r} must have exactly the keys {_VARIANTS}")
        for key in _VARIANTS:
            positive_number(f"times_s[{key!r}]", self.times_s[key])
            non_negative_int(f"new_arrays[{key!r}]", self.new_arrays[key])
        for name in ("fresh_fill_s", "reused_fill_s", "cached_s"):
            positive_number(name, getattr(self, name))
        if not isinstance(self.roof, Ceilings):
            raise wrong_type("roof", self.roof, "Ceilings (from gl.measure_ceilings)")

    @property
    def new_array_s(self) -> float:
        """One new array's cost beyond writing it: page faults, zeroing and freeing."""
        return max(self.fresh_fill_s - self.reused_fill_s, 0.0)

    @property
    def as_written(self) -> float:
        """Unfused over fused, each allocating its outputs."""
        return self.times_s["unfused, as written"] / self.times_s["fused, as written"]

    @property
    def traffic_only(self) -> float:
        """Unfused over fused, writing into existing arrays: only the traffic differs."""
        return self.times_s["unfused, existing arrays"] / self.times_s["fused, existing array"]

    @property
    def cached_gbs(self) -> float:
        """The fused kernel's counted traffic per second on arrays in the caches, in GB/s."""
        return 3 * _WORD * self.small / self.cached_s / 1e9

    @property
    def dram_gbs(self) -> float:
        """The fused kernel's counted traffic per second on the large arrays, in GB/s."""
        return 3 * _WORD * self.n / self.times_s["fused, existing array"] / 1e9

    def rebuilt_s(self, variant: str) -> float:
        """An as-written time rebuilt from its causes: the same kernel writing into existing
        arrays plus one measured new-array cost per new array."""
        existing = variant.replace("as written", "existing arrays" if "unfused" in variant
                                   else "existing array")
        return self.times_s[existing] + self.new_arrays[variant] * self.new_array_s

    def __str__(self) -> str:
        mib = _WORD * self.n / 2**20
        lines = [f"{'variant':<26}{'measured':>11}{'roofline':>11}{'new arrays':>12}"]
        for name in _VARIANTS:
            arrays = 5 if name.startswith("unfused") else 3
            pred = self.roof.predict(2 * self.n, arrays * _WORD * self.n)
            lines.append(f"{name:<26}{self.times_s[name] * 1e3:>9.2f}ms"
                         f"{pred.time_s * 1e3:>9.2f}ms{self.new_arrays[name]:>12}")
        lines.append(f"one new array of {mib:.0f} MiB costs {self.new_array_s * 1e3:.2f} ms beyond "
                     f"writing it (filling it: {self.fresh_fill_s * 1e3:.2f} ms fresh, "
                     f"{self.reused_fill_s * 1e3:.2f} ms reused)")
        lines.append(f"fused kernel: {self.dram_gbs:.1f} GB/s on {mib:.0f} MiB arrays, "
                     f"{self.cached_gbs:.1f} GB/s on {_WORD * self.small / 2**20:.0f} MiB arrays")
        return "\n".join(lines)

    def verdict(self) -> Claim:
        """The measured sentence: fusion's two speed-ups against the predictions, what
        allocation cost, and the caches. Judged: writing into existing arrays, fusion must be
        faster (it removes 2 of 5 arrays of traffic); the as-written ratio is not judged, it
        depends on how the operating system hands out fresh pages, and the text says which
        way it went.

        Raises
        ------
        gpulab.labkit.claims.ClaimError
            When the fused kernel was not faster writing into existing arrays (a claim on
            timings).
        """
        fused_s = self.times_s["fused, existing array"]
        alloc_share = self.new_array_s / fused_s
        if alloc_share > ALLOCATION_DOMINATES:
            reading = ("On this device allocation, not traffic, dominates the as-written times, "
                       "so their ratio says more about how fresh memory is obtained than about "
                       "fusion: write into existing arrays (`out=`) before comparing kernels.")
        else:
            reading = ("A new array is cheap on this device (a GPU's caching allocator reuses "
                       "freed memory), so the as-written ratio stays close to the traffic-only "
                       "one.")
        t = {name: 1e3 * self.times_s[name] for name in _VARIANTS}
        return claim(
            f"**Measured here:** as written, fusion was {self.as_written:.2f}× faster, against a "
            f"roofline prediction of {PREDICTED_SPEEDUP:.2f}×. Writing into existing arrays, "
            f"where only the traffic differs, it was {self.traffic_only:.2f}× faster (counting "
            f"the read before each write, as a CPU does, predicts "
            f"{WRITE_ALLOCATE_SPEEDUP:.2f}×). One new {_WORD * self.n / 2**20:.0f} MiB array "
            f"cost {self.new_array_s * 1e3:.1f} ms beyond writing it, {alloc_share:.1f}× the "
            f"fused kernel's own time; adding that once per new array gives "
            f"{1e3 * self.rebuilt_s('unfused, as written'):.0f} ms and "
            f"{1e3 * self.rebuilt_s('fused, as written'):.0f} ms for the two as-written "
            f"versions, measured {t['unfused, as written']:.0f} ms and "
            f"{t['fused, as written']:.0f} ms. {reading} Caches played no part on these "
            f"arrays; on {_WORD * self.small / 2**20:.0f} MiB arrays, inside them, the fused "
            f"kernel moved {self.cached_gbs:.0f} GB/s, {self.cached_gbs / self.dram_gbs:.1f}× "
            f"its rate from memory; the per-call overhead measured in section 2 "
            f"({self.roof.overhead_s * 1e6:.1f} µs) is {self.roof.overhead_s / self.cached_s:.0%}"
            " of that kernel's time.",
            self.traffic_only > 1,
            reason="fusion removes 2 of 5 arrays of traffic, so writing into existing arrays it "
            "is faster",
            timings=True,
        )
