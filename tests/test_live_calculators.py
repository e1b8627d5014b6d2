"""The live calculators' declarations, charts, runtime fetch and package zip, without a browser.

The browser side (the page runs the same code on Pyodide and gets the same numbers) is in
``tests/test_live_book.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
import zipfile

import pytest

from gpulab.course import live_book
from gpulab.labkit import calculators
from gpulab.labkit.calculators import CALCULATORS, Field, run
from gpulab.labkit.svgchart import Series, line_chart, stacked_bar

#: The eight calculators the book must have live (issue: "Live in the chapters").
EXPECTED = {
    "chooser", "training_memory", "roofline", "scaling", "parallelism", "occupancy",
    "kv_cache", "matmul_waves",
}  # fmt: skip


def test_the_eight_calculators_are_declared():
    assert set(CALCULATORS) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_calculator_runs_at_its_defaults_and_examples(name):
    calc = CALCULATORS[name]
    assert len(calc.examples) >= 2
    results = [run(name, values) for values in (calc.defaults(), *calc.examples)]
    for values, out in zip((calc.defaults(), *calc.examples), results, strict=True):
        assert out["ok"], (values, out["html"])
        assert out["numbers"], name
        json.dumps(out)  # what the browser receives
    # each example changes the answer: the examples exercise the inputs
    assert len({json.dumps(r["numbers"], sort_keys=True) for r in results}) == len(results)


def test_a_calculator_gives_the_models_own_numbers():
    import gpulab as gl

    out = run("occupancy", {"device": "A100 80GB SXM4", "threads_per_block": "512"})
    assert out["numbers"]["warps_per_sm"] == gl.occupancy("A100 80GB SXM4", 512).warps_per_sm
    out = run("matmul_waves", {"n": "3072"})
    assert out["numbers"]["waves"] == gl.matmul_waves("A100 80GB SXM4", 3072).waves == 6
    out = run("training_memory", {"params_millions": "1300", "activation_mib": "0",
                                  "optimizer": "adam"})  # fmt: skip
    assert out["numbers"]["total_bytes"] == 16 * 1_300_000_000  # amp: 16 bytes per parameter
    kv = run("kv_cache", {"model": "GPT-2 XL", "batch_size": "8", "seq_len": "1024"})
    assert kv["numbers"]["kv_bytes"] == gl.model_kv_cache_bytes("GPT-2 XL", batch_size=8)


def test_the_chooser_uses_the_cnn_activations_measured_at_build_time():
    data = calculators.build_time_data()["cnn_activation_bytes"]
    key = "ResNet-50|224|amp_bf16"
    assert data[key] > 10 * 2**20  # a ResNet-50 keeps tens of MiB per 224x224 image
    out = run("chooser", {"model": "ResNet-50", "batch_size": "10"})
    import gpulab as gl

    plan = gl.plan_training("ResNet-50", batch_size=10)  # measures with torch here
    assert out["numbers"]["memory_bytes"] == plan.memory.total_bytes


def test_the_live_chooser_shows_the_best_published_multiply_with_its_source():
    import gpulab as gl

    out = run("chooser", {"model": "BERT-base", "batch_size": "8"})
    plan = gl.plan_training("BERT-base", batch_size=8)
    a100 = next(o for o in plan.options if o.spec.name == "A100 80GB SXM4")
    assert a100.published.value == 271.2  # the MAMF table's A100 SXM row, TFLOP/s
    assert out["numbers"]["published_epoch_s[A100 80GB SXM4]"] == a100.published_epoch_s
    assert out["numbers"]["published_epoch_s[Tesla T4]"] is None
    assert (
        f"{gl.format_duration(a100.published_epoch_s)} at 271.2 TFLOP/s (published)"
        in (out["html"])
    )
    assert "no published measurement" in out["html"] and a100.published.source in out["html"]
    assert "PUBLISHED MEASUREMENT, not a prediction" in out["html"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [("abc", "is not a number"), ("", "is not a number"), ("4096", "must be between"),
     ("33.5", "must be a whole number"), ("nan", "must be between")],
)  # fmt: skip
def test_bad_form_values_are_refused_with_the_input_named(raw, message):
    out = run("occupancy", {"threads_per_block": raw})
    assert not out["ok"] and "Threads per block" in out["html"] and message in out["html"]


def test_an_unknown_choice_is_refused():
    out = run("roofline", {"device": "No Such GPU"})
    assert not out["ok"] and "not one of the choices" in out["html"]
    with pytest.raises(ValueError, match="name="):
        run("no_such_calculator")


def test_a_field_default_outside_its_range_is_refused():
    with pytest.raises(ValueError, match="must lie in"):
        Field("n", "N", "number", 5, minimum=10, maximum=20, step=1)
    with pytest.raises(ValueError, match="one of options"):
        Field("x", "X", "select", "c", ("a", "b"))


def test_the_chart_is_svg_with_its_lines_point_and_labels():
    svg = line_chart(
        [Series("roof", (0.1, 1.0, 10.0), (1e12, 1e13, 1e13))],
        x_label="intensity", y_label="FLOP/s", x_log=True, y_log=True,
        point=(1.0, 1e13, "you"),
    )  # fmt: skip
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<polyline") == 1 and 'class="gl-point"' in svg and ">you<" in svg
    assert "<title>FLOP/s against intensity</title>" in svg
    with pytest.raises(ValueError, match="positive on a logarithmic axis"):
        line_chart([Series("s", (0.0, 1.0), (1.0, 2.0))], x_label="x", y_label="y", x_log=True)


def test_the_training_memory_chart_stacks_the_models_four_parts():
    from gpulab.costmodels.memory import estimate_training_memory

    values = {"params_millions": 1000, "batch_size": 8, "activation_mib": 512,
              "precision": "amp_bf16", "optimizer": "adam"}  # fmt: skip
    out = run("training_memory", values)
    est = estimate_training_memory(10**9, precision="amp_bf16", optimizer="adam",
                                   activations_bytes=8 * 512 * 2**20)  # fmt: skip
    segment = r'<rect class="gl-part(\d)"[^>]* width="([\d.]+)" height="34"'
    segments = re.findall(segment, out["html"])
    widths = [float(w) for _, w in segments]
    parts = [est.params_bytes, est.grads_bytes, est.optimizer_bytes, est.activations_bytes]
    assert [int(i) for i, _ in segments] == [0, 1, 2, 3]
    # Each segment's length is its part's share of the total (to the SVG's 0.1 px rounding).
    for width, part in zip(widths, parts, strict=True):
        assert width == pytest.approx(sum(widths) * part / est.total_bytes, abs=0.2)
    for name in ("parameters", "gradients", "optimizer state", "activations"):
        assert f">{name}: " in out["html"]
    assert out["numbers"]["total_bytes"] == est.total_bytes


def test_a_stacked_bar_refuses_parts_it_cannot_draw():
    with pytest.raises(ValueError, match="at least one"):
        stacked_bar([])
    with pytest.raises(ValueError, match=r"parts\[1\]\[1\]=-1"):
        stacked_bar([("a", 1.0), ("b", -1)])
    with pytest.raises(TypeError, match=r"parts\[0\]"):
        stacked_bar(["a"])


def _tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_the_runtime_is_fetched_once_checked_and_trimmed(tmp_path):
    files = {name: name.encode() * 3 for name in live_book.RUNTIME_FILES}
    files["pyodide.d.ts"] = b"not needed"
    tarball = _tarball(files)
    urls = []

    def download(url):
        urls.append(url)
        return tarball

    kwargs = dict(version="9.9.9", integrity=_integrity(tarball), download=download)
    folder = live_book.fetch_pyodide(tmp_path, **kwargs)
    assert urls == ["https://registry.npmjs.org/pyodide/-/pyodide-9.9.9.tgz"]
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == sorted(
        live_book.RUNTIME_FILES
    )
    assert live_book.fetch_pyodide(tmp_path, **kwargs) == folder and len(urls) == 1  # cached


def test_a_tarball_that_does_not_match_the_pinned_hash_is_refused(tmp_path):
    tarball = _tarball({name: b"x" for name in live_book.RUNTIME_FILES})
    with pytest.raises(ValueError, match="refusing to use it"):
        live_book.fetch_pyodide(
            tmp_path, version="9.9.9", integrity=_integrity(b"other"), download=lambda u: tarball
        )
    assert not any(tmp_path.iterdir())


def test_the_pinned_runtime_is_an_exact_version_with_a_sha512():
    assert re.fullmatch(r"\d+\.\d+\.\d+", live_book.PYODIDE_VERSION)
    digest = live_book.PYODIDE_INTEGRITY.removeprefix("sha512-")
    assert len(base64.b64decode(digest)) == 64


def test_the_package_zip_holds_the_calculators_modules_and_no_more(tmp_path):
    data = {"cnn_activation_bytes": {"ResNet-50|224|amp_bf16": 123}}
    path = live_book.package_zip(tmp_path / "live.zip", data)
    names = set(zipfile.ZipFile(path).namelist())
    assert {"gpulab/__init__.py", "gpulab/labkit/calculators.py", "gpulab/kernels/occupancy.py",
            "gpulab/data/gpu_specs.csv", "gpulab/data/live_build_data.json"} <= names  # fmt: skip
    for heavy in ("gpulab/labkit/widgets.py", "gpulab/measure/bench.py", "gpulab/course/cli.py"):
        assert heavy not in names
    shipped = json.loads(zipfile.ZipFile(path).read("gpulab/data/live_build_data.json"))
    assert shipped == data
    again = live_book.package_zip(tmp_path / "again.zip", data)
    assert again.read_bytes() == path.read_bytes()  # the same sources give the same bytes
