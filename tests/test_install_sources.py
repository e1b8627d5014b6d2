"""Every instruction that installs gpulab says where from.

The name ``gpulab`` on PyPI is not this course: ``pip install gpulab`` could fetch someone
else's package. Instructions install from the course's repository (``"gpulab @ git+https://
..."``, as the labs' setup cells do) or from a checkout (``pip install -e .``).
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from gpulab.course.labs import setup_cell_source

ROOT = Path(__file__).resolve().parents[1]

#: ``pip install gpulab`` or ``pip install "gpulab[course]"``, flags allowed before the name,
#: but not a direct reference (``"gpulab @ git+https://..."``).
BARE_PIP_INSTALL = re.compile(
    r"""pip3?\s+install\s+(?:-{1,2}[\w-]+(?:=\S+)?\s+)*["']?gpulab(?:\[[^\]]*\])?"""
    r"""(?![\w.\[-])["']?(?!\s*@)"""
)
#: Prose that sends someone to pip without a source: "install gpulab yourself with pip".
BARE_PIP_PROSE = re.compile(
    r"install(?:s|ing)?\s+`?gpulab`?\s+(?:yourself\s+)?with\s+pip\b(?!\s+from)", re.IGNORECASE
)
SUFFIXES = {".md", ".py", ".ipynb", ".yml", ".yaml", ".toml", ".txt", ".cfg", ".html", ".sh"}


def bare_installs(text: str) -> list[str]:
    """The instructions in ``text`` that install gpulab by its bare name."""
    found = [m.group(0) for m in BARE_PIP_INSTALL.finditer(text)]
    return found + [m.group(0) for m in BARE_PIP_PROSE.finditer(text)]


@pytest.mark.parametrize(
    "text",
    [
        "pip install gpulab",
        "%pip install --quiet gpulab",
        'pip install "gpulab[course]"',
        "pip3 install -U 'gpulab[course,kernels]'",
        "or install gpulab yourself with pip, then run this cell again",
        "The first cell installs `gpulab` with pip and keeps Colab's torch",
    ],
)
def test_a_bare_install_is_found(text):
    assert bare_installs(text)


@pytest.mark.parametrize(
    "text",
    [
        '%pip install --quiet "gpulab @ git+https://github.com/someone/course.git@main"',
        '%pip install --quiet "gpulab[nvml,kernels-cu12] @ git+https://github.com/x/y.git@main"',
        'pip install -e ".[course]"',
        "pip install -e .",
        "pip install gpulab-tools-of-someone-else",
        "installs `gpulab` with pip\n  from the course's repository",
        "pip install nvidia-ml-py",
    ],
)
def test_an_install_from_a_source_is_not_flagged(text):
    assert bare_installs(text) == []


#: Folders of tools and builds, not of the course.
NOT_THE_COURSE = {".git", ".venv", "_build", ".hypothesis", ".ruff_cache", ".benchmarks",
                  ".pytest_cache", ".ipynb_checkpoints", "node_modules"}  # fmt: skip


def _course_files() -> list[Path]:
    """The repository's files: git's list where there is one, else every file but tools'."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        listed = None
    if listed is not None and listed.returncode == 0 and listed.stdout:
        return [ROOT / name for name in listed.stdout.split("\0") if name]
    return [
        path for path in ROOT.rglob("*") if not NOT_THE_COURSE & set(path.relative_to(ROOT).parts)
    ]


def _texts():
    """(path, text) of every text file of the course, notebooks as their cells' sources."""
    for path in sorted(_course_files()):
        if path == Path(__file__).resolve() or not path.is_file():
            continue
        if path.suffix not in SUFFIXES and path.parent.name not in (".ci", "workflows"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            cells = json.loads(text)["cells"]
            text = "\n".join("".join(cell["source"]) for cell in cells)
        yield path.relative_to(ROOT), text


def test_no_text_of_the_course_installs_gpulab_by_its_bare_name():
    found = [f"{path}: {hit!r}" for path, text in _texts() for hit in bare_installs(text)]
    assert not found, "install from the repository or a checkout instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "url", ["https://github.com/someone/course", "https://github.com/gpulab-course/gpulab"]
)
def test_the_setup_cell_installs_from_a_source_published_or_not(url):
    assert bare_installs(setup_cell_source(url)) == []
