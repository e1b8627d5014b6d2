"""Pipeline schedule orders and their simulation, and the counts of the splits inside a layer.

Hand-derived values: each expected number below is worked out in its comment.
"""

import math

import pytest

from gpulab.costmodels import pipeline_schedules as ps
from gpulab.costmodels import split_layers as sl


def _names(order):
    return " ".join(f"{k}{c}.{i}" for k, c, i in order)


def test_1f1b_and_gpipe_orders_are_the_textbook_ones():
    gpipe = ps.pipeline_orders("gpipe", 2, 2)
    assert [_names(o) for o in gpipe] == ["F0.0 F0.1 B0.0 B0.1"] * 2
    one = ps.pipeline_orders("1f1b", 3, 3)
    # rank 0 runs p - 1 = 2 warm-up forwards, rank 2 (the last) none.
    assert _names(one[0]) == "F0.0 F0.1 F0.2 B0.0 B0.1 B0.2"
    assert _names(one[2]) == "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2"


def test_zb_h1_keeps_rank_r_with_r_weight_gradients_pending():
    orders = ps.pipeline_orders("zb-h1", 3, 4)
    for r, order in enumerate(orders):
        pending = most = 0
        for kind, _, _ in order:
            pending += {"B": 1, "W": -1}.get(kind, 0)
            most = max(most, pending)
        # r left pending between passes: r + 1 right after a B, until the W that follows it.
        assert most == r + 1
        assert sorted(i for k, _, i in order if k == "W") == [0, 1, 2, 3]


def test_interleaved_orders_run_every_chunk_of_every_micro_batch_once():
    orders = ps.pipeline_orders("interleaved", 2, 4, virtual_stages=2)
    for order in orders:
        assert sorted((k, c, i) for k, c, i in order) == sorted(
            (k, c, i) for k in "FB" for c in range(2) for i in range(4)
        )
    with pytest.raises(ValueError, match="multiple of n_ranks=2"):
        ps.pipeline_orders("interleaved", 2, 3, virtual_stages=2)
    with pytest.raises(ValueError, match="needs schedule='interleaved'"):
        ps.pipeline_orders("1f1b", 2, 4, virtual_stages=2)


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16), (8, 32)])
def test_simulation_reproduces_the_closed_forms_for_equal_stages(p, m):
    for schedule in ("gpipe", "1f1b"):
        run = ps.simulate_orders(schedule, [1.0] * p, [2.0] * p, m)
        assert run.bubble == pytest.approx((p - 1) / (m + p - 1))
    run = ps.simulate_orders("interleaved", [1.0] * p, [2.0] * p, m, virtual_stages=2)
    assert run.bubble == pytest.approx(ps.interleaved_bubble(p, m, 2))
    for w in (0.5, 0.8, 1.0):  # T_F = 1, T_B = 2 - w, T_W = w
        run = ps.simulate_orders("zb-h1", [1.0] * p, [2.0] * p, m, weight_s=[w] * p)
        assert run.bubble == pytest.approx(ps.zero_bubble_bubble(p, m, 1.0, 2.0 - w, w))


def test_hand_derived_bubbles_and_peaks():
    # 1F1B, p = 2, m = 4, T_F = 1, T_B = 2: each rank works 12 and idles (p-1)(1+2) = 3.
    assert ps.simulate_orders("1f1b", [1.0] * 2, [2.0] * 2, 4).bubble == pytest.approx(3 / 15)
    # ZB-H1 with T_F = T_B = T_W = 1: idle (p-1)(1+1-1) = 1 against 12 of work: 1/13.
    assert ps.zero_bubble_bubble(2, 4, 1.0, 1.0, 1.0) == pytest.approx(1 / 13)
    # Interleaved, p = 4, m = 8, v = 2: (4-1)/(16+3) = 3/19.
    assert ps.interleaved_bubble(4, 8, 2) == pytest.approx(3 / 19)
    # Rank 0's warm-up: 2(p-1) + (v-1)p = 6 + 4 = 10 forwards, then one more: 11 chunks, i.e.
    # 5.5 micro-batches' worth = p(1 + (p-1)/(pv)) = 4 x 11/8.
    assert ps.interleaved_peak_chunks(4, 8, 2) == 11 == 4 * (1 + 3 / 8) * 2
    run = ps.simulate_orders("interleaved", [2.0] * 4, [4.0] * 4, 8, virtual_stages=2)
    assert run.peak_in_flight == tuple(ps.interleaved_peak_chunks(4, 8, 2, r) for r in range(4))
    # ZB-H1 holds p micro-batches on every rank, 1F1B's peak on rank 0.
    zb = ps.simulate_orders("zb-h1", [1.0] * 4, [2.0] * 4, 8, weight_s=[1.0] * 4)
    assert zb.peak_in_flight == (4, 4, 4, 4)


def test_messages_lengthen_the_interleaved_schedule_more():
    # v times the messages: with a transfer as long as a chunk's forward, interleaving loses.
    plain = ps.simulate_orders("1f1b", [1.0] * 2, [2.0] * 2, 4, comm_s=0.5)
    inter = ps.simulate_orders("interleaved", [1.0] * 2, [2.0] * 2, 4, virtual_stages=2,
                               comm_s=0.5)  # fmt: skip
    assert inter.bubble > ps.interleaved_bubble(2, 4, 2)
    assert plain.bubble > ps.interleaved_bubble(2, 4, 1) - 1e-12


def test_simulation_refuses_bad_inputs_by_name():
    with pytest.raises(ValueError, match="weight_s=None"):
        ps.simulate_orders("zb-h1", [1.0], [2.0], 2)
    with pytest.raises(ValueError, match=r"weight_s\[0\]=3.0 must not exceed"):
        ps.simulate_orders("zb-h1", [1.0], [2.0], 2, weight_s=[3.0])
    with pytest.raises(ValueError, match="backward_s has 1 entries"):
        ps.simulate_orders("1f1b", [1.0, 1.0], [2.0], 2)
    with pytest.raises(TypeError, match="forward_s"):
        ps.simulate_orders("1f1b", 1.0, [2.0], 2)
    with pytest.raises(ValueError, match="schedule"):
        ps.pipeline_orders("zero", 2, 2)


def test_sequence_parallel_traffic_is_tensor_parallels_plus_the_regathers():
    # b s h = 2 x 128 x 64 = 16,384 values of 4 bytes; (t-1)/t = 1/2: 32,768 B per call.
    c = sl.sequence_parallel_comm(2, 128, 64, 2, bytes_per_value=4)
    assert (c.n_allgathers, c.n_reduce_scatters) == (6, 4)
    assert c.bytes_per_rank == 10 * 32768 and c.tensor_parallel_bytes_per_rank == 8 * 32768
    plain = sl.sequence_parallel_comm(2, 128, 64, 2, bytes_per_value=4, regather=False)
    assert plain.bytes_per_rank == plain.tensor_parallel_bytes_per_rank
    assert sl.sequence_parallel_comm(1, 8, 8, 1).bytes_per_rank == 0


def test_causal_pairs_per_rank():
    # 8 tokens on 2 ranks, contiguous: rank 0 has 4 + 3 + 2 + 1 = 10 pairs, rank 1 16 + 10.
    assert sl.causal_pairs_per_rank(8, 2) == [10, 26]
    # Zig-zag: chunks of 2; rank 0 holds chunks 0 and 3: 3 + (3 x 4 + 3) = 18; rank 1 the same.
    assert sl.causal_pairs_per_rank(8, 2, "zigzag") == [18, 18]
    for c in (2, 4, 8):
        s = 64 * c
        total = s * (s + 1) // 2
        assert sum(sl.causal_pairs_per_rank(s, c)) == total
        assert sum(sl.causal_pairs_per_rank(s, c, "zigzag")) == total
        assert len(set(sl.causal_pairs_per_rank(s, c, "zigzag"))) == 1
    with pytest.raises(ValueError, match="multiple of 4"):
        sl.causal_pairs_per_rank(10, 2, "zigzag")


def test_expert_capacity():
    assert sl.expert_capacity(256, 4, 2, 1.0) == 128  # 2 x 256 / 4
    assert sl.expert_capacity(100, 8, 1, 1.25) == math.ceil(1.25 * 100 / 8) == 16
    with pytest.raises(ValueError, match="capacity_factor"):
        sl.expert_capacity(100, 8, 1, 0)


def test_the_timeline_drawing_shows_the_simulated_idle_share():
    import matplotlib

    matplotlib.use("Agg")
    import gpulab as gl

    runs = {
        name: ps.simulate_orders(name, [1e-3] * 2, [2e-3] * 2, 4, virtual_stages=v,
                                 weight_s=[1e-3] * 2 if name == "zb-h1" else None)
        for name, v in (("1f1b", 1), ("interleaved", 2), ("zb-h1", 1))
    }  # fmt: skip
    fig, bubbles = gl.diagrams.draw_schedule_runs({n: list(r.ops) for n, r in runs.items()})
    assert bubbles == pytest.approx({n: r.bubble for n, r in runs.items()})
    assert len(fig.axes) == 3
    with pytest.raises(ValueError, match=r"runs\['x'\]\[0\]"):
        gl.diagrams.draw_schedule_runs({"x": [(0, "Q", 0, 0, 0.0, 1.0)]})
