"""Durability of a MemoryStore directory (design §8): lock, snapshot + journal replay on open,
journal appends, debounced snapshots, fingerprint checks.

Layout: ``store.lock``, ``snapshot.arrow`` (+ ``.prev``), ``journal.bin``, ``archive/``, and
``terms.bin`` (the snapshot's BM25 term ids, a cache the reopen uses when it matches).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from maclaw_fast.config import CATEGORIES, PersistConfig
from maclaw_fast.errors import CorruptStoreError, ReadOnlyStoreError, ValidationError
from maclaw_fast.memory import replies
from maclaw_fast.memory.carried import CarriedVectors
from maclaw_fast.memory.columns import SCOPE, STATUS
from maclaw_fast.memory.linking import (adjacency_state, replay_adjacent, replay_relink,
                                        restore_adjacency)
from maclaw_fast.memory.model_choice import embed_rows
from maclaw_fast.memory.reload import load_snapshot, save_terms
from maclaw_fast.persist.arrow_numpy import one_array
from maclaw_fast.persist.journal import (AdjacentOp, ConversationOp, DeleteOp, EdgesOp, Journal,
                                         JournalRecord, LinkOp, MetaOp, PutOp, TouchOp)
from maclaw_fast.persist.lock import StoreLock
from maclaw_fast.persist.recovery import recover
from maclaw_fast.persist.snapshot import (SnapshotMeta, entries_table, snapshot_meta,
                                          write_snapshot)
from maclaw_fast.records import replace_entry
from maclaw_fast.timers import Timer, later

# the values a snapshot's text columns may hold (anything else is damage)
KNOWN_VALUES = {"category": CATEGORIES, "status": STATUS, "scope": SCOPE}


class Durability:
    """Keeps one store's directory in step with its in-memory state."""

    def __init__(self, directory: Path, config: PersistConfig, store,
                 accept_loss: bool = False, read_only: bool = False) -> None:
        self.dir = directory
        self.config = config
        self.store = store
        self.snapshot_path = directory / "snapshot.arrow"
        self.journal = Journal(directory / "journal.bin", config.fsync, config.fsync_interval_s)
        self.lock = StoreLock(directory)
        self.seq = 0
        self.notes: list[str] = []  # what recovery did, for stats and tests
        self._timer: Timer | None = None
        self._dirty = False
        self._terms_saved = True  # terms.bin matches the snapshot (else written on close)
        self.snapshot_id = ""  # the identity of snapshot.arrow as loaded or last written
        self.accept_loss = accept_loss  # open although the journal does not reach the snapshot
        self.read_only = read_only  # read the files as they are: no lock, nothing written

    # ------------------------------------------------------------------ open
    def load(self) -> None:
        if self.read_only:
            if not self.dir.is_dir():
                raise ValidationError(f"no store at {self.dir} to open read-only")
            self._load()
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValidationError(f"cannot create the store directory {self.dir}: "
                                  f"{exc.strerror or exc}") from None
        try:
            self.lock.acquire()
        except OSError as exc:
            raise ValidationError(f"cannot lock {self.dir}: {exc.strerror or exc}") from None
        try:
            self._load()
        except OSError as exc:
            self.abandon()
            raise CorruptStoreError(f"cannot open the store in {self.dir}: "
                                    f"{exc.strerror or exc}") from None
        except BaseException:
            self.abandon()
            raise

    def _load(self) -> None:
        store = self.store
        rec = recover(self.dir, KNOWN_VALUES, accept_loss=self.accept_loss,
                      read_only=self.read_only)
        self.notes += rec.notes
        snap_fp = ""
        if rec.table is not None:
            meta = snapshot_meta(rec.table)
            snap_fp = meta.fingerprint
            store.meta.update((k, v) for k, v in meta.meta.items() if v)  # "": removed key
            self.snapshot_id = rec.snapshot_id
            self._terms_saved = load_snapshot(
                store, rec.table, vectors=bool(store.dim) and meta.fingerprint == _fp(store),
                seq=meta.seq, directory=self.dir, snapshot_id=rec.snapshot_id)
            if not store.dim and meta.dim and meta.fingerprint \
                    and "embedding" in rec.table.column_names:
                # no model here: keep the model's vectors for the next snapshot (carried.py)
                store.carried = CarriedVectors(
                    meta.fingerprint, meta.dim, one_array(rec.table.column("id")),
                    one_array(rec.table.column("content")),
                    one_array(rec.table.column("embedding")))
            restore_adjacency(store, meta.adjacency, meta.threads)
            if not self._terms_saved:  # tokenised: the replies' questions need the links
                store.relinked(*replies.replies_of_questions(store).tolist())
        self.seq = rec.seq
        for record in rec.records:
            try:
                for op in record.ops:
                    self.apply(op, snap_fp or _fp(store))
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                # only a record written by something else than this code gets here (its
                # checksum held): keep what applied, say so
                note = f"journal record {record.seq} could not be applied ({exc!r})"
                self.notes.append(note)
                warnings.warn(f"{self.dir}: {note}", RuntimeWarning, stacklevel=4)
            self.seq = record.seq
        if self.read_only:
            return  # vectors of another model stay unused; nothing is re-embedded or written
        self.journal.open_for_append(rec.journal_end)
        self._reembed_missing(snap_fp)
        if rec.table is None and not rec.records:
            self.snapshot()  # a new store: its journal is checked against a snapshot from now on
        elif rec.fallback:
            # twice: the first write keeps the old .prev, the second makes .prev and the
            # journals consistent again (no damaged bytes left for the next open to report)
            self.snapshot()
            self.snapshot(rotate=True)
        elif rec.records:
            self.snapshot()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abandon(self) -> None:
        """Close files and release the lock without writing anything (a failed open)."""
        self._cancel_timer()
        try:
            self.journal.close()
        finally:
            self.lock.release()

    def _set_edges(self, entry_id: str, ids, strengths) -> None:
        t = self.store.table
        row = t.row_of.get(entry_id)
        if row is None:
            return
        pairs = [(t.row_of[i], s) for i, s in zip(ids, strengths) if i in t.row_of]
        self.store.graph.set_edges(row, [p[0] for p in pairs], [p[1] for p in pairs])
        t.touched([row])

    def apply(self, op, fingerprint: str) -> None:
        """Replay one journal operation onto the store."""
        store, t = self.store, self.store.table
        if isinstance(op, PutOp):
            vec = (np.frombuffer(op.vector, dtype=np.float32)
                   if op.vector_set and op.vector is not None else None)
            if store.carried is not None and op.vector_set:
                store.carried.set(op.entry.id, op.entry.content, vec)
            if vec is not None and (vec.shape[0] != store.dim or fingerprint != _fp(store)):
                vec = None  # another model's (or a model-less store: dim 0)
            row = t.row_of.get(op.entry.id)
            if row is None:
                store.insert_row(replace_entry(op.entry, related_ids=(), related_strengths=()),
                                 vec)
            else:
                t.write(row, op.entry)
                store.index_row(row)
                if op.vector_set and store.dim:
                    store.vectors.set(row, vec)
            self._set_edges(op.entry.id, op.entry.related_ids, op.entry.related_strengths)
        elif isinstance(op, LinkOp):
            row = t.row_of.get(op.id)
            links = [(t.row_of[o], w) for o, w in zip(op.others, op.strengths) if o in t.row_of]
            if row is not None:
                for other, w in links:
                    store.graph.link(row, other, w)
                t.touched([row] + [o for o, _ in links])
        elif isinstance(op, EdgesOp):
            self._set_edges(op.id, op.related_ids, op.related_strengths)
        elif isinstance(op, DeleteOp):
            row = t.row_of.get(op.id)
            if row is not None:
                store.remove_row(row)
        elif isinstance(op, TouchOp):
            rows = [t.row_of[i] for i in op.ids if i in t.row_of]
            store.apply_touch(rows, op.access_add, op.strength_add, op.updated_at)
        elif isinstance(op, MetaOp):
            if op.value:
                store.meta[op.key] = op.value
            else:
                store.meta.pop(op.key, None)
        elif isinstance(op, AdjacentOp):
            replay_adjacent(store, op)
            store.relinked(t.row_of.get(op.id, -1))
        elif isinstance(op, ConversationOp):
            replay_relink(store, op)
            row = t.row_of.get(op.id, -1)
            store.relinked(row, replies.answer_after(store, row) if row >= 0 else -1)

    def _reembed_missing(self, snap_fp: str) -> None:
        """Vectors from another model are dropped on load; embed what lacks one, in batches."""
        store = self.store
        if not store.dim:
            return
        if snap_fp and snap_fp != _fp(store):
            self._dirty = True  # the next snapshot records this model
        t, has = store.table, store.vectors.has_vec
        if t.n_rows <= has.shape[0] and has[:t.n_rows].all():  # (dead rows too: a superset)
            return  # the usual reopen: every vector came with the snapshot
        live = t.live_rows()
        # a snapshot loaded without its vectors (another model) left the column unsized
        store.vectors.reserve(int(live.max()) + 1 if len(live) else 0)
        rows = live[~store.vectors.has_vec[live]].tolist()
        if rows:
            desc = f"re-embedding with {_fp(store).split(':')[0]}"
            store.vectors.set_rows(rows, embed_rows(store.embedder, t, rows, desc))
            self._dirty = True

    # ------------------------------------------------------------------ write
    def append(self, ops: list) -> None:
        if self.read_only:  # (the store refuses writes before it changes anything)
            raise ReadOnlyStoreError(f"{self.dir} was opened read-only")
        self.seq += 1
        self.journal.append(JournalRecord(self.seq, ops))
        self._dirty = True
        if self._timer is None and self.config.snapshot_debounce_s > 0:
            self._timer = later(self.config.snapshot_debounce_s, self._debounced)

    def _debounced(self) -> None:
        with self.store.lock:
            self._timer = None
            if not self.store.closed:
                self.snapshot()

    def snapshot(self, rotate: bool = False) -> None:
        """Write all state as a snapshot, then empty the journal (caller holds the store lock);
        ``rotate``: replace ``journal.bin.prev`` even when nothing was appended (recovery)."""
        store = self.store
        pairs, threads = adjacency_state(store)
        carried = store.carried
        meta = SnapshotMeta(seq=self.seq,
                            fingerprint=carried.fingerprint if carried else _fp(store),
                            dim=carried.dim if carried else store.dim,
                            meta=dict(store.meta), adjacency=pairs, threads=threads,
                            journal_headed=True)
        table = store_table(store, meta)
        self.snapshot_id = write_snapshot(self.snapshot_path, table)
        # beside it: the reopen reads the postings back
        save_terms(store, self.dir, meta.seq, self.snapshot_id)
        self._terms_saved = True
        self.journal.reset(self.seq, force=rotate)
        self._dirty = False

    def close(self) -> None:
        self._cancel_timer()
        if self.read_only:
            return
        try:
            if self._dirty or not self.snapshot_path.exists():
                self.snapshot()
            elif not self._terms_saved and self.snapshot_id:
                save_terms(self.store, self.dir, self.seq, self.snapshot_id)
        finally:
            self.journal.close()
            self.lock.release()


def store_table(store, meta: SnapshotMeta | None = None):
    """The store's entries and vectors (NaN rows where none) as one Arrow table, store order."""
    t = store.table
    rows = t.live_rows()
    entries = [store.entry_at(int(r)) for r in rows]
    vecs, dim = None, store.dim
    if store.dim:
        vecs = store.vectors.matrix[rows]  # (a copy: rows is an index array)
        vecs[~store.vectors.has_vec[rows]] = np.nan
    elif store.carried is not None:  # no model here: the vectors the snapshot came with
        dim = store.carried.dim
        vecs = store.carried.matrix([e.id for e in entries], [e.content for e in entries])
    return entries_table(entries, vecs, dim, meta)


def _fp(store) -> str:
    return store.embedder.fingerprint if store.embedder is not None else ""

