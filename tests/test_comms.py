import csv
from pathlib import Path

import numpy as np
import pytest

import gpulab as gl

DATA = Path(gl.__file__).parent / "data" / "interconnects.csv"


def test_every_interconnect_has_a_source_and_a_one_way_bandwidth():
    links = gl.list_interconnects()
    assert len(links) == len(list(csv.DictReader(DATA.open()))) >= 15
    for link in links:
        assert link.source_url.startswith("https://"), link.name
        assert link.bandwidth > 1e9
    assert {link.kind for link in links} == {"pcie", "nvlink", "nvswitch", "infiniband"}


def test_registry_matches_the_fact_sheet():
    # Each row's source_url (NVIDIA's V100 datasheet, Bekman's ml-engineering network notes):
    # NVLink per GPU 160/300/600/900/1800 GB/s bidirectional; halved here.
    assert [link.bandwidth / 1e9 for link in gl.list_interconnects("nvlink")][:5] == [
        80,
        150,
        300,
        450,
        900,
    ]
    # Derived from PCI-SIG's transfer rates (the rows' source_url): 8/16/32 GT/s × 128/130
    # / 8 bits × 16 lanes = 15.75 / 31.5 / 63 GB/s per direction.
    assert [link.bandwidth / 1e9 for link in gl.list_interconnects("pcie")] == [15.75, 31.5, 63]
    # NDR: 400 Gb/s per port = 50 GB/s.
    assert gl.interconnect("InfiniBand NDR").bandwidth == 50e9
    # HDR: NVIDIA's ConnectX-6 manual gives "sub-600ns latency", the bound stored.
    assert gl.interconnect("IB HDR").latency_s == pytest.approx(0.6e-6)
    assert "ConnectX6" in gl.interconnect("IB HDR").source_url


@pytest.mark.parametrize(
    "query, expected",
    [
        ("PCIe 4", "PCIe Gen4 x16"),
        ("pcie gen4 x16", "PCIe Gen4 x16"),
        ("PCIe-5", "PCIe Gen5 x16"),
        ("NVLink 4", "NVLink 4 (H100/H200)"),
        ("nvlink4.0", "NVLink 4 (H100/H200)"),
        ("NVLink 4 (H100/H200)", "NVLink 4 (H100/H200)"),
        ("InfiniBand NDR", "InfiniBand NDR (4x)"),
        ("ib ndr", "InfiniBand NDR (4x)"),
        ("NVSwitch gen 3", "NVSwitch gen 3 (DGX H100)"),
        ("nvswitch3", "NVSwitch gen 3 (DGX H100)"),
    ],
)
def test_forgiving_names(query, expected):
    assert gl.interconnect(query).name == expected


@pytest.mark.parametrize(
    "bad, error",
    [("NVLink 9", ValueError), ("ethernet", ValueError), ("", ValueError), (None, TypeError)],
)
def test_unknown_link_lists_the_choices(bad, error):
    with pytest.raises(error, match="PCIe Gen4 x16") as err:
        gl.interconnect(bad)
    assert "NVLink 4 (H100/H200)" in str(err.value)


def test_unknown_link_suggests_a_close_name():
    with pytest.raises(ValueError, match="Did you mean 'NVLink 4"):
        gl.interconnect("NVLnk 4")


def test_ring_allreduce_hand_computed():
    # p=4, n=8 MB, alpha=10 us, beta=10 GB/s: 2*3*10us + 2*3/4*8e6/1e10 = 60 us + 1.2 ms
    t = gl.allreduce_time(8e6, 4, alpha_s=10e-6, bandwidth_bytes_per_s=10e9)
    assert t == pytest.approx(60e-6 + 1.2e-3)
    # the bandwidth term is nearly independent of p
    big = [gl.allreduce_time(1e9, p, alpha_s=0, bandwidth_bytes_per_s=1e9) for p in (2, 8, 64)]
    assert big == pytest.approx([1.0, 1.75, 2 * 63 / 64])


def test_other_algorithms_hand_computed():
    kw = dict(alpha_s=1e-6, bandwidth_bytes_per_s=1e9)
    # tree all-reduce on 8 ranks: 2*3*(alpha + n/beta)
    assert gl.allreduce_time(1e6, 8, algorithm="tree", **kw) == pytest.approx(6 * (1e-6 + 1e-3))
    # Rabenseifner: 2*3*alpha + 2*7/8*n/beta
    assert gl.allreduce_time(1e6, 8, algorithm="rabenseifner", **kw) == pytest.approx(
        6e-6 + 1.75e-3
    )
    # all-gather and reduce-scatter: (p-1)*alpha + (p-1)/p*n/beta
    assert gl.allgather_time(1e6, 4, **kw) == pytest.approx(3e-6 + 0.75e-3)
    assert gl.reduce_scatter_time(1e6, 4, **kw) == pytest.approx(3e-6 + 0.75e-3)
    # reduce-scatter + all-gather = ring all-reduce
    assert gl.reduce_scatter_time(1e6, 4, **kw) + gl.allgather_time(1e6, 4, **kw) == pytest.approx(
        gl.allreduce_time(1e6, 4, **kw)
    )
    # broadcast: pipelined ring (p-1)*alpha + n/beta; tree ceil(log2 p)*(alpha + n/beta)
    assert gl.broadcast_time(1e6, 5, **kw) == pytest.approx(4e-6 + 1e-3)
    assert gl.broadcast_time(1e6, 5, algorithm="tree", **kw) == pytest.approx(3 * (1e-6 + 1e-3))


def test_one_rank_communicates_nothing():
    for fn in (gl.allreduce_time, gl.allgather_time, gl.reduce_scatter_time, gl.broadcast_time):
        assert fn(1e9, 1, alpha_s=1e-3, bandwidth_bytes_per_s=1e9) == 0.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_bytes=-1, n_gpus=2), ValueError, "n_bytes=-1"),
        (dict(n_bytes=float("nan"), n_gpus=2), ValueError, "n_bytes=nan"),
        (dict(n_bytes=float("inf"), n_gpus=2), ValueError, "n_bytes=inf"),
        (dict(n_bytes="1e6", n_gpus=2), TypeError, "n_bytes='1e6'"),
        (dict(n_bytes=1, n_gpus=0), ValueError, "n_gpus=0 must be a positive integer"),
        (dict(n_bytes=1, n_gpus=2.5), TypeError, "n_gpus=2.5"),
        (dict(n_bytes=1, n_gpus=True), TypeError, "n_gpus=True"),
        (dict(n_bytes=1, n_gpus=2, alpha_s=-1), ValueError, "alpha_s=-1"),
        (dict(n_bytes=1, n_gpus=2, alpha_s=float("nan")), ValueError, "alpha_s=nan"),
        (dict(n_bytes=1, n_gpus=2, bandwidth_bytes_per_s=0), ValueError, "bandwidth_bytes_per_s=0"),
        (
            dict(n_bytes=1, n_gpus=2, bandwidth_bytes_per_s=float("inf")),
            ValueError,
            "bytes_per_s=inf",
        ),
        (
            dict(n_bytes=1, n_gpus=2, algorithm="butterfly"),
            ValueError,
            "algorithm='butterfly'.*ring, tree",
        ),
        (dict(n_bytes=1, n_gpus=2, algorithm=42), TypeError, "algorithm=42.*'ring', 'tree'"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, error, match):
    args = dict(alpha_s=1e-6, bandwidth_bytes_per_s=1e9) | kwargs
    n, p = args.pop("n_bytes"), args.pop("n_gpus")
    with pytest.raises(error, match=match):
        gl.allreduce_time(n, p, **args)


def test_an_infinite_bandwidth_is_refused_rather_than_giving_zero_time():
    # n/inf would be 0 s: a plausible-looking number from an impossible link.
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s=inf"):
        gl.costmodels.comms.collective_time(
            "broadcast", 1e9, 8, alpha_s=0, bandwidth_bytes_per_s=float("inf")
        )
    with pytest.raises(ValueError, match="collective='gather'"):
        gl.costmodels.comms.collective_time("gather", 1e9, 8, alpha_s=0, bandwidth_bytes_per_s=1e9)


def test_bytes_per_rank_and_bus_bandwidth():
    assert gl.costmodels.comms.allreduce_bytes_per_rank(1e6, 2) == 1e6
    assert gl.costmodels.comms.allreduce_bytes_per_rank(1e6, 1) == 0
    # bus bandwidth of a model-perfect all-reduce is the link bandwidth, for any p
    for p in (2, 4, 16):
        t = gl.allreduce_time(1e8, p, alpha_s=0, bandwidth_bytes_per_s=25e9)
        assert gl.bus_bandwidth(1e8, t, p) == pytest.approx(25e9)


@pytest.mark.parametrize("p, algorithm", [(2, "ring"), (8, "ring"), (8, "tree")])
def test_fit_recovers_alpha_beta_from_exact_data(p, algorithm):
    sizes = np.logspace(2, 8, 13)
    times = [
        gl.allreduce_time(n, p, alpha_s=30e-6, bandwidth_bytes_per_s=2e9, algorithm=algorithm)
        for n in sizes
    ]
    alpha, beta = gl.fit_alpha_beta(sizes, times, p, algorithm=algorithm)
    assert alpha == pytest.approx(30e-6, rel=1e-9)
    assert beta == pytest.approx(2e9, rel=1e-9)


def test_fit_recovers_alpha_beta_from_noisy_data():
    rng = np.random.default_rng(0)
    sizes = np.repeat(np.logspace(3, 8, 11), 5)
    clean = np.array(
        [gl.allreduce_time(n, 2, alpha_s=50e-6, bandwidth_bytes_per_s=5e9) for n in sizes]
    )
    noisy = clean * rng.lognormal(0.0, 0.05, size=clean.shape)
    alpha, beta = gl.fit_alpha_beta(sizes, noisy, 2)
    assert alpha == pytest.approx(50e-6, rel=0.1)
    assert beta == pytest.approx(5e9, rel=0.1)


def test_fit_of_an_allgather_sweep():
    sizes = [1e4, 1e6, 1e8]
    times = [gl.allgather_time(n, 4, alpha_s=2e-6, bandwidth_bytes_per_s=8e9) for n in sizes]
    alpha, beta = gl.fit_alpha_beta(sizes, times, 4, collective="allgather")
    assert (alpha, beta) == pytest.approx((2e-6, 8e9))


def test_fit_clips_a_negative_latency_to_zero():
    sizes = [1e6, 2e6, 4e6]
    times = [0.9e-3, 2e-3, 4.1e-3]  # intercept would be slightly negative
    alpha, beta = gl.fit_alpha_beta(sizes, times, 2)
    assert alpha == 0.0 and beta == pytest.approx(1e9, rel=0.05)


@pytest.mark.parametrize(
    "sizes, times, p, error, match",
    [
        ([1e3, 1e3], [1e-3, 2e-3], 2, ValueError, "two distinct"),
        ([1e3, 1e4], [1e-3], 2, ValueError, "same length"),
        ([1e3, 1e4], [1e-3, 0.0], 2, ValueError, "times_s"),
        ([1e3, 1e4], [1e-3, 1e-3], 1, ValueError, "at least 2 ranks"),
        ([1e3, 1e4], [2e-3, 1e-3], 2, ValueError, "do not grow"),
        ([1e3, float("nan")], [1e-3, 2e-3], 2, ValueError, r"n_bytes\[1\]=nan"),
        ([1e3, 1e4], [1e-3, float("inf")], 2, ValueError, r"times_s\[1\]=inf"),
        ([1e3, "1e4"], [1e-3, 2e-3], 2, TypeError, r"n_bytes\[1\]='1e4'"),
        ("1e3", [1e-3], 2, TypeError, "n_bytes='1e3'"),
        ([1e3, 1e4], 2e-3, 2, TypeError, "times_s=0.002"),
        ([1e3, 1e4], [1e-3, 2e-3], 2.0, TypeError, "n_gpus=2.0"),
    ],
)
def test_fit_rejects_bad_data(sizes, times, p, error, match):
    with pytest.raises(error, match=match):
        gl.fit_alpha_beta(sizes, times, p)


def test_step_time_without_and_with_overlap():
    link = gl.Interconnect("test link", bandwidth=10e9, latency_s=None, source_url="-")
    # 1 GB of gradients on 2 GPUs at 10 GB/s: 2*1/2*1e9/1e10 = 0.1 s of communication
    step = gl.dp_step_time(0.3, 1e9, 2, link=link)
    assert (step.comm_s, step.exposed_comm_s, step.total_s) == pytest.approx((0.1, 0.1, 0.4))
    assert step.efficiency == pytest.approx(0.75)
    assert step.comm_share == pytest.approx(0.25)
    assert step.speedup == pytest.approx(1.5)
    # hide it behind a third of the compute: exposed 0.1 - 0.1 = 0
    hidden = gl.dp_step_time(0.3, 1e9, 2, link=link, overlap=1 / 3)
    assert hidden.exposed_comm_s == pytest.approx(0.0) and hidden.efficiency == pytest.approx(1)
    partly = gl.dp_step_time(0.3, 1e9, 2, link=link, overlap=0.2)
    assert partly.exposed_comm_s == pytest.approx(0.04)


def test_step_time_uses_the_registry_and_latency():
    step = gl.dp_step_time(1.0, 0.0, 4, link="IB HDR")  # only latency: 2*3*0.6 us
    assert step.comm_s == pytest.approx(3.6e-6)
    assert gl.dp_step_time(1.0, 0.0, 4, link="IB HDR", alpha_s=0).comm_s == 0
    single = gl.dp_step_time(1.0, 1e12, 1, link="PCIe 3")
    assert single.comm_s == 0 and single.efficiency == 1
    nv = gl.dp_step_time(0.1, 1e9, 8, link="NVLink 4")
    pcie = gl.dp_step_time(0.1, 1e9, 8, link=gl.interconnect("PCIe 4"))
    assert nv.efficiency > pcie.efficiency


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(compute_s=0), ValueError, "compute_s=0"),
        (dict(overlap=1.5), ValueError, "overlap=1.5"),
        (dict(link=42), TypeError, "link=42"),
        (
            dict(link="token ring"),
            ValueError,
            "link='token ring': no interconnect called 'token ring'",
        ),
        (dict(n_gpus=-2), ValueError, "n_gpus=-2"),
        (dict(compute_s=float("inf")), ValueError, "compute_s=inf"),
        (dict(overlap=float("nan")), ValueError, "overlap=nan"),
        (dict(alpha_s=-1e-6), ValueError, "alpha_s=-1e-06"),
        (dict(grad_bytes=True), TypeError, "grad_bytes=True"),
    ],
)
def test_step_time_bad_input(kwargs, error, match):
    args = dict(compute_s=0.1, grad_bytes=1e6, n_gpus=2, link="PCIe 4") | kwargs
    with pytest.raises(error, match=match):
        gl.dp_step_time(args.pop("compute_s"), args.pop("grad_bytes"), args.pop("n_gpus"), **args)


def test_step_time_records_the_gpu_count_and_checks_its_fields():
    step = gl.dp_step_time(0.1, 1e9, 8, link="NVLink 4")
    assert step.n_gpus == 8 and step.speedup == pytest.approx(8 * step.efficiency)
    with pytest.raises(ValueError, match="comm_s=-1"):
        gl.costmodels.comms.StepTime(
            compute_s=1.0, comm_s=-1, exposed_comm_s=0, total_s=1.0, n_gpus=2
        )
    with pytest.raises(ValueError, match="n_gpus=0"):
        gl.costmodels.comms.StepTime(
            compute_s=1.0, comm_s=0, exposed_comm_s=0, total_s=1.0, n_gpus=0
        )


@pytest.mark.parametrize(
    "fields, match",
    [
        (dict(exposed_comm_s=0.3), "exposed_comm_s=0.3 must be at most comm_s=0.2"),
        (dict(total_s=2.0), r"total_s=2.0 must be compute_s \+ exposed_comm_s"),
        (dict(compute_s=1e308, total_s=1e308, exposed_comm_s=1e308, comm_s=1e308), "too large"),
    ],
)
def test_inconsistent_step_times_are_refused(fields, match):
    record = dict(compute_s=1.0, comm_s=0.2, exposed_comm_s=0.1, total_s=1.1, n_gpus=2) | fields
    with pytest.raises(ValueError, match=match):
        gl.costmodels.comms.StepTime(**record)


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("bandwidth", 0, ValueError),
        ("bandwidth", float("nan"), ValueError),
        ("latency_s", -1.0, ValueError),
        ("kind", "ethernet", ValueError),
        ("year", 2020.5, TypeError),
        ("name", "", ValueError),
        ("name", 42, TypeError),
        ("source_url", None, TypeError),
    ],  # fmt: skip
)
def test_a_custom_link_is_checked_when_built(field, value, error):
    args = dict(name="fitted", bandwidth=10e9, latency_s=5e-6, source_url="measured here")
    with pytest.raises(error, match=f"{field}="):
        gl.Interconnect(**(args | {field: value}))


def test_list_interconnects_names_an_unknown_kind():
    with pytest.raises(ValueError, match="kind='ethernet'"):
        gl.list_interconnects("ethernet")


def test_valid_but_extreme_inputs_do_not_return_infinity():
    with pytest.raises(ValueError, match="overflow"):
        gl.allreduce_time(1e308, 8, alpha_s=0, bandwidth_bytes_per_s=1e-300)
    with pytest.raises(ValueError, match="overflow"):
        gl.bus_bandwidth(1e308, 1e-300, 8)
    one_byte_per_s = gl.Interconnect("string", bandwidth=1.0, latency_s=None, source_url="-")
    with pytest.raises(ValueError, match="overflow"):  # compute + exposed comm overflow
        gl.dp_step_time(1.5e308, 1e308, 8, link=one_byte_per_s)


def test_the_ring_refuses_values_that_are_not_a_table_of_numbers():
    ring = gl.costmodels.comms.simulate_ring_allreduce
    for bad in (42, "ab", [[1.0, True], [1.0, 2.0]], [["1", "2"], ["3", "4"]], [[1.0, None]] * 2):
        with pytest.raises(TypeError, match="values="):
            ring(bad)
    for bad in ([1.0, 2.0], [[1.0, float("nan")], [1.0, 2.0]], [[1.0, 2.0], [1.0]]):
        with pytest.raises(ValueError, match="values"):
            ring(bad)


def test_ddp_buckets_follow_ddps_caps():
    from gpulab.costmodels.comms import ddp_buckets

    mib = 2**20
    # Up to the 1 MiB first bucket: one; then 25 MiB more per bucket.
    assert ddp_buckets(0) == 1 and ddp_buckets(mib) == 1
    assert ddp_buckets(mib + 1) == 2 and ddp_buckets(26 * mib) == 2
    assert ddp_buckets(26 * mib + 1) == 3
    # The distributed lab's MLP, 399,370 FP32 gradients: 2, as DDP itself assigns them.
    assert ddp_buckets(399_370 * 4) == 2
    # An explicit cap applies to every bucket, the first included.
    assert ddp_buckets(399_370 * 4, bucket_cap_mb=1) == 2
    assert ddp_buckets(3 * mib, bucket_cap_mb=1) == 3
    with pytest.raises(ValueError, match="bucket_cap_mb=0"):
        ddp_buckets(mib, bucket_cap_mb=0)
    with pytest.raises(ValueError, match="grad_bytes=-1"):
        ddp_buckets(-1)


def test_ddp_buckets_match_torchs_own_assignment():
    dist = pytest.importorskip("torch.distributed")
    from torch import nn

    from gpulab.costmodels.comms import DDP_BUCKET_CAP_BYTES, DDP_FIRST_BUCKET_BYTES, ddp_buckets

    assert dist._DEFAULT_FIRST_BUCKET_BYTES == DDP_FIRST_BUCKET_BYTES
    for width in (128, 512, 2048):
        model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, 10))
        params = list(model.parameters())
        buckets, _ = dist._compute_bucket_assignment_by_size(
            params, [DDP_FIRST_BUCKET_BYTES, DDP_BUCKET_CAP_BYTES], [False] * len(params)
        )
        grad_bytes = 4 * sum(p.numel() for p in params)
        assert ddp_buckets(grad_bytes) == len(buckets), width


def test_each_bucket_pays_the_latency_once():
    # 2 ranks, alpha 1 ms, 1 GB/s: one all-reduce of 1 MB is 2 x 1 ms + 1 MB / 1 GB/s = 3 ms;
    # three buckets add two more latencies, 2 x 2 ms, and no bytes: 7 ms.
    link = gl.Interconnect("test", bandwidth=1e9, latency_s=1e-3, source_url="hand-made")
    one = gl.dp_step_time(0.01, 1e6, 2, link=link)
    three = gl.dp_step_time(0.01, 1e6, 2, link=link, buckets=3)
    assert one.comm_s == pytest.approx(3e-3) and three.comm_s == pytest.approx(7e-3)
    assert three.total_s == pytest.approx(0.017)
    with pytest.raises(ValueError, match="buckets=0"):
        gl.dp_step_time(0.01, 1e6, 2, link=link, buckets=0)
