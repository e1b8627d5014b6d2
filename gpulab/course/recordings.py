"""One recording of each lab per device kind, and how a lab page shows them side by side.

The CPU recording is the lab notebook itself (``notebooks/NAME_lab.ipynb``): it is what
strict nbval checks on CI's CPU-only machines. A recording on any other kind of device
(``cuda``, ``mps``) is a copy of the lab executed there, kept beside it as
``notebooks/recordings/<kind>/NAME_lab.ipynb``; ``python -m gpulab record`` writes it when
it runs on that device, and never touches the CPU outputs. nbval does not collect
``notebooks/recordings/`` (the root ``conftest.py`` ignores it).

The book shows every recording on the lab's page: a note at the top lists them with their
provenance (or says that no GPU recording exists yet), and each code cell whose source is
the same in both recordings gets a tab per device over its outputs.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path

from gpulab.measure.provenance import provenance_line
from gpulab.units import format_duration

__all__ = [
    "KIND_LABELS",
    "RECORDINGS_FOLDER",
    "Recording",
    "cell_tabs",
    "lab_recordings",
    "outputs_html",
    "recording_path",
    "recordings_summary",
]

RECORDINGS_FOLDER = "recordings"
KIND_LABELS = {"cpu": "CPU", "cuda": "GPU", "mps": "Apple GPU"}


@dataclass(frozen=True)
class Recording:
    """One recorded run of a lab: the device kind, the notebook holding it and its provenance."""

    kind: str
    path: Path
    provenance: dict
    run_time_s: float | None

    @property
    def label(self) -> str:
        """``"GPU (NVIDIA H100 80GB HBM3)"``: the kind in words and the device's name."""
        name = self.provenance.get("name")
        kind = KIND_LABELS.get(self.kind, self.kind)
        return f"{kind} ({name})" if name and self.kind != "cpu" else kind


def recording_path(lab: str | Path, kind: str) -> Path:
    """Where the recording of ``lab`` on a device of ``kind`` lives.

    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "cpu").as_posix()
    'notebooks/gpu_basics_lab.ipynb'
    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "cuda").as_posix()
    'notebooks/recordings/cuda/gpu_basics_lab.ipynb'
    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "tpu")
    Traceback (most recent call last):
    ...
    ValueError: kind='tpu' is not known; use one of 'cpu', 'cuda', 'mps'
    """
    from gpulab._checks import choice

    kind = choice("kind", kind, tuple(KIND_LABELS))
    lab = Path(lab)
    return lab if kind == "cpu" else lab.parent / RECORDINGS_FOLDER / kind / lab.name


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _recording(kind: str, path: Path, nb: dict) -> Recording:
    meta = nb.get("metadata", {}).get("gpulab", {})
    record = dict(meta.get("recorded", {}).get(kind, {}))
    run_time_s = meta.get("run_time_s", {}).get(kind)
    return Recording(kind, path, record, None if run_time_s is None else float(run_time_s))


def lab_recordings(lab: str | Path) -> dict[str, Recording]:
    """Every recording of ``lab`` there is, CPU first (only those stamped by ``record``)."""
    lab = Path(lab)
    found = {}
    for kind in KIND_LABELS:
        path = recording_path(lab, kind)
        if path.is_file():
            recording = _recording(kind, path, _read(path))
            if recording.provenance:
                found[kind] = recording
    return found


def recordings_summary(recordings: dict[str, Recording]) -> list[str]:
    """The sentences a lab page opens with: what each recording ran on, or that none is on a GPU.

    >>> rec = Recording("cpu", Path("x_lab.ipynb"), {"device": "AMD EPYC (cpu); torch 2.13",
    ...     "python": "3.11.2", "gpulab": "0.1.0", "date": "2026-12-03"}, 41.0)
    >>> for line in recordings_summary({"cpu": rec}): print(line)  # doctest: +NORMALIZE_WHITESPACE
    CPU: outputs recorded on 2026-12-03 on AMD EPYC (cpu); torch 2.13; CuPy not installed;
    gpulab 0.1.0; Python 3.11.2; run time 41 s.
    No GPU recording yet: every output on this page ran on a CPU. On a machine with a CUDA
    GPU, `python -m gpulab record --all` adds one, shown beside these.
    """
    lines = []
    for recording in recordings.values():
        where = provenance_line(recording.provenance).rstrip(".")
        took = "" if recording.run_time_s is None else "; run time "
        took += "" if recording.run_time_s is None else format_duration(recording.run_time_s)
        lines.append(f"{recording.label}: {where[0].lower()}{where[1:]}{took}.")
    if not any(kind != "cpu" for kind in recordings):
        lines.append(
            "No GPU recording yet: every output on this page ran on a CPU. On a machine with a "
            "CUDA GPU, `python -m gpulab record --all` adds one, shown beside these."
        )
    return lines


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _markdown_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(text)


def _output_html(output: dict, alt: str) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        css = "stderr" if output.get("name") == "stderr" else "stream"
        return f'<pre class="gl-rec-{css}">{html.escape(_text(output.get("text", "")))}</pre>'
    if kind == "error":
        traceback = "\n".join(output.get("traceback", []))
        return f'<pre class="gl-rec-error">{html.escape(traceback)}</pre>'
    data = output.get("data", {})
    if "image/png" in data:
        png = _text(data["image/png"]).replace("\n", "")
        base64.b64decode(png, validate=True)  # a corrupt image fails here, not in the browser
        return f'<img src="data:image/png;base64,{png}" alt="{html.escape(alt, quote=True)}">'
    if "text/html" in data:
        return _text(data["text/html"])
    if "text/markdown" in data:
        return _markdown_html(_text(data["text/markdown"]))
    if "application/vnd.jupyter.widget-view+json" in data:
        return "<p><em>An interactive widget: open the lab to use it.</em></p>"
    if "text/plain" in data:
        return f"<pre>{html.escape(_text(data['text/plain']))}</pre>"
    return ""


def outputs_html(cell: dict) -> str:
    """A code cell's recorded outputs as HTML (text escaped, images inline with their alt text).

    >>> cell = {"metadata": {}, "outputs": [
    ...     {"output_type": "stream", "name": "stdout", "text": ["a < b\\n"]}]}
    >>> outputs_html(cell)
    '<pre class="gl-rec-stream">a &lt; b\\n</pre>'
    """
    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
    alt = alt or "A figure recorded by this cell."
    return "\n".join(part for o in cell.get("outputs", []) if (part := _output_html(o, alt)))


def cell_tabs(group: str, labels: list[str], first_checked: int = 0) -> list[str]:
    """HTML around a cell's outputs, one tab per recording, to interleave with the panels.

    Returns ``len(labels) + 1`` pieces: piece ``i`` goes before panel ``i``'s content and the
    last one closes the set. The tabs are radio buttons styled by CSS, so they work with no
    script and offline; ``group`` must be unique on the page.

    >>> pieces = cell_tabs("cell-3", ["CPU", "GPU"])
    >>> len(pieces), pieces[0].count('type="radio"'), 'checked' in pieces[1]
    (3, 1, False)
    """
    group = html.escape(group, quote=True)
    pieces = []
    for i, label in enumerate(labels):
        start = "" if i == 0 else "</div>\n"
        if i == 0:
            start += '<div class="gl-recordings" role="group" aria-label="Recorded outputs">\n'
        checked = " checked" if i == first_checked else ""
        tab = f"{group}-{i}"
        pieces.append(
            f'{start}<input type="radio" class="gl-rec-input" name="{group}" id="{tab}"{checked}>'
            f'<label class="gl-rec-label" for="{tab}">{html.escape(label)}</label>'
            f'<div class="gl-rec-panel">\n'
        )
    pieces.append("</div>\n</div>\n")
    return pieces
