"""What goes wrong in a kernel, found by the simulator: races, out-of-bounds indices, barriers.

A GPU runs a block's threads at once, so a kernel that reads shared memory before another
thread has written it (a missing barrier) may still give the right answer by luck; the
simulator runs the threads one after another and would give the same answer every time,
right or wrong. In *strict* mode (``gl.simulate(..., strict=True)``, which the kernel gym
uses) it therefore watches what a GPU could not promise:

* a **race**: two threads touch the same element, at least one of them writing, with no
  barrier between them (threads of different blocks are never ordered);
* an **out-of-bounds** index, including a negative one (Python and Numba count it from the
  end; CUDA C reads whatever lies before the array);
* a **barrier not reached by every thread** of a block (on a GPU the block hangs or
  computes garbage), or threads waiting at different barriers;
* a part of CUDA the simulator does not model (``cuda.activemask``, for example);
* an index that is not an integer (``dst[i / 2]``: ``/`` gives a float in Python);
* a kernel that seems never to end (more memory accesses and barrier waits than a limit, or
  longer than a wall-clock limit for one launch).

Each is raised as a :class:`KernelFault` whose message is one or two sentences for the
learner, naming the thread, the line of the kernel and what to change.

See also the chapter "Inside a fast kernel" (``book/kernels.md``).
"""

from __future__ import annotations

__all__ = [
    "BarrierError",
    "EndlessError",
    "HazardTracker",
    "IndexTypeError",
    "KernelFault",
    "OutOfBoundsError",
    "RaceError",
    "UnsupportedError",
]


class KernelFault(Exception):
    """A bug in a simulated kernel, described for the person who wrote it.

    Attributes
    ----------
    kind : str
        ``"race"``, ``"out of bounds"``, ``"index type"``, ``"barrier"``, ``"endless"`` or
        ``"unsupported"``.
    """

    kind = "fault"


class RaceError(KernelFault):
    """Two threads touched the same element without a barrier between them."""

    kind = "race"


class OutOfBoundsError(KernelFault, IndexError):
    """An index outside an array (an IndexError too, as NumPy raises)."""

    kind = "out of bounds"


class IndexTypeError(KernelFault, IndexError):
    """An index that is not an integer, such as ``dst[i / 2]`` (an IndexError too)."""

    kind = "index type"


class BarrierError(KernelFault):
    """A barrier that not every thread of the block reached (a deadlock on a GPU)."""

    kind = "barrier"


class EndlessError(KernelFault):
    """A kernel that made more accesses, or ran longer, than the simulator's limits: an
    endless loop?"""

    kind = "endless"


class UnsupportedError(KernelFault, NotImplementedError):
    """A part of Numba's CUDA language the simulator does not model."""

    kind = "unsupported"


def _ordered(a: tuple, b: tuple) -> bool:
    """Whether an access at time ``a`` happens before one at time ``b``.

    A time is ``(block, epoch, warp, warp_epoch)``: the block, the stretch between two of
    its barriers (``cuda.syncthreads()``), the warp, and the stretch between two of that
    warp's ``cuda.syncwarp()`` calls. Only a barrier orders accesses, and only within a
    block: an earlier epoch of the same block comes before a later one, and within one
    epoch an earlier warp epoch of the same warp comes before a later one.
    """
    block_a, epoch_a, warp_a, wepoch_a = a
    block_b, epoch_b, warp_b, wepoch_b = b
    if block_a != block_b:
        return False
    return epoch_a < epoch_b or (
        epoch_a == epoch_b and warp_a == warp_b and warp_a >= 0 and wepoch_a < wepoch_b
    )


class HazardTracker:
    """For every element: the last thread that wrote it and the threads that read it since.

    An access conflicts with an earlier one by another thread when at least one of the two
    writes and no barrier orders them (``cuda.syncthreads()`` for the threads of a block,
    ``cuda.syncwarp()`` for the lanes of a warp). Atomic operations are not passed here:
    they are ordered with each other by the hardware.

    Examples
    --------
    >>> from gpulab.kernels.faults import HazardTracker
    >>> h = HazardTracker()
    >>> h.access("s", 0, block=0, epoch=0, thread=0, write=True) is None
    True
    >>> h.access("s", 0, block=0, epoch=0, thread=1, write=False)  # no barrier between
    (0, 0, True, 0)
    >>> h.access("s", 0, block=0, epoch=1, thread=2, write=False) is None  # after one
    True
    >>> h.access("s", 1, block=0, epoch=1, thread=3, write=True) is None
    True
    >>> h.access("s", 1, block=0, epoch=1, thread=4, write=False, warp_epoch=1) is None
    True
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # element -> [writer time, writer thread, reader time, reader thread]; a thread of
        # -1 for none, -2 for "several" (readers of several threads); a time's block or
        # warp of -2 for several.
        self._seen: dict = {}

    def access(
        self,
        array,
        element,
        *,
        block: int,
        epoch: int,
        thread: int,
        write: bool,
        warp: int | None = None,
        warp_epoch: int = 0,
    ):
        """Record an access; return the earlier one it races with, or None.

        Parameters
        ----------
        warp : int or None
            The thread's warp (None: ``thread // 32``).
        warp_epoch : int
            ``cuda.syncwarp()`` calls the warp has passed (0 where it never calls one).

        Returns
        -------
        tuple or None
            ``(block, thread, wrote, warp)`` of an earlier unordered access by another
            thread (``thread`` is -2 where several threads read, ``warp`` -2 where they are
            of several warps), or None when there is no race.
        """
        now = (block, epoch, thread // 32 if warp is None else warp, warp_epoch)
        key = (array, element)
        e = self._seen.get(key)
        if e is None:
            self._seen[key] = [now, thread, None, -1] if write else [None, -1, now, thread]
            return None
        wtime, wt, rtime, rt = e
        if wt != -1 and (wtime[0], wt) != (block, thread) and not _ordered(wtime, now):
            return (wtime[0], wt, True, wtime[2])
        if write:
            if rt != -1 and not _ordered(rtime, now):
                if rt == -2 or (rtime[0], rt) != (block, thread):
                    return (rtime[0], rt, False, rtime[2])
            e[:] = [now, thread, None, -1]
        elif rt == -1 or _ordered(rtime, now) or (rtime[0], rt) == (block, thread):
            e[2:] = [now, thread]
        else:  # a second reader before any barrier: remember that there are several
            rb, _, rw, rwe = rtime
            several = (rb if rb == block else -2, epoch, rw if rw == now[2] else -2)
            e[2:] = [(*several, max(rwe, warp_epoch)), -2]
        return None
