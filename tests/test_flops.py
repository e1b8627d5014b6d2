"""The hand-counted FLOPs of linear and convolution layers equal PyTorch's FlopCounterMode."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import gpulab as gl


def flop_counter(fn) -> int:
    """FLOPs of fn() as FlopCounterMode counts them, without gpulab in between."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("batch, fan_in, fan_out", [(1, 3, 5), (32, 256, 128), (7, 100, 1)])
def test_linear_forward_and_backward(batch, fan_in, fan_out):
    layer = torch.nn.Linear(fan_in, fan_out)
    x = torch.randn(batch, fan_in, requires_grad=True)
    forward = gl.linear_flops(batch, fan_in, fan_out)
    assert forward == 2 * batch * fan_in * fan_out == flop_counter(lambda: layer(x))
    both = gl.linear_flops(batch, fan_in, fan_out, backward=True)
    assert both == 3 * forward == flop_counter(lambda: layer(x).sum().backward())
    assert gl.count_flops(layer, x) == forward
    assert gl.count_flops(layer, x, backward=True) == both
    first_layer = torch.randn(batch, fan_in)  # no input gradient: weight gradient only
    assert (
        gl.count_flops(layer, first_layer, backward=True)
        == gl.linear_flops(batch, fan_in, fan_out, backward=True, input_grad=False)
        == 2 * forward
    )


@pytest.mark.parametrize(
    "cin, cout, k, size, stride, padding, groups",
    [
        (3, 16, 3, 32, 1, 1, 1),
        (3, 64, 7, 64, 2, 3, 1),
        (8, 8, 3, 15, 2, 0, 1),
        (16, 32, 1, 9, 1, 0, 1),
        (8, 16, 3, 12, 1, 1, 2),
    ],
)
def test_conv2d_forward_and_backward(cin, cout, k, size, stride, padding, groups):
    conv = torch.nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups)
    x = torch.randn(2, cin, size, size, requires_grad=True)
    args = (2, cin, cout, k, size)
    kwargs = {"stride": stride, "padding": padding, "groups": groups}
    forward = gl.conv2d_flops(*args, **kwargs)
    assert forward == flop_counter(lambda: conv(x)) == gl.count_flops(conv, x)
    both = gl.conv2d_flops(*args, **kwargs, backward=True)
    counted = flop_counter(lambda: conv(x).sum().backward())
    # FlopCounterMode (torch 2.x) counts a grouped convolution's weight gradient as if it
    # were ungrouped, i.e. `groups` times too large; the hand count and count_flops are true.
    assert both == 3 * forward and counted == (2 + groups) * forward
    assert gl.count_flops(conv, x, backward=True) == both
    weight_grad_only = gl.conv2d_flops(*args, **kwargs, backward=True, input_grad=False)
    assert weight_grad_only == 2 * forward
    assert gl.count_flops(conv, x.detach(), backward=True) == weight_grad_only


def _as_separate_convs(conv: torch.nn.Module):
    """The grouped convolution ``conv`` run as ``groups`` ungrouped ones on channel slices."""
    step_in = conv.in_channels // conv.groups
    kind = type(conv)
    kwargs = {"stride": conv.stride, "padding": conv.padding, "bias": False}
    pieces = []
    for g in range(conv.groups):
        if kind is torch.nn.Conv2d:
            step_out = conv.out_channels // conv.groups
            piece = torch.nn.Conv2d(step_in, step_out, conv.kernel_size, **kwargs)
            piece.weight = torch.nn.Parameter(
                conv.weight[g * step_out : (g + 1) * step_out].detach()
            )
        else:  # ConvTranspose2d keeps its weight as (in, out / groups, kh, kw)
            step_out = conv.out_channels // conv.groups
            piece = torch.nn.ConvTranspose2d(step_in, step_out, conv.kernel_size, **kwargs)
            piece.weight = torch.nn.Parameter(conv.weight[g * step_in : (g + 1) * step_in].detach())
        pieces.append(piece)

    def run(x):
        return torch.cat(
            [p(x[:, g * step_in : (g + 1) * step_in]) for g, p in enumerate(pieces)], dim=1
        )

    return run


@pytest.mark.parametrize(
    "kind, cin, cout, groups, size",
    [
        (torch.nn.Conv2d, 64, 64, 64, 56),  # depthwise 3x3, as in MobileNet
        (torch.nn.Conv2d, 16, 32, 4, 12),
        (torch.nn.ConvTranspose2d, 8, 16, 4, 10),
    ],
)
def test_grouped_convolution_backward_equals_flop_counter_on_its_groups(
    kind, cin, cout, groups, size
):
    """A grouped convolution is ``groups`` independent ones: FlopCounterMode counts those
    right, and count_flops must give the same total for the grouped layer itself."""
    torch.manual_seed(0)
    conv = kind(cin, cout, 3, padding=1, groups=groups, bias=False)
    batch = 8 if cin == 64 else 2
    x = torch.randn(batch, cin, size, size, requires_grad=True)
    separate = _as_separate_convs(conv)
    assert torch.allclose(separate(x), conv(x), atol=1e-5)  # the same computation
    reference = flop_counter(lambda: separate(x).sum().backward())
    assert gl.count_flops(conv, x, backward=True) == reference
    assert gl.count_flops(conv, x) == flop_counter(lambda: conv(x))  # forward: torch is right
    weights_only = flop_counter(lambda: separate(x.detach()).sum().backward())
    assert gl.count_flops(conv, x.detach(), backward=True) == weights_only


def test_depthwise_convolution_backward_is_three_forwards_not_torchs_count():
    """The issue's case: a depthwise 3x3 on 8x64x56x56 is 86.7 MFLOP forward and backward;
    torch's FlopCounterMode alone says 1.907 GFLOP."""
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False)
    x = torch.randn(8, 64, 56, 56, requires_grad=True)
    counted = gl.count_flops(conv, x, backward=True)
    assert counted == gl.conv2d_flops(8, 64, 64, 3, 56, padding=1, groups=64, backward=True)
    assert counted == 3 * 2 * 8 * 64 * 56 * 56 * 9 == 86_704_128
    assert flop_counter(lambda: conv(x).sum().backward()) == 1_907_490_816  # torch 2.x's count


def test_matmul_and_functions():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    assert gl.count_flops(torch.mm, a, b) == gl.matmul_flops(64, 32, 16) == 2 * 64 * 32 * 16
    assert gl.count_flops(lambda x: torch.relu(x) + 1, a) == 0  # elementwise work is not counted


def test_a_small_cnn_is_the_sum_of_its_layers():
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 16 * 16, 10),
    )
    x = torch.randn(4, 3, 16, 16)
    by_hand = gl.conv2d_flops(4, 3, 8, 3, 16, padding=1, backward=True, input_grad=False)
    by_hand += gl.linear_flops(4, 8 * 16 * 16, 10, backward=True)
    assert gl.count_flops(net, x, backward=True) == by_hand


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="rows=0 must be a positive integer"):
        gl.linear_flops(0, 1, 1)
    with pytest.raises(ValueError, match="groups=3 must divide in_channels=4"):
        gl.conv2d_flops(1, 4, 6, 3, 8, groups=3)
    with pytest.raises(ValueError, match="size=2 is too small"):
        gl.conv2d_flops(1, 1, 1, 5, 2)
    with pytest.raises(ValueError, match="kernel_size="):
        gl.conv2d_flops(1, 1, 1, (3, 3, 3), 8)
    with pytest.raises(TypeError, match="not callable"):
        gl.count_flops(42)
    with pytest.raises(ValueError, match="backward=True needs an output that requires grad"):
        gl.count_flops(torch.mm, torch.randn(2, 2), torch.randn(2, 2), backward=True)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(stride=0), ValueError, "stride=0 must be a positive int"),
        (dict(stride=-1), ValueError, "stride=-1"),
        (dict(stride=(1, 0)), ValueError, r"stride=\(1, 0\)"),
        (dict(dilation=0), ValueError, "dilation=0"),
        (dict(padding=-1), ValueError, "padding=-1 must be a 0 or more int"),
        (dict(padding=(0, -2)), ValueError, r"padding=\(0, -2\)"),
        (dict(kernel_size=0), ValueError, "kernel_size=0"),
        (dict(kernel_size=-3), ValueError, "kernel_size=-3"),
        (dict(kernel_size=(3, 3, 3)), ValueError, r"kernel_size=\(3, 3, 3\)"),
        (dict(kernel_size=3.0), TypeError, "kernel_size=3.0"),
        (dict(kernel_size=True), TypeError, "kernel_size=True"),
        (dict(kernel_size=(3, 2.5)), TypeError, r"kernel_size=\(3, 2.5\)"),
        (dict(input_size=float("nan")), TypeError, "input_size=nan"),
        (dict(stride="2"), TypeError, "stride='2'"),
        (dict(groups=0), ValueError, "groups=0"),
        (dict(batch_size=float("inf")), TypeError, "batch_size=inf"),
    ],
)
def test_conv2d_refuses_impossible_geometry(kwargs, error, match):
    args = dict(batch_size=1, in_channels=4, out_channels=8, kernel_size=3, input_size=16) | kwargs
    with pytest.raises(error, match=match):
        gl.conv2d_flops(**args)


def test_conv2d_counts_zero_padding_and_rectangular_kernels_like_torch():
    conv = torch.nn.Conv2d(2, 4, (3, 1), stride=(2, 1), padding=(0, 1), dilation=(1, 2))
    x = torch.randn(1, 2, 9, 7)
    expected = gl.conv2d_flops(
        1, 2, 4, (3, 1), (9, 7), stride=(2, 1), padding=(0, 1), dilation=(1, 2)
    )
    assert expected == gl.count_flops(conv, x) > 0


@pytest.mark.parametrize(
    "bad, error",
    [
        (0, ValueError),
        (-1, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        (float("nan"), TypeError),
        ("8", TypeError),
    ],
)
def test_matmul_and_linear_refuse_non_counts(bad, error):
    with pytest.raises(error, match="k="):
        gl.matmul_flops(8, bad, 8)
    with pytest.raises(error, match="out_features="):
        gl.linear_flops(8, 8, bad)


def test_eager_cost_counts_flops_and_every_operator_s_bytes():
    a, b = torch.ones(32, 16), torch.ones(16, 8)
    flops, nbytes = gl.eager_cost(lambda: torch.relu(a @ b))
    # matmul: read 32x16 and 16x8, write 32x8; relu: read and write 32x8 (FP32)
    assert flops == 2 * 32 * 16 * 8
    assert nbytes == 4 * (32 * 16 + 16 * 8 + 32 * 8) + 4 * 2 * 32 * 8
    with pytest.raises(TypeError, match="fn=3"):
        gl.eager_cost(3)


def test_fusion_traffic_refuses_what_is_not_a_chain_on_one_tensor():
    with pytest.raises(TypeError, match="fn=42"):
        gl.costmodels.flops.fusion_traffic(42, 64)
    with pytest.raises(TypeError, match="fn=.*function of one tensor.*takes 2"):
        gl.costmodels.flops.fusion_traffic(lambda x, y: x + y, 64)
    with pytest.raises(ValueError, match="fn=.*traceable"):
        gl.costmodels.flops.fusion_traffic(lambda x: x if x.sum() > 0 else -x, 64)
    with pytest.raises(ValueError, match="fn=.*1 to 12 operations"):
        gl.costmodels.flops.fusion_traffic(lambda x: x, 64)


def test_eager_cost_says_what_is_missing_when_torch_drops_its_private_api(monkeypatch):
    import sys

    import torch.utils.flop_counter  # noqa: F401 - loaded before the private module goes

    # A module set to None in sys.modules cannot be imported: as if torch had removed it.
    monkeypatch.setitem(sys.modules, "torch.utils._python_dispatch", None)
    with pytest.raises(RuntimeError, match="TorchDispatchMode.*count_flops still counts"):
        gl.eager_cost(lambda: torch.ones(2, 2) @ torch.ones(2, 2))
    # FLOP counting does not depend on it.
    assert gl.count_flops(torch.mm, torch.ones(2, 3), torch.ones(3, 4)) == 2 * 2 * 3 * 4
