"""How a lab page shows a recorded cell's outputs, and the tabs between recordings."""

from __future__ import annotations

import base64
import re

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


def test_recording_path_refuses_unknown_kinds():
    with pytest.raises(ValueError, match="kind='xpu'"):
        recording_path("notebooks/a_lab.ipynb", "xpu")
