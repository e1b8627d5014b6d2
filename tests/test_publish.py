"""The placeholder repository URL cannot be published by accident: no Colab buttons until it is set.

The book's local extension ``book/_ext/launch_buttons_on_labs.py`` decides which pages keep
sphinx-book-theme's launch buttons. Both states are checked here on the decision and on the
page handler; the strict book build (``tests/test_book.py``) checks the placeholder state end
to end.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpulab.course.labs import PLACEHOLDER_REPOSITORY_URL, is_published

EXT = Path(__file__).resolve().parents[1] / "book" / "_ext" / "launch_buttons_on_labs.py"
REAL_URL = "https://github.com/someone/gpu-course"


@pytest.fixture(scope="module")
def ext():
    spec = importlib.util.spec_from_file_location("launch_buttons_on_labs", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("url", "published"),
    [
        (PLACEHOLDER_REPOSITORY_URL, False),
        (PLACEHOLDER_REPOSITORY_URL + "/", False),
        (PLACEHOLDER_REPOSITORY_URL + ".git", False),
        (REAL_URL, True),
        ("https://github.com/gpulab-course/gpulab-fork", True),
    ],
)
def test_is_published(url, published):
    assert is_published(url) is published


@pytest.mark.parametrize(
    ("url", "suffix", "shown"),
    [
        (REAL_URL, ".ipynb", True),  # a lab of a published course
        (REAL_URL, ".md", False),  # chapters never: Colab cannot open MyST Markdown
        (PLACEHOLDER_REPOSITORY_URL, ".ipynb", False),  # not published: no Colab button
        (PLACEHOLDER_REPOSITORY_URL, ".md", False),
        (None, ".ipynb", False),
    ],
)
def test_show_launch_buttons(ext, url, suffix, shown):
    assert ext.show_launch_buttons(url, suffix) is shown


def _page_buttons(ext, url: str, source: str) -> list[str]:
    """The header buttons a page keeps after the extension's handler has run."""
    app = SimpleNamespace(
        config=SimpleNamespace(html_theme_options={"repository_url": url}),
        env=SimpleNamespace(doc2path=lambda name: f"/course/{source}"),
    )
    context = {
        "header_buttons": [
            {"icon": "fab fa-github", "label": "repository"},
            {"icon": ext.LAUNCH_ICON, "label": "launch"},
            {"icon": "fas fa-download", "label": "download"},
        ]
    }
    ext._drop_launch_buttons(app, "page", "page.html", context, None)
    return [b["label"] for b in context["header_buttons"]]


def test_lab_page_keeps_launch_button_only_when_published(ext):
    assert _page_buttons(ext, REAL_URL, "notebooks/x_lab.ipynb") == [
        "repository",
        "launch",
        "download",
    ]
    assert _page_buttons(ext, PLACEHOLDER_REPOSITORY_URL, "notebooks/x_lab.ipynb") == [
        "repository",
        "download",
    ]
    assert _page_buttons(ext, REAL_URL, "book/x.md") == ["repository", "download"]
