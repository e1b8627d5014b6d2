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
* a part of CUDA the simulator does not model (warp shuffles, for example);
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


def _ordered(block_a: int, epoch_a: int, block_b: int, epoch_b: int) -> bool:
    """Whether an access in (block_a, epoch_a) happens before one in (block_b, epoch_b).

    Only a barrier orders accesses, and only within a block: an earlier epoch (the
    stretch between two barriers) of the same block comes before a later one.
    """
    return block_a == block_b and epoch_a < epoch_b


class HazardTracker:
    """For every element: the last thread that wrote it and the threads that read it since.

    An access conflicts with an earlier one by another thread when at least one of the two
    writes and no barrier orders them. Atomic operations are not passed here: they are
    ordered with each other by the hardware.

    Examples
    --------
    >>> from gpulab.kernels.faults import HazardTracker
    >>> h = HazardTracker()
    >>> h.access("s", 0, block=0, epoch=0, thread=0, write=True) is None
    True
    >>> h.access("s", 0, block=0, epoch=0, thread=1, write=False)  # no barrier between
    (0, 0, True)
    >>> h.access("s", 0, block=0, epoch=1, thread=2, write=False) is None  # after one
    True
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # element -> [writer block, epoch, thread, reader block, epoch, thread]; -1 for
        # none, -2 for "several" (readers of several threads, or of several blocks).
        self._seen: dict = {}

    def access(self, array, element, *, block: int, epoch: int, thread: int, write: bool):
        """Record an access; return the earlier one it races with, or None.

        Returns
        -------
        tuple or None
            ``(block, thread, wrote)`` of an earlier unordered access by another thread
            (``thread`` is -2 where several threads read), or None when there is no race.
        """
        key = (array, element)
        e = self._seen.get(key)
        if e is None:
            self._seen[key] = (
                [block, epoch, thread, -1, -1, -1] if write else [-1, -1, -1, block, epoch, thread]
            )
            return None
        wb, we, wt, rb, re, rt = e
        if wt != -1 and (wb, wt) != (block, thread) and not _ordered(wb, we, block, epoch):
            return (wb, wt, True)
        if write:
            if rt != -1 and not _ordered(rb, re, block, epoch):
                if rt == -2 or (rb, rt) != (block, thread):
                    return (rb, rt, False)
            e[:] = [block, epoch, thread, -1, -1, -1]
        elif rt == -1 or _ordered(rb, re, block, epoch) or (rb, rt) == (block, thread):
            e[3:] = [block, epoch, thread]
        else:  # a second reader before any barrier: remember that there are several
            e[3:] = [block if rb == block else -2, epoch, -2]
        return None
