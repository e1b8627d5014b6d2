"""The "measure your GPU" panel's arithmetic (gpulab.labkit.gpu_panel), without a browser.

The browser side (the kernels run with WebGPU on SwiftShader, and the fallback without
WebGPU) is in ``tests/test_browser_webgpu.py``.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from gpulab.costmodels.roofline import Ceilings
from gpulab.course.gallery import gallery_table
from gpulab.labkit import gpu_panel
from gpulab.labkit.gpu_panel import EXAMPLE, KERNELS, kernel_work, panel_json, panel_report
from gpulab.measure.bench_report import validate_report

STATIC = Path(__file__).resolve().parents[1] / "book" / "_ext" / "static"


def _measurement(**changes) -> dict:
    out = copy.deepcopy(EXAMPLE)
    out.update(changes)
    return out


def test_kernel_work_counts_flops_and_bytes():
    assert kernel_work("copy", {"bytes": 2 * 2**20}) == (0.0, 2.0 * 2**20)
    # 16 chains x 2 FLOPs per step; one f32 written per thread
    assert kernel_work("fma_f16", {"threads": 10, "iterations": 3, "chains": 16}) == (960.0, 40.0)
    flops, n_bytes = kernel_work("matmul", {"n": 1024})
    assert flops == 2 * 1024**3 and n_bytes == 12 * 1024**2
    assert flops / n_bytes == pytest.approx(1024 / 6)
    assert kernel_work("dispatch", {}) == (0.0, 0.0)
    with pytest.raises(ValueError, match="name="):
        kernel_work("triad", {})
    with pytest.raises(TypeError, match="params"):
        kernel_work("copy", [1])


def test_the_example_gives_its_rates_ceilings_and_errors():
    numbers = panel_report(EXAMPLE)["numbers"]
    assert numbers["rate[copy]"] == pytest.approx(1e11)
    assert numbers["rate[fma_f32]"] == pytest.approx(1e12)
    assert numbers["ridge"] == pytest.approx(10.0)
    assert numbers["overhead_s"] == pytest.approx(1e-5)
    # the matmul took exactly the roofline's time: 10 us + 2 n^3 / 1 TFLOP/s
    assert numbers["error[matmul]"] == pytest.approx(0.0, abs=1e-12)
    # the copy and the chain set the roofs: their error is the dispatch cost's share
    assert numbers["error[copy]"] == pytest.approx(1.01e-3 / 1.02e-3 - 1)
    assert numbers["error[fma_f32]"] == pytest.approx(0.5e-3 / 0.51e-3 - 1)
    assert "error[dispatch]" not in numbers  # no work: nothing to predict


def test_errors_are_the_course_roofline_models():
    out = panel_report(EXAMPLE)
    roof = Ceilings("x", "fp32", out["numbers"]["peak_flops"], out["numbers"]["memory_bandwidth"],
                    overhead_s=out["numbers"]["overhead_s"])  # fmt: skip
    slow = _measurement()
    slow["kernels"][2]["times_s"] = [t * 3 for t in slow["kernels"][2]["times_s"]]
    got = panel_report(slow)["numbers"]
    flops, n_bytes = kernel_work("matmul", {"n": 192})
    expected = 3 * EXAMPLE["kernels"][2]["times_s"][0] / roof.predict(flops, n_bytes).time_s - 1
    assert got["error[matmul]"] == pytest.approx(expected) == pytest.approx(2.0)


def test_median_and_spread_are_numpys():
    times = [3e-3, 1e-3, 2e-3, 7e-3, 4e-3]
    m = _measurement()
    m["kernels"][0]["times_s"] = times
    (copy_result, *_), _ = gpu_panel.summarize(m)
    q1, q3 = np.percentile(times, [25, 75])
    assert copy_result.median_s == pytest.approx(np.median(times))
    assert copy_result.iqr_s == pytest.approx(q3 - q1)


def test_a_kernel_whose_check_failed_never_counts():
    m = _measurement()
    m["kernels"][2].update(checked=False, check="C[0][5] = 3, not 4")
    out = panel_report(m)
    assert "rate[matmul]" not in out["numbers"]
    assert "wrong result: C[0][5] = 3, not 4" in out["html"]
    assert {"name": "matmul", "reason": "wrong result: C[0][5] = 3, not 4"} in out["report"][
        "skipped"
    ]
    assert "matmul" not in {r["name"] for r in out["report"]["results"]}


def test_too_few_timed_blocks_are_left_out_and_no_roof_without_the_chain():
    m = _measurement()
    m["kernels"][1]["times_s"] = [1e-3, 1e-3]
    out = panel_report(m)
    assert "only 2 timed block(s)" in out["html"]
    assert "No roofline" in out["html"] and "<svg" not in out["html"]
    assert "peak_flops" not in out["numbers"]


def test_the_result_is_labelled_a_measurement_with_its_provenance_and_timing():
    page = panel_report(_measurement(timing="timestamp-query"))["html"]
    assert "MEASURED in this browser (HeadlessChrome 156) on example made-up, 2026-12-06" in page
    assert "GPU timestamps (timestamp-query)" in page
    page = panel_report(EXAMPLE)["html"]
    assert "wall-clock time around the queue&#x27;s completion" in page
    assert "checked before its time counted" in page
    page = panel_report(_measurement(round_trip_s=2e-3))["html"]
    assert "one round trip to the GPU (2 ms for an empty submission)" in page
    described = _measurement(adapter={"vendor": "nvidia", "architecture": "hopper",
                                      "description": "NVIDIA H100"})  # fmt: skip
    assert "on NVIDIA H100 (nvidia hopper)" in panel_report(described)["html"]


def test_the_chart_draws_the_readers_roofline_beside_two_registry_ones_with_the_kernels():
    svg = re.search(r"<svg.*</svg>", panel_report(EXAMPLE)["html"], re.S).group(0)
    assert svg.count("<polyline") == 3
    assert "(measured)" in svg and "Tesla T4 (datasheet)" in svg
    assert "A100 80GB SXM4 (datasheet)" in svg
    assert svg.count('class="gl-point"') == 2  # the FP32 chain and the matmul
    assert ">tiled matmul, FP32<" in svg and ">FMA chain, FP32<" in svg


def test_the_report_follows_the_bench_schema_and_shows_in_the_gallery():
    report = panel_report(EXAMPLE)["report"]
    validate_report(report)
    assert report["provenance"]["kind"] == "webgpu" and report["provenance"]["timing"]
    assert {(r["name"], r["dtype"]) for r in report["results"]} == {
        ("copy", None), ("fma", "fp32"), ("matmul", "fp32"), ("dispatch", None)}  # fmt: skip
    runs = {r["name"]: r["runs"] for r in report["results"]}
    assert runs["copy"] == 7 * 10 and runs["dispatch"] == 5 * 64
    table = gallery_table([report])
    assert "FMA chains FP32" in table and "100,000 dispatches/s" in table


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="timing="):
        panel_report(_measurement(timing="stopwatch"))
    with pytest.raises(TypeError, match="measurement"):
        panel_report([1, 2])
    with pytest.raises(ValueError, match="kernel name="):
        panel_report(_measurement(kernels=[{"name": "triad", "checked": True}]))


def test_the_page_gets_json_that_matches_cpython():
    assert json.loads(panel_json(json.dumps(EXAMPLE))) == json.loads(
        json.dumps(panel_report(EXAMPLE))
    )


def test_every_kernel_has_its_wgsl_in_one_file_and_the_worker_runs_each():
    wgsl = (STATIC / "measure-gpu.wgsl").read_text(encoding="utf-8")
    assert re.findall(r"^//// (\w+)$", wgsl, re.M) == list(KERNELS)
    worker = (STATIC / "measure-gpu-worker.js").read_text(encoding="utf-8")
    assert re.findall(r'^    \["(\w+)", ', worker, re.M) == list(KERNELS)
    assert "enable f16;" in wgsl.split("//// fma_f16")[1].split("////")[0]
    assert "timestamp-query" in worker and "onSubmittedWorkDone" in worker
