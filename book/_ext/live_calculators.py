"""Live calculators in the pages: ``{calculator} name`` writes a form that runs in the browser.

A chapter writes::

    ```{calculator} roofline
    ```

and gets the form of that calculator (:data:`gpulab.labkit.calculators.CALCULATORS`), with its
result for the default inputs computed now, at build time. In the browser,
``_static/live-calculators.js`` loads Pyodide (the runtime the build copied beside the HTML)
the first time the reader touches a form, unpacks the zip of the package the build made, and
from then on runs the same calculator on each change. Pages without a calculator load
nothing more. Without JavaScript or WebAssembly the form stays disabled and the page shows
the build-time result with one sentence saying why.

On a lab page, each recorded ipywidget calculator (``gl.roofline_explorer(...)`` and the
like) cannot respond without a kernel; a note under it says so and links to the live
version in its chapter.

The runtime is fetched once per machine into ``_build/.pyodide-cache`` (outside the HTML
output, so a clean of ``_build/html`` keeps it), checked against the pinned integrity hash
(:mod:`gpulab.course.live_book`).
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from measure_gpu import ui_messages as panel_messages  # the "measure your GPU" panel
from sphinx.errors import ExtensionError

from gpulab.course import live_book
from gpulab.labkit.calculators import CALCULATORS, run

ROOT = Path(__file__).resolve().parents[2]
STATIC = Path(__file__).parent / "static"
BUILD = ROOT / "_build"
PYODIDE_CACHE = BUILD / ".pyodide-cache"
# Staged here, then copied to _static/live/ in the output.
STAGE = BUILD / ".live-calculators"
SCRIPT = "live-calculators.js"
STYLE = "live-calculators.css"
NO_JS = (
    "This calculator needs a browser with JavaScript and WebAssembly; "
    "shown here is its result for the values above, computed when the book was built."
)
#: What the page's script says, by situation (passed to it as data attributes of the form, so
#: the Chinese edition can say it in Chinese; ``{error}`` is filled in by the script).
SCRIPT_TEXT = {
    "ready": "Change any value and the result is recomputed in your browser by the course's "
    "own Python (the first change starts Python in this page, which takes a few seconds).",
    "starting": "Starting Python in this page…",
    "failed": "Python could not start in this browser ({error}); the result shown is the one "
    "computed when the book was built.",
    "noWasm": "This calculator needs a browser with WebAssembly; shown here is its result for "
    "the values above, computed when the book was built.",
    "fromFile": "This page was opened as a file, and browsers do not let a file start Python: "
    "serve the book (python3 -m http.server -d _build/html) and open http://localhost:8000 to "
    "use the calculator. Shown here is its result for the values above, computed when the book "
    "was built.",
}
DEAD_WIDGET = (
    "On this page the controls above cannot respond: they need a running Python kernel (open "
    "the lab in Jupyter or Colab). The same calculator runs live in your browser in the chapter "
)


def ui_messages() -> list[str]:
    """Every sentence and label this extension writes into a page, for the translations.

    The Chinese edition translates them in ``locale/zh_CN/LC_MESSAGES/ui.po``; the result a
    calculator computes is generated text and stays in English.
    """
    found = [NO_JS, *SCRIPT_TEXT.values(), DEAD_WIDGET]
    for calc in CALCULATORS.values():
        found += [calc.title, *(f.label for f in calc.fields)]
    return list(dict.fromkeys(found + panel_messages()))


def _kebab(key: str) -> str:
    """``noWasm`` -> ``no-wasm``: the data attribute the script reads as ``dataset.textNoWasm``."""
    return re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), key)


def _identity(text: str) -> str:
    return text


def translator(language: str | None):
    """``text -> text`` in ``language`` (from ``locale/<language>/LC_MESSAGES/ui.po``)."""
    if not language or language.startswith("en"):
        return _identity
    from gpulab.course.translation import ui_table

    table = ui_table(ROOT / "locale" / language / "LC_MESSAGES" / "ui.po")
    return lambda text: table.get(text, text)


def form_html(name: str, _=_identity) -> str:
    """The calculator's form with its build-time result (what a reader without JS sees).

    ``_`` translates the form's labels, title and sentences (:func:`translator`).
    """
    calc = CALCULATORS[name]
    esc = html.escape
    fields = []
    for f in calc.fields:
        ident = f"calc-{name}-{f.name}"
        label = f'<label for="{ident}">{esc(_(f.label))}</label>'
        common = f'id="{ident}" name="{f.name}" disabled'
        if f.kind == "select":
            options = "".join(
                f'<option value="{esc(o)}"{" selected" if o == str(f.default) else ""}>'
                f"{esc(o)}</option>"
                for o in f.options
            )
            control = f"<select {common}>{options}</select>"
        else:
            kind = "range" if f.kind == "range" else "number"
            control = (
                f'<input type="{kind}" {common} value="{f.default}" min="{f.minimum:g}" '
                f'max="{f.maximum:g}" step="{f.step:g}">'
            )
            if kind == "range":
                control += f'<output for="{ident}">{f.default}</output>'
        fields.append(f'<div class="gl-calc-field">{label}{control}</div>')
    result = run(name, calc.defaults())
    texts = "".join(
        f' data-text-{_kebab(key)}="{esc(_(text))}"' for key, text in SCRIPT_TEXT.items()
    )
    title = esc(_(calc.title))
    return (
        f'<div class="gl-calc" id="calc-{name}" data-calculator="{name}"{texts}>'
        f'<p class="gl-calc-title">{title}</p>'
        f'<div class="gl-calc-fields" role="group" aria-label="{title}">'
        f"{''.join(fields)}</div>"
        f'<p class="gl-calc-status">{esc(_(NO_JS))}</p>'
        f'<div class="gl-calc-result" aria-live="polite" data-build-result>{result["html"]}</div>'
        "</div>"
    )


class CalculatorDirective(Directive):
    """``{calculator} name``: a live calculator (see the module docstring)."""

    required_arguments = 1
    has_content = False
    option_spec = {"class": directives.class_option}

    def run(self):
        name = self.arguments[0]
        if name not in CALCULATORS:
            known = ", ".join(CALCULATORS)
            raise self.error(f"unknown calculator {name!r}; known: {known}")
        env = self.state.document.settings.env
        placed = _placed(env)
        if name in placed and placed[name] != env.docname:
            raise self.error(f"calculator {name!r} is already in {placed[name]}")
        placed[name] = env.docname
        node = nodes.raw("", form_html(name, translator(env.config.language)), format="html")
        return [node]


def _placed(env) -> dict[str, str]:
    if not hasattr(env, "gl_calculators"):
        env.gl_calculators = {}
    return env.gl_calculators


def _purge(app, env, docname) -> None:
    for name, doc in list(_placed(env).items()):
        if doc == docname:
            del _placed(env)[name]


def _merge(app, env, docnames, other) -> None:
    _placed(env).update(getattr(other, "gl_calculators", {}))


def _sources_digest() -> str:
    """Changes whenever the package's code or data, or the pinned runtime, changes."""
    digest = hashlib.sha256(live_book.PYODIDE_INTEGRITY.encode())
    package = ROOT / "gpulab"
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".csv", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _stage_assets(app) -> None:
    """Stage the runtime and the package zip, for :func:`_copy_assets` to copy."""
    if app.builder.format != "html":
        return
    live = STAGE / "static" / "live"
    try:
        runtime = live_book.fetch_pyodide(PYODIDE_CACHE)
    except OSError as exc:  # no network on the first build
        raise ExtensionError(
            f"the live calculators need Pyodide {live_book.PYODIDE_VERSION}'s runtime, fetched "
            f"once from the npm registry into {PYODIDE_CACHE}, and the download failed ({exc}); "
            "build once with network access (later builds work offline)"
        ) from exc
    (live / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in live_book.RUNTIME_FILES:
        target = live / "pyodide" / name
        if not target.is_file() or target.stat().st_size != (runtime / name).stat().st_size:
            shutil.copyfile(runtime / name, target)
    stamp, package = STAGE / "package.digest", live / "gpulab-live.zip"
    digest = _sources_digest()
    if not (package.is_file() and stamp.is_file() and stamp.read_text() == digest):
        live_book.package_zip(package)
        stamp.write_text(digest)


def _copy_assets(app, exception) -> None:
    """Copy the staged runtime, the zip, the script and its stylesheet into ``_static/``.

    Done here rather than through ``html_static_path``, which leaves a file already in the
    output alone: a rebuild after a change to the package must ship the new zip.
    """
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    sources = [(STAGE / "static" / "live", static / "live")]
    sources += [(STATIC / name, static / name) for name in (SCRIPT, STYLE)]
    for source, target in sources:
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    """The script and its stylesheet, on pages with a calculator only."""
    if pagename in set(_placed(app.env).values()):
        app.add_js_file(SCRIPT, defer="defer")
        app.add_css_file(STYLE)


WIDGET_CALL = re.compile(r"\bgl\.(\w+)\(")


def _note_dead_widgets(app, doctree, docname) -> None:
    """Under each recorded ipywidget calculator on a lab page: it cannot respond; go live."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb":
        return
    live = {c.widget: c.name for c in CALCULATORS.values() if c.widget}
    placed = _placed(app.env)
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code":
            continue
        source = "".join(n.astext() for n in cell.findall(nodes.literal_block))
        called = [live[f] for f in WIDGET_CALL.findall(source) if f in live]
        if not called or called[0] not in placed:
            continue
        name = called[0]
        target = placed[name]
        uri = app.builder.get_relative_uri(docname, target) + f"#calc-{name}"
        title = app.env.titles[target].astext() if target in app.env.titles else target
        note = nodes.paragraph(classes=["gl-dead-widget"])
        _ = translator(app.config.language)
        note += nodes.Text(_(DEAD_WIDGET))
        note += nodes.reference("", f"{title}", refuri=uri, internal=True)
        note += nodes.Text("。" if _ is not _identity else ".")
        cell += note


def setup(app):
    app.add_directive("calculator", CalculatorDirective)
    app.connect("builder-inited", _stage_assets)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("html-page-context", _page_assets)
    app.connect("doctree-resolved", _note_dead_widgets)
    app.connect("build-finished", _copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
