"""MemoryStore: the public memory API over columns, indexes and the journal.

One class: open, save, edit, read, recall, persist and close a store. Its parts (``table``,
``vectors``, ``graph``, ``bm25``, ``lock``, ``plans``) and the row-level operations under
"engine interface" are what the modules that work on a store use (recall, lifecycle, linking,
archive, import and export); nothing else reaches into it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np

from maclaw_fast.config import CATEGORY_TABLE, MemoryConfig
from maclaw_fast.embedding import QueryCache, check_vectors, embed_checked, resolve_embedder
from maclaw_fast.embedding.auto import CJK_SHARE
from maclaw_fast.embedding.base import cosine_floor, is_auto
from maclaw_fast.errors import (DuplicateError, NotFoundError, ReadOnlyStoreError,
                                StoreClosedError, ValidationError)
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.index.graph import MemoryGraph
from maclaw_fast.index.vectors import VectorColumn
from maclaw_fast.memory import (batch, footprint, lifecycle, linking, model_choice, replies,
                                validate)
from maclaw_fast.memory.archive import Archive
from maclaw_fast.memory.columns import EntryTable
from maclaw_fast.memory.durability import Durability, store_table
from maclaw_fast.memory.recall import recall as _recall
from maclaw_fast.memory.recall import recall_batch as _recall_batch
from maclaw_fast.memory.recall import reinforce as _reinforce
from maclaw_fast.memory.recall import summary
from maclaw_fast.memory.similar import similar as _similar
from maclaw_fast.persist import compat
from maclaw_fast.persist.journal import DeleteOp, MetaOp, PutOp, TouchOp
from maclaw_fast.records import Entry, RecallHit, new_id, replace_entry, vec_bytes
from maclaw_fast.text.tokenizer import analysed_text, tokenize

_NO_EDGES: tuple[tuple[str, ...], tuple[float, ...]] = ((), ())

__all__ = ["MemoryStore", "new_id", "replace_entry", "vec_bytes"]


class MemoryStore:
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
                 query_cache: QueryCache | None = None, recover: bool = False,
                 read_only: bool = False) -> None:
        if not isinstance(config, MemoryConfig):
            raise ValidationError("config must be a MemoryConfig")
        self.config = config
        self.clock = clock
        # "auto": the model follows the stored text's language (memory/model_choice.py)
        self.auto_embedder = is_auto(embedder)
        self.language = model_choice.LanguageTally()
        self.embedder = resolve_embedder(
            embedder, recorded=model_choice.recorded_fingerprint(path) if self.auto_embedder else None)
        self.dim = self.embedder.dim if self.embedder is not None else 0
        cosine_floor(self.embedder), cosine_floor(self.embedder, "中文")  # bad floors: here
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
        self.read_only = validate.flag(read_only, "read_only") and path is not None
        self.durability: Durability | None = None
        self.archive = Archive(None, config)
        if path is not None:
            self.durability = Durability(Path(path), config.persist, self,
                                         accept_loss=validate.flag(recover, "recover"),
                                         read_only=self.read_only)
            self.durability.load()
            try:
                self.archive = Archive(Path(path) / "archive", config, read_only=self.read_only,
                                       accept_loss=self.durability.accept_loss)
                if not self.read_only:
                    self.archive.remove_held(self)
                    with self.lock:  # a smaller capacity than the store was written with
                        self.enforce_capacity()
            except BaseException:
                self.durability.abandon()
                raise
        if not self.read_only:
            self.check_embedder_choice()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, path: str | os.PathLike, *, embedder="auto",
             config: MemoryConfig = MemoryConfig(), clock=time.time,
             query_cache: QueryCache | None = None, recover: bool = False,
             read_only: bool = False) -> MemoryStore:
        """Open (or create) the store in directory ``path``; one writer at a time.

        ``query_cache``: a query-vector cache shared with other stores of the same embedder
        (what :class:`~maclaw_fast.memory.pool.StorePool` passes); default, one of its own.
        ``recover``: open even when the journal was deleted, emptied or replaced since the last
        snapshot (what was saved after it is lost: a warning says so); by default such a store
        refuses to open with :class:`~maclaw_fast.errors.CorruptStoreError`.
        ``read_only``: read the snapshot and journal as they are, even while another process
        holds the store: no lock is taken, nothing is written (a recall does not reinforce) and
        every write raises :class:`~maclaw_fast.errors.ReadOnlyStoreError`."""
        return cls(embedder=embedder, config=config, path=validate.store_dir(path), clock=clock,
                   query_cache=query_cache, recover=recover, read_only=read_only)

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
            self.check_writable()
            if self.durability is not None:
                self.durability.snapshot()
            self.archive.flush()

    def check_open(self) -> None:
        """Engine interface: raise StoreClosedError once the store is closed."""
        if self.closed:
            raise StoreClosedError("the store is closed")

    def check_writable(self) -> None:
        """Engine interface: raise before a write changes anything when the store is closed or
        was opened read-only."""
        self.check_open()
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} was opened read-only: writes are refused")

    def journal(self, *ops) -> None:
        """Engine interface: append ``ops`` to the journal (no-op in memory; lock held)."""
        if self.durability is not None:
            self.durability.append(list(ops))

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self.table.row_of

    # ------------------------------------------------------------------ capacity
    def enforce_capacity(self) -> list[Entry]:
        """Engine interface: archive the least-used entries above the capacity (lock held)."""
        return linking.enforce_capacity(self)

    def archive_rows(self, rows: list[int]) -> list[Entry]:
        """Move rows to the archive (journaled), returning what moved."""
        return linking.archive_rows(self, rows)

    # ------------------------------------------------------------------ formats
    def to_arrow(self):
        """Every entry (with its vector) as a ``pyarrow.Table`` in store order."""
        with self.lock:
            return store_table(self)

    def import_maclaw(self, path: str | os.PathLike, *, progress=None) -> int:
        """Load a reference ``memories.json``; returns how many entries were added.
        ``progress``: optional callback ``(stage, done, total)`` as texts are embedded."""
        return compat.import_maclaw(self, path, progress=progress)  # through import_records

    def import_records(self, records: list[dict], *, progress=None) -> int:
        """Insert checked records (see ``persist.compat.parse_maclaw``) keeping their ids and
        times (or dated ``age_hours`` ago); returns how many were added."""
        # checked before anything changes, the model choice included
        records = compat.check_records(records)
        self.check_embedder_choice([r["content"] for r in records])
        return compat.import_records(self, records, progress=progress)

    def export_maclaw(self, path: str | os.PathLike) -> int:
        """Write the reference ``memories.json`` format; returns how many entries were written."""
        return compat.export_maclaw(self, path)

    def resident_bytes(self) -> int:
        """An estimate of the memory this store holds: its arrays' bytes plus its text and
        the Python objects around it (what :class:`StorePool` budgets ``max_bytes`` with)."""
        with self.lock:
            key = footprint.footprint_key(self)
            if self.footprint_memo is None or self.footprint_memo[0] != key:
                self.footprint_memo = (key, footprint.store_bytes(self))
            return self.footprint_memo[1]

    def trim(self) -> None:
        """Release what recalls keep for the next one and remake on demand (recall plans with
        their score buffers, cached entries); what answers a recall stays. A batch recall of
        1,000 queries leaves ~6 MB of buffers on a 500-entry store until this is called."""
        with self.lock:
            self.plans.clear()
            self.table.drop_cache()

    def stats(self) -> dict:
        """Counts of what the store holds: entries by status, archived, pinned, model, path."""
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

    # lifecycle: the logic lives in memory/lifecycle.py and maintenance/filter.py
    def decay(self, *, now: float | None = None):
        """Forgetting curve: faded entries become dormant (design §7; ``lifecycle.decay``)."""
        return lifecycle.decay(self, now=now)

    def restore(self, entry_id: str) -> Entry:
        """Bring an archived entry back, access_count 1, re-indexed (``lifecycle.restore``)."""
        return lifecycle.restore(self, entry_id)

    def gc(self):
        """GC with archive revival (design §9; ``lifecycle.gc``); returns a GcReport."""
        return lifecycle.gc(self)

    def recall_with_llm_filter(self, query: str, llm=None, *, max: int = 5,
                               project: str | None = None) -> list[RecallHit]:
        """Recall, then ``llm`` picks the ``max`` most relevant (design §6; ``maintenance.filter``)."""
        from maclaw_fast.maintenance.filter import recall_with_llm_filter

        return recall_with_llm_filter(self, query, llm, max=max, project=project)

    # ================================================================== reading and recall

    def row_of_id(self, entry_id) -> int:
        """Engine interface: the row of ``entry_id`` (NotFoundError when absent)."""
        if not isinstance(entry_id, str):
            raise ValidationError(f"id must be a string, got {type(entry_id).__name__}")
        row = self.table.row_of.get(entry_id)
        if row is None:
            raise NotFoundError(f"no memory with id {entry_id!r}")
        return row

    def related_of(self, row: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """Engine interface: the similarity edges of ``row`` as (ids, strengths)."""
        nbrs = self.graph.neighbours(row)
        if not nbrs:
            return _NO_EDGES  # most rows: no generators to run
        id_of = self.table.id_of
        edges = sorted((id_of(t), w) for t, w in nbrs)
        return tuple(e[0] for e in edges), tuple(e[1] for e in edges)

    def entry_at(self, row: int) -> Entry:
        """Engine interface: the :class:`Entry` at ``row`` (cached)."""
        cached = self.table.cached_entry(row)
        if cached is not None:
            return cached
        return self.table.entry(row, self.related_of(row))

    def entries_at(self, rows: list[int], cached: list[Entry | None]) -> list[Entry]:
        """The entries of ``rows`` given those cached (None: not cached), the others made
        together (:meth:`EntryTable.entries`)."""
        missing = list(dict.fromkeys(r for r, e in zip(rows, cached) if e is None))
        edged = self.graph.has_edges(np.asarray(missing, np.int64)).tolist()
        related = [self.related_of(r) if e else _NO_EDGES for r, e in zip(missing, edged)]
        made = dict(zip(missing, self.table.entries(missing, related)))
        return [e or made[r] for r, e in zip(rows, cached)]

    def get(self, entry_id: str) -> Entry:
        """The entry with ``entry_id`` (``NotFoundError`` if none)."""
        with self.lock:
            return self.entry_at(self.row_of_id(entry_id))

    def vector(self, entry_id: str) -> np.ndarray | None:
        """The entry's embedding (float32, normalised) or None."""
        with self.lock:
            row = self.row_of_id(entry_id)
            return self.vectors.get(row) if self.dim else None

    def list(self, category: str | None = None, keyword: str | None = None,
             limit: int | None = None) -> list[Entry]:
        """Entries in store order, optionally of one category / containing ``keyword``
        (case-insensitive substring of content or tags)."""
        cat = validate.category(category) if category is not None else None
        kw = validate.text(keyword, "keyword").lower() if keyword is not None else None
        limit = validate.limit(limit)
        out: list[Entry] = []
        with self.lock:
            for row in self.table.live_rows():
                e = self.entry_at(int(row))
                if cat is not None and e.category != cat:
                    continue
                if kw and kw not in e.content.lower() and not any(kw in t.lower() for t in e.tags):
                    continue
                out.append(e)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def entries(self) -> list[Entry]:
        """Every entry in store order."""
        return self.list()

    def adjacent(self, entry_id: str) -> tuple[str | None, str | None]:
        """(previous id, next id) of an entry in its conversation (None where none).

        >>> from maclaw_fast.memory.store import MemoryStore
        >>> with MemoryStore.in_memory(embedder=None) as store:
        ...     a = store.save("we met at the station", category="conversation_summary",
        ...                    thread="s1")
        ...     b = store.save("then we took the train", category="conversation_summary",
        ...                    thread="s1")
        ...     store.adjacent(b.id) == (a.id, None)
        True
        """
        with self.lock:
            before, after = self.graph.adjacent(self.row_of_id(entry_id))
            ids = self.table.ids
            return (ids[before] if before >= 0 else None, ids[after] if after >= 0 else None)

    def conversation_links(self) -> tuple[np.ndarray, np.ndarray]:
        """(previous row, next row) of every row, -1 where none: the conversation links as
        the recall kernels walk them (read-only views; valid until the next write)."""
        with self.lock:
            n = self.table.n_rows
            return self.graph.prev[:n], self.graph.next[:n]

    # ------------------------------------------------------------------ recall
    def recall(self, query: str, *, project: str | None = None, reinforce: bool = True,
               query_vector=None) -> list[RecallHit]:
        """Memories for ``query`` (design §6 with R3–R5, the reference's RecallForProject), best
        first, within 20 entries / 2000 tokens.

        At most 3 self-identity entries lead (most important, then most recent), then at most 3
        user facts that rank among the query's first results (by relevance), then every other
        entry by its score (relevance first; recency and importance order similar ones).
        ``reinforce`` strengthens what was returned.
        """
        if query_vector is None:
            self.check_embedder_choice()
        return _recall(self, query, project=project, reinforce=reinforce,
                       query_vector=query_vector)

    def reinforce(self, hits) -> int:
        """Strengthen ``hits`` of a ``reinforce=False`` recall as a reinforcing recall would
        (for a caller that keeps only some of them, e.g. after an LLM filter); entries deleted
        since are skipped. Returns how many were reinforced.

        Examples
        --------
        >>> from maclaw_fast.memory import MemoryStore
        >>> s = MemoryStore.in_memory(embedder=None)
        >>> _ = s.save("likes green tea", category="preference")
        >>> hits = s.recall("tea", reinforce=False)
        >>> s.reinforce(hits), [e.access_count for e in s.entries()]
        (1, [2])
        """
        return _reinforce(self, hits)

    def recall_dynamic(self, query: str, *, category: str | None = None,
                       project: str | None = None, reinforce: bool = True) -> list[RecallHit]:
        """The agent tool's recall: ≤ 15 entries / 1500 tokens, optional category; user facts
        are ranked like any other entry (none leads)."""
        self.check_embedder_choice()
        return _recall(self, query, project=project, reinforce=reinforce, dynamic=True,
                       category=category)

    def recall_batch(self, queries, *, projects=None, reinforce: bool = True,
                     query_vectors=None) -> list[list[RecallHit]]:
        """One :meth:`recall` per query on one snapshot, with batched kernels (the new texts
        among ``queries`` are embedded in one call)."""
        self.check_embedder_choice()
        return _recall_batch(self, queries, projects=projects, reinforce=reinforce,
                             query_vectors=query_vectors, as_arrow=False)

    def recall_batch_arrow(self, queries, *, projects=None, reinforce: bool = True,
                           query_vectors=None):
        """:meth:`recall_batch` as a ``pyarrow.Table`` (query_index, rank, id, score, recency,
        importance, bm25, cos, affinity, graph, reason) — the form for thousands of queries."""
        self.check_embedder_choice()
        return _recall_batch(self, queries, projects=projects, reinforce=reinforce,
                             query_vectors=query_vectors, as_arrow=True)

    def similar(self, query_vector, *, k: int | None = None) -> list[tuple[Entry, float]]:
        """``(entry, cosine)`` of the ``k`` entries nearest ``query_vector`` (plain vector search,
        no recency, importance or BM25; ``memory.similar``)."""
        return _similar(self, query_vector, k)

    # ------------------------------------------------------------------ prompt summaries
    def self_identity_summary(self, limit: int | None = None) -> str:
        """Active self-identity entries joined with ``" | "``, cut at 600 characters + "…"."""
        return summary(self, "self_identity",
                       limit or self.config.recall.self_identity_summary_chars)

    def user_fact_summary(self, limit: int | None = None) -> str:
        """Active user facts joined with ``" | "``, cut at 400 characters + "…"."""
        return summary(self, "user_fact", limit or self.config.recall.user_fact_summary_chars)

    # ================================================================== saving and editing

    def embed_text(self, text: str, vector) -> np.ndarray | None:
        """Engine interface: the unit vector for ``text`` (``vector`` checked when given)."""
        if vector is not None:
            if not self.dim:
                raise ValidationError("this store has no embedder (BM25-only): vectors are unused")
            return check_vectors(vector, self.dim)[0].copy()  # ours, whatever the caller does
        if self.embedder is None:
            return None
        return embed_checked(self.embedder, [text])[0]

    def index_row(self, row: int) -> list[str]:
        """Engine interface: index ``row``'s text in BM25 (and make the document of the reply
        that holds it as its question again: ``memory.replies``); returns its own tokens."""
        tokens = self.index_document(row)
        self.relinked(replies.answer_after(self, row))
        return tokens

    def index_document(self, row: int) -> list[str]:
        """Engine interface: index ``row``'s BM25 document (its text, with the question it
        answers: ``GraphConfig.reply_weight``); returns its own tokens (what auto-link seeks
        related memories with)."""
        t = self.table
        own = tokenize(analysed_text(t.content[row], t.tags[row]))
        self.bm25.add(row, own, replies.question_tokens(self, row),
                      self.config.graph.reply_weight)
        return own

    def relinked(self, *rows: int) -> None:
        """Engine interface: make the BM25 documents of ``rows`` (-1: none) again after their
        conversation predecessor changed (what a reply's document holds of its question)."""
        if self.config.graph.reply_weight:
            for row in rows:
                if row >= 0 and self.table.alive[row]:
                    self.index_document(row)

    def save(self, content: str, *, category: str, tags=(), pinned: bool = False,
             vector=None, thread: str | None = None) -> Entry:
        """Remember ``content``; identical content updates the existing entry instead (design §5).

        ``vector`` (optional) is used instead of calling the embedder. ``thread`` (optional, e.g.
        the agent's session id) links the entry after the previous one saved in that thread;
        without it, after the previous save without a thread when that came within
        ``GraphConfig.adjacency_gap_s`` (design R5). Recall passes relevance along these links.
        """
        content = validate.content(content)
        category = validate.category(category)
        tags = validate.tags(tags)
        pinned = validate.flag(pinned, "pinned")
        thread = validate.thread(thread)
        with self.lock:
            self.check_writable()
            row = self.table.row_of_content.get(content)
            if row is not None:
                return self.save_existing(row, tags)
        if vector is None and self.auto_embedder:
            self.check_embedder_choice((content,))
        vec = self.embed_text(analysed_text(content, tags), vector)  # outside the lock: ~4 ms
        with self.lock:
            self.check_writable()
            row = self.table.row_of_content.get(content)
            if row is not None:
                return self.save_existing(row, tags)
            now = float(self.clock())
            entry = Entry(id=new_id(time.time_ns()), content=content, category=category,
                          tags=tags, created_at=now, updated_at=now, access_count=1,
                          strength=1.0, status="active", scope=CATEGORY_TABLE[category][1],
                          pinned=pinned)
            # indexed once linked into its conversation: a reply's document holds its question
            # (memory.replies)
            row = self.insert_row(entry, vec, index=False)
            adjacent = linking.link_adjacent(self, row, thread)
            self.last_tokens = self.index_row(row)
            links = self.auto_link_row(row) + adjacent
            self.journal(PutOp(self.entry_at(row), vec_bytes(vec)), *links)
            result = self.entry_at(row)
            self.enforce_capacity()
            return result

    def save_many(self, items, *, category: str | None = None, tags=()) -> list[Entry]:
        """Save many memories with one embedder call for all new texts (see ``memory.batch``).

        ``items``: texts (then ``category`` applies to all) or dicts with ``content`` and
        optional ``category``, ``tags``, ``pinned``, ``thread``.

        >>> from maclaw_fast.memory.store import MemoryStore
        >>> with MemoryStore.in_memory(embedder="hash") as s:
        ...     [e.category for e in s.save_many(["likes tea"], category="preference")]
        ['preference']
        """
        return batch.save_many(self, items, category=category, tags=tags)

    def check_embedder_choice(self, pending=()) -> bool:
        """With ``embedder="auto"``: move to the multilingual model (re-embedding every memory)
        once the stored text, with ``pending`` texts, is substantially Chinese or mixed."""
        if not self.auto_embedder or (not pending and self.language.share < CJK_SHARE):
            return False  # the per-call cost of recall: two attribute reads
        return model_choice.check(self, pending)

    def save_existing(self, row: int, tags: tuple[str, ...]) -> Entry:
        """Engine interface: a save of content the store holds (tags merged, touched)."""
        old = self.entry_at(row)
        merged = tuple(sorted(set(old.tags) | set(tags)))
        wake = {"status": "active", "strength": 1.0} if old.status == "dormant" else {}
        entry = replace_entry(old, tags=merged, updated_at=float(self.clock()),
                              access_count=old.access_count + 1, **wake)
        self.table.write(row, entry)
        if merged != old.tags:
            self.index_row(row)
        self.journal(PutOp(entry, None, False))
        return self.entry_at(row)

    def insert_row(self, entry: Entry, vec: np.ndarray | None, row: int | None = None, *,
                   index: bool = True) -> int:
        """Engine interface: write ``entry`` and its vector into a row and index it (``index``
        False: the caller indexes it, :meth:`index_row`)."""
        row = self.table.insert(entry, row)
        self.language.add(entry.content)
        self.graph.reserve(row + 1)
        if index:
            self.last_tokens = self.index_row(row)
        if self.dim:
            self.vectors.set(row, vec)
        return row

    def auto_link_row(self, row: int) -> list:
        """Link a new row (design §4) when enabled; returns the journal ops recording it."""
        if not self.config.auto_link:
            return []
        return linking.auto_link(self, row)

    def link_adjacent(self, row: int, thread: str | None) -> list:
        """Link a new row into its conversation (design R5); returns the journal op recording it.
        A reply to a question is indexed again with it (``memory.replies``)."""
        ops = linking.link_adjacent(self, row, thread)
        if replies.question_before(self, row) >= 0:
            self.index_document(row)
        return ops

    def update(self, entry_id: str, *, content: str | None = None, tags=None,
               category: str | None = None) -> Entry:
        """Change content, tags and/or category; re-indexes and clears ``compact_form``."""
        new_content = validate.content(content) if content is not None else None
        new_tags = validate.tags(tags) if tags is not None else None
        new_cat = validate.category(category) if category is not None else None
        with self.lock:
            self.check_writable()
            row = self.row_of_id(entry_id)
            old = self.entry_at(row)
            if new_content is not None:
                other = self.table.row_of_content.get(new_content)
                if other is not None and other != row:
                    raise DuplicateError(f"content duplicates memory {self.table.ids[other]!r}")
        text_changed = new_content is not None and new_content != old.content
        tags_final = new_tags if new_tags is not None else old.tags
        vec = (self.embed_text(analysed_text(new_content, tags_final), None)
               if text_changed and self.dim else None)
        with self.lock:
            self.check_writable()
            row = self.row_of_id(entry_id)
            old = self.entry_at(row)
            cat = new_cat or old.category
            entry = replace_entry(
                old, content=new_content if new_content is not None else old.content,
                tags=tags_final, category=cat, scope=CATEGORY_TABLE[cat][1], compact_form="",
                updated_at=float(self.clock()))
            self.table.write(row, entry)
            self.index_row(row)
            if vec is not None:
                self.vectors.set(row, vec)
            # new text without a model here: the record clears the vector it had, so an open
            # with the model replaying it embeds the entry again
            self.journal(PutOp(entry, vec_bytes(vec), vec is not None or text_changed))
            return self.entry_at(row)

    def set_fields(self, entry_id: str, **fields) -> Entry:
        """Low-level field change used by maintenance (status, strength, compact_form, ...);
        content/tags/category go through :meth:`update`."""
        fields = validate.fields(fields)
        with self.lock:
            self.check_writable()
            row = self.row_of_id(entry_id)
            entry = replace_entry(self.entry_at(row), **fields)
            self.table.write(row, entry)
            self.journal(PutOp(entry, None, False))
            return self.entry_at(row)

    def delete(self, entry_id: str) -> Entry:
        """Forget an entry; returns what it was."""
        with self.lock:
            self.check_writable()
            row = self.row_of_id(entry_id)
            entry = self.entry_at(row)
            self.remove_row(row)
            self.journal(DeleteOp(entry_id))
            return entry

    def remove_row(self, row: int) -> None:
        """Engine interface: drop ``row`` from the columns, indexes and graph (lock held)."""
        after = replies.reply_after_removal(self, row)  # a reply that answers another line now
        changed = self.graph.remove_node(row)
        self.table.touched(changed)
        self.bm25.remove(row)
        if self.dim:
            self.vectors.set(row, None)
        self.table.release(row)
        self.relinked(after)

    def pin(self, entry_id: str) -> Entry:
        """Protect an entry from eviction and compression."""
        return self.set_fields(entry_id, pinned=True)

    def unpin(self, entry_id: str) -> Entry:
        """Let the entry be archived and decay again; returns the updated entry."""
        return self.set_fields(entry_id, pinned=False)

    def touch(self, ids) -> None:
        """``access_count += 1`` for each id; ``updated_at`` unchanged."""
        ids = validate.ids(ids)
        with self.lock:
            self.check_writable()
            rows = [self.row_of_id(i) for i in ids]
            self.apply_touch(rows, 1, 0.0, None)
            self.journal(TouchOp(ids, 1, 0.0, None))

    def apply_touch(self, rows, access_add: int, strength_add: float, updated_at) -> None:
        """Engine interface: add access counts and strength to ``rows`` at ``updated_at``."""
        self.table.touch(list(rows), access_add, strength_add, updated_at)

    def set_meta(self, key: str, value: str) -> None:
        """Persist a small named value with the store (e.g. the last reflection time); ``""``
        removes the key (from the next snapshot on, nothing of it is kept)."""
        if not isinstance(value, (str, int, float, bool)):  # str() of an object is no value
            raise ValidationError(f"meta value must be a string or a number, got "
                                  f"{type(value).__name__}")
        key, value = validate.text(key, "key"), validate.text(str(value), "value")
        with self.lock:
            self.check_writable()
            if value:
                self.meta[key] = value
            else:
                self.meta.pop(key, None)
            self.journal(MetaOp(key, value))
