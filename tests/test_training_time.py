"""The one time-to-train model: its rules checked by hand, and one job through every door."""

import math

import pytest

import gpulab as gl

BERT_BASE_TOTAL, BERT_BASE_EMBEDDINGS = 109_482_240, 23_837_184  # gl.networks' exact count
D_BERT = 1_000_000 * 256 * 512  # Devlin et al.: 1M steps of 256 sequences of 512 tokens


def test_flops_per_token_is_six_n_plus_the_attention_term():
    assert gl.costmodels.training_time.training_flops_per_token(1e6) == 6e6
    # BERT-base shape: 6 x 12 layers x 512 tokens x 768 = 28.3 M FLOPs per token on top
    per_token = gl.costmodels.training_time.training_flops_per_token(
        85_645_056, layers=12, hidden=768, seq_len=512
    )
    assert per_token == 6 * 85_645_056 + 28_311_552
    with pytest.raises(ValueError, match=r"layers=12 needs hidden, seq_len too"):
        gl.costmodels.training_time.training_flops_per_token(1e6, layers=12)


@pytest.mark.parametrize(
    "n, layers, heads, head_size, seq_len",
    [(85_645_056, 12, 12, 64, 512), (6.7e9, 32, 32, 128, 4096), (540e9, 118, 48, 256, 2048)],
)
def test_the_two_attention_counts_are_the_published_formulas(n, layers, heads, head_size, seq_len):
    per_token = gl.costmodels.training_time.training_flops_per_token
    width = heads * head_size
    shape = {"layers": layers, "hidden": width, "seq_len": seq_len}
    # Kaplan et al. 2020, Table 1: C_forward = 2N + 2 n_layer n_ctx d_attn; training is 3x that
    kaplan = 3 * (2 * n + 2 * layers * seq_len * width)
    assert per_token(n, **shape) == per_token(n, **shape, attention="kaplan")
    assert per_token(n, **shape) == pytest.approx(kaplan)
    # PaLM (Chowdhery et al. 2022, Appendix B): 6N + 12LHQT per token
    palm = 6 * n + 12 * layers * heads * head_size * seq_len
    assert per_token(n, **shape, attention="palm") == pytest.approx(palm)
    # llm-foundry's collect_results.py, per sequence: 3 * (2N * s) + 3 * (L * 2 * 2 * d * s^2)
    foundry = (3 * 2 * n * seq_len + 3 * layers * 2 * 2 * width * seq_len**2) / seq_len
    assert per_token(n, **shape, attention="palm") == pytest.approx(foundry)
    # the two differ by the attention term alone: PaLM's is twice Kaplan's
    assert per_token(n, **shape, attention="palm") - 6 * n == pytest.approx(2 * (kaplan - 6 * n))
    assert per_token(n, attention="palm") == per_token(n) == 6 * n  # no shape, no term


def test_palms_published_mfu_needs_palms_count():
    """PaLM 540B: 238.3K tokens/s on 6,144 TPU v4 chips of 275 TFLOP/s, 45.7% MFU without the
    attention term and 46.2% with it (Chowdhery et al. 2022, Appendix B); Kaplan's count of
    the same run gives 45.9%, which is not the published figure."""
    per_token = gl.costmodels.training_time.training_flops_per_token
    peak = gl.get_spec("TPU v4").peak("bf16")
    shape = {"layers": 118, "hidden": 48 * 256, "seq_len": 2048}

    def mfu(flops_per_token):
        return round(gl.mfu(238.3e3 * flops_per_token, 1.0, peak, n_gpus=6144), 3)

    assert mfu(per_token(540e9)) == 0.457
    assert mfu(per_token(540e9, **shape, attention="palm")) == 0.462
    assert mfu(per_token(540e9, **shape, attention="kaplan")) == 0.459


def test_the_attention_count_is_a_named_choice():
    per_token = gl.costmodels.training_time.training_flops_per_token
    known = r"attention='megatron' is not known; use one of 'kaplan', 'palm'"
    with pytest.raises(ValueError, match=known):
        per_token(1e6, layers=2, hidden=64, seq_len=128, attention="megatron")
    with pytest.raises(TypeError, match="attention=12"):
        per_token(1e6, attention=12)
    with pytest.raises(ValueError, match="attention='Palm'"):
        gl.training_flops_per_sample("BERT-base", attention="Palm")
    palm = gl.transformer_training_job(1e6, 1e9, layers=2, hidden=64, seq_len=128, attention="palm")
    assert palm.flops == 1e9 * (6 * 1e6 + 12 * 2 * 128 * 64)
    assert "+ 12 × 2 layers × 128 tokens × 64" in palm.formula
    kaplan = gl.transformer_training_job(1e6, 1e9, layers=2, hidden=64, seq_len=128)
    assert "+ 6 × 2 layers × 128 tokens × 64" in kaplan.formula
    bert = gl.get_model("BERT-base")
    assert gl.training_flops_per_sample(bert, attention="palm") == pytest.approx(
        512 * per_token(bert.n_params, layers=12, hidden=768, seq_len=512, attention="palm")
    )


def test_flops_per_sample_uses_the_same_rule_for_every_model():
    bert = gl.get_model("BERT-base")
    per_token = gl.costmodels.training_time.training_flops_per_token(
        110e6, layers=12, hidden=768, seq_len=512
    )
    assert gl.training_flops_per_sample("bert base") == pytest.approx(512 * per_token)
    assert gl.training_flops_per_sample(bert) == gl.training_flops_per_sample("BERT-base")
    # A shorter sequence shrinks the attention term too.
    short = gl.costmodels.training_time.training_flops_per_token(
        110e6, layers=12, hidden=768, seq_len=128
    )
    assert gl.training_flops_per_sample(bert, seq_len=128) == pytest.approx(128 * short)
    resnet = gl.get_model("ResNet-50")
    assert gl.training_flops_per_sample(resnet) == pytest.approx(3 * 2 * 4.09e9)
    assert gl.training_flops_per_sample(resnet, image_size=112) == pytest.approx(6 * 4.09e9 / 4)
    assert gl.training_flops_per_sample(10**6, seq_len=10) == 6e7


def test_jobs_count_what_the_rules_say():
    # ResNet-50 x ImageNet-1k x 90 epochs: 3 x 8.18e9 x 1,281,167 x 90 = 2.83e18
    job = gl.resnet_training_job(8.18e9, batch_size=1024, n_params=25_557_032)
    assert job.flops == pytest.approx(3 * 8.18e9 * 1_281_167 * 90)
    assert job.steps == 90 * 1252  # ceil(1,281,167 / 1024) = 1252 steps per epoch
    assert "1,281,167 images" in job.formula and "90 epochs" in job.formula
    short = gl.resnet_training_job(1e9, images=1000, epochs=2, backward_factor=1)
    assert short.flops == 2 * 1e9 * 1000 * 2 and short.steps is None
    # GPT-3 by 6ND: 6 x 175e9 x 300e9 = 3.15e23 (Brown et al. publish 3.14e23)
    assert gl.transformer_training_job(175e9, 300e9).flops == pytest.approx(3.15e23)
    # A named model brings its shape: attention term included.
    named = gl.transformer_training_job("BERT-base", D_BERT, steps=1_000_000)
    assert named.flops == pytest.approx(D_BERT * gl.training_flops_per_sample("BERT-base") / 512)
    assert (named.n_params, named.steps) == (110_000_000, 1_000_000)
    # Embedding tables are lookups: left out of 6N, but their gradients still count.
    bert = gl.transformer_training_job(
        BERT_BASE_TOTAL, D_BERT, embedding_params=BERT_BASE_EMBEDDINGS,
        layers=12, hidden=768, seq_len=512,
    )  # fmt: skip
    n = BERT_BASE_TOTAL - BERT_BASE_EMBEDDINGS
    assert n == 85_645_056
    assert bert.flops == pytest.approx(D_BERT * (6 * n + 6 * 12 * 512 * 768))
    assert f"{bert.flops:.4g}" == "7.106e+19"
    assert bert.n_params == BERT_BASE_TOTAL
    assert "6 × 12 layers × 512 tokens × 768" in bert.formula


def test_precision_sets_the_peak_and_the_gradient_width():
    assert gl.costmodels.training_time.training_precision("A100 80GB") == "amp_bf16"
    assert gl.costmodels.training_time.training_precision("V100") == "amp_fp16"
    assert gl.costmodels.training_time.training_precision("Xeon 8380") == "fp32"
    with pytest.raises(ValueError, match="no FP32, FP16 or BF16 peak"):
        gl.costmodels.training_time.training_precision("M2 Max")
    assert [gl.gradient_bytes(p) for p in gl.costmodels.training_time.TIME_PRECISIONS] == [
        4,
        4,
        2,
        2,
        4,
        4,
    ]
    # The memory model uses the same widths.
    for precision in gl.TRAINING_PRECISIONS:
        assert gl.gradient_bytes(precision) == gl.bytes_per_param(precision)["gradients"]


def test_time_to_train_by_hand():
    job = gl.resnet_training_job(8.18e9)
    a100 = gl.time_to_train(job, "A100 80GB", utilisation=0.5)
    # 2.830e18 / (312e12 x 0.5) = 18,143 s = 5.04 h
    assert a100.time_s == pytest.approx(2.830e18 / 156e12, rel=1e-3)
    assert a100.hours == pytest.approx(5.04, abs=0.01)
    assert (a100.precision, a100.n_gpus, a100.spec.name) == ("amp_bf16", 1, "A100 80GB SXM4")
    eight = gl.time_to_train(job, "A100 80GB", utilisation=0.5, n_gpus=8)
    assert eight.time_s == pytest.approx(a100.time_s / 8)
    assert "GPUs scale perfectly (no communication)" in eight.assumptions
    xeon = gl.time_to_train(job, "Xeon 8380", utilisation=0.5)
    assert xeon.precision == "fp32"
    assert xeon.days == pytest.approx(2.830e18 / (5.89e12 * 0.5) / 86400, rel=1e-3)
    fp32 = gl.time_to_train(job, "A100 80GB", utilisation=0.5, precision="fp32")
    assert fp32.time_s / a100.time_s == pytest.approx(312 / 19.5)
    tf32 = gl.time_to_train(job, "A100 80GB", utilisation=0.5, precision="tf32")
    assert tf32.time_s / a100.time_s == pytest.approx(312 / 156)
    default = gl.time_to_train(job, "A100 80GB")
    assert default.utilisation == gl.DEFAULT_UTILISATION == 0.4


def test_prediction_prints_as_a_prediction_with_its_inputs():
    job = gl.resnet_training_job(8.18e9, name="ResNet-50")
    text = str(gl.time_to_train(job, "H100 SXM", utilisation=0.4, assumptions=["my note"]))
    assert text.startswith(
        "PREDICTION (not measured): ResNet-50 on 1 × H100 SXM5 80GB (amp_bf16): 2.0 h"
    )
    assert "989.5 TFLOP/s peak × 40% utilisation" in text
    assert "https://www.nvidia.com/en-us/data-center/h100/" in text
    assert "assumption: utilisation 40% of the bf16 peak" in text
    assert "assumption: my note" in text


def test_data_parallel_adds_the_ring_all_reduce_of_the_gradients():
    job = gl.transformer_training_job(
        BERT_BASE_TOTAL, D_BERT, embedding_params=BERT_BASE_EMBEDDINGS,
        layers=12, hidden=768, seq_len=512, steps=1_000_000,
    )  # fmt: skip
    t = gl.time_to_train(job, "A100 80GB", n_gpus=8, utilisation=0.4, link="NVLink 3")
    compute = job.flops / 1e6 / (8 * 312e12 * 0.4)  # 0.0712 s per step
    grad_bytes = 4 * BERT_BASE_TOTAL  # amp_bf16 keeps FP32 gradients
    comm = 2 * 7 / 8 * grad_bytes / 300e9  # 2.554 ms per step (ring, 300 GB/s each way)
    assert t.time_s == pytest.approx(1e6 * (compute + comm), rel=1e-3)
    assert t.comm_share == pytest.approx(comm / (compute + comm), rel=1e-3)
    assert t.step.compute_s == pytest.approx(compute)
    assert "NVLink 3" in str(t) and t.link.startswith("NVLink 3")
    assert "438 MB of amp_bf16 gradients" in str(t)
    # Pure bf16 training sends 2-byte gradients: half the all-reduce.
    half = gl.time_to_train(job, "A100 80GB", n_gpus=8, precision="bf16", link="NVLink 3")
    assert half.step.comm_s == pytest.approx(t.step.comm_s / 2)
    # Overlap hides communication behind compute.
    hidden = gl.time_to_train(job, "A100 80GB", n_gpus=8, link="NVLink 3", overlap=1.0)
    assert hidden.time_s == pytest.approx(1e6 * compute)
    # One GPU has nothing to all-reduce: the same as no link at all.
    one = gl.time_to_train(job, "A100 80GB", link="NVLink 3")
    assert one.time_s == pytest.approx(gl.time_to_train(job, "A100 80GB").time_s, rel=1e-12)


def test_a_link_needs_the_steps_and_the_parameter_count():
    job = gl.costmodels.training_time.TrainingJob("given", 1e18, "given")
    with pytest.raises(ValueError, match=r"link='NVLink 3' needs the job's steps and n_params"):
        gl.time_to_train(job, "A100 80GB", n_gpus=8, link="NVLink 3")


def test_one_job_gets_the_same_seconds_through_every_entry_point():
    # BERT-large, one epoch of 100,000 sequences of 512 tokens, on A100s, every default.
    samples, seq, spec = 100_000, 512, "A100 80GB"
    per_sample = gl.training_flops_per_sample("BERT-large")
    plan = gl.plan_training("BERT-large", samples_per_epoch=samples, specs=[spec])
    job = gl.transformer_training_job("BERT-large", samples * seq, steps=samples // 32)
    by_hand = samples * per_sample / (312e12 * gl.DEFAULT_UTILISATION)
    one_gpu = {
        "plan_training": plan.options[0].epoch_s,
        "epoch_seconds": gl.epoch_seconds(samples * per_sample, spec),
        "time_to_train": gl.time_to_train(job, spec).time_s,
        "time_to_train, one GPU on a link": gl.time_to_train(job, spec, link="NVLink 3").time_s,
        "scaling_estimate": gl.scaling_estimate(
            "BERT-large", spec, 1, "NVLink 3", tokens_per_gpu=samples * seq
        ).step.total_s,
    }
    for door, seconds in one_gpu.items():
        assert seconds == pytest.approx(by_hand, rel=1e-12), door
    # Eight GPUs on a link: time_to_train's job against scaling_estimate's step, x steps.
    t = gl.time_to_train(job, spec, n_gpus=8, link="NVLink 3")
    tokens_per_gpu = samples * seq / job.steps / 8
    step = gl.scaling_estimate("BERT-large", spec, 8, "NVLink 3", tokens_per_gpu=tokens_per_gpu)
    assert step.step.total_s * job.steps == pytest.approx(t.time_s, rel=1e-12)
    assert step.step.comm_s == pytest.approx(t.step.comm_s, rel=1e-12)


def test_scaling_estimate_by_hand():
    est = gl.scaling_estimate(
        1e9, "A100 80GB", 16, "NVLink 3", tokens_per_gpu=1000, utilisation=0.5, precision="bf16"
    )
    assert est.step.compute_s == pytest.approx(6e12 / 156e12)  # 6 x 1e9 x 1000 at 156 TFLOP/s
    assert est.step.comm_s == pytest.approx(2 * 15 / 16 * 2e9 / 300e9)  # 2 GB of bf16 grads
    text = est.summary()
    assert text.startswith("PREDICTION for 1B parameters on 16 x A100 80GB SXM4")
    assert "2-byte gradients (bf16)" in text and "scaling efficiency" in text
    default = gl.scaling_estimate(1e9, "A100 80GB", 16, "NVLink 3", tokens_per_gpu=1000)
    assert default.prediction.precision == "amp_bf16"
    assert default.step.comm_s == pytest.approx(2 * est.step.comm_s)  # FP32 gradients


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda job: gl.time_to_train(job, "A100 80GB", utilisation=1.5),
            ValueError,
            "utilisation=1.5",
        ),
        (
            lambda job: gl.time_to_train(job, "A100 80GB", utilisation=0),
            ValueError,
            "utilisation=0",
        ),
        (
            lambda job: gl.time_to_train(job, "A100 80GB", utilisation=math.nan),
            ValueError,
            "utilisation=nan",
        ),
        (
            lambda job: gl.time_to_train(job, "A100 80GB", utilisation="0.4"),
            TypeError,
            "utilisation='0.4'",
        ),
        (lambda job: gl.time_to_train(job, "A100 80GB", n_gpus=0), ValueError, "n_gpus=0"),
        (lambda job: gl.time_to_train(job, "A100 80GB", n_gpus=True), TypeError, "n_gpus=True"),
        (lambda job: gl.time_to_train(job, "A100 80GB", n_gpus=2.0), TypeError, "n_gpus=2.0"),
        (
            lambda job: gl.time_to_train(job, "A100 80GB", precision="fp64"),
            ValueError,
            "precision='fp64'",
        ),
        (
            lambda job: gl.time_to_train(job, "A100 80GB", overlap=math.inf),
            ValueError,
            "overlap=inf",
        ),
        (
            lambda job: gl.time_to_train(job, "K80", precision="amp_bf16"),
            ValueError,
            "no bf16 figure",
        ),
        (
            lambda job: gl.time_to_train("job", "A100 80GB"),
            TypeError,
            "job='job' must be a TrainingJob",
        ),
        (lambda job: gl.time_to_train(job, 3), TypeError, "spec=3 must be a registry name"),
        (
            lambda job: gl.costmodels.training_time.TrainingJob("j", math.nan, "f"),
            ValueError,
            "flops=nan",
        ),
        (
            lambda job: gl.costmodels.training_time.TrainingJob("j", 1.0, "f", steps=0),
            ValueError,
            "steps=0",
        ),
        (lambda job: gl.resnet_training_job(8e9, epochs=0), ValueError, "epochs=0"),
        (lambda job: gl.resnet_training_job("8e9"), TypeError, "forward_flops_per_image='8e9'"),
        (lambda job: gl.transformer_training_job(1e6, -1), ValueError, "n_tokens=-1"),
        (
            lambda job: gl.transformer_training_job(1e6, 1e9, embedding_params=1e6),
            ValueError,
            "embedding",
        ),
        (
            lambda job: gl.transformer_training_job("ResNet-50", 1e9),
            ValueError,
            "is not a transformer",
        ),
        (lambda job: gl.epoch_seconds(-1, "T4"), ValueError, "flops=-1"),
        (lambda job: gl.epoch_seconds(math.inf, "T4"), ValueError, "flops=inf"),
        (
            lambda job: gl.scaling_estimate(1e9, "H100 SXM", 8, "NVLink 4", utilisation=2),
            ValueError,
            "utilisation=2",
        ),
        (lambda job: gl.scaling_estimate(True, "H100 SXM", 8, "NVLink 4"), TypeError, "model=True"),
        (lambda job: gl.scaling_estimate(1e9, "H100 SXM", 8, 4), TypeError, "link=4"),
        (
            lambda job: gl.scaling_estimate(1e9, "H100 SXM", 8, "Nope"),
            ValueError,
            "link=.Nope.: no",
        ),
        (lambda job: gl.training_flops_per_sample(1e6, image_size=-1), ValueError, "image_size=-1"),
        (lambda job: gl.resnet_training_job(8e9, name=3), TypeError, "name=3 must be a str"),
        (lambda job: gl.time_to_train(job, "T4", assumptions=[1]), TypeError, r"assumptions=\[1\]"),
        (lambda job: gl.training_flops_per_sample("BERT-huge"), ValueError, "model='BERT-huge'"),
        (lambda job: gl.gradient_bytes("fp8"), ValueError, "precision='fp8'"),
        # model= takes a name or a parameter count: an unknown name or a count that is not
        # above 0 is a bad value; anything else is a wrong type.
        (lambda job: gl.training_flops_per_sample(-1), ValueError, "model=-1"),
        (lambda job: gl.training_flops_per_sample(math.nan), ValueError, "model=nan"),
        (lambda job: gl.training_flops_per_sample(None), TypeError, "model=None"),
        (lambda job: gl.transformer_training_job(-1, 1e9), ValueError, "model=-1"),
        (lambda job: gl.transformer_training_job("GPT-9", 1e9), ValueError, "model='GPT-9'"),
        (lambda job: gl.transformer_training_job(["BERT-base"], 1e9), TypeError, "model="),
        (lambda job: gl.scaling_estimate(0, "H100 SXM", 8, "NVLink 4"), ValueError, "model=0"),
        (lambda job: gl.scaling_estimate("GPT-9", "H100 SXM", 8, "NVLink 4"), ValueError, "model="),
        (
            lambda job: gl.scaling_estimate("ResNet-50", "H100 SXM", 8, "NVLink 4"),
            ValueError,
            "model='ResNet-50' is not a transformer",
        ),
        (lambda job: gl.costmodels.training_time.TimeToTrain(42, *[None] * 6), TypeError, "job=42"),
        (
            lambda job: gl.costmodels.training_time.ScalingEstimate("m", 1.0, 42),
            TypeError,
            "prediction=42",
        ),
    ],
)
def test_bad_inputs_are_refused_with_the_parameter_named(call, error, message):
    job = gl.costmodels.training_time.TrainingJob("job", 1e18, "given")
    with pytest.raises(error, match=message):
        call(job)


def test_unknown_devices_raise_value_errors_with_close_matches():
    job = gl.costmodels.training_time.TrainingJob("job", 1e18, "given")
    for call in (
        lambda: gl.time_to_train(job, "A100 90GB"),
        lambda: gl.epoch_seconds(1e12, "A100 90GB"),
        lambda: gl.scaling_estimate(1e9, "A100 90GB", 8, "NVLink 3"),
        lambda: gl.costmodels.training_time.training_precision("A100 90GB"),
    ):
        with pytest.raises(ValueError, match=r"spec='A100 90GB'.*close names: .*A100"):
            call()


def test_durations_print_with_the_one_formatter():
    job = gl.costmodels.training_time.TrainingJob("job", 312e12 * 0.4 * 13.466 * 60, "given")
    t = gl.time_to_train(job, "A100 80GB")
    assert t.time_s == pytest.approx(13.466 * 60)
    assert f": {gl.format_duration(t.time_s)}\n" in str(t) and "13.5 min" in str(t)
    assert gl.format_duration(5) == "5 s" and gl.format_duration(4 * 86400) == "4.0 days"
    with pytest.raises(ValueError, match="seconds=-1"):
        gl.format_duration(-1)


def test_an_empty_job_name_is_refused_not_replaced_by_the_default():
    with pytest.raises(ValueError, match=r"^name='' must be a name for the job"):
        gl.resnet_training_job(4.1e9, name="")
    with pytest.raises(ValueError, match=r"^name='' must be a name for the job"):
        gl.transformer_training_job(1e8, 1e9, layers=2, hidden=64, seq_len=128, name="")
    default = gl.resnet_training_job(4.1e9, images=10, epochs=1).name
    assert default == "ResNet × 10 images × 1 epochs"


def test_a_scaling_estimate_needs_a_link_and_a_step():
    with pytest.raises(TypeError, match=r"^link=None must be an Interconnect"):
        gl.scaling_estimate(7e9, "A100 80GB", 8, None)
    job = gl.transformer_training_job(1e8, 1e9, layers=2, hidden=64, seq_len=128, steps=10)
    no_link = gl.time_to_train(job, "A100 80GB", n_gpus=8)
    with pytest.raises(ValueError, match=r"^prediction has no step"):
        gl.costmodels.training_time.ScalingEstimate("x", 1024.0, no_link)
