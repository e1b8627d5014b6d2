"""A CUDA grid simulator on the CPU that counts what every warp asks of memory.

A CUDA kernel is one function that every thread runs; each thread finds its work from
``blockIdx``, ``blockDim`` and ``threadIdx``. This module runs such functions on the CPU,
for every (block, thread) pair, so the indexing and the memory traffic can be seen and
tested on a machine without a GPU. It is for learning, not speed: a GPU runs the threads at
once, this runs them one after another.

Two ways in, one simulator underneath:

* :func:`launch` runs ``kernel(ctx, *args)``, where ``ctx`` (a :class:`ThreadContext`)
  holds CUDA's built-in variables: the first kernels of the chapter "What a GPU is".
* :func:`simulate` runs a kernel written in **Numba's CUDA kernel language** (``cuda.grid``,
  ``cuda.threadIdx``, ``cuda.shared.array``, ``cuda.syncthreads``, ``cuda.syncwarp``, warp
  shuffles and votes, device functions), the same function that ``numba.cuda.jit``
  compiles for a GPU. It records every global and shared-memory access,
  groups them into warp-wide requests and counts them: 32-byte sectors requested against
  the fewest that could serve the same bytes, 128-byte lines, shared-memory bank conflicts
  and the fraction of a warp's lanes that were active. These are **counts, not times**.

Scheduling is deterministic: the threads of a block run one at a time, in thread order,
from one barrier (``cuda.syncthreads()``) to the next. That is one legal schedule of many,
so a kernel that forgets a barrier fails here every time, where a GPU might get the answer
right by luck. With ``strict=True`` the simulator also reports what that schedule hides:
races, negative indices and barriers that not every thread reaches
(:mod:`gpulab.kernels.faults`). Blocks with barriers run their threads as greenlets where
the ``greenlet`` package is installed (fast), as operating-system threads otherwise; the
counts are the same.

See also the chapters "What a GPU is" (``book/gpu_basics.md``) and "Inside a fast kernel"
(``book/kernels.md``).
"""

from __future__ import annotations

import ast
import contextvars
import ctypes
import itertools
import linecache
import sys
import threading
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from gpulab._checks import (
    MAX_RUN_TIME_S,
    MAX_SIMULATED_THREADS,
    at_most,
    flag,
    fraction,
    non_negative_int,
    positive_int,
    wrong_type,
)
from gpulab.kernels.faults import (
    BarrierError,
    EndlessError,
    HazardTracker,
    IndexTypeError,
    OutOfBoundsError,
    RaceError,
    UnsupportedError,
)

__all__ = [
    "Dim3",
    "KernelCounts",
    "ThreadContext",
    "launch",
    "simulate",
    "thread_map",
    "BANK_BYTES",
    "LINE_BYTES",
    "N_BANKS",
    "SECTOR_BYTES",
    "WARP_SIZE",
]

#: In strict mode, the memory accesses and barrier waits a kernel may make before the
#: simulator calls it endless: about a minute of simulation, far more than any gym task needs.
STRICT_STEP_LIMIT = 5_000_000
_ENDLESS_HINT = (
    "look for a loop whose condition never changes (a step that is never halved, an index "
    "never advanced)"
)
_MAX_THREADS_PER_BLOCK = 1024  # the CUDA limit on every GPU since compute capability 2.0
WARP_SIZE = 32  #: threads per warp on every NVIDIA GPU
SECTOR_BYTES = 32  #: the unit in which L1/L2 move global memory
LINE_BYTES = 128  #: a cache line: four sectors
N_BANKS = 32  #: shared-memory banks
BANK_BYTES = 4  #: each bank serves one 4-byte word per cycle


@dataclass(frozen=True)
class Dim3:
    """CUDA's ``dim3``: a size or an index in up to three dimensions (integers of 0 or more)."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            non_negative_int(axis, getattr(self, axis))

    @classmethod
    def of(cls, value: int | tuple[int, ...] | Dim3, name: str) -> Dim3:
        """A size from an int, a tuple of 1 to 3 ints or a Dim3, each at least 1."""
        wanted = "1 to 3 positive integers, e.g. 4 or (4, 2)"
        if isinstance(value, Dim3):
            dims = (value.x, value.y, value.z)
        elif isinstance(value, (tuple, list)):
            dims = tuple(value)
        else:
            dims = (value,)
        if not all(isinstance(d, Integral) and not isinstance(d, bool) for d in dims):
            raise wrong_type(name, value, wanted)
        if not 1 <= len(dims) <= 3 or min(dims) < 1:
            raise ValueError(f"{name}={value!r} must be {wanted}")
        for d in dims:  # named here, not by the field it becomes
            positive_int(name, d)
        return cls(*dims)

    @property
    def size(self) -> int:
        return self.x * self.y * self.z


@dataclass(frozen=True)
class ThreadContext:
    """What one thread can see: CUDA's built-in variables."""

    blockIdx: Dim3  # noqa: N815 - CUDA's names, kept so kernels read like CUDA C
    threadIdx: Dim3  # noqa: N815
    blockDim: Dim3  # noqa: N815
    gridDim: Dim3  # noqa: N815

    def __post_init__(self) -> None:
        for name in ("blockIdx", "threadIdx", "blockDim", "gridDim"):
            if not isinstance(getattr(self, name), Dim3):
                raise wrong_type(name, getattr(self, name), "a Dim3")

    @property
    def global_x(self) -> int:
        """``blockIdx.x * blockDim.x + threadIdx.x``: the usual 1-D element index."""
        return self.blockIdx.x * self.blockDim.x + self.threadIdx.x


def _indices(dims: Dim3):
    for z, y, x in itertools.product(range(dims.z), range(dims.y), range(dims.x)):
        yield Dim3(x, y, z)


# --------------------------------------------------------------------------- the engine


class _Thread:
    """One simulated thread: where it is, and how often it reached each access site."""

    __slots__ = ("ctx", "block", "linear", "warp", "lane", "seen")

    def __init__(self, ctx: ThreadContext, block: int, linear: int) -> None:
        self.ctx = ctx
        self.block = block
        self.linear = linear
        self.warp, self.lane = divmod(linear, WARP_SIZE)
        self.seen: dict = {}

    def describe(self) -> str:
        """``thread (3, 0) of block (1, 0)``: as many dimensions as the launch uses."""
        ctx = self.ctx

        def show(idx: Dim3, dims: Dim3) -> str:
            n = 3 if dims.z > 1 else 2 if dims.y > 1 else 1
            values = (idx.x, idx.y, idx.z)[:n]
            return str(values[0]) if n == 1 else str(values)

        return (
            f"thread {show(ctx.threadIdx, ctx.blockDim)} of block {show(ctx.blockIdx, ctx.gridDim)}"
        )


class _Abort(BaseException):
    """Unwinds a waiting thread of a block that will not go on (not an Exception: a
    kernel's own ``except Exception`` does not catch it)."""


def _site(frame) -> str:
    """``line 4 of copy (`dst[i] = src[i]`)``: where a frame is, for a learner."""
    code = frame.f_code
    line = frame.f_lineno - code.co_firstlineno + 1
    text = linecache.getline(code.co_filename, frame.f_lineno).split("  #")[0].strip()
    return f"line {line} of {code.co_name}" + (f" (`{text}`)" if text else "")


class _Engine:
    """Runs thread bodies block by block, one thread at a time, and keeps the access log."""

    def __init__(self, grid: Dim3, block: Dim3, trace: bool, strict: bool = False) -> None:
        self.grid, self.block = grid, block
        self.trace = trace
        self.strict = strict
        self.current: _Thread | None = None
        self.log: list[tuple] = []  # (array id, block, warp, lane, line, write, occurrence, byte)
        self.arrays: list[tuple[str, str, int]] = []  # array id -> (name, space, itemsize)
        self.offsets: list[int] = []  # array id -> byte offset of its first element
        self.shared: dict = {}  # this block's shared arrays, by call site
        self.shared_sites: list = []  # ((code, line), site) of each, in the order first called
        self.epoch = 0  # barriers this block has passed
        self.warp_epochs: dict[int, int] = {}  # cuda.syncwarp() calls each warp has passed
        self.barriers = 0  # barriers passed, summed over blocks
        self.atomics = 0  # atomic operations by single threads
        self.shared_atomics = 0  # those on shared arrays
        self.hazards = HazardTracker() if strict else None
        self.steps_left = STRICT_STEP_LIMIT  # accesses and barrier waits, counted when strict
        self._wait: Callable | None = None  # the running block's barrier
        self.os_thread: int | None = None  # the OS thread running a kernel thread, if not ours

    def add_array(self, name: str, space: str, itemsize: int, offset: int = 0) -> int:
        self.arrays.append((name, space, itemsize))
        self.offsets.append(offset)
        return len(self.arrays) - 1

    def record(self, array_id: int, byte: int, line: int, write: bool) -> None:
        t = self.current
        key = (array_id, line, write)
        occurrence = t.seen.get(key, 0)
        t.seen[key] = occurrence + 1
        self.log.append((array_id, t.block, t.warp, t.lane, line, write, occurrence, byte))

    def step(self, frame) -> None:
        """Count one access or barrier wait; stop a kernel that seems never to end."""
        self.steps_left -= 1
        if self.steps_left < 0:
            raise EndlessError(
                f"the kernel made more than {STRICT_STEP_LIMIT:,} memory accesses and barrier "
                f"waits; {self.current.describe()} was at {_site(frame)}: {_ENDLESS_HINT}"
            )

    def check_hazard(self, array, byte: int, idx, write: bool, frame) -> None:
        """Raise :class:`RaceError` where this access races with another thread's."""
        self.step(frame)
        t = self.current
        other = self.hazards.access(
            array._id,
            byte,
            block=t.block,
            epoch=self.epoch,
            thread=t.linear,
            write=write,
            warp=t.warp,
            warp_epoch=self.warp_epochs.get(t.warp, 0),
        )
        if other is None:
            return
        block, thread, wrote, warp = other
        if thread == -2:
            who = "other threads" + (" of other blocks" if block != t.block else "")
        else:
            who = "another thread" if block == t.block else "a thread of another block"
        done = "wrote" if wrote else "read"
        name = self.arrays[array._id][0]
        if self.arrays[array._id][1] != "shared":
            fix = "give every thread its own element to write, or use cuda.atomic.add"
        elif block == t.block and warp == t.warp and self.block.size <= WARP_SIZE:
            fix = (
                f"the threads are lanes of warp {t.warp}, which do not run in lockstep on GPUs "
                "since Volta: put cuda.syncwarp() (or cuda.syncthreads()) between the write and "
                "the reads, and between the last read and the next write"
            )
        else:
            fix = (
                "put cuda.syncthreads() between the write and the reads, and between the last "
                "read and the next write"
            )
            if block == t.block and warp == t.warp:
                fix += (
                    f" (the threads are lanes of warp {t.warp}: where only one warp's lanes run "
                    "this part, as inside `if tid < 32`, use cuda.syncwarp() there instead, "
                    "since a cuda.syncthreads() that the other warps skip is a deadlock)"
                )
        raise RaceError(
            f"race on {name}{_index_text(idx)}: {t.describe()} "
            f"{'writes' if write else 'reads'} it at {_site(frame)}, and {who} {done} it "
            f"with no barrier between them, so on a GPU the result depends on timing; {fix}."
        )

    def run(self, body: Callable[[], None], barriers: bool) -> None:
        for b, block_idx in enumerate(_indices(self.grid)):
            threads = [
                _Thread(ThreadContext(block_idx, thread_idx, self.block, self.grid), b, i)
                for i, thread_idx in enumerate(_indices(self.block))
            ]
            self.shared = {}
            self.shared_sites = []
            self.epoch = 0
            self.warp_epochs = {}
            self.exchange_gens: dict[int, int] = {}  # shuffles and votes each warp has passed
            self.exchanges: dict = {}  # (warp, exchange) -> {lane: value}
            if barriers:
                self._run_with_barriers(threads, body)
            else:
                for t in threads:
                    self.current = t
                    body()
        self.current = None

    # A block whose kernel calls syncthreads or syncwarp runs in phases: every ready thread,
    # in thread order, runs until it reaches a barrier or returns. A warp whose running lanes
    # all wait at a cuda.syncwarp() goes on (its lanes become ready again); when no thread
    # is ready, every thread waits at a cuda.syncthreads() and the next phase starts. Each
    # thread is a greenlet (or an OS thread) that the loop below resumes one at a time.
    def _run_with_barriers(self, threads: list[_Thread], body: Callable[[], None]) -> None:
        resume, stop = _greenlet_block(self, body, threads) or _os_thread_block(self, body)
        try:
            ready = list(threads)
            returned: list[tuple[_Thread, None]] = []
            at_block: dict[int, tuple[_Thread, str]] = {}
            at_warp: dict[int, tuple[_Thread, str]] = {}
            while True:
                for t in ready:
                    self.current = t
                    site = resume(t)
                    if site is None:
                        returned.append((t, None))
                    elif isinstance(site, tuple):  # ("warp", site, what): syncwarp, a shuffle
                        at_warp[t.linear] = (t, site[1], site[2])
                    else:
                        at_block[t.linear] = (t, site)
                ready = self._release_warps(threads, at_warp, at_block)
                if ready:
                    continue
                if not at_block:
                    break
                arrived = [at_block[i] for i in sorted(at_block)]
                sites = {site for _, site in arrived}
                if returned or len(sites) > 1:
                    raise BarrierError(_barrier_message(threads, arrived, returned))
                self.epoch += 1
                self.barriers += 1
                ready = [t for t, _ in arrived]
                at_block = {}
        finally:
            stop()

    def _release_warps(self, threads, at_warp: dict, at_block: dict) -> list[_Thread]:
        """The lanes that a cuda.syncwarp(), a shuffle or a vote lets go on: those of every
        warp whose lanes all wait at one kind of them (lanes that returned do not hold a warp
        back). A cuda.syncwarp() orders the lanes' memory accesses; a shuffle or a vote
        exchanges values only."""
        if not at_warp:
            return []
        ready = []
        for warp in sorted({t.warp for t, *_ in at_warp.values()}):
            lanes = [t for t in threads if t.warp == warp]
            waiting = [at_warp[t.linear] for t in lanes if t.linear in at_warp]
            if any(t.linear in at_block for t in lanes):
                other = next(at_block[t.linear] for t in lanes if t.linear in at_block)
                raise BarrierError(
                    f"deadlock in warp {warp} of block "
                    f"{waiting[0][0].describe().split(' of block ')[1]}: "
                    f"{waiting[0][0].describe()} waits at {waiting[0][2]} at {waiting[0][1]}, "
                    f"while {other[0].describe()} of the same warp waits at "
                    f"cuda.syncthreads() at {other[1]}; on a GPU the block hangs. Every lane of "
                    "a warp must reach the same kind of barrier: take cuda.syncthreads() out of "
                    "the `if` that only some lanes enter."
                )
            kinds = sorted({what for *_, what in waiting})
            if len(kinds) > 1:
                first: dict = {}
                for t, site, what in waiting:
                    first.setdefault(what, (t, site))
                a, b = (first[k] for k in kinds[:2])
                raise BarrierError(
                    f"deadlock in warp {warp}: {a[0].describe()} waits at {kinds[0]} at {a[1]}, "
                    f"while {b[0].describe()} waits at {kinds[1]} at {b[1]}; the lanes of a "
                    "warp must reach the same warp operations in the same order."
                )
            for t, *_ in waiting:
                del at_warp[t.linear]
                ready.append(t)
            if kinds == ["cuda.syncwarp()"]:
                self.warp_epochs[warp] = self.warp_epochs.get(warp, 0) + 1
            else:
                self.exchange_gens[warp] = self.exchange_gens.get(warp, 0) + 1
        return sorted(ready, key=lambda t: t.linear)

    def syncthreads(self, site: str, frame) -> None:
        """A barrier: outside a block with barriers every thread runs on on its own."""
        if self.strict:
            self.step(frame)
        if self._wait is not None:
            me = self.current
            self._wait(site)
            self.current = me

    def syncwarp(self, site: str, frame) -> None:
        """A warp's lanes meet: accesses before it are ordered with those after it."""
        if self.strict:
            self.step(frame)
        if self._wait is None:
            raise RuntimeError("cuda.syncwarp() outside a block run with barriers")
        me = self.current
        self._wait(("warp", site, "cuda.syncwarp()"))
        self.current = me

    def exchange(self, what: str, value, frame) -> dict:
        """A shuffle or a vote: this lane leaves ``value`` and waits for the other lanes of
        its warp; returns every taking part lane's value, by lane."""
        if self.strict:
            self.step(frame)
        if self._wait is None:
            raise RuntimeError(f"{what} outside a block run with barriers")
        me = self.current
        key = (me.warp, self.exchange_gens.get(me.warp, 0))
        self.exchanges.setdefault(key, {})[me.lane] = value
        self._wait(("warp", _site(frame), what))
        self.current = me
        return self.exchanges[key]


def _index_text(idx) -> str:
    """``[3, 0]``; a part that is not an integer as Python writes it (``[0.0]``)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    return "[" + ", ".join(str(int(i)) if isinstance(i, Integral) else repr(_plain(i))
                           for i in idx) + "]"  # fmt: skip


def _plain(value):
    """A NumPy scalar as the Python number it holds (``0.0``, not ``np.float64(0.0)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _barrier_message(threads, arrived, returned) -> str:
    n = len(threads)
    sites = sorted({site for _, site in arrived})
    first = arrived[0][0].describe().split(" of ")[1]
    if returned:
        return (
            f"deadlock in {first}: {len(arrived)} of its {n} threads reached the barrier at "
            f"{sites[0]}, but {len(returned)} returned without reaching it (the first is "
            f"{returned[0][0].describe()}); on a GPU the block hangs or computes garbage. Every "
            "thread of a block must reach every cuda.syncthreads(): guard the memory accesses "
            "with `if`, not the barrier, and do not `return` early."
        )
    return (
        f"deadlock in {first}: its threads wait at different barriers ({' and '.join(sites)}); "
        "on a GPU the block hangs or computes garbage. Every thread of a block must reach the "
        "same cuda.syncthreads() calls in the same order: take them out of the `if`."
    )


def _greenlet_block(engine: _Engine, body: Callable[[], None], threads: list[_Thread]):
    """(resume, stop) with each CUDA thread as a greenlet, or None without ``greenlet``."""
    try:
        import greenlet
    except ImportError:  # optional: OS threads do the same, more slowly
        return None
    main = greenlet.getcurrent()

    def run() -> None:
        try:
            body()
        except _Abort:  # stop() unwinds a thread left waiting at a barrier
            return

    glets = {t.linear: greenlet.greenlet(run, parent=main) for t in threads}
    for g in glets.values():  # the caller's context (NumPy's error state) in every thread
        g.gr_context = contextvars.copy_context()

    def wait(site: str) -> None:
        main.switch(site)

    def resume(t: _Thread):
        return glets[t.linear].switch()  # the barrier's site, or None when it returned

    def stop() -> None:
        engine._wait = None
        for g in glets.values():
            if g and not g.dead:
                g.throw(_Abort)

    engine._wait = wait
    return resume, stop


def _os_thread_block(engine: _Engine, body: Callable[[], None]):
    """(resume, stop) with each CUDA thread as an OS thread that runs only when resumed."""
    gates: dict[int, threading.Semaphore] = {}
    back = threading.Semaphore(0)
    box: dict = {"abort": False}
    workers: list[threading.Thread] = []
    workers_by_thread: dict[int, threading.Thread] = {}
    context = contextvars.copy_context()  # the caller's (NumPy's error state), for each thread

    def wait(site: str) -> None:
        me = engine.current.linear
        box["result"] = ("barrier", site)
        back.release()
        gates[me].acquire()
        if box["abort"]:
            raise _Abort

    def worker(i: int) -> None:
        gates[i].acquire()
        if box["abort"]:
            return
        try:
            context.copy().run(body)
            box["result"] = ("done", None)
        except _Abort:
            return
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            # (a _TimeUp too: the time limit stops the OS thread that runs the kernel)
            box["result"] = ("error", exc)
        back.release()

    def resume(t: _Thread):
        if t.linear not in gates:
            gates[t.linear] = threading.Semaphore(0)
            workers.append(threading.Thread(target=worker, args=(t.linear,), daemon=True))
            workers[-1].start()
            workers_by_thread[t.linear] = workers[-1]
        engine.os_thread = workers_by_thread[t.linear].ident
        gates[t.linear].release()
        back.acquire()
        engine.os_thread = None
        kind, value = box["result"]
        if kind == "error":
            raise value
        return value if kind == "barrier" else None

    def stop() -> None:
        engine._wait = None
        box["abort"] = True
        for gate in gates.values():
            gate.release()
        for w in workers:
            w.join(timeout=1.0)  # a worker stopped by the time limit has already ended

    engine._wait = wait
    return resume, stop


class _TimeUp(BaseException):
    """Raised into the thread that runs a kernel when its launch's time limit has passed
    (not an Exception: a kernel's own ``except Exception`` does not catch it)."""


class _TimeLimit:
    """Stop a launch that runs longer than ``seconds`` of wall-clock time.

    A timer thread raises :class:`_TimeUp` in the thread that runs the kernel (this one,
    or the OS thread of the fallback for blocks with barriers) through CPython's
    ``PyThreadState_SetAsyncExc``: a loop that touches no memory (``while True: pass``)
    stops too, in any thread, and no signal handler of the caller (Jupyter's, pytest's) is
    touched.
    """

    def __init__(self, engine: _Engine, seconds: float | None) -> None:
        self.engine, self.seconds = engine, seconds
        self.lock = threading.Lock()
        self.done = False
        self.sent_to: int | None = None
        self.timer: threading.Timer | None = None

    def _fire(self) -> None:
        with self.lock:
            if self.done:
                return
            self.sent_to = self.engine.os_thread or self.owner
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.sent_to), ctypes.py_object(_TimeUp)
            )

    def __enter__(self) -> _TimeLimit:
        if self.seconds is not None:
            self.owner = threading.get_ident()
            self.timer = threading.Timer(self.seconds, self._fire)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.timer is None:
            return
        with self.lock:
            self.done = True
            self.timer.cancel()
            if self.sent_to is not None and exc[0] is not _TimeUp:
                # sent just as the launch ended: take it back before it lands elsewhere
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.sent_to), None)


def _time_up_error(exc: _TimeUp, engine: _Engine, code: types.CodeType, seconds: float):
    """The :class:`EndlessError` for a launch stopped by its time limit: where it was."""
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__) if f.f_code is code]
    where = _site(frames[-1]) if frames else "a line of the kernel"
    who = engine.current.describe() if engine.current is not None else "a thread"
    return EndlessError(
        f"the kernel ran for more than {seconds:g} s of simulation, far longer than a launch "
        f"of this size needs; {who} was at {where}: {_ENDLESS_HINT}"
    )


def _allocation_offset(array: np.ndarray) -> int:
    """Bytes from the start of the allocation an array lives in to its first element.

    The allocation is the array at the end of the NumPy ``.base`` chain (a view's owner,
    through ``as_strided``'s wrapper too); a fresh array is its own, offset 0. On a GPU that
    allocation comes from ``cudaMalloc``, which returns addresses aligned to 256 bytes, so
    the offset decides which sectors a warp's addresses fall in, and where NumPy placed the
    buffer in host memory does not.
    """
    root = array
    while True:
        base = root.base
        if isinstance(base, np.ndarray):
            root = base
        elif isinstance(getattr(base, "base", None), np.ndarray):
            root = base.base  # np.lib.stride_tricks.as_strided wraps its base once
        else:
            break
    # The allocation's lowest byte: below the data pointer where the owner's strides are
    # negative (rare for an owner, but possible for a wrapped buffer).
    lowest = root.__array_interface__["data"][0] + sum(
        (n - 1) * s for n, s in zip(root.shape, root.strides, strict=True) if s < 0 and n > 0
    )
    return array.__array_interface__["data"][0] - lowest


class _TracedArray:
    """A NumPy array seen through a kernel: every element access is logged.

    Addresses are byte offsets from the start of the array's allocation (the end of its
    ``.base`` chain), taken as 256-byte aligned, as ``cudaMalloc`` returns them.
    """

    __slots__ = ("_a", "_engine", "_id", "_strides", "_offset", "shape", "dtype", "size", "ndim")

    def __init__(self, array: np.ndarray, engine: _Engine, name: str, space: str) -> None:
        self._a = array
        self._engine = engine
        self._strides = array.strides
        self._offset = _allocation_offset(array)
        self._id = engine.add_array(name, space, array.itemsize, self._offset)
        self.shape, self.dtype, self.size, self.ndim = (
            array.shape,
            array.dtype,
            array.size,
            array.ndim,
        )

    def __len__(self) -> int:
        return len(self._a)

    def _byte(self, idx) -> int:
        """The element's address: its byte offset from the start of the allocation."""
        idx = idx if isinstance(idx, tuple) else (idx,)
        return self._offset + sum(
            # a negative index counts from the end, as in NumPy and Numba
            (int(i) + (n if int(i) < 0 else 0)) * s
            for i, n, s in zip(idx, self.shape, self._strides, strict=False)
        )

    def _refuse(self, idx, write: bool, frame) -> OutOfBoundsError | None:
        """The error for an index outside the array (negative ones too), or None."""
        parts = idx if isinstance(idx, tuple) else (idx,)
        name = self._engine.arrays[self._id][0]
        if any(type(i) is not int and isinstance(i, (float, np.floating)) for i in parts):
            return IndexTypeError(
                f"{name}{_index_text(idx)}: an index must be an integer; "
                f"{self._engine.current.describe()} {'writes' if write else 'reads'} it at "
                f"{_site(frame)}: `/` gives a float in Python even for two integers, so "
                "divide with `//` (or convert with int())"
            )
        if not all(type(i) is int or isinstance(i, Integral) for i in parts):
            return None  # a slice: NumPy's own error says more
        bad = len(parts) != self.ndim or any(
            not 0 <= int(i) < n for i, n in zip(parts, self.shape, strict=False)
        )
        if not bad:
            return None
        negative = any(int(i) < 0 for i in parts)
        why = (
            "a negative index reads from the end in Python and Numba, and before the array in "
            "CUDA C: compute an index of 0 or more"
            if negative
            else "guard the access with an `if` on the index (threads past the end must not "
            "touch memory)"
        )
        return OutOfBoundsError(
            f"out of bounds: {self._engine.current.describe()} "
            f"{'writes' if write else 'reads'} {name}{_index_text(idx)} at {_site(frame)}, "
            f"but {name} has shape {self.shape}; {why}."
        )

    def _access(self, idx, write: bool, frame) -> None:
        engine = self._engine
        if engine.strict:
            error = self._refuse(idx, write, frame)
            if error is not None:
                raise error
            byte = self._byte(idx)
            engine.check_hazard(self, byte, idx, write, frame)
        elif engine.trace:
            byte = self._byte(idx)
        else:
            return
        if engine.trace:
            engine.record(self._id, byte, frame.f_lineno, write)

    def __getitem__(self, idx):
        frame = sys._getframe(1)
        self._access(idx, False, frame)
        try:
            return self._a[idx]
        except IndexError:
            raise self._refuse(idx, False, frame) or OutOfBoundsError(
                f"{self._engine.arrays[self._id][0]}{_index_text(idx)} is out of bounds at "
                f"{_site(frame)}"
            ) from None

    def __setitem__(self, idx, value) -> None:
        frame = sys._getframe(1)
        self._access(idx, True, frame)
        try:
            self._a[idx] = value
        except IndexError:
            raise self._refuse(idx, True, frame) or OutOfBoundsError(
                f"{self._engine.arrays[self._id][0]}{_index_text(idx)} is out of bounds at "
                f"{_site(frame)}"
            ) from None

    def atomic(self, op: Callable, idx, value, frame):
        """``old = a[idx]; a[idx] = op(old, value); return old``, as one atomic operation."""
        engine = self._engine
        if engine.strict:
            error = self._refuse(idx, True, frame)
            if error is not None:
                raise error
        try:
            old = self._a[idx]
            self._a[idx] = op(old, value)
        except IndexError:
            raise self._refuse(idx, True, frame) or OutOfBoundsError(
                f"{engine.arrays[self._id][0]}{_index_text(idx)} is out of bounds at {_site(frame)}"
            ) from None
        engine.atomics += 1
        if engine.arrays[self._id][1] == "shared":
            engine.shared_atomics += 1
        if engine.trace:  # a read-modify-write: counted as one access, never as a race
            engine.record(self._id, self._byte(idx), frame.f_lineno, True)
        return old


def _dtype(dtype, what: str) -> np.dtype:
    """A NumPy dtype from what a kernel passes: a NumPy type, or a Numba one
    (``numba.float32``, ``numba.types.int32``, whose names are NumPy's)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    name = {"boolean": "bool"}.get(str(dtype), str(dtype))
    try:
        return np.dtype(name)
    except TypeError:
        raise UnsupportedError(
            f"{what}: the dtype {dtype!r} is not one the simulator knows; use a NumPy or "
            "Numba scalar type such as float32, numba.float32 or numba.types.int32"
        ) from None


def _shared_names(frame) -> list[str]:
    """The variables a line's ``cuda.shared.array`` calls are assigned to, in call order:
    ``sA = cuda.shared.array(...)`` gives ``["sA"]``, ``sA, sB = (cuda.shared.array(...),
    cuda.shared.array(...))`` gives ``["sA", "sB"]``."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return []
    if not tree.body or not isinstance(tree.body[0], ast.Assign):
        return []
    node = tree.body[0]
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
        return [t.id if isinstance(t, ast.Name) else "" for t in target.elts]
    return []


class _Shared:
    def __init__(self, engine: _Engine) -> None:
        self._engine = engine

    def array(self, shape, dtype):
        """One array per block and call, shared by the block's threads.

        A call is a place in the code (its line and its position on the line), so two
        calls on one line are two arrays, as for Numba, and a call in a loop is one.
        """
        engine = self._engine
        frame = sys._getframe(1)
        site = (frame.f_code, frame.f_lasti)
        if site not in engine.shared:
            # Named after the variable it is assigned to (``sA = cuda.shared.array(...)``).
            on_line = sum(1 for c, _ in engine.shared_sites if c == (frame.f_code, frame.f_lineno))
            names = _shared_names(frame)
            name = (
                names[on_line]
                if on_line < len(names) and names[on_line]
                else (f"shared@{frame.f_lineno - frame.f_code.co_firstlineno + 1}")
            )
            engine.shared_sites.append(((frame.f_code, frame.f_lineno), site))
            array = np.zeros(shape, _dtype(dtype, "cuda.shared.array"))
            engine.shared[site] = _TracedArray(array, engine, name, "shared")
        return engine.shared[site]


class _Local:
    @staticmethod
    def array(shape, dtype):
        """Per-thread scratch (registers or local memory): not counted."""
        return np.zeros(shape, _dtype(dtype, "cuda.local.array"))


#: Warp shuffles and votes: the lanes of a warp meet and exchange values, in lockstep.
WARP_EXCHANGES = frozenset({
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync",
    "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync",
})  # fmt: skip
_FULL_MASK = 0xFFFFFFFF


def _unsupported(what: str) -> UnsupportedError:
    if what == "cuda.activemask":
        return UnsupportedError(
            "cuda.activemask is refused by the course's simulator because its value depends "
            "on which lanes a divergent branch leaves active at that instant, which a "
            "simulator running a warp's lanes one after another cannot know: pass the full "
            "mask, 0xffffffff, and let every lane of the warp reach the shuffle or vote."
        )
    return UnsupportedError(
        f"{what} is not supported by the course's simulator; it models cuda.grid, "
        "cuda.gridsize, threadIdx, blockIdx, blockDim, gridDim, laneid, warpsize, "
        "cuda.shared.array, cuda.local.array, cuda.syncthreads, cuda.syncwarp, the warp "
        "shuffles and votes of the whole warp, @cuda.jit(device=True) functions and "
        "cuda.atomic.add, .max and .min. Write the step with these, or run it on a GPU."
    )


class _Atomic:
    @staticmethod
    def _do(op, array, idx, value):
        frame = sys._getframe(2)
        if not isinstance(array, _TracedArray):
            raise wrong_type("array", array, "an array argument of the kernel or a shared array")
        return array.atomic(op, idx, value, frame)

    def add(self, array, idx, value):
        """``old = array[idx]; array[idx] += value``, atomically; returns ``old``."""
        return self._do(lambda old, v: old + v, array, idx, value)

    def max(self, array, idx, value):
        """``old = array[idx]; array[idx] = max(old, value)``, atomically; returns ``old``."""
        return self._do(lambda old, v: old if old >= v else v, array, idx, value)

    def min(self, array, idx, value):
        """``old = array[idx]; array[idx] = min(old, value)``, atomically; returns ``old``."""
        return self._do(lambda old, v: old if old <= v else v, array, idx, value)

    def __getattr__(self, name: str):
        raise _unsupported(f"cuda.atomic.{name}")


class _SimCuda:
    """The part of ``numba.cuda`` a kernel uses, answered for the thread that is running."""

    warpsize = WARP_SIZE

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine
        self.shared = _Shared(engine)
        self.local = _Local()
        self.atomic = _Atomic()

    def __getattr__(self, name: str):
        raise _unsupported(f"cuda.{name}")

    @property
    def threadIdx(self) -> Dim3:  # noqa: N802 - numba.cuda's names
        return self._engine.current.ctx.threadIdx

    @property
    def blockIdx(self) -> Dim3:  # noqa: N802
        return self._engine.current.ctx.blockIdx

    @property
    def blockDim(self) -> Dim3:  # noqa: N802
        return self._engine.block

    @property
    def gridDim(self) -> Dim3:  # noqa: N802
        return self._engine.grid

    @property
    def laneid(self) -> int:
        return self._engine.current.lane

    def grid(self, ndim: int):
        ctx = self._engine.current.ctx
        b, t, d = ctx.blockIdx, ctx.threadIdx, ctx.blockDim
        xyz = (b.x * d.x + t.x, b.y * d.y + t.y, b.z * d.z + t.z)
        return xyz[0] if ndim == 1 else xyz[:ndim]

    def gridsize(self, ndim: int):
        g, d = self._engine.grid, self._engine.block
        xyz = (g.x * d.x, g.y * d.y, g.z * d.z)
        return xyz[0] if ndim == 1 else xyz[:ndim]

    def syncthreads(self) -> None:
        frame = sys._getframe(1)
        self._engine.syncthreads(_site(frame), frame)

    # Shuffles and votes: every lane of the warp that has not returned meets the others at
    # the call, leaves its value and reads the lane it asks for (lockstep semantics).
    def _exchange(self, name: str, mask, value) -> tuple[dict, int, object]:
        frame = sys._getframe(2)
        if mask != _FULL_MASK:
            raise UnsupportedError(
                f"cuda.{name}({mask!r}, ...) at {_site(frame)}: the simulator models warp "
                "shuffles and votes of the whole warp only (mask 0xffffffff)"
            )
        values = self._engine.exchange(f"cuda.{name}", value, frame)
        return values, self._engine.current.lane, frame

    def _read_lane(self, name: str, values: dict, lane: int, src: int, frame):
        if src not in values:
            raise BarrierError(
                f"cuda.{name} at {_site(frame)}: lane {lane} of warp "
                f"{self._engine.current.warp} reads the value of lane {src}, which did not "
                "take part (its thread returned, or the block has no such thread); on a GPU "
                "the value is undefined. Let every lane of the warp reach the shuffle."
            )
        return values[src]

    def shfl_sync(self, mask, value, src_lane):
        """The value of lane ``src_lane`` (mod 32)."""
        values, lane, frame = self._exchange("shfl_sync", mask, value)
        return self._read_lane("shfl_sync", values, lane, int(src_lane) % WARP_SIZE, frame)

    def shfl_up_sync(self, mask, value, delta):
        """The value of lane ``lane - delta``; lanes below ``delta`` keep their own."""
        values, lane, frame = self._exchange("shfl_up_sync", mask, value)
        src = lane - int(delta)
        return value if src < 0 else self._read_lane("shfl_up_sync", values, lane, src, frame)

    def shfl_down_sync(self, mask, value, delta):
        """The value of lane ``lane + delta``; lanes past 31 - ``delta`` keep their own."""
        values, lane, frame = self._exchange("shfl_down_sync", mask, value)
        src = lane + int(delta)
        if src >= WARP_SIZE:
            return value
        return self._read_lane("shfl_down_sync", values, lane, src, frame)

    def shfl_xor_sync(self, mask, value, lane_mask):
        """The value of lane ``lane ^ lane_mask`` (a butterfly)."""
        values, lane, frame = self._exchange("shfl_xor_sync", mask, value)
        src = lane ^ int(lane_mask)
        if src >= WARP_SIZE:
            return value
        return self._read_lane("shfl_xor_sync", values, lane, src, frame)

    def all_sync(self, mask, predicate) -> bool:
        """Whether the predicate holds on every lane that takes part."""
        values, _, _ = self._exchange("all_sync", mask, bool(predicate))
        return all(values.values())

    def any_sync(self, mask, predicate) -> bool:
        """Whether the predicate holds on any lane that takes part."""
        values, _, _ = self._exchange("any_sync", mask, bool(predicate))
        return any(values.values())

    def eq_sync(self, mask, predicate) -> bool:
        """Whether the predicate is the same on every lane that takes part."""
        values, _, _ = self._exchange("eq_sync", mask, bool(predicate))
        return len(set(values.values())) == 1

    def ballot_sync(self, mask, predicate) -> int:
        """A 32-bit mask with bit ``i`` set where the predicate holds on lane ``i``."""
        values, _, _ = self._exchange("ballot_sync", mask, bool(predicate))
        return sum(1 << lane for lane, p in values.items() if p)

    def match_any_sync(self, mask, value) -> int:
        """A mask of the lanes whose ``value`` equals this lane's."""
        values, lane, _ = self._exchange("match_any_sync", mask, value)
        return sum(1 << other for other, v in values.items() if v == values[lane])

    def match_all_sync(self, mask, value) -> tuple[int, bool]:
        """``(mask of the lanes, True)`` where every lane's ``value`` is equal, else
        ``(0, False)``."""
        values, _, _ = self._exchange("match_all_sync", mask, value)
        same = len(set(values.values())) == 1
        return (sum(1 << lane for lane in values) if same else 0), same

    def lanemask_lt(self) -> int:
        """A mask of the lanes below this one."""
        return (1 << self._engine.current.lane) - 1

    def syncwarp(self, mask: int = 0xFFFFFFFF) -> None:
        """The lanes of the warp meet (all of them: a partial ``mask`` is refused)."""
        frame = sys._getframe(1)
        if mask != 0xFFFFFFFF:
            raise UnsupportedError(
                f"cuda.syncwarp({mask:#x}) at {_site(frame)}: the simulator models a "
                "cuda.syncwarp() of the whole warp only (mask 0xffffffff, the default)"
            )
        self._engine.syncwarp(_site(frame), frame)


def _check_launch(kernel, grid, block, what: str) -> tuple[Dim3, Dim3]:
    if not callable(kernel):
        raise wrong_type("kernel", kernel, f"a function {what}")
    grid_dim, block_dim = Dim3.of(grid, "grid"), Dim3.of(block, "block")
    if block_dim.size > _MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"block={block!r} has {block_dim.size} threads; CUDA allows at most "
            f"{_MAX_THREADS_PER_BLOCK} per block"
        )
    if grid_dim.size * block_dim.size > MAX_SIMULATED_THREADS:
        raise ValueError(
            f"grid={grid!r} of block={block!r} is {grid_dim.size * block_dim.size} threads; "
            f"the simulator runs at most {MAX_SIMULATED_THREADS} in one launch"
        )
    return grid_dim, block_dim


def launch(kernel: Callable[..., None], grid, block, *args) -> None:
    """Run ``kernel(ctx, *args)`` for every thread of every block: ``kernel<<<grid, block>>>``.

    Parameters
    ----------
    kernel : callable
        ``kernel(ctx, *args)``; ``ctx`` is a :class:`ThreadContext`. Writes its results
        into array arguments, as a CUDA kernel does.
    grid, block : int or tuple of int
        Blocks in the grid and threads per block (at most 1024 threads per block, and
        ``MAX_SIMULATED_THREADS``, 2**20, in all).

    Examples
    --------
    >>> import numpy as np, gpulab as gl
    >>> def add(ctx, a, b, out, n):
    ...     i = ctx.global_x
    ...     if i < n:
    ...         out[i] = a[i] + b[i]
    >>> a, b, out = np.arange(5.0), np.ones(5), np.zeros(5)
    >>> gl.launch(add, 2, 4, a, b, out, 5)
    >>> out
    array([1., 2., 3., 4., 5.])
    """
    grid_dim, block_dim = _check_launch(kernel, grid, block, "kernel(ctx, *args)")
    engine = _Engine(grid_dim, block_dim, trace=False)
    engine.run(lambda: kernel(engine.current.ctx, *args), barriers=False)


# --------------------------------------------------------------------------- counting


@dataclass(frozen=True)
class KernelCounts:
    """What a simulated kernel asked of memory, counted warp by warp (not a time).

    A *request* is one warp executing one load or store instruction: the accesses of the
    warp's active lanes at the same place in the kernel.

    Attributes
    ----------
    global_loads, global_stores : int
        Element accesses to global memory by single threads.
    global_requests : int
        Warp-wide global loads and stores.
    sectors : int
        32-byte sectors those requests touch, summed over requests (a sector two requests
        both touch counts twice: no cache is modelled).
    ideal_sectors : int
        The fewest sectors that hold the same bytes, request by request.
    lines : int
        128-byte lines touched, summed over requests (the "transactions" of older GPUs).
    shared_requests, shared_wavefronts : int
        Warp-wide shared-memory accesses, and the passes the banks need to serve them.
        The 32 banks serve 128 bytes per pass, so a request of 8-byte words is served in
        two halves of 16 lanes, and one of 16-byte words in four quarters of 8 lanes;
        each part needs as many passes as the most distinct 4-byte words asked of one bank.
    shared_ideal_wavefronts : int or None
        The fewest passes the same requests could need: one per part (of 16 or 8 lanes)
        with an active lane, so one per request of 4-byte words and two per warp request
        of 8-byte words. None means one per request.
    active_fraction : float
        Active lanes per memory request over the warp size (1.0 when no lane sits out).
    barriers : int
        Barriers (``cuda.syncthreads()``) passed, summed over blocks.
    atomics : int
        Atomic operations (``cuda.atomic.add`` and kin) by single threads; each is also
        counted as one store.
    shared_atomics : int
        Those of ``atomics`` on shared arrays (the rest landed in global memory).
    by_array : dict
        The same counts for each array (``"A"``; a shared array by the variable it is
        assigned to, ``"sA"``) and direction
        (``"load"``, ``"store"``): ``by_array["A", "load"]["sectors"]``.
    """

    global_loads: int
    global_stores: int
    global_requests: int
    sectors: int
    ideal_sectors: int
    lines: int
    shared_requests: int
    shared_wavefronts: int
    active_fraction: float
    barriers: int = 0
    atomics: int = 0
    by_array: dict = field(default_factory=dict, compare=False, repr=False)
    shared_ideal_wavefronts: int | None = None
    shared_atomics: int = 0
    touches: dict = field(default_factory=dict, compare=False, repr=False)

    label = "counted by the simulator (counts, not times)"

    def __post_init__(self) -> None:
        if self.shared_ideal_wavefronts is None:
            object.__setattr__(self, "shared_ideal_wavefronts", self.shared_requests)
        for name in (
            "global_loads", "global_stores", "global_requests", "sectors", "ideal_sectors",
            "lines", "shared_requests", "shared_wavefronts", "barriers", "atomics",
            "shared_ideal_wavefronts", "shared_atomics",
        ):  # fmt: skip
            non_negative_int(name, getattr(self, name))
        fraction("active_fraction", self.active_fraction)
        for name in ("by_array", "touches"):
            if not isinstance(getattr(self, name), dict):
                raise wrong_type(name, getattr(self, name), "a dict")
        self._check_agreement()

    def _check_agreement(self) -> None:
        """Raise ValueError where two fields contradict each other."""
        accesses = self.global_loads + self.global_stores
        rules = (
            (self.global_requests <= accesses <= WARP_SIZE * self.global_requests,
             "global_requests", "global_loads + global_stores, between 1 and 32 per request"),
            (self.global_requests <= self.ideal_sectors <= self.sectors,
             "ideal_sectors", "between global_requests and sectors (a request touches at "
             "least one sector, and at least the ideal number)"),
            (self.lines <= self.sectors <= 4 * self.lines,
             "sectors", "between lines and 4 x lines (a 128-byte line holds 4 sectors)"),
            (self.shared_requests <= self.shared_wavefronts,
             "shared_wavefronts", "at least shared_requests (every request takes at least one "
             "pass)"),
            (self.shared_requests <= self.shared_ideal_wavefronts <= self.shared_wavefronts,
             "shared_ideal_wavefronts", "between shared_requests and shared_wavefronts (a "
             "request needs at least one pass, and at least the fewest)"),
            (self.shared_atomics <= self.atomics,
             "shared_atomics", "at most atomics, which counts every atomic operation"),
            (self.atomics - self.shared_atomics <= self.global_stores,
             "atomics", "global atomics (atomics - shared_atomics) at most global_stores, "
             "which counts each of them"),
        )  # fmt: skip
        for holds, name, wanted in rules:
            if not holds:
                fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in (
                    "global_loads", "global_stores", "global_requests", "sectors",
                    "ideal_sectors", "lines", "shared_requests", "shared_wavefronts",
                    "shared_ideal_wavefronts", "atomics", "shared_atomics"))  # fmt: skip
                raise ValueError(f"{name}: the counts disagree ({fields}); {name} must be "
                                 f"{wanted}")  # fmt: skip

    @property
    def sector_efficiency(self) -> float:
        """Ideal sectors over sectors touched: 1.0 for perfectly coalesced access."""
        return self.ideal_sectors / self.sectors if self.sectors else 1.0

    @property
    def bank_conflicts(self) -> int:
        """Extra shared-memory passes: wavefronts beyond the fewest the requests need (one
        per request of 4-byte words, two per warp request of 8-byte words)."""
        return self.shared_wavefronts - self.shared_ideal_wavefronts

    @property
    def global_atomics(self) -> int:
        """Atomic operations that landed in global memory."""
        return self.atomics - self.shared_atomics

    @property
    def global_bytes(self) -> int:
        """Bytes the touched sectors hold: what DRAM would move without cache hits."""
        return self.sectors * SECTOR_BYTES

    def summary(self) -> str:
        """A few lines for a reader, labelled as counts."""
        return (
            f"{self.label}\n"
            f"  global: {self.global_loads} loads, {self.global_stores} stores by threads = "
            f"{self.global_requests} warp requests\n"
            f"  sectors touched {self.sectors} (ideal {self.ideal_sectors}, efficiency "
            f"{self.sector_efficiency:.0%}), 128-byte lines {self.lines}\n"
            f"  shared: {self.shared_requests} warp requests, {self.bank_conflicts} extra "
            f"passes from bank conflicts\n"
            f"  active lanes per request: {self.active_fraction:.0%}"
        )


def _unique_per_group(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    """How many distinct ``value`` each group holds."""
    if len(group) == 0:
        return np.zeros(n_groups, dtype=np.int64)
    order = np.lexsort((value, group))
    g, v = group[order], value[order]
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
    return np.bincount(g[new], minlength=n_groups)


def _group_ids(keys: np.ndarray) -> np.ndarray:
    """Number the distinct rows of ``keys`` 0, 1, ... (faster than ``np.unique(axis=0)``)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    new = np.ones(len(keys), dtype=np.int64)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    ids = np.empty(len(keys), dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids


def _count(engine: _Engine) -> KernelCounts:
    log = np.array(engine.log, dtype=np.int64).reshape(-1, 8)
    array_id, byte, write = log[:, 0], log[:, 7], log[:, 5]
    # One request = one warp at one access site, for the n-th time there.
    group = _group_ids(log[:, [0, 1, 2, 4, 5, 6]])
    n_groups = int(group.max()) + 1 if len(group) else 0
    first = np.zeros(n_groups, dtype=np.int64)
    first[group[::-1]] = np.arange(len(group))[::-1]
    g_array, g_write = array_id[first], write[first]
    lanes = np.bincount(group, minlength=n_groups)
    itemsize = np.array([a[2] for a in engine.arrays], dtype=np.int64)
    is_global = np.array([a[1] == "global" for a in engine.arrays], dtype=bool)

    sectors = _unique_per_group(group, byte // SECTOR_BYTES, n_groups)
    lines = _unique_per_group(group, byte // LINE_BYTES, n_groups)
    ideal = -(-_unique_per_group(group, byte, n_groups) * itemsize[g_array] // SECTOR_BYTES)
    wavefronts, ideal_wavefronts = _wavefronts(group, n_groups, byte, log[:, 3],
                                               itemsize[array_id])  # fmt: skip

    by_array = {}
    for a, (name, space, _) in enumerate(engine.arrays):
        for w, kind in ((0, "load"), (1, "store")):
            sel = (g_array == a) & (g_write == w)
            if not sel.any():
                continue
            row = {"space": space, "accesses": int(lanes[sel].sum()), "requests": int(sel.sum())}
            if space == "global":
                row.update(
                    sectors=int(sectors[sel].sum()),
                    ideal_sectors=int(ideal[sel].sum()),
                    lines=int(lines[sel].sum()),
                )
            else:
                row.update(wavefronts=int(wavefronts[sel].sum()))
            # Each block has its own copy of a shared array: their counts add up.
            before = by_array.get((name, kind))
            if before is not None:
                row = {k: v if k == "space" else v + before[k] for k, v in row.items()}
            by_array[name, kind] = row

    glob = is_global[g_array] if n_groups else np.zeros(0, dtype=bool)
    return KernelCounts(
        global_loads=int(lanes[glob & (g_write == 0)].sum()),
        global_stores=int(lanes[glob & (g_write == 1)].sum()),
        global_requests=int(glob.sum()),
        sectors=int(sectors[glob].sum()),
        ideal_sectors=int(ideal[glob].sum()),
        lines=int(lines[glob].sum()),
        shared_requests=int((~glob).sum()),
        shared_wavefronts=int(wavefronts[~glob].sum()),
        shared_ideal_wavefronts=int(ideal_wavefronts[~glob].sum()),
        active_fraction=float(lanes.sum() / (n_groups * WARP_SIZE)) if n_groups else 1.0,
        barriers=engine.barriers,
        atomics=engine.atomics,
        shared_atomics=engine.shared_atomics,
        by_array=by_array,
        touches=_touches(engine, log),
    )


def _wavefronts(group, n_groups: int, byte, lane, itemsize):
    """(passes, fewest passes) of each request, served by the banks 128 bytes at a time.

    An element of ``itemsize`` bytes covers ``itemsize / 4`` words (at least one), and a
    request is served in parts of ``128 / itemsize`` lanes (32 for 4-byte words, 16 for
    8-byte ones); each part needs as many passes as the most distinct words asked of one
    bank, and at least one.
    """
    if not n_groups:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    words = np.maximum(1, itemsize // BANK_BYTES)
    row = np.repeat(np.arange(len(byte)), words)
    start = np.repeat(np.cumsum(words) - words, words)
    word = byte[row] // BANK_BYTES + (np.arange(len(row)) - start)
    part = lane[row] // np.maximum(1, WARP_SIZE // words[row])
    part_id = _group_ids(np.stack([group[row], part], axis=1))
    bank_id = _group_ids(np.stack([part_id, word % N_BANKS], axis=1))
    per_bank = _unique_per_group(bank_id, word, int(bank_id.max()) + 1)
    part_of_bank = np.zeros(len(per_bank), dtype=np.int64)
    part_of_bank[bank_id] = part_id
    per_part = np.zeros(int(part_id.max()) + 1, dtype=np.int64)
    np.maximum.at(per_part, part_of_bank, per_bank)
    group_of_part = np.zeros(len(per_part), dtype=np.int64)
    group_of_part[part_id] = group[row]
    passes = np.bincount(group_of_part, weights=per_part, minlength=n_groups)
    return passes.astype(np.int64), np.bincount(group_of_part, minlength=n_groups)


def _touches(engine: _Engine, log: np.ndarray) -> dict:
    """For each array name: rows (block, thread, element, write) of every access, the
    element counted in the array's memory order from its first element (its flat index
    for a C-contiguous array), the thread by its index within the block."""
    out = {}
    if not len(log):
        return out
    itemsize = np.array([a[2] for a in engine.arrays], dtype=np.int64)
    offset = np.array(engine.offsets, dtype=np.int64)
    a = log[:, 0]
    element = (log[:, 7] - offset[a]) // itemsize[a]
    rows = np.stack([log[:, 1], log[:, 2] * WARP_SIZE + log[:, 3], element, log[:, 5]], axis=1)
    for i, (name, _, _) in enumerate(engine.arrays):
        sel = a == i
        if sel.any():
            out[name] = np.concatenate([out[name], rows[sel]]) if name in out else rows[sel]
    return out


def _names(kernel: Callable) -> list[str]:
    code = kernel.__code__
    return list(code.co_varnames[: code.co_argcount])


def _uses_barrier(code: types.CodeType) -> bool:
    if {"syncthreads", "syncwarp", *WARP_EXCHANGES} & set(code.co_names):
        return True
    return any(isinstance(c, types.CodeType) and _uses_barrier(c) for c in code.co_consts)


def code_names(code: types.CodeType) -> set[str]:
    """The global and attribute names a function's code refers to, nested code included."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= code_names(c)
    return names


def _is_numba_cuda(value) -> bool:
    """``numba.cuda`` itself (what a factory kernel receives as ``cuda``), or the simulator's."""
    return isinstance(value, _SimCuda) or (
        isinstance(value, types.ModuleType) and value.__name__ in ("numba.cuda", "numba_cuda")
    )


def _py_function(value):
    """The Python function of a ``@cuda.jit`` (device or kernel) dispatcher, else None."""
    func = getattr(value, "py_func", None)
    module = type(value).__module__ or ""
    if isinstance(func, types.FunctionType) and module.split(".")[0] in ("numba", "numba_cuda"):
        return func
    return None


class _Rebinder:
    """Copies of a kernel and of the functions it calls that see the simulator's ``cuda``.

    A kernel refers to ``cuda`` as a global (``from numba import cuda``) or, built by a
    factory (``def make(cuda): def call(out, a): ...``), as a variable of the enclosing
    function. Each copy gets the simulator in both places, and so do the
    ``@cuda.jit(device=True)`` functions and the plain helper functions it calls (their
    Python functions, run by the simulator like the kernel). ``uses_barrier`` says whether
    any of them calls ``cuda.syncthreads()`` or ``cuda.syncwarp()``.
    """

    def __init__(self, sim: _SimCuda) -> None:
        self.sim = sim
        self.done: dict[int, types.FunctionType] = {}
        self.namespaces: dict[int, dict] = {}
        self.uses_barrier = False

    def _namespace(self, module_globals: dict) -> dict:
        key = id(module_globals)
        if key not in self.namespaces:
            ns = dict(module_globals)
            ns["cuda"] = self.sim
            ns["float32"] = np.float32
            self.namespaces[key] = ns
        return self.namespaces[key]

    def _value(self, value, own_globals: dict):
        if _is_numba_cuda(value):
            return self.sim
        func = _py_function(value)
        if func is not None:
            return self.function(func)
        if (
            isinstance(value, types.FunctionType)
            and value.__globals__ is own_globals
            and "cuda" in code_names(value.__code__) | set(value.__code__.co_freevars)
        ):
            return self.function(value)
        return value

    def function(self, func: types.FunctionType) -> types.FunctionType:
        if id(func) in self.done:
            return self.done[id(func)]
        code = func.__code__
        self.uses_barrier |= _uses_barrier(code)
        ns = self._namespace(func.__globals__)
        closure = None
        if func.__closure__:
            cells = []
            for name, cell in zip(code.co_freevars, func.__closure__, strict=True):
                try:
                    value = cell.cell_contents
                except ValueError:  # a variable not yet assigned
                    cells.append(cell)
                    continue
                new = self.sim if name == "cuda" else self._value(value, func.__globals__)
                cells.append(cell if new is value else types.CellType(new))
            closure = tuple(cells)
        copy = types.FunctionType(code, ns, func.__name__, func.__defaults__, closure)
        copy.__kwdefaults__ = func.__kwdefaults__
        self.done[id(func)] = copy
        for name in code_names(code):
            if name in ns and name not in ("cuda", "float32"):
                new = self._value(ns[name], func.__globals__)
                if new is not ns[name]:
                    ns[name] = new
        return copy


def _factory(kernel: types.FunctionType) -> bool:
    """Whether ``kernel`` is a factory that takes ``cuda`` and returns the kernel
    (``def make(cuda): def call(out, a): ...; return call``)."""
    code = kernel.__code__
    return code.co_argcount == 1 and code.co_varnames[0] == "cuda"


def kernel_function(kernel, what: str = "kernel"):
    """The Python function a kernel argument stands for.

    ``kernel`` may be a plain function in Numba's CUDA style, the dispatcher
    ``numba.cuda.jit`` returned, or a factory that takes ``cuda`` and returns the kernel
    (the form in which some puzzle sets write kernels): the factory is called with the
    simulator's ``cuda``.

    Raises
    ------
    TypeError
        ``kernel`` is none of these, or a factory returned something else.
    """
    kernel = getattr(kernel, "py_func", kernel)  # a numba.cuda.jit dispatcher
    if not isinstance(kernel, types.FunctionType):
        raise wrong_type(what, kernel, "a Python function in Numba's CUDA style")
    if _factory(kernel):
        made = kernel(_SimCuda(_Engine(Dim3(), Dim3(), trace=False)))
        made = getattr(made, "py_func", made)
        if not isinstance(made, types.FunctionType):
            raise TypeError(
                f"{what}={kernel.__name__}: a function of `cuda` alone is taken for a factory "
                f"that returns the kernel, but it returned {type(made).__name__}"
            )
        return made
    return kernel


def simulate(
    kernel: Callable[..., None],
    grid,
    block,
    *args,
    count: bool = True,
    strict: bool = False,
    time_limit_s: float | None = None,
):
    """Run a Numba CUDA kernel on the CPU, ``kernel[grid, block](*args)``, and count its accesses.

    Parameters
    ----------
    kernel : function
        A kernel in Numba's CUDA kernel language, as a plain Python function (the function
        ``numba.cuda.jit`` would compile), or the dispatcher ``numba.cuda.jit`` returned.
        It refers to ``cuda`` (and may refer to ``float32``) as globals, or receives
        ``cuda`` from a factory (``def make(cuda): def call(...): ...; return call``: pass
        ``make`` or ``make(cuda)``). The ``@cuda.jit(device=True)`` functions and helpers it
        calls run in the simulator too; ``cuda.syncwarp()``, shuffles and votes meet the
        lanes of a warp.
    grid, block : int or tuple of int
        Blocks in the grid and threads per block (at most 1024 threads per block, and
        ``MAX_SIMULATED_THREADS``, 2**20, in all).
    *args
        NumPy arrays (global memory; written in place, as on a GPU) and scalars. Addresses
        are counted from the start of each array's allocation, the end of its NumPy
        ``.base`` chain, taken as 256-byte aligned as ``cudaMalloc`` returns it: a view
        such as ``src[1:]`` starts 4 bytes into its sector, where NumPy placed the
        buffer does not matter.
    count : bool
        Record and count every access (the default); ``False`` only runs the kernel, faster.
    strict : bool
        Also stop at what this one schedule would hide on a GPU: a race (two threads touch
        an element, one writing, with no barrier between), a negative index, a barrier that
        not every thread of a block reaches (:mod:`gpulab.kernels.faults`).
    time_limit_s : float or None
        Stop the launch with :class:`~gpulab.kernels.faults.EndlessError` once it has run
        this many seconds (wall clock), saying which thread was at which line: a loop
        that never ends, even one that touches no memory, is then reported instead of
        hanging. None (the default): no limit.

    Returns
    -------
    KernelCounts or None
        The counts, labelled as such; None when ``count`` is False.

    Raises
    ------
    gpulab.kernels.faults.OutOfBoundsError
        An index outside an array (an ``IndexError``), negative ones too where ``strict``.
    gpulab.kernels.faults.IndexTypeError
        An index that is not an integer (``dst[i / 2]``; an ``IndexError`` too).
    gpulab.kernels.faults.EndlessError
        Where ``strict``, more accesses than ``STRICT_STEP_LIMIT``; or longer than
        ``time_limit_s``.
    gpulab.kernels.faults.BarrierError
        A barrier that some threads of a block reach and others do not.
    gpulab.kernels.faults.RaceError
        Where ``strict``: two threads race on an element.
    gpulab.kernels.faults.UnsupportedError
        A part of Numba's CUDA language the simulator does not model (``cuda.activemask``,
        a shuffle with a partial mask).

    Examples
    --------
    A copy in which thread ``i`` reads element ``i * stride``: with stride 1 a warp's 32
    four-byte reads fill 4 sectors; with stride 2 they touch 8.

    >>> import numpy as np, gpulab as gl
    >>> def copy(src, dst, stride):
    ...     i = cuda.grid(1)
    ...     dst[i] = src[i * stride]
    >>> src, dst = np.arange(64, dtype=np.float32), np.zeros(32, dtype=np.float32)
    >>> gl.simulate(copy, 1, 32, src, dst, 1).by_array["src", "load"]["sectors"]
    4
    >>> c = gl.simulate(copy, 1, 32, src, dst, 2)
    >>> c.by_array["src", "load"]["sectors"], dst[:3]
    (8, array([0., 2., 4.], dtype=float32))

    A view that starts one float into the buffer spreads the same 32 reads over 5 sectors:

    >>> gl.simulate(copy, 1, 32, src[1:], dst, 1).by_array["src", "load"]["sectors"]
    5
    """
    kernel = kernel_function(kernel)
    grid_dim, block_dim = _check_launch(kernel, grid, block, "in Numba's CUDA style")
    flag("count", count)
    flag("strict", strict)
    if time_limit_s is not None:
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float)):
            raise wrong_type("time_limit_s", time_limit_s, "a number of seconds or None")
        if not 0 < time_limit_s < float("inf"):
            raise ValueError(f"time_limit_s={time_limit_s!r} must be a positive number of seconds")
        at_most("time_limit_s", time_limit_s, MAX_RUN_TIME_S, "one simulated launch", unit="s")
    names = _names(kernel)
    if len(args) != len(names):
        raise ValueError(
            f"args: the kernel takes {len(names)} arguments ({names}), got {len(args)}"
        )
    engine = _Engine(grid_dim, block_dim, trace=count, strict=strict)
    rebind = _Rebinder(_SimCuda(engine))
    body = rebind.function(kernel)
    wrapped = [
        _TracedArray(a, engine, name, "global") if isinstance(a, np.ndarray) else a
        for a, name in zip(args, names, strict=True)
    ]
    try:
        with _TimeLimit(engine, time_limit_s):
            engine.run(lambda: body(*wrapped), barriers=rebind.uses_barrier)
    except _TimeUp as exc:
        raise _time_up_error(exc, engine, kernel.__code__, time_limit_s) from None
    return _count(engine) if count else None


def thread_map(n: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Which block and which thread handle each of ``n`` elements in a 1-D launch.

    The launch uses ``ceil(n / block)`` blocks, the usual choice; threads past ``n`` idle.

    Returns
    -------
    block_of, thread_of : ndarray of int
        ``block_of[i]`` and ``thread_of[i]`` are the block and thread that handle element i.

    Examples
    --------
    >>> import gpulab as gl
    >>> gl.thread_map(6, 4)
    (array([0, 0, 0, 0, 1, 1]), array([0, 1, 2, 3, 0, 1]))
    """
    n = positive_int("n", n)
    block = positive_int("block", block)  # launch() checks the upper limit
    threads = -(-n // block) * block
    if threads > MAX_SIMULATED_THREADS:
        raise ValueError(
            f"n={n!r} elements in blocks of block={block!r} is {threads} threads; the "
            f"simulator runs at most {MAX_SIMULATED_THREADS} in one launch"
        )
    block_of = np.full(n, -1)
    thread_of = np.full(n, -1)

    def record(ctx: ThreadContext) -> None:
        i = ctx.global_x
        if i < n:
            block_of[i], thread_of[i] = ctx.blockIdx.x, ctx.threadIdx.x

    launch(record, -(-n // block), block)
    return block_of, thread_of
