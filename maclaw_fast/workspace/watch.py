"""Background sync of a :class:`WorkspaceIndex`: a ``watchfiles`` folder watcher, debounced, and an
optional interval (design §14).

Two daemon threads. The watcher thread only records events: it marks the index dirty at once (so a
search in the meantime syncs first) and moves the sync deadline to ``debounce_s`` after the latest
event, so a burst of saves costs one sync. The sync thread sleeps until that deadline or the next
interval tick and runs :meth:`WorkspaceIndex.sync`; a failing sync is recorded in
``index.last_error`` and retried at the next event or tick, never raised into a thread.
"""

from __future__ import annotations

import os
import threading
import time


class WorkspaceWatcher:
    """Keep ``index`` in sync from file events (debounced) and/or on an interval.

    Parameters
    ----------
    index : the :class:`WorkspaceIndex`.
    files : watch the folder (``watchfiles``).
    interval_s : sync every this many seconds as well (default ``config.sync_interval_s``; 0 = no).
    debounce_s : delay after the last event (default ``config.watch_debounce_s``, 1.5 s).

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.workspace.index import WorkspaceIndex
    >>> ix = WorkspaceIndex.open(tempfile.mkdtemp(), embedder=None)
    >>> w = ix.watch(); _ = w.ready.wait(5); ix.status().watching
    True
    >>> ix.close()
    """

    def __init__(self, index, *, files: bool = True, interval_s: float | None = None,
                 debounce_s: float | None = None) -> None:
        cfg = index.config
        self.index = index
        self.files = bool(files)
        self.interval_s = float(cfg.sync_interval_s if interval_s is None else interval_s)
        self.debounce_s = float(cfg.watch_debounce_s if debounce_s is None else debounce_s)
        self.ready = threading.Event()  # set once the folder watch is live (or not needed)
        self.syncs = 0
        self.events = 0
        self.last_report = None
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._threads: list[threading.Thread] = []
        self._index_dir = os.path.realpath(index.index_dir)

    @property
    def running(self) -> bool:
        return bool(self._threads) and not self._stop.is_set()

    def start(self) -> WorkspaceWatcher:
        if self._threads:
            return self
        self._deadline = time.monotonic()  # one sync at start: edits made before no event saw
        targets = [self._sync_loop] + ([self._watch_loop] if self.files else [])
        if not self.files:
            self.ready.set()
        for fn in targets:
            t = threading.Thread(target=fn, name=f"maclaw-workspace-{fn.__name__}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)

    def _relevant(self, _change, path: str) -> bool:
        real = os.path.realpath(path)
        if real == self._index_dir or real.startswith(self._index_dir + os.sep):
            return False  # our own index writes
        # folders (created, renamed, removed) have no suffix; other files are not memory
        return path.lower().endswith(".md") or not os.path.splitext(path)[1]

    def _watch_loop(self) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                    self.index.root, watch_filter=self._relevant, debounce=200, step=50,
                    stop_event=self._stop, rust_timeout=200, yield_on_timeout=True,
                    raise_interrupt=False):
                self.ready.set()
                if not changes:
                    continue
                self.events += len(changes)
                self.index.mark_dirty()
                with self._cond:
                    self._deadline = time.monotonic() + self.debounce_s
                    self._cond.notify_all()
        except Exception as exc:  # a watcher that dies must say so, not take the process down
            self.index.last_error = f"folder watcher stopped: {exc}"
        finally:
            self.ready.set()

    def _sync_loop(self) -> None:
        tick = time.monotonic() + self.interval_s if self.interval_s > 0 else None
        while not self._stop.is_set():
            with self._cond:
                now = time.monotonic()
                due = [t for t in (self._deadline, tick) if t is not None]
                if not due or min(due) > now:
                    self._cond.wait(None if not due else min(due) - now)
                    continue
                if self._deadline is not None and self._deadline <= now:
                    self._deadline = None
                if tick is not None and tick <= now:
                    tick = now + self.interval_s
            try:
                self.last_report = self.index.sync()
                self.syncs += 1
            except Exception as exc:  # disk full, permission denied: keep watching
                self.index.last_error = f"background sync failed: {exc}"
