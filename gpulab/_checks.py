"""Argument checks shared by gpulab's modules, so every bad input reads the same way.

Every public function of gpulab checks its arguments with these, and every message has
the same shape: the parameter's name, the value given, and what is allowed, e.g.
``batch_size=0 must be a positive integer``. One rule for which exception:

* ``TypeError`` for a value of the wrong type: a string where a number is needed (even one
  that holds a number, ``"8"``), a ``bool`` where a number is needed (``True`` is not a
  batch size), a float where a count is needed (``2.5`` or ``2.0`` layers), a number where a
  name is needed, anything but ``True`` or ``False`` for a flag;
* ``ValueError`` for a value of the right type that is not allowed: 0 or a negative count,
  NaN or an infinity, a fraction above 1, a name that is not known.

:func:`wrong_type` builds the TypeError for checks written elsewhere, so every message
reads the same way.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from numbers import Integral, Real
from pathlib import Path

__all__ = [
    "choice",
    "flag",
    "finite_number",
    "fraction",
    "non_negative_int",
    "non_negative_number",
    "path",
    "positive_int",
    "positive_number",
    "sentences",
    "text",
    "wrong_type",
]


def _is_integer(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def wrong_type(name: str, value, wanted: str) -> TypeError:
    """The TypeError for ``name=value`` when ``wanted`` (e.g. "a positive integer") is needed.

    Examples
    --------
    >>> raise wrong_type("batch_size", "8", "a positive integer")
    Traceback (most recent call last):
    ...
    TypeError: batch_size='8' must be a positive integer, not str
    """
    return TypeError(f"{name}={value!r} must be {wanted}, not {type(value).__name__}")


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise naming ``name`` and ``value``.

    Examples
    --------
    >>> positive_int("batch_size", 8)
    8
    >>> positive_int("batch_size", 0)
    Traceback (most recent call last):
    ...
    ValueError: batch_size=0 must be a positive integer
    >>> positive_int("batch_size", 2.0)
    Traceback (most recent call last):
    ...
    TypeError: batch_size=2.0 must be a positive integer, not float
    """
    if not _is_integer(value):
        raise wrong_type(name, value, "a positive integer")
    if value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    _fits_float(name, value)
    return int(value)


def non_negative_int(name: str, value) -> int:
    """Return ``value`` as an int of 0 or more.

    Examples
    --------
    >>> non_negative_int("warmup", 0)
    0
    >>> non_negative_int("warmup", -1)
    Traceback (most recent call last):
    ...
    ValueError: warmup=-1 must be an integer of 0 or more
    """
    if not _is_integer(value):
        raise wrong_type(name, value, "an integer of 0 or more")
    if value < 0:
        raise ValueError(f"{name}={value!r} must be an integer of 0 or more")
    _fits_float(name, value)
    return int(value)


def finite_number(name: str, value) -> float:
    """Return ``value`` as a float; refuse NaN, infinities, bools and strings.

    Examples
    --------
    >>> finite_number("offset", -2)
    -2.0
    >>> finite_number("offset", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: offset=nan must be a finite number
    """
    if not _is_real(value):
        raise wrong_type(name, value, "a finite number")
    if not _fits_float(name, value):
        raise ValueError(f"{name}={value!r} must be a finite number")
    return float(value)


def positive_number(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float above 0 (finite unless ``allow_inf``).

    Examples
    --------
    >>> positive_number("seconds", 1.5)
    1.5
    >>> positive_number("seconds", "2")
    Traceback (most recent call last):
    ...
    TypeError: seconds='2' must be a positive number, not str
    """
    if not _is_real(value):
        raise wrong_type(name, value, "a positive number")
    if not (value > 0 and (_fits_float(name, value) or allow_inf)):
        raise ValueError(f"{name}={value!r} must be a positive number")
    return float(value)


def non_negative_number(name: str, value) -> float:
    """Return ``value`` as a finite float of 0 or more.

    Examples
    --------
    >>> non_negative_number("overlap_s", 0)
    0.0
    >>> non_negative_number("overlap_s", -0.5)
    Traceback (most recent call last):
    ...
    ValueError: overlap_s=-0.5 must be a finite number of 0 or more
    """
    if not _is_real(value):
        raise wrong_type(name, value, "a finite number of 0 or more")
    if not _fits_float(name, value) or value < 0:
        raise ValueError(f"{name}={value!r} must be a finite number of 0 or more")
    return float(value)


def fraction(name: str, value, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """Return ``value`` as a float between 0 and 1; the ends are allowed unless said otherwise.

    Examples
    --------
    >>> fraction("overlap", 0.25)
    0.25
    >>> fraction("utilisation", 0, allow_zero=False)
    Traceback (most recent call last):
    ...
    ValueError: utilisation=0 must be a fraction above 0 and at most 1
    """
    wording = {
        (True, True): "from 0 to 1",
        (False, True): "above 0 and at most 1",
        (True, False): "of 0 or more and below 1",
        (False, False): "above 0 and below 1",
    }[(allow_zero, allow_one)]
    if not _is_real(value):
        raise wrong_type(name, value, f"a fraction {wording}")
    ok = _fits_float(name, value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    ok = ok and (value <= 1 if allow_one else value < 1)
    if not ok:
        raise ValueError(f"{name}={value!r} must be a fraction {wording}")
    return float(value)


def flag(name: str, value) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 1, 0, "yes" or None).

    Examples
    --------
    >>> flag("verbose", False)
    False
    >>> flag("verbose", 1)
    Traceback (most recent call last):
    ...
    TypeError: verbose=1 must be True or False, not int
    """
    if not isinstance(value, bool):
        raise wrong_type(name, value, "True or False")
    return value


def text(name: str, value, *, optional: bool = False) -> str | None:
    """Return ``value`` if it is a str (free text: a label, a note); None too if ``optional``.

    Examples
    --------
    >>> text("label", "matmul")
    'matmul'
    >>> text("label", 42)
    Traceback (most recent call last):
    ...
    TypeError: label=42 must be a str, not int
    """
    if not isinstance(value, str) and not (optional and value is None):
        raise wrong_type(name, value, f"a str{' or None' if optional else ''}")
    return value


def choice(name: str, value, allowed: Collection):
    """Return ``value`` if it is one of ``allowed``; otherwise say what is.

    Examples
    --------
    >>> choice("precision", "bf16", ("fp32", "bf16"))
    'bf16'
    >>> choice("precision", "fp64", ("fp32", "bf16"))
    Traceback (most recent call last):
    ...
    ValueError: precision='fp64' is not known; use one of 'fp32', 'bf16'
    >>> choice("precision", 16, ("fp32", "bf16"))
    Traceback (most recent call last):
    ...
    TypeError: precision=16 must be one of 'fp32', 'bf16', not int
    """
    allowed = tuple(allowed)
    if allowed and not any(
        isinstance(value, bool) == isinstance(a, bool) and isinstance(value, type(a))
        for a in allowed
    ):
        raise wrong_type(name, value, f"one of {', '.join(map(repr, allowed))}")

    def same(a) -> bool:
        try:
            return isinstance(value, bool) == isinstance(a, bool) and bool(value == a)
        except (TypeError, ValueError):  # e.g. an array compared with a string
            return False

    if not any(same(a) for a in allowed):
        raise ValueError(
            f"{name}={value!r} is not known; use one of {', '.join(map(repr, allowed))}"
        )
    return value


def path(name: str, value, *, must_exist: bool = False, kind: str | None = None) -> Path:
    """Return ``value`` (a ``str`` or path-like) as a :class:`~pathlib.Path`.

    ``must_exist`` refuses a path that is not there; ``kind`` of ``"file"`` or ``"dir"``
    also requires that kind of thing.

    Examples
    --------
    >>> path("out", "results/x.json").name
    'x.json'
    >>> path("folder", 3)
    Traceback (most recent call last):
    ...
    TypeError: folder=3 must be a path (a str or pathlib.Path), not int
    """
    if not isinstance(value, (str, Path)):
        raise wrong_type(name, value, "a path (a str or pathlib.Path)")
    if value == "":
        raise ValueError(f"{name}='' must be a path, not an empty string")
    result = Path(value)
    if kind == "dir" and not result.is_dir():
        raise ValueError(f"{name}={str(value)!r} is not a directory")
    if kind == "file" and not result.is_file():
        raise ValueError(f"{name}={str(value)!r} is not a file")
    if must_exist and not result.exists():
        raise ValueError(f"{name}={str(value)!r} does not exist")
    return result


def sentences(name: str, value) -> tuple[str, ...]:
    """Return ``value``, a sequence of sentences (str), as a tuple; refuse a lone string.

    Examples
    --------
    >>> sentences("assumptions", ["Batches fit in memory."])
    ('Batches fit in memory.',)
    >>> sentences("assumptions", "one string")
    Traceback (most recent call last):
    ...
    TypeError: assumptions='one string' must be a sequence of sentences (str), not str
    """
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(a, str) for a in value)
    ):
        raise wrong_type(name, value, "a sequence of sentences (str)")
    return tuple(value)


# --------------------------------------------------------------------------- objects
# Checks for arguments that are objects of other libraries (matplotlib, torch) or
# functions. The libraries are imported inside each check, so ``import gpulab`` stays
# standard-library only.

__all__ += ["axes", "function", "tensor_batch", "torch_module"]


def axes(name: str, value, *, optional: bool = True):
    """Return ``value`` if it is a matplotlib ``Axes`` (or None when ``optional``).

    Examples
    --------
    >>> axes("ax", None) is None
    True
    >>> axes("ax", "left")
    Traceback (most recent call last):
    ...
    TypeError: ax='left' must be a matplotlib Axes or None, not str
    """
    if value is None and optional:
        return None
    from matplotlib.axes import Axes

    if not isinstance(value, Axes):
        raise wrong_type(name, value, f"a matplotlib Axes{' or None' if optional else ''}")
    return value


def torch_module(name: str, value):
    """Return ``value`` if it is a ``torch.nn.Module``.

    Examples
    --------
    >>> torch_module("model", "x")
    Traceback (most recent call last):
    ...
    TypeError: model='x' must be a torch.nn.Module, not str
    """
    import torch

    if not isinstance(value, torch.nn.Module):
        raise wrong_type(name, value, "a torch.nn.Module")
    return value


def tensor_batch(name: str, value):
    """Return ``value`` if it is a ``torch.Tensor`` or a non-empty tuple or list of them.

    Examples
    --------
    >>> tensor_batch("inputs", [1.0, 2.0])
    Traceback (most recent call last):
    ...
    TypeError: inputs=[1.0, 2.0] must be a Tensor or a tuple of Tensors, not list
    """
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if (
        not isinstance(value, (tuple, list))
        or not value
        or not all(isinstance(v, torch.Tensor) for v in value)
    ):
        raise wrong_type(name, value, "a Tensor or a tuple of Tensors")
    return value


def function(name: str, value, *, wanted: str = "a callable", optional: bool = False):
    """Return ``value`` if it can be called (or is None when ``optional``).

    ``wanted`` says what the call is, e.g. ``"a callable loss_fn(outputs, targets)"``.
    A class counts as callable, as Python has it.

    Examples
    --------
    >>> function("loss_fn", len) is len
    True
    >>> function("loss_fn", 0, optional=True)
    Traceback (most recent call last):
    ...
    TypeError: loss_fn=0 must be a callable or None, not int
    """
    if value is None and optional:
        return None
    if not callable(value):
        raise wrong_type(name, value, f"{wanted}{' or None' if optional else ''}")
    return value


# ---------------------------------------------------------------------------- Upper limits
#
# A count, size or duration that sets how long a call runs or how much it allocates has an
# upper limit, one per kind of parameter, so that no call runs for ever or asks for more
# memory than a machine has; a number too large for its parameter is refused by name, with
# the limit, before any work starts. Formulas (the cost models) have no such limit: they
# refuse, by the names of their inputs, a result that overflows to infinity
# (:func:`finite_result`). Every number, a count too, must fit a float (about 1.8e308): the
# checks above refuse a larger int by name, since the formulas compute in floats.

#: Seconds a call may be asked to run or to wait (``min_run_time_s``, a sample's ``load_s``,
#: a power meter's ``interval_s``): ten minutes.
MAX_RUN_TIME_S = 600.0
#: Seconds a whole recording of the course may be given (``record --all --budget-s``): a day.
MAX_RECORDING_BUDGET_S = 86_400.0
#: Timed repeats and warm-up calls of one measurement (``repeats``, ``warmup``).
MAX_REPEATS = 10_000
#: CPU threads a measurement may ask torch for (``num_threads``).
MAX_THREADS = 1024
#: Bytes of one array a measurement allocates (``array_bytes``, ``copy_bytes``): 64 GiB.
MAX_ARRAY_BYTES = 2**36
#: Side of the square matrices a measurement multiplies (``matmul_n``): 64 GiB at fp32.
MAX_MATRIX_SIDE = 2**17
#: Elements of the (shape-only) tensor a function is traced on (``n_elem``): about 10**12.
MAX_ELEMENTS = 2**40
#: Samples in a dataset (``n``): a trillion.
MAX_SAMPLES = 10**12
#: Passes over the batches in one training run (``epochs``).
MAX_EPOCHS = 100_000
#: Steps of a training loop counted in one number (``accumulation_steps``).
MAX_STEPS = 10**9
#: Pipeline stages, and stages × micro-batches, a schedule is simulated for, one by one
#: (``n_stages``, ``n_microbatches``).
MAX_SIMULATED = 10_000
#: Threads (blocks × threads per block) in one launch of the SIMT simulator, which runs
#: every thread in Python (``grid``, ``n``).
MAX_SIMULATED_THREADS = 2**20
#: Processes one launch starts, one per GPU of a machine (``n_ranks``, ``n_gpus``).
MAX_RANKS = 1024
#: A number a figure places on an axis: matplotlib's margins and ticks go beyond it.
MAX_PLOTTED = 1e100
#: A device's index (``"cuda:N"``) is below this: torch keeps it in 8 bits.
MAX_DEVICE_INDEX = 128
#: A seed (``seed``): NumPy's global generator takes 0 to 2**32 - 1, and every seed of the
#: course keeps to its range.
MAX_SEED = 2**32 - 1
#: Features or channels of one layer of a network the labs build, and a convolution's stride
#: (``hidden``, ``width``, ``c_in``, ``num_classes``, ``stride``): 65_536, far wider than
#: BERT-base's widest layer (3_072) or ResNet-50's (2_048).
MAX_LAYER_WIDTH = 2**16
#: Blocks in one stage of a ResNet (each entry of ``layers``): ResNet-152's deepest stage
#: has 36.
MAX_BLOCKS = 1_000
#: Games a vectorised board game plays side by side (``n_envs``): 32 times the largest
#: batch of games the AlphaGo lab plays (2**21).
MAX_GAMES = 2**26

__all__ += ["at_most", "finite_result"]


def _format_limit(limit) -> str:
    return f"{limit:g}" if isinstance(limit, float) else f"{limit:,}".replace(",", "_")


def at_most(name: str, value, limit, what: str, *, unit: str = ""):
    """Return ``value`` if it is at most ``limit``; otherwise refuse it, naming the limit.

    ``what`` says what the limit is, e.g. "a benchmark's longest run".

    Examples
    --------
    >>> at_most("repeats", 20, MAX_REPEATS, "repeats of one measurement")
    20
    >>> at_most("min_run_time_s", 1e308, MAX_RUN_TIME_S, "a benchmark's longest run", unit="s")
    Traceback (most recent call last):
    ...
    ValueError: min_run_time_s=1e+308 must be at most 600 s (a benchmark's longest run)
    """
    if value > limit:
        shown = _format_limit(limit) + (f" {unit}" if unit else "")
        raise ValueError(f"{name}={_shown(value)} must be at most {shown} ({what})")
    return value


def _shown(value) -> str:
    """``repr(value)``, but an int of more than 15 digits in scientific notation."""
    if _is_integer(value) and abs(value) >= 10**15:
        return f"{value:.3e}" if abs(value) < 10**300 else f"an integer of {len(str(value))} digits"
    return repr(value)


def _fits_float(name: str, value) -> bool:
    """``math.isfinite(value)``, but an int too large for a float is refused by name.

    Examples
    --------
    >>> _fits_float("n_params", 10**400)
    Traceback (most recent call last):
    ...
    ValueError: n_params=an integer of 401 digits is too large for a float (at most about 1.8e308)
    """
    try:
        return math.isfinite(value)
    except OverflowError:
        raise ValueError(
            f"{name}={_shown(value)} is too large for a float (at most about 1.8e308)"
        ) from None


def finite_result(value, **inputs) -> float:
    """Return ``value``, a result computed from finite ``inputs``, if it is finite too.

    A formula given finite but huge inputs can overflow to infinity (or NaN); this refuses
    that result by the names and values of the inputs it came from.

    Examples
    --------
    >>> finite_result(2.0 * 1e9, n_params=1e9)
    2000000000.0
    >>> finite_result(2.0 * 1e308, n_params=1e308)
    Traceback (most recent call last):
    ...
    ValueError: n_params=1e+308: too large, the result overflows to inf
    """
    if not math.isfinite(value):
        given = ", ".join(f"{k}={_shown(v)}" for k, v in inputs.items())
        raise ValueError(f"{given}: too large, the result overflows to {value!r}")
    return value
