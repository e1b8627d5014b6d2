"""The vectorised tic-tac-toe plays by the same rules as the one-board reference."""

import random

import pytest
import torch

from gpulab.labkit.envs import TicTacToe, evaluate, reference_step, rollout
from gpulab.labkit.networks import PolicyNet


def random_actions(boards, rng, illegal_rate):
    actions = []
    for board in boards:
        empty = [c for c in range(9) if board[c] == 0]
        if empty and rng.random() > illegal_rate:
            actions.append(rng.choice(empty))
        else:
            actions.append(rng.randrange(9))  # sometimes an occupied cell: an illegal move
    return actions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_step_equals_the_reference_loop(seed):
    rng = random.Random(seed)
    n = 64
    env = TicTacToe(n, opponent="first", auto_reset=False)
    env.reset()
    boards = [[0] * 9 for _ in range(n)]
    finished = [False] * n
    for _ in range(5):
        actions = random_actions(boards, rng, illegal_rate=0.1)
        _, reward, done = env.step(torch.tensor(actions))
        for i in range(n):
            if finished[i]:  # a finished game ignores further moves
                assert (reward[i].item(), done[i].item()) == (0.0, False)
                continue
            boards[i], ref_reward, ref_done = reference_step(boards[i], actions[i])
            assert env.boards[i].tolist() == boards[i]
            assert (reward[i].item(), done[i].item()) == (ref_reward, ref_done)
            finished[i] = ref_done
    assert all(finished)  # no game lasts more than five agent moves


def test_wins_losses_draws_and_illegal_moves():
    env = TicTacToe(1, opponent="first", auto_reset=False)
    env.reset()
    env.boards[0] = torch.tensor([1, 1, 0, -1, -1, 0, 0, 0, 0], dtype=torch.int8)
    assert env.step(torch.tensor([2]))[1].item() == 1.0  # X completes the top row
    env.reset()
    env.boards[0] = torch.tensor([1, 1, -1, -1, -1, 0, 1, 0, 0], dtype=torch.int8)
    _, reward, done = env.step(torch.tensor([7]))  # O replies in cell 5
    assert env.boards[0].tolist() == [1, 1, -1, -1, -1, -1, 1, 1, 0]
    assert (reward.item(), done.item()) == (-1.0, True)  # O's middle row
    env.reset()
    env.boards[0] = torch.tensor([1, -1, 1, 1, -1, -1, -1, 1, 0], dtype=torch.int8)
    _, reward, done = env.step(torch.tensor([8]))  # last cell, no line
    assert (reward.item(), done.item()) == (0.0, True)  # a draw
    env.reset()
    env.boards[0] = torch.tensor([1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=torch.int8)
    assert env.step(torch.tensor([0]))[1].item() == -1.0  # occupied: illegal, lost


def test_random_opponent_plays_legal_moves_and_auto_reset_restarts_games():
    env = TicTacToe(512, seed=3)
    env.reset()
    torch.manual_seed(0)
    games_done = 0
    for _ in range(20):
        legal = env.legal_moves()
        actions = torch.rand(512, 9).masked_fill(~legal, -1).argmax(1)
        before = env.boards.clone()
        _, reward, done = env.step(actions)
        games_done += int(done.sum())
        cont = ~done
        # in a game that goes on, exactly one X and one O were added to empty cells
        changed = env.boards[cont] != before[cont]
        assert torch.all(changed.sum(1) == 2)
        assert torch.all(before[cont][changed] == 0)
        assert torch.all(env.boards[done] == 0)  # finished games start again
        assert set(reward.tolist()) <= {-1.0, 0.0, 1.0}
    assert games_done > 512


def test_random_play_wins_as_often_as_known():
    # Random X against random O: X wins 58.5%, draws 12.7%, loses 28.8% of games
    # (exhaustive enumeration of all games weighted by their probability).
    env = TicTacToe(20000, seed=0, auto_reset=False)

    def uniform(obs, legal):
        return torch.zeros(obs.shape[0], 9).masked_fill(~legal, float("-inf"))

    torch.manual_seed(0)
    rates = evaluate(env, uniform)
    assert rates["win"] == pytest.approx(0.585, abs=0.015)
    assert rates["draw"] == pytest.approx(0.127, abs=0.015)
    assert rates["loss"] == pytest.approx(0.288, abs=0.015)


def test_policy_gradient_learns_to_beat_the_random_opponent():
    torch.manual_seed(0)
    policy = PolicyNet(27, 9)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    env = TicTacToe(128, seed=1, auto_reset=False)
    before = evaluate(TicTacToe(1024, seed=2, auto_reset=False), policy)["win"]
    for _ in range(20):
        game = rollout(env, policy)
        advantage = game.returns - game.returns.mean()
        loss = -(game.log_probs.sum(0) * advantage).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = evaluate(TicTacToe(1024, seed=2, auto_reset=False), policy)["win"]
    assert after > before + 0.15


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_envs=0"):
        TicTacToe(0)
    with pytest.raises(ValueError, match="opponent='minimax'"):
        TicTacToe(2, opponent="minimax")
    with pytest.raises(ValueError, match=r"expected a tensor of shape \(2,\)"):
        TicTacToe(2).step(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="auto_reset=False"):
        rollout(TicTacToe(2), PolicyNet(27, 9))
    with pytest.raises(TypeError, match="env=42"):
        rollout(42, PolicyNet(27, 9))
    with pytest.raises(TypeError, match="policy=42"):
        rollout(TicTacToe(2, auto_reset=False), 42)
    with pytest.raises(TypeError, match="greedy=1"):
        evaluate(TicTacToe(2, auto_reset=False), PolicyNet(27, 9), greedy=1)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_envs=True), TypeError, "n_envs=True"),
        (dict(n_envs=2.0), TypeError, "n_envs=2.0"),
        (dict(n_envs="4"), TypeError, "n_envs='4'"),
        (dict(seed=-1), ValueError, "seed=-1"),
        (dict(auto_reset="no"), TypeError, "auto_reset='no'"),
        (dict(device="tpu"), ValueError, "device='tpu'"),
        (dict(device=0), TypeError, "device=0"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs, error, match):
    args = dict(n_envs=2) | kwargs
    with pytest.raises(error, match=match):
        TicTacToe(args.pop("n_envs"), **args)


@pytest.mark.parametrize(
    "actions, error, match",
    [
        (torch.tensor([0.0, 1.0]), TypeError, "dtype"),
        (torch.tensor([0, 9]), ValueError, "0-8"),
        (torch.tensor([-1, 0]), ValueError, "0-8"),
        (torch.tensor([0, 1, 2]), ValueError, "expected a tensor"),
        ([0, 1], TypeError, "must be a tensor"),
    ],
)
def test_bad_actions_are_refused_and_leave_the_boards_alone(actions, error, match):
    env = TicTacToe(2, opponent="first")
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    assert env.boards.abs().sum() == 0


@pytest.mark.parametrize(
    "board, action, error, match",
    [
        ([0] * 8, 0, ValueError, "board="),
        ([0] * 8 + [2], 0, ValueError, "board="),
        ([0] * 8 + [0.5], 0, TypeError, "board="),
        ("x" * 9, 0, TypeError, "board="),
        ([0] * 9, 9, ValueError, "action=9"),
        ([0] * 9, True, TypeError, "action=True"),
    ],  # fmt: skip
)
def test_reference_step_refuses_impossible_boards_and_moves(board, action, error, match):
    with pytest.raises(error, match=match):
        reference_step(board, action)
