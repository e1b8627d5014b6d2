"""Student copies: solutions really gone, notebooks still valid, and they run to the end."""


import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from gpulab.__main__ import main
from gpulab.course.exercises import lab_exercises
from gpulab.course.student import STUDENT_ANSWER, student_copy, write_student_copies

LAB = "notebooks/gpu_basics_lab.ipynb"


def _solution_lines(nb) -> list[str]:
    """The non-comment lines of every solution cell, and every solution markdown line."""
    lines = []
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            lines += [
                line.strip()
                for line in cell.source.splitlines()
                if line.strip() and not line.strip().startswith("#")
            ]
    return lines


def test_every_lab_has_a_checked_exercise(root):
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        exercises = lab_exercises(path)
        assert exercises, f"{path.name}: no code cell tagged 'solution'"
        for ex in exercises:
            assert ex.checked, f"{path.name} cell {ex.cell_index}: no gl.check cell after it"
            assert ex.question, (
                f"{path.name} cell {ex.cell_index}: first line is not '# Exercise N: <question>'"
            )


def test_solutions_are_gone_and_questions_stay(root):
    original = nbformat.read(root / LAB, as_version=4)
    copy = student_copy(original)
    nbformat.validate(copy)
    text = "\n".join(cell.source for cell in copy.cells)
    for line in _solution_lines(original):
        assert line not in text, f"solution text left in the student copy: {line!r}"
    for ex in lab_exercises(root / LAB):
        assert ex.question.split(":")[0] in text  # "Exercise 1" and its question stay
    answers = [c for c in copy.cells if "solution" in c.metadata.get("tags", [])]
    assert answers and all(c.cell_type == "code" for c in answers)
    for cell in answers:
        assert cell.source.splitlines()[-1] == STUDENT_ANSWER
        assert cell.outputs == [] and cell.execution_count is None
    # The check cells' recorded outputs would reveal the expected value: cleared.
    assert "Correct:" not in str([c.get("outputs") for c in copy.cells])
    assert copy.metadata["gpulab"]["student_copy"] is True
    assert "student_copy" not in original.metadata["gpulab"]  # the input is untouched


def test_student_copy_keeps_everything_else(root):
    original = nbformat.read(root / LAB, as_version=4)
    copy = student_copy(original)
    solution_md = [
        c
        for c in original.cells
        if c.cell_type == "markdown" and "solution" in c.metadata.get("tags", [])
    ]
    assert len(copy.cells) == len(original.cells) - len(solution_md)
    setup = next(c for c in copy.cells if "setup" in c.metadata.get("tags", []))
    assert setup.outputs, "outputs of cells without solutions are kept"


def test_solution_cell_must_assign_answer():
    nb = new_notebook(cells=[new_code_cell("x = 1", metadata={"tags": ["solution"]})])
    with pytest.raises(ValueError, match="cell 0 is tagged 'solution' but does not assign"):
        student_copy(nb)


def test_markdown_solution_is_dropped_and_only_the_question_line_stays():
    nb = new_notebook(
        cells=[
            new_markdown_cell("Question"),
            new_code_cell(
                "# Exercise 1: bytes of a float32 vector of 10 elements?\n# 4 bytes each\nn = 10\n"
                "answer = 4 * n",
                metadata={"tags": ["solution"]},
            ),
            new_code_cell("gl.check(answer, expected=40)"),
            new_markdown_cell("Because 4 bytes each.", metadata={"tags": ["solution"]}),
        ]
    )
    copy = student_copy(nb)
    assert [c.cell_type for c in copy.cells] == ["markdown", "code", "code"]
    assert (
        copy.cells[1].source
        == f"# Exercise 1: bytes of a float32 vector of 10 elements?\n{STUDENT_ANSWER}"
    )


def test_command_writes_copies_and_refuses_the_labs_folder(tmp_path, root, capsys):
    assert main(["student", str(tmp_path / "out"), "--notebooks", str(root / "notebooks")]) == 0
    written = sorted((tmp_path / "out").glob("*.ipynb"))
    assert [p.name for p in written] == sorted(p.name for p in (root / "notebooks").glob("*.ipynb"))
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(ValueError, match="the labs' own folder"):
        write_student_copies(root / "notebooks", root / "notebooks")
    with pytest.raises(FileNotFoundError, match="notebooks="):
        write_student_copies(tmp_path / "x", tmp_path / "missing")


def test_student_copy_of_lab_1_runs_to_the_end_on_cpu(tmp_path, root):
    from run_notebook import run_with_this_checkout

    copy = student_copy(nbformat.read(root / LAB, as_version=4))
    run_with_this_checkout(copy, root, tmp_path)
    code = [c for c in copy.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "a cell did not run"
    checks = [c for c in code if "gl.check(" in c.source]
    assert checks
    for cell in checks:
        printed = "".join(o.get("text", "") for o in cell.outputs)
        assert "Not answered yet" in printed, printed
