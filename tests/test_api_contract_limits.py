"""Huge numbers, checked on every public callable: refused by name, never an overflow or a hang.

``tests/test_api_contract.py`` holds one valid call per public callable (``BASELINES``) and
the kind of each parameter (``KINDS``). This file changes one numeric parameter of that call
at a time to a huge value (``10**30``, ``1e308``, ``10**400``, which no float holds, and an
element of a list of numbers made huge) and requires, within ``CALL_LIMIT_S`` seconds, one
of two outcomes:

* a ``ValueError`` or ``TypeError`` whose message names the parameter, or
* a result with no infinity or NaN in it (a record's fields and properties included) that
  the valid call's result does not have too.

Never an ``OverflowError``, a ``MemoryError``, NumPy's or torch's own message about sizes, an
infinite or NaN result, or a call that runs on. Where a count, size or duration sets how
long a call runs or how much it allocates, ``gpulab._checks`` holds its upper limit
(``MAX_*``, one per kind of parameter); ``LIMITS`` below lists each parameter with its limit,
and the tests require a value just above the limit to be refused with the limit in the
message, and (where that is cheap) the limit itself to be accepted.

Records (the dataclasses among the callables) are checked the same way with a 0 where a
field may be 0 and an empty sequence where one holds numbers: a derived number (a rate, a
final loss) must not come out infinite or NaN.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import re
import warnings
from numbers import Integral, Real

import numpy as np
import pytest
import test_api_contract as contract  # tests/ is on sys.path, as for gym_solutions
import test_api_contract_models as models

from gpulab import _checks

matplotlib_pyplot = contract.plt  # the same pyplot, on the Agg backend the contract sets

HUGE_INT = 10**30
HUGE_FLOAT = 1e308
BEYOND_FLOAT = 10**400  # an int no float can hold

#: Parameters that take a number besides a name, with a huge one (their kind in KINDS is a
#: list of bad values, so the sweep below does not reach them).
NUMBERS_BESIDES_NAMES = {
    ("training_flops_per_sample", "model"): [HUGE_INT, HUGE_FLOAT, BEYOND_FLOAT],
    ("transformer_training_job", "model"): [HUGE_INT, HUGE_FLOAT, BEYOND_FLOAT],
    ("scaling_estimate", "model"): [HUGE_INT, HUGE_FLOAT, BEYOND_FLOAT],
    ("plan_training", "model"): [HUGE_INT, BEYOND_FLOAT],
    ("estimate_training_plan", "model"): [HUGE_INT, BEYOND_FLOAT],
    ("chooser_widget", "model"): [HUGE_INT, BEYOND_FLOAT],
}


@dataclasses.dataclass(frozen=True)
class Limit:
    """One parameter's upper limit: the ``_checks`` constant and the limit for the valid call.

    ``at_limit_is_cheap``: the valid call with the parameter at its limit takes well under a
    second, so the test runs it.
    """

    constant: str
    at_limit_is_cheap: bool = False
    divisor: int = 1  # the limit is shared: this call's share of it (e.g. over 2 stages)

    @property
    def value(self):
        limit = getattr(_checks, self.constant)
        return limit // self.divisor if self.divisor > 1 else limit


#: callable -> parameter -> its upper limit.
LIMITS: dict[str, dict[str, Limit]] = {
    "benchmark": {
        "min_run_time_s": Limit("MAX_RUN_TIME_S"),
        "warmup": Limit("MAX_REPEATS", at_limit_is_cheap=True),  # 10 000 calls of a no-op
        "repeats": Limit("MAX_REPEATS", at_limit_is_cheap=True),  # used by the CuPy timer
        "num_threads": Limit("MAX_THREADS"),
    },
    "measure_ceilings": {
        "min_run_time_s": Limit("MAX_RUN_TIME_S"),
        "repeats": Limit("MAX_REPEATS"),
        "num_threads": Limit("MAX_THREADS"),
        "copy_bytes": Limit("MAX_ARRAY_BYTES"),
        "matmul_n": Limit("MAX_MATRIX_SIDE"),
    },
    "measure_memory_bandwidth": {
        "array_bytes": Limit("MAX_ARRAY_BYTES"),
        "min_run_time_s": Limit("MAX_RUN_TIME_S"),
    },
    "train": {
        "epochs": Limit("MAX_EPOCHS"),
        # one batch: a single, incomplete group of micro-batches, stepped at the end
        "accumulation_steps": Limit("MAX_STEPS", at_limit_is_cheap=True),
        # one batch: one step, all of it warm-up
        "warmup_steps": Limit("MAX_STEPS", at_limit_is_cheap=True),
    },
    "seed_everything": {"seed": Limit("MAX_SEED", at_limit_is_cheap=True)},
    # the valid call has 2 stages, so it may simulate half the micro-batches
    "simulate_pipeline": {"n_microbatches": Limit("MAX_SIMULATED", True, divisor=2)},
    "stage_times_from_measurement": {"n_stages": Limit("MAX_SIMULATED", True)},
    # the valid calls launch blocks of 4 threads
    "launch": {"grid": Limit("MAX_SIMULATED_THREADS", divisor=4)},
    "simulate": {"grid": Limit("MAX_SIMULATED_THREADS", divisor=4)},
    "thread_map": {"n": Limit("MAX_SIMULATED_THREADS")},
    "torchrun": {"n_ranks": Limit("MAX_RANKS")},
    "DistPlan": {"n_ranks": Limit("MAX_RANKS", at_limit_is_cheap=True)},
    "dist_plan": {"n_gpus": Limit("MAX_RANKS", at_limit_is_cheap=True)},
    "fusion_traffic": {"n_elem": Limit("MAX_ELEMENTS", at_limit_is_cheap=True)},
    "draw_fusion": {"n_elem": Limit("MAX_ELEMENTS")},
    # building a dataset is lazy: nothing is drawn or waited for until a sample is read
    "SyntheticDataset": {
        "n": Limit("MAX_SAMPLES", at_limit_is_cheap=True),
        "load_s": Limit("MAX_RUN_TIME_S", at_limit_is_cheap=True),
        "seed": Limit("MAX_SEED", at_limit_is_cheap=True),
    },
    # on a CPU the meter only reads the clock: no sampling thread waits
    "EnergyMeter": {"interval_s": Limit("MAX_RUN_TIME_S", at_limit_is_cheap=True)},
    "measure_energy": {"interval_s": Limit("MAX_RUN_TIME_S", at_limit_is_cheap=True)},
    "draw_input_pipeline": {
        "load_s": Limit("MAX_PLOTTED", at_limit_is_cheap=True),
        "compute_s": Limit("MAX_PLOTTED"),
        "starved_step_s": Limit("MAX_PLOTTED"),
        "fixed_step_s": Limit("MAX_PLOTTED"),
    },
}

_no_processes = contract._no_processes  # the same guard: no call here starts a process

# --------------------------------------------------------------------------- calling


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _non_finite(value, path: str = "result", depth: int = 0) -> list[str]:
    """Where ``value`` (a number, container, array or record) holds an infinity or a NaN.

    A record's properties are read too; one that raises a ValueError or TypeError is a
    clear refusal and counts as fine, any other exception is reported as a place.
    """
    if depth > 4 or isinstance(value, (bool, str, bytes)):
        return []
    if _is_number(value):
        return [] if isinstance(value, Integral) or math.isfinite(value) else [path]
    if isinstance(value, np.ndarray):
        numeric = value.dtype.kind in "fc"
        return [path] if numeric and not np.isfinite(value).all() else []
    if isinstance(value, (list, tuple)):
        return [
            p for i, v in enumerate(value[:64]) for p in _non_finite(v, f"{path}[{i}]", depth + 1)
        ]
    if isinstance(value, dict):
        items = list(value.items())[:64]
        return [p for k, v in items for p in _non_finite(v, f"{path}[{k!r}]", depth + 1)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = []
        for field in dataclasses.fields(value):
            found += _non_finite(getattr(value, field.name), f"{path}.{field.name}", depth + 1)
        for name, _ in inspect.getmembers(type(value), lambda m: isinstance(m, property)):
            try:
                derived = getattr(value, name)
            except (ValueError, TypeError):
                continue
            except Exception as exc:  # an OverflowError, a ZeroDivisionError
                found.append(f"{path}.{name} raised {type(exc).__name__}: {exc}")
                continue
            found += _non_finite(derived, f"{path}.{name}", depth + 1)
        return found
    return []


def _run(name: str, param: str, value):
    """Call ``name``'s valid call with ``param=value``: ("refused", exc) or ("returned", result).

    Fails the test for a call that runs past ``CALL_LIMIT_S`` or raises anything but a
    ValueError or TypeError.
    """
    fn = contract.PUBLIC[name]
    with contract._time_limit(60):  # building the valid arguments is not timed
        bound = contract._baseline(name)
    arguments = dict(bound.arguments, **{param: value})
    call = inspect.BoundArguments(bound.signature, arguments)
    try:
        with contract._time_limit(contract.CALL_LIMIT_S), warnings.catch_warnings():
            # NumPy's overflow inside a library (a figure's ticks) is an overflow too
            warnings.filterwarnings("error", "overflow|invalid value", RuntimeWarning)
            result = fn(*call.args, **call.kwargs)
            if isinstance(result, contextlib._GeneratorContextManager):
                with result:
                    pass
            return "returned", result
    except (ValueError, TypeError) as exc:
        return "refused", exc
    except contract._TookTooLong:
        pytest.fail(f"{name}({param}={value!r:.60}) ran for {contract.CALL_LIMIT_S} s")
    except Exception as exc:
        pytest.fail(
            f"{name}({param}={value!r:.60}) raised {type(exc).__name__}: {exc}; expected a "
            "ValueError or TypeError naming the parameter, or a finite result"
        )
    finally:
        matplotlib_pyplot.close("all")


@functools.cache
def _baseline_non_finite(name: str) -> frozenset[str]:
    """Places where the valid call's own result is not finite (a documented NaN or inf)."""
    bound = contract._baseline(name)
    try:
        with contract._time_limit(60):
            result = contract.PUBLIC[name](*bound.args, **bound.kwargs)
        return frozenset(_non_finite(result))
    finally:
        matplotlib_pyplot.close("all")


def _names(message: str, param: str) -> bool:
    """Whether ``message`` names ``param`` as a word of its own (``n=``, ``times_s[0]=``)."""
    return re.search(rf"(?<![\w.]){re.escape(param)}(?!\w)", message) is not None


def _assert_refused_or_finite(name: str, param: str, value) -> None:
    outcome, got = _run(name, param, value)
    if outcome == "refused":
        assert _names(str(got), param), (
            f"{name}({param}={value!r:.60}) raised {type(got).__name__} without naming "
            f"{param!r}: {got}"
        )
        return
    if param in LIMITS.get(name, {}) and value > LIMITS[name][param].value:
        pytest.fail(f"{name}({param}={value!r:.60}) is above its limit but was accepted")
    places = set(_non_finite(got)) - _baseline_non_finite(name)
    assert not places, (
        f"{name}({param}={value!r:.60}) returned a result that is not finite at "
        f"{sorted(places)}: refuse the value by name instead"
    )


# --------------------------------------------------------------------------- the cases

_COUNTS = ("count", "count0", "int")
_NUMBERS = ("pos", "nonneg", "real")


def _huge_values(kind, valid) -> list:
    """Huge values of the right type for a parameter of ``kind`` whose valid value is ``valid``."""
    if kind in _COUNTS:
        return [HUGE_INT, BEYOND_FLOAT]
    if kind in _NUMBERS:
        return [HUGE_INT, HUGE_FLOAT, BEYOND_FLOAT]
    if isinstance(valid, (list, tuple)) and valid and all(_is_number(v) for v in valid):
        rest = list(valid[1:])
        huge = [[HUGE_FLOAT, *rest]]
        if all(isinstance(v, Integral) for v in valid):
            huge.insert(0, [HUGE_INT, *rest])
        return [type(valid)(v) for v in huge]
    return []  # a name, a flag, a fraction (bounded already), an object


def _cases() -> list:
    cases = []
    for case in contract._cases():
        name, param, kind = case.values
        valid = contract._baseline(name).arguments.get(param)
        values = _huge_values(kind, valid)
        values += NUMBERS_BESIDES_NAMES.get((name, param), [])
        if values:
            cases.append(pytest.param(name, param, values, id=f"{name}-{param}"))
    return cases


def _limit_cases(cheap_only: bool = False) -> list:
    return [
        pytest.param(name, param, limit, id=f"{name}-{param}")
        for name, limits in LIMITS.items()
        for param, limit in limits.items()
        if limit.at_limit_is_cheap or not cheap_only
    ]


def _just_above(limit):
    return limit + 1 if isinstance(limit, int) else limit * (1 + 1e-9)


def _shown(limit) -> str:
    """The ways a message may write the limit: 600, 1048576, 1_048_576 or 1,048,576."""
    forms = {f"{limit:g}", f"{limit:_}", f"{limit:,}", str(limit)}
    return "|".join(re.escape(f) for f in forms)


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("name, param, values", _cases())
def test_a_huge_number_is_refused_by_name_or_gives_a_finite_result(name, param, values):
    for value in values:
        _assert_refused_or_finite(name, param, value)


@pytest.mark.parametrize("name, param, limit", _limit_cases())
def test_just_above_the_limit_is_refused_with_the_limit(name, param, limit):
    above = _just_above(limit.value)
    outcome, got = _run(name, param, above)
    assert outcome == "refused", f"{name}({param}={above!r}) is above the limit but was accepted"
    assert isinstance(got, ValueError), f"{name}({param}={above!r}) raised {got!r}"
    message = str(got)
    assert _names(message, param), f"{name}({param}={above!r}) did not name {param}: {message}"
    assert re.search(_shown(limit.value), message) or re.search(
        _shown(getattr(_checks, limit.constant)), message
    ), f"{name}({param}={above!r}): the message does not state the limit: {message}"


@pytest.mark.parametrize("name, param, limit", _limit_cases(cheap_only=True))
def test_the_limit_itself_is_accepted(name, param, limit):
    outcome, got = _run(name, param, limit.value)
    assert outcome == "returned", f"{name}({param}={limit.value!r}) was refused: {got}"


def test_every_limit_is_documented_and_checked():
    """Each ``MAX_*`` of ``gpulab._checks`` has a ``#:`` line and a parameter in LIMITS."""
    source = inspect.getsource(_checks)
    constants = set(re.findall(r"^(MAX_\w+) =", source, flags=re.M))
    undocumented = sorted(c for c in constants if not re.search(rf"#:.*\n(#:.*\n)*{c} =", source))
    assert not undocumented, f"limits without a #: line in gpulab/_checks.py: {undocumented}"
    used = {limit.constant for limits in LIMITS.values() for limit in limits.values()}
    used.add("MAX_DEVICE_INDEX")  # test_a_device_index_has_a_limit
    used.add("MAX_RECORDING_BUDGET_S")  # tests/test_record.py: record_all's budget_s
    used.update(models.LIMITED)  # tests/test_api_contract_models.py: networks and the game
    assert constants == used, (
        f"limits not checked here: {sorted(constants - used)}; "
        f"unknown in gpulab._checks: {sorted(used - constants)}"
    )
    stale = {n for n in LIMITS if n not in contract.PUBLIC} | {
        f"{n}.{p}"
        for n, limits in LIMITS.items()
        if n in contract.PUBLIC
        for p in limits
        if p not in inspect.signature(contract.PUBLIC[n]).parameters
    }
    assert not stale, f"LIMITS names what is not a public callable's parameter: {stale}"


def test_a_device_index_has_a_limit():
    torch_device = contract.PUBLIC["torch_device"]
    last = _checks.MAX_DEVICE_INDEX - 1
    assert torch_device(device=f"cuda:{last}").index == last
    for index in (last + 1, HUGE_INT):
        with pytest.raises(ValueError, match=rf"device='cuda:{index}'.*below {last + 1}"):
            torch_device(device=f"cuda:{index}")


def test_a_dataset_at_its_limits_serves_its_last_sample():
    """Built lazily, a dataset refuses a size it could not serve: at the limits it still can."""
    dataset = contract.PUBLIC["SyntheticDataset"](_checks.MAX_SAMPLES, (3,), seed=2**32 - 1)
    assert len(dataset) == _checks.MAX_SAMPLES
    x, y = dataset[_checks.MAX_SAMPLES - 1]
    assert tuple(x.shape) == (3,) and 0 <= int(y) < 10


@pytest.mark.parametrize(
    "fields, param",
    [
        (dict(shape=(HUGE_INT,)), "shape"),
        (dict(shape=(2**20, 2**20, 2**20)), "shape"),
        (dict(seed=HUGE_INT), "seed"),
        (dict(seed=2**32), "seed"),
    ],
)
def test_a_dataset_refuses_a_sample_it_could_not_make(fields, param):
    with pytest.raises(ValueError, match=rf"^{param}="):
        contract.PUBLIC["SyntheticDataset"](**(dict(n=8, shape=(3,)) | fields))


def _record_zero_cases() -> list:
    """Each numeric field of a record that may be 0, as (record, field)."""
    cases = []
    for case in contract._cases():
        name, param, kind = case.values
        fn = contract.PUBLIC[name]
        if inspect.isclass(fn) and dataclasses.is_dataclass(fn) and kind in ("nonneg", "count0"):
            cases.append(pytest.param(name, param, id=f"{name}-{param}"))
    return cases


@pytest.mark.parametrize("name, param", _record_zero_cases())
def test_a_record_with_a_zero_is_refused_by_name_or_finite(name, param):
    """A 0 where 0 is allowed must not make a derived number infinite (a rate over 0 s)."""
    _assert_refused_or_finite(name, param, 0)


def _record_sequence_cases() -> list:
    """Each field of a record whose valid value is a non-empty list or tuple of numbers."""
    cases = []
    for name, fn in contract.PUBLIC.items():
        if name not in contract.BASELINES or not (
            inspect.isclass(fn) and dataclasses.is_dataclass(fn)
        ):
            continue
        for param, valid in contract._baseline(name).arguments.items():
            if isinstance(valid, (list, tuple)) and valid and all(_is_number(v) for v in valid):
                cases.append(pytest.param(name, param, type(valid)(), id=f"{name}-{param}"))
    return cases


@pytest.mark.parametrize("name, param, empty", _record_sequence_cases())
def test_a_record_with_an_empty_sequence_is_refused_by_name_or_finite(name, param, empty):
    """No numbers where a record keeps some must not leave a NaN (a final loss of no steps)."""
    _assert_refused_or_finite(name, param, empty)
