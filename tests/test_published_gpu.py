"""Published measurements on real GPUs, and the course's models scored on them leave-one-out."""

from __future__ import annotations

import csv
import dataclasses
import io
import statistics
from collections import Counter

import pytest

import gpulab as gl
from gpulab.costmodels.published_gpu import (
    DECODE_MODELS,
    FAMILIES,
    published_gpu_measurements,
)
from gpulab.costmodels.published_gpu_checks import (
    TARGET,
    check_family,
    decode_bytes_per_token,
    summarise,
)
from gpulab.hardware.interconnects import interconnect

ML_ENG = "744d01e18b79512572f64a6bbd8b5f4a725203a7"
GPT_FAST = "32971d3129541c5bfb4f715abc33d1c5f408d204"
FLASH_ATTN = "0251105a2fb19d2957484b7f023cd8c115286ced"


def test_every_row_has_its_device_figure_conditions_and_pinned_source():
    rows = published_gpu_measurements()
    assert len(rows) >= 60
    assert len({r.source for r in rows}) >= 4
    assert {r.commit for r in rows} == {ML_ENG, GPT_FAST, FLASH_ATTN}
    for r in rows:
        assert r.device and r.quantity and r.unit and r.value > 0
        assert r.software and r.conditions and r.where and r.read_on
        assert r.source.startswith("https://github.com/") and f"/blob/{r.commit}/" in r.source
        gl.get_spec(r.spec)  # a registry row
    counts = Counter(r.family for r in rows)
    assert counts == {"matmul": 20, "decode": 27, "attention": 46, "allreduce": 12}
    assert len({(r.family, r.source, r.where) for r in rows}) == len(rows)  # one row each


def test_the_figures_are_the_ones_the_sources_print():
    def one(family, **fields):
        hits = [
            r
            for r in published_gpu_measurements(family=family)
            if all(getattr(r, k) == v for k, v in fields.items())
        ]
        assert len(hits) == 1, fields
        return hits[0]

    # ml-engineering, MAMF table: H100 SXM BF16 794.5 at 2048x2048x13312 on torch 2.7.0+cu126.
    h100 = one("matmul", device="NVIDIA H100 SXM", precision="bf16")
    assert (h100.value, h100.shape, h100.software) == (
        794.5,
        "2048x2048x13312",
        "torch 2.7.0+cu126",
    )
    assert one("matmul", device="NVIDIA A100 SXM", precision="bf16").value == 271.2
    assert one("matmul", device="NVIDIA GB200 SXM", precision="fp8").value == 3615.6
    # gpt-fast: Llama-2-7B 104.9 tokens/s on one A100 at 330 W; 8-way TP 328.43.
    base = one("decode", model="Llama-2-7B", weight_format="bf16", n_gpus=1, spec="A100 80GB SXM4")
    assert base.value == 104.9 and "330 W" in base.conditions and "batch 1" in base.conditions
    assert one("decode", model="Llama-2-7B", weight_format="bf16", n_gpus=8).value == 328.43
    assert one("decode", model="Llama-3.1-405B", weight_format="int8", n_gpus=8).value == 15.60
    # FlashAttention-2's H100 chart, panel (b): 338 TFLOP/s at 16k tokens, head dimension 128.
    fa = one("attention", spec="H100 SXM", seq_len=16384, head_dim=128, causal=False)
    assert fa.value == 338 and "16k" in fa.where and "panel (b)" in fa.where
    # ml-engineering's network chapter: an A100 node's all-reduce at 16 GiB, 234.89 GB/s.
    assert one("allreduce", spec="A100 80GB SXM4").value == 234.89


def test_a_row_without_a_pinned_source_or_with_a_wrong_unit_is_refused(tmp_path):
    original = published_gpu_measurements()[0]
    fields = [f.name for f in dataclasses.fields(original)]

    def write(**changes):
        row = {k: getattr(original, k) for k in fields} | changes
        row["causal"] = ""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=fields)
        writer.writeheader()
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
        path = tmp_path / f"rows{len(list(tmp_path.iterdir()))}.csv"  # loads are cached by path
        path.write_text(buf.getvalue(), encoding="utf-8")
        return published_gpu_measurements(path)

    assert write()[0].value == original.value
    with pytest.raises(ValueError, match="source="):
        write(source="https://example.com/table.html")
    with pytest.raises(ValueError, match="unit='tokens/s'"):
        write(unit="tokens/s")
    with pytest.raises(ValueError, match="read_on="):
        write(read_on="yesterday")
    with pytest.raises(ValueError, match="family='training'"):
        published_gpu_measurements(family="training")


def test_no_row_is_predicted_from_itself_or_from_a_repeat_of_its_configuration():
    for family in FAMILIES:
        for check in check_family(family).checks:
            m = check.measurement
            assert m not in check.basis_rows
            if family in ("matmul", "attention"):
                same = {
                    (b.spec, b.precision, b.seq_len, b.head_dim, b.causal) for b in check.basis_rows
                }
                assert (m.spec, m.precision, m.seq_len, m.head_dim, m.causal) not in same


@pytest.mark.parametrize("family", FAMILIES)
def test_changing_a_rows_own_figure_does_not_change_its_prediction(family):
    rows = list(published_gpu_measurements(family=family))
    before = {id(c.measurement): c.predicted for c in check_family(family, rows).checks}
    for i in (0, len(rows) // 2, len(rows) - 1):
        changed = list(rows)
        changed[i] = dataclasses.replace(rows[i], value=rows[i].value * 10)
        after = next(c for c in check_family(family, changed).checks if c.measurement is changed[i])
        if id(rows[i]) in before:
            assert after.predicted == pytest.approx(before[id(rows[i])])


def test_decode_and_matmul_meet_the_target_over_at_least_eight_rows():
    families = summarise()
    for family in ("decode", "matmul"):
        summary = families[family]
        assert summary.n_rows >= 8
        assert summary.median_abs_error <= TARGET, family
    # Every row is scored or listed as unpredictable, with its reason.
    for family, summary in families.items():
        assert summary.n_rows + len(summary.unpredictable) == len(
            published_gpu_measurements(family=family)
        )


def test_rows_the_registry_cannot_predict_are_listed_with_the_reason():
    unpredictable = check_family("matmul").unpredictable
    assert sorted((u.measurement.spec, u.measurement.precision) for u in unpredictable) == [
        ("B300", "bf16"),
        ("B300", "fp8"),
        ("MI355X", "bf16"),
    ]
    assert all("no dense" in u.reason for u in unpredictable)


def test_decode_bytes_count_the_weights_as_stored_and_the_cache():
    rows = {
        (r.model, r.weight_format, r.n_gpus): r for r in published_gpu_measurements(family="decode")
    }
    llama = DECODE_MODELS["Llama-2-7B"]
    weights = 6.7e9 - 32_000 * 4096  # the input embedding's table is not read in full
    kv = 32 * 2 * 32 * 128 * 105 * 2  # layers x (K, V) x heads x head_dim x tokens x 2 bytes
    assert llama.weights_read_per_token == weights
    bf16 = decode_bytes_per_token(rows["Llama-2-7B", "bf16", 1])
    assert bf16 == pytest.approx(weights * 2 + kv)
    # int8: one byte per weight; int4 in groups of 32 with a 16-bit scale and zero: 5 bits.
    assert decode_bytes_per_token(rows["Llama-2-7B", "int8", 1]) == pytest.approx(weights + kv)
    assert decode_bytes_per_token(rows["Llama-2-70B", "int4", 1]) == pytest.approx(
        (70e9 - 32_000 * 8192) * 5 / 8 + 80 * 2 * 8 * 128 * 105 * 2
    )
    # Over 8 GPUs each reads an eighth.
    assert decode_bytes_per_token(rows["Llama-2-7B", "bf16", 8]) == pytest.approx(bf16 / 8)


def test_a_one_gcd_row_uses_one_gcds_bandwidth():
    check = next(
        c
        for c in check_family("decode").checks
        if c.measurement.spec == "MI250X" and c.measurement.weight_format == "bf16"
    )
    half = gl.get_spec("MI250X").memory_bandwidth / 2
    fraction = check.predicted * decode_bytes_per_token(check.measurement) / half
    basis = [b for b in check.basis_rows if b.n_gpus == 1 and b.weight_format == "bf16"]
    assert all(b.spec == "A100 80GB SXM4" for b in basis)
    assert 0.5 < fraction < 0.9  # the A100 rows' fraction of their own bandwidth


def test_tensor_parallel_decoding_adds_per_layer_all_reduces_over_the_mesh():
    checks = [c for c in check_family("decode").checks if c.measurement.n_gpus > 1]
    assert len(checks) == 16
    mesh = interconnect("hybrid cube mesh")
    assert mesh.bandwidth == 300e9 and "gpt-fast" in mesh.source_url
    bandwidth = gl.get_spec("A100 80GB SXM4").memory_bandwidth
    for c in checks:
        m = c.measurement
        assert "latency" in c.basis and m.link == mesh.name and m not in c.basis_rows
        singles = [b for b in c.basis_rows if b.n_gpus == 1 and b.weight_format == m.weight_format]
        fraction = statistics.median(
            b.value * decode_bytes_per_token(b) / (bandwidth if b.spec != "MI250X" else 1638.4e9)
            for b in singles
        )
        reading_only = fraction * bandwidth / decode_bytes_per_token(m)
        # The all-reduces (two per layer) make each token slower than reading its bytes alone.
        assert c.predicted < reading_only


def test_the_new_registry_rows_carry_their_sourced_peaks():
    assert gl.get_spec("GH200").peak("bf16") == pytest.approx(989.5e12)
    assert gl.get_spec("GB200").peak("fp8") == pytest.approx(5000e12)
    assert gl.get_spec("Gaudi 2").peak("bf16") == pytest.approx(432e12)
    assert gl.get_spec("Gaudi 3").peak("bf16") == pytest.approx(1835e12)
    assert "1,677" in gl.get_spec("Gaudi 3").notes  # the clock shipping parts run at
    assert gl.get_spec("H200").name == "H200 SXM 141GB"  # "GH200" does not capture it


def test_the_achievable_matmul_figure_draws_peak_and_measurement_per_accelerator():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from gpulab.labkit.achievable_plot import achievable_matmul_rows, plot_achievable_matmul

    plotted, left_out = achievable_matmul_rows("bf16")
    ax = plot_achievable_matmul("bf16")
    widths = sorted(round(p.get_width(), 1) for p in ax.patches)
    expected = sorted(
        [round(m.value, 1) for m, _, _ in plotted]
        + [round(spec.peak("bf16") / 1e12, 1) for _, spec, _ in plotted]
    )
    assert widths == expected and len(plotted) == 10
    assert {m.spec for m in left_out} == {"B300", "MI355X"}
    fractions = [f for _, _, f in plotted]
    assert fractions == sorted(fractions, reverse=True) and 0.5 < fractions[-1] < fractions[0] < 1
    plt.close("all")
    with pytest.raises(ValueError, match="precision='fp4'"):
        achievable_matmul_rows("fp4")
