"""The gym labs' student copies: the worked kernels are gone, and the labs run to the end
with every graded exercise saying it is not answered yet."""


import nbformat
import pytest

from gpulab.course.student import STUDENT_ANSWER, student_copy

GYM_LABS = ["notebooks/kernel_warmup_lab.ipynb", "notebooks/kernel_gym_lab.ipynb",
            "notebooks/kernel_gym_attention_lab.ipynb"]


@pytest.mark.parametrize("lab", GYM_LABS)
def test_the_student_copy_keeps_the_starters_drops_the_kernels_and_runs(tmp_path, root, lab):
    from run_notebook import run_with_this_checkout

    original = nbformat.read(root / lab, as_version=4)
    copy = student_copy(original)
    text = "\n".join(c.source for c in copy.cells)
    for worked in ("def copy(", "def block_sum(", "def matmul_coarse(", "def softmax_online(",
                   "def attention(", "def attention_block(", "b = sB[kk, tx]",
                   "def triple_guarded(", "def pool_shared(", "def scan("):  # fmt: skip
        assert worked not in text
    assert text.count(STUDENT_ANSWER) == sum(
        "solution" in c.metadata.get("tags", []) for c in original.cells if c.cell_type == "code"
    )
    run_with_this_checkout(copy, root, tmp_path)  # about 20 s: starters graded as in the lab
    code = [c for c in copy.cells if c.cell_type == "code"]
    graded = [c for c in code if any(call in c.source for call in (
        "grade_kernel(answer", "grade_triton(answer", "warmup.grade(answer"))]  # fmt: skip
    checked = [c for c in code if "gl.check(answer" in c.source]
    assert graded and checked
    for cell in graded:
        printed = "".join(o.get("text", "") for o in cell.outputs)
        assert "no kernel yet" in printed or "Skipped:" in printed, printed
    for cell in checked:  # the predictions
        assert "Not answered yet" in "".join(o.get("text", "") for o in cell.outputs)
