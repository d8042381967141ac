"""The archive (design §9): where capacity overflow and GC put memories, persisted like the store
(journal + snapshot), capped at 1000 entries keeping the newest by ``updated_at``; searched
(design R9) through :class:`ArchiveColumns`, made on the first search.

Each archived entry keeps the ids of its conversation neighbours in the store when it was
archived (a ``ConversationOp``; ``conv_prev`` / ``conv_next`` in the snapshot, none in an
archive written without them), so archive search can walk from a cued archived question to its
archived reply as recall walks the store.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa

from maclaw_fast.config import Bm25Config, MemoryConfig
from maclaw_fast.errors import NotFoundError
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.index.vectors import VectorColumn
from maclaw_fast.memory.columns import EntryTable
from maclaw_fast.persist.arrow_numpy import strings_of
from maclaw_fast.persist.journal import ConversationOp, DeleteOp, Journal, JournalRecord, PutOp
from maclaw_fast.persist.recovery import recover
from maclaw_fast.persist.snapshot import SnapshotMeta, entries_table, table_entries, write_snapshot
from maclaw_fast.records import Entry, vec_bytes
from maclaw_fast.text.tokenizer import analysed_text, tokenize


def cue_strengths(bm25: np.ndarray, cos: np.ndarray, idf_total: float, bm25_w: float,
                  cos_w: float, has_vector: bool, cos_floor: float) -> np.ndarray:
    """:func:`maclaw_kernels.revival.cue_strength` of every row (no shared term needed), the
    same bits: NumPy, as the archive is searched only when the store has no strong match."""
    lex = np.zeros_like(bm25)
    if idf_total > 0.0:
        np.minimum(np.divide(bm25, idf_total, out=lex), 1.0, out=lex)
        lex[~(bm25 > 0.0)] = 0.0
    if not has_vector:
        return lex
    total = bm25_w + cos_w
    if total <= 0.0:
        return np.zeros_like(bm25)
    lex *= bm25_w
    if cos_floor < 1.0:  # the cosine part, on the scale the bars were tuned on
        c = cos.astype(np.float64)
        np.maximum(np.divide(np.subtract(c, cos_floor, out=c), 1.0 - cos_floor, out=c), 0.0,
                   out=c)
        c *= cos_w
        lex += c
    return np.divide(lex, total, out=lex)


class ArchiveColumns:
    """Archived entries as searchable columns: a row per entry in an :class:`EntryTable`, BM25
    postings over the analysed text and an exact vector column, keyed by row like the store's."""

    def __init__(self, bm25: Bm25Config) -> None:
        self.table = EntryTable()
        self.bm25 = Bm25Index(bm25, tantivy_index=False)
        self.vectors: VectorColumn | None = None

    def add(self, entry: Entry, vector: np.ndarray | None) -> None:
        self.remove(entry.id)
        row = self.table.insert(entry)
        self.bm25.add(row, tokenize(analysed_text(entry.content, entry.tags)))
        if vector is not None:
            if self.vectors is None:
                self.vectors = VectorColumn(vector.shape[0])
            if vector.shape[0] == self.vectors.dim:
                self.vectors.set(row, vector)
        elif self.vectors is not None:
            self.vectors.set(row, None)

    def remove(self, entry_id: str) -> None:
        row = self.table.row_of.get(entry_id)
        if row is None:
            return
        self.bm25.remove(row)
        if self.vectors is not None:
            self.vectors.set(row, None)
        self.table.release(row)

    def search(self, tokens: list[str], query_vector: np.ndarray | None, bm25_w: float,
               cos_w: float, min_cue: float, limit: int, cos_floor: float = 0.0
               ) -> list[tuple[Entry, float, float, float]]:
        """Up to ``limit`` entries whose cue strength for the query
        (:func:`maclaw_kernels.revival.cue_strength`, over this archive's BM25 statistics,
        ``cos_floor`` the model's) reaches ``min_cue``, strongest first, as (entry, cue, BM25,
        cosine)."""
        t = self.table
        n = t.n_rows
        if n == 0 or limit <= 0:
            return []
        use_vec = (query_vector is not None and self.vectors is not None
                   and query_vector.shape[0] == self.vectors.dim)
        bm25 = self.bm25.scores(tokens, n)
        cos = (self.vectors.scores(np.ascontiguousarray(query_vector, np.float32), n)
               if use_vec else np.zeros(n, np.float32))
        # an archived entry may match by its vector alone (revive_needs_term is for dormant
        # rows: archive search runs only when the store has no strong match)
        cue = cue_strengths(bm25, cos, self.bm25.idf_total(tokens), bm25_w, cos_w,
                            query_vector is not None, cos_floor)
        sel = np.flatnonzero(t.alive[:n] & (cue >= min_cue))
        rows = sel[np.lexsort((t.seq[sel], -cue[sel]))[:limit]]  # strongest, then older
        return [(t.entry(r), float(cue[r]), float(bm25[r]), float(cos[r]))
                for r in rows.tolist()]

    def scores(self, entry_ids: list[str], tokens: list[str],
               query_vector: np.ndarray | None) -> list[tuple[float, float]]:
        """(BM25 over this archive's statistics, cosine) of each of ``entry_ids`` for the query
        (0, 0 for an id not held)."""
        t = self.table
        n = t.n_rows
        rows = [t.row_of.get(i, -1) for i in entry_ids]
        if n == 0 or not rows:
            return [(0.0, 0.0)] * len(rows)
        bm25 = self.bm25.scores(tokens, n)
        use_vec = (query_vector is not None and self.vectors is not None
                   and query_vector.shape[0] == self.vectors.dim)
        cos = self.vectors.scores(query_vector, n) if use_vec else np.zeros(n, np.float32)
        return [(float(bm25[r]), float(cos[r])) if r >= 0 else (0.0, 0.0) for r in rows]


class Archive:
    """Archived entries by id, with their vectors."""

    def __init__(self, directory: Path | None, config: MemoryConfig,
                 read_only: bool = False, accept_loss: bool = False) -> None:
        self.capacity = config.capacity.archive_capacity
        self._bm25_config = config.bm25
        self._columns: ArchiveColumns | None = None  # made by the first search
        self._entries: dict[str, Entry] = {}
        self._vectors: dict[str, np.ndarray] = {}
        # id -> (previous id, next id) in its conversation when archived ("" = none), and the
        # reverse: id -> the entry recorded as following / preceding it
        self._links: dict[str, tuple[str, str]] = {}
        self._after: dict[str, str] = {}
        self._before: dict[str, str] = {}
        self._lock = threading.RLock()
        self.dir = directory
        self._journal: Journal | None = None
        self._seq = 0
        self._dirty = False
        self.notes: list[str] = []
        self.read_only = read_only
        self.accept_loss = accept_loss  # the store's recover=True reaches its archive too
        if directory is not None:
            self._journal = Journal(directory / "journal.bin", config.persist.fsync,
                                    config.persist.fsync_interval_s)
            if directory.is_dir():  # made by the first archived entry (its journal's open)
                self._load()

    def _load(self) -> None:
        from maclaw_fast.memory.durability import KNOWN_VALUES

        rec = recover(self.dir, KNOWN_VALUES, accept_loss=self.accept_loss,
                      read_only=self.read_only)
        self.notes = rec.notes
        self._seq = rec.seq
        if rec.table is not None:
            entries, vectors = table_entries(rec.table)
            links = _link_columns(rec.table)
            for i, e in enumerate(entries):
                self._entries[e.id] = e
                if vectors is not None and not np.isnan(vectors[i, 0]):
                    self._vectors[e.id] = vectors[i]
                if links is not None and (links[0][i] or links[1][i]):
                    self._set_links(e.id, links[0][i], links[1][i])
        for record in rec.records:
            for op in record.ops:
                self._apply(op)
            self._seq = record.seq
        if self.read_only:
            return
        self._journal.open_for_append(rec.journal_end)
        if rec.fallback:
            self._dirty = True
            self.flush()
            self._dirty = True
            self.flush(rotate=True)

    def _apply(self, op) -> None:
        self._columns = None  # (only while loading: nothing has searched yet)
        if isinstance(op, PutOp):
            self._entries[op.entry.id] = op.entry
            if op.vector is not None and len(op.vector) % 4 == 0:
                self._vectors[op.entry.id] = np.frombuffer(op.vector, np.float32).copy()
        elif isinstance(op, ConversationOp):
            if op.id in self._entries:
                self._set_links(op.id, op.prev, op.next)
        elif isinstance(op, DeleteOp):
            self._entries.pop(op.id, None)
            self._vectors.pop(op.id, None)
            self._drop_links(op.id)

    def _set_links(self, entry_id: str, prev: str, nxt: str) -> None:
        self._drop_links(entry_id)
        if not prev and not nxt:
            return
        self._links[entry_id] = (prev, nxt)
        if prev:
            self._after[prev] = entry_id
        if nxt:
            self._before[nxt] = entry_id

    def _drop_links(self, entry_id: str) -> None:
        prev, nxt = self._links.pop(entry_id, ("", ""))
        if prev and self._after.get(prev) == entry_id:
            del self._after[prev]
        if nxt and self._before.get(nxt) == entry_id:
            del self._before[nxt]

    def neighbours(self, entry_id: str) -> tuple[str, str]:
        """(previous id, next id) of an archived entry in its conversation ("" = none): the
        neighbours it had in the store when archived, else the entry recorded as its own
        neighbour on that side (so a question archived before its reply still reaches it)."""
        with self._lock:
            prev, nxt = self._links.get(entry_id, ("", ""))
            return prev or self._before.get(entry_id, ""), nxt or self._after.get(entry_id, "")

    def _log(self, *ops) -> None:
        if self._journal is not None:
            self._seq += 1
            self._journal.append(JournalRecord(self._seq, list(ops)))
            self._dirty = True

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._entries

    def add(self, entry: Entry, vector: np.ndarray | None,
            links: tuple[str, str] = ("", "")) -> None:
        """Archive ``entry`` with the ids of its conversation neighbours in the store
        (``links``: previous, next; "" = none); beyond capacity the oldest (by updated_at) are
        dropped."""
        with self._lock:
            self._entries[entry.id] = entry
            if vector is not None:
                self._vectors[entry.id] = np.asarray(vector, np.float32)
            self._set_links(entry.id, *links)
            self._log(PutOp(entry, vec_bytes(vector)),
                      *([ConversationOp(entry.id, *links)] if any(links) else []))
            if self._columns is not None:
                self._columns.add(entry, self._vectors.get(entry.id))
            excess = len(self._entries) - self.capacity
            if excess > 0:
                oldest = sorted(self._entries.values(), key=lambda e: (e.updated_at, e.id))
                for e in oldest[:excess]:
                    self.remove(e.id)

    def get(self, entry_id: str) -> Entry:
        entry = self._entries.get(entry_id)
        if entry is None:
            raise NotFoundError(f"no archived memory with id {entry_id!r}")
        return entry

    def vector(self, entry_id: str) -> np.ndarray | None:
        return self._vectors.get(entry_id)

    def remove(self, entry_id: str) -> None:
        with self._lock:
            self.get(entry_id)  # NotFoundError when absent
            del self._entries[entry_id]
            self._vectors.pop(entry_id, None)
            self._drop_links(entry_id)
            self._log(DeleteOp(entry_id))
            if self._columns is not None:
                self._columns.remove(entry_id)

    def remove_held(self, held) -> None:
        """Drop the archived copies of entries ``held`` (the store) holds: a crash in the middle
        of a move leaves an entry on both sides, and the store's copy is the live one."""
        with self._lock:
            for entry_id in [i for i in self._entries if i in held]:
                self.remove(entry_id)

    def list(self) -> list[Entry]:
        """Archived entries, newest first."""
        with self._lock:
            return sorted(self._entries.values(), key=lambda e: (-e.updated_at, e.id))

    def find_relevant(self, tags, categories) -> list[Entry]:
        """Archived entries whose category is in ``categories`` or that share a tag
        (case-insensitive), newest first."""
        want_tags, want_cats = {t.lower() for t in tags}, set(categories)
        return [e for e in self.list()
                if e.category in want_cats or any(t.lower() in want_tags for t in e.tags)]

    def _searchable(self) -> ArchiveColumns:
        if self._columns is None:
            cols = ArchiveColumns(self._bm25_config)
            for e in sorted(self._entries.values(), key=lambda e: (e.updated_at, e.id)):
                cols.add(e, self._vectors.get(e.id))
            self._columns = cols
        return self._columns

    def search(self, tokens: list[str], query_vector: np.ndarray | None, *, bm25_weight: float,
               cos_weight: float, min_cue: float, limit: int, cos_floor: float = 0.0
               ) -> list[tuple[Entry, float, float, float]]:
        """Archived entries the query cues at least ``min_cue`` strongly, strongest first, as
        (entry, cue, BM25, cosine) (:meth:`ArchiveColumns.search`); the columns are made on the
        first call."""
        with self._lock:
            return self._searchable().search(tokens, query_vector, bm25_weight, cos_weight,
                                             min_cue, limit, cos_floor)

    def scores(self, entry_ids: list[str], tokens: list[str],
               query_vector: np.ndarray | None) -> list[tuple[float, float]]:
        """(BM25, cosine) of archived entries for a query, as :meth:`search` scores them."""
        with self._lock:
            return self._searchable().scores(entry_ids, tokens, query_vector)

    def flush(self, rotate: bool = False) -> None:
        with self._lock:
            if self._journal is None or not self._dirty or self.read_only:
                return
            ids = list(self._entries)
            dim = next((v.shape[0] for v in self._vectors.values()), 0)
            vecs = None
            if dim:  # a NaN row where an entry has no vector
                nan = np.full(dim, np.nan, np.float32)
                vecs = np.array([self._vectors.get(k, nan) for k in ids], np.float32)
                vecs = vecs.reshape(len(ids), dim)
            table = entries_table([self._entries[k] for k in ids], vecs, dim,
                                  SnapshotMeta(seq=self._seq, dim=dim, journal_headed=True))
            for side, name in enumerate(LINK_COLUMNS):
                table = table.append_column(name, strings_of(
                    [self._links.get(k, ("", ""))[side] for k in ids]))
            write_snapshot(self.dir / "snapshot.arrow", table)
            self._journal.reset(self._seq, force=rotate)
            self._dirty = False

    def close(self) -> None:
        if self._journal is not None:
            self.flush()
            self._journal.close()


LINK_COLUMNS = ("conv_prev", "conv_next")  # the snapshot's conversation-link columns


def _link_columns(table: pa.Table) -> tuple[list[str], list[str]] | None:
    """The conversation-link columns of an archive snapshot (None when it has no string ones)."""
    if not all(name in table.column_names and pa.types.is_string(table.schema.field(name).type)
               for name in LINK_COLUMNS):
        return None
    return tuple([v or "" for v in table.column(name).to_pylist()] for name in LINK_COLUMNS)
