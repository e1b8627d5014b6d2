"""The case-study labs' reports: their verdict sentences, tables and figure notes.

Each case-study lab (AlphaGo, BERT, ResNet) computes its numbers in sight and then hands
them to one function here, which prints the table or writes the verdict: the sentence is
assembled from the numbers and returned as a :func:`~gpulab.labkit.claims.claim`, so it is
refused when the numbers do not support it. Published figures the labs compare against are
kept here with their sources.

Examples
--------
>>> from gpulab.labkit.case_studies import policy_learning_claim
>>> before = {"win": 0.57, "draw": 0.14, "loss": 0.29}
>>> after = {"win": 0.92, "draw": 0.03, "loss": 0.05}
>>> print(policy_learning_claim(before, after, updates=40))  # doctest: +ELLIPSIS
before training: wins 57.0%, draws 14.0%, losses 29.0% (4,096 games against the random opponent)
 after training: wins 92.0%, draws 3.0%, losses 5.0% (4,096 games against the random opponent)
**Measured here:** before training the policy won 57% of its games as X ... it won 92%, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gpulab.labkit.claims import Claim, claim

__all__ = [
    "ALPHAGO_ZERO_PUBLISHED_S",
    "RESNET50_PUBLISHED_S",
    "alphago_assumptions",
    "bert_verdict",
    "extend_until_ratio",
    "policy_learning_claim",
    "resnet50_assumptions",
    "resnet_verdict",
    "update_size_claim",
]

_DAY_S = 86400.0

#: Published ResNet-50 training times on ImageNet-1k, seconds (cited in the chapter: MLPerf
#: Training v3.0, https://mlcommons.org/benchmarks/training/, result 3.0-2053; the CPU
#: entry from the submitted logs, github.com/mlcommons/training_results_v3.0, by MLPerf's
#: rule; You et al., "ImageNet Training in Minutes", arXiv:1709.05011).
RESNET50_PUBLISHED_S = {
    "MLPerf v3.0: 8 x H100, to 75.9% (3.0-2053)": 13.466 * 60,
    "MLPerf v3.0: 32 x Xeon 8480+ CPUs, to 75.9% (~88 min, from logs)": 88.17 * 60,
    "You et al.: 1 x M40 GPU, 90 epochs": 14 * _DAY_S,
}

#: AlphaGo Zero's 20-block run: 4.9 million games of self-play in about 3 days (Silver et
#: al., "Mastering the game of Go without human knowledge", Nature 550, 2017).
ALPHAGO_ZERO_PUBLISHED_S = {"AlphaGo Zero: 4.9 M games of Go (20 blocks)": 3 * _DAY_S}


def resnet50_assumptions(forward_flops: float, utilisation: float) -> list[str]:
    """The assumptions under the ResNet-50 lab's prediction figure, one line each.

    Examples
    --------
    >>> resnet50_assumptions(4.09e9, 0.4)[0]
    'ResNet-50 forward 4.09 GFLOP per 224x224 image (FlopCounterMode)'
    """
    return [
        f"ResNet-50 forward {forward_flops / 1e9:.2f} GFLOP per 224x224 image (FlopCounterMode)",
        "training = 3 x forward; 1,281,167 images x 90 epochs",
        f"utilisation {utilisation:.0%} of the datasheet peak (BF16/FP16; FP32 for the Xeon)",
        "peaks from the spec registry; published results as cited in the chapter",
    ]


def alphago_assumptions(moves_per_game: float) -> list[str]:
    """The assumptions under the AlphaGo lab's 4.9-million-games figure, one line each.

    Examples
    --------
    >>> alphago_assumptions(4.17)[0]
    '4.17 agent moves per game (random X); CPU rates from section 2 (random moves, no network)'
    """
    return [
        f"{moves_per_game:.2f} agent moves per game (random X); CPU rates from section 2 "
        "(random moves, no network)",
        "GPU bars: FLOPs and bytes of one eager acting step at datasheet peaks (roofline), "
        "launch overheads ignored",
        "AlphaGo Zero's games are Go with 1,600 network evaluations per move: not the same job",
    ]


def policy_learning_claim(
    before: Mapping[str, float], after: Mapping[str, float], *, updates: int
) -> Claim:
    """Print the policy's results before and after training, and say what training added.

    ``before`` and ``after`` are ``envs.evaluate``'s shares of ``"win"``, ``"draw"`` and
    ``"loss"``. The sentence is refused unless the wins rose by more than 15 points (the
    lab's 40 updates take a random policy from about 57% to about 90%).

    Examples
    --------
    >>> flat = {"win": 0.57, "draw": 0.14, "loss": 0.29}
    >>> policy_learning_claim(flat, flat, updates=40)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpulab.labkit.claims.ClaimError: the data does not support: ... (the policy should learn ...)
    """
    for name, rates in (("before", before), ("after", after)):
        print(f"{name:>6} training: wins {rates['win']:.1%}, draws {rates['draw']:.1%}, "
              f"losses {rates['loss']:.1%} (4,096 games against the random opponent)")
    return claim(
        f"**Measured here:** before training the policy won {before['win']:.0%} of its games "
        f"as X against the random opponent; after {updates} updates it won "
        f"{after['win']:.0%}, and lost {after['loss']:.0%} instead of {before['loss']:.0%}.",
        after["win"] > before["win"] + 0.15,
        reason="the policy should learn to win more often (15 points at least)",
    )


def extend_until_ratio(
    seconds: dict[int, float],
    time_size: Callable[[int], float],
    candidates: Sequence[int],
    ratio: float = 4.0,
) -> int | None:
    """Time one more size where the largest timed is not yet ``ratio`` x the smallest.

    The time of one update is ``t(n) = a + c·n`` (the overhead model,
    :class:`~gpulab.costmodels.overhead.OverheadModel`): until ``c·n`` outgrows ``a``, more
    games per update cost little more time. Fitted through ``seconds`` (size -> seconds), the
    model picks the first of ``candidates`` it puts at ``ratio`` x the smallest size's time;
    ``time_size(n)`` times it and ``seconds`` gains that entry. Returns the size timed, or
    None when none was needed (or ``candidates`` is empty, as on a CPU).

    Examples
    --------
    >>> times = {16: 1e-3, 256: 1.1e-3}
    >>> extend_until_ratio(times, lambda n: 1e-3 + 1e-7 * n, [2**12, 2**14, 2**16])
    ... # doctest: +NORMALIZE_WHITESPACE
    overhead model through the table: a = 0.99 ms per update, c = 416.7 ns per game;
    timed 16,384 games too
    16384
    >>> sorted(times)
    [16, 256, 16384]
    >>> extend_until_ratio(times, lambda n: 0.0, [])  # nothing to try
    """
    from gpulab.costmodels.overhead import OverheadModel, size_for_ratio

    sizes = sorted(seconds)
    if not candidates or seconds[sizes[-1]] >= ratio * seconds[sizes[0]]:
        return None
    model = OverheadModel.fit(sizes, [seconds[n] for n in sizes])
    n = size_for_ratio(model, sizes[0], ratio, list(candidates))
    seconds[n] = time_size(n)
    print(f"overhead model through the table: a = {model.fixed_s * 1e3:.2f} ms per update, "
          f"c = {model.per_item_s * 1e9:.1f} ns per game; timed {n:,} games too")
    return n


def update_size_claim(seconds: Mapping[int, float]) -> Claim:
    """Print updates and games per second for each number of games per update, and the trade.

    ``seconds`` maps games per update to the median seconds of one update. The sentence is a
    claim on timings, refused unless from the fewest to the most games per update the
    updates per second fell *and* the games per second rose, each by 2x at least (room for a
    busy machine: the largest update has at least 256x the games).

    Examples
    --------
    >>> print(update_size_claim({16: 0.01, 4096: 0.05}))  # doctest: +ELLIPSIS
     games/update  updates/s     games/s  per hour: updates           games
               16      100.0       1,600            360,000       5,760,000
            4,096       20.0      81,920             72,000     294,912,000
    **Measured here:** from 16 to 4,096 games per update, updates per second fell from 100 ...
    """
    print(f"{'games/update':>13}{'updates/s':>11}{'games/s':>12}{'per hour: updates':>19}"
          f"{'games':>16}")
    for n, s in seconds.items():
        print(f"{n:>13,}{1 / s:>11,.1f}{n / s:>12,.0f}{3600 / s:>19,.0f}{3600 * n / s:>16,.0f}")
    first, last = min(seconds), max(seconds)
    return claim(
        f"**Measured here:** from {first:,} to {last:,} games per update, updates per second "
        f"fell from {1 / seconds[first]:,.0f} to {1 / seconds[last]:,.1f} while games per "
        f"second rose from {first / seconds[first]:,.0f} to {last / seconds[last]:,.0f}.",
        seconds[last] > 2 * seconds[first] and last / seconds[last] > 2 * first / seconds[first],
        reason="more games per update: fewer updates per second, more games per second "
        "(2x margin)",
        timings=True,
    )


def bert_verdict(one_v100, eight_v100, sixty_four_v100, one_h100, *, strubell_utilisation: float,
                 utilisation: float) -> Claim:
    """The BERT lab's verdict on "multi-GPU training cuts pretraining from weeks to days".

    The first four arguments are the lab's predictions (``gl.time_to_train`` results, with
    ``days`` and ``time_s``) for 1, 8 and 64 V100s and one H100; ``strubell_utilisation`` is
    the share of the V100's FP16 peak that Strubell et al.'s 64 V100s in 79 hours imply, and
    ``utilisation`` the share the predictions assume. Refused unless one V100 needs weeks,
    the 64-GPU run took days, its implied utilisation is under a quarter of the assumed one,
    and 8x the GPUs (8 to 64) are under 4x faster.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> def run(days): return P(days=days, time_s=days * 86400)
    >>> print(bert_verdict(run(16.5), run(2.1), run(0.9), run(2.1),
    ...                    strubell_utilisation=0.031, utilisation=0.4))  # doctest: +ELLIPSIS
    **Verdict: "days" is what 64 GPUs took; ...
    """
    strubell_days = 79 / 24
    speedup_8_to_64 = eight_v100.time_s / sixty_four_v100.time_s
    return claim(
        "**Verdict: \"days\" is what 64 GPUs took; \"weeks\" on one GPU is a prediction, and "
        "an optimistic one.** The only published GPU run, Strubell et al.'s 64 V100s for 79 "
        f"hours ({strubell_days:.1f} days), supports \"days\", but with 64 GPUs, not a "
        f"handful. The \"weeks\" rest on the model: at the assumed {utilisation:.0%} of peak "
        f"one V100 needs {one_v100.days:.1f} days and eight {eight_v100.days:.1f} days. That "
        f"published run implies only {strubell_utilisation:.1%} of the V100's FP16 peak, far "
        "below the assumption, so if the same job ran at a utilisation like it, every row of "
        "the table would be several times longer (its recipe is not published with the "
        "figure, so the comparison is loose). The original run took 4 days on 16 TPU chips. "
        "The premise has also moved: at the same assumption one H100 alone is predicted at "
        f"{one_h100.days:.1f} days. Going further is not free either: 64 V100s, with one EDR "
        f"InfiniBand port each, are predicted only {speedup_8_to_64:.1f}x faster than 8, "
        "because the gradient all-reduce then takes longer than the compute.",
        one_v100.days > 7 and strubell_days > 2 and strubell_utilisation < utilisation / 4
        and speedup_8_to_64 < 4,
        reason="weeks on one V100 even at the assumption; days for the 64-GPU run; the run's "
        "implied utilisation less than a quarter of the assumed one; 8x the GPUs, under 4x "
        "faster",
    )


def resnet_verdict(times: Mapping[str, float], *, h100_sockets: float,
                   h100_over_a100: float) -> Claim:
    """The ResNet lab's verdict on "an A100 trains ResNet-50 in about 1/30 of a CPU's time".

    ``times`` maps ``"bf16"``, ``"tf32"`` and ``"fp32"`` to the A100's time over one Xeon
    8380 socket's at equal utilisation (the ratio of datasheet peaks); ``h100_sockets`` is
    how many Xeon 8480+ sockets one H100 matched in MLPerf Training v3.0 and
    ``h100_over_a100`` the H100's speed over the A100's in the same server and round.
    "About 1/30" is accepted as right in order of magnitude if both the BF16 datasheet ratio
    and the measured one lie within a factor of 3 of 30, and plain FP32 does not.

    Examples
    --------
    >>> print(resnet_verdict({"bf16": 1 / 53, "tf32": 1 / 26, "fp32": 1 / 3},
    ...                      h100_sockets=26, h100_over_a100=2.0))  # doctest: +ELLIPSIS
    **Verdict: right in order of magnitude, not a constant.** ... 1/53 for an A100 in BF16 ...
    """
    bf16_x, tf32_x, fp32_x = (1 / times[p] for p in ("bf16", "tf32", "fp32"))
    a100_x = h100_sockets / h100_over_a100
    return claim(
        "**Verdict: right in order of magnitude, not a constant.** At equal utilisation the "
        f"datasheets give 1/{bf16_x:.0f} for an A100 in BF16 against one Xeon 8380 socket, "
        f"1/{tf32_x:.0f} in TF32 and 1/{fp32_x:.0f} in plain FP32. The closest public "
        f"measurement, MLPerf Training v3.0, has one H100 doing the work of about "
        f"{h100_sockets:.0f} Sapphire Rapids sockets, which with an H100/A100 ratio of "
        f"{h100_over_a100:.1f} (the same server in the same round) makes one A100 worth "
        f"about {a100_x:.0f} sockets: 1/{a100_x:.0f} of one socket's time, about "
        f"1/{a100_x / 2:.1f} of a two-socket server's. \"About 1/30\" fits an A100 in 16-bit "
        "precision against one older server socket; against a modern two-socket server the "
        "gap is several times smaller. It is never a property of the GPU alone.",
        10 <= bf16_x <= 90 and 10 <= a100_x <= 90 and fp32_x < 10,
        reason="30 within a factor of 3 of both ratios; plain FP32 far from it",
    )
