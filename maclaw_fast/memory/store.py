"""MemoryStore: the public memory API over columns, indexes and the journal (SPEC §1–§6, §8–§9)."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import msgspec
import numpy as np

from maclaw_fast.config import CATEGORY_TABLE, MemoryConfig
from maclaw_fast.embedding import QueryCache, check_vectors, embed_checked, resolve_embedder
from maclaw_fast.embedding.auto import CJK_SHARE
from maclaw_fast.embedding.base import is_auto
from maclaw_fast.errors import DuplicateError, NotFoundError, StoreClosedError, ValidationError
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.index.graph import MemoryGraph
from maclaw_fast.index.vectors import VectorColumn
from maclaw_fast.memory import validate
from maclaw_fast.memory.archive import Archive
from maclaw_fast.memory.columns import EntryTable
from maclaw_fast.memory.durability import Durability
from maclaw_fast.memory.model_choice import LanguageTally, recorded_fingerprint
from maclaw_fast.memory.recall import recall as _recall
from maclaw_fast.memory.recall import recall_batch as _recall_batch
from maclaw_fast.persist.journal import DeleteOp, MetaOp, PutOp, TouchOp
from maclaw_fast.records import Entry, RecallHit
from maclaw_fast.text.tokenizer import analysed_text, tokenize


def new_id(clock_ns: int) -> str:
    """``"<unix_nanos>-<4 hex>"`` (SPEC §1). The suffix only separates ids of one nanosecond:
    ``random`` (reseeded in a forked child) spares a ``getrandom`` call per save, which cost
    ~15 µs inside the save loop."""
    return f"{clock_ns}-{random.getrandbits(16):04x}"


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
        self._lock = threading.RLock()
        self._table = EntryTable()
        self._bm25 = Bm25Index(config.bm25)
        self._vectors = VectorColumn(max(self.dim, 1))
        self._graph = MemoryGraph(config.graph.max_edges)
        if query_cache is not None and (not isinstance(query_cache, QueryCache)
                                        or query_cache.embedder is not self.embedder):
            raise ValidationError("query_cache must be a QueryCache of this store's embedder")
        self._qcache = query_cache if query_cache is not None else (
            QueryCache(self.embedder, config.query_cache_size)
            if self.embedder is not None else None)
        self.meta: dict[str, str] = {}
        self._plan_cache: dict = {}  # recall masks per (version, dynamic, category)
        self._footprint: tuple | None = None  # resident_bytes' (key, value)
        self._closed = False
        self.path = Path(path) if path is not None else None
        self._durability: Durability | None = None
        self.archive = Archive(None, config)
        if path is not None:
            self._durability = Durability(Path(path), config.persist, self)
            self._durability.load()
            try:
                self.archive = Archive(Path(path) / "archive", config)
                for entry_id in [e.id for e in self.archive.list()
                                 if e.id in self._table.row_of]:
                    self.archive.remove(entry_id)  # a crash mid-move left a copy in both
                with self._lock:  # a smaller capacity than the store was written with
                    self._enforce_capacity()
            except BaseException:
                self._durability.abandon()
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
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._durability is not None:
                self._durability.close()
            self.archive.close()

    def flush(self) -> None:
        """Write a snapshot now (normally debounced) and fsync everything."""
        with self._lock:
            self._check_open()
            if self._durability is not None:
                self._durability.snapshot()
            self.archive.flush()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed")

    def _log(self, *ops) -> None:
        if self._durability is not None:
            self._durability.append(list(ops))

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._table.row_of

    # ------------------------------------------------------------------ reading
    def _row(self, entry_id) -> int:
        if not isinstance(entry_id, str):
            raise ValidationError(f"id must be a string, got {type(entry_id).__name__}")
        row = self._table.row_of.get(entry_id)
        if row is None:
            raise NotFoundError(f"no memory with id {entry_id!r}")
        return row

    def _related(self, row: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
        edges = sorted((self._table.ids[t], w) for t, w in self._graph.neighbours(row))
        return tuple(e[0] for e in edges), tuple(e[1] for e in edges)

    def _entry(self, row: int) -> Entry:
        cached = self._table.cached_entry(row)
        if cached is not None:
            return cached
        return self._table.entry(row, self._related(row))

    def get(self, entry_id: str) -> Entry:
        """The entry with ``entry_id`` (``NotFoundError`` if none)."""
        with self._lock:
            return self._entry(self._row(entry_id))

    def vector(self, entry_id: str) -> np.ndarray | None:
        """The entry's embedding (float32, normalised) or None."""
        with self._lock:
            row = self._row(entry_id)
            return self._vectors.get(row) if self.dim else None

    def list(self, category: str | None = None, keyword: str | None = None,
             limit: int | None = None) -> list[Entry]:
        """Entries in store order, optionally of one category / containing ``keyword``
        (case-insensitive substring of content or tags)."""
        cat = validate.category(category) if category is not None else None
        if keyword is not None and not isinstance(keyword, str):
            raise ValidationError("keyword must be a string")
        limit = validate.limit(limit)
        kw = keyword.lower() if keyword else None
        out: list[Entry] = []
        with self._lock:
            for row in self._table.live_rows():
                e = self._entry(int(row))
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

    def _embed(self, text: str, vector) -> np.ndarray | None:
        if vector is not None:
            if not self.dim:
                raise ValidationError("this store has no embedder (BM25-only): vectors are unused")
            return check_vectors(vector, self.dim)[0].copy()  # ours, whatever the caller does
        if self.embedder is None:
            return None
        return embed_checked(self.embedder, [text])[0]

    def _index(self, row: int) -> list[str]:
        t = self._table
        tokens = tokenize(analysed_text(t.content[row], t.tags[row]))
        self._bm25.add(row, tokens)
        return tokens

    def save(self, content: str, *, category: str, tags=(), pinned: bool = False,
             vector=None, thread: str | None = None) -> Entry:
        """Remember ``content``; identical content updates the existing entry instead (SPEC §5).

        ``vector`` (optional) is used instead of calling the embedder. ``thread`` (optional, e.g.
        the agent's session id) links the entry after the previous one saved in that thread;
        without it, after the previous save without a thread when that came within
        ``GraphConfig.adjacency_gap_s`` (SPEC R5). Recall passes relevance along these links.
        """
        content = validate.content(content)
        category = validate.category(category)
        tags = validate.tags(tags)
        pinned = validate.flag(pinned, "pinned")
        thread = validate.thread(thread)
        with self._lock:
            self._check_open()
            row = self._table.row_of_content.get(content)
            if row is not None:
                return self._save_existing(row, tags)
        if vector is None and self.auto_embedder:
            self.check_embedder_choice((content,))
        vec = self._embed(analysed_text(content, tags), vector)  # outside the lock: ~4 ms
        with self._lock:
            self._check_open()
            row = self._table.row_of_content.get(content)
            if row is not None:
                return self._save_existing(row, tags)
            now = float(self.clock())
            entry = Entry(id=new_id(time.time_ns()), content=content, category=category,
                          tags=tags, created_at=now, updated_at=now, access_count=1,
                          strength=1.0, status="active", scope=CATEGORY_TABLE[category][1],
                          pinned=pinned)
            row = self._insert(entry, vec)
            links = self._auto_link(row) + self._link_adjacent(row, thread)
            self._log(PutOp(self._entry(row), _vec_bytes(vec)), *links)
            result = self._entry(row)
            self._enforce_capacity()
            return result

    def save_many(self, items, *, category: str | None = None, tags=()) -> list[Entry]:
        """Save many memories with one embedder call for all new texts (see ``memory.batch``).

        ``items``: texts (then ``category`` applies to all) or dicts with ``content`` and
        optional ``category``, ``tags``, ``pinned``, ``thread``.

        >>> with MemoryStore.in_memory(embedder="hash") as s:
        ...     [e.category for e in s.save_many(["likes tea"], category="preference")]
        ['preference']
        """
        from maclaw_fast.memory.batch import save_many

        return save_many(self, items, category=category, tags=tags)

    def check_embedder_choice(self, pending=()) -> bool:
        """With ``embedder="auto"``: move to the multilingual model (re-embedding every memory)
        once the stored text, with ``pending`` texts, is substantially Chinese or mixed."""
        if not self.auto_embedder or (not pending and self.language.share < CJK_SHARE):
            return False  # the per-call cost of recall: two attribute reads
        from maclaw_fast.memory.model_choice import check

        return check(self, pending)

    def _save_existing(self, row: int, tags: tuple[str, ...]) -> Entry:
        t = self._table
        old = self._entry(row)
        merged = tuple(sorted(set(old.tags) | set(tags)))
        status, strength = old.status, old.strength
        if status == "dormant":
            status, strength = "active", 1.0
        entry = _replace(old, tags=merged, updated_at=float(self.clock()),
                         access_count=old.access_count + 1, status=status, strength=strength)
        t.write(row, entry)
        if merged != old.tags:
            self._index(row)
        self._log(PutOp(entry, None, False))
        return self._entry(row)

    def _insert(self, entry: Entry, vec: np.ndarray | None, row: int | None = None) -> int:
        row = self._table.insert(entry, row)
        self.language.add(entry.content)
        self._graph.reserve(row + 1)
        self._last_tokens = self._index(row)
        if self.dim:
            self._vectors.set(row, vec)
        return row

    def _auto_link(self, row: int) -> list:
        """Link a new row (SPEC §4) when enabled; returns the journal ops recording it."""
        if not self.config.auto_link:
            return []
        from maclaw_fast.memory.linking import auto_link

        return auto_link(self, row)

    def _link_adjacent(self, row: int, thread: str | None) -> list:
        """Link a new row into its conversation (SPEC R5); returns the journal op recording it."""
        from maclaw_fast.memory.linking import link_adjacent

        return link_adjacent(self, row, thread)

    def adjacent(self, entry_id: str) -> tuple[str | None, str | None]:
        """(previous id, next id) of an entry in its conversation (None where none).

        >>> with MemoryStore.in_memory(embedder=None) as store:
        ...     a = store.save("we met at the station", category="conversation_summary",
        ...                    thread="s1")
        ...     b = store.save("then we took the train", category="conversation_summary",
        ...                    thread="s1")
        ...     store.adjacent(b.id) == (a.id, None)
        True
        """
        with self._lock:
            before, after = self._graph.adjacent(self._row(entry_id))
            ids = self._table.ids
            return (ids[before] if before >= 0 else None, ids[after] if after >= 0 else None)

    def update(self, entry_id: str, *, content: str | None = None, tags=None,
               category: str | None = None) -> Entry:
        """Change content, tags and/or category; re-indexes and clears ``compact_form``."""
        new_content = validate.content(content) if content is not None else None
        new_tags = validate.tags(tags) if tags is not None else None
        new_cat = validate.category(category) if category is not None else None
        with self._lock:
            self._check_open()
            row = self._row(entry_id)
            old = self._entry(row)
            if new_content is not None:
                other = self._table.row_of_content.get(new_content)
                if other is not None and other != row:
                    raise DuplicateError(f"content duplicates memory {self._table.ids[other]!r}")
        text_changed = new_content is not None and new_content != old.content
        tags_final = new_tags if new_tags is not None else old.tags
        vec = (self._embed(analysed_text(new_content, tags_final), None)
               if text_changed and self.dim else None)
        with self._lock:
            self._check_open()
            row = self._row(entry_id)
            old = self._entry(row)
            cat = new_cat or old.category
            entry = _replace(old, content=new_content if new_content is not None else old.content,
                             tags=tags_final, category=cat, scope=CATEGORY_TABLE[cat][1],
                             compact_form="", updated_at=float(self.clock()))
            self._table.write(row, entry)
            self._index(row)
            if vec is not None:
                self._vectors.set(row, vec)
            self._log(PutOp(entry, _vec_bytes(vec), vec is not None))
            return self._entry(row)

    def set_fields(self, entry_id: str, **fields) -> Entry:
        """Low-level field change used by maintenance (status, strength, compact_form, ...);
        content/tags/category go through :meth:`update`."""
        fields = validate.fields(fields)
        with self._lock:
            self._check_open()
            row = self._row(entry_id)
            entry = _replace(self._entry(row), **fields)
            self._table.write(row, entry)
            self._log(PutOp(entry, None, False))
            return self._entry(row)

    def delete(self, entry_id: str) -> Entry:
        """Forget an entry; returns what it was."""
        with self._lock:
            self._check_open()
            row = self._row(entry_id)
            entry = self._entry(row)
            self._remove_row(row)
            self._log(DeleteOp(entry_id))
            return entry

    def _remove_row(self, row: int) -> None:
        changed = self._graph.remove_node(row)
        self._table.touched(changed)
        self._bm25.remove(row)
        if self.dim:
            self._vectors.set(row, None)
        self._table.release(row)

    def pin(self, entry_id: str) -> Entry:
        """Protect an entry from eviction and compression."""
        return self.set_fields(entry_id, pinned=True)

    def unpin(self, entry_id: str) -> Entry:
        return self.set_fields(entry_id, pinned=False)

    def touch(self, ids) -> None:
        """``access_count += 1`` for each id; ``updated_at`` unchanged."""
        ids = validate.ids(ids)
        with self._lock:
            self._check_open()
            rows = [self._row(i) for i in ids]
            self._apply_touch(rows, 1, 0.0, None)
            self._log(TouchOp(ids, 1, 0.0, None))

    def _apply_touch(self, rows, access_add: int, strength_add: float, updated_at) -> None:
        self._table.touch(list(rows), access_add, strength_add, updated_at)

    def set_meta(self, key: str, value: str) -> None:
        """Persist a small named value with the store (e.g. the last reflection time)."""
        key, value = validate.meta_key(key), validate.text(str(value), "value")
        with self._lock:
            self._check_open()
            self.meta[key] = value
            self._log(MetaOp(key, value))

    # ------------------------------------------------------------------ capacity
    def _enforce_capacity(self) -> list[Entry]:
        from maclaw_fast.memory.linking import enforce_capacity

        return enforce_capacity(self)

    def archive_rows(self, rows: list[int]) -> list[Entry]:
        """Move rows to the archive (journaled), returning what moved."""
        from maclaw_fast.memory.linking import archive_rows

        return archive_rows(self, rows)

    # ------------------------------------------------------------------ recall
    def recall(self, query: str, *, project: str | None = None, reinforce: bool = True,
               query_vector=None) -> list[RecallHit]:
        """Memories for ``query`` (SPEC §6 with R3–R5, the reference's RecallForProject), best
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
        from maclaw_fast.memory.similar import similar

        return similar(self, query_vector, k)

    # ------------------------------------------------------------------ formats
    def to_arrow(self):
        """Every entry (with its vector) as a ``pyarrow.Table`` in store order."""
        from maclaw_fast.memory.durability import store_table

        with self._lock:
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

        with self._lock:
            key = footprint_key(self)
            if self._footprint is None or self._footprint[0] != key:
                self._footprint = (key, store_bytes(self))
            return self._footprint[1]

    def trim(self) -> None:
        """Release what recalls keep for the next one and remake on demand (recall plans with
        their score buffers, cached entries); what answers a recall stays. A batch recall of
        1,000 queries leaves ~6 MB of buffers on a 500-entry store until this is called."""
        with self._lock:
            self._plan_cache.clear()
            self._table.drop_cache()

    def stats(self) -> dict:
        with self._lock:
            t = self._table
            rows = t.live_rows()
            return {
                "entries": len(t), "archived": len(self.archive), "dim": self.dim,
                "embedder": self.embedder.fingerprint if self.embedder else None,
                "active": int((t.status[rows] == 0).sum()),
                "dormant": int((t.status[rows] == 2).sum()),
                "superseded": int((t.status[rows] == 1).sum()),
                "pinned": int(t.pinned[rows].sum()), "path": str(self.path) if self.path else None,
            }

    # ------------------------------------------------------------------ prompt summaries
    def self_identity_summary(self, limit: int | None = None) -> str:
        """Active self-identity entries joined with ``" | "``, cut at 600 characters + "…"."""
        from maclaw_fast.memory.recall import summary

        return summary(self, "self_identity",
                       limit or self.config.recall.self_identity_summary_chars)

    def user_fact_summary(self, limit: int | None = None) -> str:
        """Active user facts joined with ``" | "``, cut at 400 characters + "…"."""
        from maclaw_fast.memory.recall import summary

        return summary(self, "user_fact", limit or self.config.recall.user_fact_summary_chars)

    # lifecycle (issue 3): thin delegates; the logic lives in memory/lifecycle.py and
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


def _vec_bytes(vec: np.ndarray | None) -> bytes | None:
    return None if vec is None else np.asarray(vec, np.float32).tobytes()


def _replace(entry: Entry, **changes) -> Entry:
    return msgspec.structs.replace(entry, **changes)
