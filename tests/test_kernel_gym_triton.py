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


def test_an_unmasked_load_is_caught_even_where_the_store_is_masked():
    import triton
    import triton.language as tl

    @triton.jit
    def add_load_unmasked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets)  # lanes past n read past x: their sums are never stored
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=offsets < n),
                 mask=offsets < n)  # fmt: skip

    first = gt.grade_triton(add_load_unmasked, "triton_add", quiet=True).first_problem
    assert first == (
        "n = 1: the kernel loaded outside x_ptr (past its end or before its start) in 127 "
        "lanes: mask the load (mask=offsets < n, with other= a value that leaves the result "
        "alone, such as -inf for a maximum or 0.0 for a sum), even where the store is masked"
    )


def test_a_softmax_that_loads_without_a_mask_is_told_to_mask_the_load():
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_load_unmasked(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):  # noqa: N803
        row = tl.program_id(0)
        m = -float("inf")
        d = 0.0
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * row_stride + cols)  # no mask: the last block overhangs
            m_new = tl.maximum(m, tl.max(x, axis=0))
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols)
            tl.store(out_ptr + row * row_stride + cols, tl.exp(x - m) / d, mask=cols < n_cols)

    report = gt.grade_triton(softmax_load_unmasked, "triton_online_softmax", quiet=True)
    assert report.first_problem.startswith(
        "1 x 1: the kernel loaded outside x_ptr (past its end or before its start) in 63 lanes: "
        "mask the load (mask=offsets < n, with other= a value that leaves the result alone, "
        "such as -inf for a maximum"
    ), report.first_problem


def test_a_signature_that_differs_from_the_tasks_is_one_sentence():
    import triton
    import triton.language as tl

    @triton.jit
    def add_two_args(x_ptr, out_ptr, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))

    report = gt.grade_triton(add_two_args, "triton_add", quiet=True)
    assert report.score == 0.0
    assert report.first_problem == (
        "add_two_args takes (x_ptr, out_ptr, BLOCK), but the triton_add task launches it as "
        "add_two_args[grid](x_ptr, y_ptr, out_ptr, n, BLOCK=128): give it these parameters, in "
        "this order"
    )
    assert "missing" not in str(report) and "Traceback" not in str(report)


def test_a_custom_triton_task_from_a_reference_function_float64_included():
    import numpy as np
    import triton
    import triton.language as tl

    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, a * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    @triton.jit
    def axpy_no_a(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):  # noqa: N803
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    task = gt.custom_triton_task(
        "axpy", lambda x_ptr, y_ptr, a, n: a * x_ptr + y_ptr, args=("x_ptr", "y_ptr", "out_ptr",
        "a", "n"), arrays={"x_ptr": ("n",), "y_ptr": ("n",), "out_ptr": ("n",)},
        outputs=("out_ptr",), sizes=[{"a": 3, "n": 1}, {"a": 3, "n": 300}],
        grid=lambda a, n: (-(-n // 64),), constants={"BLOCK": 64},
        dtypes={k: np.float64 for k in ("x_ptr", "y_ptr", "out_ptr")},
    )  # fmt: skip
    report = gt.grade_triton(axpy, task, quiet=True)
    assert report.passed, str(report)
    assert str(report).splitlines()[1:] == ["  right  a = 3, n = 1", "  right  a = 3, n = 300",
                                            "Passed: right on every shape."]  # fmt: skip
    wrong = gt.grade_triton(axpy_no_a, task, quiet=True)
    assert wrong.first_problem.startswith("a = 3, n = 1: 1 of 1 elements of out_ptr are wrong")


def test_below_compute_capability_8_tl_dot_multiplies_in_ieee_fp32(monkeypatch):
    import torch

    monkeypatch.setattr(tk, "interpreted", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for cc, precision in [((7, 5), "ieee"), ((7, 0), "ieee"), ((8, 0), "tf32"), ((9, 0), "tf32")]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, cc=cc: cc)
        assert tk.dot_input_precision() == precision

    class Launch:  # the package's matmul kernel, standing in: records its constants
        seen: dict = {}

        def __getitem__(self, grid):
            def run(a, b, c, *args, **constants):
                Launch.seen = constants
                c.copy_(a.float() @ b.float())

            return run

    monkeypatch.setattr(tk, "interpreted", lambda: True)  # CPU tensors pass the checks
    monkeypatch.setattr(tk, "_matmul_kernel", Launch())
    monkeypatch.setattr(tk, "dot_input_precision", lambda device=None: "ieee")
    a = torch.ones(8, 8)
    assert torch.equal(tk.matmul(a, a), a @ a) and Launch.seen["PRECISION"] == "ieee"
    tk.matmul(a.half(), a.half())
    assert Launch.seen["PRECISION"] == "tf32"  # FP16 tiles: no TF32 question


def test_the_package_matmul_runs_with_ieee_precision_in_the_interpreter(monkeypatch):
    import torch

    monkeypatch.setattr(tk, "dot_input_precision", lambda device=None: "ieee")
    a, b = torch.randn(40, 24), torch.randn(24, 20)
    torch.testing.assert_close(tk.matmul(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_the_grader_sets_triton_f32_default_on_a_gpu_without_tf32(monkeypatch):
    import os

    import torch

    monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    monkeypatch.setattr(tk, "interpreted", lambda: False)
    monkeypatch.setattr(tk, "dot_input_precision", lambda device=None: "ieee")
    real = gt._guarded
    monkeypatch.setattr(gt, "_guarded", lambda array, guard, device: real(array, guard, "cpu"))
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)

    class Add:  # compiled on a GPU, standing in: adds on the CPU, records the default
        seen: list = []

        def __init__(self, fail: bool = False) -> None:
            self.fail = fail

        def __getitem__(self, grid):
            def run(x, y, out, n, BLOCK):
                Add.seen.append(os.environ.get("TRITON_F32_DEFAULT"))
                if self.fail:
                    raise RuntimeError("error: input_precision = tf32 is not supported on sm_75")
                out.copy_(x + y)

            return run

    monkeypatch.setattr(gt, "_time_on_gpu", lambda kernel, spec: "timed")
    report = gt.grade_triton(Add(), "triton_add", quiet=True)
    assert report.passed and Add.seen == ["ieee"] * 3
    assert "TRITON_F32_DEFAULT" not in os.environ  # set for the grading only
    failed = gt.grade_triton(Add(fail=True), "triton_add", quiet=True).first_problem
    assert failed == (
        "n = 1: the kernel raised RuntimeError: error: input_precision = tf32 is not supported "
        "on sm_75 (tl.dot on FP32 tiles defaults to TF32, which this GPU lacks below compute "
        'capability 8.0: pass input_precision="ieee" to tl.dot)'
    )


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
