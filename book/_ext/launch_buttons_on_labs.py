"""Keep the "launch" (Colab) buttons on lab pages only, and only once the course is published.

sphinx-book-theme adds launch buttons to every page that is a notebook, and a chapter
written as a MyST Markdown notebook counts as one. Colab cannot open ``.md`` files, so on a
chapter page the button would lead to an error; the chapters link to their labs instead.

While ``repository.url`` in ``_config.yml`` is still the placeholder
(``gpulab.course.labs.PLACEHOLDER_REPOSITORY_URL``) a Colab button would open a repository
that does not exist, so no page gets one and the build says so prominently (as a message,
not a Sphinx warning, so that the strict build of an unpublished copy still passes).
"""

from __future__ import annotations

from pathlib import Path

from sphinx.util import logging
from sphinx.util.console import bold, red

from gpulab.course.labs import PLACEHOLDER_REPOSITORY_URL, is_published

LAUNCH_ICON = "fas fa-rocket"
NOT_PUBLISHED = (
    f"repository.url in _config.yml is still the placeholder {PLACEHOLDER_REPOSITORY_URL}: "
    "this build has no Colab buttons. To publish, set it to the course's public repository, "
    "run `python -m gpulab stamp` and push."
)

logger = logging.getLogger(__name__)


def show_launch_buttons(repository_url: str | None, source_suffix: str) -> bool:
    """Whether a page built from a file with ``source_suffix`` gets launch buttons.

    >>> show_launch_buttons("https://github.com/someone/course", ".ipynb")
    True
    >>> show_launch_buttons("https://github.com/someone/course", ".md")
    False
    >>> show_launch_buttons(PLACEHOLDER_REPOSITORY_URL, ".ipynb")
    False
    """
    return source_suffix == ".ipynb" and bool(repository_url) and is_published(repository_url)


def _repository_url(app) -> str | None:
    return (app.config.html_theme_options or {}).get("repository_url")


def _warn_if_unpublished(app) -> None:
    url = _repository_url(app)
    if url and not is_published(url):
        line = "!" * 78
        logger.info(bold(red(f"\n{line}\nNOT PUBLISHED: {NOT_PUBLISHED}\n{line}")))


def _drop_launch_buttons(app, pagename, templatename, context, doctree):
    suffix = Path(app.env.doc2path(pagename)).suffix
    if show_launch_buttons(_repository_url(app), suffix):
        return
    buttons = context.get("header_buttons")
    if buttons:
        buttons[:] = [b for b in buttons if b.get("icon") != LAUNCH_ICON]


def setup(app):
    app.connect("builder-inited", _warn_if_unpublished)
    # After sphinx-book-theme's own handler (default priority 500) has added the buttons.
    app.connect("html-page-context", _drop_launch_buttons, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
