"""Worked solutions closed: in every lab's metadata (Jupyter, Colab), on the book's lab pages
(closed for readers, open in the instructors' build), and gone from the student copies."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpulab.__main__ import main
from gpulab.course.solutions import (
    COLAB_TITLE,
    SOLUTION_TITLE,
    close_solutions,
    open_solution_problems,
    without_colab_title,
)
from gpulab.course.student import student_copy

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted((ROOT / "notebooks").glob("*.ipynb"))
def _solutions(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


@pytest.mark.parametrize(
    "lab",
    [
        pytest.param(path, id=path.name)
        for path in LABS
    ],
)
def test_every_worked_solution_of_a_lab_is_closed(lab):
    nb = json.loads(lab.read_text(encoding="utf-8"))
    assert _solutions(nb), f"{lab.name} has no worked solution"
    problems = open_solution_problems(nb)
    assert not problems, f"{lab.name}: run python -m gpulab stamp; " + "; ".join(problems)


def test_closing_is_idempotent_and_changes_nothing_that_runs():
    nb = json.loads((ROOT / "notebooks" / "gpu_basics_lab.ipynb").read_text(encoding="utf-8"))
    for cell in _solutions(nb):  # back to an open solution, as the labs were written
        cell["metadata"].pop("jupyter", None)
        cell["metadata"].pop("cellView", None)
        cell["source"] = without_colab_title(_source(cell))
    before = [ast.dump(ast.parse(_source(c))) for c in _solutions(nb) if c["cell_type"] == "code"]
    assert open_solution_problems(nb)
    assert close_solutions(nb) is True
    assert close_solutions(nb) is False  # a second stamp changes nothing
    assert open_solution_problems(nb) == []
    code = [c for c in _solutions(nb) if c["cell_type"] == "code"]
    assert [_source(c).splitlines()[0] for c in code] == [COLAB_TITLE] * len(code)
    # The title is a comment: the cell compiles to the same program as before.
    assert [ast.dump(ast.parse(_source(c))) for c in code] == before
    markdown = [c for c in _solutions(nb) if c["cell_type"] == "markdown"]
    assert markdown and all(c["metadata"]["jupyter"] == {"source_hidden": True} for c in markdown)
    nbformat.validate(nbformat.from_dict(nb))  # the metadata is valid nbformat


def test_an_older_title_line_is_replaced_not_stacked():
    cell = {"cell_type": "code", "metadata": {"tags": ["solution"]}, "outputs": [],
            "source": "#@title Solution\n# Exercise 1: FLOPs?\nanswer = 2"}  # fmt: skip
    nb = {"cells": [cell]}
    close_solutions(nb)
    assert _source(nb["cells"][0]) == f"{COLAB_TITLE}\n# Exercise 1: FLOPs?\nanswer = 2"


def test_stamp_closes_the_solutions_of_every_lab(tmp_path, capsys):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "notebooks").mkdir()
    lab = tmp_path / "notebooks" / "gpu_basics_lab.ipynb"
    nb = json.loads((ROOT / "notebooks" / "gpu_basics_lab.ipynb").read_text(encoding="utf-8"))
    for cell in _solutions(nb):
        cell["metadata"].pop("jupyter", None)
    lab.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["stamp", "--root", str(tmp_path)]) == 0
    assert "worked solutions closed in 1 lab(s)" in capsys.readouterr().out
    assert open_solution_problems(json.loads(lab.read_text(encoding="utf-8"))) == []
    assert main(["stamp", "--root", str(tmp_path)]) == 0
    assert "worked solutions closed in 0 lab(s)" in capsys.readouterr().out


def test_the_student_copy_drops_the_solutions_and_their_form():
    nb = nbformat.read(ROOT / "notebooks" / "gpu_basics_lab.ipynb", as_version=4)
    copy = student_copy(nb)
    text = json.dumps(copy)
    assert "@title" not in text and "Solution." not in text
    asked = [c for c in copy.cells if "solution" in c.metadata.get("tags", [])]
    assert [c.source.splitlines()[0][:12] for c in asked] == ["# Exercise 1", "# Exercise 2"]
    # The learner's answer cell is open in Jupyter and Colab alike.
    assert all("jupyter" not in c.metadata and "cellView" not in c.metadata for c in asked)


# --------------------------------------------------------------------------- the lab page

CONF = """\
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_nb", "solution_cells"]
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath"]
nb_execution_mode = "off"
suppress_warnings = ["myst.xref_missing"]
"""


@pytest.fixture(scope="module")
def lab_pages(tmp_path_factory):
    """gpu_basics_lab as a page, built by Sphinx with the book's extension, for readers and
    for instructors (the instructors' build sets ``gpulab_solutions_open``)."""
    src = tmp_path_factory.mktemp("book")
    (src / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext")))
    (src / "index.md").write_text("# Book\n\n```{toctree}\nlab\n```\n")
    shutil.copy(ROOT / "notebooks" / "gpu_basics_lab.ipynb", src / "lab.ipynb")
    pages = {}
    for name, extra in (("readers", []), ("instructors", ["-D", "gpulab_solutions_open=1"])):
        out = src.parent / f"{src.name}-{name}"
        # Two small pages, no execution: a few seconds each, a minute on a loaded machine.
        subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", *extra, str(src),
                        str(out)], check=True, timeout=300)  # fmt: skip
        pages[name] = (out / "lab.html").read_text(encoding="utf-8")
    return pages


def _boxes(page: str):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    return soup, soup.select("details.gpulab-solution")


@pytest.mark.parametrize("build, opened", [("readers", False), ("instructors", True)])
def test_every_solution_on_the_lab_page_is_in_a_box(lab_pages, build, opened):
    soup, boxes = _boxes(lab_pages[build])
    nb = json.loads((ROOT / "notebooks" / "gpu_basics_lab.ipynb").read_text(encoding="utf-8"))
    assert len(boxes) == len(_solutions(nb)) == 4  # two code cells, two Markdown ones
    assert [box.has_attr("open") for box in boxes] == [opened] * 4
    assert all(box.summary.get_text(strip=True) == SOLUTION_TITLE for box in boxes)
    code = soup.select("div.cell.tag_solution")
    assert len(code) == 2 and all(c.find_parent("details", class_="gpulab-solution") for c in code)
    for box, cell in zip(boxes, _solutions(nb), strict=True):
        first = without_colab_title(_source(cell)).strip().splitlines()[0]
        words = first.replace("*", "").replace("#", "").split()[:4]
        assert " ".join(words) in " ".join(box.get_text(" ").split())
    assert "@title" not in lab_pages[build]  # Colab's line is not shown on the page
    # Nothing else is boxed: the exercise's question and its check stay visible.
    question = soup.find(string=lambda s: s and "Exercise 1." in s)
    assert question is not None and question.find_parent("details") is None


def test_a_reader_opens_a_closed_solution_in_chromium(lab_pages, tmp_path):
    """On the readers' page a solution's content is hidden until its title is clicked."""
    from test_browser import CHROMIUM_ARGS, LAUNCH_TIMEOUT_MS, STEP_TIMEOUT_MS, _find_chromium

    chromium = _find_chromium()
    if chromium is None:
        pytest.skip("no Chromium executable (see tests/test_browser.py)")
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "lab.html"
    page_file.write_text(lab_pages["readers"], encoding="utf-8")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=CHROMIUM_ARGS, timeout=LAUNCH_TIMEOUT_MS)  # fmt: skip
        try:
            page = browser.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                       else r.abort())  # fmt: skip
            page.goto(page_file.as_uri(), wait_until="domcontentloaded")
            boxes = page.locator("details.gpulab-solution")
            assert boxes.count() == 4
            for i in range(boxes.count()):
                box = boxes.nth(i)
                body = box.locator(":scope > :not(summary)").first
                assert box.locator("summary").is_visible()
                assert not body.is_visible(), f"solution {i} is shown before it is opened"
                box.locator("summary").click()
                body.wait_for(state="visible", timeout=STEP_TIMEOUT_MS)
        finally:
            browser.close()


def test_the_box_title_speaks_chinese():
    """The box's title is written by the extension, so ui.po translates it (not a page's .po)."""
    from gpulab.course.translation import ui_table

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        from solution_cells import ui_messages
    finally:
        sys.path.remove(str(ROOT / "book" / "_ext"))
    table = ui_table(ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "ui.po")
    assert ui_messages() == [SOLUTION_TITLE]
    assert table.get(SOLUTION_TITLE) == "详细解答"
