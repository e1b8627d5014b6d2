"""Every lab follows the course's conventions; the lab tools behave."""

import json
import re

import nbformat
import pytest
import yaml

from gpulab import course
from gpulab.course.labs import (
    PLACEHOLDER_REPOSITORY_URL,
    first_cell_problems,
    setup_cell_source,
    stamp_setup_cells,
)

LAB_GLOB = "notebooks/*.ipynb"


def labs(root):
    paths = sorted(root.glob(LAB_GLOB))
    assert paths, "no labs found"
    return paths


def test_every_lab_has_metadata_with_a_recorded_cpu_run(root):
    for lab in course.list_labs(root / "notebooks"):
        assert lab.title and lab.needs and (root / f"{lab.chapter}.md").is_file(), lab.path
        assert 0 < lab.run_time_s["cpu"] < 90, f"{lab.path}: CPU run should stay near a minute"
        assert lab.recorded["cpu"]["kind"] == "cpu"


def test_first_cell_installs_gpulab_from_the_configured_repository(root):
    repo = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    expected = setup_cell_source(repo["url"], repo.get("branch", "main"))
    for path in labs(root):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert first.source == expected, f"{path}: run `python -m gpulab stamp`"
        assert "setup" in first.metadata.get("tags", [])


def test_setup_cell_does_not_touch_torch_or_cupy():
    source = setup_cell_source("https://github.com/example/course")
    pip_line = (
        '%pip install --quiet "gpulab[{_extras}] @ git+https://github.com/example/course.git@main"'
    )
    assert pip_line in source
    assert "torch" not in source.split("%pip")[1].splitlines()[0]
    assert "cupy" not in source.lower().split("%pip")[1].splitlines()[0]
    with pytest.raises(ValueError, match="repo_url='git@github.com:x/y'"):
        setup_cell_source("git@github.com:x/y")


def _run_without_gpulab(setup_source: str, torch_cuda: str | None = None) -> nbformat.NotebookNode:
    """Run a setup cell, then one more cell, in a kernel where ``import gpulab`` fails.

    ``%pip`` is replaced by a magic that only prints its arguments, so nothing is installed
    and no network is needed: the install "fails" as it would for a wrong URL.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    hide_gpulab = "\n".join(
        [
            "import sys",
            "from IPython.core.magic import register_line_magic",
            'sys.modules["gpulab"] = None  # import gpulab now raises ImportError',
            "",
            "@register_line_magic",
            "def pip(line):",
            "    print('pip', line)",
        ]
    )
    if torch_cuda:  # torch reports a GPU and the CUDA version it was built for
        hide_gpulab += "\n".join(
            [
                "",
                "import torch",
                "torch.cuda.is_available = lambda: True",
                f"torch.version.cuda = {torch_cuda!r}",
            ]
        )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(hide_gpulab),
        nbformat.v4.new_code_cell(setup_source),
        nbformat.v4.new_code_cell("print(gl)"),
    ]
    # A kernel can take over a minute to start on a loaded 2-core machine (nbclient's default
    # startup limit is 60 s); 300 s still ends a kernel that never starts.
    client = NotebookClient(nb, timeout=60, startup_timeout=300, kernel_name="python3")
    with pytest.raises(CellExecutionError):  # "Run all" stops at the setup cell
        client.execute()
    assert nb.cells[2].outputs == [], "the cell after the failed setup cell ran"
    return nb


@pytest.mark.parametrize(
    "published, torch_cuda, extras",
    [
        (True, None, "nvml"),  # a CPU session: no CUDA libraries are downloaded
        (True, "12.4", "nvml,kernels-cu12"),  # Colab's T4: numba-cuda for torch's CUDA 12
        (True, "13.0", "nvml,kernels-cu13"),
        (True, "11.8", "nvml"),  # numba-cuda has no CUDA 11 libraries
        (False, None, ""),
    ],
)
def test_setup_cell_stops_with_one_sentence_when_gpulab_cannot_be_installed(
    published, torch_cuda, extras
):
    url = "https://github.com/example/course" if published else PLACEHOLDER_REPOSITORY_URL
    nb = _run_without_gpulab(setup_cell_source(url), torch_cuda)
    outputs = nb.cells[1].outputs
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "GpulabSetupError"
    (line,) = errors[0].traceback  # the sentence alone, no traceback above it
    assert line == f"GpulabSetupError: {errors[0].evalue}"
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    if published:
        assert (
            printed
            == f'pip install --quiet "gpulab[{extras}] @ git+https://github.com/example/course.git@main"\n'
        )
        assert errors[0].evalue.startswith(
            "Installing gpulab from https://github.com/example/course (branch main) failed: "
        )
    else:  # nothing to install from: no pip at all
        assert printed == ""
        assert "not published yet (its repository URL is a placeholder)" in errors[0].evalue
    assert errors[0].evalue.count(". ") == 0 and errors[0].evalue.endswith(".")  # one sentence


def test_every_lab_passes_the_first_cell_checks_of_record_all(root):
    for path in labs(root):
        assert first_cell_problems(nbformat.read(path, as_version=4)) == [], path


def _cells(*kinds):
    """Cells from short names: 'setup', 'provenance', 'code', 'md', or 'code:provenance'."""
    cells = []
    for kind in kinds:
        if kind == "setup":
            cells.append(nbformat.v4.new_code_cell("", metadata={"tags": ["setup"]}))
        elif kind == "provenance":
            cells.append(nbformat.v4.new_markdown_cell("", metadata={"tags": ["provenance"]}))
        elif kind == "code:provenance":
            cells.append(nbformat.v4.new_code_cell("", metadata={"tags": ["provenance"]}))
        elif kind == "code":
            cells.append(nbformat.v4.new_code_cell(""))
        else:
            cells.append(nbformat.v4.new_markdown_cell(""))
    return nbformat.v4.new_notebook(cells=cells)


@pytest.mark.parametrize(
    "kinds, problem",
    [
        (("md", "code", "provenance", "code"), "no cell is tagged 'setup'"),
        (("code", "setup", "provenance"), "'setup' (cell 1) must be the first code cell, which is"),
        (("setup", "setup", "provenance"), "2 cells are tagged 'setup'"),
        (("setup", "code"), "0 cells are tagged 'provenance'"),
        (("setup", "provenance", "provenance"), "2 cells are tagged 'provenance'"),
        (("setup", "code:provenance"), "'provenance' must be a markdown cell"),
        (("setup", "code", "provenance"), "'provenance' (cell 2) must come before the second"),
    ],
)
def test_first_cell_problems_name_what_is_wrong(kinds, problem):
    assert first_cell_problems(_cells("md", "setup", "provenance", "code")) == []
    found = first_cell_problems(_cells(*kinds))
    assert any(problem in sentence for sentence in found), found


def test_outputs_are_committed_with_provenance(root):
    for path in labs(root):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path}: outputs not recorded"
        (prov,) = [c for c in nb.cells if "provenance" in c.metadata.get("tags", [])]
        assert prov.source.startswith("**Provenance.** Outputs recorded on ")


def test_figures_are_png_only(root):
    for path in labs(root):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                assert "image/svg+xml" not in out.get("data", {}), path


FIGURE_CALLS = ("plt.show(", "plt.subplots(", "plot_roofline(", "draw_schedule_runs(")


def _draws_a_figure(cell) -> bool:
    if cell.cell_type != "code" or cell.source.lstrip().startswith("%%writefile"):
        return False
    pngs = any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
    return pngs or any(call in cell.source for call in FIGURE_CALLS)


def alt_text_problem(cell) -> str | None:
    """Why a figure cell's alt text would not describe its figure, or None.

    Without ``mystnb: image: alt:`` metadata the built page uses the image's file name.
    """
    alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
    if not alt:
        return "no alt text (the page would show the image's file name)"
    if re.search(r"\.(png|jpe?g|svg)\b|^[\w./-]+$", alt):
        return f"alt text {alt!r} is a file name"
    if len(alt.split()) < 12:
        return f"alt text {alt!r} is too short to describe a figure"
    return None


def test_every_lab_figure_has_alt_text_that_describes_it(root):
    problems = [
        f"{path.name} cell {i}: {problem}"
        for path in labs(root)
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells)
        if _draws_a_figure(cell) and (problem := alt_text_problem(cell))
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("alt", ["", "a165a6f875e5c550a0cee1704c8735784d.png",
                                 "../_images/a165a6f8.png", "loss_curve", "A loss curve."])
def test_alt_text_check_refuses_file_names_and_stubs(alt):
    cell = nbformat.v4.new_code_cell("plt.show()", metadata={"mystnb": {"image": {"alt": alt}}})
    assert _draws_a_figure(cell) and alt_text_problem(cell)


def test_stamp_rewrites_setup_cells_from_config(tmp_path, root):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/fork/course\n  branch: dev\n"
    )
    src = root / "notebooks" / "gpu_basics_lab.ipynb"
    dst = tmp_path / "notebooks" / src.name
    dst.write_text(src.read_text())
    assert stamp_setup_cells(tmp_path) == [dst]
    cell = next(c for c in json.loads(dst.read_text())["cells"] if c["cell_type"] == "code")
    assert "git+https://github.com/fork/course.git@dev" in "".join(cell["source"])
    assert stamp_setup_cells(tmp_path) == []  # idempotent


def test_lab_table_lists_each_lab_with_its_run_time(root):
    table = course.lab_table(root / "notebooks", link_prefix="../notebooks/")
    assert "[Your device, a first kernel, CPU vs GPU](../notebooks/gpu_basics_lab.ipynb)" in table
    assert table.count("\n") == 1 + len(labs(root))
    with pytest.raises(FileNotFoundError, match="folder="):
        course.list_labs(root / "no-such-folder")


def test_lab_without_metadata_is_named_in_the_error(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["gpulab"] = {"title": "T"}
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match="x.ipynb: the 'gpulab' metadata lacks chapter, needs"):
        course.list_labs(tmp_path)


def test_record_executes_in_place_and_stamps_provenance(tmp_path):
    from gpulab.course.record import record_notebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("print(6 * 7)"),
        nbformat.v4.new_markdown_cell("old", metadata={"tags": ["provenance"]}),
    ]
    nb.metadata["gpulab"] = {"title": "T", "chapter": "book/x", "needs": "CPU"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    rec = record_notebook(path, timeout_s=120)
    done = nbformat.read(path, as_version=4)
    assert done.cells[0].outputs[0]["text"] == "42\n"
    assert done.cells[1].source.startswith(f"**Provenance.** Outputs recorded on {rec['date']}")
    kind = rec["kind"]
    assert done.metadata["gpulab"]["run_time_s"][kind] == rec["run_time_s"] > 0
    assert done.metadata["gpulab"]["recorded"][kind]["torch"] == rec["torch"]
