"""The tables the multi-process labs print from their workers' results, checked as printed.

The distributed and parallelism labs launch ``torchrun`` workers that write JSON results.
Reading a result back into a table (the layout, the units, the asserts that the split model
computes what the whole one does, the metadata the book's figures read) is the same chore in
every cell, so it lives here; each lab cell keeps the model it compares with and one call.

Examples
--------
>>> from gpulab.labkit.parallel_reports import measured_idle_share
>>> ops = [(0, "F", 0, 0, 0.0, 1.0), (1, "F", 0, 0, 1.0, 2.0)]  # rank, kind, mb, chunk, start, end
>>> measured_idle_share(ops, ranks=2)
0.5
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from gpulab.units import format_bytes

__all__ = [
    "expert_bytes_claim",
    "expert_report",
    "measured_idle_share",
    "microbatch_table",
    "schedule_claim",
    "schedule_table",
]


def _mib(values) -> str:
    return ", ".join(format_bytes(b, binary=True) for b in values)


def microbatch_table(pipe: dict, stages: Sequence, batch: int, width: int) -> None:
    """Print the distributed lab's pipeline runs beside the models, and keep their times.

    ``pipe`` is the worker's result: rows for GPipe and 1F1B at each number of
    micro-batches ``m``, with the step time, the measured idle share, the peak activation
    bytes per stage and the loss. ``stages`` are the two stages (modules) as the worker built
    them, fed ``batch // m`` rows of ``width`` values. Each row's peak activations must equal
    the model's (micro-batches in flight per stage x one micro-batch's saved bytes) and every
    loss must match (a schedule changes the order of the work, not the math): an
    ``AssertionError`` says which row does not. The per-stage times go into the cell's
    output metadata (``gpulab_record``), from which the book draws the schedules.
    """
    import torch
    from IPython.display import display

    from gpulab.costmodels.memory import activation_bytes
    from gpulab.costmodels.parallelism import pipeline_bubble, pipeline_inflight_microbatches

    print(f"{'schedule':>8} {'m':>3} {'step':>8} {'bubble':>7} {'model':>6} "
          f"{'peak activations (stage 0, 1)':>30} {'model':>20}")
    rows = pipe["rows"] + pipe["rows_1f1b"]
    for row in rows:
        m, schedule = row["m"], row["schedule"]
        per_mb = [activation_bytes(s, torch.zeros(batch // m, width)) for s in stages]
        model_peak = [pipeline_inflight_microbatches(len(stages), m, schedule, stage=i) * b
                      for i, b in enumerate(per_mb)]
        assert row["peak_activation_bytes"] == model_peak, (schedule, m)
        print(f"{schedule:>8} {m:>3} {row['step_s'] * 1e3:>6.1f}ms {row['bubble']:>7.0%} "
              f"{pipeline_bubble(len(stages), m):>6.0%} {_mib(row['peak_activation_bytes']):>30} "
              f"{_mib(model_peak):>20}")
    losses = [row["loss"] for row in rows]
    assert max(losses) - min(losses) < 1e-5 * abs(losses[0]), "micro-batching changed the loss"
    print("The loss is the same for every m and schedule: the schedule changes the order of the "
          "work, not the math.")
    display({"text/plain": "(per-stage times kept with this recording for the book's "
                           "schedule diagram)"},
            raw=True, metadata={"gpulab_record": {"pipeline": pipe}})


def measured_idle_share(ops: Sequence[Sequence], ranks: int) -> float:
    """The share of ``ranks`` x the step's time that no operation of ``ops`` was running.

    ``ops`` are the worker's records ``(rank, kind, micro-batch, chunk, start_s, end_s)``,
    times from the step's start; the step ends with the last operation.
    """
    step = max(o[5] for o in ops)
    return 1 - sum(o[5] - o[4] for o in ops) / (ranks * step)


def _per_rank_times(ops, ranks: int, virtual_stages: int) -> dict[str, list[float]]:
    """Median forward, backward and weight-gradient seconds per rank and micro-batch, all of
    the rank's chunks together (0 where a rank ran none of a kind)."""
    out = {}
    for kind in "FBW":
        out[kind] = []
        for rank in range(ranks):
            spans = [o[5] - o[4] for o in ops if o[0] == rank and o[1] == kind]
            out[kind].append(virtual_stages * statistics.median(spans) if spans else 0.0)
    return out


def schedule_table(pipes: dict, m: int) -> dict[str, tuple]:
    """Print the parallelism lab's four pipeline schedules: measured, simulated and formula.

    For each schedule run by the worker (``pipes["runs"]``): the step time, the idle share
    measured from its operations (:func:`measured_idle_share`), the share
    :func:`~gpulab.costmodels.pipeline_schedules.simulate_orders` predicts when fed each
    rank's measured times and one message's time, and the closed form, which leaves the
    messages out. Every schedule must reproduce the unsplit model's gradients and the same
    loss (an ``AssertionError`` otherwise).

    Returns
    -------
    dict
        schedule name -> ``(measured idle share, simulation, closed form, step seconds)``.
    """
    from gpulab.costmodels import pipeline_schedules as ps
    from gpulab.costmodels.parallelism import pipeline_bubble

    p, runs, comm_s = pipes["world"], pipes["runs"], pipes["message_s"]
    print(f"{m} micro-batches on {p} ranks; one message {comm_s * 1e3:.2f} ms")
    print(f"{'schedule':<12} {'step':>8} {'measured':>9} {'simulated':>10} {'formula':>8} "
          f"{'peak held per rank':>24} {'grad diff':>10}")
    rows = {}
    for name, run in runs.items():
        v, ops = run["virtual_stages"], run["ops"]
        assert run["max_grad_diff"] <= 1e-5 * pipes["grad_scale"] * 100, name
        step = max(o[5] for o in ops)
        per = _per_rank_times(ops, p, v)
        backward = [b + w for b, w in zip(per["B"], per["W"], strict=True)]
        sim = ps.simulate_orders(name, per["F"], backward, m, virtual_stages=v,
                                 weight_s=per["W"] if name == "zb-h1" else None, comm_s=comm_s)
        tf, tb, tw = (statistics.mean(per[k]) for k in "FBW")
        formula = {"gpipe": pipeline_bubble(p, m), "1f1b": pipeline_bubble(p, m),
                   "interleaved": ps.interleaved_bubble(p, m, v),
                   "zb-h1": ps.zero_bubble_bubble(p, m, tf, tb, tw)}[name]
        rows[name] = (measured_idle_share(ops, p), sim, formula, step)
        print(f"{name:<12} {step * 1e3:>6.0f}ms {rows[name][0]:>9.0%} {sim.bubble:>10.0%} "
              f"{formula:>8.0%} {_mib(run['held_bytes']):>24} {run['max_grad_diff']:>10.1e}")
    losses = [run["loss"] for run in runs.values()]
    assert max(losses) - min(losses) <= 1e-5 * abs(losses[0])
    print("Every schedule computes the same loss and the unsplit model's gradients.")
    return rows


def expert_report(ep: dict, capacity: int, formula_bytes: float,
                  predicted_s: Callable[..., float] | None = None) -> float:
    """Print the parallelism lab's expert-parallel result beside its formulas.

    ``ep`` is the worker's result; ``capacity`` the capacity per expert and rank the lab
    computed, ``formula_bytes`` the bytes per rank ``gl.expert_parallel_bytes`` gives, and
    ``predicted_s(name, calls, bytes, ranks)`` the α–β time model (None: no fit, no time
    line). Returns the relative error of the bytes sent against the formula.
    """
    routed, kept = ep["routed_per_expert"], ep["kept_per_expert"]
    dropped = sum(routed) - sum(kept)
    print("experts spread over the ranks = all experts on one rank: outputs and gradients agree.")
    print(f"capacity per expert and rank: {capacity} = ceil({ep['capacity_factor']:g} x "
          f"{ep['top_k']} x {ep['tokens_per_rank']} / {ep['n_experts']})")
    print(f"choices per expert (both ranks): {[int(x) for x in routed]}; dropped {dropped:.0f} "
          f"of {sum(routed):.0f} ({dropped / sum(routed):.1%}); busiest expert "
          f"{max(routed) * len(routed) / sum(routed):.2f} x the mean load")
    sent = ep["bytes_per_rank"]
    error = max(sent) / formula_bytes - 1
    print(f"all-to-alls per step: {ep['all_to_all']['calls']} (dispatch and combine, forward and "
          f"backward); bytes sent per rank {[int(b) for b in sent]}, formula 4kTh(e-1)/e x 4 B = "
          f"{formula_bytes:,.0f} ({error:+.1%})")
    if predicted_s is not None:
        a2a = ep["all_to_all"]
        model_s = predicted_s("all_to_all", a2a["calls"], a2a["bytes"], ep["world"])
        print(f"time in all-to-alls {a2a['seconds'] * 1e3:.1f} ms, alpha-beta model "
              f"{model_s * 1e3:.1f} ms")
    return error


def expert_bytes_claim(ep: dict, formula_bytes: float) -> None:
    """Say how the all-to-alls' bytes compare with ``4kTh(e-1)/e``, with its accuracy record.

    Refused unless the bytes sent stay within 10% above the formula (dropped choices only
    remove bytes; routing unevenness between two ranks moves a few percent). The output
    carries the comparison for the book's accuracy page
    (:func:`~gpulab.labkit.accuracy_output.show_with_accuracy`).
    """
    from gpulab.labkit.accuracy_output import show_with_accuracy
    from gpulab.labkit.claims import claim

    routed, sent = ep["routed_per_expert"], ep["bytes_per_rank"]
    dropped = sum(routed) - sum(ep["kept_per_expert"])
    said = claim(
        f"**Measured here:** the all-to-alls sent {max(sent) / formula_bytes:.0%} of the bytes "
        f"the formula `4kTh(e−1)/e` gives. The formula assumes every choice is kept and spread "
        f"evenly over the ranks; the {dropped / sum(routed):.0%} of choices dropped at "
        f"capacity factor {ep['capacity_factor']:g}, and the router's uneven split, make up "
        "the gap.",
        max(sent) <= formula_bytes * 1.1,
        reason="dropped choices only remove bytes; routing unevenness between two ranks moves "
        "a few percent",
    )
    show_with_accuracy(
        said, model="expert all-to-all bytes", metric="|error|",
        value=max(sent) / formula_bytes - 1, n=ep["world"],
        detail=f"bytes sent per rank against 4kTh(e-1)/e, top-{ep['top_k']}, "
               f"{ep['n_experts']} experts, capacity factor {ep['capacity_factor']:g}",
    )


def schedule_claim(rows: dict[str, tuple]) -> None:
    """Say how well the simulator predicted each schedule's idle share, with its accuracy record.

    ``rows`` is :func:`schedule_table`'s result. The sentence reports the largest gap
    between measured and simulated idle shares, and the closed forms beside them; the output
    carries that gap for the book's accuracy page.
    """
    from gpulab.labkit.accuracy_output import show_with_accuracy
    from gpulab.labkit.claims import claim

    worst = max((r[0] - r[1].bubble for r in rows.values()), key=abs)
    pairs = ", ".join(f"{n} {r[0]:.0%} measured, {r[1].bubble:.0%} simulated"
                      for n, r in rows.items())
    closed = ", ".join(f"{n} {r[2]:.0%}" for n, r in rows.items())
    said = claim(
        "**Measured here:** the simulator, fed each rank's measured forward, backward and "
        "weight-gradient times and one message's time, predicted the idle share of "
        f"every schedule within {abs(worst) * 100:.0f} percentage points ({pairs}). "
        f"The closed forms, which leave out the messages, give {closed}. Where the measured "
        "idle share is far above the simulated one, the ranks waited for the CPU, not for "
        "each other: each operation takes a few milliseconds, about one time slice of a "
        "shared 2-core machine."
    )
    show_with_accuracy(
        said, model="pipeline schedules (simulated)", metric="largest |error|",
        value=worst, n=len(rows),
        detail="idle share, measured against simulate_orders on the measured times, for "
               "GPipe, 1F1B, interleaved 1F1B and ZB-H1 (percentage points)",
    )
