"""Cue-driven revival of dormant memories (SPEC §0 R9), as one more mask on recall.

Dormant entries stay in the BM25 index and the vector column, so the recall kernels score them
(BM25 and cosine of every row) with the active ones. Those of the query's scope whose absolute
cue strength (:func:`maclaw_kernels.revival.cue_strength`) reaches
``ForgettingConfig.revive_min_cue`` join the recall's masks, with the dormant rows within
``adjacency_hops`` conversation links of them: a revived entry is returned only when its score
earns a place among the results, with ``reason="revived"``. The fused single-query kernel does
this in its one pass, and so does the batch kernel (:func:`dormant_mask` is their ``dormant``
argument); the large-store paths run the same ranking kernel a second time over the same
scores, only when some dormant entry passes the bar (:func:`revive_single`).

A reinforcing recall makes a returned dormant entry active again: strength 1.0, ``updated_at``
= now, journaled (:func:`reactivate`).
"""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.embedding.base import cosine_floor
from maclaw_fast.memory.columns import CATEGORY_CODE, USER_FACT
from maclaw_fast.memory.thread_prior import rank_with_prior
from maclaw_fast.persist.journal import PutOp
from maclaw_fast.text.tokenizer import tokenize
from maclaw_kernels.recall import REASON_REVIVED, recall_single
from maclaw_kernels.revival import cue_strengths, strong_cues

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

    def __init__(self, store, static, query: str, tokens, qvec, idf: float | None) -> None:
        self.store, self.query, self.qvec = store, query, qvec
        self._tokens = tokens
        self._idf = idf
        n = static.n
        _, _, _, bm25, cos = static.single
        if idf is None:
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
                  prior: np.ndarray | None = None) -> tuple[int, QueryCues | None]:
    """After a single recall's kernel has selected ``m`` rows into ``static.single``: run the
    ranking again with the dormant rows this query cues strongly, unless the fused kernel has
    ranked them already; returns the new count and the query's cues (None when neither
    revival nor archive search needs them).

    ``fused_idf``: the query's ``idf_total`` from the fused kernel, which revives in its own
    pass and leaves the BM25 and cosine of every row in ``static.single``; None after the
    other paths (their scores are computed here, the ranking runs again). ``prior``: the
    query's thread prior when it applies (:mod:`maclaw_fast.memory.thread_prior`).
    """
    fc = store.config.forgetting
    wants_archive = fc.archive_search and len(store.archive) > 0
    if fused_idf is not None:
        return m, (QueryCues(store, static, query, tokens, qvec, fused_idf) if wants_archive
                   else None)
    drows = (dormant_rows(store, project, dynamic=dynamic, category=category) if fc.revive
             else _NO_ROWS)
    if drows.shape[0] == 0 and not wants_archive:
        return m, None
    cues = QueryCues(store, static, query, tokens, qvec, None)
    if drows.shape[0] == 0:
        return m, cues
    rc = store.config.recall
    rows, parts, work, _, _ = static.single
    cued = np.empty(drows.shape[0], np.int64)
    k = strong_cues(drows, cues.bm25, cues.cos, cues.idf_total, rc.bm25_weight, rc.cos_weight,
                    qvec is not None, fc.revive_needs_term, cosine_floor(store.embedder),
                    fc.revive_min_cue, cued)
    if k == 0:
        return m, cues
    eligible, affinity, scored, _ = static.scope_masks(store, project)
    eligible, scored = eligible.copy(), scored.copy()
    back = with_linked_dormant(store, cued[:k], drows)
    eligible[back] = True
    scored[back] = True
    if prior is not None:
        m = rank_with_prior(static, now, prior, cues.bm25, cues.cos, affinity, eligible, scored)
    else:
        m = recall_single(*static.recency_args, now, *static.recency_knobs, cues.bm25,
                          cues.cos, affinity, eligible, scored, *static.kernel_args, work, rows,
                          parts)
    _mark(store, rows[:m], parts[8, :m])
    return m, cues


_NO_ROWS = np.zeros(0, np.int64)


def with_linked_dormant(store, cued: np.ndarray, dormant: np.ndarray) -> np.ndarray:
    """``cued`` (dormant rows the query cues strongly) and the dormant rows of ``dormant``
    within ``adjacency_hops`` conversation links of them: the reply to a cued question comes
    back to compete with it (the recall's link walk then decides whether it earns a place),
    as it would had the two never gone dormant."""
    hops = store.config.recall.adjacency_hops
    if hops <= 0 or cued.shape[0] == 0:
        return cued
    links = store.conversation_links()
    is_dormant = np.zeros(links[0].shape[0], np.bool_)
    is_dormant[dormant] = True
    out = set(cued.tolist())
    for r in cued.tolist():
        for side in links:
            node = r
            for _ in range(hops):
                node = int(side[node])
                if node < 0 or not is_dormant[node]:
                    break
                out.add(node)
    return np.fromiter(sorted(out), np.int64, len(out))


def unit_query(store, qvec):
    """``qvec`` checked and normalised (the form archive search scores)."""
    from maclaw_fast.embedding import check_vectors

    return check_vectors(qvec, store.dim, what="query vector")[0]


def _mark(store, rows: np.ndarray, reason: np.ndarray) -> None:
    """Reason code :data:`REVIVED_REASON` for the dormant rows among ``rows``."""
    reason[store._table.status[rows] == DORMANT] = REVIVED_REASON


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
