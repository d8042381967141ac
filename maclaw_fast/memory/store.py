"""MemoryStore: the public memory API over columns, indexes and the journal (SPEC §1–§6, §8–§9).

This module opens, persists and closes a store; reading and recall live in ``store_reads``,
saving and editing in ``store_writes``."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from maclaw_fast.config import MemoryConfig
from maclaw_fast.embedding import QueryCache, resolve_embedder
from maclaw_fast.embedding.base import cosine_floor, is_auto
from maclaw_fast.errors import StoreClosedError, ValidationError
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.index.graph import MemoryGraph
from maclaw_fast.index.vectors import VectorColumn
from maclaw_fast.memory import validate
from maclaw_fast.memory.archive import Archive
from maclaw_fast.memory.columns import EntryTable
from maclaw_fast.memory.durability import Durability
from maclaw_fast.memory.model_choice import LanguageTally, recorded_fingerprint
from maclaw_fast.memory.store_reads import StoreReads
from maclaw_fast.memory.store_writes import StoreWrites, new_id, replace_entry, vec_bytes
from maclaw_fast.records import Entry, RecallHit

__all__ = ["MemoryStore", "new_id", "replace_entry", "vec_bytes"]


class MemoryStore(StoreReads, StoreWrites):
    """Long-term memory of an agent: save, recall, and keep it safe on disk.

    Open with :meth:`open` (a directory, journaled and locked) or :meth:`in_memory`.

    Examples
    --------
    >>> with MemoryStore.in_memory(embedder="hash") as store:
    ...     _ = store.save("The deploy script needs AWS_REGION", category="project",
    ...                    tags=["atlas"])
    ...     hits = store.recall("deploy script", project="atlas")
    >>> hits[0].entry.category
    'project_knowledge'
    """

    def __init__(self, *, embedder="auto", config: MemoryConfig = MemoryConfig(),
                 path: str | os.PathLike | None = None, clock=time.time,
                 query_cache: QueryCache | None = None) -> None:
        if not isinstance(config, MemoryConfig):
            raise ValidationError("config must be a MemoryConfig")
        self.config = config
        self.clock = clock
        # "auto": the model follows the stored text's language (memory/model_choice.py)
        self.auto_embedder = is_auto(embedder)
        self.language = LanguageTally()
        self.embedder = resolve_embedder(
            embedder, recorded=recorded_fingerprint(path) if self.auto_embedder else None)
        self.dim = self.embedder.dim if self.embedder is not None else 0
        cosine_floor(self.embedder)  # a bad floor is reported here, not by the first recall
        self.lock = threading.RLock()
        self.table = EntryTable()
        self.bm25 = Bm25Index(config.bm25)
        self.vectors = VectorColumn(max(self.dim, 1))
        self.graph = MemoryGraph(config.graph.max_edges)
        if query_cache is not None and (not isinstance(query_cache, QueryCache)
                                        or query_cache.embedder is not self.embedder):
            raise ValidationError("query_cache must be a QueryCache of this store's embedder")
        self.query_cache = query_cache if query_cache is not None else (
            QueryCache(self.embedder, config.query_cache_size)
            if self.embedder is not None else None)
        self.meta: dict[str, str] = {}
        # without a model (dim 0): the vectors a snapshot came with, written back with it
        self.carried = None
        self.plans: dict = {}  # recall masks per (version, dynamic, category)
        self.footprint_memo: tuple | None = None  # resident_bytes' (key, value)
        self.closed = False
        self.path = Path(path) if path is not None else None
        self.durability: Durability | None = None
        self.archive = Archive(None, config)
        if path is not None:
            self.durability = Durability(Path(path), config.persist, self)
            self.durability.load()
            try:
                self.archive = Archive(Path(path) / "archive", config)
                for entry_id in [e.id for e in self.archive.list()
                                 if e.id in self.table.row_of]:
                    self.archive.remove(entry_id)  # a crash mid-move left a copy in both
                with self.lock:  # a smaller capacity than the store was written with
                    self.enforce_capacity()
            except BaseException:
                self.durability.abandon()
                raise
        self.check_embedder_choice()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, path: str | os.PathLike, *, embedder="auto",
             config: MemoryConfig = MemoryConfig(), clock=time.time,
             query_cache: QueryCache | None = None) -> MemoryStore:
        """Open (or create) the store in directory ``path``; one writer at a time.

        ``query_cache``: a query-vector cache shared with other stores of the same embedder
        (what :class:`~maclaw_fast.memory.pool.StorePool` passes); default, one of its own."""
        return cls(embedder=embedder, config=config, path=validate.store_dir(path), clock=clock,
                   query_cache=query_cache)

    @classmethod
    def in_memory(cls, *, embedder="auto", config: MemoryConfig = MemoryConfig(),
                  clock=time.time) -> MemoryStore:
        """A store that lives only in this process (tests, throw-away evaluation)."""
        return cls(embedder=embedder, config=config, path=None, clock=clock)

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Write a final snapshot and release the lock."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if self.durability is not None:
                self.durability.close()
            self.archive.close()

    def flush(self) -> None:
        """Write a snapshot now (normally debounced) and fsync everything."""
        with self.lock:
            self.check_open()
            if self.durability is not None:
                self.durability.snapshot()
            self.archive.flush()

    def check_open(self) -> None:
        if self.closed:
            raise StoreClosedError("the store is closed")

    def journal(self, *ops) -> None:
        if self.durability is not None:
            self.durability.append(list(ops))

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self.table.row_of

    # ------------------------------------------------------------------ capacity
    def enforce_capacity(self) -> list[Entry]:
        from maclaw_fast.memory.linking import enforce_capacity

        return enforce_capacity(self)

    def archive_rows(self, rows: list[int]) -> list[Entry]:
        """Move rows to the archive (journaled), returning what moved."""
        from maclaw_fast.memory.linking import archive_rows

        return archive_rows(self, rows)

    # ------------------------------------------------------------------ formats
    def to_arrow(self):
        """Every entry (with its vector) as a ``pyarrow.Table`` in store order."""
        from maclaw_fast.memory.durability import store_table

        with self.lock:
            return store_table(self)

    def import_maclaw(self, path: str | os.PathLike, *, progress=None) -> int:
        """Load a reference ``memories.json``; returns how many entries were added.
        ``progress``: optional callback ``(stage, done, total)`` as texts are embedded."""
        from maclaw_fast.persist.compat import import_maclaw

        return import_maclaw(self, path, progress=progress)  # through import_records

    def import_records(self, records: list[dict], *, progress=None) -> int:
        """Insert checked records (see ``persist.compat.parse_maclaw``) keeping their ids and
        times (or dated ``age_hours`` ago); returns how many were added."""
        from maclaw_fast.persist.compat import check_records, import_records

        records = check_records(records)  # before anything changes, the model choice included
        self.check_embedder_choice([r["content"] for r in records])
        return import_records(self, records, progress=progress)

    def export_maclaw(self, path: str | os.PathLike) -> int:
        """Write the reference ``memories.json`` format; returns how many entries were written."""
        from maclaw_fast.persist.compat import export_maclaw

        return export_maclaw(self, path)

    def resident_bytes(self) -> int:
        """An estimate of the memory this store holds: its arrays' bytes plus its text and
        the Python objects around it (what :class:`StorePool` budgets ``max_bytes`` with)."""
        from maclaw_fast.memory.footprint import footprint_key, store_bytes

        with self.lock:
            key = footprint_key(self)
            if self.footprint_memo is None or self.footprint_memo[0] != key:
                self.footprint_memo = (key, store_bytes(self))
            return self.footprint_memo[1]

    def trim(self) -> None:
        """Release what recalls keep for the next one and remake on demand (recall plans with
        their score buffers, cached entries); what answers a recall stays. A batch recall of
        1,000 queries leaves ~6 MB of buffers on a 500-entry store until this is called."""
        with self.lock:
            self.plans.clear()
            self.table.drop_cache()

    def stats(self) -> dict:
        with self.lock:
            t = self.table
            rows = t.live_rows()
            return {
                "entries": len(t), "archived": len(self.archive), "dim": self.dim,
                "embedder": self.embedder.fingerprint if self.embedder else None,
                "active": int((t.status[rows] == 0).sum()),
                "dormant": int((t.status[rows] == 2).sum()),
                "superseded": int((t.status[rows] == 1).sum()),
                "pinned": int(t.pinned[rows].sum()), "path": str(self.path) if self.path else None,
            }

    # lifecycle: thin delegates; the logic lives in memory/lifecycle.py and
    # maintenance/filter.py
    def decay(self, *, now: float | None = None):
        """Forgetting curve: faded entries become dormant (SPEC §7; ``lifecycle.decay``)."""
        from maclaw_fast.memory.lifecycle import decay

        return decay(self, now=now)

    def restore(self, entry_id: str) -> Entry:
        """Bring an archived entry back, access_count 1, re-indexed (``lifecycle.restore``)."""
        from maclaw_fast.memory.lifecycle import restore

        return restore(self, entry_id)

    def gc(self):
        """GC with archive revival (SPEC §9; ``lifecycle.gc``); returns a GcReport."""
        from maclaw_fast.memory.lifecycle import gc

        return gc(self)

    def recall_with_llm_filter(self, query: str, llm=None, *, max: int = 5,
                               project: str | None = None) -> list[RecallHit]:
        """Recall, then ``llm`` picks the ``max`` most relevant (SPEC §6; ``maintenance.filter``)."""
        from maclaw_fast.maintenance.filter import recall_with_llm_filter

        return recall_with_llm_filter(self, query, llm, max=max, project=project)


def _document_on_the_store(cls, halves) -> None:
    """Bind the public methods ``cls`` takes from its halves in its own namespace: behaviour is
    unchanged, and API references (pdoc) then document ``MemoryStore.save``, ``.recall``… on
    the store users hold rather than as members inherited from internal mixins."""
    for half in halves:
        for name, member in vars(half).items():
            if not name.startswith("_") and callable(member) and name not in vars(cls):
                setattr(cls, name, member)


_document_on_the_store(MemoryStore, (StoreReads, StoreWrites))
