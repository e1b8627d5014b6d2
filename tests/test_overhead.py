"""The overhead model t(b) = a + c·b: its arithmetic, its two constructors (a fit through
measurements, a device's ceilings), the size it picks, and its prediction on this CPU."""

from __future__ import annotations

import math

import pytest
import torch

import gpulab as gl
from gpulab.costmodels.overhead import OverheadModel, size_for_ratio


def test_the_time_is_the_fixed_cost_plus_the_work_or_their_larger_when_they_overlap():
    m = OverheadModel(fixed_s=2e-3, per_item_s=1e-6)
    assert m.time_s(0) == 2e-3
    assert m.time_s(1000) == pytest.approx(3e-3)
    assert m.time_s(1000, overlap=True) == 2e-3
    assert m.time_s(10_000, overlap=True) == pytest.approx(1e-2)
    assert m.ratio(1, 2) == pytest.approx(1.0, abs=1e-3)  # overhead-bound: doubling is free
    assert m.ratio(10**6, 2 * 10**6) == pytest.approx(2.0, rel=1e-2)  # work-bound: 2x
    assert m.work_bound_size() == pytest.approx(2000)
    assert m.work_bound_size(3) == pytest.approx(6000)
    assert OverheadModel(1e-3, 0.0).work_bound_size() == math.inf


def test_the_fit_goes_through_the_smallest_and_the_largest_size():
    m = OverheadModel.fit([4096, 16, 256], [0.0328, 0.0044, 0.0220])
    assert m.time_s(16) == pytest.approx(0.0044)
    assert m.time_s(4096) == pytest.approx(0.0328)
    assert "16" in m.note and "4096" in m.note


def test_noise_cannot_make_the_fit_negative():
    flat = OverheadModel.fit([16, 65536], [5e-3, 4.9e-3])  # the larger one measured faster
    assert flat.per_item_s == 0 and flat.fixed_s == 5e-3
    steep = OverheadModel.fit([100, 200], [1e-3, 3e-3])  # extrapolates below zero at b = 0
    assert steep.fixed_s == 0 and steep.per_item_s == pytest.approx(2e-5)


@pytest.mark.parametrize("name", ["T4", "H100 SXM"])
def test_from_a_datasheet_the_work_per_item_is_its_roofline_time(name):
    spec = gl.get_spec(name)
    m = OverheadModel.from_ceilings(
        spec, n_calls=400, call_s=5e-6, flops_per_item=5e4, bytes_per_item=4e4
    )
    assert m.fixed_s == pytest.approx(2e-3)
    assert m.per_item_s == pytest.approx(max(5e4 / spec.peak("fp32"), 4e4 / spec.memory_bandwidth))
    assert spec.name in m.note
    # A T4 has a tenth of an H100's bandwidth: the same step turns work-bound ten times sooner.
    if name == "T4":
        h100 = OverheadModel.from_ceilings(
            "H100 SXM", n_calls=400, call_s=5e-6, flops_per_item=5e4, bytes_per_item=4e4
        )
        assert h100.work_bound_size() / m.work_bound_size() == pytest.approx(
            gl.get_spec("H100 SXM").memory_bandwidth / spec.memory_bandwidth
        )


def test_measured_ceilings_give_their_own_roofs():
    box = gl.Ceilings("box", "fp32", 1e11, 1e10, overhead_s=2e-6)
    m = OverheadModel.from_ceilings(
        box, n_calls=10, call_s=box.overhead_s, flops_per_item=1.0, bytes_per_item=8.0
    )
    assert m.fixed_s == pytest.approx(2e-5) and m.per_item_s == pytest.approx(8e-10)


def test_the_size_picked_is_the_smallest_that_reaches_the_ratio():
    m = OverheadModel(fixed_s=5e-3, per_item_s=20e-9)
    sizes = [2**21, 2**18, 2**20, 2**19]  # any order
    n = size_for_ratio(m, 16, 4, sizes)
    assert n == 2**20 and m.ratio(16, n) >= 4 and m.ratio(16, 2**19) < 4
    assert size_for_ratio(m, 16, 1000, sizes) == 2**21  # none reaches it: the largest
    assert size_for_ratio(OverheadModel(5e-3, 0.0), 16, 4, sizes) == 2**21
    assert size_for_ratio(m, 16, 4, []) is None


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: OverheadModel(-1.0, 0.0), ValueError, "fixed_s=-1.0"),
        (lambda: OverheadModel(1.0, "2"), TypeError, "per_item_s='2'"),
        (lambda: OverheadModel(1.0, 1.0).time_s(-1), ValueError, "batch_size=-1"),
        (lambda: OverheadModel(1.0, 1.0).time_s(1, overlap=1), TypeError, "overlap=1"),
        (lambda: OverheadModel(1.0, 1.0).ratio(0, 2), ValueError, "small=0"),
        (lambda: OverheadModel(1.0, 1.0).work_bound_size(0), ValueError, "factor=0"),
        (lambda: OverheadModel.fit([1, 1], [1.0, 2.0]), ValueError, "two different sizes"),
        (lambda: OverheadModel.fit([1, 2], [1.0]), ValueError, "same length"),
        (lambda: OverheadModel.fit([1, 2], [1.0, float("nan")]), ValueError, r"times_s\[1\]"),
        (lambda: OverheadModel.fit("12", [1.0, 2.0]), TypeError, "sizes='12'"),
        (lambda: OverheadModel.from_ceilings("Z9000", n_calls=1, call_s=1e-6,
                                             flops_per_item=1, bytes_per_item=1),
         ValueError, "Z9000"),
        (lambda: OverheadModel.from_ceilings("T4", n_calls=0, call_s=1e-6,
                                             flops_per_item=1, bytes_per_item=1),
         ValueError, "n_calls=0"),
        (lambda: OverheadModel.from_ceilings("T4", n_calls=1, call_s=1e-6,
                                             flops_per_item=1, bytes_per_item=1,
                                             precision="bf16"),
         ValueError, "precision='bf16'"),
        (lambda: size_for_ratio("model", 16, 4, [1]), TypeError, "model='model'"),
        (lambda: size_for_ratio(OverheadModel(1.0, 1.0), 16, 1, [1]), ValueError, "ratio=1"),
        (lambda: size_for_ratio(OverheadModel(1.0, 1.0), 16, 4, [0]), ValueError,
         r"candidates\[0\]=0"),
        (lambda: size_for_ratio(OverheadModel(1.0, 1.0), 16, 4, 8), TypeError, "candidates=8"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _doubling_ratio(step, b, pairs=7) -> float:
    """t(2b) / t(b), each side its least-disturbed timing over interleaved pairs.

    The two sizes are timed in alternation, each pair in the other order from the last, so
    that a load that rises or falls over the run weighs on both sides alike. Load on a shared
    machine only ever adds time, so each side's fastest median over the pairs is the one
    least disturbed, and their ratio compares the two sizes rather than the moments they
    were measured in (a median of the pairs' ratios still failed at 1.4 for two equal costs
    on a machine running several test suites at once).
    """
    one, two = step(b), step(2 * b)
    t_one, t_two = [], []
    for i in range(pairs):
        order = ((one, t_one), (two, t_two)) if i % 2 == 0 else ((two, t_two), (one, t_one))
        for fn, times in order:
            times.append(gl.benchmark(fn, min_run_time_s=0.05, num_threads=1).median_s)
    return min(t_two) / min(t_one)


def test_on_this_cpu_the_model_from_measured_ceilings_tells_overhead_from_work():
    """A step of 20 elementwise calls: the double-the-batch test, measured and predicted.

    On 16-element tensors the calls' fixed cost is all there is, and doubling the batch
    costs nothing; on 8 M elements (32 MiB per array, beyond the caches) the work is all
    there is, and doubling it doubles the time. The model from this CPU's measured ceilings
    says both, and the measurement agrees (margins for a shared machine: each size's fastest
    median over interleaved pairs, 1.4 against 1 and 1.6 against 2).
    """
    roof = gl.measure_ceilings("cpu", copy_bytes=2**25, matmul_n=256, min_run_time_s=0.05,
                               num_threads=1, repeats=1)
    calls = 20
    model = OverheadModel.from_ceilings(roof, n_calls=calls, call_s=roof.overhead_s,
                                        flops_per_item=calls, bytes_per_item=calls * 8)

    def step(b):
        x, y = torch.ones(b), torch.empty(b)

        def run():
            for _ in range(calls):
                torch.add(x, 1.0, out=y)
        return run

    small, large = 16, 2**23
    # The model's ratios rest on ceilings measured on a shared machine: a busy one measures a
    # lower bandwidth, which makes 16 elements' work a few percent of the calls' cost.
    assert model.ratio(small, 2 * small) < 1.2
    assert model.ratio(large, 2 * large) > 1.95
    measured_small = _doubling_ratio(step, small)
    measured_large = _doubling_ratio(step, large, pairs=5)
    assert measured_small < 1.4, measured_small
    assert measured_large > 1.6, measured_large
