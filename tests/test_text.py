"""The course's own text, as character tokens with BERT's masking."""

import pytest
import torch

from gpulab.labkit.corpus import CharVocab, course_text, mask_tokens


def test_course_text_reads_the_chapters_or_falls_back_to_the_package(root, tmp_path, monkeypatch):
    text, source = course_text(root / "book")
    assert "GPU" in text and "chapter files" in source
    monkeypatch.chdir(tmp_path)  # no book/ here: the package's own source is used
    text, source = course_text()
    assert "def course_text" in text and "gpulab package" in source
    with pytest.raises(FileNotFoundError, match="book="):
        course_text(tmp_path)


def test_vocab_round_trip_and_unknowns():
    vocab = CharVocab.build("hello world", min_count=1)
    assert vocab.size == 3 + len(set("hello world"))
    assert vocab.decode(vocab.encode("hello")) == "hello"
    assert vocab.encode("z").tolist() == [vocab.unk_id]


def test_masking_follows_bert_proportions():
    vocab = CharVocab.build("abcdefghij")
    tokens = vocab.encode("abcdefghij" * 10_000)
    inputs, targets = mask_tokens(tokens, vocab, generator=torch.Generator().manual_seed(0))
    chosen = targets != -100
    assert chosen.float().mean().item() == pytest.approx(0.15, abs=0.01)
    assert torch.equal(targets[chosen], tokens[chosen])
    masked = (inputs[chosen] == vocab.mask_id).float().mean().item()
    kept = (inputs[chosen] == tokens[chosen]).float().mean().item()
    assert masked == pytest.approx(0.8, abs=0.02)
    assert kept == pytest.approx(0.1 + 0.1 / vocab.chars.__len__(), abs=0.02)
    assert torch.equal(inputs[~chosen], tokens[~chosen])
    with pytest.raises(ValueError, match="rate=1.5"):
        mask_tokens(tokens, vocab, rate=1.5)


@pytest.mark.parametrize(
    "rate, error",
    [(0, ValueError), (1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
     (True, TypeError), ("0.15", TypeError), (-0.1, ValueError)],
)  # fmt: skip
def test_masking_rate_must_be_strictly_between_0_and_1(rate, error):
    vocab = CharVocab.build("abc")
    with pytest.raises(error, match="rate="):
        mask_tokens(vocab.encode("abcabc"), vocab, rate=rate)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: CharVocab.build("abc", min_count=0), ValueError, "min_count=0"),
        (lambda: CharVocab.build("abc", min_count=1.5), TypeError, "min_count=1.5"),
        (lambda: CharVocab.build(["a", "b"]), TypeError, "text="),
        (lambda: CharVocab(("a", "bc")), ValueError, "chars="),
        (lambda: CharVocab(("a", 1)), TypeError, "chars="),
        (lambda: CharVocab(["a", "b"]), TypeError, "chars="),
        (lambda: CharVocab(("a", "a")), ValueError, "chars must not repeat"),
        (lambda: CharVocab.build("abc").encode(42), TypeError, "text=42"),
        (lambda: mask_tokens(torch.rand(4), CharVocab.build("ab")), TypeError, "integer tensor"),
        (lambda: mask_tokens([1, 2], CharVocab.build("ab")), TypeError, "integer tensor"),
        (lambda: mask_tokens(torch.zeros(4, dtype=torch.long), "ab"), TypeError, "vocab='ab'"),
        (lambda: course_text(42), TypeError, "book=42"),
        (lambda: CharVocab.build("abc").decode([3, 99]), ValueError, "ids holds 99"),
        (lambda: CharVocab.build("abc").decode([1.0]), TypeError, "ids holds 1.0"),
    ],
)
def test_bad_arguments_name_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()
