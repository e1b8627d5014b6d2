"""Inference cost models: the KV cache, bytes per generated token, TTFT and TPOT.

A language model generates text in two phases. **Prefill** reads the whole prompt in one
pass: many tokens per read of the weights, so it does many FLOPs per byte. **Decode** then
produces one token per step: every step reads every weight (and the KV cache) to make one
token per sequence in the batch, so it does about 2 FLOPs per parameter read and is
memory-bound on every device in the registry. Its speed is therefore bounded by
``memory bandwidth / bytes read per step``, which is why storing weights in fewer bits
(int8, 4-bit) speeds decoding up even when the arithmetic stays in 16 bits.

See also the chapter *Beyond speed* (section "Inference") and ``notebooks/inference_lab``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulab._checks import (
    choice,
    finite_number,
    finite_result,
    flag,
    fraction,
    function,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab.hardware.precision import PEAK_PRECISIONS, compute_bytes
from gpulab.hardware.specs import resolve_spec

__all__ = [
    "WEIGHT_FORMATS",
    "DecodeEstimate",
    "GenerationTiming",
    "GreedyAgreement",
    "decode_estimate",
    "generation_timing",
    "greedy_agreement",
    "kv_cache_bytes",
    "model_kv_cache_bytes",
    "weight_bytes",
]

#: Bits per stored weight. "int8" and "int4" are weight-only formats: the weights are stored
#: in 8 or 4 bits (plus a small per-group scale, not counted here) and widened to 16 bits
#: for the arithmetic.
WEIGHT_FORMATS = {"fp32": 32, "fp16": 16, "bf16": 16, "int8": 8, "int4": 4}

_KV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8")


def kv_cache_bytes(
    layers: int,
    heads: int,
    head_dim: int,
    seq_len: int,
    batch_size: int = 1,
    precision: str = "bf16",
) -> int:
    """Bytes of the KV cache: layers × 2 × heads × head_dim × seq_len × batch_size × bytes.

    Each layer keeps a key and a value vector (the 2) of ``head_dim`` numbers per attention
    head for every token of every sequence, so the cache grows linearly with context length
    and with the number of sequences served at once.

    Parameters
    ----------
    layers : int
        Transformer layers.
    heads : int
        Heads that keep keys and values: all heads for multi-head attention, the KV-head
        count for grouped-query attention.
    head_dim : int
        Numbers per head (hidden size ÷ heads).
    seq_len : int
        Tokens cached per sequence (prompt plus generated tokens).
    batch_size : int
        Sequences served at once.
    precision : {"fp32", "fp16", "bf16", "fp8"}
        Storage precision of the cache.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.kv_cache_bytes(layers=32, heads=32, head_dim=128, seq_len=4096)  # Llama-2-7B
    2147483648
    >>> gl.kv_cache_bytes(layers=2, heads=4, head_dim=16, seq_len=10, batch_size=3,
    ...                   precision="fp32")
    30720
    """
    values = (
        positive_int("layers", layers)
        * 2
        * positive_int("heads", heads)
        * positive_int("head_dim", head_dim)
        * positive_int("seq_len", seq_len)
        * positive_int("batch_size", batch_size)
    )
    choice("precision", precision, _KV_PRECISIONS)
    return values * compute_bytes(precision)


def model_kv_cache_bytes(
    model, seq_len: int | None = None, batch_size: int = 1, precision: str = "bf16"
) -> int:
    """:func:`kv_cache_bytes` for a named transformer (:func:`gpulab.get_model`).

    Parameters
    ----------
    model : str or NamedModel
        A transformer in :data:`gpulab.NAMED_MODELS` (its layers, hidden size and heads).
    seq_len : int, optional
        Tokens per sequence; default the model's context length.
    batch_size, precision
        As for :func:`kv_cache_bytes`.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.model_kv_cache_bytes("GPT-2 XL", batch_size=8) / 2**30  # 48 x 2 x 1600 x 1024 x 8 x 2
    2.34375
    """
    from gpulab.costmodels.published_models import NamedModel, get_model

    entry = model if isinstance(model, NamedModel) else get_model(model)
    if entry.family != "transformer":
        raise ValueError(f"model={entry.name!r} is a {entry.family}: it has no KV cache")
    seq_len = entry.seq_len if seq_len is None else positive_int("seq_len", seq_len)
    return kv_cache_bytes(
        layers=entry.layers,
        heads=entry.heads,
        head_dim=entry.hidden // entry.heads,
        seq_len=seq_len,
        batch_size=batch_size,
        precision=precision,
    )


def weight_bytes(n_params: float, weight_format: str = "bf16") -> float:
    """Bytes of ``n_params`` weights stored in ``weight_format`` (see :data:`WEIGHT_FORMATS`).

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.weight_bytes(6.7e9, "bf16") / 1e9, gl.weight_bytes(6.7e9, "int4") / 1e9
    (13.4, 3.35)
    """
    n_params = non_negative_number("n_params", n_params)
    choice("weight_format", weight_format, WEIGHT_FORMATS)
    return finite_result(n_params * WEIGHT_FORMATS[weight_format] / 8, n_params=n_params)


@dataclass(frozen=True)
class DecodeEstimate:
    """The roofline bound on one decode step; see :func:`decode_estimate`.

    Attributes
    ----------
    device_name : str
    weight_format : str
    batch_size : int
        Sequences decoded together (one token each per step).
    flops : float
        FLOPs per step: 2 × parameters × batch_size.
    n_bytes : float
        Bytes read per step: the weights once, plus the KV cache given.
    step_s : float
        Least time per step.
    bound : {"memory", "compute"}
    """

    device_name: str
    weight_format: str
    batch_size: int
    flops: float
    n_bytes: float
    step_s: float
    bound: str

    def __post_init__(self) -> None:
        text("device_name", self.device_name)
        choice("weight_format", self.weight_format, WEIGHT_FORMATS)
        positive_int("batch_size", self.batch_size)
        non_negative_number("flops", self.flops)
        positive_number("n_bytes", self.n_bytes)
        positive_number("step_s", self.step_s)
        choice("bound", self.bound, ("memory", "compute"))

    @property
    def tokens_per_s(self) -> float:
        """Most tokens per second, all sequences together (an upper bound)."""
        return self.batch_size / self.step_s

    @property
    def tokens_per_s_per_sequence(self) -> float:
        """Most tokens per second one sequence (one user) sees."""
        return 1 / self.step_s

    def __str__(self) -> str:
        return (
            f"{self.device_name}, {self.weight_format} weights, batch {self.batch_size}: at most "
            f"{self.tokens_per_s:,.1f} tokens/s ({self.bound}-bound). PREDICTION (roofline), "
            "not measured"
        )


def _arithmetic_precision(spec) -> str:
    for precision in ("bf16", "fp16", "fp32"):
        if precision in spec.peak_flops:
            return precision
    raise ValueError(f"spec={spec.name!r} has no bf16, fp16 or fp32 peak in the registry")


def decode_estimate(
    spec,
    n_params: float,
    *,
    weight_format: str = "bf16",
    batch_size: int = 1,
    kv_bytes: float = 0,
    precision: str | None = None,
) -> DecodeEstimate:
    """Roofline bound on decoding: bytes per step over bandwidth, FLOPs over peak.

    Every decode step reads all ``n_params`` weights once (in ``weight_format``) and the
    KV cache (``kv_bytes``, all sequences together), and does 2 FLOPs per parameter for each
    of the ``batch_size`` tokens it produces. Attention's own FLOPs and the activations are left
    out; at short contexts they are small.

    Parameters
    ----------
    spec : DeviceSpec or str
        A registry entry.
    n_params : float
        Parameters of the model.
    weight_format : str
        How the weights are stored, a key of :data:`WEIGHT_FORMATS`.
    batch_size : int
        Sequences decoded together.
    kv_bytes : float
        KV-cache bytes read per step (see :func:`kv_cache_bytes`); default 0.
    precision : str, optional
        Peak used for the arithmetic; default the spec's best of bf16, fp16, fp32 (weight-only
        int8 and int4 are widened to 16 bits before the multiply).

    Examples
    --------
    >>> import gpulab as gl
    >>> e = gl.decode_estimate("A100 80GB", 6.7e9)   # Llama-2-7B, 16-bit weights
    >>> round(e.tokens_per_s, 1), e.bound
    (152.2, 'memory')
    >>> round(gl.decode_estimate("A100 80GB", 6.7e9, weight_format="int8").tokens_per_s, 1)
    304.3
    """
    from gpulab.costmodels.roofline import predict_time

    entry = resolve_spec("spec", spec)
    n_params = float(non_negative_number("n_params", n_params))
    if n_params == 0:
        raise ValueError("n_params=0 must be above 0: a model has weights")
    choice("weight_format", weight_format, WEIGHT_FORMATS)
    batch = positive_int("batch_size", batch_size)
    kv_bytes = non_negative_number("kv_bytes", kv_bytes)
    if precision is None:
        precision = _arithmetic_precision(entry)
    else:
        choice("precision", precision, PEAK_PRECISIONS)
    flops = finite_result(2 * n_params * batch, n_params=n_params, batch_size=batch_size)
    moved = finite_result(
        n_params * WEIGHT_FORMATS[weight_format] / 8 + kv_bytes,
        n_params=n_params,
        kv_bytes=kv_bytes,
    )
    p = predict_time(entry, flops=flops, n_bytes=moved, precision=precision)
    return DecodeEstimate(entry.name, weight_format, batch, flops, moved, p.time_s, p.bound)


@dataclass(frozen=True)
class GenerationTiming:
    """Latency of one generated answer; see :func:`generation_timing`.

    Attributes
    ----------
    ttft_s : float
        Time to first token: from the request to the first generated token, which the
        prefill's logits at the prompt's last position give (no decode step comes before it).
    tpot_s : float
        Time per output token after the first: the mean decode step; above 0 when more than
        one token was generated, and 0 for a single token (no decode step follows it).
    n_tokens : int
        Tokens generated.
    """

    ttft_s: float
    tpot_s: float
    n_tokens: int

    def __post_init__(self) -> None:
        non_negative_number("ttft_s", self.ttft_s)
        non_negative_number("tpot_s", self.tpot_s)
        positive_int("n_tokens", self.n_tokens)
        if self.n_tokens > 1 and self.tpot_s == 0:
            raise ValueError(
                f"tpot_s=0 with n_tokens={self.n_tokens!r}: the tokens after the first take "
                "decode steps, which take time"
            )
        if self.n_tokens == 1 and self.tpot_s != 0:
            raise ValueError(
                f"tpot_s={self.tpot_s!r} with n_tokens=1 must be 0: no decode step follows "
                "a single token"
            )
        finite_result(self.total_s, ttft_s=self.ttft_s, tpot_s=self.tpot_s, n_tokens=self.n_tokens)

    @property
    def total_s(self) -> float:
        """TTFT + (n_tokens − 1) × TPOT: the whole answer."""
        return self.ttft_s + (self.n_tokens - 1) * self.tpot_s

    @property
    def decode_tokens_per_s(self) -> float:
        """Tokens per second after the first (1 / TPOT).

        Raises
        ------
        ValueError
            For a single token: no decode step followed it, so there is no rate.
        """
        if self.n_tokens == 1:
            raise ValueError("n_tokens=1: no token followed the first, so there is no decode rate")
        return finite_result(1 / self.tpot_s, tpot_s=self.tpot_s)

    def __str__(self) -> str:
        from gpulab.units import format_duration

        return (
            f"TTFT {format_duration(self.ttft_s)}, TPOT {format_duration(self.tpot_s)} "
            f"over {self.n_tokens} tokens"
        )


def generation_timing(start_s: float, token_times_s: Sequence[float]) -> GenerationTiming:
    """TTFT and TPOT from the clock time of a request and of each token it produced.

    Parameters
    ----------
    start_s : float
        When the request arrived (any clock, e.g. :func:`time.perf_counter`).
    token_times_s : sequence of float
        When each generated token was ready, same clock, in order.

    Examples
    --------
    >>> import gpulab as gl
    >>> t = gl.generation_timing(10.0, [10.5, 10.6, 10.7, 10.8])
    >>> round(t.ttft_s, 3), round(t.tpot_s, 3), round(t.total_s, 3)
    (0.5, 0.1, 0.8)
    """
    start_s = finite_number("start_s", start_s)
    if isinstance(token_times_s, (str, bytes)) or not isinstance(token_times_s, Sequence):
        raise wrong_type("token_times_s", token_times_s, "a sequence of times")
    if len(token_times_s) == 0:
        raise ValueError("token_times_s=[] is empty: at least one token is needed")
    times = [finite_number(f"token_times_s[{i}]", t) for i, t in enumerate(token_times_s)]
    if times[0] < start_s:
        raise ValueError(
            f"token_times_s[0]={times[0]!r} is earlier than start_s={start_s!r}: a token "
            "comes after its request"
        )
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise ValueError(
                f"token_times_s[{i}]={times[i]!r} is earlier than the time before it "
                f"({times[i - 1]!r}): times must not go backwards"
            )
    if len(times) > 1 and times[-1] == times[0]:
        raise ValueError(
            f"token_times_s={token_times_s!r}: {len(times)} tokens at one clock reading; "
            "read a finer clock, such as time.perf_counter"
        )
    ttft = finite_result(times[0] - start_s, start_s=start_s, token_times_s=token_times_s)
    tpot = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
    finite_result(tpot, token_times_s=token_times_s)
    return GenerationTiming(ttft, tpot, len(times))


# ---------------------------------------------------------------------------- Greedy tokens


@dataclass(frozen=True)
class GreedyAgreement:
    """How two greedy decodings of the same prompt compare (:func:`greedy_agreement`).

    Attributes
    ----------
    n_tokens : int
        Tokens each decoding produced.
    first_difference : int or None
        Index of the first token where they differ, below ``n_tokens``; None when every
        token is the same.
    gap : float or None
        At the first difference, the distance between the two tokens' logits over the
        largest |logit| of that step, from 0 to 2; None when every token is the same.
    top_two : bool
        Whether the two tokens were the two highest-scoring ones at the first difference
        (True when every token is the same).
    tolerance : float
        The largest ``gap`` that counts as a near-tie.
    """

    n_tokens: int
    first_difference: int | None
    gap: float | None
    top_two: bool
    tolerance: float

    def __post_init__(self) -> None:
        positive_int("n_tokens", self.n_tokens)
        flag("top_two", self.top_two)
        fraction("tolerance", self.tolerance)
        if self.first_difference is None:
            if self.gap is not None:
                raise ValueError(
                    f"gap={self.gap!r} with first_difference=None: a gap is measured at a "
                    "first difference; give None when every token is the same"
                )
            if not self.top_two:
                raise ValueError(
                    "top_two=False with first_difference=None: when every token is the same "
                    "there is no pair of tokens to rank, and top_two is True"
                )
            return
        non_negative_int("first_difference", self.first_difference)
        if self.first_difference >= self.n_tokens:
            raise ValueError(
                f"first_difference={self.first_difference!r} must be below "
                f"n_tokens={self.n_tokens!r}: it is the index of a token"
            )
        if self.gap is None:
            raise ValueError(
                f"gap=None with first_difference={self.first_difference!r}: the tokens "
                "differ, so the gap between their logits is needed"
            )
        gap = non_negative_number("gap", self.gap)
        if gap > 2:
            raise ValueError(
                f"gap={self.gap!r} must be at most 2: two logits are at most twice the "
                "largest |logit| apart"
            )

    @property
    def identical(self) -> bool:
        """Every token is the same."""
        return self.first_difference is None

    @property
    def agree(self) -> bool:
        """The same tokens, or a first difference at a near-tie of the two best tokens."""
        return self.identical or (self.top_two and self.gap <= self.tolerance)

    def sentence(self, what: str) -> str:
        """One sentence saying how the decodings compare; ``what`` names them.

        Examples
        --------
        >>> greedy_agreement([3, 1], [3, 1]).sentence("with and without the KV cache")
        'The same 2 tokens with and without the KV cache.'
        """
        check_text = text("what", what)
        if self.identical:
            return f"The same {self.n_tokens} tokens {check_text}."
        i = self.first_difference
        shared = f"the first {i} of {self.n_tokens} tokens agree" if i else "no token agrees"
        if self.agree:
            return (
                f"{shared[0].upper()}{shared[1:]} {check_text}; at token {i + 1} the two best "
                f"tokens scored within {self.gap:.1e} of the largest logit (at most "
                f"{self.tolerance:g}): a near-tie that rounding may decide either way, after "
                f"which the texts differ."
            )
        why = (
            f"their logits {self.gap:.1e} of the largest apart (more than {self.tolerance:g})"
            if self.top_two
            else "and they were not the two best tokens of that step"
        )
        return f"{shared[0].upper()}{shared[1:]} {check_text}; token {i + 1} differs, {why}."


def _as_list(value):
    """A tensor (on any device) or an array as nested Python lists; anything else as it is."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu()  # a GPU tensor: copied to the host first
    return value.tolist() if hasattr(value, "tolist") else value


def _token_list(name: str, value) -> list[int]:
    values = _as_list(value)
    if (
        isinstance(values, (list, tuple))
        and len(values) == 1
        and isinstance(values[0], (list, tuple))
    ):
        values = values[0]  # one sequence of a batch of one
    if not isinstance(values, (list, tuple)) or not values:
        raise wrong_type(name, value, "a non-empty sequence of token ids (one row)")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise wrong_type(name, value, "a sequence of token ids (ints of 0 or more)")
        if not isinstance(v, int) or v < 0:
            raise ValueError(
                f"{name}={value!r} must hold token ids, whole numbers of 0 or more; found {v!r}"
            )
    return list(values)


def greedy_agreement(
    tokens: Sequence[int],
    reference: Sequence[int],
    logits_at=None,
    *,
    tolerance: float = 1e-3,
) -> GreedyAgreement:
    """Whether two greedy decodings of one prompt agree, allowing a first difference at a tie.

    Greedy decoding picks the highest-scoring token at each step. Two ways of computing the
    same model (with and without a KV cache; one device's attention kernel or another's)
    round differently, so where the two best tokens score within rounding of each other
    either may win; from there on the two texts continue from different tokens and are no
    longer comparable. The decodings agree if every token is the same, or if at the first
    difference the two tokens were the step's two best and their logits were within
    ``tolerance`` of each other, relative to the step's largest |logit|.

    Parameters
    ----------
    tokens, reference : sequence of int
        The generated token ids of each decoding, the same number of them (a list, or a
        tensor on any device or an array, of one row; the prompt not included).
    logits_at : callable, optional
        ``logits_at(i)`` returns the next-token logits (one number per vocabulary entry)
        after the prompt and the first ``i`` generated tokens, which both decodings share.
        Called once, only when the tokens differ; required then.
    tolerance : float, default 1e-3
        Largest gap between the two tokens' logits, over the step's largest |logit|, that
        counts as a tie: from 0 to 1.

    Returns
    -------
    GreedyAgreement
        Its ``agree`` says whether the decodings agree; ``sentence(what)`` says how.

    Raises
    ------
    TypeError
        If a token sequence is not a sequence of ints, ``logits_at`` is not callable, or
        ``tolerance`` is not a number.
    ValueError
        If the sequences are empty or differ in length, a token id is negative,
        ``tolerance`` is outside 0 to 1, the tokens differ and no ``logits_at`` was given,
        or its logits are not finite or do not cover both tokens.

    Examples
    --------
    >>> greedy_agreement([5, 2, 7], [5, 2, 7]).identical
    True
    >>> logits = [0.1, 2.0, 1.9995, -1.0]        # tokens 1 and 2: a near-tie
    >>> r = greedy_agreement([5, 1, 0], [5, 2, 3], lambda i: logits)
    >>> r.first_difference, round(r.gap, 6), r.agree
    (1, 0.00025, True)
    >>> greedy_agreement([5, 1], [5, 3], lambda i: logits).agree   # token 3 was not close
    False
    """
    a = _token_list("tokens", tokens)
    b = _token_list("reference", reference)
    if len(a) != len(b):
        raise ValueError(
            f"tokens has {len(a)} tokens and reference {len(b)}: two decodings of the same "
            f"length are compared"
        )
    function("logits_at", logits_at, wanted="a callable logits_at(i)", optional=True)
    tolerance = fraction("tolerance", tolerance)
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)
    if first is None:
        return GreedyAgreement(len(a), None, None, True, tolerance)
    if logits_at is None:
        raise ValueError(
            f"logits_at=None: the tokens differ at index {first} ({a[first]} against "
            f"{b[first]}), and judging that difference needs that step's logits"
        )
    raw = logits_at(first)
    values = _as_list(raw)
    if (
        isinstance(values, (list, tuple))
        and len(values) == 1
        and isinstance(values[0], (list, tuple))
    ):
        values = values[0]
    try:
        scores = [finite_number("logits_at(i)", v) for v in values]
    except TypeError:
        raise wrong_type(
            "logits_at(i)", raw, "a sequence of finite logits, one per vocabulary entry"
        ) from None
    if max(a[first], b[first]) >= len(scores):
        raise ValueError(
            f"logits_at({first}) gave {len(scores)} logits: too few for the token ids at "
            f"index {first}, tokens[{first}]={a[first]} and reference[{first}]={b[first]}"
        )
    x, y = scores[a[first]], scores[b[first]]
    lower = min(x, y)
    others = [s for i, s in enumerate(scores) if i not in (a[first], b[first])]
    top_two = all(s <= lower for s in others)
    scale = max(abs(s) for s in scores)
    gap = abs(x - y) / scale if scale > 0 else 0.0
    return GreedyAgreement(len(a), first, gap, top_two, tolerance)
