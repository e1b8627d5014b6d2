"""Reading times and lab run times, computed when the book is built, never typed.

Two roles, for a chapter's header ("How long") and the preface's map of the course:

``{reading-minutes}`memory_bandwidth```
    The minutes a reader needs for the page ``memory_bandwidth.md`` (relative to the page
    that uses the role): its words of prose and its formulas, counted from its source by
    :mod:`gpulab.course.reading`, at the rates stated in the preface's conventions.
``{lab-run-time}`memory_bandwidth_lab```
    How long ``notebooks/memory_bandwidth_lab.ipynb`` took to run on a CPU when it was last
    recorded (``run_time_s`` in its metadata, written by ``python -m gpulab record``).
    A lab never recorded on a CPU shows a dash.

Both render as a number and its unit only, so the sentence around them is translated like any
other prose and the number is the same in both editions.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

from gpulab.course.labs import lab_info
from gpulab.course.reading import page_reading_minutes
from gpulab.units import format_duration


def _source(inliner, target: str, suffix: str, folder: str | None) -> Path:
    env = inliner.document.settings.env
    if folder is None:
        return Path(env.relfn2path(target + suffix, env.docname)[1])
    return Path(env.srcdir) / folder / (target + suffix)


def _role(render, suffix: str, folder: str | None):
    def role(name, rawtext, text, lineno, inliner, options=None, content=None):
        path = _source(inliner, text.strip(), suffix, folder)
        if not path.is_file():
            message = inliner.reporter.error(
                f"{name}: no file {path} for {text!r} (give a page or lab name, no suffix)",
                line=lineno,
            )
            return [inliner.problematic(rawtext, rawtext, message)], [message]
        inliner.document.settings.env.note_dependency(str(path))
        return [nodes.inline(rawtext, render(path), classes=[f"gl-{name}"])], []

    return role


def _minutes(path: Path) -> str:
    return str(page_reading_minutes(path.read_text(encoding="utf-8")))


def _lab_run_time(path: Path) -> str:
    seconds = lab_info(path).run_time_s.get("cpu")
    return "—" if seconds is None else format_duration(seconds)  # no words: both editions


def setup(app):
    app.add_role("reading-minutes", _role(_minutes, ".md", None))
    app.add_role("lab-run-time", _role(_lab_run_time, ".ipynb", "notebooks"))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
