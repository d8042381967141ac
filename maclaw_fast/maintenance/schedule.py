"""The maintenance schedule of a long-running ``chat`` or ``serve``: a daemon thread that runs
the pipeline whenever it is due — ``interval_h`` (6 h) after the last run recorded in the store,
so the schedule holds across restarts and counts runs made by ``maintain --now`` too.
"""

from __future__ import annotations

import collections
import logging
import threading

from maclaw_fast.errors import StoreClosedError
from maclaw_fast.maintenance.records import seconds_until_due

log = logging.getLogger("maclaw_fast.maintenance")


class BackgroundSchedule:
    """A daemon thread that runs maintenance in the background: start/stop, an idle signal and
    a queue of finished runs. Subclasses implement ``_loop`` (and may extend ``start``/``stop``).
    """

    thread_name = "maclaw-maintenance"

    def __init__(self, *, recheck_s: float, keep_finished: int) -> None:
        self.recheck_s = float(recheck_s)
        self._finished: collections.deque = collections.deque(maxlen=keep_finished)
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self):
        """Start the daemon thread (a no-op when it runs); returns the schedule."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._idle.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=self.thread_name)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop the thread (a run in progress finishes first, up to ``timeout``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is due or in progress (True), or ``timeout`` passes."""
        return self._idle.wait(timeout)

    def take_finished(self) -> list:
        """The runs finished since the last call, oldest first."""
        out = []
        while self._finished:
            out.append(self._finished.popleft())
        return out

    def _loop(self) -> None:
        raise NotImplementedError


class MaintenanceSchedule(BackgroundSchedule):
    """Run ``maintenance.run_once(scheduled=True)`` whenever it is due.

    Parameters
    ----------
    maintenance : Maintenance
    recheck_s : float
        Longest sleep between looks at the record (another process may have run it).

    Finished runs wait in :meth:`take_finished` until a UI shows them.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> from maclaw_fast.maintenance.pipeline import Maintenance
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("likes tea", category="preference")
    >>> sched = MaintenanceSchedule(Maintenance(s))
    >>> _ = sched.start(); sched.wait_idle(10); sched.stop()
    True
    >>> [r.scheduled for r in sched.take_finished()]
    [True]
    """

    thread_name = "maclaw-maintenance-schedule"

    def __init__(self, maintenance, *, recheck_s: float = 300.0) -> None:
        super().__init__(recheck_s=recheck_s, keep_finished=16)
        self.maintenance = maintenance
        self._running = False

    @property
    def busy(self) -> bool:
        """True while a run is in progress (:meth:`stop` then waits for it)."""
        return self._running

    def due_in(self) -> float:
        """Seconds until the next run (0 = due now)."""
        m = self.maintenance
        return seconds_until_due(m.store, m.config.interval_h, float(m.clock()))

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                left = self.due_in()
            except StoreClosedError:
                return
            if left > 0:
                self._idle.set()
                if self._stop.wait(min(left, self.recheck_s)):
                    return
                continue
            self._idle.clear()
            self._running = True
            try:
                self._finished.append(self.maintenance.run_once(scheduled=True))
            except StoreClosedError:
                return
            except Exception:  # a background thread has nobody to raise to
                log.exception("scheduled maintenance run failed")
                self._running = False
                if self._stop.wait(self.recheck_s):  # not again at once
                    return
            finally:
                self._running = False
