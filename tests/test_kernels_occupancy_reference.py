"""``gl.occupancy`` against CUDA's own occupancy calculator, ``cuda_occupancy.h``.

How ``REFERENCE`` was produced: ``tests/occupancy_reference.cpp``, a host-only C++ program
that calls ``cudaOccMaxActiveBlocksPerMultiprocessor`` from the header ``cuda_occupancy.h``
(CUDA Toolkit 13.0), was compiled with ``nvcc -x c++`` and fed each configuration below, with
the device's fields (threads, warps, registers and shared memory per SM and per block, the
shared memory reserved per block) taken from ``gpulab/data/sm_architecture.csv``. Each row
holds the inputs and CUDA's answers: resident blocks, the blocks each resource allows
(``None`` where the header says the resource does not limit, INT_MAX) and the limiting
resources (all of them on a tie). The configurations are chosen to exercise each rule:
per-warp register allocation from per-partition register files, the shared-memory
allocation unit, the reserved shared memory, and the warp and block slots.

``test_the_table_is_what_cuda_occupancy_h_says`` compiles the program again wherever nvcc
(or g++ and the header) is found, as on CI, and re-derives every row. If a new toolkit
changes an answer, print the new table with ``python tests/test_kernels_occupancy_reference.py``
and review the difference before pasting it in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import gpulab as gl

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "occupancy_reference.cpp"
INT_MAX = 2**31 - 1
_FACTORS = {1: "warps", 2: "registers", 4: "shared memory", 8: "blocks"}

# (compute capability, threads per block, registers per thread, shared bytes per block)
CONFIGURATIONS = [
    ("7.0", 96, 33, 0),  # 1,280 registers a warp: 12 warps per 16,384-register partition
    ("7.0", 32, 200, 0),
    ("7.0", 256, 64, 0),
    ("7.0", 1024, 64, 0),
    ("7.0", 128, 32, 6500),  # 6,656 bytes once rounded up to 256
    ("7.5", 64, 88, 0),
    ("7.5", 32, 255, 0),
    ("7.5", 256, 32, 32768),
    ("7.5", 128, 40, 24576),
    ("7.5", 1024, 32, 0),
    ("7.5", 160, 48, 4100),
    ("8.0", 96, 33, 0),
    ("8.0", 100, 33, 0),
    ("8.0", 256, 64, 0),
    ("8.0", 256, 255, 0),
    ("8.0", 64, 136, 0),
    ("8.0", 128, 32, 49152),
    ("8.0", 256, 32, 22950),  # 22,950 + 1,024 reserved = 24,064 once rounded up to 128
    ("8.0", 1024, 65, 0),  # does not fit at all
    ("8.0", 1024, 32, 166912),
    ("8.6", 224, 48, 0),
    ("8.6", 128, 32, 33050),
    ("8.6", 32, 16, 0),
    ("8.6", 768, 40, 0),
    ("8.6", 512, 64, 20000),
    ("8.9", 96, 40, 0),
    ("8.9", 32, 104, 0),
    ("8.9", 64, 88, 0),
    ("8.9", 128, 32, 33000),
    ("8.9", 256, 72, 8192),
    ("9.0", 32, 104, 0),
    ("9.0", 128, 32, 24900),
    ("9.0", 256, 32, 32768),
    ("9.0", 128, 40, 24576),
    ("9.0", 1024, 32, 0),
    ("9.0", 128, 0, 232448),
    ("9.0", 64, 168, 0),
    ("9.0", 992, 66, 0),
]

# (cc, threads, regs, shared, blocks, by warps, by blocks, by registers, by shared, limiters)
REFERENCE = [
    ("7.0", 96, 33, 0, 16, 21, 32, 16, None, ("registers",)),
    ("7.0", 32, 200, 0, 8, 64, 32, 8, None, ("registers",)),
    ("7.0", 256, 64, 0, 4, 8, 32, 4, None, ("registers",)),
    ("7.0", 1024, 64, 0, 1, 2, 32, 1, None, ("registers",)),
    ("7.0", 128, 32, 6500, 14, 16, 32, 16, 14, ("shared memory",)),
    ("7.5", 64, 88, 0, 10, 16, 16, 10, None, ("registers",)),
    ("7.5", 32, 255, 0, 8, 32, 16, 8, None, ("registers",)),
    ("7.5", 256, 32, 32768, 2, 4, 16, 8, 2, ("shared memory",)),
    ("7.5", 128, 40, 24576, 2, 8, 16, 12, 2, ("shared memory",)),
    ("7.5", 1024, 32, 0, 1, 1, 16, 2, None, ("warps",)),
    ("7.5", 160, 48, 4100, 6, 6, 16, 8, 15, ("warps",)),
    ("8.0", 96, 33, 0, 16, 21, 32, 16, 164, ("registers",)),
    ("8.0", 100, 33, 0, 12, 16, 32, 12, 164, ("registers",)),
    ("8.0", 256, 64, 0, 4, 8, 32, 4, 164, ("registers",)),
    ("8.0", 256, 255, 0, 1, 8, 32, 1, 164, ("registers",)),
    ("8.0", 64, 136, 0, 6, 32, 32, 6, 164, ("registers",)),
    ("8.0", 128, 32, 49152, 3, 16, 32, 16, 3, ("shared memory",)),
    ("8.0", 256, 32, 22950, 6, 8, 32, 8, 6, ("shared memory",)),
    ("8.0", 1024, 65, 0, 0, 2, 32, 0, 164, ("registers",)),
    ("8.0", 1024, 32, 166912, 1, 2, 32, 2, 1, ("shared memory",)),
    ("8.6", 224, 48, 0, 5, 6, 16, 5, 100, ("registers",)),
    ("8.6", 128, 32, 33050, 2, 12, 16, 16, 2, ("shared memory",)),
    ("8.6", 32, 16, 0, 16, 48, 16, 128, 100, ("blocks",)),
    ("8.6", 768, 40, 0, 2, 2, 16, 2, 100, ("warps", "registers")),
    ("8.6", 512, 64, 20000, 2, 3, 16, 2, 4, ("registers",)),
    ("8.9", 96, 40, 0, 16, 16, 24, 16, 100, ("warps", "registers")),
    ("8.9", 32, 104, 0, 16, 48, 24, 16, 100, ("registers",)),
    ("8.9", 64, 88, 0, 10, 24, 24, 10, 100, ("registers",)),
    ("8.9", 128, 32, 33000, 3, 12, 24, 16, 3, ("shared memory",)),
    ("8.9", 256, 72, 8192, 3, 6, 24, 3, 11, ("registers",)),
    ("9.0", 32, 104, 0, 16, 64, 32, 16, 228, ("registers",)),
    ("9.0", 128, 32, 24900, 8, 16, 32, 16, 8, ("shared memory",)),
    ("9.0", 256, 32, 32768, 6, 8, 32, 8, 6, ("shared memory",)),
    ("9.0", 128, 40, 24576, 9, 16, 32, 12, 9, ("shared memory",)),
    ("9.0", 1024, 32, 0, 2, 2, 32, 2, 228, ("warps", "registers")),
    ("9.0", 128, 0, 232448, 1, 16, 32, None, 1, ("shared memory",)),
    ("9.0", 64, 168, 0, 6, 32, 32, 6, 228, ("registers",)),
    ("9.0", 992, 66, 0, 0, 2, 32, 0, 228, ("registers",)),
]


def _compiler() -> list[str] | None:
    """nvcc (it finds its own headers), or g++ with a toolkit's include directory."""
    nvcc = shutil.which("nvcc") or (
        "/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else None
    )
    if nvcc:
        return [nvcc, "-x", "c++"]
    gxx = shutil.which("g++") or shutil.which("c++")
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if gxx and root and (Path(root) / "include" / "cuda_occupancy.h").exists():
            return [gxx, f"-I{Path(root) / 'include'}"]
    return None


def _device_fields(cc: str) -> list[int]:
    a = gl.sm_architecture(cc)
    major, minor = (int(x) for x in cc.split("."))
    return [
        major, minor, a.max_threads_per_block, a.max_threads_per_sm, a.registers_per_sm,
        a.warp_size, a.max_shared_per_block_bytes, a.max_shared_per_sm_bytes,
        a.reserved_shared_per_block_bytes,
    ]  # fmt: skip


def cuda_answers(configurations, workdir: Path) -> list[list[int]]:
    """Compile the C++ program and return its output fields for each configuration."""
    exe = workdir / "occupancy_reference"
    build = subprocess.run(
        [*_compiler(), str(SOURCE), "-o", str(exe)], capture_output=True, text=True, timeout=300
    )  # nvcc on a loaded 2-core machine takes seconds; 300 s only guards against a hang
    assert build.returncode == 0, f"{SOURCE.name} does not compile:\n{build.stderr}"
    lines = [
        " ".join(str(v) for v in [*_device_fields(cc), threads, regs, shared])
        for cc, threads, regs, shared in configurations
    ]
    run = subprocess.run(
        [str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    out = [line.split() for line in run.stdout.splitlines()]
    assert len(out) == len(configurations) and all(len(o) == 10 for o in out), run.stdout
    return [[int(v) for v in o] for o in out]


def _row(config, answer) -> tuple:
    blocks, warps, slots, regs, shared, factors = answer[:6]
    limiters = tuple(name for bit, name in _FACTORS.items() if factors & bit)
    limits = tuple(None if v == INT_MAX else v for v in (warps, slots, regs, shared))
    return (*config, blocks, *limits, limiters)


def test_the_table_covers_the_compute_capabilities():
    assert [r[:4] for r in REFERENCE] == CONFIGURATIONS
    assert len(REFERENCE) >= 20
    ccs = {r[0] for r in REFERENCE}
    assert {"7.0", "7.5", "8.0", "8.6", "8.9", "9.0"} <= ccs
    limiters = {name for r in REFERENCE for name in r[-1]}
    assert limiters == {"warps", "blocks", "registers", "shared memory"}


@pytest.mark.parametrize(
    "cc, threads, regs, shared, blocks, by_warps, by_blocks, by_registers, by_shared, limiters",
    REFERENCE,
    ids=[f"{r[0]}-{r[1]}t-{r[2]}r-{r[3]}B" for r in REFERENCE],
)
def test_occupancy_matches_cuda_occupancy_h(
    cc, threads, regs, shared, blocks, by_warps, by_blocks, by_registers, by_shared, limiters
):
    occ = gl.occupancy(cc, threads, regs, shared)
    assert occ.blocks_per_sm == blocks
    assert occ.warps_per_sm == blocks * -(-threads // 32)
    by = occ.blocks_by_resource
    assert (by["warps"], by["blocks"], by["registers"]) == (by_warps, by_blocks, by_registers)
    if shared:
        assert by["shared memory"] == by_shared
    else:  # gl.occupancy leaves it out; CUDA counts the reserved part, which never limits
        assert by["shared memory"] is None and (by_shared is None or by_shared > blocks)
    assert occ.limiter in limiters


def test_the_table_is_what_cuda_occupancy_h_says(tmp_path):
    if _compiler() is None:
        pytest.skip("neither nvcc nor g++ with a CUDA toolkit's cuda_occupancy.h here (CI has)")
    answers = cuda_answers(CONFIGURATIONS, tmp_path)
    derived = [_row(c, a) for c, a in zip(CONFIGURATIONS, answers, strict=True)]
    assert derived == REFERENCE
    # The table's per-architecture columns are the header's own constants.
    for (cc, *_), answer in zip(CONFIGURATIONS, answers, strict=True):
        a = gl.sm_architecture(cc)
        assert answer[6:] == [
            a.shared_allocation_unit_bytes, a.register_allocation_unit,
            a.warp_schedulers_per_sm, a.max_blocks_per_sm,
        ], cc  # fmt: skip


if __name__ == "__main__":  # print REFERENCE for pasting above, after reviewing it
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for config, answer in zip(
            CONFIGURATIONS, cuda_answers(CONFIGURATIONS, Path(tmp)), strict=True
        ):
            print(f"    {_row(config, answer)!r},".replace("'", '"'))
