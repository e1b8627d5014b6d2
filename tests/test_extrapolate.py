"""Time-to-train predictions: the arithmetic, checked against values worked out by hand."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gpulab.extrapolate import (  # noqa: E402
    TrainingJob,
    format_duration,
    plot_extrapolation,
    resnet_training_job,
    time_to_train,
    time_to_train_data_parallel,
    training_dtype,
    transformer_training_job,
)


def test_resnet50_imagenet_90_epochs():
    # 2 x 4.09e9 (torchvision ResNet-50) x 3 x 1,281,167 x 90 = 2.8e18 FLOPs
    job = resnet_training_job(8.18e9)
    assert job.flops == pytest.approx(3 * 8.18e9 * 1_281_167 * 90)
    assert job.flops == pytest.approx(2.830e18, rel=1e-3)
    assert "1,281,167 images" in job.formula and "90 epochs" in job.formula
    short = resnet_training_job(1e9, images=1000, epochs=2, backward_factor=1)
    assert short.flops == 2 * 1e9 * 1000 * 2


def test_six_n_d():
    # BERT-base: 85.6 M non-embedding parameters, 1M steps x 256 x 512 tokens
    job = transformer_training_job(85_645_056, 1e6 * 256 * 512)
    assert job.flops == pytest.approx(6.735e19, rel=1e-3)
    # GPT-3: 6 x 175e9 x 300e9 = 3.15e23 (brown2020gpt3 Table D.1 reports 3.14e23)
    assert transformer_training_job(175e9, 300e9).flops == pytest.approx(3.15e23)


def test_time_to_train_by_hand():
    job = resnet_training_job(8.18e9)
    a100 = time_to_train(job, "A100 80GB", utilisation=0.5)
    # 2.830e18 / (312e12 x 0.5) = 18,143 s = 5.04 h
    assert a100.seconds == pytest.approx(2.830e18 / 156e12, rel=1e-3)
    assert a100.hours == pytest.approx(5.04, abs=0.01)
    assert (a100.dtype, a100.n_devices) == ("bf16", 1)
    eight = time_to_train(job, "A100 80GB", utilisation=0.5, n_devices=8)
    assert eight.seconds == pytest.approx(a100.seconds / 8)
    xeon = time_to_train(job, "Xeon 8380", utilisation=0.5)
    assert xeon.dtype == "fp32"
    assert xeon.days == pytest.approx(2.830e18 / (5.89e12 * 0.5) / 86400, rel=1e-3)
    fp32 = time_to_train(job, "A100 80GB", utilisation=0.5, dtype="fp32")
    assert fp32.seconds / a100.seconds == pytest.approx(312 / 19.5)


def test_prediction_prints_as_a_prediction_with_its_inputs():
    job = resnet_training_job(8.18e9, name="ResNet-50")
    text = str(time_to_train(job, "H100 SXM", utilisation=0.4, assumptions=["fp16 weights"]))
    assert text.startswith("PREDICTION (not measured): ResNet-50 on 1 × H100 SXM5 80GB (bf16)")
    assert "989.5 TFLOP/s peak × 40% utilisation" in text
    assert "https://www.nvidia.com/en-us/data-center/h100/" in text
    assert "assumption: fp16 weights" in text


def test_data_parallel_adds_the_ring_all_reduce():
    job = transformer_training_job(85_645_056, 1e6 * 256 * 512)
    grad_bytes = 4 * 109_482_240
    t = time_to_train_data_parallel(
        job,
        "A100 80GB",
        8,
        utilisation=0.4,
        steps=1_000_000,
        grad_bytes=grad_bytes,
        link="NVLink 3",
    )
    compute = 6.735e19 / 1e6 / (8 * 312e12 * 0.4)  # 0.06745 s per step
    comm = 2 * 7 / 8 * grad_bytes / 300e9  # 2.554 ms per step (ring)
    assert t.seconds == pytest.approx(1e6 * (compute + comm), rel=1e-3)
    assert t.hours == pytest.approx(19.45, abs=0.05)
    assert t.comm_fraction == pytest.approx(comm / (compute + comm), rel=1e-3)
    assert "NVLink 3" in str(t) and t.link.startswith("NVLink 3")
    one = time_to_train_data_parallel(
        job,
        "A100 80GB",
        1,
        utilisation=0.4,
        steps=1_000_000,
        grad_bytes=grad_bytes,
        link="NVLink 3",
    )
    assert one.seconds == pytest.approx(time_to_train(job, "A100 80GB", utilisation=0.4).seconds)


def test_bad_inputs_are_named():
    job = TrainingJob("job", 1e18, "given")
    with pytest.raises(ValueError, match="utilisation=1.5"):
        time_to_train(job, "A100 80GB", utilisation=1.5)
    with pytest.raises(ValueError, match="utilisation=0"):
        time_to_train(job, "A100 80GB", utilisation=0)
    with pytest.raises(ValueError, match="n_devices=0"):
        time_to_train(job, "A100 80GB", utilisation=0.5, n_devices=0)
    with pytest.raises(ValueError, match="epochs=0"):
        resnet_training_job(8e9, epochs=0)
    with pytest.raises(ValueError, match="n_tokens=-1"):
        transformer_training_job(1e6, -1)
    with pytest.raises(ValueError, match="no bf16 figure"):
        time_to_train(job, "K80", utilisation=0.5, dtype="bf16")
    assert training_dtype("T4") == "fp16"


def test_format_duration():
    assert format_duration(5) == "5 s"
    assert format_duration(13.466 * 60) == "13.5 min"
    assert format_duration(4 * 86400) == "4.0 days"
    with pytest.raises(ValueError, match="seconds="):
        format_duration(-1)


def test_eager_cost_counts_flops_and_traffic():
    from gpulab.flops import eager_cost

    x = torch.ones(1000)
    flops, nbytes = eager_cost(lambda: x + x)
    assert flops == 0 and nbytes == 3 * 4000  # two reads and one write of 4 kB


def test_extrapolation_figure_styles_measured_predicted_and_published():
    fig, ax = plt.subplots()
    plot_extrapolation(
        {"small run here": 30.0},
        {"A100": 3600.0, "H100": 1800.0},
        ["utilisation 40%", "3 x forward FLOPs"],
        published={"MLPerf 8 x H100": 808.0},
        ax=ax,
    )
    bars = ax.patches
    assert len(bars) == 4
    assert [bool(b.get_hatch()) for b in bars] == [False, True, True, False]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["small run here", "A100", "H100", "MLPerf 8 x H100"]
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "utilisation 40%" in texts and "60.0 min" in texts and "13.5 min" in texts
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("PREDICTION" in t for t in legend)
    with pytest.raises(ValueError, match="'A100'"):
        plot_extrapolation({}, {"A100": 0.0}, [])
    plt.close("all")
