"""The calculators (every widget in gpulab.labkit.widgets): one behaviour without
ipywidgets, the same report as the functions they wrap, forgiving device names, and output
that follows the controls."""

import subprocess
import sys

import pytest

import gpulab as gl
from gpulab.labkit.calculators import parallelism_report

SENTENCE = "needs ipywidgets, which is not installed here (pip install ipywidgets)"


def shown(box) -> str:
    """Everything the widget's output area shows, as text."""
    out = box.children[-1]
    parts = []
    for o in out.outputs:
        parts.append(o.get("text") or o.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def control(box, description: str):
    (found,) = [c for c in box.children[:-1] if c.description == description]
    return found


# Each widget with arguments, and the static report it must show for them.
CASES = {
    "chooser_widget": (
        lambda: gl.chooser_widget("BERT-base", batch_size=8),
        lambda: str(gl.plan_training("BERT-base", batch_size=8)),
    ),
    "scaling_calculator": (
        lambda: gl.scaling_calculator(1e9, "h100 sxm", 8, "NVLink 4"),
        lambda: gl.scaling_estimate(1e9, "H100 SXM5 80GB", 8, "NVLink 4").summary(),
    ),
    "roofline_explorer": (
        lambda: gl.roofline_explorer("t4", "fp16", 4.0),
        lambda: gl.roofline_readout(gl.Ceilings.from_spec("Tesla T4", "fp16"), 4.0),
    ),
    "memory_calculator": (
        lambda: gl.memory_calculator(n_params=1_000_000, batch_size=8),
        lambda: gl.memory_report(gl.estimate_training_memory(1_000_000, precision="amp_bf16",
                                                             optimizer="adamw")),
    ),
    "parallelism_calculator": (
        lambda: gl.parallelism_calculator(7e9, layers=32, hidden=4096, seq_len=4096, n_gpus=64),
        lambda: parallelism_report(7e9, 32, 4096, 4096, 64, "H100 SXM5 80GB",
                                    "NVLink 4 (H100/H200)", "InfiniBand NDR (4x)"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_without_ipywidgets_one_sentence_then_the_static_report(name, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # `import ipywidgets` now fails
    build, report = CASES[name]
    assert build() is None
    lines = capsys.readouterr().out.splitlines()
    assert SENTENCE in lines[0] and lines[0].startswith("The interactive ")
    assert "\n".join(lines[1:]) == report()


@pytest.mark.parametrize("name", CASES)
def test_the_widget_starts_with_the_same_report(name):
    pytest.importorskip("ipywidgets")
    build, report = CASES[name]
    text = shown(build())
    expected = report()
    if name == "chooser_widget":  # the table is shown as Markdown after the text
        assert text.replace("\n", "") == expected.replace("\n", "")
    else:
        assert text.strip() == expected


def test_changing_a_control_changes_the_plan():
    pytest.importorskip("ipywidgets")
    box = gl.chooser_widget("BERT-base", batch_size=8)
    assert "BERT-base (110.0 M parameters), amp_bf16, adamw, batch 8" in shown(box)
    control(box, "Batch size").value = 16
    expected = gl.plan_training("BERT-base", batch_size=16)
    assert f"batch 16 of 512 tokens\n{expected.memory}" in shown(box)
    control(box, "Model").value = "custom"
    control(box, "Parameters (M), custom").value = 50.0
    assert shown(box).startswith("50,000,000-parameter model (50.0 M parameters)")
    control(box, "Utilisation of peak").value = 0.2
    assert "at 20% of peak" in shown(box)


def test_a_plan_that_cannot_be_made_says_why():
    pytest.importorskip("ipywidgets")
    box = gl.scaling_calculator(1e9, "A100 80GB", 8, "NVLink 3")
    control(box, "GPU").value = "Tesla V100 SXM2 32GB"
    control(box, "Precision").value = "bf16"  # a V100 has no BF16
    assert shown(box).startswith("Cannot predict this: ") and "no bf16 figure" in shown(box)
    control(box, "Precision").value = "amp_fp16"
    assert shown(box).startswith("PREDICTION for 1B parameters on 8 x Tesla V100")


def test_scaling_calculator_follows_its_controls():
    pytest.importorskip("ipywidgets")
    box = gl.scaling_calculator(1e9, "H100 SXM", 8, "NVLink 4")
    control(box, "GPUs").value = 64
    assert shown(box).strip() == gl.scaling_estimate(1e9, "H100 SXM", 64, "NVLink 4").summary()


def test_roofline_explorer_draws_the_roofline_and_follows_its_controls():
    pytest.importorskip("ipywidgets")
    box = gl.roofline_explorer("h100 sxm", "bf16", 10.0)
    assert control(box, "Device").value == "H100 SXM5 80GB"
    assert any("image/png" in o.get("data", {}) for o in box.children[-1].outputs)
    control(box, "FLOP/byte").value = 1000.0
    assert "compute-bound" in shown(box)
    control(box, "Device").value = "Tesla T4"  # no BF16 peak
    assert "no bf16 peak: choose another precision" in shown(box)


def test_memory_calculator_follows_its_controls():
    pytest.importorskip("ipywidgets")
    box = gl.memory_calculator(n_params=1_000_000, batch_size=8)
    values = [c.value for c in box.children[:-1]]
    assert values == [1.0, 8, 0.0, "amp_bf16", "adamw"]
    assert "15.3 MiB" in shown(box)  # 16 bytes x 1 M parameters
    control(box, "Optimizer").value = "sgd"
    assert "Training memory (amp_bf16, sgd)" in shown(box) and "7.63 MiB" in shown(box)


def test_parallelism_calculator_shows_the_split_and_follows_its_controls():
    pytest.importorskip("ipywidgets")
    box = gl.parallelism_calculator()  # Llama 3 405B on 16,384 H100s, 8K tokens
    text = shown(box)
    assert "tensor  t = 8" in text and "pipeline p = 16" in text and "context c = 1" in text
    assert "data    d = 128" in text and "fits" in text
    control(box, "Sequence length").value = 131072
    assert "context c = 2" in shown(box) and "context:" in shown(box)
    control(box, "GPUs").value = 64  # fewer than t x p = 128
    assert shown(box).startswith("Cannot plan this: n_gpus=64")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: gl.chooser_widget("BERT-base", batch_size=0), ValueError, "batch_size=0"),
        (lambda: gl.chooser_widget("BERT-huge"), ValueError, "model='BERT-huge'"),
        (lambda: gl.chooser_widget(-1), ValueError, "model=-1"),
        (lambda: gl.chooser_widget(True), TypeError, "model=True"),
        (lambda: gl.chooser_widget(2.5e9), TypeError, "model=2500000000.0"),
        (lambda: gl.scaling_calculator(1e9, "Z9000", 8, "NVLink 4"), ValueError,
         "spec='Z9000'.*close"),
        (lambda: gl.scaling_calculator(1e9, "H100 SXM", 0, "NVLink 4"), ValueError, "n_gpus=0"),
        (lambda: gl.roofline_explorer("Nope"), ValueError, "spec='Nope'"),
        (lambda: gl.roofline_explorer(intensity=0), ValueError, "intensity=0"),
        (lambda: gl.roofline_explorer(intensity=float("nan")), ValueError, "intensity=nan"),
        (lambda: gl.roofline_explorer("T4", "bf16"), ValueError,
         "precision='bf16'.*no bf16 peak"),
        (lambda: gl.roofline_explorer("M2 Max"), ValueError, "no memory bandwidth or no peak"),
        (lambda: gl.memory_calculator(batch_size=0), ValueError, "batch_size=0"),
        (lambda: gl.memory_calculator(n_params=1.5), TypeError, "n_params=1.5"),
        (lambda: gl.memory_calculator(precision="fp8"), ValueError, "precision='fp8'"),
        (lambda: gl.parallelism_calculator(n_gpus=0), ValueError, "n_gpus=0"),
        (lambda: gl.parallelism_calculator(network="token ring"), ValueError,
         "network='token ring'"),
        (lambda: gl.parallelism_calculator(node_link=42), TypeError, "node_link=42"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_or_without_ipywidgets(call, error, message, monkeypatch):
    with pytest.raises(error, match=message):
        call()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(error, match=message):
        call()


def test_importing_the_widgets_does_not_import_ipywidgets():
    code = (
        "import sys, gpulab as gl; gl.chooser_widget; gl.roofline_explorer; "
        "print('ipywidgets' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "False"
