"""A vectorised board game: thousands of tic-tac-toe games stepped together as tensors.

Reinforcement learning spends much of its time *playing*: an agent improves only as fast
as it can gather games. :class:`TicTacToe` keeps ``n_envs`` boards in one tensor and plays
a move in all of them with a handful of tensor operations, on the CPU or on a GPU, so the
number of games per second grows with ``n_envs`` until the device is full: the
"more updates, more exploration" of the AlphaGo case study, in numbers.

The agent plays X (+1) and moves first; a built-in opponent plays O (−1) right after each
agent move, so one :meth:`TicTacToe.step` is one move by each side. :func:`reference_step`
is the same rule for one board in plain Python, the specification the tests hold the
vectorised version to.

See also the chapter "Case study: AlphaGo-style reinforcement learning"
(``book/case_alphago.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gpulab._checks import (
    MAX_GAMES,
    MAX_SEED,
    at_most,
    choice,
    flag,
    non_negative_int,
    positive_int,
    wrong_type,
)
from gpulab.measure.device import torch_device

__all__ = ["LINES", "Rollout", "TicTacToe", "evaluate", "reference_step", "rollout"]

#: The eight winning lines of a 3×3 board, cells numbered 0–8 row by row.
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_OPPONENTS = ("random", "first")


def _wins(boards: torch.Tensor, lines: torch.Tensor, player: int) -> torch.Tensor:
    """True for each board on which ``player`` holds a whole line."""
    return (boards[:, lines] == player).all(dim=-1).any(dim=-1)


class TicTacToe:
    """``n_envs`` games of tic-tac-toe against a built-in opponent, stepped together.

    Parameters
    ----------
    n_envs : int
        Games played side by side, at most ``MAX_GAMES`` (2**26).
    device : str or torch.device
        Where the boards live (``"cpu"``, ``"cuda"``).
    opponent : {"random", "first"}
        The opponent's rule: a uniformly random empty cell, or the first empty cell
        (deterministic; used by the tests).
    seed : int
        Seed of the opponent's random generator, from 0 to ``MAX_SEED`` (2**32 - 1).
    auto_reset : bool
        Start a new game in an environment as soon as its game ends (the usual choice
        for throughput). With False, a finished game stays finished until :meth:`reset`,
        and further actions for it are ignored.

    Notes
    -----
    Rewards, seen from the agent: +1 for a win, −1 for a loss, 0 for a draw and for
    every move that does not end the game. An illegal move (an occupied cell) loses at once.

    Examples
    --------
    >>> env = TicTacToe(4, opponent="first")
    >>> obs = env.reset()
    >>> obs.shape
    torch.Size([4, 27])
    >>> obs, reward, done = env.step(torch.tensor([4, 4, 0, 8]))
    >>> env.boards[0].tolist()          # X in the centre, O in the first empty cell
    [-1, 0, 0, 0, 1, 0, 0, 0, 0]
    >>> reward.tolist(), done.tolist()
    ([0.0, 0.0, 0.0, 0.0], [False, False, False, False])
    """

    n_actions = 9
    obs_size = 27

    def __init__(
        self,
        n_envs: int,
        *,
        device: str | torch.device = "cpu",
        opponent: str = "random",
        seed: int = 0,
        auto_reset: bool = True,
    ):
        self.n_envs = positive_int("n_envs", n_envs)
        at_most("n_envs", n_envs, MAX_GAMES, "games played side by side")
        self.opponent = choice("opponent", opponent, _OPPONENTS)
        seed = at_most("seed", non_negative_int("seed", seed), MAX_SEED, "a seed: 2**32 - 1")
        self.auto_reset = flag("auto_reset", auto_reset)
        self.device = torch_device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.lines = torch.tensor(LINES, device=self.device)
        self.boards = torch.zeros(n_envs, 9, dtype=torch.int8, device=self.device)
        self.finished = torch.zeros(n_envs, dtype=torch.bool, device=self.device)

    def reset(self) -> torch.Tensor:
        """Empty every board; return the observations."""
        self.boards.zero_()
        self.finished.zero_()
        return self.observe()

    def observe(self) -> torch.Tensor:
        """One-hot boards, shape (n_envs, 27): for each cell [empty, agent's X, opponent's O]."""
        b = self.boards
        return torch.cat([b == 0, b == 1, b == -1], dim=1).float()

    def legal_moves(self) -> torch.Tensor:
        """Boolean mask of empty cells, shape (n_envs, 9)."""
        return self.boards == 0

    def _opponent_moves(self, legal: torch.Tensor) -> torch.Tensor:
        if self.opponent == "first":
            scores = legal.float() * torch.arange(9, 0, -1, device=self.device)
        else:  # a random empty cell: the largest of uniform scores over the empty cells
            scores = torch.rand(legal.shape, generator=self.generator, device=self.device)
            scores = scores.masked_fill(~legal, -1.0)
        return scores.argmax(dim=1)

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Play the agent's move and the opponent's reply in every game.

        Parameters
        ----------
        actions : tensor of int, shape (n_envs,)
            The agent's cell (0–8) in each game.

        Returns
        -------
        obs : tensor, shape (n_envs, 27)
            Observations after the step (of the new game where one ended and
            ``auto_reset`` is on).
        reward : float tensor, shape (n_envs,)
        done : bool tensor, shape (n_envs,)
            True where this step ended the game.
        """
        if not isinstance(actions, torch.Tensor):
            raise wrong_type("actions", actions, f"a tensor of shape ({self.n_envs},)")
        if actions.is_floating_point() or actions.is_complex() or actions.dtype == torch.bool:
            raise TypeError(f"actions has dtype {actions.dtype}; give integer cells 0-8")
        if actions.shape != (self.n_envs,):
            raise ValueError(
                f"actions={tuple(actions.shape)!r}: expected a tensor of shape ({self.n_envs},), "
                "one cell per game"
            )
        if actions.numel() and not bool(((actions >= 0) & (actions <= 8)).all()):
            raise ValueError(f"actions={actions.tolist()!r}: every cell must be 0-8")
        rows = torch.arange(self.n_envs, device=self.device)
        actions = actions.to(self.device).long()
        active = ~self.finished
        boards = self.boards
        reward = torch.zeros(self.n_envs, device=self.device)

        illegal = active & (boards[rows, actions] != 0)
        place = active & ~illegal
        boards[rows, actions] = torch.where(place, 1, boards[rows, actions]).to(boards.dtype)
        agent_won = place & _wins(boards, self.lines, 1)
        full = (boards != 0).all(dim=1)
        over = illegal | agent_won | (place & full)

        replies = self._opponent_moves(boards == 0)
        reply = active & ~over
        boards[rows, replies] = torch.where(reply, -1, boards[rows, replies]).to(boards.dtype)
        opponent_won = reply & _wins(boards, self.lines, -1)
        full = (boards != 0).all(dim=1)
        done = over | (reply & (opponent_won | full))

        reward = reward + agent_won.float() - (illegal | opponent_won).float()
        self.finished |= done
        if self.auto_reset:
            boards.masked_fill_(self.finished.unsqueeze(1), 0)
            self.finished.zero_()
        return self.observe(), reward, done


def _winner(board: list[int]) -> int:
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


def reference_step(board: list[int], action: int) -> tuple[list[int], float, bool]:
    """One step of :class:`TicTacToe` with the ``"first"`` opponent, for one board, in Python.

    The plain-Python specification the vectorised version is tested against.

    Examples
    --------
    >>> reference_step([0] * 9, 4)
    ([-1, 0, 0, 0, 1, 0, 0, 0, 0], 0.0, False)
    >>> reference_step([1, 1, 0, -1, -1, 0, 0, 0, 0], 2)[1:]
    (1.0, True)
    """
    if (
        isinstance(board, str)
        or not isinstance(board, Sequence)
        or any(isinstance(c, bool) or not isinstance(c, int) for c in board)
    ):
        raise wrong_type("board", board, "a sequence of 9 cells, each -1, 0 or 1")
    board = list(board)
    if len(board) != 9 or any(c not in (-1, 0, 1) for c in board):
        raise ValueError(f"board={board!r} must be 9 cells, each -1, 0 or 1")
    if isinstance(action, bool) or not isinstance(action, int):
        raise wrong_type("action", action, "a cell from 0 to 8")
    if not 0 <= action <= 8:
        raise ValueError(f"action={action!r} must be a cell from 0 to 8")
    if board[action] != 0:
        return board, -1.0, True
    board[action] = 1
    if _winner(board) == 1:
        return board, 1.0, True
    if all(board):
        return board, 0.0, True
    board[board.index(0)] = -1
    if _winner(board) == -1:
        return board, -1.0, True
    return board, 0.0, all(board)


@dataclass
class Rollout:
    """One game per environment, played to its end by a policy.

    Attributes
    ----------
    log_probs : tensor, shape (moves, n_envs)
        Log-probability of each move the agent chose (0 after the game ended).
    active : bool tensor, shape (moves, n_envs)
        Whether the game was still running at each move.
    returns : tensor, shape (n_envs,)
        Final reward of each game: +1 win, 0 draw, −1 loss.

    Raises
    ------
    TypeError
        For a field that is not a tensor, or of the wrong dtype.
    ValueError
        For shapes that do not agree, a return other than −1, 0 or 1, or a log-probability
        above 0 or NaN.
    """

    log_probs: torch.Tensor
    active: torch.Tensor
    returns: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("log_probs", "active", "returns"):
            if not isinstance(getattr(self, name), torch.Tensor):
                raise wrong_type(name, getattr(self, name), "a tensor")
        if not self.log_probs.is_floating_point():
            raise TypeError(f"log_probs has dtype {self.log_probs.dtype}; give log-probabilities")
        if self.active.dtype != torch.bool:
            raise TypeError(f"active has dtype {self.active.dtype}; give a bool tensor")
        if self.returns.is_complex() or self.returns.dtype == torch.bool:
            raise TypeError(f"returns has dtype {self.returns.dtype}; give each game's reward")
        if self.log_probs.dim() != 2:
            raise ValueError(
                f"log_probs has shape {tuple(self.log_probs.shape)}; expected (moves, n_envs)"
            )
        if self.active.shape != self.log_probs.shape:
            raise ValueError(
                f"active has shape {tuple(self.active.shape)}, log_probs "
                f"{tuple(self.log_probs.shape)}: one flag per move of each game"
            )
        if self.returns.shape != self.log_probs.shape[1:]:
            raise ValueError(
                f"returns has shape {tuple(self.returns.shape)}; expected "
                f"({self.log_probs.shape[1]},), one reward per game"
            )
        with torch.no_grad():
            if not bool(((self.returns == -1) | (self.returns == 0) | (self.returns == 1)).all()):
                raise ValueError(
                    f"returns={self.returns.tolist()!r:.80} must hold each game's final reward: "
                    "-1, 0 or 1"
                )
            if not bool((self.log_probs <= 0).all()):  # NaN fails this too
                raise ValueError(
                    f"log_probs={self.log_probs.tolist()!r:.80} must hold log-probabilities: "
                    "0 or below"
                )

    @property
    def moves(self) -> int:
        """Agent moves played, over all games (environment steps that counted)."""
        return int(self.active.sum())


def rollout(env: TicTacToe, policy, *, greedy: bool = False) -> Rollout:
    """Play one game in every environment of ``env`` to its end with ``policy``.

    ``policy(obs, legal)`` returns logits over the 9 cells (illegal ones at −∞, as
    :class:`gpulab.labkit.networks.PolicyNet` does). Moves are sampled from the softmax, or the most
    likely move is played with ``greedy=True``. ``env`` must have ``auto_reset=False``.
    """
    if not isinstance(env, TicTacToe):
        raise wrong_type("env", env, "a TicTacToe")
    if env.auto_reset:
        raise ValueError("rollout needs TicTacToe(..., auto_reset=False): one game per env")
    if not callable(policy):
        raise wrong_type("policy", policy, "a callable: policy(obs, legal) -> logits")
    flag("greedy", greedy)
    obs = env.reset()
    log_probs, actives = [], []
    returns = torch.zeros(env.n_envs, device=env.device)
    for _ in range(5):  # X makes at most five moves in a game
        active = ~env.finished
        logits = policy(obs, env.legal_moves())
        dist = torch.distributions.Categorical(logits=logits)
        actions = logits.argmax(dim=1) if greedy else dist.sample()
        log_probs.append(dist.log_prob(actions) * active)
        actives.append(active)
        obs, reward, _ = env.step(actions)
        returns += reward * active
    return Rollout(torch.stack(log_probs), torch.stack(actives), returns)


def evaluate(env: TicTacToe, policy, *, greedy: bool = False) -> dict[str, float]:
    """Fractions of wins, draws and losses of ``policy`` over one game per environment."""
    with torch.no_grad():
        returns = rollout(env, policy, greedy=greedy).returns
    return {
        "win": float((returns > 0).float().mean()),
        "draw": float((returns == 0).float().mean()),
        "loss": float((returns < 0).float().mean()),
    }
