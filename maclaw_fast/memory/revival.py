"""Cue-driven revival of dormant memories (SPEC §0 R9), as one more mask on recall.

Dormant entries stay in the BM25 index and the vector column, so the recall kernels score them
(BM25 and cosine of every row) with the active ones. Those of the query's scope whose absolute
cue strength (:func:`maclaw_kernels.revival.cue_strength`) reaches
``ForgettingConfig.revive_min_cue`` join the recall's masks, with the dormant rows within
``adjacency_hops`` conversation links of them: a revived entry is returned only when its score
earns a place among the results, with ``reason="revived"``. The fused single-query kernel does
this in its one pass, and so does the batch kernel (:func:`dormant_mask` is their ``dormant``
argument); the thread-prior path widens its masks the same way before its one ranking
(:func:`revival_masks`); the large-store paths run the ranking kernel a second time, only when
some dormant entry passes the bar (:func:`revive_single`).

A reinforcing recall makes a returned dormant entry active again: strength 1.0, ``updated_at``
= now, journaled (:func:`reactivate`).
"""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.embedding.base import cosine_floor
from maclaw_fast.memory.columns import CATEGORY_CODE, USER_FACT
from maclaw_fast.persist.journal import PutOp
from maclaw_fast.text.tokenizer import tokenize
from maclaw_kernels.recall import REASON_REVIVED, recall_single
from maclaw_kernels.revival import count_cued, cue_strengths, mark_dormant, revived_masks

DORMANT = 2  # the status code of dormant entries (columns.STATUS)
REVIVED_REASON = REASON_REVIVED  # the hit-reason code of a revived entry (hits.REASONS[4])


class _DormantRows:
    """Dormant rows of one recall plan (category filter, dynamic view) per project scope."""

    def __init__(self, store, dynamic: bool, category: str | None) -> None:
        t = store._table
        n = t.n_rows
        self.version, self.n = t.version, n
        mask = t.alive[:n] & (t.status[:n] == DORMANT)
        if category is not None:
            mask &= t.category[:n] == CATEGORY_CODE[category]
        if dynamic:  # as the active view of recall_dynamic: no user facts
            mask &= t.category[:n] != USER_FACT
        self.mask = mask
        self.is_global = t.scope[:n] == 0
        self.by_project: dict[str | None, np.ndarray] = {}
        self.by_mask: dict[str | None, np.ndarray] = {}

    def as_mask(self, store, project: str | None) -> np.ndarray:
        mask = self.by_mask.get(project)
        if mask is None:
            mask = self.by_mask[project] = np.zeros(self.n, np.bool_)
            mask[self.rows(store, project)] = True
        return mask

    def rows(self, store, project: str | None) -> np.ndarray:
        rows = self.by_project.get(project)
        if rows is None:
            mask = self.mask
            if project:
                tagged = np.zeros(self.n, np.bool_)
                tagged[[r for r in store._table.rows_with_tag(project) if r < self.n]] = True
                mask = mask & (self.is_global | tagged)
            rows = self.by_project[project] = np.flatnonzero(mask).astype(np.int64)
        return rows


def _dormant(store, dynamic: bool, category: str | None) -> _DormantRows:
    key = ("dormant", dynamic, category)
    cached = store._plan_cache.get(key)
    if cached is None or cached.version != store._table.version or cached.n != store._table.n_rows:
        cached = store._plan_cache[key] = _DormantRows(store, dynamic, category)
    return cached


def dormant_mask(store, project: str | None, *, dynamic: bool = False,
                 category: str | None = None) -> np.ndarray:
    """:func:`dormant_rows` as a mask over the store's rows (the fused recall kernel's
    ``dormant`` argument).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> e = s.save("chatted about the ferry", category="conversation_summary")
    >>> _ = s.set_fields(e.id, status="dormant")
    >>> dormant_mask(s, None).tolist()
    [True]
    """
    return _dormant(store, dynamic, category).as_mask(store, project)


def dormant_rows(store, project: str | None, *, dynamic: bool = False,
                 category: str | None = None) -> np.ndarray:
    """Rows of the dormant entries a recall with these arguments may revive (cached until the
    store changes).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> e = s.save("chatted about the ferry", category="conversation_summary")
    >>> _ = s.set_fields(e.id, status="dormant")
    >>> dormant_rows(s, None).tolist() == [s._table.row_of[e.id]]
    True
    """
    return _dormant(store, dynamic, category).rows(store, project)


class QueryCues:
    """One single recall's raw BM25 and cosine of every row, and the query's ``idf_total``
    (made on first use), shared by revival and the archive check."""

    def __init__(self, store, static, query: str, tokens, qvec, idf: float | None,
                 ready: bool | None = None) -> None:
        self.store, self.query, self.qvec = store, query, qvec
        self._tokens = tokens
        self._idf = idf
        n = static.n
        _, _, _, bm25, cos = static.single
        # ready: static.single holds every row's BM25 and cosine already (by default, when the
        # fused kernel gave the idf_total); else they are computed here
        if not (idf is not None if ready is None else ready):
            bm25 = store._bm25.scores(self.tokens, n)
            cos = (store._vectors.scores(unit_query(store, qvec), n) if qvec is not None
                   else np.zeros(n, np.float32))
        self.bm25, self.cos = bm25[:n], cos[:n]

    @property
    def tokens(self) -> list[str]:
        if self._tokens is None:
            self._tokens = tokenize(self.query)
        return self._tokens

    @property
    def idf_total(self) -> float:
        if self._idf is None:
            if self._tokens is None and self.query.isascii():  # split in the kernel
                self._idf = self.store._bm25.idf_total(query=self.query)
            else:
                self._idf = self.store._bm25.idf_total(self.tokens)
        return self._idf

    def best(self, rows: np.ndarray) -> float:
        """The strongest cue among ``rows`` (0 when none)."""
        if rows.shape[0] == 0:
            return 0.0
        rc = self.store.config.recall
        out = np.empty(rows.shape[0])
        cue_strengths(self.bm25[rows], self.cos[rows], self.idf_total, rc.bm25_weight,
                      rc.cos_weight, self.qvec is not None, False,
                      cosine_floor(self.store.embedder), out)
        return float(out.max())


def revive_single(store, static, project, query: str, tokens, qvec, now: float, m: int,
                  fused_idf: float | None, dynamic: bool = False, category: str | None = None,
                  ranked: bool = False) -> tuple[int, QueryCues | None]:
    """After a single recall's kernel has selected ``m`` rows into ``static.single``: run the
    ranking again with the dormant rows this query cues strongly, unless they were ranked
    already; returns the new count and the query's cues (None when neither revival nor
    archive search needs them).

    ``fused_idf``: the query's ``idf_total`` from the fused kernel, which revives in its own
    pass and leaves the BM25 and cosine of every row in ``static.single``; ``ranked``: the
    thread-prior path did the same (:func:`revival_masks` before its one ranking); neither
    (the large-store paths): the scores are computed here and the ranking runs again.
    """
    fc = store.config.forgetting
    wants_archive = fc.archive_search and len(store.archive) > 0
    if fused_idf is not None or ranked:
        return m, (QueryCues(store, static, query, tokens, qvec, fused_idf, ready=True)
                   if wants_archive else None)
    has_dormant = fc.revive and dormant_rows(store, project, dynamic=dynamic,
                                             category=category).shape[0] > 0
    if not has_dormant and not wants_archive:
        return m, None
    cues = QueryCues(store, static, query, tokens, qvec, None)
    if not has_dormant:
        return m, cues
    eligible, affinity, scored, _ = static.scope_masks(store, project)
    eligible, scored, widened = revival_masks(store, project, cues.bm25, cues.cos,
                                              qvec is not None, cues.idf_total, eligible,
                                              scored, dynamic=dynamic, category=category)
    if not widened:
        return m, cues
    rows, parts, work, _, _ = static.single
    m = recall_single(*static.recency_args, now, *static.recency_knobs, cues.bm25, cues.cos,
                      affinity, eligible, scored, *static.kernel_args, work, rows, parts)
    mark_revived(store, static, m, project, dynamic=dynamic, category=category)
    return m, cues


def revival_masks(store, project, bm25: np.ndarray, cos: np.ndarray, has_vector: bool,
                  idf_total: float, eligible: np.ndarray, scored: np.ndarray, *,
                  dynamic: bool = False,
                  category: str | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(eligible, scored, widened)``: copies of the masks plus the dormant rows of the scope
    that the query (every row's raw ``bm25`` and ``cos``, its ``idf_total``) cues at least
    ``revive_min_cue`` strongly and the dormant rows within ``adjacency_hops`` conversation
    links of one (:func:`maclaw_kernels.revival.revived_masks`, as the fused kernel widens
    them); the masks themselves and False when the query cues none (or revival is off). The
    masks cover the store's first ``len(eligible)`` rows.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> e = s.save("the ferry to Naxos leaves at nine", category="conversation_summary")
    >>> _ = s.set_fields(e.id, status="dormant")
    >>> none = np.zeros(1, np.bool_)
    >>> el, sc, widened = revival_masks(s, None, np.array([3.0]), np.zeros(1, np.float32),
    ...                                 False, 3.0, none, none)
    >>> el.tolist(), widened
    ([True], True)
    """
    fc = store.config.forgetting
    if not fc.revive:
        return eligible, scored, False
    dormant = dormant_mask(store, project, dynamic=dynamic, category=category)
    rc = store.config.recall
    cue = (idf_total, rc.bm25_weight, rc.cos_weight, has_vector, fc.revive_needs_term,
           cosine_floor(store.embedder))
    n = eligible.shape[0]
    if count_cued(dormant, bm25[:n], cos[:n], *cue, fc.revive_min_cue) == 0:
        return eligible, scored, False
    g = store._graph
    el, sc = revived_masks(dormant, bm25[:n], cos[:n], *cue, fc.revive_min_cue, g.prev[:n],
                           g.next[:n], rc.adjacency_hops, eligible, scored)
    return el, sc, True


def mark_revived(store, static, m: int, project, *, dynamic: bool = False,
                 category: str | None = None) -> None:
    """Reason code :data:`REVIVED_REASON` for the dormant rows (of the scope) among the ``m``
    rows the ranking selected into ``static.single``."""
    rows, parts = static.single[0], static.single[1]
    mark_dormant(rows[:m], dormant_mask(store, project, dynamic=dynamic, category=category),
                 REVIVED_REASON, parts[8, :m])


def unit_query(store, qvec):
    """``qvec`` checked and normalised (the form archive search scores)."""
    from maclaw_fast.embedding import check_vectors

    return check_vectors(qvec, store.dim, what="query vector")[0]


def reactivate(store, rows, now: float) -> list[str]:
    """Make the dormant entries among ``rows`` (just returned by a reinforcing recall) active:
    strength 1.0, ``updated_at = now``, journaled; returns their ids."""
    t = store._table
    rows = np.asarray(rows, np.int64)
    if rows.shape[0] == 0:
        return []
    sleeping = np.unique(rows[t.status[rows] == DORMANT])
    if sleeping.shape[0] == 0:
        return []
    ops = []
    for r in sleeping.tolist():
        entry = msgspec.structs.replace(store._entry(r), status="active", strength=1.0,
                                        updated_at=float(now))
        t.write(r, entry)
        ops.append(PutOp(entry, None, False))
    store._log(*ops)
    return [op.entry.id for op in ops]
