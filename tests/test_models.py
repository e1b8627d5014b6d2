"""The case studies' models have the published sizes and costs."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from gpulab.labkit.networks import (
    BERT_BASE,
    BasicBlock,
    Bottleneck,
    PolicyNet,
    ResNet,
    TransformerConfig,
    TransformerEncoder,
    count_parameters,
    resnet18,
    resnet50,
    small_resnet,
    transformer_param_count,
)


def forward_flops(model, *shape):
    with FlopCounterMode(display=False) as counter:
        model(torch.zeros(*shape, device="meta"))
    return counter.get_total_flops()


def test_resnet_parameter_counts_match_torchvision():
    # torchvision's published counts, 25,557,032 and 11,689,512:
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet18.html
    assert count_parameters(resnet50()) == 25_557_032
    assert count_parameters(resnet18()) == 11_689_512


def test_resnet50_forward_is_about_4_1_g_multiply_adds():
    with torch.device("meta"):
        model = resnet50()
    flops = forward_flops(model, 1, 3, 224, 224)
    # torchvision: 4.09 G multiply-adds; OpenVINO: 8.216 GFLOPs; one MAC = 2 FLOPs.
    assert flops == pytest.approx(2 * 4.09e9, rel=0.005)
    assert flops == pytest.approx(8.216e9, rel=0.01)
    assert forward_flops(model, 2, 3, 224, 224) == 2 * flops  # linear in the batch


def test_resnet18_forward_flops_and_output_shape():
    with torch.device("meta"):
        model = resnet18()
    # torchvision lists 1.81 GFLOPS (multiply-adds) for ResNet-18
    assert forward_flops(model, 1, 3, 224, 224) == pytest.approx(2 * 1.81e9, rel=0.01)
    assert resnet18(num_classes=7)(torch.zeros(1, 3, 64, 64)).shape == (1, 7)


@pytest.mark.parametrize("side", [8, 32])
def test_small_resnet_trains_on_small_images(side):
    torch.manual_seed(0)
    model = small_resnet(num_classes=10, in_channels=1)
    x, y = torch.randn(16, 1, side, side), torch.randint(0, 10, (16,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert count_parameters(model) < 200_000


def test_bad_resnet_arguments_are_named():
    with pytest.raises(ValueError, match="layers="):
        small_resnet(layers=(1, 0))
    with pytest.raises(ValueError, match="width=0"):
        small_resnet(width=0)


def test_bert_base_parameter_count():
    counts = transformer_param_count(BERT_BASE)
    # Devlin et al.: "110M"; the exact count of BERT-base with its pooler is 109,482,240.
    assert counts["total"] == 109_482_240
    assert counts["total"] == pytest.approx(110e6, rel=0.01)
    assert counts["embeddings"] == (30522 + 512 + 2) * 768 + 2 * 768
    assert counts["per_layer"] == 7_087_872
    with torch.device("meta"):
        model = TransformerEncoder(BERT_BASE, mlm_head=False)
    assert count_parameters(model) == counts["total"]


@pytest.mark.parametrize("pre_ln", [False, True])
def test_small_encoder_matches_formula_and_runs(pre_ln):
    cfg = TransformerConfig(
        vocab_size=100,
        hidden=32,
        layers=2,
        heads=4,
        intermediate=128,
        max_positions=64,
        pre_ln=pre_ln,
    )
    model = TransformerEncoder(cfg)
    assert count_parameters(model) == transformer_param_count(cfg, mlm_head=True)["total"]
    tokens = torch.randint(0, 100, (3, 20))
    pad = torch.zeros(3, 20, dtype=torch.bool)
    pad[0, 10:] = True
    logits = model(tokens, pad_mask=pad)
    assert logits.shape == (3, 20, 100) and torch.isfinite(logits).all()
    with pytest.raises(ValueError, match="max_positions=64"):
        model(torch.zeros(1, 65, dtype=torch.long))


def test_transformer_config_rejects_bad_shapes():
    with pytest.raises(ValueError, match="heads=5 must divide hidden=32"):
        TransformerConfig(
            vocab_size=10, hidden=32, layers=1, heads=5, intermediate=8, max_positions=8
        )
    with pytest.raises(ValueError, match="layers=0"):
        TransformerConfig(
            vocab_size=10, hidden=32, layers=0, heads=4, intermediate=8, max_positions=8
        )


def test_policy_net_masks_illegal_moves():
    net = PolicyNet(27, 9)
    legal = torch.ones(4, 9, dtype=torch.bool)
    legal[:, :3] = False
    probs = torch.softmax(net(torch.randn(4, 27), legal), dim=1)
    assert torch.all(probs[:, :3] == 0)
    assert torch.allclose(probs.sum(1), torch.ones(4))
    with pytest.raises(ValueError, match="hidden=0"):
        PolicyNet(27, 9, hidden=0)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: small_resnet(num_classes=True), TypeError, "num_classes=True"),
        (lambda: small_resnet(num_classes=0), ValueError, "num_classes=0"),
        (lambda: small_resnet(in_channels=1.0), TypeError, "in_channels=1.0"),
        (lambda: small_resnet(layers=3), TypeError, "layers=3"),
        (lambda: small_resnet(layers="111"), TypeError, "layers='111'"),
        (lambda: small_resnet(layers=(1, 1.0)), TypeError, r"layers=\(1, 1.0\)"),
        (lambda: small_resnet(layers=()), ValueError, r"layers=\(\)"),
        (lambda: ResNet(torch.nn.Linear, (1,)), TypeError, "block="),
        (lambda: BasicBlock(8, 0), ValueError, "width=0"),
        (lambda: Bottleneck(8, 4, stride=float("nan")), TypeError, "stride=nan"),
        (lambda: count_parameters("resnet"), TypeError, "model='resnet'"),
        (lambda: transformer_param_count(BERT_BASE, mlm_head="yes"), TypeError, "mlm_head='yes'"),
        (lambda: transformer_param_count({"hidden": 768}), TypeError, "config="),
        (lambda: TransformerEncoder("bert"), TypeError, "config='bert'"),
        (lambda: TransformerEncoder(BERT_BASE, mlm_head=1), TypeError, "mlm_head=1"),
        (lambda: PolicyNet(27, 9, hidden=True), TypeError, "hidden=True"),
        (lambda: PolicyNet(27, 9, hidden=0), ValueError, "hidden=0"),
    ],
)
def test_bad_arguments_name_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("type_vocab_size", -1, ValueError),
        ("type_vocab_size", 2.0, TypeError),
        ("pre_ln", 1, TypeError),
        ("pooler", "no", TypeError),
        ("vocab_size", float("inf"), TypeError),
        ("vocab_size", 0, ValueError),
        ("heads", "4", TypeError),
    ],  # fmt: skip
)
def test_transformer_config_names_a_bad_field(field, value, error):
    args = dict(vocab_size=50, hidden=32, layers=2, heads=4, intermediate=64, max_positions=16)
    with pytest.raises(error, match=f"{field}="):
        TransformerConfig(**(args | {field: value}))
