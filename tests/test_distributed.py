"""torchrun launches: a failed or hung rank ends the job in time with one clear sentence."""

import os
import textwrap

import pytest

import gpulab as gl
from gpulab.labkit.launcher import _rank_error, _root_cause

pytest.importorskip("torch.distributed.run")


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_a_healthy_job_reports_each_rank(tmp_path):
    write(tmp_path, "hello.py", 'import os\nprint("hello from", os.environ["RANK"])\n')
    # An upper bound, never waited out: the job is done in ~2 s on an idle 2-core machine.
    result = gl.torchrun("hello.py", 2, cwd=tmp_path, timeout_s=60, echo=False)
    assert result.ok and result.returncode == 0 and bool(result)
    assert "[rank0]:hello from 0" in result.stdout and "[rank1]:hello from 1" in result.stdout
    assert "2 processes finished" in str(result)
    assert result.check() is result


def test_a_failing_rank_gives_one_clear_sentence(tmp_path):
    write(
        tmp_path,
        "fail.py",
        """
        import os, time
        if os.environ["RANK"] == "1":
            raise ValueError("rank 1 was told to fail")
        time.sleep(60)  # rank 0 would wait for a long time: torchrun must stop it
        """,
    )
    # Never waited out either (torchrun stops rank 0 within ~3 s of rank 1 failing); kept
    # below rank 0's 60 s sleep, so a rank that is not stopped shows up as a timeout.
    result = gl.torchrun("fail.py", 2, cwd=tmp_path, timeout_s=50, echo=False)
    assert not result.ok and not result.timed_out and result.elapsed_s < 50
    assert result.failed_rank == 1 and result.returncode != 0
    assert "rank 1 exited with code 1 (ValueError: rank 1 was told to fail)" in result.message
    with pytest.raises(RuntimeError, match="rank 1 was told to fail"):
        result.check()


def test_a_stuck_collective_times_out_inside_the_job(tmp_path):
    write(
        tmp_path,
        "stuck.py",
        """
        import time
        from datetime import timedelta
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=2))
        if dist.get_rank() == 1:
            time.sleep(60)  # never reaches the barrier
        dist.barrier()
        """,
    )
    # The barrier gives up after the 2 s of init_process_group (the job ends in ~8 s); the
    # 90 s bound only catches a collective timeout that does not work.
    result = gl.torchrun("stuck.py", 2, cwd=tmp_path, timeout_s=90, echo=False)
    assert not result.ok and not result.timed_out
    assert result.failed_rank == 0
    assert "timed out" in result.message.lower() and "another rank did not join" in result.message


def test_a_hung_rank_is_stopped_at_the_timeout(tmp_path):
    import time
    from pathlib import Path

    if not Path("/proc/self/stat").exists():
        pytest.skip("reads each process's state from /proc (Linux)")
    # After the timeout the hung rank is gone: no process, or only a zombie (dead, not yet
    # reaped), or its pid reused by a process that started later. Its 300 s sleep tells a
    # stopped rank from a running one; the job may not end before timeout_s, and stopping
    # it may take the two 5 s waits of TERM then KILL, plus 10 s for a loaded machine.
    write(
        tmp_path,
        "hang.py",
        """
        import os, time
        with open("/proc/self/stat") as stat:  # field 22: when this process started
            started = stat.read().rsplit(")", 1)[1].split()[19]
        with open(f"pid{os.environ['RANK']}", "w") as f:
            f.write(f"{os.getpid()} {started}")
        print("rank", os.environ["RANK"], "is up", flush=True)
        if os.environ["RANK"] == "1":
            time.sleep(300)
        """,
    )
    # Waited out in full: 8 s is 4x the ~2 s both ranks need to be up (and to have written
    # their pids) on an idle machine, which leaves room for a loaded one.
    result = gl.torchrun("hang.py", 2, cwd=tmp_path, timeout_s=8, echo=False)
    assert result.timed_out and result.returncode is None and not result.ok
    assert 8 <= result.elapsed_s < 8 + 2 * 5 + 10
    assert "did not finish within timeout_s=8 s" in result.message
    assert "[rank1]:rank 1 is up" in result.stdout  # it was running when the timeout came
    pid, started = (tmp_path / "pid1").read_text().split()

    def running() -> bool:
        try:
            os.kill(int(pid), 0)  # succeeds for a zombie too, hence the state below
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (ProcessLookupError, FileNotFoundError):
            return False  # no such process
        state, *fields = stat.rsplit(")", 1)[1].split()
        return state not in ("Z", "X") and fields[18] == started

    # The stop is over when torchrun returns; 10 s more covers a rank still being torn down.
    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(), f"rank 1 (pid {pid}) still runs after the timeout"


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="script='nope.py' does not exist"):
        gl.torchrun("nope.py", 2, cwd=tmp_path)
    write(tmp_path, "ok.py", "pass\n")
    with pytest.raises(ValueError, match="n_ranks=0"):
        gl.torchrun("ok.py", 0, cwd=tmp_path)
    with pytest.raises(ValueError, match="timeout_s=-1"):
        gl.torchrun("ok.py", 2, cwd=tmp_path, timeout_s=-1)


def test_the_report_parser_names_the_root_cause():
    stderr = textwrap.dedent(
        """\
        [rank0]:[rank0]: Traceback (most recent call last):
        [rank0]:[rank0]: RuntimeError: [/x/gloo/transport/tcp/pair.cc:534] Connection closed by peer
        [rank1]:Traceback (most recent call last):
        [rank1]:KeyError: 'lr'
        torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
        Root Cause (first observed failure):
        [0]:
          rank      : 1 (local_rank: 1)
          exitcode  : 1 (pid: 42)
        """
    )
    assert _root_cause(stderr) == (1, 1)
    assert _rank_error(stderr, 1) == "KeyError: 'lr'"
    assert _rank_error(stderr, 0) == "RuntimeError: Connection closed by peer"
    assert _root_cause("no report") == (None, None)


def test_launch_env_keeps_what_the_user_set():
    env = gl.labkit.launcher.launch_env({"MASTER_ADDR": "10.0.0.1"})
    assert env["MASTER_ADDR"] == "10.0.0.1" and env["PYTHONUNBUFFERED"] == "1"
    assert gl.labkit.launcher.launch_env({})["MASTER_ADDR"] == "127.0.0.1"
    for bad in (42, ["MASTER_ADDR"], {"RANK": 0}):
        with pytest.raises(TypeError, match="base="):
            gl.labkit.launcher.launch_env(bad)


@pytest.mark.parametrize(
    "field, error",
    [({"command": ["python", "x.py"]}, TypeError), ({"command": ("python", 1)}, TypeError),
     ({"returncode": 2.5}, TypeError), ({"stdout": None}, TypeError),
     ({"elapsed_s": -1.0}, ValueError), ({"timed_out": 0}, TypeError),
     ({"failed_rank": -1}, ValueError), ({"stopped_pids": [12]}, TypeError),
     ({"surviving_pids": (0,)}, TypeError), ({"stopped_pids": (True,)}, TypeError)],
)  # fmt: skip
def test_a_launch_result_refuses_bad_fields_by_name(field, error):
    good = dict(command=("python", "x.py"), returncode=0, stdout="", stderr="", elapsed_s=1.0,
                timed_out=False, failed_rank=None, message="ok")  # fmt: skip
    (name,) = field
    with pytest.raises(error, match=f"{name}="):
        gl.labkit.launcher.LaunchResult(**(good | field))


@pytest.mark.parametrize(
    "gpus, backend, n_ranks, device",
    [(0, "gloo", 2, "cpu"), (1, "gloo", 2, "cpu"), (2, "nccl", 2, "cuda"), (8, "nccl", 8, "cuda")],
)
def test_dist_plan_follows_the_hardware(gpus, backend, n_ranks, device):
    plan = gl.dist_plan(n_gpus=gpus)
    assert (plan.backend, plan.n_ranks, plan.device) == (backend, n_ranks, device)
    assert plan.reason
    with pytest.raises(ValueError, match="n_gpus=-1"):
        gl.dist_plan(n_gpus=-1)


def _no_process_may_start(monkeypatch):
    """Make any attempt to start a process fail the test, whatever catches exceptions."""
    import subprocess

    started = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    return started


@pytest.mark.parametrize(
    "bad, error",
    [(float("inf"), ValueError), (float("-inf"), ValueError), (float("nan"), ValueError),
     (0, ValueError), (-1, ValueError), (True, TypeError), ("60", TypeError), (None, TypeError),
     (1e300, ValueError), (30 * 86400, ValueError)],
)  # fmt: skip
def test_a_bad_timeout_is_refused_before_anything_starts(tmp_path, monkeypatch, bad, error):
    write(tmp_path, "ok.py", "pass\n")
    started = _no_process_may_start(monkeypatch)
    with pytest.raises(error, match="timeout_s=.* must be (a positive number|at most)"):
        gl.torchrun("ok.py", 2, cwd=tmp_path, timeout_s=bad, echo=False)
    assert started == []


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_ranks=2.0), TypeError, "n_ranks=2.0"),
        (dict(n_ranks=True), TypeError, "n_ranks=True"),
        (dict(n_ranks=0), ValueError, "n_ranks=0"),
        (dict(n_ranks=10**30), ValueError, r"n_ranks=1\.000e\+30 must be at most 1_024"),
        (dict(n_ranks=1025), ValueError, "n_ranks=1025 must be at most 1_024"),
        (dict(args="--epochs 2"), TypeError, "args='--epochs 2'"),
        (dict(args=["--epochs", None]), TypeError, "args="),
        (dict(env={"RANK": 0}), TypeError, "env="),
        (dict(env="RANK=0"), TypeError, "env="),
        (dict(cwd=42), TypeError, "cwd=42"),
        (dict(cwd="no_such_folder"), ValueError, "cwd='no_such_folder'"),
        (dict(script=3), TypeError, "script=3"),
        (dict(script="missing.py"), ValueError, "script='missing.py' does not exist"),
        (dict(echo="yes"), TypeError, "echo='yes'"),
    ],
)
def test_other_bad_arguments_are_refused_before_anything_starts(
    tmp_path, monkeypatch, kwargs, error, match
):
    write(tmp_path, "ok.py", "pass\n")
    started = _no_process_may_start(monkeypatch)
    args = dict(script="ok.py", n_ranks=2, cwd=tmp_path, echo=False) | kwargs
    with pytest.raises(error, match=match):
        gl.torchrun(args.pop("script"), args.pop("n_ranks"), **args)
    assert started == []


@pytest.mark.parametrize(
    "bad, error",
    [(2.0, TypeError), (True, TypeError), ("2", TypeError), (float("nan"), TypeError),
     (-1, ValueError)],
)  # fmt: skip
def test_dist_plan_refuses_a_gpu_count_that_is_not_a_count(bad, error):
    with pytest.raises(error, match="n_gpus="):
        gl.dist_plan(n_gpus=bad)


def test_one_gpu_puts_every_run_of_a_comparison_on_the_same_device(fake_gpu):
    fake_gpu("T4", n_gpus=1)
    plan = gl.dist_plan()
    assert (plan.device, plan.backend) == ("cpu", "gloo")
    # The 1-rank baseline and the N-rank run get the same device, and sizes follow it.
    assert plan.env == {"GPULAB_DIST_DEVICE": "cpu"}
    assert plan.scale(cpu=512, gpu=4096) == 512


def test_two_gpus_put_every_rank_on_a_gpu(fake_gpu):
    fake_gpu("T4", n_gpus=2)
    plan = gl.dist_plan()
    assert (plan.device, plan.backend, plan.n_ranks) == ("cuda", "nccl", 2)
    assert plan.env == {"GPULAB_DIST_DEVICE": "cuda"}
    assert plan.scale(cpu=512, gpu=4096) == 4096


def _fits(width, layers, memory, bytes_per_param=20, share=0.5):
    return layers * width * (width + 1) * bytes_per_param <= share * memory


@pytest.mark.parametrize("name", ["T4", "A100", "H100"])
def test_fsdp_width_fits_each_gpus_memory(fake_gpu, name):
    gpu = fake_gpu(name, n_gpus=2)
    plan = gl.dist_plan()
    assert plan.memory_bytes() == gpu.total_memory
    width = plan.fit_width(8192, 16)
    assert _fits(width, 16, gpu.total_memory)
    assert width == 8192 or not _fits(2 * width, 16, gpu.total_memory)  # the largest that fits
    if name == "T4":  # 1.07e9 parameters need ~21 GB: more than a 16 GB T4 holds
        assert width == 4096


def test_cpu_ranks_share_the_hosts_memory(fake_gpu, monkeypatch):
    fake_gpu("A100", n_gpus=1)  # one GPU: the ranks run on the CPU, sized by host RAM
    monkeypatch.setattr("gpulab.labkit.launcher.host_memory_bytes", lambda: int(12.7e9))  # Colab
    plan = gl.dist_plan()
    assert plan.memory_bytes() == int(12.7e9) // 2
    width = plan.fit_width(8192, 16)
    assert width == 2048 and _fits(width, 16, 12.7e9 / 2)
    with pytest.raises(ValueError, match="does not fit"):
        plan.fit_width(64, 10**9)


def test_host_memory_is_read_from_the_system():
    from gpulab.labkit.launcher import host_memory_bytes

    assert host_memory_bytes() > 2**27  # a real machine has more than 128 MiB
