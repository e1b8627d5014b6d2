"""The English and Chinese editions link each page to the same page in the other language.

``python3 course.py build`` writes the English edition into ``_build/html`` and the Chinese
one (``language: zh_CN``, see ``locale/README.md``) into ``_build/html/zh``. Each page gets a
link to its counterpart at the top of the article (the head's ``hreflang`` alternates need
the published address: ``page_meta.py`` writes them). A Chinese page whose cells produced
output also says, once, that text a cell generated (claims, generated tables, printed
output) is in English: the build's execution cache is keyed by code, so that text is the
same in both editions.
"""

from __future__ import annotations

import html
from pathlib import Path

STATIC = Path(__file__).parent / "static"

#: Folder of the Chinese edition inside the English one.
ZH_FOLDER = "zh"
SWITCH_TO_ZH = "中文版"
SWITCH_TO_EN = "English edition"
GENERATED_IN_ENGLISH = (
    "本页中由代码生成的文字（结论、生成的表格和程序输出）保持英文："
    "它们由与英文版相同的代码计算得出，随测量结果一起更新。"
)
#: Markers of cell output in a page's HTML (MyST-NB's output containers, glued Markdown).
OUTPUT_MARKERS = ('class="cell_output', 'class="output', "pasted-inline")


def is_chinese(language: str | None) -> bool:
    return bool(language) and language.lower().replace("-", "_").startswith("zh")


def counterpart(pagename: str, chinese: bool) -> str:
    """The relative URL of ``pagename`` in the other edition.

    >>> counterpart("book/gpu_basics", chinese=False)
    '../zh/book/gpu_basics.html'
    >>> counterpart("book/gpu_basics", chinese=True)
    '../../book/gpu_basics.html'
    >>> counterpart("index", chinese=False)
    'zh/index.html'
    """
    up = "../" * pagename.count("/")
    return up + ("../" if chinese else ZH_FOLDER + "/") + pagename + ".html"


def _switch(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or "body" not in context or not app.config.gpulab_language_switch:
        return
    chinese = is_chinese(app.config.language)
    href = html.escape(counterpart(pagename, chinese))
    lang, label = ("en", SWITCH_TO_EN) if chinese else ("zh-CN", SWITCH_TO_ZH)
    link = (
        f'<p class="gl-language-switch"><a href="{href}" hreflang="{lang}" lang="{lang}">'
        f"{html.escape(label)}</a></p>"
    )
    note = ""
    if chinese and any(marker in context["body"] for marker in OUTPUT_MARKERS):
        note = (
            '<div class="admonition note gl-generated-english"><p class="admonition-title">注意'
            f"</p><p>{html.escape(GENERATED_IN_ENGLISH)}</p></div>"
        )
    context["body"] = link + note + context["body"]
    # The head's hreflang alternates need absolute addresses: page_meta.py writes them once
    # the published address is known.


def _translate_toc_captions(app, doctree) -> None:
    """Translate the captions of the table of contents' parts ("Foundations", ...).

    sphinx-external-toc adds the toctrees after Sphinx has applied the page's translations,
    so their captions are looked up here, in the same catalogue (the root page's).
    """
    if not is_chinese(app.config.language):
        return
    from sphinx import addnodes
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    dirs = [str(Path(app.srcdir) / d) for d in app.config.locale_dirs]
    catalogue, _found = init_locale(dirs, app.config.language, domain)
    for toctree in doctree.findall(addnodes.toctree):
        if toctree.get("caption"):
            toctree["caption"] = toctree["rawcaption"] = catalogue.gettext(toctree["caption"])


def _add_static(app) -> None:
    if str(STATIC) not in map(str, app.config.html_static_path):
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    # Off for a build with no other edition beside it (the instructors' copy).
    app.add_config_value("gpulab_language_switch", True, "html", [bool])
    app.connect("builder-inited", _add_static)
    app.connect("html-page-context", _switch)
    # After sphinx-external-toc has inserted the toctrees (its handler has the default 500).
    app.connect("doctree-read", _translate_toc_captions, priority=900)
    app.add_css_file("language-switch.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
