"""The one formatter for durations, byte counts and rates, and the shared argument checks."""

from __future__ import annotations

import math

import pytest

import gpulab as gl
from gpulab import _checks


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "0 s"),
        (3e-9, "3 ns"),
        (999e-9, "999 ns"),
        (1e-6, "1 µs"),
        (0.25, "250 ms"),
        (1, "1 s"),
        (99.4, "99.4 s"),
        (100, "1.7 min"),
        (5999, "100.0 min"),
        (6000, "1.7 h"),
        (47 * 3600, "47.0 h"),
        (48 * 3600, "2.0 days"),
        (365.25 * 86400, "1.0 years"),
    ],
)
def test_format_duration_picks_the_unit_a_person_would_say(seconds, text):
    assert gl.format_duration(seconds) == text


@pytest.mark.parametrize(
    "n_bytes, binary, text",
    [
        (0, False, "0 B"),
        (999, False, "999 B"),
        (1000, False, "1 kB"),
        (2.039e12, False, "2.04 TB"),
        (80e9, False, "80 GB"),
        (1023, True, "1023 B"),
        (1024, True, "1 KiB"),
        (16 * 2**20, True, "16 MiB"),
        (5e18, False, "5e+03 PB"),  # past the largest prefix, the number grows instead
    ],
)
def test_format_bytes_decimal_and_binary(n_bytes, binary, text):
    assert gl.format_bytes(n_bytes, binary=binary) == text


def test_format_rate_scales_by_magnitude_and_keeps_the_unit():
    assert gl.format_rate(989.5e12, "FLOP/s") == "990 TFLOP/s"
    assert gl.format_rate(4.8e12, "B/s") == "4.8 TB/s"
    assert gl.format_rate(12.0, "samples/s") == "12 samples/s"
    assert gl.format_rate(-2e9, "B/s") == "-2 GB/s"


@pytest.mark.parametrize(
    "bad, error",
    [
        (-1, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("5", TypeError),
        (None, TypeError),
    ],
)
def test_formatters_refuse_what_is_not_a_quantity(bad, error):
    with pytest.raises(error, match="seconds="):
        gl.format_duration(bad)
    with pytest.raises(error, match="n_bytes="):
        gl.format_bytes(bad)
    if bad != -1:
        with pytest.raises(error, match="value="):
            gl.format_rate(bad, "B/s")


def test_format_rate_needs_a_unit():
    with pytest.raises(ValueError, match="unit=''"):
        gl.format_rate(1.0, "")
    for bad in (42, None, b"B/s"):
        with pytest.raises(TypeError, match=f"unit={bad!r}"):
            gl.format_rate(1.0, bad)


def test_fraction_wording_names_the_allowed_range():
    with pytest.raises(ValueError, match="from 0 to 1"):
        _checks.fraction("overlap", 1.5)
    with pytest.raises(ValueError, match="above 0 and at most 1"):
        _checks.fraction("utilisation", 0, allow_zero=False)
    with pytest.raises(ValueError, match="and below 1"):
        _checks.fraction("share", 1.0, allow_one=False)
    assert _checks.fraction("share", 0.0, allow_one=False) == 0.0


def test_choice_does_not_confuse_bools_with_numbers():
    assert _checks.choice("n", 1, (1, 2)) == 1
    with pytest.raises(TypeError, match="n=True must be one of 1, 2, not bool"):
        _checks.choice("n", True, (1, 2))
    with pytest.raises(ValueError, match="n=3 is not known"):
        _checks.choice("n", 3, (1, 2))
    with pytest.raises(TypeError, match="x=\\[1\\] must be one of 'a', 'b', not list"):
        _checks.choice("x", [1], ("a", "b"))


def test_path_checks_kind_and_existence(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    assert _checks.path("p", tmp_path / "f.txt", kind="file").name == "f.txt"
    with pytest.raises(ValueError, match="is not a directory"):
        _checks.path("p", tmp_path / "f.txt", kind="dir")
    with pytest.raises(ValueError, match="does not exist"):
        _checks.path("p", tmp_path / "nope", must_exist=True)
