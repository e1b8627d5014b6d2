"""What Triton and torch.compile need to build their code, named when it is missing."""

from __future__ import annotations

import pytest

import gpulab as gl
from gpulab.kernels import triton_kernels as tk
from gpulab.measure import toolchain

pytest_plugins = ["fake_gpu"]


@pytest.fixture
def bare_machine(monkeypatch, tmp_path):
    """No compiler on the PATH or in CC/CXX, and a Python without its headers."""
    for variable in ("CC", "CXX"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: None)
    monkeypatch.setattr(toolchain, "python_include_dir", lambda: tmp_path)
    return tmp_path


def test_a_gpu_machine_without_compiler_or_headers_is_told_both_and_how_to_install(
    bare_machine, any_fake_gpu
):
    problem = toolchain.compile_problem()  # the fake GPU is the best device
    assert problem == (
        "Triton (and torch.compile, whose GPU kernels are Triton's) cannot build a C launcher "
        "for each kernel here: this machine has no C compiler (gcc or clang on the PATH, or CC "
        f"set) and no Python.h (Python's headers, looked for in {bare_machine}); install them "
        "(on Debian or Ubuntu: apt install build-essential python3-dev; the headers come with "
        "a Python from conda or pyenv) and restart Python"
    )


def test_a_cpu_needs_a_cpp_compiler_and_a_compiler_in_cc_counts(bare_machine, monkeypatch):
    assert toolchain.missing_build_tools("cpu")[0].startswith("C++ compiler (g++ or clang++")
    (bare_machine / "Python.h").write_text("/* the headers */\n")
    monkeypatch.setenv("CC", "/opt/cc")
    assert toolchain.missing_build_tools("cuda") == []
    assert toolchain.compile_problem("cuda") == ""
    problem = toolchain.compile_problem("cpu")
    assert problem.startswith("torch.compile (Inductor) cannot build C++ kernels here")
    assert "no C++ compiler" in problem and "Python.h" not in problem


def test_with_every_tool_present_the_error_is_named(bare_machine, monkeypatch):
    (bare_machine / "Python.h").write_text("/* the headers */\n")
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: f"/usr/bin/{name}")
    error = RuntimeError("Triton Error [CUDA]: device kernel image is invalid\nmore")
    assert toolchain.compile_problem("cuda", error) == (
        "Triton (and torch.compile, whose GPU kernels are Triton's) failed here (RuntimeError: "
        "Triton Error [CUDA]: device kernel image is invalid), although a compiler and "
        "Python's headers are present"
    )
    with pytest.raises(TypeError, match="error='boom' must be an exception or None"):
        toolchain.compile_problem("cuda", "boom")
    with pytest.raises(ValueError, match="device_type='tpu' is not known; use one of 'cuda'"):
        toolchain.missing_build_tools("tpu")


@pytest.mark.skipif(not tk.triton_available(), reason=tk.triton_missing_reason())
def test_compiled_triton_without_build_tools_is_not_available_and_says_why(
    bare_machine, monkeypatch, fake_gpu
):
    fake_gpu("H100")
    monkeypatch.setattr(tk, "interpreted", lambda: False)  # as on a GPU: compiled, not run here
    tk._build_problem.cache_clear()
    try:
        assert tk.triton_available() is False
        assert tk.triton_missing_reason() == toolchain.compile_problem("cuda")
        assert "no C compiler" in tk.triton_missing_reason()
    finally:
        tk._build_problem.cache_clear()  # the real answer again for later tests


def test_this_machine_can_build_for_its_cpu():
    """The course's own machines and CI have gcc and Python's headers (the frameworks lab's
    recorded torch.compile run needs them)."""
    assert toolchain.missing_build_tools("cpu") == [], gl.measure.toolchain.compile_problem("cpu")
