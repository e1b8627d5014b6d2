"""Launch a multi-process PyTorch job with ``torchrun``, with a timeout and a clear verdict.

People run distributed training as ``torchrun --nproc_per_node=N train.py``: torchrun starts
N copies of the script, gives each its ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE``, and
stops them all when one fails. :func:`torchrun` does exactly that from Python (it runs
``python -m torch.distributed.run`` in a subprocess), and adds what a notebook needs:

* a wall-clock timeout, after which every process of the job is stopped, so a rank stuck in
  a collective cannot hang the notebook;
* one sentence saying what went wrong (which rank failed, with its exception), instead of
  two screens of tracebacks; the full log stays in the result.

See also the chapters "Scaling out" (``book/distributed.md``, ``book/parallelism.md``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab._checks import (
    MAX_RANKS,
    at_most,
    choice,
    flag,
    fraction,
    non_negative_int,
    non_negative_number,
    positive_int,
    positive_number,
    text,
    wrong_type,
)
from gpulab._checks import path as check_path
from gpulab.units import format_bytes, format_duration

__all__ = ["DistPlan", "LaunchResult", "dist_plan", "launch_env", "torchrun"]


@dataclass(frozen=True)
class DistPlan:
    """How to run a multi-process job on this machine.

    Attributes
    ----------
    backend : str
        ``"nccl"`` (several CUDA GPUs, one process each) or ``"gloo"`` (CPU processes).
    n_ranks : int
        Processes to start on this machine, at most ``MAX_RANKS`` (1024).
    device : str
        ``"cuda"`` or ``"cpu"``: where each process computes.
    reason : str
        One sentence saying why.
    """

    backend: str
    n_ranks: int
    device: str
    reason: str

    def __post_init__(self) -> None:
        choice("backend", self.backend, ("nccl", "gloo"))
        positive_int("n_ranks", self.n_ranks)
        at_most("n_ranks", self.n_ranks, MAX_RANKS, "processes of one job")
        choice("device", self.device, ("cuda", "cpu"))
        text("reason", self.reason)

    @property
    def env(self) -> dict[str, str]:
        """Environment for a job of this plan: ``GPULAB_DIST_DEVICE`` names the device.

        A script reads it to put every rank on the plan's device, so a 1-rank baseline and
        an N-rank run compare the same device (on one GPU both run on the CPU).

        >>> import gpulab as gl
        >>> gl.dist_plan(n_gpus=1).env
        {'GPULAB_DIST_DEVICE': 'cpu'}
        """
        return {DEVICE_ENV: self.device}

    def scale(self, cpu, gpu):
        """``gpu`` when the plan runs on CUDA GPUs, else ``cpu`` (a size for this plan's jobs).

        Unlike :func:`gpulab.scale`, which looks at the device of the notebook, this follows
        the plan: on a machine with one GPU the ranks are CPU processes, so CPU sizes.

        >>> import gpulab as gl
        >>> gl.dist_plan(n_gpus=1).scale(cpu=512, gpu=4096), gl.dist_plan(n_gpus=2).scale(1, 8)
        (512, 8)
        """
        return gpu if self.device == "cuda" else cpu

    def memory_bytes(self) -> int:
        """Memory one rank of this plan may use, in bytes.

        On CUDA, the smallest GPU's total memory (each rank has a GPU of its own); on the
        CPU, the host's physical memory shared by the ``n_ranks`` processes.
        """
        if self.device == "cuda":
            import torch

            return min(
                int(torch.cuda.get_device_properties(i).total_memory) for i in range(self.n_ranks)
            )
        return host_memory_bytes() // self.n_ranks

    def fit_width(
        self, width: int, layers: int, *, bytes_per_param: float = 20.0, share: float = 0.5
    ) -> int:
        """The largest of ``width``, ``width/2``, ``width/4``, ... whose model fits a rank.

        The model is ``layers`` square linear layers (``width * (width + 1)`` parameters
        each) and every parameter costs ``bytes_per_param`` bytes on one rank (20 for fp32
        training with Adam under DDP: weights, gradients, gradient buckets, two moments).
        It fits when that is at most ``share`` of :meth:`memory_bytes`, leaving the rest for
        activations, the framework and (on the CPU) everything else.

        Raises
        ------
        TypeError
            For an argument of the wrong type (a float ``width``, a str ``share``).
        ValueError
            If not even a width of 8 fits, or for a value that is not allowed.
        """
        width = positive_int("width", width)
        layers = positive_int("layers", layers)
        bytes_per_param = positive_number("bytes_per_param", bytes_per_param)
        share = fraction("share", share, allow_zero=False, allow_one=True)
        budget = share * self.memory_bytes()
        while layers * width * (width + 1) * bytes_per_param > budget:
            if width <= 8:
                raise ValueError(
                    f"width=8 with layers={layers} does not fit in {format_bytes(budget)} "
                    f"per rank; use fewer layers"
                )
            width //= 2
        return width


#: The environment variable that tells a job's ranks which device the plan chose.
DEVICE_ENV = "GPULAB_DIST_DEVICE"


def host_memory_bytes() -> int:
    """Physical memory of this machine in bytes (``/proc/meminfo``'s MemTotal, or sysconf)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # the kernel reports kB (KiB)
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def dist_plan(n_gpus: int | None = None) -> DistPlan:
    """Choose the backend and the number of processes from the hardware present.

    One process per GPU with NCCL where there are at least two CUDA GPUs; otherwise two
    CPU processes with gloo (NCCL needs a GPU of its own for every rank, so a single GPU
    cannot host two NCCL ranks). The plan holds for every run of a comparison: with one GPU
    the 1-rank baseline runs on the CPU too (pass :attr:`DistPlan.env` to the job), and
    problem sizes follow the plan's device (:meth:`DistPlan.scale`,
    :meth:`DistPlan.fit_width`), not the notebook's.

    Parameters
    ----------
    n_gpus : int, optional
        Number of CUDA GPUs (0 to ``MAX_RANKS``, 1024); default ``torch.cuda.device_count()``.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.dist_plan(n_gpus=0).backend, gl.dist_plan(n_gpus=0).n_ranks
    ('gloo', 2)
    >>> gl.dist_plan(n_gpus=8).n_ranks
    8
    """
    if n_gpus is None:
        try:
            import torch

            n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        except ImportError:
            n_gpus = 0
    n_gpus = non_negative_int("n_gpus", n_gpus)
    at_most("n_gpus", n_gpus, MAX_RANKS, "GPUs of one machine, a rank each")
    if n_gpus >= 2:
        return DistPlan("nccl", n_gpus, "cuda", f"{n_gpus} CUDA GPUs: one NCCL rank each.")
    why = "One GPU cannot host two NCCL ranks" if n_gpus == 1 else "No CUDA GPU"
    return DistPlan(
        "gloo",
        2,
        "cpu",
        f"{why}: CPU processes with gloo for every run (baselines included), "
        "so runs compare the same device.",
    )


def _environment(name: str, value) -> dict[str, str]:
    """``value`` if it is a dict of str to str (environment variables); a TypeError if not."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise wrong_type(name, value, "a dict of str to str (environment variables), or None")
    return value


def launch_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a single-machine job: ``base`` plus what makes gloo reliable.

    Gloo picks the network interface from the host name, which on some sandboxes and
    containers resolves to an address it cannot use; on Linux the loopback interface ``lo``
    always works for processes on one machine, so ``GLOO_SOCKET_IFNAME=lo`` is set unless
    the caller set it. ``MASTER_ADDR`` defaults to ``127.0.0.1`` for the same reason.
    """
    if base is not None:
        _environment("base", base)
    env = dict(os.environ if base is None else base)
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    if sys.platform.startswith("linux") and Path("/sys/class/net/lo").exists():
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output arrives as it is printed
    return env


@dataclass(frozen=True)
class LaunchResult:
    """What a :func:`torchrun` launch did.

    Attributes
    ----------
    command : tuple of str
        The command line that ran.
    returncode : int or None
        torchrun's exit code (None when it was stopped at the timeout or could not start).
    stdout, stderr : str
        Everything the job printed; each rank's lines start with ``[rank<i>]:``.
    elapsed_s : float
        Wall-clock seconds, including starting the processes.
    timed_out : bool
        True when the job ran past ``timeout_s`` and was stopped.
    failed_rank : int or None
        The rank torchrun named as the first failure ("root cause").
    message : str
        One sentence: success, or what went wrong.
    stopped_pids : tuple of int
        After a timeout, the process ids of the job that were stopped: torchrun and every
        process it started, found before any was signalled. Empty when the job ended itself.
    surviving_pids : tuple of int
        Those of ``stopped_pids`` still running after SIGTERM, a grace period and SIGKILL
        (normally none; the message names any).
    """

    command: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool
    failed_rank: int | None
    message: str
    stopped_pids: tuple[int, ...] = ()
    surviving_pids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.command, tuple) or not all(isinstance(c, str) for c in self.command):
            raise wrong_type("command", self.command, "a tuple of str")
        if self.returncode is not None and (
            isinstance(self.returncode, bool) or not isinstance(self.returncode, int)
        ):
            raise wrong_type("returncode", self.returncode, "an int or None")
        for name in ("stdout", "stderr", "message"):
            text(name, getattr(self, name))
        non_negative_number("elapsed_s", self.elapsed_s)
        flag("timed_out", self.timed_out)
        if self.failed_rank is not None:
            non_negative_int("failed_rank", self.failed_rank)
        for name in ("stopped_pids", "surviving_pids"):
            pids = getattr(self, name)
            if not isinstance(pids, tuple) or not all(
                isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pids
            ):
                raise wrong_type(name, pids, "a tuple of process ids (int above 0)")

    @property
    def ok(self) -> bool:
        """True when every rank finished with exit code 0 in time."""
        return self.returncode == 0 and not self.timed_out

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def check(self) -> LaunchResult:
        """Return self when the job succeeded; otherwise raise ``RuntimeError(message)``."""
        if not self.ok:
            raise RuntimeError(self.message)
        return self


#: The longest timeout torchrun accepts: a week. Waiting on a process for much longer (about
#: 24.8 days, 2**31 ms) overflows the operating system's poll() and raises after the start.
_MAX_TIMEOUT_S = 7 * 86400.0

_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s*")
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)$")
_SOURCE_REF = re.compile(r"\[[^\]]*\.(?:cc|cpp|h|hpp):\d+\]\s*")  # "[.../pair.cc:534] "


def _root_cause(stderr: str) -> tuple[int | None, int | None]:
    """(rank, exit code) of the first failure from torchrun's ChildFailedError report."""
    block = stderr.split("Root Cause", 1)[-1] if "Root Cause" in stderr else ""
    rank = re.search(r"rank\s*:\s*(\d+)", block)
    code = re.search(r"exitcode\s*:\s*(-?\d+)", block)
    return (int(rank.group(1)) if rank else None, int(code.group(1)) if code else None)


def _rank_error(stderr: str, rank: int | None) -> str | None:
    """The last exception line a rank printed (``ValueError: ...``), if any."""
    found = None
    for line in stderr.splitlines():
        if "ChildFailedError" in line:
            break  # from here on it is torchrun's own report
        line_rank = None
        while match := _RANK_PREFIX.match(line):  # torchrun's prefix, then torch's own
            line_rank, line = match.group(1), line[match.end() :]
        match = _ERROR_LINE.match(line.strip())
        if match and (rank is None or line_rank in (None, str(rank))):
            found = _SOURCE_REF.sub("", match.group(1)).strip()
    return found


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def _logged_output(log_dir: Path) -> str:
    """The ranks' stdout as torchrun logged it (what a killed torchrun had not yet echoed)."""
    lines = []
    for log in sorted(log_dir.glob("**/stdout.log")):
        rank = log.parent.name
        text = log.read_text(encoding="utf-8", errors="replace")
        lines += [f"[rank{rank}]:{line}" for line in text.splitlines()]
    return "\n".join(lines)


#: Seconds the job's processes get to exit after SIGTERM before they are killed with SIGKILL.
_GRACE_S = 5.0


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of ``/proc/<pid>/stat``); None if it has ended.

    A pid is reused once its process is gone, so a pid and its start time name one process.
    A zombie (ended, not yet reaped) counts as ended.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, *fields = stat.rsplit(")", 1)[1].split()
    return None if state in ("Z", "X") else fields[18]


def _children() -> dict[int, list[int]]:
    """Every running process's children, from ``/proc/<pid>/stat`` (empty without /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
        children.setdefault(parent, []).append(int(entry.name))
    return children


def _job_processes(roots: Sequence[int]) -> dict[int, str]:
    """``roots`` and all their descendants that still run, as {pid: start time}.

    torchrun starts each rank in a session of its own, so the launcher's process group does
    not hold the ranks: they are found as its descendants instead.
    """
    children = _children()
    found: dict[int, str] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        started = _start_time(pid)
        if pid in found or started is None:
            continue
        found[pid] = started
        todo += children.get(pid, [])
    return found


def _signal(processes: dict[int, str], sig: int) -> None:
    """Send ``sig`` to each process that still is the one recorded (not a reused pid)."""
    for pid, started in processes.items():
        if _start_time(pid) == started:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def _still_running(processes: dict[int, str]) -> list[int]:
    return sorted(pid for pid, started in processes.items() if _start_time(pid) == started)


def _stop(proc: subprocess.Popen) -> tuple[str, str, tuple[int, ...], tuple[int, ...]]:
    """Stop torchrun and every process of its job: SIGTERM, then SIGKILL after a grace period.

    The job's processes (the launcher and all its descendants, ranks in sessions of their
    own included) are collected before any is signalled: once the launcher has gone, its
    ranks belong to another parent and could no longer be traced to it.

    Returns
    -------
    tuple
        (stdout, stderr, the pids that were stopped, the pids still running afterwards).
    """
    processes = _job_processes([proc.pid])
    processes.setdefault(proc.pid, _start_time(proc.pid) or "")
    output: tuple[str, str] | None = None
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if hasattr(os, "killpg"):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        else:  # pragma: no cover - Windows
            proc.kill()
        _signal(processes, sig)
        deadline = time.monotonic() + _GRACE_S
        while output is None or _still_running(processes):
            if time.monotonic() >= deadline:
                break
            if output is None:  # reads the pipes, so a launcher blocked writing can exit
                try:
                    output = proc.communicate(timeout=0.1)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(0.05)
        else:
            break
        # a process started during the grace period (a rank's worker) is stopped too
        processes |= _job_processes(list(processes))
    stdout, stderr = output or ("", "")
    survivors = tuple(_still_running(processes))
    return stdout, stderr, tuple(sorted(processes)), survivors


def _stopped_sentence(stopped: Sequence[int], survivors: Sequence[int]) -> str:
    """What stopping a job did, in words: the processes stopped and any that survived.

    >>> _stopped_sentence((11, 12, 13), ())
    '3 processes (torchrun and its ranks: pids 11, 12, 13) were stopped.'
    >>> _stopped_sentence((11, 12), (12,))[-46:]
    'were signalled, but 12 still runs: kill -9 12.'
    """
    what = f"{len(stopped)} processes (torchrun and its ranks: pids {', '.join(map(str, stopped))})"
    if not survivors:
        return f"{what} were stopped."
    verb = "still runs" if len(survivors) == 1 else "still run"
    left = ", ".join(map(str, survivors))
    return f"{what} were signalled, but {left} {verb}: kill -9 {' '.join(map(str, survivors))}."


def torchrun(
    script: str | os.PathLike,
    n_ranks: int | None = None,
    args: Sequence[str] = (),
    *,
    timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    echo: bool = True,
) -> LaunchResult:
    """Run ``torchrun --standalone --nproc_per_node=n_ranks script args...`` with a timeout.

    Parameters
    ----------
    script : path
        The training script; it reads ``RANK``/``WORLD_SIZE`` from the environment and
        calls ``torch.distributed.init_process_group`` itself, as under torchrun.
    n_ranks : int, optional
        Processes to start, at most ``MAX_RANKS`` (1024); default :func:`dist_plan`'s
        choice (one per GPU, or 2 on CPU).
    args : sequence of str
        Arguments passed to the script (numbers and paths are written out with ``str``).
    timeout_s : float
        Wall-clock limit for the whole job in seconds, start-up included: a finite number
        above 0 and at most 7 days. After it every process of the job (torchrun, its
        ranks and their children) gets SIGTERM, then SIGKILL 5 s later, and the result
        names the processes stopped and any that survived. Give the script's own collectives a
        shorter timeout (``init_process_group(timeout=...)``) so a stuck collective fails
        with a message before this limit.
    env : dict, optional
        Extra environment variables for the job (added to :func:`launch_env`).
    cwd : path, optional
        Working folder of the job (default the current one).
    echo : bool
        Print the ranks' output and the verdict when the job ends.

    Returns
    -------
    LaunchResult
        Never raises for a failed or hung job; call ``.check()`` to turn failure into an
        exception.

    Raises
    ------
    TypeError
        For an argument of the wrong type: a ``script`` or ``cwd`` that is not a path, an
        ``n_ranks`` that is not an int, a ``timeout_s`` that is not a number, ``args`` that
        are not a sequence of str (or numbers), an ``env`` that is not a dict of str to str,
        an ``echo`` that is not True or False.
    ValueError
        For a script or folder that does not exist, an ``n_ranks`` below 1 or above 128, or a
        ``timeout_s`` that is not a finite number of seconds above 0 and at most 7 days.
        Every argument is checked before anything is started.
    """
    timeout_s = positive_number("timeout_s", timeout_s)
    if timeout_s > _MAX_TIMEOUT_S:  # the OS cannot wait longer than about 24 days
        raise ValueError(f"timeout_s={timeout_s!r} must be at most {_MAX_TIMEOUT_S:g} s (7 days)")
    if n_ranks is not None:
        n_ranks = positive_int("n_ranks", n_ranks)
        at_most("n_ranks", n_ranks, MAX_RANKS, "processes of one job")
    if (
        isinstance(args, (str, bytes))
        or not isinstance(args, Sequence)
        or not all(
            isinstance(a, (str, os.PathLike, int, float)) and not isinstance(a, bool) for a in args
        )
    ):
        raise wrong_type("args", args, "a sequence of str, e.g. ['--epochs', '2']")
    if env is not None:
        _environment("env", env)
    flag("echo", echo)
    if cwd is not None:
        check_path("cwd", os.fspath(cwd) if isinstance(cwd, os.PathLike) else cwd, kind="dir")
    script_path = check_path(
        "script", os.fspath(script) if isinstance(script, os.PathLike) else script
    )
    path = Path(cwd or ".") / script_path
    if not path.is_file():
        raise ValueError(f"script={str(script)!r} does not exist (looked in {path.parent})")
    if n_ranks is None:
        n_ranks = dist_plan().n_ranks

    with tempfile.TemporaryDirectory(prefix="gpulab-torchrun-") as log_dir:
        command = (
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nnodes=1",
            f"--nproc_per_node={n_ranks}",
            "--max_restarts=0",
            "--role=rank",  # each line of rank i's output starts with "[rank<i>]:"
            "--tee=3",
            f"--log_dir={log_dir}",
            str(script),
            *map(str, args),
        )
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=launch_env() | dict(env or {}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its own process group, so a timeout stops every rank
            )
        except OSError as err:
            message = f"could not start torchrun: {err}"
            return LaunchResult(command, None, "", str(err), 0.0, False, None, message)
        timed_out = False
        stopped: tuple[int, ...] = ()
        survivors: tuple[int, ...] = ()
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            stdout, stderr, stopped, survivors = _stop(proc)
            stdout = stdout or _logged_output(Path(log_dir))
        elapsed = time.perf_counter() - start

    returncode = None if timed_out else proc.returncode
    failed_rank, exit_code = _root_cause(stderr)
    name = Path(script).name
    if timed_out:
        message = (
            f"{name} did not finish within timeout_s={timeout_s:g} s, so its "
            f"{_stopped_sentence(stopped, survivors)} The job is slow or stuck: too much work "
            f"for this device and timeout_s, or a rank waiting in a collective that another "
            f"rank never reaches. Last output: {_tail(stdout)}"
        )
    elif returncode == 0:
        message = f"{name}: {n_ranks} processes finished in {format_duration(elapsed)}."
    elif "No module named torch" in stderr:
        message = "torchrun needs PyTorch, which is not installed here: pip install torch"
    else:
        error = _rank_error(stderr, failed_rank)
        who = f"rank {failed_rank}" if failed_rank is not None else "a rank"
        code = f" with code {exit_code}" if exit_code is not None else ""
        message = f"{name} failed after {format_duration(elapsed)}: {who} exited{code}"
        message += f" ({error})." if error else f". Last output: {_tail(stderr)}"
        if error and re.search(r"timed out|timeout", error, re.IGNORECASE):
            message += (
                " A collective timed out: another rank did not join it in time"
                " (it crashed, hung, or took a different branch)."
            )
        message += " The other ranks were stopped; the full log is in .stdout and .stderr."
    result = LaunchResult(
        command, returncode, stdout, stderr, elapsed, timed_out, failed_rank, message,
        stopped, survivors,
    )  # fmt: skip
    if echo:
        if stdout.strip():
            print(stdout.rstrip())
        print(("OK: " if result.ok else "FAILED: ") + message)
    return result
