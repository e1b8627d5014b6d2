"""Glued values in translated text: ``{glue:text}`key``` works in a Chinese paragraph too.

MyST-NB resolves a ``{glue:...}`` role from the glue data of the notebook being parsed. Sphinx
parses each translated message on its own, as a small Markdown document without a notebook,
so a translated paragraph that keeps ``{glue:text}`r50_params:,d``` (as it must: the value
is computed) finds no glue data and loses the value. MyST-NB writes each page's glue data to
its output folder (``<page>.glue.json``) while it parses the page, before translations are
applied; this extension lets MyST-NB's lookup fall back to that file for the page being read.
A glued number is then formatted as in the English page; glued Markdown (``{glue:md}``, the
course's are plain phrases such as a list of GPU names) is pasted as its text.
"""

from __future__ import annotations

from docutils import nodes


class _PlainMarkdown:
    """Stands in for MyST-NB's notebook renderer where a translated message has none: it
    pastes glued Markdown as plain text."""

    class renderer:  # noqa: N801 - the attribute path MyST-NB reads
        class nb_config:  # noqa: N801
            cell_metadata_key = "mystnb"

    @staticmethod
    def render_markdown_inline(mime) -> list:
        return [nodes.inline(mime.content, mime.content, classes=["pasted-text"])]


def _with_page_fallback(lookup, error, read_cache, variable_output):
    def retrieve(document, key):
        try:
            return lookup(document, key)
        except error:
            env = getattr(document.settings, "env", None)
            if env is None:
                raise
            saved = read_cache(env.mystnb_config.output_folder, env.docname)
            if key not in saved:
                raise
            return variable_output(
                data=saved[key]["data"],
                metadata=saved[key].get("metadata", {}),
                nb_renderer=document.get("nb_renderer") or _PlainMarkdown(),
                vtype="glue",
            )

    retrieve.__wrapped__ = lookup
    return retrieve


def _install() -> None:
    from myst_nb.core.variables import RetrievalError, VariableOutput
    from myst_nb.ext.glue import directives, roles, utils
    from myst_nb.ext.glue.crossref import read_glue_cache

    for module in (roles, directives):
        if not hasattr(module.retrieve_glue_data, "__wrapped__"):
            module.retrieve_glue_data = _with_page_fallback(
                utils.retrieve_glue_data, RetrievalError, read_glue_cache, VariableOutput
            )


def setup(app):
    _install()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
