"""One recording of each lab per device class, and how a lab page shows them side by side.

The CPU recording is the lab notebook itself (``notebooks/NAME_lab.ipynb``): it is what
strict nbval checks on CI's CPU-only machines. A recording on a GPU is a copy of the lab
executed there, kept beside it; ``python -m gpulab record`` writes it when it runs on that
device, and never touches the CPU outputs. nbval does not collect ``notebooks/recordings/``
(the root ``conftest.py`` ignores it).

GPUs are told apart by their **device class** (:func:`device_class`): the spec registry's row
name (``gpulab/data/gpu_specs.csv``), so that an A100 40 GB and an A100 80 GB, or an H100 PCIe
card and an H100 SXM module, each keep a recording of their own. A CUDA GPU's class is
``"cuda:<row name>"`` (``"cuda:H100 SXM5 80GB"``), or ``"cuda:<driver name>"`` for a GPU the
registry does not list; its recording is ``notebooks/recordings/cuda/<class in lowercase
words>/NAME_lab.ipynb``. The CPU and an Apple GPU are one class each, ``"cpu"`` and ``"mps"``
(``notebooks/recordings/mps/NAME_lab.ipynb``). A lab's ``gpulab`` metadata keeps each
recording's run time and provenance under its class (``run_time_s``, ``recorded``).

The book shows every recording on the lab's page: a note at the top lists them with their
provenance (or says that no GPU recording exists yet), and each code cell whose source is
the same in both recordings gets a tab per device class over its outputs.
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.measure.provenance import provenance_line
from gpulab.units import format_duration

if TYPE_CHECKING:
    from gpulab.course.run_time_model import RunTimeEstimate

__all__ = [
    "KIND_LABELS",
    "RECORDINGS_FOLDER",
    "Recording",
    "cell_tabs",
    "class_kind",
    "class_label",
    "bench_estimate",
    "device_class",
    "estimate_run_time",
    "lab_estimate",
    "lab_recordings",
    "outputs_html",
    "recorded_run_times",
    "recording_path",
    "recordings_summary",
]

RECORDINGS_FOLDER = "recordings"
KIND_LABELS = {"cpu": "CPU", "cuda": "GPU", "mps": "Apple GPU"}


def device_class(kind: str, name: str | None = None) -> str:
    """The class a recording on a device of ``kind`` called ``name`` is kept under.

    Parameters
    ----------
    kind : {"cpu", "cuda", "mps"}
        The device kind, as :func:`gpulab.provenance` reports it.
    name : str, optional
        The device's name as the driver reports it (``torch.cuda.get_device_name()``);
        needed for ``"cuda"``, ignored otherwise.

    Returns
    -------
    str
        ``"cpu"``, ``"mps"``, or ``"cuda:"`` and the spec registry's row name for that exact
        part (:func:`gpulab.hardware.specs.match_driver_name`), or the driver's name where
        the registry has no row for it.

    Examples
    --------
    >>> device_class("cuda", "NVIDIA H100 80GB HBM3")
    'cuda:H100 SXM5 80GB'
    >>> device_class("cuda", "NVIDIA H100 PCIe")
    'cuda:H100 PCIe 80GB'
    >>> device_class("cuda", "NVIDIA A100-SXM4-40GB"), device_class("cuda", "NVIDIA A100-SXM4-80GB")
    ('cuda:A100 40GB SXM4', 'cuda:A100 80GB SXM4')
    >>> device_class("cuda", "NVIDIA H100 NVL")  # not in the registry: the driver's name
    'cuda:NVIDIA H100 NVL'
    >>> device_class("cpu", "AMD EPYC 7B13")
    'cpu'
    """
    from gpulab._checks import choice, wrong_type
    from gpulab.hardware.specs import match_driver_name

    kind = choice("kind", kind, tuple(KIND_LABELS))
    if kind != "cuda":
        return kind
    if not isinstance(name, str):
        raise wrong_type("name", name, "the GPU's name as the driver reports it")
    if not name.strip():
        raise ValueError(
            f"name={name!r} must be the GPU's name as the driver reports it, "
            "e.g. 'NVIDIA H100 80GB HBM3' (torch.cuda.get_device_name())"
        )
    spec = match_driver_name(name)[0]
    return f"cuda:{spec.name if spec is not None else ' '.join(name.split())}"


def _check_class(device_class: str) -> tuple[str, str]:
    """``(kind, name)`` of a device class; a ValueError naming what is allowed."""
    from gpulab._checks import wrong_type

    if not isinstance(device_class, str):
        raise wrong_type("device_class", device_class, "a str such as 'cpu' or 'cuda:Tesla T4'")
    kind, _, name = device_class.partition(":")
    allowed = "'cpu', 'mps', or 'cuda:' and the GPU's registry name (e.g. 'cuda:Tesla T4')"
    if kind not in KIND_LABELS:
        raise ValueError(f"device_class={device_class!r} is not known; use {allowed}")
    if (kind == "cuda") != bool(name.strip()) or not re.search(r"[A-Za-z0-9]", name or "x"):
        why = (
            "names no GPU: a CUDA recording is kept per GPU class"
            if kind == "cuda"
            else "takes no device name"
        )
        raise ValueError(f"device_class={device_class!r} {why}; use {allowed}")
    return kind, name


def class_kind(device_class: str) -> str:
    """The device kind of a class: ``"cpu"``, ``"cuda"`` or ``"mps"``.

    >>> class_kind("cuda:Tesla T4"), class_kind("cpu")
    ('cuda', 'cpu')
    """
    return _check_class(device_class)[0]


def class_label(device_class: str) -> str:
    """A class in words, as a tab and a run-time table name it.

    >>> class_label("cuda:H100 SXM5 80GB"), class_label("cpu")
    ('GPU (H100 SXM5 80GB)', 'CPU')
    """
    kind, name = _check_class(device_class)
    return f"{KIND_LABELS[kind]} ({name})" if name else KIND_LABELS[kind]


def _folder_name(name: str) -> str:
    """A GPU class's folder: its name in lowercase words joined by hyphens."""
    return "-".join(re.findall(r"[a-z0-9]+", name.lower()))


@dataclass(frozen=True)
class Recording:
    """One recorded run of a lab: its device class, the notebook holding it, its provenance."""

    device_class: str
    path: Path
    provenance: dict
    run_time_s: float | None

    @property
    def kind(self) -> str:
        """The device kind (``"cpu"``, ``"cuda"``, ``"mps"``)."""
        return class_kind(self.device_class)

    @property
    def label(self) -> str:
        """``"GPU (H100 SXM5 80GB)"``: the kind in words and the device class's name (for an
        Apple GPU, whose class names no chip, the device's name: ``"Apple GPU (Apple M3)"``)."""
        name = self.provenance.get("name")
        if self.device_class == "mps" and name:
            return f"{KIND_LABELS['mps']} ({name})"
        return class_label(self.device_class)


def recording_path(lab: str | Path, device_class: str) -> Path:
    """Where the recording of ``lab`` on a device of class ``device_class`` lives.

    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "cpu").as_posix()
    'notebooks/gpu_basics_lab.ipynb'
    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "cuda:H100 SXM5 80GB").as_posix()
    'notebooks/recordings/cuda/h100-sxm5-80gb/gpu_basics_lab.ipynb'
    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "mps").as_posix()
    'notebooks/recordings/mps/gpu_basics_lab.ipynb'
    >>> recording_path("notebooks/gpu_basics_lab.ipynb", "tpu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device_class='tpu' is not known; use 'cpu', 'mps', or 'cuda:' and ...
    """
    kind, name = _check_class(device_class)
    lab = Path(lab)
    if kind == "cpu":
        return lab
    folder = lab.parent / RECORDINGS_FOLDER / kind
    return (folder / _folder_name(name) if name else folder) / lab.name


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _recording(device_class: str, path: Path, nb: dict) -> Recording:
    meta = nb.get("metadata", {}).get("gpulab", {})
    record = dict(meta.get("recorded", {}).get(device_class, {}))
    run_time_s = meta.get("run_time_s", {}).get(device_class)
    return Recording(device_class, path, record, None if run_time_s is None else float(run_time_s))


def _recorded_class(path: Path, nb: dict) -> str | None:
    """The GPU class a recording under ``recordings/cuda/`` was stamped with, if any."""
    recorded = nb.get("metadata", {}).get("gpulab", {}).get("recorded", {})
    classes = [c for c in recorded if c.startswith("cuda:")]
    mine = [c for c in classes if _folder_name(c.partition(":")[2]) == path.parent.name]
    return mine[0] if mine else None


def lab_recordings(lab: str | Path) -> dict[str, Recording]:
    """Every recording of ``lab`` there is, by device class: the CPU first, then each GPU
    class in name order, then an Apple GPU (only those stamped by ``record``)."""
    lab = Path(lab)
    found = {}
    paths = [("cpu", lab)]
    paths += [(None, p) for p in sorted(lab.parent.glob(f"{RECORDINGS_FOLDER}/cuda/*/{lab.name}"))]
    paths.append(("mps", recording_path(lab, "mps")))
    for device_class, path in paths:
        if not path.is_file():
            continue
        nb = _read(path)
        device_class = device_class or _recorded_class(path, nb)
        if device_class is None:
            continue
        recording = _recording(device_class, path, nb)
        if recording.provenance:
            found[device_class] = recording
    return found


def estimate_run_time(run_time_s: dict, device_class: str) -> tuple[float | None, str]:
    """A lab's run time on a device of ``device_class``, from its recorded runs, and a note.

    Only a recording of the same class counts: a T4's run time says little about an H100's
    (:func:`gpulab.scale` sizes problems to the device, and compile costs differ), so a lab
    recorded on other GPUs only gets None, and the note names those recordings.
    :func:`lab_estimate` estimates the rest with a model.

    Parameters
    ----------
    run_time_s : dict
        Seconds by device class, as a lab's ``gpulab.run_time_s`` metadata holds them.
    device_class : str
        The class of the device the lab is about to run on
        (:func:`device_class`): ``"cpu"``, ``"mps"`` or
        ``"cuda:<registry name>"``.

    Returns
    -------
    tuple
        Seconds (None where nothing of that class was recorded) and where they come from.

    Examples
    --------
    >>> times = {"cpu": 41.0, "cuda:Tesla T4": 12.0}
    >>> estimate_run_time(times, "cuda:Tesla T4")
    (12.0, 'recorded on GPU (Tesla T4)')
    >>> estimate_run_time(times, "cuda:H100 SXM5 80GB")
    (None, 'no recording on GPU (H100 SXM5 80GB); recorded on GPU (Tesla T4), another class')
    >>> estimate_run_time({"cpu": 41.0}, "cuda:H100 SXM5 80GB")
    (None, 'no recording on GPU (H100 SXM5 80GB)')
    >>> estimate_run_time({}, "cpu")
    (None, 'never recorded on CPU')
    """
    from gpulab._checks import wrong_type

    if not isinstance(run_time_s, dict):
        raise wrong_type("run_time_s", run_time_s, "a dict of seconds by device class")
    label = class_label(device_class)
    if run_time_s.get(device_class) is not None:
        return float(run_time_s[device_class]), f"recorded on {label}"
    if device_class == "cpu":
        return None, "never recorded on CPU"
    kind = class_kind(device_class)
    others = [
        c for c in run_time_s if c.partition(":")[0] == kind and c != device_class and ":" in c
    ]
    note = f"no recording on {label}"
    if others:
        listed = ", ".join(class_label(c) for c in sorted(others))
        note += f"; recorded on {listed}, another class"
    return None, note


def recorded_run_times(lab: str | Path) -> dict:
    """Seconds by device class: the lab's metadata, and its recordings for classes it lacks."""
    lab = Path(lab)
    meta = json.loads(lab.read_text(encoding="utf-8")).get("metadata", {}).get("gpulab", {})
    times = dict(meta.get("run_time_s", {}))
    for where, recording in lab_recordings(lab).items():
        if times.get(where) is None and recording.run_time_s is not None:
            times[where] = recording.run_time_s
    return times


def lab_estimate(
    lab: str | Path, device_class: str, costs: dict[str, float] | None = None
) -> RunTimeEstimate:
    """A lab's expected run time on ``device_class``: its recording there, else the model
    (:mod:`gpulab.course.run_time_model`): a :class:`~gpulab.course.run_time_model.
    RunTimeEstimate`.

    Parameters
    ----------
    lab : path
        The lab notebook.
    device_class : str
        ``"cpu"``, ``"mps"`` or ``"cuda:<registry name>"``
        (:func:`device_class`).
    costs : dict, optional
        Measured seconds per compile
        (:func:`gpulab.course.run_time_model.parse_compile_costs`).
    """
    from gpulab.course.run_time_model import (
        RunTimeEstimate,
        compile_counts,
        estimate_gpu_run_time,
    )

    lab = Path(lab)
    times = recorded_run_times(lab)
    seconds, note = estimate_run_time(times, device_class)
    if seconds is not None:
        return RunTimeEstimate(seconds, note, recorded=True)
    if device_class == "cpu":
        return RunTimeEstimate(None, note)
    nb = json.loads(lab.read_text(encoding="utf-8"))
    model = estimate_gpu_run_time(times.get("cpu"), compile_counts(nb), costs or {})
    return RunTimeEstimate(model.seconds, f"{note}; {model.basis}", unpriced=model.unpriced)


def bench_estimate(results: str | Path | None, for_class: str) -> RunTimeEstimate:
    """How long ``python -m gpulab bench`` took here before: the latest report in ``results``
    from a device of class ``for_class`` that says (``record --all`` writes ``run_time_s``
    into it).

    >>> bench_estimate(None, "cpu").seconds is None
    True
    """
    import json

    from gpulab.course.run_time_model import RunTimeEstimate

    if results is None or not Path(results).is_dir():
        return RunTimeEstimate(None, "no bench report with a run time: no estimate")
    for report in sorted(Path(results).glob("*.json"), reverse=True):  # newest date first
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
            prov = data["provenance"]
            same = device_class(prov["kind"], prov.get("name")) == for_class
            seconds = float(data["run_time_s"])
        except (ValueError, KeyError, TypeError):
            continue
        if same:
            return RunTimeEstimate(seconds, f"recorded in {report.name}", recorded=True)
    return RunTimeEstimate(
        None, f"no bench report from {class_label(for_class)} with a run time: no estimate"
    )


#: The sentences of a lab page's "Recorded outputs" note, filled in after they are translated
#: (the Chinese edition translates them in ``locale/zh_CN/LC_MESSAGES/ui.po``). The recorded
#: values themselves (device, versions) stay as recorded.
RECORDED_LINE = (
    "{label}: outputs recorded on {date} on {device}; CuPy {cupy}; gpulab {gpulab}; "
    "Python {python}."
)
RECORDED_LINE_TIMED = (
    "{label}: outputs recorded on {date} on {device}; CuPy {cupy}; gpulab {gpulab}; "
    "Python {python}; run time {run_time}."
)
CUPY_MISSING = "not installed"
NO_GPU_RECORDING = (
    "No GPU recording yet: every output on this page ran on a CPU. On a machine with a CUDA "
    "GPU, `python -m gpulab record --all` adds one, shown beside these."
)
SUMMARY_MESSAGES = (RECORDED_LINE, RECORDED_LINE_TIMED, CUPY_MISSING, NO_GPU_RECORDING)


def _same(text: str) -> str:
    return text


def recordings_summary(recordings: dict[str, Recording], _=_same) -> list[str]:
    """The sentences a lab page opens with: what each recording ran on, or that none is on a GPU.

    ``_`` translates each sentence before its values are filled in (``SUMMARY_MESSAGES``).

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
        rec = recording.provenance
        provenance_line(rec)  # refuses a record that lacks a field, as the lab's own line does
        fields = {
            "label": recording.label,
            "date": rec["date"],
            "device": rec["device"],
            "cupy": rec.get("cupy") or _(CUPY_MISSING),
            "gpulab": rec["gpulab"],
            "python": rec["python"],
        }
        if recording.run_time_s is None:
            lines.append(_(RECORDED_LINE).format(**fields))
        else:
            run_time = format_duration(recording.run_time_s)
            lines.append(_(RECORDED_LINE_TIMED).format(**fields, run_time=run_time))
    if not any(kind != "cpu" for kind in recordings):
        lines.append(_(NO_GPU_RECORDING))
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


def cell_tabs(
    group: str, labels: list[str], first_checked: int = 0, name: str = "Recorded outputs"
) -> list[str]:
    """HTML around a cell's outputs, one tab per recording, to interleave with the panels.

    Returns ``len(labels) + 1`` pieces: piece ``i`` goes before panel ``i``'s content and the
    last one closes the set. The tabs are radio buttons styled by CSS, so they work with no
    script and offline; ``group`` must be unique on the page. ``name`` is the set's accessible
    name (the Chinese edition's is translated).

    >>> pieces = cell_tabs("cell-3", ["CPU", "GPU"])
    >>> len(pieces), pieces[0].count('type="radio"'), 'checked' in pieces[1]
    (3, 1, False)
    """
    group = html.escape(group, quote=True)
    pieces = []
    for i, label in enumerate(labels):
        start = "" if i == 0 else "</div>\n"
        if i == 0:
            label_attr = html.escape(name, quote=True)
            start += f'<div class="gl-recordings" role="group" aria-label="{label_attr}">\n'
        checked = " checked" if i == first_checked else ""
        tab = f"{group}-{i}"
        pieces.append(
            f'{start}<input type="radio" class="gl-rec-input" name="{group}" id="{tab}"{checked}>'
            f'<label class="gl-rec-label" for="{tab}">{html.escape(label)}</label>'
            f'<div class="gl-rec-panel">\n'
        )
    pieces.append("</div>\n</div>\n")
    return pieces
