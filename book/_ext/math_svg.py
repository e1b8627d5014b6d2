"""Formulas typeset when the book is built, as SVG: a reader's browser draws them with no script.

MathJax in the browser costs a phone 1.3 MB of script, and the work of typesetting, before the
formulas stop showing as TeX (Lighthouse scored the chapter on scaling out 76 with it, 97
without). When Node and the npm package ``mathjax-full`` are installed
(``book/_ext/node``; ``python3 course.py install`` runs ``npm ci`` there), this extension runs
``node/render-math.js`` on the written pages when the build ends: every Sphinx math node gets
MathJax's SVG output in place of its TeX, drawn in the text colour of either theme, with the
formula as MathML beside it for screen readers; a formula MathJax cannot read fails the build.
``lean_pages.py`` then loads no MathJax for a page's formulas (a lab's widget manager still
brings it, for the widgets).

Without Node or the package the pages keep their TeX and MathJax typesets it in the browser,
as before; the build says so once.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

NODE_DIR = Path(__file__).parent / "node"
RENDERER = NODE_DIR / "render-math.js"
PACKAGE = NODE_DIR / "node_modules" / "mathjax-full" / "package.json"
MATH_NODE = 'class="math notranslate nohighlight"'
TIMEOUT_S = 600
#: Pages per run of Node (a command line has a length limit).
BATCH = 100


def node() -> str | None:
    """Node's executable when it and ``mathjax-full`` are installed, else None."""
    found = shutil.which("node")
    return found if found and PACKAGE.is_file() and RENDERER.is_file() else None


def typesets_at_build(app) -> bool:
    """Whether this build typesets its formulas itself (decided once, when it starts).

    >>> typesets_at_build(object())  # an application that has not started a build
    False
    """
    return bool(getattr(app, "_gpulab_math_svg", False))


def pages_with_math(outdir: Path) -> list[Path]:
    """The written pages in ``outdir`` that hold a math node (not those of another edition
    copied below it, a folder with its own ``_static``)."""
    return sorted(
        page
        for page in outdir.rglob("*.html")
        if not any((folder / "_static").is_dir() for folder in _folders_below(page, outdir))
        and MATH_NODE in page.read_text(encoding="utf-8", errors="replace")
    )


def _folders_below(page: Path, outdir: Path) -> list[Path]:
    return [folder for folder in page.parents if folder != outdir and outdir in folder.parents]


def _start(app) -> None:
    app._gpulab_math_svg = app.builder.format == "html" and node() is not None
    if app.builder.format == "html" and not app._gpulab_math_svg:
        logger.info(
            "formulas are left to MathJax in the reader's browser: Node or the npm package "
            "mathjax-full is missing (python3 course.py install sets them up)"
        )


def _typeset(app, exception) -> None:
    if exception is not None or not typesets_at_build(app):
        return
    pages = [str(p) for p in pages_with_math(Path(app.outdir))]
    executable = node()
    for start in range(0, len(pages), BATCH):
        command = [executable, str(RENDERER), *pages[start : start + BATCH]]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=NODE_DIR
            )
        except subprocess.TimeoutExpired:
            logger.warning(f"typesetting the formulas took over {TIMEOUT_S} s and was stopped")
            return
        if done.returncode != 0:
            logger.warning(f"typesetting the formulas failed:\n{done.stderr.strip()[-2000:]}")
            return
        logger.info(done.stdout.strip())


def setup(app):
    app.connect("builder-inited", _start)
    app.connect("build-finished", _typeset, priority=980)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
