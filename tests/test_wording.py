"""Counts written into sentences: the zero and one cases read like the others."""

import pytest

from gpulab.labkit.wording import count_phrase


@pytest.mark.parametrize(
    "count, expected",
    [
        (0, "no announced parts"),
        (1, "one announced part"),
        (2, "two announced parts"),
        (9, "nine announced parts"),
        (10, "10 announced parts"),
        (1234, "1,234 announced parts"),
    ],
)
def test_counts_read_as_written_english(count, expected):
    assert count_phrase(count, "announced part") == expected


def test_an_irregular_plural_is_given():
    assert count_phrase(1, "process", "processes") == "one process"
    assert count_phrase(3, "process", "processes") == "three processes"


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((-1, "part"), ValueError, "count=-1"),
        ((1.0, "part"), TypeError, "count=1.0"),
        ((2, ""), ValueError, "singular=''"),
        ((2, 3), TypeError, "singular=3"),
    ],
)
def test_bad_arguments_name_the_parameter(args, error, match):
    with pytest.raises(error, match=match):
        count_phrase(*args)


def test_no_built_sentence_counts_zero_or_one_in_digits(root):
    # "there are 0 now" and "1 parts" read as generated text. The chapters' sources must not
    # build such sentences: a glued count in prose goes through count_phrase.
    import re

    pattern = re.compile(r"there (?:are|is) \{glue:text\}`\w+:d`")
    for path in sorted((root / "book").glob("*.md")):
        hits = pattern.findall(path.read_text(encoding="utf-8"))
        assert hits == [], (path.name, hits)
