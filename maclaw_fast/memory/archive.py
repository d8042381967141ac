"""The archive (SPEC §9): where capacity overflow and GC put memories, persisted like the store
(journal + snapshot), capped at 1000 entries keeping the newest by ``updated_at``."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from maclaw_fast.config import MemoryConfig
from maclaw_fast.errors import NotFoundError
from maclaw_fast.persist.journal import DeleteOp, Journal, JournalRecord, PutOp
from maclaw_fast.persist.recovery import recover
from maclaw_fast.persist.snapshot import SnapshotMeta, entries_table, table_entries, write_snapshot
from maclaw_fast.records import Entry


class Archive:
    """Archived entries by id, with their vectors.

    Examples
    --------
    >>> a = Archive(None, MemoryConfig())
    >>> a.add(Entry(id="x", content="old note", category="preference", tags=("tea",)), None)
    >>> [e.id for e in a.find_relevant(tags=["TEA"], categories=[])]
    ['x']
    """

    def __init__(self, directory: Path | None, config: MemoryConfig) -> None:
        self.capacity = config.capacity.archive_capacity
        self._entries: dict[str, Entry] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.RLock()
        self.dir = directory
        self._journal: Journal | None = None
        self._seq = 0
        self._dirty = False
        self.notes: list[str] = []
        if directory is not None:
            self._journal = Journal(directory / "journal.bin", config.persist.fsync,
                                    config.persist.fsync_interval_s)
            if directory.is_dir():  # made by the first archived entry (its journal's open)
                self._load()

    def _load(self) -> None:
        from maclaw_fast.memory.durability import KNOWN_VALUES

        rec = recover(self.dir, KNOWN_VALUES)
        self.notes = rec.notes
        self._seq = rec.seq
        if rec.table is not None:
            entries, vectors = table_entries(rec.table)
            for i, e in enumerate(entries):
                self._entries[e.id] = e
                if vectors is not None and not np.isnan(vectors[i, 0]):
                    self._vectors[e.id] = vectors[i]
        for record in rec.records:
            for op in record.ops:
                self._apply(op)
            self._seq = record.seq
        self._journal.open_for_append(rec.journal_end)
        if rec.fallback:
            self._dirty = True
            self.flush()
            self._dirty = True
            self.flush(rotate=True)

    def _apply(self, op) -> None:
        if isinstance(op, PutOp):
            self._entries[op.entry.id] = op.entry
            if op.vector is not None and len(op.vector) % 4 == 0:
                self._vectors[op.entry.id] = np.frombuffer(op.vector, np.float32).copy()
        elif isinstance(op, DeleteOp):
            self._entries.pop(op.id, None)
            self._vectors.pop(op.id, None)

    def _log(self, op) -> None:
        if self._journal is not None:
            self._seq += 1
            self._journal.append(JournalRecord(self._seq, [op]))
            self._dirty = True

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._entries

    def add(self, entry: Entry, vector: np.ndarray | None) -> None:
        """Archive ``entry``; beyond capacity the oldest (by updated_at) are dropped."""
        with self._lock:
            self._entries[entry.id] = entry
            if vector is not None:
                self._vectors[entry.id] = np.asarray(vector, np.float32)
            self._log(PutOp(entry, None if vector is None else np.asarray(vector, np.float32)
                            .tobytes()))
            excess = len(self._entries) - self.capacity
            if excess > 0:
                oldest = sorted(self._entries.values(), key=lambda e: (e.updated_at, e.id))
                for e in oldest[:excess]:
                    self.remove(e.id)

    def get(self, entry_id: str) -> Entry:
        with self._lock:
            if entry_id not in self._entries:
                raise NotFoundError(f"no archived memory with id {entry_id!r}")
            return self._entries[entry_id]

    def vector(self, entry_id: str) -> np.ndarray | None:
        return self._vectors.get(entry_id)

    def remove(self, entry_id: str) -> tuple[Entry, np.ndarray | None]:
        with self._lock:
            entry = self.get(entry_id)
            del self._entries[entry_id]
            vec = self._vectors.pop(entry_id, None)
            self._log(DeleteOp(entry_id))
            return entry, vec

    def list(self) -> list[Entry]:
        """Archived entries, newest first."""
        with self._lock:
            return sorted(self._entries.values(), key=lambda e: (-e.updated_at, e.id))

    def find_relevant(self, tags, categories, limit: int = 10) -> list[Entry]:
        """Archived entries whose category is in ``categories`` or that share a tag
        (case-insensitive), newest first."""
        want_tags = {t.lower() for t in tags}
        want_cats = set(categories)
        out = []
        for e in self.list():
            if e.category in want_cats or any(t.lower() in want_tags for t in e.tags):
                out.append(e)
                if len(out) >= limit:
                    break
        return out

    def flush(self, rotate: bool = False) -> None:
        with self._lock:
            if self._journal is None or not self._dirty:
                return
            ids = list(self._entries)
            dim = next((v.shape[0] for v in self._vectors.values()), 0)
            vecs = None
            if dim:
                vecs = np.full((len(ids), dim), np.nan, np.float32)
                for i, k in enumerate(ids):
                    if k in self._vectors:
                        vecs[i] = self._vectors[k]
            table = entries_table([self._entries[k] for k in ids], vecs, dim,
                                  SnapshotMeta(seq=self._seq, dim=dim))
            write_snapshot(self.dir / "snapshot.arrow", table)
            self._journal.reset(force=rotate)
            self._dirty = False

    def close(self) -> None:
        if self._journal is not None:
            self.flush()
            self._journal.close()
