"""Failures inside the collectives of the parallelism lab end the job cleanly, in time.

A rank that raises while the other waits in an all-to-all (expert parallelism), and a rank
that hangs while the other waits in a ring step (context parallelism): each job ends within
its timeout with one sentence naming the failed rank, and no rank's process is left running.
"""

import os
import textwrap
import time
from pathlib import Path

import pytest

import gpulab as gl

pytest.importorskip("torch.distributed.run")
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads each process's state from /proc (Linux)"
)

# Each rank writes its pid and start time (field 22 of /proc/self/stat) before it fails, so
# the test can tell whether that very process still runs afterwards.
PREAMBLE = """
import os, time
from datetime import timedelta
import torch
import torch.distributed as dist
with open("/proc/self/stat") as stat:
    started = stat.read().rsplit(")", 1)[1].split()[19]
with open(f"pid{os.environ['RANK']}", "w") as f:
    f.write(f"{os.getpid()} {started}")
dist.init_process_group("gloo", timeout=timedelta(seconds=3))
rank = dist.get_rank()
"""


def _launch(tmp_path, body, timeout_s):
    (tmp_path / "job.py").write_text(PREAMBLE + textwrap.dedent(body))
    return gl.torchrun("job.py", 2, cwd=tmp_path, timeout_s=timeout_s, echo=False)


def _running(tmp_path, rank) -> bool:
    pid, started = (tmp_path / f"pid{rank}").read_text().split()
    try:
        os.kill(int(pid), 0)  # succeeds for a zombie too, hence the state below
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    state, *fields = stat.rsplit(")", 1)[1].split()
    return state not in ("Z", "X") and fields[18] == started


def _no_rank_left(tmp_path):
    # torchrun has returned; 10 s more covers ranks still being torn down on a loaded machine.
    deadline = time.monotonic() + 10
    while any(_running(tmp_path, r) for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(tmp_path, r) for r in (0, 1)), "a rank still runs after the job"


def test_a_rank_that_raises_during_an_all_to_all_ends_the_job(tmp_path):
    body = """
    x = torch.arange(4.0)
    out = torch.empty(4)
    dist.all_to_all_single(out, x)  # both ranks: the dispatch works once
    if rank == 1:
        raise ValueError("router produced NaN scores")  # rank 0 waits in the combine
    dist.all_to_all_single(out, x)
    """
    # Rank 0's all-to-all gives up after its 3 s timeout, or torchrun stops it as soon as rank 1
    # has exited; 60 s only catches a job that would hang (start-up takes ~5 s when loaded).
    result = _launch(tmp_path, body, timeout_s=60)
    assert not result.ok and not result.timed_out
    assert result.failed_rank in (0, 1)
    assert "exited" in result.message and "The other ranks were stopped" in result.message
    assert "router produced NaN" in result.stderr
    _no_rank_left(tmp_path)


def test_a_rank_that_hangs_in_a_ring_step_ends_the_job_within_its_timeout(tmp_path):
    body = """
    block = torch.full((8,), float(rank))
    buf = torch.empty(8)
    if rank == 1:
        time.sleep(300)  # stuck before its ring step: rank 0 waits for its block
    peer = 1 - rank
    ops = [dist.P2POp(dist.isend, block, peer), dist.P2POp(dist.irecv, buf, peer)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    """
    # Rank 0's receive gives up after the 3 s collective timeout; torchrun then stops the
    # sleeping rank 1. The job must end long before rank 1's 300 s sleep: 60 s is the bound.
    result = _launch(tmp_path, body, timeout_s=60)
    assert not result.ok and not result.timed_out and result.elapsed_s < 60
    assert result.failed_rank == 0
    assert "timed out" in result.message.lower()
    _no_rank_left(tmp_path)


def test_a_timeout_stops_ranks_that_ignore_sigterm_and_says_which_processes_it_stopped(tmp_path):
    # torchrun starts each rank in a session of its own, so stopping torchrun's process group
    # alone leaves these ranks running. No collective: each rank only records its pid, ignores
    # SIGTERM and hangs, and the job must still leave no process behind.
    (tmp_path / "job.py").write_text(
        textwrap.dedent(
            """
            import os, signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            with open("/proc/self/stat") as stat:
                started = stat.read().rsplit(")", 1)[1].split()[19]
            with open(f"pid{os.environ['RANK']}.tmp", "w") as f:
                f.write(f"{os.getpid()} {started}")
            os.replace(f"pid{os.environ['RANK']}.tmp", f"pid{os.environ['RANK']}")
            time.sleep(600)
            """
        )
    )
    timeout_s = 8.0
    # the ranks must be up before the timeout; on a loaded machine torchrun's start-up is slow,
    # so the timeout grows until a launch finds both ranks running when it ends
    for _ in range(3):
        result = gl.torchrun("job.py", 2, cwd=tmp_path, timeout_s=timeout_s, echo=False)
        if all((tmp_path / f"pid{r}").exists() for r in (0, 1)):
            break
        timeout_s *= 2
    else:
        pytest.skip("torchrun did not start both ranks in time on this machine")
    assert result.timed_out and not result.ok and result.returncode is None
    assert result.surviving_pids == ()
    rank_pids = {int((tmp_path / f"pid{r}").read_text().split()[0]) for r in (0, 1)}
    assert rank_pids <= set(result.stopped_pids)
    assert all(str(pid) in result.message for pid in result.stopped_pids)
    assert f"{len(result.stopped_pids)} processes" in result.message
    assert "were stopped" in result.message
    assert not any(_running(tmp_path, r) for r in (0, 1)), "a rank survived the timeout"
