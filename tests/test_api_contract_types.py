"""The error policy for arguments of the wrong type: flags, axes, tensors, functions, records.

A widening of ``tests/test_api_contract.py``, whose valid calls (``BASELINES``) this file
reuses: each test changes one argument of a valid call to a value of the wrong type and
requires a ``TypeError`` whose message names the parameter. The parameters are found from
the signatures, not listed by hand, so a new one is covered when it is added:

* a **flag** is a parameter whose default is ``True`` or ``False`` or whose annotation is
  ``bool`` (or ``bool | None``): only a bool is a flag, so ``"no"``, 0, 1 and 1.0 are
  refused, and None too where it is not the default;
* an **axes** parameter is one called ``ax``: only a matplotlib Axes (or None where that is
  the default) is drawn on;
* a **torch** parameter is one whose valid value is a ``torch.nn.Module`` or a Tensor;
* a **function** parameter is one annotated ``Callable`` or whose valid value is a function.

Calls that take a ``spec=`` are tried from the devices of ``SPEC_VARIANTS`` too. Every
record (a dataclass in the public API) refuses a field of a foreign type, and the records
whose fields must agree with each other refuse fields that do not (``INCONSISTENT``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import test_api_contract as contract  # noqa: E402
import torch  # noqa: E402
from test_api_contract import _no_processes  # noqa: E402, F401 - autouse: no processes

import gpulab as gl  # noqa: E402

PUBLIC = contract.PUBLIC
_BENCH = gl.measure.bench.BenchResult

#: Valid calls of public records that ``test_api_contract.py`` leaves out (EXCLUDED).
EXTRA_BASELINES = {
    "NoiseTest": lambda: contract._fields(
        PUBLIC["faster_beyond_noise"](_BENCH((2e-3,) * 4, 1), _BENCH((1e-3,) * 4, 1))
    ),
}

#: Non-bools a flag must refuse (None too, unless None is the parameter's default).
NOT_FLAGS = ("no", 0, 1, None, 1.0)


def _not_axes():
    """Values that are not a matplotlib Axes (made afresh: one of them is a figure)."""
    return ["left", [], 0, 42, np.zeros(2), plt.figure()]


NOT_MODULES = ["x", 0, 42, None, [torch.nn.Linear(2, 2)], torch.zeros(2)]
NOT_TENSORS = ["x", 0, [1.0, 2.0], (), None, np.zeros((2, 4), dtype=np.float32)]
NOT_FUNCTIONS = [0, 42, "fn", [], None]


def _valid_call(name: str) -> inspect.BoundArguments:
    fn = PUBLIC[name]
    make = EXTRA_BASELINES.get(name) or contract.BASELINES[name]
    args, kwargs = make()
    return inspect.signature(fn).bind(*args, **kwargs)


def _covered() -> list[str]:
    names = [
        n
        for n in contract._callables()
        if n in EXTRA_BASELINES or (n in contract.BASELINES and n not in contract.EXCLUDED)
    ]
    return sorted(names, key=lambda n: (n.lower(), n))


def _parameters(name: str) -> list[inspect.Parameter]:
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        p for p in inspect.signature(PUBLIC[name]).parameters.values() if p.kind not in variadic
    ]


def _annotation(param: inspect.Parameter) -> str:
    ann = param.annotation
    if ann is inspect.Parameter.empty:
        return ""
    return ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))


def _is_flag(param: inspect.Parameter) -> bool:
    if isinstance(param.default, bool):
        return True
    parts = {part.strip() for part in _annotation(param).split("|")}
    return parts in ({"bool"}, {"bool", "None"})


def _none_allowed(param: inspect.Parameter) -> bool:
    return param.default is None or "None" in {p.strip() for p in _annotation(param).split("|")}


def _is_function(param: inspect.Parameter, valid) -> bool:
    if "Callable" in _annotation(param):
        return True
    return inspect.isfunction(valid) or inspect.isbuiltin(valid)


def _kind(name: str, param: inspect.Parameter, valid) -> str | None:
    """What a parameter is, for the checks here (None: not one of the kinds here)."""
    if _is_flag(param):
        return "flag"
    if param.name == "ax":
        return "axes"
    if _is_function(param, valid):
        return "function"
    if isinstance(valid, torch.nn.Module):
        return "module"
    if isinstance(valid, torch.Tensor):
        return "tensor"
    return None


@contextlib.contextmanager
def _quiet_figures():
    try:
        yield
    finally:
        plt.close("all")


def _all_cases() -> list[tuple[str, str, str]]:
    cases = []
    for name in _covered():
        bound = _valid_call(name)
        for param in _parameters(name):
            valid = bound.arguments.get(param.name, param.default)
            kind = _kind(name, param, valid)
            if kind is not None:
                cases.append((name, param.name, kind))
    plt.close("all")
    return cases


CASES = _all_cases()


def _cases(kind: str) -> list:
    """Cases of one kind, each from the valid call and from every device of SPEC_VARIANTS
    for a callable that takes a ``spec=``."""
    params = []
    for name, param, k in CASES:
        if k != kind:
            continue
        params.append(pytest.param(name, param, None, id=f"{name}-{param}"))
        if "spec" in inspect.signature(PUBLIC[name]).parameters and param != "spec":
            params += [
                pytest.param(name, param, spec, id=f"{name}-{param}-{spec}")
                for spec in contract.SPEC_VARIANTS
            ]
    return params


def _with(name: str, changes: dict) -> inspect.BoundArguments:
    bound = _valid_call(name)
    return inspect.BoundArguments(bound.signature, dict(bound.arguments, **changes))


def _run(name: str, call: inspect.BoundArguments):
    result = PUBLIC[name](*call.args, **call.kwargs)
    if isinstance(result, contextlib._GeneratorContextManager):
        with result:  # a @contextmanager function checks its arguments on entry
            pass
    return result


def _require_device(name: str, spec: str | None) -> None:
    """Skip unless the valid call works from ``spec`` (a CPU does not fit every call)."""
    if spec is None:
        return
    try:
        with contract._time_limit(contract.CALL_LIMIT_S), _quiet_figures():
            _run(name, _with(name, {"spec": spec}))
    except (TypeError, ValueError) as exc:
        pytest.skip(f"the valid call does not fit {spec}: {exc}")


def _names(param: str, message: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(param)}(?!\w)", message) is not None


def _refused(name: str, param: str, bad, spec: str | None = None, error=TypeError) -> Exception:
    """Call ``name`` validly but with ``param=bad``; return the ``error`` it must raise."""
    changes = {param: bad} if spec is None else {"spec": spec, param: bad}
    call = _with(name, changes)
    shown = f"{name}({param}={bad!r:.60}{'' if spec is None else f', spec={spec!r}'})"
    try:
        with contract._time_limit(contract.CALL_LIMIT_S), _quiet_figures():
            result = _run(name, call)
    except error as exc:
        assert type(exc) is error or error is ValueError, f"{shown} raised {exc!r}"
        assert _names(param, str(exc)), f"{shown} raised {exc!r} without naming {param!r}"
        return exc
    except contract._TookTooLong:
        pytest.fail(f"{shown} ran for {contract.CALL_LIMIT_S} s instead of refusing it")
    except Exception as exc:
        pytest.fail(f"{shown} raised {type(exc).__name__}: {exc}; expected a {error.__name__}")
    pytest.fail(f"{shown} accepted the value (returned {result!r:.80})")


def _parameter(name: str, param: str) -> inspect.Parameter:
    return inspect.signature(PUBLIC[name]).parameters[param]


# --------------------------------------------------------------------------- found by type


def test_the_kinds_are_found_from_the_signatures():
    """The detection finds the parameters it is for (so a broken detector fails here)."""
    found = set(CASES)
    expected = {
        ("linear_flops", "backward", "flag"),
        ("format_bytes", "binary", "flag"),
        ("estimate_step_memory", "foreach", "flag"),
        ("CheckResult", "ok", "flag"),
        ("NoiseTest", "faster", "flag"),
        ("plot_roofline", "ax", "axes"),
        ("tidy_point_labels", "ax", "axes"),
        ("activation_bytes", "model", "module"),
        ("measure_training_memory", "targets", "tensor"),
        ("train", "loss_fn", "function"),
        ("benchmark", "fn", "function"),
    }
    assert expected <= found, f"not found: {sorted(expected - found)}"
    for kind in ("flag", "axes", "module", "tensor", "function"):
        assert _cases(kind), f"no {kind} parameter found"


@pytest.mark.parametrize("name, param, spec", _cases("flag"))
def test_a_flag_refuses_anything_but_a_bool(name, param, spec):
    _require_device(name, spec)
    none_ok = _none_allowed(_parameter(name, param))
    for bad in NOT_FLAGS:
        if bad is None and none_ok:
            continue
        exc = _refused(name, param, bad, spec)
        assert "True" in str(exc) and "False" in str(exc), exc


@pytest.mark.parametrize("name, param, spec", _cases("axes"))
def test_ax_refuses_anything_but_matplotlib_axes(name, param, spec):
    _require_device(name, spec)
    bad_values = _not_axes()
    if not _none_allowed(_parameter(name, param)):
        bad_values.append(None)
    for bad in bad_values:
        assert "Axes" in str(_refused(name, param, bad, spec))


@pytest.mark.parametrize("name, param, spec", _cases("module"))
def test_a_module_parameter_refuses_anything_else(name, param, spec):
    _require_device(name, spec)
    for bad in NOT_MODULES:
        assert "must be a torch.nn.Module" in str(_refused(name, param, bad, spec))


@pytest.mark.parametrize("name, param, spec", _cases("tensor"))
def test_a_tensor_parameter_refuses_anything_else(name, param, spec):
    _require_device(name, spec)
    for bad in NOT_TENSORS:
        assert "Tensor" in str(_refused(name, param, bad, spec))


@pytest.mark.parametrize("name, param, spec", _cases("function"))
def test_a_function_parameter_refuses_what_cannot_be_called(name, param, spec):
    _require_device(name, spec)
    none_ok = _none_allowed(_parameter(name, param))
    for bad in NOT_FUNCTIONS:
        if bad is None and none_ok:
            continue
        _refused(name, param, bad, spec)


def _board():
    return gl.Scoreboard(_BENCH((1e-3,), 1), label="baseline")


#: One valid call of each public method that takes a flag or an ``ax``:
#: (class, method) -> function returning (the object, args, kwargs).
METHOD_CALLS = {
    ("OverheadModel", "time_s"): lambda: (PUBLIC["OverheadModel"](5e-3, 2e-8), (64,), {}),
    ("Scoreboard", "add"): lambda: (_board(), ("fix",), dict(measured=_BENCH((5e-4,), 1))),
    ("Scoreboard", "plot"): lambda: (_board(), (), {}),
}


def _method_cases() -> list:
    """(class, method, parameter, kind) of every public method's flag or ``ax``."""
    cases = []
    for name in _covered():
        cls = PUBLIC[name]
        if not inspect.isclass(cls):
            continue
        for method, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
            if method.startswith("_"):
                continue
            for param in inspect.signature(fn).parameters.values():
                kind = "flag" if _is_flag(param) else "axes" if param.name == "ax" else None
                if kind is not None:
                    cases.append((name, method, param.name, kind))
    return cases


def test_every_method_with_a_flag_or_ax_has_a_valid_call():
    found = {(name, method) for name, method, _, _ in _method_cases()}
    assert ("Scoreboard", "plot") in found
    assert found <= set(METHOD_CALLS), f"no valid call in METHOD_CALLS: {found - set(METHOD_CALLS)}"


@pytest.mark.parametrize(
    "name, method, param, kind", [pytest.param(*c, id="-".join(c[:3])) for c in _method_cases()]
)
def test_a_method_refuses_a_wrong_flag_or_ax(name, method, param, kind):
    obj, args, kwargs = METHOD_CALLS[(name, method)]()
    with _quiet_figures():
        getattr(obj, method)(*args, **kwargs)  # the valid call works
    bad_values = [v for v in NOT_FLAGS if v is not None] if kind == "flag" else _not_axes()
    for bad in bad_values:
        obj, args, kwargs = METHOD_CALLS[(name, method)]()
        with pytest.raises(TypeError, match=rf"^{param}=.* must be"), _quiet_figures():
            getattr(obj, method)(*args, **kwargs, **{param: bad})


def test_a_falsy_loss_fn_is_not_taken_for_the_default():
    model, batches = torch.nn.Linear(4, 2), [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for bad in (0, "", False, []):
        with pytest.raises(TypeError, match=r"^loss_fn="):
            gl.train(model, batches, optimizer=opt, loss_fn=bad, progress=False, device="cpu")
        with pytest.raises(TypeError, match=r"^loss_fn="):
            gl.measure_training_memory(model, *batches[0], loss_fn=bad)


# --------------------------------------------------------------------------- records


def _records() -> list[str]:
    return [
        n for n in _covered() if inspect.isclass(PUBLIC[n]) and dataclasses.is_dataclass(PUBLIC[n])
    ]


class _Foreign:
    """A type no record field holds."""

    def __repr__(self) -> str:
        return "<foreign>"


def _record_fields() -> list:
    return [
        pytest.param(name, f.name, id=f"{name}-{f.name}")
        for name in _records()
        for f in dataclasses.fields(PUBLIC[name])
        if f.init
    ]


@pytest.mark.parametrize("name, field", _record_fields())
def test_a_record_refuses_a_field_of_a_foreign_type(name, field):
    _refused(name, field, _Foreign())


def _text_fields() -> list:
    return [
        pytest.param(name, f.name, id=f"{name}-{f.name}")
        for name in _records()
        for f in dataclasses.fields(PUBLIC[name])
        if f.init and {p.strip() for p in str(f.type).split("|")} in ({"str"}, {"str", "None"})
    ]


@pytest.mark.parametrize("name, field", _text_fields())
def test_a_record_refuses_a_number_for_a_text_field(name, field):
    _refused(name, field, 42)


def _no_step_prediction():
    job = gl.transformer_training_job(1e8, 1e9, layers=2, hidden=64, seq_len=128, steps=10)
    return gl.time_to_train(job, "A100 80GB", n_gpus=8)


#: Records whose fields must agree with each other: name -> field changes that disagree.
INCONSISTENT = {
    "CheckResult": [
        dict(answer=-1, expected=2.0, ok=True, message="Correct"),
        dict(answer=None, ok=True),
        dict(answer=1.0, expected=1.0, ok=False),
        dict(answer=1.5, expected=1.0, ok=True, rtol=0.1),
    ],
    "NoiseTest": [
        dict(faster=True, p_value=0.5),
        dict(faster=False, p_value=0.001),
        dict(faster=True, p_value=0.001, n_before=1),
    ],
    "TimeToTrain": [dict(step=None), dict(link=None)],
    "TrainStats": [dict(steps=3, losses=[1.0, 0.5, 0.4], warmup_steps=1, time_s=0.0)],
    "GreedyAgreement": [
        dict(first_difference=None),  # a gap with no difference
        dict(gap=None),  # a difference with no gap
        dict(first_difference=3),  # past the last of 3 tokens
        dict(first_difference=None, gap=None, top_two=False),
        dict(gap=2.5),  # two logits are at most twice the largest |logit| apart
    ],
    "DeviceSpec": [dict(interconnect_bandwidth=None, interconnect_direction="both")],
    "ScalingEstimate": [dict(prediction=_no_step_prediction)],  # made when the test runs
    "RingStep": [dict(contributions=np.ones((3, 3), dtype=int)), dict(buffers=np.zeros(4))],
}


def _inconsistent_cases() -> list:
    return [
        pytest.param(name, changes, id=f"{name}-{'-'.join(changes)}")
        for name, variants in INCONSISTENT.items()
        for changes in variants
    ]


@pytest.mark.parametrize("name, changes", _inconsistent_cases())
def test_a_record_refuses_fields_that_disagree(name, changes):
    call = _with(name, {k: v() if callable(v) else v for k, v in changes.items()})
    with pytest.raises(ValueError) as caught:
        PUBLIC[name](*call.args, **call.kwargs)
    assert any(_names(field, str(caught.value)) for field in changes), caught.value


@pytest.mark.parametrize("name", sorted(INCONSISTENT))
def test_the_consistent_record_is_accepted(name):
    """The valid record the disagreeing ones are made from is accepted (so they differ
    from it only by what disagrees)."""
    call = _valid_call(name)
    PUBLIC[name](*call.args, **call.kwargs)


def test_check_results_from_check_are_consistent_records():
    for answer in (None, "x", float("inf"), 2.0, 2.1, -1):
        result = gl.check(answer, 2.0, rtol=0.01, quiet=True)
        again = dataclasses.replace(result)
        assert again == result
        assert result.ok == (answer in (2.0,)), result


def test_scaling_calculator_and_scaling_estimate_agree_on_a_missing_link():
    for fn in (gl.scaling_estimate, gl.scaling_calculator):
        with pytest.raises(TypeError, match=r"^link=None must be an Interconnect or a link name"):
            fn(7e9, "A100 80GB", 8, None)
