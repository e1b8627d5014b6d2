"""How a lab page shows a recorded cell's outputs, and the tabs between recordings."""

from __future__ import annotations

import base64
import html
import io
import re

import nbformat
import pytest

from gpulab.course.recordings import cell_tabs, outputs_html, recording_path

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()


def test_outputs_html_escapes_text_and_keeps_alt_text():
    cell = {
        "metadata": {"mystnb": {"image": {"alt": 'Bars: "CPU" < GPU'}}},
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["<b>x</b>\n"]},
            {"output_type": "stream", "name": "stderr", "text": "careful\n"},
            {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "fig"}},
            {"output_type": "execute_result", "data": {"text/plain": ["1 < 2"]}},
            {"output_type": "display_data", "data": {"text/markdown": "Measured **3x**."}},
        ],
    }
    page = outputs_html(cell)
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert '<pre class="gl-rec-stderr">careful' in page
    assert f'src="data:image/png;base64,{PNG}"' in page
    assert 'alt="Bars: &quot;CPU&quot; &lt; GPU"' in page
    assert "<pre>1 &lt; 2</pre>" in page
    assert "<strong>3x</strong>" in page  # Markdown outputs render as they do on the page


def test_outputs_html_refuses_a_corrupt_image():
    cell = {"outputs": [{"output_type": "display_data", "data": {"image/png": "not base64!"}}]}
    with pytest.raises(ValueError):
        outputs_html(cell)


def test_widgets_get_a_sentence_not_a_broken_view():
    cell = {
        "outputs": [
            {
                "output_type": "display_data",
                "data": {
                    "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                    "text/plain": "VBox()",
                },
            }
        ]
    }
    assert "open the lab to use it" in outputs_html(cell)


def test_cell_tabs_wrap_each_panel_and_balance_their_divs():
    pieces = cell_tabs("cell-7", ["CPU", "GPU (NVIDIA H100)"])
    page = pieces[0] + "<p>cpu</p>" + pieces[1] + "<p>gpu</p>" + pieces[2]
    assert page.count("<div") == page.count("</div>")
    radios = re.findall(r'<input type="radio"[^>]*>', page)
    assert len(radios) == 2 and "checked" in radios[0] and "checked" not in radios[1]
    assert all('name="cell-7"' in radio for radio in radios)
    # Each label points at its radio, and each panel follows its label.
    assert re.search(
        r'id="cell-7-1".*for="cell-7-1">GPU \(NVIDIA H100\)</label>'
        r'<div class="gl-rec-panel">\s*<p>gpu</p>',
        page,
        re.S,
    )


@pytest.mark.parametrize(
    "device_class, error, match",
    [
        ("xpu", ValueError, "device_class='xpu' is not known"),
        ("cuda", ValueError, "device_class='cuda' names no GPU: a CUDA recording is kept per"),
        ("cuda:  ", ValueError, "names no GPU"),
        ("cpu:AMD EPYC", ValueError, "device_class='cpu:AMD EPYC' takes no device name"),
        (None, TypeError, "device_class=None"),
    ],
)
def test_recording_path_refuses_unknown_classes(device_class, error, match):
    with pytest.raises(error, match=match):
        recording_path("notebooks/a_lab.ipynb", device_class)


def test_each_gpu_of_the_registry_is_a_class_of_its_own(any_fake_gpu):
    """The rehearsal's T4, A100 and H100, as torch names them, become their registry rows;
    parts that differ in memory or form factor never share a class or a folder."""
    import torch

    from gpulab.course.recordings import device_class

    name = torch.cuda.get_device_name()
    assert device_class("cuda", name) == f"cuda:{any_fake_gpu.registry_name}"
    pairs = [
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3"),
    ]
    for one, other in pairs:
        a, b = device_class("cuda", one), device_class("cuda", other)
        assert a != b
        assert recording_path("x_lab.ipynb", a).parent != recording_path("x_lab.ipynb", b).parent
    with pytest.raises(ValueError, match="name=' ' must be the GPU's name"):
        device_class("cuda", " ")
    with pytest.raises(TypeError, match="name=None"):
        device_class("cuda")


# --------------------------------------------------------------------------- the lab page

H100 = "cuda:H100 SXM5 80GB"
T4 = "cuda:Tesla T4"
DEVICES = {"cpu": "AMD EPYC", H100: "NVIDIA H100 80GB HBM3", T4: "Tesla T4", "mps": "Apple M3"}
GPU, APPLE = "GPU (H100 SXM5 80GB)", "Apple GPU (Apple M3)"


def _provenance(device_class: str) -> dict:
    """A record with the fields of ``gpulab.provenance.provenance()``, as ``record`` stores it."""
    kind = device_class.partition(":")[0]
    return {
        "device": f"{DEVICES[device_class]} ({kind}); torch 2.9.0",
        "kind": kind,
        "device_class": device_class,
        "name": DEVICES[device_class],
        "cpu": "AMD EPYC, 2 cores",
        "torch": "2.9.0",
        "torch_cuda": "12.8" if kind == "cuda" else None,
        "cupy": None,
        "driver": None,
        "python": "3.11.7",
        "gpulab": "0.1.0",
        "date": "2026-12-03",
        "run_time_s": 12.0,
    }


def _write_recording(path, kinds, code):
    """A lab as ``python -m gpulab record`` leaves it: a title, the provenance cell, the code
    cells with their printed outputs (``code``: source and lines printed, per cell), and each
    kind's run time and provenance in its ``gpulab`` metadata."""
    title = nbformat.v4.new_markdown_cell("# A lab")
    stamped = nbformat.v4.new_markdown_cell("**Provenance.** Outputs recorded on 2026-12-03.")
    stamped.metadata["tags"] = ["provenance"]
    cells = [title, stamped]
    for source, printed in code:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in printed]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["gpulab"] = {
        "run_time_s": {kind: 12.0 for kind in kinds},
        "recorded": {kind: _provenance(kind) for kind in kinds},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _lab_page(folder, root, monkeypatch, language: str | None = None) -> str:
    """The HTML of ``folder/notebooks/a_lab.ipynb`` built as the book builds a lab (myst-nb,
    outputs as recorded, with book/_ext/lab_recordings.py), in ``language`` if given."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    monkeypatch.syspath_prepend(str(root / "book" / "_ext"))
    warnings = io.StringIO()
    with docutils_namespace():  # what one build registers with docutils goes after it
        app = Sphinx(
            srcdir=str(folder),
            confdir=None,
            outdir=str(folder / "_build" / "html"),
            doctreedir=str(folder / "_build" / "doctrees"),
            buildername="html",
            confoverrides={
                "extensions": ["myst_nb", "lab_recordings"],
                "root_doc": "notebooks/a_lab",
                "nb_execution_mode": "off",
                "exclude_patterns": ["_build", "notebooks/recordings"],
                **({"language": language} if language else {}),
            },
            status=None,
            warning=warnings,
            freshenv=True,
        )
        app.build()
    assert not warnings.getvalue(), warnings.getvalue()
    return (folder / "_build" / "html" / "notebooks" / "a_lab.html").read_text(encoding="utf-8")


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _note(page: str) -> list[str]:
    """The paragraphs of the note at the top of a lab page."""
    note = re.search(r'<div class="[^"]*gl-recordings-note[^"]*">(.*?)</div>', page, re.S)
    assert note, "no recordings note on the page"
    return [_text(p) for p in re.findall(r"<p>(.*?)</p>", note.group(1), re.S)]


def _code_cells(page: str) -> list[str]:
    """The HTML of each code cell, in page order (the last runs on to the page's end)."""
    return page.split('<div class="cell docutils container">')[1:]


def _tabs(cell: str) -> dict[str, str]:
    """A cell's tabs: each label and the text of its panel; empty for a cell with no tabs."""
    parts = re.split(r'<label class="gl-rec-label" for="[^"]*">([^<]*)</label>', cell)
    labels, panels = parts[1::2], parts[2::2]
    return {html.unescape(label): _text(panel) for label, panel in zip(labels, panels, strict=True)}


def test_a_lab_page_puts_a_gpu_recording_beside_the_cpu_one(tmp_path, root, monkeypatch):
    notebooks = tmp_path / "notebooks"
    _write_recording(
        notebooks / "a_lab.ipynb",
        ["cpu", H100],
        [
            ("print(step_time())", ["CPU step: 1.20 s\n"]),
            ("print('edited after the GPU run')", ["edited on the CPU\n"]),
            ("show_figure()", []),
        ],
    )
    _write_recording(
        recording_path(notebooks / "a_lab.ipynb", H100),
        ["cpu", H100],
        [
            ("print(step_time())", ["GPU step: 0.05 s\n"]),
            ("print('as it was')", ["as it was on the GPU\n"]),
            ("show_figure()", ["drawn on the GPU\n"]),
        ],
    )
    page = _lab_page(tmp_path, root, monkeypatch)

    note = _note(page)
    assert note[0].startswith("CPU: outputs recorded on 2026-12-03 on AMD EPYC (cpu)")
    assert note[1].startswith(f"{GPU}: outputs recorded on 2026-12-03 on NVIDIA H100 80GB HBM3")
    assert note[2] == (
        "Each output below has a tab per recording. "
        f"1 cell changed since the {GPU} recording and shows the CPU output only."
    )
    unchanged, changed, no_cpu_output = _code_cells(page)
    tabs = _tabs(unchanged)
    assert list(tabs) == ["CPU", GPU]
    assert "CPU step: 1.20 s" in tabs["CPU"] and "GPU step" not in tabs["CPU"]
    assert "GPU step: 0.05 s" in tabs[GPU]
    # Changed code: the CPU output, no tabs, and nothing of the GPU's older run.
    assert _tabs(changed) == {} and "edited on the CPU" in _text(changed)
    assert "as it was on the GPU" not in page
    # Output on the GPU only: the CPU tab says there was none.
    tabs = _tabs(no_cpu_output)
    assert list(tabs) == ["CPU", GPU]
    assert "(No output on this device.)" in tabs["CPU"] and "drawn on the GPU" in tabs[GPU]


def test_the_chinese_edition_shows_the_note_and_tabs_in_chinese(tmp_path, root, monkeypatch):
    """The note is added after Sphinx translated the page: its sentences come from ui.po."""
    notebooks = tmp_path / "notebooks"
    _write_recording(
        notebooks / "a_lab.ipynb",
        ["cpu", H100],
        [("print(1)", ["1\n"]), ("print('edited')", ["edited\n"]), ("show()", [])],
    )
    _write_recording(
        recording_path(notebooks / "a_lab.ipynb", H100),
        ["cpu", H100],
        [("print(1)", ["1\n"]), ("print('old')", ["old\n"]), ("show()", ["drawn\n"])],
    )
    page = _lab_page(tmp_path, root, monkeypatch, language="zh_CN")
    assert '<p class="admonition-title">录制的输出</p>' in page
    note = _note(page)
    assert note[0].startswith("CPU：输出于 2026-12-03 录制，设备为 AMD EPYC (cpu)")
    assert note[1].startswith(f"{GPU}：输出于 2026-12-03 录制")
    assert note[2] == (
        "下面的每个输出都为每次录制设有一个标签页。 "
        f"有 1 个单元格在 {GPU} 录制之后改动过，只显示 CPU 的输出。"
    )
    assert 'aria-label="录制的输出"' in page and "（此设备上没有输出。）" in page
    assert "Recorded outputs" not in page and not any("recorded on" in line for line in note)


def test_cells_changed_since_two_recordings_are_counted_once_each(tmp_path, root, monkeypatch):
    """With a CUDA and an Apple GPU recording, the note counts distinct cells per recording,
    and the cells changed since both once, as those that show the CPU output only."""
    notebooks = tmp_path / "notebooks"
    kinds = ["cpu", H100, "mps"]
    cpu = [("a()", ["a on cpu\n"]), ("b2()", ["b on cpu\n"]), ("c2()", ["c on cpu\n"]),
           ("d2()", ["d on cpu\n"])]  # fmt: skip
    cuda = [("a()", ["a on cuda\n"]), ("b1()", ["b on cuda\n"]), ("c1()", ["c on cuda\n"]),
            ("d1()", ["d on cuda\n"])]  # fmt: skip
    mps = [("a()", ["a on mps\n"]), ("b1()", ["b on mps\n"]), ("c2()", ["c on mps\n"]),
           ("d2()", ["d on mps\n"])]  # fmt: skip
    _write_recording(notebooks / "a_lab.ipynb", kinds, cpu)
    _write_recording(recording_path(notebooks / "a_lab.ipynb", H100), kinds, cuda)
    _write_recording(notebooks / "recordings" / "mps" / "a_lab.ipynb", kinds, mps)
    page = _lab_page(tmp_path, root, monkeypatch)

    assert _note(page)[-1] == (
        "Each output below has a tab per recording. "
        f"3 cells changed since the {GPU} recording and have no tab for it. "
        f"1 cell changed since the {APPLE} recording and has no tab for it. "
        "1 cell changed since every recording and shows the CPU output only."
    )
    a, b, c, d = (_tabs(cell) for cell in _code_cells(page))
    assert list(a) == ["CPU", GPU, APPLE]
    assert [a[label].strip() for label in a] == ["a on cpu", "a on cuda", "a on mps"]
    assert b == {}  # changed since both: the CPU output only
    assert list(c) == list(d) == ["CPU", APPLE]  # changed since the CUDA recording only
    assert "c on mps" in c[APPLE] and "d on mps" in d[APPLE]


def test_two_gpu_classes_get_a_tab_each(tmp_path, root, monkeypatch):
    """A T4 and an H100 recording of one lab: each its own tab beside the CPU's, and each
    listed with its provenance in the note."""
    lab = tmp_path / "notebooks" / "a_lab.ipynb"
    classes = ["cpu", H100, T4]
    _write_recording(lab, classes, [("print(step())", ["cpu step\n"])])
    _write_recording(recording_path(lab, H100), classes, [("print(step())", ["h100 step\n"])])
    _write_recording(recording_path(lab, T4), classes, [("print(step())", ["t4 step\n"])])
    page = _lab_page(tmp_path, root, monkeypatch)
    note = _note(page)
    assert [line.split(":")[0] for line in note[:3]] == ["CPU", GPU, "GPU (Tesla T4)"]
    assert "on Tesla T4 (cuda)" in note[2]
    (cell,) = _code_cells(page)
    tabs = _tabs(cell)
    assert list(tabs) == ["CPU", GPU, "GPU (Tesla T4)"]
    # (the last panel's text runs on to the page's end)
    assert [tabs[label].split()[:2] for label in tabs] == [["cpu", "step"], ["h100", "step"],
                                                          ["t4", "step"]]  # fmt: skip
