"""StorePool: a backend's many named memory stores (one per user or agent) under one root
directory, opened on demand and closed least recently used first (exactly as ``close()``); one
embedder and one query-vector cache serve them all.

Concurrency: any number of threads may call a pool at once. A store name maps to one slot whose
lock serialises opening and closing it, so a store is never open twice (its directory lock would
refuse the second handle anyway, design §8); calls on an open store go through the store's own lock,
which serialises its writers. A store in use (leased) is never closed under its caller.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

from maclaw_fast.config import MemoryConfig
from maclaw_fast.embedding import QueryCache, resolve_embedder
from maclaw_fast.errors import StoreClosedError, ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.memory.store import MemoryStore
from maclaw_fast.memory.validate import MAX_NAME_BYTES, check_store_name  # noqa: F401 (API)

class _Slot:
    """One name's place in the pool: its open store (or None) and who is using it."""

    __slots__ = ("name", "lock", "store", "leases", "last_used", "nbytes")

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()  # held while the store is opened or closed
        self.store: MemoryStore | None = None
        self.leases = 0
        self.last_used = time.monotonic()
        self.nbytes = 0


class StorePool:
    """Memory stores by name under ``root``, at most ``max_open`` (and ``max_bytes``) open.

    Parameters
    ----------
    root : directory holding one sub-directory per store (created when missing).
    max_open : how many stores may be open at once (≥ 1); the least recently used idle one is
        closed when a further one opens.
    max_bytes : optional bound on the open stores' resident bytes (as
        :meth:`MemoryStore.resident_bytes` estimates them); None = only ``max_open`` counts.
    idle_close_s : optional: stores unused this long are closed (checked as calls come in, at
        most once a second; :meth:`close_idle` does it on demand).
    embedder, config, clock : as :meth:`MemoryStore.open`; one embedder serves every store (a
        name such as ``"auto"`` is resolved once, for the pool, not per store's language).
    query_cache_size : entries of the one query-vector cache the stores share.

    Examples
    --------
    >>> import tempfile
    >>> with StorePool(tempfile.mkdtemp(), max_open=2, embedder="hash") as pool:
    ...     _ = pool.save("alice", "Alice prefers green tea", category="preference")
    ...     _ = pool.save("bob", "Bob deploys on Fridays", category="project")
    ...     [h.entry.content for h in pool.recall("alice", "tea")]
    ['Alice prefers green tea']
    """

    def __init__(self, root: str | os.PathLike, *, max_open: int = 1000,
                 max_bytes: int | None = None, idle_close_s: float | None = None,
                 embedder="default", config: MemoryConfig = MemoryConfig(),
                 query_cache_size: int = 4096, clock=time.time) -> None:
        if not isinstance(root, (str, os.PathLike)) or not str(root):
            raise ValidationError("root must be a directory path")
        validate.count(max_open, "max_open", 1)
        if max_bytes is not None:
            validate.count(max_bytes, "max_bytes", 1)
        if idle_close_s is not None and (isinstance(idle_close_s, bool) or not isinstance(
                idle_close_s, (int, float)) or not idle_close_s > 0):
            raise ValidationError("idle_close_s must be None or a number > 0")
        if not isinstance(config, MemoryConfig):
            raise ValidationError("config must be a MemoryConfig")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_open = max_open
        self.max_bytes = max_bytes
        self.idle_close_s = idle_close_s
        self.config = config
        self.clock = clock
        self.embedder = resolve_embedder(embedder)
        self.query_cache = (QueryCache(self.embedder, query_cache_size)
                            if self.embedder is not None else None)
        self._lock = threading.Lock()  # guards the slots and the counters
        self._slots: OrderedDict[str, _Slot] = OrderedDict()  # least recently used first
        self._n_open = 0
        self._bytes = 0
        self._closed = False
        self._last_sweep = time.monotonic()
        self.opens = 0
        self.closes = 0
        # called with a store's name after it opened (outside the pool's locks; keep it quick)
        self.on_open: list = []

    # ------------------------------------------------------------------ leasing
    @contextmanager
    def store(self, name: str):
        """The open store ``name`` (opened or created on demand), kept open for the block.

        Use the store only inside the block: afterwards the pool may close it.

        Examples
        --------
        >>> import tempfile
        >>> with StorePool(tempfile.mkdtemp(), embedder="hash") as pool:
        ...     with pool.store("alice") as s:
        ...         _ = s.save("Alice likes tea", category="preference")
        ...         len(s)
        1
        """
        slot = self._acquire(check_store_name(name))
        try:
            yield slot.store
        finally:
            self._release(slot)

    @contextmanager
    def if_open(self, name: str):
        """The store ``name`` when it is open now, else None; never opens one, and does not
        count as a use (background work such as maintenance leaves the idle order alone).

        Examples
        --------
        >>> import tempfile
        >>> with StorePool(tempfile.mkdtemp(), embedder="hash") as pool:
        ...     with pool.if_open("alice") as s:
        ...         print(s)
        ...     _ = pool.save("alice", "Alice likes tea", category="preference")
        ...     with pool.if_open("alice") as s:
        ...         len(s)
        None
        1
        """
        with self._lock:
            slot = self._slots.get(name)
            if self._closed or slot is None or slot.store is None:
                slot = None
            else:
                slot.leases += 1  # from here on no idle or LRU close takes it
        if slot is None:
            yield None
            return
        try:
            yield slot.store
        finally:
            self._release(slot, touch=False)

    def _acquire(self, name: str) -> _Slot:
        with self._lock:
            if self._closed:
                raise StoreClosedError("the pool is closed")
            slot = self._slots.get(name)
            if slot is None:
                slot = self._slots[name] = _Slot(name)
            else:
                self._slots.move_to_end(name)
            slot.leases += 1
        opened = False
        try:
            with slot.lock:
                if slot.store is None:
                    store = MemoryStore.open(self.root / name, embedder=self.embedder,
                                             config=self.config, clock=self.clock,
                                             query_cache=self.query_cache)
                    nbytes = store.resident_bytes()
                    with self._lock:
                        slot.store, slot.nbytes = store, nbytes
                        self._n_open += 1
                        self._bytes += nbytes
                        self.opens += 1
                    opened = True
        except BaseException:
            self._release(slot)
            raise
        if opened:
            for hook in list(self.on_open):
                try:
                    hook(name)
                except Exception as exc:  # noqa: BLE001 - a listener's bug is not this call's
                    warnings.warn(f"on_open hook failed for {name!r}: {exc}", RuntimeWarning,
                                  stacklevel=3)
        return slot

    def _release(self, slot: _Slot, *, touch: bool = True) -> None:
        store = slot.store
        nbytes = store.resident_bytes() if store is not None else 0
        now = time.monotonic()
        with self._lock:
            slot.leases -= 1
            if touch:
                slot.last_used = now
            if slot.store is not None:
                self._bytes += nbytes - slot.nbytes
                slot.nbytes = nbytes
            elif slot.leases == 0 and self._slots.get(slot.name) is slot:
                del self._slots[slot.name]  # its open failed: nothing to keep
            victims = self._victims(now)
        for victim in victims:
            try:
                self._close_slot(victim)
            except Exception as exc:  # noqa: BLE001 - another store's close is not this call's
                warnings.warn(f"closing store {victim.name!r} failed: {exc}", RuntimeWarning,
                              stacklevel=3)

    def _victims(self, now: float) -> list[_Slot]:
        """Idle open slots to close, least recently used first (pool lock held)."""
        over_count = self._n_open - self.max_open
        over_bytes = self._bytes - self.max_bytes if self.max_bytes is not None else 0
        sweep = (self.idle_close_s is not None and now - self._last_sweep >= 1.0)
        if sweep:
            self._last_sweep = now
        victims = []
        for slot in self._slots.values():
            if over_count <= 0 and over_bytes <= 0 and not sweep:
                break
            if slot.store is None or slot.leases:
                continue
            idle = sweep and now - slot.last_used >= self.idle_close_s
            if over_count > 0 or over_bytes > 0 or idle:
                victims.append(slot)
                over_count -= 1
                over_bytes -= slot.nbytes
            elif sweep:
                break  # LRU order: every later slot was used more recently
        return victims

    def _close_slot(self, slot: _Slot, *, force: bool = False) -> bool:
        """Close ``slot``'s store unless someone leased it meanwhile (``force``: close anyway,
        used when the pool itself closes)."""
        with slot.lock:
            with self._lock:
                store = slot.store
                if store is None or (slot.leases and not force):
                    return False
                slot.store = None
                self._n_open -= 1
                self._bytes -= slot.nbytes
                slot.nbytes = 0
            try:
                store.close()
            finally:
                with self._lock:
                    self.closes += 1
                    if slot.leases == 0 and self._slots.get(slot.name) is slot:
                        del self._slots[slot.name]
        return True

    # ------------------------------------------------------------------ calls on one store
    def save(self, name: str, content: str, **kwargs):
        """:meth:`MemoryStore.save` on store ``name``."""
        with self.store(name) as s:
            return s.save(content, **kwargs)

    def recall(self, name: str, query: str, **kwargs):
        """:meth:`MemoryStore.recall` on store ``name``."""
        with self.store(name) as s:
            return s.recall(query, **kwargs)

    def recall_batch(self, rows, *, reinforce: bool = True):
        """Recall many ``(store, query[, project])`` rows, grouped by store: one batched recall
        per store. ``rows``: a ``pyarrow`` Table / RecordBatch with columns ``store``, ``query``
        and optionally ``project``, or a list of tuples. Returns a ``pyarrow.Table`` with
        ``row`` (the input row), ``store`` and the columns of
        :meth:`MemoryStore.recall_batch_arrow` but ``query_index``, ordered by row, then rank.

        Examples
        --------
        >>> import tempfile
        >>> with StorePool(tempfile.mkdtemp(), embedder="hash") as pool:
        ...     _ = pool.save("a", "green tea", category="preference")
        ...     _ = pool.save("b", "black coffee", category="preference")
        ...     t = pool.recall_batch([("b", "coffee"), ("a", "tea")])
        ...     t.column("row").to_pylist(), t.column("store").to_pylist()
        ([0, 1], ['b', 'a'])
        """
        from maclaw_fast.memory.pool_batch import grouped_rows, merge_results

        groups = grouped_rows(rows)  # validates everything before any store is touched
        parts = []
        for name, (indices, queries, projects) in groups.items():
            with self.store(name) as s:
                table = s.recall_batch_arrow(queries, projects=projects, reinforce=reinforce)
                s.trim()  # a batch's score buffers (~6 MB per 500 entries) are not kept
            parts.append((name, indices, table))
        return merge_results(parts)

    # ------------------------------------------------------------------ housekeeping
    def close_idle(self, idle_s: float = 0.0) -> int:
        """Close every open store not used for ``idle_s`` seconds; returns how many closed."""
        now = time.monotonic()
        with self._lock:
            slots = [s for s in self._slots.values()
                     if s.store is not None and not s.leases and now - s.last_used >= idle_s]
        return sum(self._close_slot(s) for s in slots)

    def names(self) -> list[str]:
        """Every store under the root (open or not), sorted."""
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and not p.name.startswith("."))

    def open_names(self) -> list[str]:
        """Names of the stores open now, least recently used first."""
        with self._lock:
            return [n for n, s in self._slots.items() if s.store is not None]

    def stats(self) -> dict:
        """Open stores, their estimated resident bytes, and opens/closes so far."""
        with self._lock:
            return {"open": self._n_open, "bytes": self._bytes, "opens": self.opens,
                    "closes": self.closes, "max_open": self.max_open,
                    "max_bytes": self.max_bytes}

    def close(self) -> None:
        """Close every store (each writes its snapshot); the pool refuses calls afterwards."""
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
        errors = []
        for slot in slots:
            try:
                self._close_slot(slot, force=True)
            except Exception as exc:  # close the others before reporting
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> StorePool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
