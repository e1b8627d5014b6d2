"""Glued values in translated text: ``{glue:text}`key``` works in a Chinese paragraph too.

MyST-NB resolves a ``{glue:...}`` role from the glue data of the notebook being parsed. Sphinx
parses each translated message on its own, as a small document of its own, so a translated
paragraph that keeps ``{glue:text}`r50_params:,d``` (as it must: the value is computed) finds
no glue data and loses the value. This extension remembers each page's notebook renderer (the
holder of its glue data) before Sphinx applies translations, and lets MyST-NB's lookup fall
back to the page being read when a message's own small document has none. Only the lookup is
extended; what MyST-NB does with the data is unchanged.
"""

from __future__ import annotations

from sphinx.transforms import SphinxTransform

#: docname -> the MyST-NB renderer of the page being read (it holds the page's glue data).
_RENDERERS: dict[str, object] = {}


class RememberGlueData(SphinxTransform):
    """Keep the page's renderer, for the translated messages parsed after this."""

    # Before Sphinx's i18n transform (priority 20), which parses the translated messages.
    default_priority = 10

    def apply(self, **kwargs) -> None:
        # A translated message is parsed as a small document of its own, with these same
        # transforms and an empty renderer of its own: that one must not replace the page's.
        if "<translated>" in str(self.document.get("source", "")):
            return
        if "nb_renderer" in self.document:
            _RENDERERS[self.env.docname] = self.document["nb_renderer"]


def _with_page_fallback(lookup, error):
    def retrieve(document, key):
        try:
            return lookup(document, key)
        except error:
            env = getattr(document.settings, "env", None)
            renderer = _RENDERERS.get(getattr(env, "docname", None))
            if renderer is None or document.get("nb_renderer") is renderer:
                raise
            return lookup({"nb_renderer": renderer}, key)

    retrieve.__wrapped__ = lookup
    return retrieve


def _install() -> None:
    from myst_nb.core.variables import RetrievalError
    from myst_nb.ext.glue import directives, roles, utils

    for module in (roles, directives):
        if not hasattr(module.retrieve_glue_data, "__wrapped__"):
            module.retrieve_glue_data = _with_page_fallback(utils.retrieve_glue_data,
                                                            RetrievalError)  # fmt: skip


def _forget(app, env, docname) -> None:
    _RENDERERS.pop(docname, None)


def setup(app):
    _install()
    app.add_transform(RememberGlueData)
    app.connect("env-purge-doc", _forget)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
