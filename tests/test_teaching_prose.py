"""Teaching prose speaks about GPUs, not about how the book is made.

The preface's *Conventions* section is the one place that explains the datasheet registry,
the labs' recordings and the labels of figures. Everywhere else (the chapters' prose, outside
code cells, and the labs' Markdown cells) none of the phrases in ``BUILD_TALK`` may appear.
The workshop guide (for instructors) and the model-accuracy page (about the course's models
themselves) are exempt, as are the provenance cells that ``python -m gpulab record`` writes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Phrases that talk about the build, each with why it is build talk.
BUILD_TALK = {
    r"\bwhen (?:the|this) (?:book|page) (?:is|was) built\b": "the build's timing",
    r"\bat build time\b": "the build's timing",
    r"\bprovenance line\b": "the recording's machinery",
    r"\bplaceholder\b": "an unpublished copy's machinery",
    r"\bspec registry\b": "the registry as the book's source of figures",
    r"\bcourse's registries\b": "the registry as the book's source of figures",
    r"\bcomputed (?:with|by) the course's models\b": "how the page computes its answers",
}
_TALK = re.compile("|".join(f"(?:{p})" for p in BUILD_TALK), re.I)

#: Pages that may talk about the build: an instructors' guide, and the page about the models.
EXEMPT_PAGES = {"workshop.md", "model_accuracy.md"}

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\{[^}]*\})?")


def myst_prose(text: str, *, skip_section: str | None = None) -> str:
    """A MyST page's text outside front matter, code cells and fenced code, on one line.

    ``skip_section`` leaves out the ``##`` section of that title (up to the next ``##``).

    Examples
    --------
    >>> myst_prose("---\\nkernelspec: x\\n---\\nA\\nb.\\n```{code-cell}\\nno\\n```\\n## S\\nc\\n",
    ...            skip_section="S")
    'A b.'
    """
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    kept, fence, skipping = [], None, False
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            if stripped == fence:
                fence = None
            continue
        m = _FENCE.match(stripped)
        if m and (m.group(2) in (None, "{code-cell}", "{code-block}", "{code}")):
            fence = m.group(1)
            continue
        if stripped.startswith("## "):
            skipping = skip_section is not None and stripped[3:].strip() == skip_section
        if not skipping:
            kept.append(stripped)
    return re.sub(r"\s+", " ", " ".join(kept)).strip()


def build_talk(prose: str) -> list[str]:
    """The build-talk phrases in ``prose``, each with a few words around it.

    Examples
    --------
    >>> build_talk("Every number is computed when the book is built, on a CPU.")
    ['… number is computed when the book is built, on a CPU…']
    >>> build_talk("An H100 SXM's datasheet gives 3,350 GB/s.")
    []
    """
    return [f"…{prose[max(0, m.start() - 20):m.end() + 10]}…" for m in _TALK.finditer(prose)]


def _pages():
    return sorted(p for p in (ROOT / "book").glob("*.md") if p.name not in EXEMPT_PAGES)


def _labs():
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_chapters_speak_about_gpus_not_the_build(page):
    skip = "Conventions" if page.name == "intro.md" else None
    hits = build_talk(myst_prose(page.read_text(encoding="utf-8"), skip_section=skip))
    assert not hits, f"{page.name} talks about the build (say it in GPU terms, or link " \
                     f"{{ref}}`conventions`): {hits}"


@pytest.mark.parametrize("lab", _labs(), ids=lambda p: p.name)
def test_lab_markdown_speaks_about_gpus_not_the_build(lab):
    cells = json.loads(lab.read_text(encoding="utf-8"))["cells"]
    prose = " ".join(
        "".join(c["source"]) for c in cells
        if c["cell_type"] == "markdown" and "provenance" not in c["metadata"].get("tags", []))
    hits = build_talk(re.sub(r"\s+", " ", prose))
    assert not hits, f"{lab.name}'s Markdown talks about the build: {hits}"


def test_the_check_can_fail_and_skips_only_what_it_should():
    page = ("Text.\n```{code-cell} ipython3\n# the spec registry, in code: allowed\n```\n"
            "The figures come from the course's spec\nregistry.\n\n## Conventions\n\n"
            "Numbers are computed when the book is built.\n\n## Next\n\nDone at build time.\n")
    hits = build_talk(myst_prose(page, skip_section="Conventions"))
    assert len(hits) == 2
    assert "spec registry" in hits[0] and "at build time" in hits[1]  # across a line break
    assert len(build_talk(myst_prose(page))) == 3
    assert (ROOT / "book" / "intro.md").read_text().count("(conventions)=\n## Conventions") == 1
