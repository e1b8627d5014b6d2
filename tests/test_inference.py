"""The inference cost models: KV cache, bytes per token, decode bound, TTFT and TPOT."""

import contextlib
import io
from pathlib import Path

import nbformat
import pytest
import torch

import gpulab as gl
from gpulab.costmodels.inference import greedy_agreement


def test_kv_cache_formula_counts_every_factor():
    base = dict(layers=3, heads=5, head_dim=7, seq_len=11, batch_size=13, precision="fp32")
    assert gl.kv_cache_bytes(**base) == 3 * 2 * 5 * 7 * 11 * 13 * 4
    for name in ("layers", "heads", "head_dim", "seq_len", "batch_size"):
        doubled = {**base, name: 2 * base[name]}
        assert gl.kv_cache_bytes(**doubled) == 2 * gl.kv_cache_bytes(**base), name
    assert gl.kv_cache_bytes(**{**base, "precision": "bf16"}) * 2 == gl.kv_cache_bytes(**base)
    assert gl.kv_cache_bytes(**{**base, "precision": "fp8"}) * 4 == gl.kv_cache_bytes(**base)


def test_llama_2_7b_cache_is_half_a_mebibyte_per_token():
    # 32 layers x 2 x 4096 (32 heads x 128) x 2 bytes = 512 KiB per token in 16 bits
    per_token = gl.model_kv_cache_bytes("Llama-2-7B", seq_len=1)
    assert per_token == 512 * 1024
    assert gl.model_kv_cache_bytes("llama 2 7b") == 4096 * per_token  # default: its context
    four = gl.model_kv_cache_bytes("Llama-2-7B", batch_size=4, precision="fp32")
    assert four == 8 * 4096 * per_token


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(layers=0), ValueError, "layers=0"),
        (dict(heads=-1), ValueError, "heads=-1"),
        (dict(head_dim=2.5), TypeError, "head_dim=2.5"),
        (dict(seq_len=True), TypeError, "seq_len=True"),
        (dict(batch_size=float("nan")), TypeError, "batch_size=nan"),
        (dict(precision="int4"), ValueError, "precision='int4'"),
    ],
)
def test_kv_cache_refuses_bad_input(kwargs, error, match):
    base = dict(layers=2, heads=2, head_dim=2, seq_len=2)
    with pytest.raises(error, match=match):
        gl.kv_cache_bytes(**{**base, **kwargs})


def test_named_model_must_be_a_transformer():
    with pytest.raises(ValueError, match="ResNet-50.*no KV cache"):
        gl.model_kv_cache_bytes("ResNet-50")
    with pytest.raises(ValueError, match="name='GPT-5'"):
        gl.model_kv_cache_bytes("GPT-5")


def test_weight_bytes_follow_the_bits():
    assert gl.weight_bytes(1000, "fp32") == 4000
    assert gl.weight_bytes(1000, "int8") == 1000
    assert gl.weight_bytes(1000, "int4") == 500
    with pytest.raises(ValueError, match="weight_format='int2'"):
        gl.weight_bytes(1000, "int2")


def test_decode_is_memory_bound_and_scales_with_bytes_per_weight():
    a100 = gl.get_spec("A100 80GB")
    rates = {
        f: gl.decode_estimate(a100, 6.7e9, weight_format=f).tokens_per_s
        for f in ("bf16", "int8", "int4")
    }
    assert rates["bf16"] == pytest.approx(a100.memory_bandwidth / 13.4e9)
    assert rates["int8"] == pytest.approx(2 * rates["bf16"])
    assert rates["int4"] == pytest.approx(4 * rates["bf16"])
    assert gl.decode_estimate(a100, 6.7e9).bound == "memory"


def test_batching_shares_the_weights_until_compute_binds():
    one = gl.decode_estimate("H100 SXM", 6.7e9)
    eight = gl.decode_estimate("H100 SXM", 6.7e9, batch_size=8)
    assert eight.tokens_per_s == pytest.approx(8 * one.tokens_per_s)  # still memory-bound
    assert eight.tokens_per_s_per_sequence == pytest.approx(one.tokens_per_s_per_sequence)
    huge = gl.decode_estimate("H100 SXM", 6.7e9, batch_size=4096)
    assert huge.bound == "compute" and huge.tokens_per_s < 4096 * one.tokens_per_s


def test_kv_cache_reads_slow_decoding():
    kv = gl.model_kv_cache_bytes("Llama-2-7B")  # 2 GiB at 4096 tokens
    plain = gl.decode_estimate("A100 80GB", 6.7e9)
    with_kv = gl.decode_estimate("A100 80GB", 6.7e9, kv_bytes=kv)
    assert with_kv.n_bytes == plain.n_bytes + kv
    assert with_kv.step_s / plain.step_s == pytest.approx((13.4e9 + kv) / 13.4e9)
    assert "PREDICTION" in str(with_kv)


def test_decode_estimate_refuses_bad_input():
    with pytest.raises(ValueError, match="n_params=0"):
        gl.decode_estimate("T4", 0)
    with pytest.raises(ValueError, match="spec="):
        gl.decode_estimate("Z9000", 1e9)
    with pytest.raises(ValueError, match="kv_bytes=-1"):
        gl.decode_estimate("T4", 1e9, kv_bytes=-1)


def test_generation_timing():
    t = gl.generation_timing(1.0, [1.3, 1.4, 1.5, 1.6, 1.7])
    assert t.ttft_s == pytest.approx(0.3)
    assert t.tpot_s == pytest.approx(0.1)
    assert t.n_tokens == 5
    assert t.total_s == pytest.approx(0.7)
    assert t.decode_tokens_per_s == pytest.approx(10)
    single = gl.generation_timing(0.0, [0.25])
    assert single.tpot_s == 0 and single.total_s == 0.25
    with pytest.raises(ValueError, match="n_tokens=1"):
        _ = single.decode_tokens_per_s
    assert "TTFT" in str(t) and "TPOT" in str(t)


@pytest.mark.parametrize(
    "times, error, match",
    [
        ([], ValueError, "empty"),
        ([0.5, 0.4], ValueError, r"token_times_s\[1\]=0.4"),
        ([-1.0], ValueError, r"token_times_s\[0\]"),
        ("0.5", TypeError, "token_times_s='0.5'"),
        (0.5, TypeError, "token_times_s=0.5"),
        ([0.5, "0.6"], TypeError, r"token_times_s\[1\]='0.6'"),
        ([0.5, float("nan")], ValueError, r"token_times_s\[1\]=nan"),
    ],
)
def test_generation_timing_refuses_bad_times(times, error, match):
    with pytest.raises(error, match=match):
        gl.generation_timing(0.0, times)


def test_generation_timing_names_a_late_start():
    with pytest.raises(ValueError, match="token_times_s.0.=0.5 is earlier than start_s=2.0"):
        gl.generation_timing(2.0, [0.5, 0.6])


def test_generation_timing_refuses_tokens_at_one_clock_reading():
    with pytest.raises(ValueError, match="3 tokens at one clock reading"):
        gl.generation_timing(0.0, [0.5, 0.5, 0.5])


@pytest.mark.parametrize(
    "record, match",
    [
        ((0.2, 0.0, 10), "tpot_s=0 with n_tokens=10"),
        ((0.2, 0.1, 1), "tpot_s=0.1 with n_tokens=1 must be 0"),
        ((0.2, 1e308, 10**30), "too large"),
    ],
)
def test_impossible_generation_timings_are_refused(record, match):
    with pytest.raises(ValueError, match=match):
        gl.costmodels.inference.GenerationTiming(*record)


# ---- the inference lab times its tiny GPT where it says it does

_INFERENCE_LAB = Path(__file__).resolve().parents[1] / "notebooks" / "inference_lab.ipynb"


def _lab_cell(marker: str) -> str:
    cells = nbformat.read(_INFERENCE_LAB, as_version=4).cells
    (source,) = [c.source for c in cells if c.cell_type == "code" and marker in c.source]
    return source


def test_the_inference_labs_tiny_gpt_and_its_inputs_go_to_the_labs_device():
    """Run the lab's TinyGPT cell with ``device`` a meta device (no memory, no arithmetic):
    everything the timings use must land there, not stay on the CPU."""
    import torch

    namespace = {"gl": gl, "torch": torch, "nn": torch.nn, "device": torch.device("meta")}
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(_lab_cell("gpt = TinyGPT("), namespace)
    finally:
        torch.set_num_threads(threads)  # the cell sets one thread for the rest of the lab
    assert {p.device.type for p in namespace["gpt"].parameters()} == {"meta"}
    assert namespace["prompt"].device.type == "meta"
    assert namespace["gpt"].new_cache(1).device.type == "meta"  # the cache follows the model


def test_the_inference_labs_roofline_names_the_device_the_timings_ran_on():
    source = _lab_cell("TinyGPT, FP32, measured on")
    assert "info.summary()" not in source  # the machine's best device, not the timing's
    assert "next(gpt.parameters()).device" in source


def test_ttft_is_defined_as_the_prefill_alone_everywhere(root):
    # The first token comes from the prefill's logits at the prompt's last position, as the
    # inference lab's generate() stamps it: no decode step comes before it.
    import json
    import re

    from gpulab.costmodels.inference import GenerationTiming

    nb = json.loads((root / "notebooks" / "inference_lab.ipynb").read_text(encoding="utf-8"))
    lab = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    texts = {
        "glossary": (root / "book" / "glossary.md").read_text(encoding="utf-8"),
        "chapter": (root / "book" / "beyond_speed.md").read_text(encoding="utf-8"),
        "lab": lab,
        "docstring": GenerationTiming.__doc__,
    }
    for where, text in texts.items():
        i = text.find("TTFT") if "TTFT" in text else text.find("first token")
        assert i >= 0, where
        definition = text[max(0, i - 200) : i + 300]
        assert "prefill" in definition, where
        one_step_more = r"(plus|and)\s+(one|the\s+first)\s+(decode\s+)?step"
        assert not re.search(one_step_more, definition), where


# --------------------------------------------------------------------------- greedy tokens


def _logits(vocab=8, **scores):
    """Logits of one step: 0 everywhere but the tokens named t<id>=score."""
    out = [0.0] * vocab
    for key, value in scores.items():
        out[int(key[1:])] = value
    return out


def test_greedy_agreement_accepts_the_same_tokens_without_asking_for_logits():
    def never(i):
        raise AssertionError("the logits are needed only when the tokens differ")

    same = greedy_agreement(torch.tensor([[4, 2, 7]]), [4, 2, 7], never)
    assert same.identical and same.agree and same.first_difference is None
    assert same.sentence("with and without the KV cache") == (
        "The same 3 tokens with and without the KV cache."
    )


def test_greedy_agreement_accepts_a_first_difference_at_a_near_tie_of_the_two_best():
    asked = []

    def logits_at(i):
        asked.append(i)
        return torch.tensor(_logits(t3=4.0, t5=3.9998, t1=-4.0), dtype=torch.float64)

    r = greedy_agreement([1, 3, 0, 0], [1, 5, 6, 6], logits_at, tolerance=1e-4)
    assert asked == [1] and r.first_difference == 1 and r.top_two
    assert r.gap == pytest.approx(0.0002 / 4.0) and r.agree and not r.identical
    text = r.sentence("with and without the KV cache")
    assert text.startswith("The first 1 of 4 tokens agree with and without the KV cache;")
    assert "at token 2" in text and "5.0e-05" in text


def test_greedy_agreement_refuses_a_difference_that_is_no_tie():
    wide = greedy_agreement([3], [5], lambda i: _logits(t3=4.0, t5=3.0))
    assert wide.top_two and wide.gap == pytest.approx(0.25) and not wide.agree
    assert "more than 0.001" in wide.sentence("here")
    # The two tokens within the tolerance, but a third scored above one of them.
    third = greedy_agreement([3], [5], lambda i: _logits(t3=4.0, t5=3.9999, t7=4.0))
    assert not third.top_two and not third.agree
    assert "not the two best" in third.sentence("here")


def test_greedy_agreement_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="tokens has 2 tokens and reference 3"):
        greedy_agreement([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="logits_at=None: the tokens differ at index 1"):
        greedy_agreement([1, 2], [1, 3])
    with pytest.raises(ValueError, match=r"logits_at\(1\) gave 2 logits: too few"):
        greedy_agreement([1, 2], [1, 3], lambda i: [0.0, 1.0])
    with pytest.raises(ValueError, match="logits_at"):
        greedy_agreement([1, 2], [1, 3], lambda i: [0.0, float("nan"), 1.0, 2.0])
    with pytest.raises(TypeError, match="logits_at=3"):
        greedy_agreement([1], [1], 3)
    with pytest.raises(ValueError, match="tolerance=2"):
        greedy_agreement([1], [1], tolerance=2)
    with pytest.raises(ValueError, match=r"tokens=\[-1\] must hold token ids"):
        greedy_agreement([-1], [1])
    with pytest.raises(TypeError, match="reference=\\[\\]"):
        greedy_agreement([1], [])
    with pytest.raises(TypeError, match="what=5"):
        greedy_agreement([1], [1]).sentence(5)
