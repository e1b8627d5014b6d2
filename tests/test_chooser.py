"""The GPU chooser's arithmetic, checked by hand, and its rejection of bad inputs.

Its times come from gpulab.costmodels.training_time (tests/test_training_time.py checks that model);
the widget is tested in tests/test_widgets.py.
"""

import pytest

import gpulab as gl


def test_named_models_carry_their_published_sizes_and_sources():
    assert gl.get_model("ResNet-50").n_params == 25_557_032
    assert gl.get_model("bert base").n_params == 110_000_000
    assert gl.get_model("BERT-large").n_params == 340_000_000
    assert gl.get_model("gpt-3 175b").layers == 96
    for model in gl.NAMED_MODELS.values():
        assert "http" in model.source and model.cite
    with pytest.raises(ValueError, match=r"name='BERT-huge' is not a named model; use one of"):
        gl.get_model("BERT-huge")


def test_korthikanti_activation_formula_by_hand():
    # BERT-base, batch 8, 16-bit: per layer s*b*h*(34 + 5*a*s/h) bytes.
    s, b, h, a, L = 512, 8, 768, 12, 12
    by_hand = L * s * b * h * (34 + 5 * a * s / h)  # = 12 * 512*8*768*74
    assert by_hand == 12 * 232_783_872
    got = gl.transformer_activation_bytes(
        layers=L, hidden=h, heads=a, seq_len=s, batch_size=b, precision="amp_fp16"
    )
    assert got == by_hand
    # fp32: 4-byte values, 1-byte masks: 66*sbh + 9*a*s^2*b.
    fp32 = gl.transformer_activation_bytes(
        layers=1, hidden=h, heads=a, seq_len=s, batch_size=b, precision="fp32"
    )
    assert fp32 == 66 * s * b * h + 9 * a * s * s * b


def test_time_and_cost_by_hand():
    # ResNet-50 x ImageNet-1k (1,281,167 images) for one epoch on an A100, BF16, at 40%.
    flops = 3 * 2 * 4.09e9 * 1_281_167
    seconds = gl.epoch_seconds(flops, "A100 80GB", precision="amp_bf16", utilisation=0.4)
    assert seconds == pytest.approx(flops / (312e12 * 0.4))
    assert seconds == pytest.approx(251.9, abs=0.1)
    assert gl.epoch_seconds(1e12, "T4", precision="fp32", utilisation=1.0) == pytest.approx(
        1e12 / 8.1e12
    )
    assert gl.costmodels.chooser.run_cost(3600, price_per_hour=2.5) == 2.5
    assert gl.costmodels.chooser.run_cost(1800, price_per_hour=3.0, n_gpus=8) == 12.0
    with pytest.raises(ValueError, match="has no bf16 figure"):
        gl.epoch_seconds(1e12, "V100", precision="amp_bf16")


def test_plan_puts_the_pieces_together():
    plan = gl.plan_training(
        "BERT-large", precision="amp_bf16", optimizer="adamw", batch_size=32,
        samples_per_epoch=1000, utilisation=0.5, price_per_hour=4.0,
        specs=["T4", "A100 80GB", "V100", "Xeon 8380"],
    )  # fmt: skip
    activations = 24 * 512 * 32 * 1024 * (34 + 5 * 16 * 512 / 1024)
    assert plan.memory.activations_bytes == activations
    assert plan.memory.total_bytes == 340e6 * 16 + activations  # 4+4+8 bytes per parameter
    t4, a100, v100, xeon = plan.options
    assert (t4.fits, a100.fits, xeon.fits) == (False, True, None)
    expected_s = 1000 * gl.training_flops_per_sample(gl.get_model("BERT-large")) / (312e12 * 0.5)
    assert a100.epoch_s == pytest.approx(expected_s)
    assert a100.cost == pytest.approx(expected_s / 3600 * 4.0)
    assert v100.epoch_s is None and "no bf16 peak" in v100.note
    assert [o.spec.name for o in plan.fitting()][0] == "A100 80GB SXM4"
    table = plan.table()
    assert "| Tesla T4 | 16 | no |" in table and "host RAM" in table
    floor = gl.format_duration(a100.published_epoch_s)
    assert (
        f"| A100 80GB SXM4 | 80 | yes | {gl.format_duration(expected_s)} "
        f"| {floor} at 271.2 TFLOP/s (published) | $"
    ) in table
    assert "PREDICTION" in str(plan)


def test_a_bare_parameter_count_needs_its_activations_stated():
    plan = gl.plan_training(1_000_000_000, precision="bf16", optimizer="sgd", specs="L4")
    assert plan.memory.total_bytes == 4 * 10**9  # 2 + 2 bytes, no optimizer state
    assert any("pass activations_bytes=" in n for n in plan.notes)
    assert plan.options[0].fits is True  # 4 GB in 90% of 24 GB
    assert plan.options[0].cost is None and "enter a price" in plan.table()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"model": -5}, ValueError, "model=-5 must be a positive integer"),
        (
            {"model": 1.5e9},
            TypeError,
            "model=1500000000.0 must be a named model or a parameter count",
        ),
        ({"batch_size": 0}, ValueError, "batch_size=0 must be a positive integer"),
        ({"batch_size": -8}, ValueError, "batch_size=-8 must be a positive integer"),
        ({"seq_len": -1}, ValueError, "seq_len=-1 must be a positive integer"),
        ({"image_size": 0}, ValueError, "image_size=0 must be a positive integer"),
        ({"samples_per_epoch": 0}, ValueError, "samples_per_epoch=0 must be a positive integer"),
        ({"batch_size": True}, TypeError, "batch_size=True must be a positive integer"),
        ({"utilisation": 0}, ValueError, "utilisation=0 must be a fraction above 0 and at most 1"),
        (
            {"utilisation": 1.5},
            ValueError,
            "utilisation=1.5 must be a fraction above 0 and at most 1",
        ),
        ({"utilisation": float("nan")}, ValueError, "utilisation=nan must be a fraction"),
        ({"utilisation": "0.4"}, TypeError, "utilisation='0.4' must be a fraction"),
        ({"headroom": 0}, ValueError, "headroom=0 must be a fraction above 0"),
        ({"price_per_hour": -2.0}, ValueError, "price_per_hour=-2.0 must be a positive number"),
        (
            {"price_per_hour": float("inf")},
            ValueError,
            "price_per_hour=inf must be a positive number",
        ),
        (
            {"precision": "fp8"},
            ValueError,
            "precision='fp8' is not known; use one of 'fp32', 'amp_bf16'",
        ),
        ({"optimizer": "lion"}, ValueError, "optimizer='lion' is not known; use one of 'sgd'"),
        ({"specs": ["RTX 9090"]}, ValueError, r"specs='RTX 9090': .* close names: .*RTX"),
        (
            {"activations_bytes": -1},
            ValueError,
            "activations_bytes=-1 must be an integer of 0 or more",
        ),
        # model= takes a name or a parameter count (int)
        ({"model": "GPT-9"}, ValueError, "model='GPT-9' is not a named model"),
        ({"model": True}, TypeError, "model=True must be a named model or a parameter count"),
        ({"model": None}, TypeError, "model=None must be a named model or a parameter count"),
        ({"specs": ["T4", 42]}, TypeError, "specs=42"),
        ({"specs": 42}, TypeError, "specs=42 must be a sequence"),
    ],
)
def test_bad_inputs_are_rejected_with_the_parameter_named(kwargs, error, message):
    args = {"model": "BERT-base", **kwargs}
    with pytest.raises(error, match=message):
        gl.plan_training(args.pop("model"), **args)


def test_arithmetic_helpers_reject_bad_inputs():
    with pytest.raises(ValueError, match="flops=-1 must be a finite number of 0 or more"):
        gl.epoch_seconds(-1, "T4")
    with pytest.raises(ValueError, match="spec='Z1': no device called 'Z1'"):
        gl.epoch_seconds(1.0, "Z1")
    with pytest.raises(ValueError, match="price_per_hour=0 must be a positive number"):
        gl.costmodels.chooser.run_cost(10, price_per_hour=0)
    with pytest.raises(ValueError, match="n_gpus=0 must be a positive integer"):
        gl.costmodels.chooser.run_cost(10, price_per_hour=1.0, n_gpus=0)
    with pytest.raises(ValueError, match="time_s=nan must be a finite number of 0 or more"):
        gl.costmodels.chooser.run_cost(float("nan"), price_per_hour=1.0)
    with pytest.raises(ValueError, match="batch_size=0 must be a positive integer"):
        gl.transformer_activation_bytes(
            layers=1, hidden=8, heads=1, seq_len=4, batch_size=0, precision="fp32"
        )


def test_example_prices_are_derived_from_the_cited_costs():
    (v100,) = gl.EXAMPLE_PRICES
    assert (v100.low, v100.high) == (0.74, 2.49)  # $3,751 and $12,571 / 5,056 GPU-hours
    assert v100.date == "2019" and "1906.02243" in v100.source
    assert gl.get_spec(v100.spec_name).name == v100.spec_name  # names a registry entry


def test_cnn_activations_come_from_a_real_forward_pass():
    pytest.importorskip("gpulab.labkit.networks")
    small = gl.plan_training("ResNet-50", batch_size=2, image_size=64, specs=["T4"])
    large = gl.plan_training("ResNet-50", batch_size=6, image_size=64, specs=["T4"])
    assert "real forward pass" in small.notes[0]
    per_image = small.memory.activations_bytes / 2
    assert per_image > 0 and large.memory.activations_bytes == 6 * per_image
    assert small.flops_per_sample == pytest.approx(6 * 4.09e9 * (64 / 224) ** 2)


def test_an_announced_part_is_shown_but_never_recommended(monkeypatch):
    import dataclasses

    import gpulab.costmodels.chooser as chooser

    h100 = gl.get_spec("H100 SXM")
    future = dataclasses.replace(h100, name="Future X1", status="announced", memory_bytes=1e12)
    # Named explicitly it is listed, labelled, and left out of the devices that fit.
    plan = gl.plan_training("BERT-base", batch_size=8, specs=[h100, future])
    option = {o.spec.name: o for o in plan.options}["Future X1"]
    assert option.fits and option.epoch_s is not None
    assert option.note.startswith("announced, not yet sold")
    assert "Future X1 (announced)" in plan.table()
    assert [o.spec.name for o in plan.fitting()] == ["H100 SXM5 80GB"]
    # By default only parts one can buy or rent are compared, even if the registry grows.
    registry = [*gl.list_specs(), future]
    monkeypatch.setattr(chooser, "list_specs", lambda kind=None: registry)
    default = [o.spec.name for o in gl.plan_training("BERT-base", batch_size=8).options]
    assert "Future X1" not in default and "H100 SXM5 80GB" in default
    per_gpu = {s.per_gpu().name: s for s in gl.list_specs()}  # a K80 row is one of its GPUs
    assert all(per_gpu[n].status == "available" for n in default)


def test_an_empty_list_of_devices_is_refused_not_an_empty_plan():
    with pytest.raises(ValueError, match=r"^specs=\[\] is empty"):
        gl.plan_training("BERT-base", batch_size=8, seq_len=128, specs=[])


def _published_bf16_matmul_rows():
    """The table's BF16 matmul rows, read with the csv module (not through the chooser)."""
    import csv
    from pathlib import Path

    path = Path(gl.__file__).parent / "data" / "published_gpu_measurements.csv"
    with path.open(encoding="utf-8", newline="") as f:
        return [
            r for r in csv.DictReader(f) if r["family"] == "matmul" and r["precision"] == "bf16"
        ]


def test_the_chooser_sets_the_best_published_multiply_beside_the_datasheet_estimate():
    plan = gl.plan_training(
        "BERT-large", batch_size=16, samples_per_epoch=1_000_000,
        specs=["A100 80GB", "T4", "B300", "Xeon 8380"],
    )  # fmt: skip
    a100, t4, b300, xeon = plan.options
    row = next(r for r in _published_bf16_matmul_rows() if r["device"] == "NVIDIA A100 SXM")
    assert float(row["value"]) == a100.published.value == 271.2  # TFLOP/s, the MAMF table
    assert a100.published.source == row["source"] and "stas00/ml-engineering" in row["source"]
    epoch_flops = plan.flops_per_sample * plan.samples_per_epoch
    assert a100.published_epoch_s == pytest.approx(epoch_flops / 271.2e12, rel=1e-12)
    # the datasheet estimate at 40% of 312 TFLOP/s is slower than every FLOP at 271.2
    assert a100.epoch_s == pytest.approx(epoch_flops / (312e12 * 0.4), rel=1e-12)
    assert a100.published_epoch_s < a100.epoch_s and a100.published_note == ""
    assert (t4.published, t4.published_epoch_s) == (None, None)
    assert t4.published_note == "no published measurement"
    assert b300.epoch_s is None and b300.published_epoch_s == pytest.approx(epoch_flops / 1769e12)
    assert xeon.published is None and xeon.published_note == "no published measurement"
    (t4_fp16,) = gl.plan_training("BERT-large", precision="amp_fp16", specs=["T4"]).options
    assert t4_fp16.published_note == "no published measurement"  # nothing for T4 at all
    table = plan.table()
    assert "| Time / epoch at the best published multiply (floor) |" in table.splitlines()[0]
    a100_line = next(line for line in table.splitlines() if line.startswith("| A100 80GB"))
    assert f"| {gl.format_duration(a100.published_epoch_s)} at 271.2 TFLOP/s (published) |" in (
        a100_line
    )
    assert "| no published measurement |" in next(
        line for line in table.splitlines() if line.startswith("| Tesla T4")
    )
    (source_note,) = [n for n in plan.notes if n.startswith("PUBLISHED MEASUREMENT")]
    assert row["source"] in source_note and "A100 80GB SXM4, B300" in source_note
    assert "read 2026-12-06" in source_note and source_note in str(plan)


def test_every_published_bf16_multiply_in_the_table_reaches_the_chooser():
    rows = _published_bf16_matmul_rows()
    assert len(rows) >= 10
    plan = gl.plan_training("GPT-2 XL", batch_size=1, specs=[r["spec"] for r in rows])
    epoch_flops = plan.flops_per_sample * plan.samples_per_epoch
    for row, option in zip(rows, plan.options, strict=True):
        assert option.published.device == row["device"]
        assert option.published_epoch_s == pytest.approx(epoch_flops / (float(row["value"]) * 1e12))


def test_the_published_multiply_stands_for_fp16_only_at_the_same_peak_and_never_for_fp32():
    fp16 = gl.plan_training("BERT-base", precision="amp_fp16", specs=["A100 80GB", "Gaudi 3"])
    a100, gaudi3 = fp16.options
    assert a100.spec.peak("fp16") == a100.spec.peak("bf16") and a100.published.value == 271.2
    assert "fp16" not in gaudi3.spec.peak_flops and gaudi3.published is None
    assert gaudi3.published_note == "no published measurement at fp16 (only BF16)"
    (fp32,) = gl.plan_training("BERT-base", precision="fp32", specs=["A100 80GB"]).options
    assert fp32.published is None
    assert fp32.published_note == "no published measurement at fp32 (only BF16)"
    assert not any(n.startswith("PUBLISHED") for n in gl.plan_training(
        "BERT-base", precision="fp32", specs=["A100 80GB"]).notes)  # fmt: skip


def test_a_device_option_refuses_a_published_time_without_its_measurement():
    from gpulab.costmodels.chooser import DeviceOption

    spec = gl.get_spec("A100 80GB")
    with pytest.raises(ValueError, match="published_epoch_s=12.0 needs a published measurement"):
        DeviceOption(spec, True, 10.0, None, "", None, 12.0)
    with pytest.raises(TypeError, match="published='271.2'"):
        DeviceOption(spec, True, 10.0, None, "", "271.2", 12.0)


def test_the_cost_model_takes_cnn_activations_as_given_and_the_lab_function_measures_them():
    """The chooser's arithmetic (a cost model) does not build networks, which live a layer
    above it; gl.plan_training measures a named CNN's activations and hands them down."""
    import inspect

    from gpulab.costmodels.chooser import estimate_training_plan
    from gpulab.labkit.planning import cnn_activation_bytes_per_image

    assert inspect.signature(gl.plan_training) == inspect.signature(estimate_training_plan)
    bare = estimate_training_plan("ResNet-50", batch_size=4, image_size=64, specs=["T4"])
    assert bare.memory.activations_bytes == 0 and "Activations not included" in bare.notes[0]
    measured = gl.plan_training("ResNet-50", batch_size=4, image_size=64, specs=["T4"])
    per_image = cnn_activation_bytes_per_image("ResNet-50", 64, "amp_bf16")
    assert measured.memory.activations_bytes == 4 * per_image > 0
    assert measured.notes == ("Activations measured on a real forward pass (gl.activation_bytes).",)
    handed_down = estimate_training_plan(
        "ResNet-50", batch_size=4, image_size=64, specs=["T4"], activations_bytes=4 * per_image
    )
    assert handed_down.memory == measured.memory and handed_down.options == measured.options
    # given activations are used as they are, by both
    given = gl.plan_training("ResNet-50", batch_size=4, specs=["T4"], activations_bytes=123)
    assert given.memory.activations_bytes == 123 and given.notes == ()
