"""The labs as a collection: their metadata, their setup cell, and the table the preface shows.

Each lab notebook keeps a ``gpulab`` entry in its metadata::

    {"title": ..., "chapter": "book/gpu_basics", "needs": ...,
     "instructor_notes": "...Markdown for the workshop guide...",
     "run_time_s": {"cpu": 41.0, "cuda": 12.0}, "recorded": {...provenance...}}

``run_time_s`` and ``recorded`` are written by ``python -m gpulab record``, never by hand.
``instructor_notes`` (optional) is what to emphasise and the common questions; the workshop
guide (``book/workshop.md``) shows it under the lab.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpulab.units import format_duration

__all__ = ["LabInfo", "list_labs", "lab_table", "setup_cell_source", "stamp_setup_cells"]

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
        gpu = lab.run_time_s.get("cuda")
        rows.append(
            f"| [{lab.title}]({link_prefix}{lab.path.name}) | {lab.needs} | "
            f"{_run_time(lab.run_time_s.get('cpu'))} | {_run_time(gpu)} |"
        )
    return "\n".join(rows)


def setup_cell_source(repo_url: str, branch: str = "main") -> str:
    """The first code cell of every lab: install gpulab only where it is missing.

    On Colab this installs gpulab from the course repository with pip; pip keeps the torch
    and CuPy Colab already has because gpulab does not pin them. Where gpulab is already
    installed (a local checkout, CI) the cell installs nothing.
    """
    if not repo_url.startswith("https://"):
        raise ValueError(f"repo_url={repo_url!r} must be an https:// repository URL")
    spec = f"gpulab @ git+{repo_url.rstrip('/')}.git@{branch}"
    return "\n".join(
        [
            "# Install gpulab if it is missing (Colab); torch and CuPy are left alone.",
            "try:",
            "    import gpulab as gl",
            "except ImportError:",
            f'    %pip install --quiet "{spec}"',
            "    import gpulab as gl",
            "",
            "info = gl.setup_lab()",
        ]
    )


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
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(path)
    return changed
