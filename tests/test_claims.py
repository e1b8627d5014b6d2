"""Prose that cannot drift from the data: gl.claim, and the rule for tagged lab cells.

A lab cell tagged ``measured-claim`` measures something the lab's text states. Such a cell
must either write that text itself (a ``text/markdown`` output, from :func:`gpulab.claim`
or ``IPython.display.Markdown``) or guard it with an ``assert`` (in its source, or through
``gl.claim(text, holds, reason=...)``, which asserts). A re-recording on another machine
then either keeps the text true or stops.
"""

import ast

import nbformat
import numpy as np
import pytest

import gpulab as gl
from gpulab.labkit.claims import CLAIM_TAG, recorded_output

#: Labs whose measured-claim sentences are generated or asserted, and how many tagged cells
#: each has at least. A lab leaves this list only by losing its claims, which is a choice.
LABS_WITH_CLAIMS = {
    "gpu_basics_lab": 1,
    "parallel_compute_lab": 4,
    "frameworks_lab": 2,
    "gpu_trace_lab": 9,
    "energy_lab": 1,
    "case_bert_lab": 1,
    "case_alphago_lab": 2,
    "case_resnet_lab": 2,
    "parallelism_lab": 4,
    "capstone_lab": 2,
}


def test_claim_returns_markdown_when_the_data_supports_it():
    c = gl.claim("The add ran 1.7x faster.", np.float64(1.7) > 1.2, reason="above noise")
    assert c._repr_markdown_() == "The add ran 1.7x faster."
    assert str(c) == c.text
    assert gl.claim("Only values reported.").text == "Only values reported."


def test_claim_refuses_a_sentence_the_data_contradicts():
    with pytest.raises(gl.labkit.claims.ClaimError, match=r"barely benefits.*\(within noise\)"):
        gl.claim("The add barely benefits.", 1.7 < 1.2, reason="within noise")
    with pytest.raises(AssertionError):  # a failed claim is a failed assert
        gl.claim("x", False)


@pytest.mark.parametrize("holds", [1, 0.0, "yes", None])
def test_claim_wants_a_condition_not_a_value(holds):
    with pytest.raises(TypeError, match="holds="):
        gl.claim("x", holds)


@pytest.mark.parametrize("text, error", [("", ValueError), ("   ", ValueError), (42, TypeError)])
def test_claim_wants_text(text, error):
    with pytest.raises(error, match="text="):
        gl.claim(text)
    with pytest.raises(error, match="text="):
        gl.labkit.claims.Claim(text)


def test_claim_wants_its_reason_as_text():
    with pytest.raises(TypeError, match="reason=3"):
        gl.claim("x", True, reason=3)


def _has_assert(source: str) -> bool:
    """An ``assert`` statement or a ``claim(..., holds)`` call with a condition."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return True
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "claim"
            and (len(node.args) >= 2 or any(k.arg == "holds" for k in node.keywords))
        ):
            return True
    return False


def _emits_markdown(cell) -> bool:
    return any("text/markdown" in out.get("data", {}) for out in cell.get("outputs", []))


def claim_violations(nb) -> list[str]:
    """The tagged cells of a notebook that neither emit Markdown nor assert."""
    bad = []
    for i, cell in enumerate(nb.cells):
        if CLAIM_TAG not in cell.metadata.get("tags", []):
            continue
        if cell.cell_type != "code":
            bad.append(f"cell {i} is {cell.cell_type}: tag the code cell that measures")
        elif not (_emits_markdown(cell) or _has_assert(cell.source)):
            bad.append(f"cell {i} neither writes Markdown from its data nor asserts it")
    return bad


def test_the_rule_catches_an_untagged_claim_and_accepts_both_forms():
    report = nbformat.v4.new_code_cell("x = measure()\nprint(x)")
    asserted = nbformat.v4.new_code_cell("x = measure()\nassert x > 1.2, 'noise'")
    claimed = nbformat.v4.new_code_cell("gl.claim(f'{x}', x > 1, reason='r')")
    generated = nbformat.v4.new_code_cell("gl.claim(f'{x}')")
    generated.outputs = [
        nbformat.v4.new_output("execute_result", data={"text/markdown": "1.7"}, execution_count=1)
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [report, asserted, claimed, generated, nbformat.v4.new_markdown_cell("text")]
    for cell in nb.cells:
        cell.metadata["tags"] = [CLAIM_TAG]
    assert claim_violations(nb) == [
        "cell 0 neither writes Markdown from its data nor asserts it",
        "cell 4 is markdown: tag the code cell that measures",
    ]


def test_every_tagged_cell_writes_or_asserts_its_claim(root):
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert claim_violations(nb) == [], path.name


@pytest.mark.parametrize("lab", sorted(LABS_WITH_CLAIMS))
def test_labs_with_measured_sentences_tag_their_measuring_cells(root, lab):
    nb = nbformat.read(root / "notebooks" / f"{lab}.ipynb", as_version=4)
    tagged = [c for c in nb.cells if CLAIM_TAG in c.metadata.get("tags", [])]
    assert len(tagged) >= LABS_WITH_CLAIMS[lab], f"{lab}: {len(tagged)} tagged cells"


def test_recorded_number_reads_a_lab_output_and_refuses_what_is_not_there(root, tmp_path):
    lab = root / "notebooks" / "frameworks_lab.ipynb"
    assert gl.recorded_number(lab, r"(\d+) operator calls") == 17  # deterministic output
    with pytest.raises(ValueError, match="matches no recorded output"):
        gl.recorded_number(lab, r"no such line: ([0-9.]+)")
    with pytest.raises(ValueError, match="must have a group"):
        gl.recorded_number(lab, r"operator calls")
    with pytest.raises(ValueError, match="is not a regular expression"):
        gl.recorded_number(lab, r"(")
    with pytest.raises(TypeError, match="pattern=42"):
        gl.recorded_number(lab, 42)
    with pytest.raises(ValueError, match="lab="):
        gl.recorded_number(tmp_path / "missing_lab.ipynb", r"(\d+)")
    with pytest.raises(TypeError, match="lab=42"):
        gl.recorded_number(42, r"(\d+)")

def test_recorded_output_returns_the_whole_output_a_pattern_picks(root, tmp_path):
    lab = root / "notebooks" / "capstone_lab.ipynb"
    table = recorded_output(lab, r"Self CPU time total")
    lines = table.splitlines()
    assert lines[1].split()[0] == "Name" and "forward+backward" in table, table[:300]
    assert recorded_output(lab, r"forward\+backward") == table  # the same output, whole
    with pytest.raises(ValueError, match="matches no recorded output"):
        recorded_output(lab, r"no such line")
    with pytest.raises(ValueError, match="is not a regular expression"):
        recorded_output(lab, r"(")
    with pytest.raises(TypeError, match="pattern=42"):
        recorded_output(lab, 42)
    with pytest.raises(ValueError, match="lab="):
        recorded_output(tmp_path / "missing_lab.ipynb", r"x")



def test_chapters_quote_the_recorded_values_they_check(root):
    """The two chapter sentences that once drifted from their labs now read the lab."""
    for chapter in ("frameworks", "parallel_compute"):
        text = (root / "book" / f"{chapter}.md").read_text(encoding="utf-8")
        assert "gl.recorded_number(" in text, chapter
        assert f'"../notebooks/{chapter}_lab.ipynb"' in text, chapter
