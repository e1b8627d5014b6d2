"""One-way transfers use the one-way link figure, never a figure for both directions."""

import json
import re

import pytest

# A division by a spec's ``interconnect_bandwidth`` (both directions for NVIDIA's PCIe and
# NVLink figures) times a one-way copy at twice its real speed.
BOTH_WAYS_DIVISOR = re.compile(r"/\s*\(?\s*[\w.\[\]\"']*\binterconnect_bandwidth\b(?!_)")


def _sources(root):
    for path in sorted((root / "book").glob("*.md")):
        yield path, path.read_text(encoding="utf-8")
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        yield path, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    for path in sorted((root / "gpulab").rglob("*.py")):
        yield path, path.read_text(encoding="utf-8")


def test_the_pattern_catches_a_one_way_copy_over_a_both_ways_figure():
    assert BOTH_WAYS_DIVISOR.search("copy_s = nbytes / t4.interconnect_bandwidth * 1e3")
    assert BOTH_WAYS_DIVISOR.search("x / (spec.interconnect_bandwidth)")
    assert not BOTH_WAYS_DIVISOR.search("nbytes / t4.interconnect_bandwidth_one_way")
    assert not BOTH_WAYS_DIVISOR.search("f'{t4.interconnect_bandwidth / 1e9:.0f} GB/s'")


def test_no_page_lab_or_module_divides_by_a_both_ways_link_figure(root):
    offenders = [
        f"{path.relative_to(root)}: {match.group(0)}"
        for path, text in _sources(root)
        for match in BOTH_WAYS_DIVISOR.finditer(text)
    ]
    assert offenders == [], "use .interconnect_bandwidth_one_way for a one-way copy"


@pytest.mark.parametrize("images, expected_ms", [(64, 2.41), (256, 9.63)])
def test_the_capstone_copy_times_use_one_direction(images, expected_ms):
    import gpulab as gl

    t4 = gl.get_spec("T4")
    copy_s = images * 3 * 224 * 224 * 4 / t4.interconnect_bandwidth_one_way
    assert copy_s * 1e3 == pytest.approx(expected_ms, abs=0.01)
