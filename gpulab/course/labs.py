"""The labs as a collection: their metadata, their setup cell, and the table the preface shows.

Each lab notebook keeps a ``gpulab`` entry in its metadata::

    {"title": ..., "chapter": "book/gpu_basics", "needs": ...,
     "instructor_notes": "...Markdown for the workshop guide...",
     "run_time_s": {"cpu": 41.0, "cuda:Tesla T4": 12.0}, "recorded": {...provenance...}}

``run_time_s`` and ``recorded`` are written by ``python -m gpulab record``, never by hand.
``instructor_notes`` (optional) is what to emphasise and the common questions; the workshop
guide (``book/workshop.md``) shows it under the lab.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpulab.units import format_duration

__all__ = [
    "PLACEHOLDER_REPOSITORY_URL",
    "LabInfo",
    "first_cell_problems",
    "is_published",
    "lab_table",
    "list_labs",
    "rewrite_labs",
    "setup_cell_source",
    "stamp_setup_cells",
]

SETUP_TAG = "setup"
PROVENANCE_TAG = "provenance"


@dataclass(frozen=True)
class LabInfo:
    """One lab notebook's metadata."""

    path: Path
    title: str
    chapter: str
    needs: str
    run_time_s: dict[str, float] = field(default_factory=dict)
    recorded: dict = field(default_factory=dict)
    instructor_notes: str = ""

    @property
    def name(self) -> str:
        return self.path.stem


def _read(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def rewrite_labs(root: str | Path, change: Callable[[dict], bool]) -> list[Path]:
    """Apply ``change`` to every lab in ``root/notebooks``; write and return the labs it changed.

    ``change`` edits a notebook's JSON in place and returns whether it changed anything.
    """
    changed = []
    for path in sorted((Path(root) / "notebooks").glob("*.ipynb")):
        nb = _read(path)
        if change(nb):
            _write(path, nb)
            changed.append(path)
    return changed


def lab_info(path: str | Path) -> LabInfo:
    """Read one lab's ``gpulab`` metadata; a lab without it is an error naming the file."""
    path = Path(path)
    meta = _read(path).get("metadata", {}).get("gpulab")
    if not meta:
        raise ValueError(f"{path} has no 'gpulab' entry in its notebook metadata")
    missing = [key for key in ("title", "chapter", "needs") if not meta.get(key)]
    if missing:
        raise ValueError(f"{path}: the 'gpulab' metadata lacks {', '.join(missing)}")
    return LabInfo(
        path=path,
        title=meta["title"],
        chapter=meta["chapter"],
        needs=meta["needs"],
        run_time_s=dict(meta.get("run_time_s", {})),
        recorded=dict(meta.get("recorded", {})),
        instructor_notes=str(meta.get("instructor_notes", "")),
    )


def list_labs(folder: str | Path = "notebooks") -> list[LabInfo]:
    """Every lab under ``folder``, in file-name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"folder={str(folder)!r} is not a directory of lab notebooks")
    return [lab_info(p) for p in sorted(folder.glob("*.ipynb"))]


def first_cell_problems(nb: dict) -> list[str]:
    """What is wrong with a lab's first cells, one sentence each (none: an empty list).

    Every lab opens with its setup cell, the first code cell, tagged ``setup`` (written by
    ``python -m gpulab stamp``), and a markdown cell tagged ``provenance`` before the next
    code cell (filled by ``python -m gpulab record``). ``python -m gpulab record --all``
    checks every lab with this before it runs any.

    Parameters
    ----------
    nb : dict
        The notebook, as read by ``json`` or ``nbformat``.

    Examples
    --------
    >>> def cell(kind, tags=()):
    ...     return {"cell_type": kind, "metadata": {"tags": list(tags)}, "source": ""}
    >>> lab = {"cells": [cell("markdown"), cell("code", ["setup"]),
    ...                  cell("markdown", ["provenance"]), cell("code")]}
    >>> first_cell_problems(lab)
    []
    >>> print(*first_cell_problems({"cells": lab["cells"][2:]}))  # doctest: +NORMALIZE_WHITESPACE
    no cell is tagged 'setup': the first code cell must be the setup cell
    (python -m gpulab stamp writes it)
    """
    cells = nb["cells"]

    def tagged(tag: str) -> list[int]:
        return [i for i, c in enumerate(cells) if tag in c.get("metadata", {}).get("tags", [])]

    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    problems = []
    setup = tagged(SETUP_TAG)
    if not setup:
        problems.append(
            f"no cell is tagged {SETUP_TAG!r}: the first code cell must be the setup cell "
            "(python -m gpulab stamp writes it)"
        )
    elif len(setup) > 1:
        problems.append(f"{len(setup)} cells are tagged {SETUP_TAG!r}; there must be one")
    elif not code or setup[0] != code[0]:
        first = f", which is cell {code[0]}" if code else ", and there is none"
        problems.append(
            f"the cell tagged {SETUP_TAG!r} (cell {setup[0]}) must be the first code cell{first}"
        )
    provenance = tagged(PROVENANCE_TAG)
    if len(provenance) != 1:
        problems.append(
            f"{len(provenance)} cells are tagged {PROVENANCE_TAG!r}; there must be exactly one, "
            "a markdown cell (python -m gpulab record fills it)"
        )
    elif cells[provenance[0]]["cell_type"] != "markdown":
        problems.append(f"the cell tagged {PROVENANCE_TAG!r} must be a markdown cell")
    elif len(code) > 1 and provenance[0] > code[1]:
        problems.append(
            f"the cell tagged {PROVENANCE_TAG!r} (cell {provenance[0]}) must come before the "
            f"second code cell (cell {code[1]}), where readers see it first"
        )
    return problems


def _run_time(seconds: float | None) -> str:
    return "not recorded yet" if seconds is None else format_duration(seconds)


def lab_table(folder: str | Path = "notebooks", link_prefix: str = "") -> str:
    """A Markdown table of the labs: what each needs and how long it took where recorded.

    Parameters
    ----------
    folder : path
        The notebooks folder.
    link_prefix : str
        Prefix for the links to each lab (e.g. ``"../notebooks/"`` from a book page).
    """
    rows = [
        "| Lab | Needs | CPU run (2 cores) | GPU run |",
        "|---|---|---|---|",
    ]
    for lab in list_labs(folder):
        gpus = sorted(c for c in lab.run_time_s if c.startswith("cuda:"))
        gpu = "; ".join(f"{_run_time(lab.run_time_s[c])} ({c.partition(':')[2]})" for c in gpus)
        rows.append(
            f"| [{lab.title}]({link_prefix}{lab.path.name}) | {lab.needs} | "
            f"{_run_time(lab.run_time_s.get('cpu'))} | {gpu or _run_time(None)} |"
        )
    return "\n".join(rows)


PLACEHOLDER_REPOSITORY_URL = "https://github.com/gpulab-course/gpulab"
"""``repository.url`` in ``_config.yml`` until the course is published at a real address."""


def is_published(repo_url: str) -> bool:
    """Whether ``repo_url`` is a real repository address rather than the placeholder.

    >>> is_published(PLACEHOLDER_REPOSITORY_URL), is_published(PLACEHOLDER_REPOSITORY_URL + "/")
    (False, False)
    >>> is_published("https://github.com/someone/gpu-course")
    True
    """
    return repo_url.strip().rstrip("/").removesuffix(".git") != PLACEHOLDER_REPOSITORY_URL


#: The CUDA majors with an extra ``kernels-cuNN`` (numba-cuda with that CUDA's libraries) in
#: pyproject.toml; ``course.py install`` knows the same list.
NUMBA_CUDA_MAJORS = ("12", "13")


def setup_cell_source(repo_url: str, branch: str = "main") -> str:
    """The first code cell of every lab: install gpulab only where it is missing.

    On Colab this installs gpulab from the course repository with pip; pip keeps the torch
    and CuPy Colab already has because gpulab does not pin them. It adds the extras ``nvml``
    (NVML for the energy readings) and, where torch sees a CUDA GPU, ``kernels-cu12`` or
    ``kernels-cu13`` for torch's CUDA major: numba-cuda, Numba's CUDA target, with the CUDA
    libraries it compiles and links with (a runtime without a GPU does not download them).
    Where gpulab is already installed (a local checkout, CI) the cell only imports it and
    calls ``setup_lab()``.
    Where gpulab cannot be installed (the install failed, or ``repo_url`` is still the
    placeholder, so there is nothing to install from) the cell raises ``GpulabSetupError``
    with one sentence saying what went wrong and what to do; "Run all" stops there instead
    of failing in every later cell. ``_render_traceback_`` makes IPython show that sentence
    alone, not a traceback.
    """
    if not repo_url.startswith("https://"):
        raise ValueError(f"repo_url={repo_url!r} must be an https:// repository URL")
    url = repo_url.rstrip("/")
    if is_published(url):
        problem = (
            f"Installing gpulab from {url} (branch {branch}) failed: check the pip messages "
            "above and that the repository is public, then run this cell again."
        )
        on_missing = [
            "try:  # NVML for the energy lab; on a GPU, Numba's CUDA target for torch's CUDA",
            "    import torch",
            '    _cuda = torch.version.cuda.split(".")[0] if torch.cuda.is_available() else ""',
            "except (ImportError, AttributeError):  # no torch, or a GPU build without CUDA",
            '    _cuda = ""',
            f"_gpu = f\",kernels-cu{{_cuda}}\" if _cuda in {NUMBA_CUDA_MAJORS!r} else \"\"",
            '_extras = "nvml" + _gpu',
            f'%pip install --quiet "gpulab[{{_extras}}] @ git+{url}.git@{branch}"',
            "try:",
            "    import gpulab as gl",
            "except ImportError:",
            *("    " + line for line in _raise_setup_error(problem)),
        ]
    else:  # nothing to install from: say so rather than try
        on_missing = _raise_setup_error(
            "gpulab is not installed here and this copy of the course is not published yet "
            "(its repository URL is a placeholder): open this lab from the published course, "
            "or install gpulab from a checkout of the course (pip install -e <its folder>), "
            "then run this cell again."
        )
    return "\n".join(
        [
            "# Install gpulab if it is missing (Colab); torch and CuPy are left alone.",
            "class GpulabSetupError(Exception):",
            "    def _render_traceback_(self):  # IPython shows just this line, no traceback",
            '        return [f"GpulabSetupError: {self}"]',
            "",
            "",
            "try:",
            "    import gpulab as gl",
            "except ImportError:",
            *("    " + line for line in on_missing),
            "",
            "info = gl.setup_lab()",
        ]
    )


def _raise_setup_error(sentence: str) -> list[str]:
    chunks = textwrap.wrap(sentence, 70, drop_whitespace=False)
    return ["raise GpulabSetupError(", *(f"    {json.dumps(c)}" for c in chunks), ") from None"]


def _repository(config_path: Path) -> tuple[str, str]:
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    repo = config.get("repository") or {}
    if "url" not in repo:
        raise ValueError(f"{config_path} has no repository.url; set it to the public repo URL")
    return repo["url"], repo.get("branch", "main")


def stamp_setup_cells(root: str | Path = ".") -> list[Path]:
    """Rewrite every lab's setup cell from the repository setting in ``_config.yml``.

    Returns the notebooks that changed.
    """
    root = Path(root)
    source = setup_cell_source(*_repository(root / "_config.yml"))
    changed = []
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = _read(path)
        cells = [c for c in nb["cells"] if SETUP_TAG in c.get("metadata", {}).get("tags", [])]
        if len(cells) != 1:
            raise ValueError(f"{path} needs exactly one code cell tagged {SETUP_TAG!r}")
        if "".join(cells[0]["source"]) != source:
            cells[0]["source"] = source.splitlines(keepends=True)
            _write(path, nb)
            changed.append(path)
    return changed
