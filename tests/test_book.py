"""The book builds strictly, and the pages readers see contain what the chapters promise."""

import re

import pytest
import yaml

from gpulab.course.labs import is_published

pytestmark = pytest.mark.book


# ipykernel's notice about its local TCP transport, printed once per executed page.
KERNEL_NOTICE = "Kernel is running over TCP without encryption"


def test_book_builds_with_no_warnings(book_build):
    assert book_build.returncode == 0, book_build.log[-6000:]
    warnings = [
        line
        for line in book_build.log.splitlines()
        if re.search(r"\bWARNING\b", line) and KERNEL_NOTICE not in line
    ]
    assert not warnings, "\n".join(warnings)


def test_every_toc_entry_became_a_page(book_build, root):
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [c["file"] for c in part["chapters"]]
    for name in files:
        assert (book_build.html / f"{name}.html").is_file(), name


def test_lab_page_shows_recorded_outputs_not_a_rebuild(book_build, root):
    html = (book_build.html / "notebooks" / "gpu_basics_lab.html").read_text()
    assert "Provenance." in html and "Outputs recorded on" in html
    assert "PREDICTION (not measured)" in html
    assert html.count("<img") >= 1  # the recorded figure


def test_colab_button_uses_the_repository_setting(book_build, root):
    repo = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    html = (book_build.html / "notebooks" / "gpu_basics_lab.html").read_text()
    if not is_published(repo["url"]):
        # An unpublished copy: no page may send a reader to Colab, and the build says why.
        for page in book_build.html.rglob("*.html"):
            assert "colab.research.google.com" not in page.read_text(), page
        log = re.sub(r"\x1b\[[0-9;]*m", "", book_build.log)  # colour codes, if any
        assert "NOT PUBLISHED: repository.url in _config.yml is still the placeholder" in log
        return
    owner_repo = repo["url"].removeprefix("https://github.com/")
    expected = (
        f"https://colab.research.google.com/github/{owner_repo}/blob/{repo['branch']}"
        "/notebooks/gpu_basics_lab.ipynb"
    )
    assert expected in html


def test_preface_lab_table_comes_from_lab_metadata(book_build):
    html = (book_build.html / "book" / "intro.html").read_text()
    tables = [t for t in re.findall(r"<table.*?</table>", html, re.S) if "_lab.html" in t]
    tables = [t for t in tables if "CPU run (2 cores)" in t]  # not the map of the course
    assert len(tables) == 1, "the lab table did not render as one table"
    assert "Your device, a first kernel, CPU vs GPU" in tables[0]
    assert "gpu_basics_lab.html" in tables[0]


def test_pages_load_no_cdn_scripts(book_build):
    for page in book_build.html.rglob("*.html"):
        text = page.read_text()
        for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com"):
            assert not re.search(rf'<script[^>]+src="https?://{re.escape(cdn)}', text), (page, cdn)


def test_chapter_pages_have_no_colab_button(book_build, root):
    # Colab cannot open MyST .md chapters; only the labs (.ipynb) get launch buttons.
    for source in (root / "book").glob("*.md"):
        page = book_build.html / "book" / f"{source.stem}.html"
        if page.exists():
            assert "colab.research.google.com/github" not in page.read_text(), page


def test_internal_links_resolve(book_build):
    html_root = book_build.html
    for folder in ("book", "notebooks"):
        for page in (html_root / folder).glob("*.html"):
            for href in re.findall(r'<a [^>]*href="([^"#?]+)', page.read_text()):
                if re.match(r"[a-z]+:", href):  # https:, mailto: ...
                    continue
                assert (page.parent / href).resolve().exists(), f"{page.name}: {href}"


def test_every_lab_page_says_which_devices_recorded_it(book_build, root):
    from gpulab.course.recordings import lab_recordings

    for lab in sorted((root / "notebooks").glob("*_lab.ipynb")):
        html = (book_build.html / "notebooks" / f"{lab.stem}.html").read_text()
        assert "gl-recordings-note" in html, lab.name
        gpu = [kind for kind in lab_recordings(lab) if kind != "cpu"]
        assert ("No GPU recording yet" in html) == (not gpu), lab.name
        assert ('class="gl-recordings"' in html) == bool(gpu), lab.name


#: MyST markup that should never reach a reader: a role (``{glue:text}`key```, ``{term}`x```),
#: a directive fence (``:::{note}``, ```` ```{code-cell} ````) or a Markdown table's rule
#: (``|---|---|``, a table a cell displayed without ``markdown_format: gfm``, whose dashes
#: the typographer may have turned into ``|—|``) left unparsed.
RAW_MARKUP = re.compile(
    r"\{[a-z][a-z-]*(?::[a-z-]+)?\}`|^\s*(?::::*|```+)\s*\{[a-z]"
    r"|\|\s*:?(?:-{3,}|[—–]+-*):?\s*\|",
    re.M,
)


def visible_prose(page_html: str) -> str:
    """A page's text outside code listings and outputs (where braces are code, not markup)."""
    text = re.sub(r"<(pre|code|script|style)\b.*?</\1>", " ", page_html, flags=re.S)
    return re.sub(r"<[^>]+>", "", text)


def test_raw_markup_check_finds_a_leaked_role_or_fence():
    assert RAW_MARKUP.search("about {glue:text}`key:.1f} loads")
    assert RAW_MARKUP.search("see {term}`warp`")
    assert RAW_MARKUP.search(":::{note}\ntext")
    assert RAW_MARKUP.search("| Run | GPUs | |---|---| | a | b |")
    assert RAW_MARKUP.search("| a |:---:|---:|")
    assert RAW_MARKUP.search("| Run | GPUs | |—|—| | a |")
    assert not RAW_MARKUP.search("a range | 3 — 4 | here")
    assert not RAW_MARKUP.search(visible_prose("<pre>{glue:text}`x`</pre><p>f{x}</p>"))


def test_no_page_shows_raw_markup(book_build):
    leaks = []
    for folder in ("book", "notebooks"):
        for page in sorted((book_build.html / folder).glob("*.html")):
            for match in RAW_MARKUP.finditer(visible_prose(page.read_text())):
                around = match.string[match.start() - 40 : match.end() + 40]
                leaks.append(f"{page.name}: ...{around}")
    assert not leaks, "\n".join(leaks)


def _section(page_html: str, section_id: str) -> str:
    start = page_html.index(f'id="{section_id}"')
    end = page_html.find("<section", start + 1)
    return page_html[start : end if end > 0 else None]


def test_no_lab_figure_has_its_file_name_as_alt_text(book_build):
    named = []
    for page in sorted((book_build.html / "notebooks").glob("*.html")):
        for alt in re.findall(r'<img alt="([^"]*)"', page.read_text()):
            if re.search(r"\.(png|jpe?g|svg)$", alt) or len(alt.split()) < 12:
                named.append(f"{page.name}: {alt[:80]!r}")
    assert not named, "\n".join(named)


def test_chapters_show_the_profile_and_the_kernel_they_read(book_build):
    capstone = (book_build.html / "book" / "capstone.html").read_text()
    profile = _section(capstone, "reading-a-profile")
    assert "Self CPU time total" in profile and "forward+backward" in profile
    kernels = (book_build.html / "book" / "kernels.html").read_text()
    triton = _section(kernels, "triton-kernels-written-per-block")
    assert "_softmax_kernel" in triton and "tl.max" in triton and "noqa" not in triton
