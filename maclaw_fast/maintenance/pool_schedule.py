"""The maintenance schedule of per-user stores (``serve --stores``): one daemon thread looks at
each open store of a :class:`~maclaw_fast.memory.pool.StorePool` when it opens and then every
``recheck_s``, and runs the pipeline on each that is due — ``interval_h`` after the last run
recorded in that store (``maintenance/last``), exactly as the one-store schedule does.

Requests never wait for it: the thread holds a store only while it checks or maintains it (so
the pool does not close it underneath), and a store that is not open is left for when a user
opens it again.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

from maclaw_fast.errors import StoreClosedError, ValidationError
from maclaw_fast.maintenance.records import seconds_until_due
from maclaw_fast.maintenance.schedule import BackgroundSchedule

log = logging.getLogger("maclaw_fast.maintenance")


class PoolMaintenanceSchedule(BackgroundSchedule):
    """Run each open pool store's maintenance whenever it is due.

    Parameters
    ----------
    pool : StorePool
    make : callable
        ``make(store) -> Maintenance`` for a store (one is kept per open store, so its
        circuit breaker counts across runs).
    recheck_s : float
        Seconds between sweeps over the open stores (a store that opens is looked at at once).

    Finished runs wait in :meth:`take_finished` as ``(store name, report)``.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.memory.pool import StorePool
    >>> from maclaw_fast.maintenance.pipeline import Maintenance
    >>> pool = StorePool(tempfile.mkdtemp(), embedder=None)
    >>> sched = PoolMaintenanceSchedule(pool, Maintenance).start()
    >>> _ = pool.save("alice", "likes tea", category="preference")
    >>> sched.wait_idle(10)
    True
    >>> [(name, r.scheduled) for name, r in sched.take_finished()]
    [('alice', True)]
    >>> sched.stop(); pool.close()
    """

    thread_name = "maclaw-pool-maintenance"

    def __init__(self, pool, make, *, recheck_s: float = 300.0) -> None:
        if not callable(make):
            raise ValidationError("make must be callable: make(store) -> Maintenance")
        if not recheck_s > 0:
            raise ValidationError("recheck_s must be > 0")
        super().__init__(recheck_s=recheck_s, keep_finished=256)
        self.pool, self.make = pool, make
        self._runners: dict[str, object] = {}  # name → its Maintenance
        self._opened: collections.deque = collections.deque()
        self._lock = threading.Lock()  # _opened and _idle change together
        self._wake = threading.Event()
        self.runs = 0

    def start(self) -> PoolMaintenanceSchedule:
        """Start the daemon thread and listen for stores opening (a no-op when running)."""
        if self._note_open not in self.pool.on_open:
            self.pool.on_open.append(self._note_open)
        return super().start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop the thread (a run in progress finishes first, up to ``timeout``)."""
        if self._note_open in self.pool.on_open:
            self.pool.on_open.remove(self._note_open)
        self._stop.set()  # before the wake-up, so the woken loop sees it and ends
        self._wake.set()
        super().stop(timeout)

    def _note_open(self, name: str) -> None:
        with self._lock:
            self._idle.clear()
            self._opened.append(name)
        self._wake.set()

    def _loop(self) -> None:
        last_sweep = None  # the stores open before the schedule started are looked at first
        while not self._stop.is_set():
            names = []
            if last_sweep is None or time.monotonic() - last_sweep >= self.recheck_s:
                last_sweep = time.monotonic()
                names = self.pool.open_names()
                keep = set(names)
                self._runners = {n: m for n, m in self._runners.items() if n in keep}
            with self._lock:
                while self._opened:
                    names.append(self._opened.popleft())
            for name in dict.fromkeys(names):
                if self._stop.is_set():
                    return
                self._visit(name)
            with self._lock:
                if self._opened:
                    continue
                self._idle.set()
            self._wake.wait(max(0.0, last_sweep + self.recheck_s - time.monotonic()))
            self._wake.clear()  # a name noted meanwhile is in _opened: not lost

    def _visit(self, name: str) -> None:
        """Maintain ``name`` when it is open and due."""
        try:
            with self.pool.if_open(name) as store:
                if store is None:
                    self._runners.pop(name, None)
                    return
                m = self._runners.get(name)
                if m is None or m.store is not store:  # first look, or closed and reopened
                    m = self._runners[name] = self.make(store)
                if seconds_until_due(store, m.config.interval_h, float(m.clock())) > 0:
                    return
                report = m.run_once(scheduled=True)
                self.runs += 1
                self._finished.append((name, report))
        except StoreClosedError:
            self._runners.pop(name, None)  # closed meanwhile: looked at again when reopened
        except Exception:  # a background thread has nobody to raise to
            log.exception("scheduled maintenance of store %r failed", name)
