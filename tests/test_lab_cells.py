"""Every lab keeps its machinery out of sight: no visible code cell over 25 non-blank lines,
the setup cell and the ``%%writefile`` scripts collapsed (their output open), and each script
introduced by a sentence saying what it does."""

import json
import shutil
from pathlib import Path

import pytest

from gpulab.__main__ import main
from gpulab.course.collapsed import (
    HIDE_INPUT_TAG,
    MAX_VISIBLE_LINES,
    collapse_machinery,
    long_visible_cells,
    machinery_problems,
)

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted((ROOT / "notebooks").glob("*.ipynb"))

def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _first_line(cell: dict) -> str:
    src = cell["source"]
    src = "".join(src) if isinstance(src, list) else src
    return next((line.rstrip() for line in src.splitlines() if line.strip()), "")


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_no_visible_code_cell_of_a_lab_is_long(lab):
    nb = _read(lab)
    long = [(i, n, _first_line(nb["cells"][i])) for i, n in long_visible_cells(nb)]
    over = [f"cell {i} ({n} lines, {first!r})" for i, n, first in long]
    assert not over, (
        f"{lab.name}: visible code cells over {MAX_VISIBLE_LINES} non-blank lines: "
        + "; ".join(over) + " (move the machinery into the package)"
    )


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_setup_cell_and_scripts_of_a_lab_are_collapsed_and_introduced(lab):
    nb = _read(lab)
    problems = machinery_problems(nb)
    assert not problems, f"{lab.name}: " + "; ".join(problems)
    setup = [c for c in nb["cells"] if "setup" in c["metadata"].get("tags", [])]
    assert len(setup) == 1 and HIDE_INPUT_TAG in setup[0]["metadata"]["tags"]
    # The one-line device report stays in sight: only the code is folded.
    assert "outputs_hidden" not in setup[0]["metadata"].get("jupyter", {})


def test_a_long_cell_counts_until_it_is_collapsed_machinery():
    body = "".join(f"x{i} = {i}\n\n" for i in range(MAX_VISIBLE_LINES + 1))
    plain = {"cell_type": "code", "metadata": {}, "source": body, "outputs": []}
    script = {**plain, "metadata": {}, "source": "%%writefile w.py\n" + body}
    intro = {"cell_type": "markdown", "metadata": {}, "source": "The worker adds two numbers."}
    nb = {"cells": [plain, intro, script]}
    assert long_visible_cells(nb) == [(0, MAX_VISIBLE_LINES + 1), (2, MAX_VISIBLE_LINES + 2)]
    assert collapse_machinery(nb) is True
    assert long_visible_cells(nb) == [(0, MAX_VISIBLE_LINES + 1)]  # a plain cell never folds
    assert machinery_problems(nb) == []
    # Exactly at the limit passes; blank lines do not count.
    nb["cells"][0]["source"] = "".join(f"x{i} = {i}\n\n" for i in range(MAX_VISIBLE_LINES))
    assert long_visible_cells(nb) == []


def test_a_script_without_a_sentence_before_it_is_named():
    script = {"cell_type": "code", "metadata": {}, "source": "%%writefile w.py\nx = 1"}
    code = {"cell_type": "code", "metadata": {}, "source": "import os"}
    nb = {"cells": [code, script]}
    collapse_machinery(nb)
    problems = machinery_problems(nb)
    assert problems == ["cell 1: no Markdown cell before the script says what it does"]


@pytest.mark.parametrize(("limit", "error"), [(0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_a_bad_limit_is_refused_by_name(limit, error):
    with pytest.raises(error, match="limit="):
        long_visible_cells({"cells": []}, limit=limit)


def test_stamp_collapses_the_setup_cell_and_scripts(tmp_path, capsys):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    lab = tmp_path / "notebooks" / "distributed_lab.ipynb"
    nb = _read(ROOT / "notebooks" / "distributed_lab.ipynb")
    for cell in nb["cells"]:  # back to open cells, as the labs were written
        cell["metadata"].pop("jupyter", None)
        tags = cell["metadata"].get("tags", [])
        if HIDE_INPUT_TAG in tags:
            tags.remove(HIDE_INPUT_TAG)
    lab.write_text(json.dumps(nb), encoding="utf-8")
    assert machinery_problems(_read(lab))
    assert main(["stamp", "--root", str(tmp_path)]) == 0
    assert "setup cells and scripts collapsed in 1 lab(s)" in capsys.readouterr().out
    assert machinery_problems(_read(lab)) == []
    assert main(["stamp", "--root", str(tmp_path)]) == 0
    assert "collapsed in 0 lab(s)" in capsys.readouterr().out
