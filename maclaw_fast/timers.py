"""One timer thread for the whole process, in place of a ``threading.Timer`` (a thread each) per
pending debounced snapshot or journal fsync: a process with a thousand open stores that all saw
a write in the last seconds would otherwise hold a thousand or two sleeping threads. The thread
starts with the first timer and ends after ``IDLE_EXIT_S`` without any.

Callbacks run one after another on that thread, so they must be short and must not wait for
each other (a snapshot or an fsync is; an exception is reported as a warning, never lost).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import warnings

IDLE_EXIT_S = 10.0


class Timer:
    """A pending call made by :func:`later`; :meth:`cancel` stops it if it has not run."""

    __slots__ = ("fn", "cancelled")

    def __init__(self, fn) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Scheduler:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._cv = threading.Condition(threading.Lock())
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def later(self, delay: float, fn) -> Timer:
        timer = Timer(fn)
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + max(0.0, float(delay)),
                                        next(self._order), timer))
            if self._thread is None or not self._thread.is_alive():  # (also after a fork)
                self._thread = threading.Thread(target=self._run, name="maclaw-timers",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()
        return timer

    def _next(self) -> Timer | None:
        """The next due timer, waiting for it; None when idle long enough to stop."""
        with self._cv:
            while True:
                if not self._heap:
                    self._cv.wait(IDLE_EXIT_S)
                    if not self._heap:
                        self._thread = None
                        return None
                    continue
                when = self._heap[0][0]
                now = time.monotonic()
                if when <= now:
                    return heapq.heappop(self._heap)[2]
                self._cv.wait(when - now)

    def _run(self) -> None:
        while (timer := self._next()) is not None:
            if timer.cancelled:
                continue
            try:
                timer.fn()
            except Exception as exc:  # noqa: BLE001 - one bad callback must not stop the rest
                warnings.warn(f"timer callback {timer.fn!r} failed: {exc!r}", RuntimeWarning,
                              stacklevel=1)

    def pending(self) -> int:
        with self._cv:
            return sum(not t.cancelled for _, _, t in self._heap)


_SCHEDULER = _Scheduler()


def later(delay: float, fn) -> Timer:
    """Call ``fn()`` on the process's timer thread after ``delay`` seconds.

    Examples
    --------
    >>> import threading
    >>> done = threading.Event()
    >>> t = later(0.01, done.set)
    >>> done.wait(5)
    True
    >>> later(60, print).cancel()
    """
    return _SCHEDULER.later(delay, fn)
