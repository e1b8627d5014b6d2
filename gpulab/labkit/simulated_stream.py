"""A simulated CUDA stream, for showing asynchronous launches on a machine without a GPU.

DEMONSTRATION ONLY: a Python worker thread stands in for the GPU and runs queued work in
order, while :meth:`SimulatedStream.launch` only puts work in the queue and returns, as a
CUDA kernel launch does. Times measured with it are times of the simulation, not of a GPU.

See also the chapter *Frameworks*, ``notebooks/frameworks_lab`` and ``tests/test_lab_reports.py``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from gpulab._checks import wrong_type

__all__ = ["SimulatedStream"]


class SimulatedStream:
    """A thread that runs queued work in order, like a CUDA stream.

    Examples
    --------
    >>> stream = SimulatedStream()
    >>> done = []
    >>> for i in range(3):
    ...     stream.launch(lambda i=i: done.append(i))
    >>> stream.synchronize()
    >>> done
    [0, 1, 2]
    """

    def __init__(self) -> None:
        self.work: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            fn = self.work.get()
            try:
                fn()
            except Exception as err:  # reported at the next synchronize, as CUDA does
                self.error = err
            finally:
                self.work.task_done()

    def launch(self, fn: Callable[[], object]) -> None:
        """Queue ``fn`` and return at once, like a kernel launch."""
        if not callable(fn):
            raise wrong_type("fn", fn, "a function of no arguments")
        self.work.put(fn)

    def synchronize(self) -> None:
        """Wait until all queued work is done; raise the error of queued work that failed."""
        self.work.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
