"""Reading a :class:`~maclaw_fast.memory.store.MemoryStore`: entries by id or listing,
conversation links, recall (``memory.recall``) and the prompt summaries."""

from __future__ import annotations

import numpy as np

from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.memory.recall import recall as _recall
from maclaw_fast.memory.recall import recall_batch as _recall_batch
from maclaw_fast.memory.recall import reinforce as _reinforce
from maclaw_fast.records import Entry, RecallHit


_NO_EDGES: tuple[tuple[str, ...], tuple[float, ...]] = ((), ())


class StoreReads:
    """The read side of :class:`~maclaw_fast.memory.store.MemoryStore` (a mixin over its
    columns, indexes and lock)."""

    # ------------------------------------------------------------------ reading
    def row_of_id(self, entry_id) -> int:
        if not isinstance(entry_id, str):
            raise ValidationError(f"id must be a string, got {type(entry_id).__name__}")
        row = self.table.row_of.get(entry_id)
        if row is None:
            raise NotFoundError(f"no memory with id {entry_id!r}")
        return row

    def related_of(self, row: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
        nbrs = self.graph.neighbours(row)
        if not nbrs:
            return _NO_EDGES  # most rows: no generators to run
        id_of = self.table.id_of
        edges = sorted((id_of(t), w) for t, w in nbrs)
        return tuple(e[0] for e in edges), tuple(e[1] for e in edges)

    def entry_at(self, row: int) -> Entry:
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
        if keyword is not None and not isinstance(keyword, str):
            raise ValidationError("keyword must be a string")
        limit = validate.limit(limit)
        kw = keyword.lower() if keyword else None
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
        from maclaw_fast.memory.similar import similar

        return similar(self, query_vector, k)

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
