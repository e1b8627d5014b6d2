"""The networks and the game the labs train on: sizes, seeds and records refused by name.

``tests/test_api_contract.py`` leaves out ``gpulab.labkit.networks`` and
``gpulab.labkit.envs``: their valid calls build torch models and play games. This file holds
their sizes, seeds and records to the same policy, in-process. A size or a seed above its
documented limit (a ``MAX_*`` of ``gpulab._checks``, stated in the docstring) is refused with a
``ValueError`` that names the parameter and states the limit, before anything is allocated:
never torch's "Overflow when unpacking long long", which names no parameter. A record of a
rollout refuses fields that are missing, of the wrong type or that disagree.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from gpulab import _checks
from gpulab.labkit import envs, networks

HUGE_INT = 10**30
BEYOND_FLOAT = 10**400  # an int no float can hold

#: The limits this file checks (``tests/test_api_contract_limits.py`` requires each ``MAX_*``
#: of ``gpulab._checks`` to be checked somewhere).
LIMITED = {"MAX_LAYER_WIDTH", "MAX_BLOCKS", "MAX_GAMES", "MAX_SEED"}


@dataclasses.dataclass(frozen=True)
class Case:
    """One size or seed of one callable: its valid call, its limit and whether the limit is cheap.

    ``divisor``: this call's share of the limit (a Bottleneck puts out 4 x width channels, the
    last of two ResNet stages 2 x width). ``at_limit_is_cheap``: the call at the limit builds
    a model of a few million parameters at most, so the test runs it.
    """

    fn: object
    args: tuple
    kwargs: dict
    param: str
    constant: str
    divisor: int = 1
    at_limit_is_cheap: bool = False

    @property
    def limit(self) -> int:
        return getattr(_checks, self.constant) // self.divisor

    def call(self, value):
        return self.fn(*self.args, **(self.kwargs | {self.param: value}))


_W = "MAX_LAYER_WIDTH"
_POLICY = (networks.PolicyNet, (), dict(n_inputs=27, n_actions=9, hidden=64))
_BASIC = (networks.BasicBlock, (), dict(c_in=4, width=4, stride=1))
_BOTTLENECK = (networks.Bottleneck, (), dict(c_in=4, width=4, stride=1))
_RESNET = (
    networks.ResNet,
    (networks.BasicBlock,),
    dict(layers=(1, 1), num_classes=10, in_channels=1, width=4, small_input=True),
)
_GAME = (envs.TicTacToe, (), dict(n_envs=4))

CASES = {
    "PolicyNet-n_inputs": Case(*_POLICY, "n_inputs", _W, at_limit_is_cheap=True),
    "PolicyNet-n_actions": Case(*_POLICY, "n_actions", _W, at_limit_is_cheap=True),
    "PolicyNet-hidden": Case(*_POLICY, "hidden", _W, at_limit_is_cheap=True),
    "BasicBlock-c_in": Case(*_BASIC, "c_in", _W, at_limit_is_cheap=True),
    "BasicBlock-width": Case(*_BASIC, "width", _W),
    "BasicBlock-stride": Case(*_BASIC, "stride", _W, at_limit_is_cheap=True),
    "Bottleneck-c_in": Case(*_BOTTLENECK, "c_in", _W, at_limit_is_cheap=True),
    "Bottleneck-width": Case(*_BOTTLENECK, "width", _W, divisor=4),
    "Bottleneck-stride": Case(*_BOTTLENECK, "stride", _W, at_limit_is_cheap=True),
    "ResNet-num_classes": Case(*_RESNET, "num_classes", _W, at_limit_is_cheap=True),
    "ResNet-in_channels": Case(*_RESNET, "in_channels", _W, at_limit_is_cheap=True),
    "ResNet-width": Case(*_RESNET, "width", _W, divisor=2),
    "resnet18-num_classes": Case(networks.resnet18, (), {}, "num_classes", _W),
    "resnet18-in_channels": Case(networks.resnet18, (), {}, "in_channels", _W),
    "resnet50-num_classes": Case(networks.resnet50, (), {}, "num_classes", _W),
    "resnet50-in_channels": Case(networks.resnet50, (), {}, "in_channels", _W),
    "small_resnet-num_classes": Case(networks.small_resnet, (), {}, "num_classes", _W),
    "small_resnet-in_channels": Case(
        networks.small_resnet, (), {}, "in_channels", _W, at_limit_is_cheap=True
    ),
    # three stages of basic blocks: the last has 4 x width channels
    "small_resnet-width": Case(networks.small_resnet, (), {}, "width", _W, divisor=4),
    "TicTacToe-n_envs": Case(*_GAME, "n_envs", "MAX_GAMES"),
    "TicTacToe-seed": Case(*_GAME, "seed", "MAX_SEED", at_limit_is_cheap=True),
}


def _names(message: str, param: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(param)}(?!\w)", message) is not None


def _shown(limit: int) -> str:
    """The ways a message may write the limit: 65536, 65_536 or 65,536."""
    return "|".join(re.escape(f) for f in {str(limit), f"{limit:_}", f"{limit:,}"})


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_huge_size_or_seed_is_refused_by_name(case):
    c = CASES[case]
    for value in (HUGE_INT, BEYOND_FLOAT):
        with pytest.raises(ValueError) as caught:
            c.call(value)
        assert _names(str(caught.value), c.param), caught.value
        assert "Overflow" not in str(caught.value)


@pytest.mark.parametrize("case", sorted(CASES))
def test_just_above_the_limit_is_refused_with_the_limit(case):
    c = CASES[case]
    with pytest.raises(ValueError) as caught:
        c.call(c.limit + 1)
    message = str(caught.value)
    assert _names(message, c.param), message
    assert re.search(_shown(getattr(_checks, c.constant)), message), message


@pytest.mark.parametrize("case", sorted(n for n, c in CASES.items() if c.at_limit_is_cheap))
def test_the_limit_itself_is_accepted(case):
    c = CASES[case]
    c.call(c.limit)


@pytest.mark.parametrize(
    "layers, says",
    [
        ((HUGE_INT,), r"^layers=.* at most 1_000 blocks per stage"),
        ((1, _checks.MAX_BLOCKS + 1), r"^layers=.* at most 1_000 blocks per stage"),
        ((1,) * 20, r"^width=16 with 20 stages in layers: .* more than 65_536"),
        ((1,) * 5000, r"^width=16 with 5000 stages in layers: .* more than 65_536"),
    ],
)
def test_a_resnet_refuses_stages_it_could_not_build(layers, says):
    with pytest.raises(ValueError, match=says):
        networks.small_resnet(layers=layers)


def test_the_limits_are_in_the_docstrings():
    for fn, words in [
        (networks.PolicyNet, "MAX_LAYER_WIDTH"),
        (networks.BasicBlock, "MAX_LAYER_WIDTH"),
        (networks.Bottleneck, "MAX_LAYER_WIDTH"),
        (networks.ResNet, "MAX_BLOCKS"),
        (envs.TicTacToe, "MAX_GAMES"),
        (envs.TicTacToe, "MAX_SEED"),
    ]:
        assert words in fn.__doc__, f"{fn.__name__}'s docstring does not state {words}"


# --------------------------------------------------------------------------- Rollout


def _rollout() -> envs.Rollout:
    env = envs.TicTacToe(6, opponent="first", auto_reset=False)
    return envs.rollout(env, networks.PolicyNet(27, 9), greedy=True)


def test_a_rollout_makes_a_valid_record():
    r = _rollout()
    again = dataclasses.replace(r)
    assert again.moves == r.moves > 0


_NAN = float("nan")


@pytest.mark.parametrize(
    "changes, error, param",
    [
        (dict(active=None), TypeError, "active"),
        (dict(log_probs="x"), TypeError, "log_probs"),
        (dict(returns=[1.0] * 6), TypeError, "returns"),
        (dict(active=lambda r: r.active.float()), TypeError, "active"),
        (dict(log_probs=lambda r: r.log_probs.long()), TypeError, "log_probs"),
        (dict(returns=lambda r: r.returns.bool()), TypeError, "returns"),
        (dict(returns=lambda r: torch.full_like(r.returns, _NAN)), ValueError, "returns"),
        (dict(returns=lambda r: r.returns + 0.5), ValueError, "returns"),
        (dict(returns=lambda r: r.returns[:3]), ValueError, "returns"),
        (dict(active=lambda r: r.active[:, :3]), ValueError, "active"),
        (dict(log_probs=lambda r: r.log_probs[0]), ValueError, "log_probs"),
        (dict(log_probs=lambda r: r.log_probs.abs() + 1.0), ValueError, "log_probs"),
        (dict(log_probs=lambda r: torch.full_like(r.log_probs, _NAN)), ValueError, "log_probs"),
    ],
)
def test_a_rollout_record_refuses_bad_fields_by_name(changes, error, param):
    r = _rollout()
    fields = {k: v(r) if callable(v) else v for k, v in changes.items()}
    with pytest.raises(error) as caught:
        dataclasses.replace(r, **fields)
    assert _names(str(caught.value), param), caught.value
