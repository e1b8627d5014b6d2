"""The "measure your GPU" panel: ``{measure-gpu}`` writes a panel that, when the reader presses
its button, measures the reader's own GPU from the page with WebGPU.

A chapter writes::

    ```{measure-gpu}
    ```

and gets a button, a status line, a result area and, underneath, what a lab recording
measured (the memory-bandwidth lab's measured ceilings and its provenance), shown when the
panel cannot measure: without JavaScript, without WebGPU (an older browser, a blocked
adapter) or on a page opened as a file. Nothing runs on page load. The button starts
``_static/measure-gpu-worker.js`` in a worker, which runs the WGSL kernels of
``_static/measure-gpu.wgsl`` and then the course's own Python on Pyodide (the runtime and
package zip the live calculators ship, :mod:`live_calculators`), which turns the times into
rates, the reader's roofline and the model's errors (:mod:`gpulab.labkit.gpu_panel`).
``_static/measure-gpu.js`` on the page only shows what the worker sends, so the page stays
responsive while it measures.
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

from gpulab.labkit.gpu_panel import KERNELS

# live_calculators imports this module for ui_messages(): its own names are imported where
# they are used, once both modules are loaded.
ROOT = Path(__file__).resolve().parents[2]
STATIC = Path(__file__).parent / "static"

SCRIPTS = ("measure-gpu.js", "measure-gpu-worker.js", "measure-gpu.wgsl")
STYLE = "measure-gpu.css"
LAB = ROOT / "notebooks" / "memory_bandwidth_lab.ipynb"
#: The lab output that holds the measured ceilings (``gl.measure_ceilings`` printed).
CEILINGS_OUTPUT = r"\(fp32, measured\)"
TITLE = "Measure your GPU in this page (WebGPU)"
BUTTON = "Measure my GPU"
RECORDED = "What the memory-bandwidth lab measured when it was recorded ({where}):"
DOWNLOAD = "Download this measurement as JSON (the course's benchmark report format)"
#: What the panel's script says, by situation (data attributes of the panel, translated).
SCRIPT_TEXT = {
    "noJs": "This panel needs a browser with JavaScript and WebGPU; below is what a lab "
    "recording measured instead.",
    "ready": "Press the button to run up to five small kernels on your GPU through WebGPU (a few "
    "seconds to half a minute); nothing runs before you press it, and nothing leaves the page.",
    "running": "Measuring: {kernel}…",
    "python": "Starting Python in this page to compute the rates and your roofline…",
    "done": "Measured on your GPU in this browser; the table and the roofline below are yours.",
    "noWebGPU": "This browser does not offer WebGPU, so the panel cannot measure your GPU; "
    "below is what a lab recording measured instead.",
    "noAdapter": "This browser offers WebGPU but gave the page no GPU adapter (it may be "
    "blocked or switched off), so the panel cannot measure your GPU; below is what a lab "
    "recording measured instead.",
    "fromFile": "This page was opened as a file, where browsers do not run the panel: serve the "
    "book (python3 -m http.server -d _build/html) and open it from http://localhost:8000 to "
    "measure your GPU; below is what a lab recording measured instead.",
    "failed": "The measurement stopped ({error}); below is what a lab recording measured instead.",
    "pythonFailed": "The kernels ran, but Python could not start in this page to compute the "
    "result ({error}).",
}


def ui_messages() -> list[str]:
    """Every sentence and label the panel writes into a page, for the translations."""
    return [TITLE, BUTTON, RECORDED, DOWNLOAD, *SCRIPT_TEXT.values(), *KERNELS.values(),
            "Python"]  # fmt: skip


def recorded_html(_=lambda text: text) -> str:
    """What a lab recording measured: the lab's measured ceilings and the recording's provenance.

    The GPU recording where there is one, else the CPU one (the lab notebook itself).
    """
    from gpulab.course.recordings import lab_recordings
    from gpulab.labkit.claims import recorded_output
    from gpulab.measure.provenance import provenance_line

    recordings = lab_recordings(LAB)
    recording = recordings.get("cuda") or recordings["cpu"]
    ceilings = recorded_output(recording.path, CEILINGS_OUTPUT).strip()
    line = provenance_line(recording.provenance).rstrip(".")
    where = f"{recording.label}: {line[0].lower()}{line[1:]}"
    esc = html.escape
    return (
        f'<div class="gl-gpu-recorded"><p>{esc(_(RECORDED).replace("{where}", where))}</p>'
        f'<pre class="gl-gpu-text">{esc(ceilings)}</pre></div>'
    )


def panel_html(_=lambda text: text) -> str:
    """The panel as the page holds it before the reader presses the button."""
    from live_calculators import _kebab

    esc = html.escape
    texts = "".join(
        f' data-text-{_kebab(key)}="{esc(_(text))}"' for key, text in SCRIPT_TEXT.items()
    )
    names = {**KERNELS, "python": "Python"}
    texts += "".join(
        f' data-kernel-{key.replace("_", "-")}="{esc(_(label))}"' for key, label in names.items()
    )
    return (
        f'<div class="gl-gpu" data-measure-gpu{texts}>'
        f'<p class="gl-gpu-title">{esc(_(TITLE))}</p>'
        f'<button type="button" class="gl-gpu-run" disabled>{esc(_(BUTTON))}</button>'
        f'<p class="gl-gpu-status" aria-live="polite">{esc(_(SCRIPT_TEXT["noJs"]))}</p>'
        '<div class="gl-gpu-result" aria-live="polite"></div>'
        # The script adds the link once there is a report (a link with no address is none).
        f'<p class="gl-gpu-download" hidden data-label="{esc(_(DOWNLOAD))}"></p>'
        f"{recorded_html(_)}</div>"
    )


class MeasureGpuDirective(Directive):
    """``{measure-gpu}``: the panel (see the module docstring)."""

    required_arguments = 0
    has_content = False

    def run(self):
        from live_calculators import translator

        env = self.state.document.settings.env
        _placed(env).add(env.docname)
        env.note_dependency(str(LAB))  # a new recording: the fallback changes
        env.note_dependency(__file__)  # so does a change to what this module writes
        return [nodes.raw("", panel_html(translator(env.config.language)), format="html")]


def _placed(env) -> set:
    if not hasattr(env, "gl_measure_gpu"):
        env.gl_measure_gpu = set()
    return env.gl_measure_gpu


def _purge(app, env, docname) -> None:
    _placed(env).discard(docname)


def _merge(app, env, docnames, other) -> None:
    _placed(env).update(getattr(other, "gl_measure_gpu", set()))


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    """The panel's script and stylesheet, on pages with the panel only."""
    if pagename in _placed(app.env):
        app.add_js_file(SCRIPTS[0], defer="defer")
        app.add_css_file(STYLE)


def _copy_assets(app, exception) -> None:
    """The scripts, the kernels and the stylesheet into ``_static/`` (after the pages, as the
    live calculators' are, so Jupyter Book does not add them to every page)."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    for name in (*SCRIPTS, STYLE):
        shutil.copyfile(STATIC / name, static / name)


def setup(app):
    app.add_directive("measure-gpu", MeasureGpuDirective)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("html-page-context", _page_assets)
    app.connect("build-finished", _copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
