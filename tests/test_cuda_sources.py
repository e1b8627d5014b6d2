"""Every CUDA C++ source in the repository compiles with ``nvcc -ptx`` for sm_75 and sm_90.

Sources are the fenced ``cuda`` listings of the book's chapters and every Python string
literal holding ``__global__`` (CuPy ``RawKernel`` sources) in the package and the labs.
A listing may end with host code (the launch) after a line starting ``// On the host``;
only the part before it is device code and is compiled. Without ``nvcc`` the test is
skipped with that reason (CI's image has it).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NVCC = shutil.which("nvcc") or (
    "/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else None
)
FENCE = re.compile(r"^(`{3,})cuda[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
HOST = re.compile(r"^\s*// On the host", re.MULTILINE)


def _python_sources(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a notebook cell with IPython magics
        return []
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "__global__" in node.value
    ]


def cuda_sources() -> list[tuple[str, str]]:
    found = []
    for md in sorted((ROOT / "book").glob("*.md")):
        for i, match in enumerate(FENCE.finditer(md.read_text(encoding="utf-8"))):
            device = HOST.split(match[2])[0]
            found.append((f"{md.relative_to(ROOT)}#{i}", device))
    for py in sorted((ROOT / "gpulab").rglob("*.py")):
        for i, src in enumerate(_python_sources(py.read_text(encoding="utf-8"))):
            found.append((f"{py.relative_to(ROOT)}#{i}", src))
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        for j, cell in enumerate(code):
            for i, src in enumerate(_python_sources("".join(cell["source"]))):
                found.append((f"{nb.relative_to(ROOT)}[cell {j}]#{i}", src))
    return found


SOURCES = cuda_sources()


def test_the_known_sources_are_found():
    names = [name for name, _ in SOURCES]
    assert any(n.startswith("book/gpu_basics.md") for n in names)
    assert any(n.startswith("book/kernels.md") for n in names)
    assert any(n.startswith("notebooks/gpu_basics_lab.ipynb") for n in names)
    assert all("__global__" in src for _, src in SOURCES)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on this machine (CI's image has it)")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.parametrize("name, source", SOURCES, ids=[n for n, _ in SOURCES])
def test_cuda_source_compiles(name, source, arch, tmp_path):
    cu = tmp_path / "kernel.cu"
    cu.write_text(source, encoding="utf-8")
    result = subprocess.run(
        [NVCC, "-ptx", f"-arch={arch}", str(cu), "-o", str(tmp_path / "kernel.ptx")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, f"{name} does not compile for {arch}:\n{result.stderr}"
    assert ".entry" in (tmp_path / "kernel.ptx").read_text()


def test_the_chapters_tiled_matmul_listing_works_for_any_n():
    # The listing rounds the tile loop up, loads zeros outside the matrices and stores only
    # inside C, as gpulab.kernels.cuda_kernels.tiled_matmul does (tested in the simulator).
    listing = next(
        src for name, src in SOURCES if name.startswith("book/kernels.md") and "matmul_tiled" in src
    )
    assert "t < (n + TILE - 1) / TILE" in listing
    assert "(row < n && ka < n) ? A[row * n + ka] : 0.0f" in listing
    assert "(kb < n && col < n) ? B[kb * n + col] : 0.0f" in listing
    assert "if (row < n && col < n)" in listing
