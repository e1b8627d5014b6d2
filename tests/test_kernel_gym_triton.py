"""The kernel gym's Triton steps: worked kernels pass under the interpreter (compiled on a
GPU), unmasked and truncated ones are caught, and nothing is a traceback."""

import gym_triton_solutions as sol
import pytest

from gpulab.kernels import gym_triton as gt
from gpulab.kernels import triton_kernels as tk

pytestmark = pytest.mark.skipif(not tk.triton_available(), reason=tk.triton_missing_reason())


def test_there_is_a_worked_solution_for_every_triton_task():
    assert set(sol.SOLUTIONS) == set(gt.TRITON_TASKS)


@pytest.mark.parametrize("task", sorted(gt.TRITON_TASKS))
def test_the_worked_triton_kernels_pass(task):
    report = gt.grade_triton(sol.SOLUTIONS[task], task, quiet=True)
    assert report.passed and report.score == 1.0, str(report)
    assert str(report).splitlines()[-1] == "Passed: right on every shape."


def test_an_unmasked_store_is_caught_by_the_guard_zone():
    report = gt.grade_triton(sol.WRONG["add_unmasked"], "triton_add", quiet=True)
    assert report.first_problem == (
        "n = 1: the kernel stored outside out_ptr (past its end or before its start): mask the "
        "store (mask=offsets < n) so that lanes past the end write nothing"
    )


def test_a_row_cut_at_one_block_is_a_wrong_result():
    report = gt.grade_triton(sol.WRONG["softmax_first_block_only"], "triton_online_softmax",
                             quiet=True)  # fmt: skip
    assert [bool(p) for p in report.problems] == [False, True, True]  # rows of 1, 100, 200
    assert report.first_problem.startswith("3 x 100: 2 of 300 elements of out_ptr are wrong")


def test_attention_without_the_running_max_rescale_is_a_wrong_result():
    report = gt.grade_triton(sol.WRONG["attention_no_rescale"], "triton_attention", quiet=True)
    assert not report.problems[0]  # one block of keys: nothing to rescale, right
    assert report.first_problem.startswith("n = 37, d = 16: ")
    assert " elements of o_ptr are wrong, the first o_ptr[" in report.first_problem


def test_the_gpu_timing_line_with_stand_ins(monkeypatch):
    import re

    import torch

    from gpulab.kernels.gym_triton import TRITON_TASKS, _time_on_gpu

    class FakeKernel:  # kernel[grid](*tensors, **constants) adds on the CPU
        calls = 0

        def __getitem__(self, grid):
            def run(x, y, out, n, BLOCK):
                FakeKernel.calls += 1
                out.copy_(x + y)

            return run

    spec = TRITON_TASKS["triton_add"]
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)  # stays on the CPU
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "Fake GPU")
    small = type(spec)(**{**spec.__dict__, "gpu_shape": (1000,)})
    line = _time_on_gpu(FakeKernel(), small)
    assert FakeKernel.calls >= 1
    assert re.fullmatch(r"measured on Fake GPU, n = 1000, \d{4}-\d\d-\d\d: your kernel "
                        r"[\d.]+ ms, torch [\d.]+ ms \(median\)", line), line


def test_an_unmasked_load_reads_the_guard_value():
    import triton
    import triton.language as tl

    @triton.jit
    def add_load_unmasked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets)
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets + 1), mask=offsets < n)

    first = gt.grade_triton(add_load_unmasked, "triton_add", quiet=True).first_problem
    assert first.startswith("n = 1: 1 of 1 elements of out_ptr are wrong, the first out_ptr[0]")
    assert first.endswith("(the guard value: a load past the end, without a mask?)")


def test_a_missing_answer_and_bad_arguments(capsys):
    assert gt.grade_triton(None, "triton_add").score is None
    assert "no kernel yet" in capsys.readouterr().out
    with pytest.raises(ValueError, match="task='add'"):
        gt.grade_triton(sol.SOLUTIONS["triton_add"], "add")
    with pytest.raises(TypeError, match="kernel=3"):
        gt.grade_triton(3, "triton_add")


def test_the_worked_triton_kernels_compile_for_a_gpu(tmp_path, root):
    # Triton compiles for a GPU target without a GPU (its wheel brings ptxas): in a fresh
    # process without the interpreter, each worked kernel becomes a cubin for sm_80. The
    # interpreter checks less than the compiler (tl.dot's tile sizes, loop-carried types).
    import subprocess
    import sys

    script = tmp_path / "compile.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(root / 'tests')!r})\n"
        "import gym_triton_solutions as S\n"
        "import triton\n"
        "from triton.backends.compiler import GPUTarget\n"
        "from triton.compiler import ASTSource\n"
        "f = '*fp32'\n"
        "sigs = {\n"
        "    'triton_add': dict(x_ptr=f, y_ptr=f, out_ptr=f, n='i32', BLOCK=128),\n"
        "    'triton_online_softmax': dict(x_ptr=f, out_ptr=f, n_cols='i32',\n"
        "                                  row_stride='i32', BLOCK=64),\n"
        "    'triton_attention': dict(q_ptr=f, k_ptr=f, v_ptr=f, o_ptr=f, n='i32',\n"
        "                             scale='fp32', D=16, BLOCK_M=16, BLOCK_N=16),\n"
        "}\n"
        "for name, kernel in S.SOLUTIONS.items():\n"
        "    args = sigs[name]\n"
        "    signature = {k: v if isinstance(v, str) else 'constexpr' for k, v in args.items()}\n"
        "    consts = {(i,): v for i, v in enumerate(args.values()) if not isinstance(v, str)}\n"
        "    src = ASTSource(fn=kernel, signature=signature, constexprs=consts)\n"
        "    compiled = triton.compile(src, target=GPUTarget('cuda', 80, 32))\n"
        "    assert '.target sm_80' in compiled.asm['ptx'] and compiled.asm['cubin']\n"
        "    print(name, 'compiled')\n"
    )
    env = {**__import__("os").environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(root)}
    # up to a minute on a loaded 2-core machine: three kernels through LLVM and ptxas
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=600)  # fmt: skip
    if proc.returncode and "ptxas" in proc.stderr and "not found" in proc.stderr:
        pytest.skip(f"Triton finds no ptxas to compile with: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["triton_add", "compiled", "triton_online_softmax",
                                   "compiled", "triton_attention", "compiled"]  # fmt: skip
