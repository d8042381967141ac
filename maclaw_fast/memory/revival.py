"""Cue-driven revival of dormant memories (SPEC §0 R9), as one more mask on recall.

Dormant entries stay in the BM25 index and the vector column, so the recall kernels have already
scored them (BM25 and cosine of every row) by the time a recall has run. Here, those of the
query's scope whose absolute cue strength (:func:`maclaw_kernels.revival.cue_strength`) reaches
``ForgettingConfig.revive_min_cue`` are added to the recall's masks and the same ranking kernel
runs again over the same scores: a revived entry is returned only when its score earns a place
among the results, with ``reason="revived"``. The second run happens only when some dormant
entry passes the bar, so a recall over a store whose dormant entries the query does not cue
costs one pass over the dormant rows more.

A reinforcing recall makes a returned dormant entry active again: strength 1.0, ``updated_at``
= now, journaled (:func:`reactivate`).
"""

from __future__ import annotations

import math

import msgspec
import numpy as np

from maclaw_fast.config import CATEGORY_TABLE
from maclaw_fast.memory.columns import CATEGORY_CODE, USER_FACT, budget_tokens
from maclaw_fast.memory.lifecycle import restore_locked
from maclaw_fast.persist.journal import PutOp
from maclaw_fast.records import Entry, RecallHit, ScoreBreakdown
from maclaw_fast.text.tokenizer import tokenize
from maclaw_kernels.recall import recall_single
from maclaw_kernels.revival import cue_strengths, strong_cues, strong_cues_batch

DORMANT = 2  # the status code of dormant entries (columns.STATUS)
REVIVED_REASON = 4.0  # the hit-reason code of a revived entry (hits.REASONS[4])


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
    key = ("dormant", dynamic, category)
    cached = store._plan_cache.get(key)
    if cached is None or cached.version != store._table.version or cached.n != store._table.n_rows:
        cached = store._plan_cache[key] = _DormantRows(store, dynamic, category)
    return cached.rows(store, project)


class QueryCues:
    """One single recall's raw BM25 and cosine of every row, and the query's ``idf_total``
    (made on first use), shared by revival and the archive check."""

    def __init__(self, store, static, query: str, tokens, qvec, scores_ready: bool) -> None:
        self.store, self.query, self.qvec = store, query, qvec
        self._tokens = tokens
        self._idf: float | None = None
        n = static.n
        _, _, _, bm25, cos = static.single
        if not scores_ready:
            bm25 = store._bm25.scores(self.tokens, n)
            cos = (store._vectors.scores(_unit(store, qvec), n) if qvec is not None
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
                      rc.cos_weight, self.qvec is not None, out)
        return float(out.max())


def revive_single(store, static, project, query: str, tokens, qvec, now: float, m: int,
                  scores_ready: bool, dynamic: bool = False, category: str | None = None
                  ) -> tuple[int, QueryCues | None]:
    """After a single recall's kernel has selected ``m`` rows into ``static.single``: run the
    ranking again with the dormant rows this query cues strongly; returns the new count and the
    query's cues (None when neither revival nor archive search needs them).

    ``scores_ready``: the kernel left the BM25 and cosine of every row in ``static.single``
    (the fused path); otherwise they are computed here.
    """
    fc = store.config.forgetting
    drows = (dormant_rows(store, project, dynamic=dynamic, category=category) if fc.revive
             else _NO_ROWS)
    wants_archive = fc.archive_search and len(store.archive) > 0
    if drows.shape[0] == 0 and not wants_archive:
        return m, None
    cues = QueryCues(store, static, query, tokens, qvec, scores_ready)
    if drows.shape[0] == 0:
        return m, cues
    rc = store.config.recall
    rows, parts, work, _, _ = static.single
    cued = np.empty(drows.shape[0], np.int64)
    k = strong_cues(drows, cues.bm25, cues.cos, cues.idf_total, rc.bm25_weight, rc.cos_weight,
                    qvec is not None, fc.revive_min_cue, cued)
    if k == 0:
        return m, cues
    eligible, affinity, scored, _ = static.scope_masks(store, project)
    eligible, scored = eligible.copy(), scored.copy()
    back = with_linked_dormant(store, cued[:k], drows)
    eligible[back] = True
    scored[back] = True
    m = recall_single(*static.recency_args, now, *static.recency_knobs, cues.bm25, cues.cos,
                      affinity, eligible, scored, *static.kernel_args, work, rows, parts)
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


def _unit(store, qvec):
    from maclaw_fast.embedding import check_vectors

    return check_vectors(qvec, store.dim, what="query vector")[0]


def _mark(store, rows: np.ndarray, reason: np.ndarray) -> None:
    """Reason code :data:`REVIVED_REASON` for the dormant rows among ``rows``."""
    reason[store._table.status[rows] == DORMANT] = REVIVED_REASON


def revive_batch(store, bm25, cos, affinity, eligible, scored, scope_of, projects,
                 token_lists, has_vector: bool, rows, parts, counts, run_kernel) -> None:
    """:func:`revive_single` for a chunk of a batch: row ``q`` of ``bm25``/``cos`` is query
    ``q``, ``scope_of[q]`` its row of the masks (one per entry of ``projects``); ``rows``,
    ``parts`` (the reason codes last) and ``counts`` hold the chunk's results. The queries that
    cue a dormant entry strongly are ranked again, each with its own mask rows, by
    ``run_kernel(bm25, cos, affinity, eligible, scored, scope_of, rows, *parts, counts)`` (the
    batch kernel with the plan's arguments), and their results replaced."""
    fc = store.config.forgetting
    if not fc.revive or bm25.shape[0] == 0:
        return
    per_scope = [dormant_rows(store, p) for p in projects]
    width = max(r.shape[0] for r in per_scope)
    if width == 0:
        return
    padded = np.full((len(per_scope), width), -1, np.int64)
    for s, r in enumerate(per_scope):
        padded[s, :r.shape[0]] = r
    rc = store.config.recall
    idf = np.array([store._bm25.idf_total(t) for t in token_lists])
    cued = np.empty((bm25.shape[0], width), np.int64)
    k = np.zeros(bm25.shape[0], np.int64)
    strong_cues_batch(padded, scope_of, bm25, cos, idf, rc.bm25_weight, rc.cos_weight,
                      has_vector, fc.revive_min_cue, cued, k)
    qs = np.flatnonzero(k)
    if qs.shape[0] == 0:
        return
    elig = eligible[scope_of[qs]]  # fancy indexing: copies, one mask row per query
    sc = scored[scope_of[qs]]
    for i, q in enumerate(qs.tolist()):
        back = with_linked_dormant(store, cued[q, :k[q]], per_scope[scope_of[q]])
        elig[i, back] = True
        sc[i, back] = True
    sub_rows = np.full((qs.shape[0], rows.shape[1]), -1, np.int64)
    sub_parts = [np.zeros((qs.shape[0], p.shape[1])) for p in parts]
    sub_counts = np.zeros(qs.shape[0], np.int64)
    run_kernel(np.ascontiguousarray(bm25[qs]), np.ascontiguousarray(cos[qs]),
               affinity[scope_of[qs]], elig, sc, np.arange(qs.shape[0], dtype=np.int64),
               sub_rows, *sub_parts, sub_counts)
    status = store._table.status
    for i, q in enumerate(qs.tolist()):
        c = int(sub_counts[i])
        sub_parts[-1][i, :c][status[sub_rows[i, :c]] == DORMANT] = REVIVED_REASON
        rows[q] = sub_rows[i]
        for p, sp in zip(parts, sub_parts):
            p[q] = sp[i]
        counts[q] = c


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


def with_archive(store, static, cues: QueryCues | None, hits: list[RecallHit],
                 rows: np.ndarray, project, dynamic: bool, category, reinforce: bool,
                 now: float) -> list[RecallHit]:
    """Archive search (SPEC §0 R9): when no returned entry's cue reaches
    ``forgetting.archive_below``, up to ``archive_max_hits`` archived entries of the query's
    scope with a cue of at least ``archive_min_cue`` join the ranked hits
    (``reason="archived"``) where their score places them: recency and importance as recall
    computes them, relevance from their BM25 (over the archive's statistics) and cosine,
    normalised by this query's ranges over the store's candidates. The recall's entry and token
    limits hold. A reinforcing recall restores the archived entries it returns into the store
    (SPEC §9: ``updated_at = now``, access 1, re-indexed, then the capacity check)."""
    fc = store.config.forgetting
    if cues is None or not fc.archive_search or len(store.archive) == 0:
        return hits
    if cues.best(rows) >= fc.archive_below:
        return hits
    rc = store.config.recall
    qvec = _unit(store, cues.qvec) if cues.qvec is not None else None
    found = store.archive.search(cues.tokens, qvec, bm25_weight=rc.bm25_weight,
                                 cos_weight=rc.cos_weight, min_cue=fc.archive_min_cue,
                                 limit=4 * fc.archive_max_hits + 4)
    found = [f for f in found if _in_scope(store, f[0], project, dynamic, category)]
    found = found[:fc.archive_max_hits]
    if not found:
        return hits
    eligible = static.scope_masks(store, project)[0]
    extra = [_archive_hit(store, entry, bm25, cos, cues.bm25[eligible], now)
             for entry, _, bm25, cos in found]
    lead = sum(1 for h in hits if h.reason in ("self_identity", "user_fact"))
    ranked = sorted(hits[lead:] + extra, key=lambda h: -h.score)  # stable: store order kept
    merged = hits[:lead] + ranked
    limit = rc.dynamic_max_entries if dynamic else rc.max_entries
    budget = rc.dynamic_token_budget if dynamic else rc.token_budget
    out, used = [], 0
    for h in merged:
        cost = budget_tokens(h.entry.compact_form or h.entry.content)
        if len(out) >= limit:
            break
        if used + cost > budget and h.reason != "self_identity":
            continue
        out.append(h)
        used += cost
    if reinforce:
        out = [_restored(store, h, now) if h.reason == "archived" else h for h in out]
    return out


def _restored(store, hit: RecallHit, now: float) -> RecallHit:
    return msgspec.structs.replace(hit, entry=restore_locked(store, hit.entry.id, now))


def _in_scope(store, entry: Entry, project, dynamic: bool, category) -> bool:
    if entry.status == "superseded" or entry.content in store._table.row_of_content:
        return False
    if category is not None and entry.category != category:
        return False
    if dynamic and entry.category == "user_fact":
        return False
    if project and entry.scope == "project":
        return any(t.lower() == project.lower() for t in entry.tags)
    return True


def _archive_hit(store, entry: Entry, bm25: float, cos: float, store_bm25: np.ndarray,
                 now: float) -> RecallHit:
    """A hit for an archived entry, scored as recall scores a row (SPEC §6, the configured
    BM25 normalisation over the store's candidates for this query, capped at 1)."""
    rc = store.config.recall
    hours = max(now - entry.updated_at, 0.0) / 3600.0
    recency = math.exp(-rc.recency_decay_per_hour * hours)
    importance = CATEGORY_TABLE[entry.category][0] + math.log1p(entry.access_count)
    hits = store_bm25[store_bm25 > 0]
    x = bm25
    if rc.bm25_norm == "max" and x > 0:
        x = min(1.0, x / hits.max()) if hits.shape[0] else 1.0
    elif rc.bm25_norm == "minmax" and x > 0:
        lo, hi = (hits.min(), hits.max()) if hits.shape[0] else (x, x)
        x = 1.0 if hi <= lo else min(1.0, max(0.0, (x - lo) / (hi - lo)))
    cos = max(cos, 0.0)
    total = (rc.weight_recency * recency + rc.weight_importance * importance
             + rc.weight_relevance * (rc.bm25_weight * x + rc.cos_weight * cos))
    breakdown = ScoreBreakdown(recency, importance, x, cos, 0.0, 0.0, total)
    return RecallHit(entry, total, breakdown, "archived")


def weak_queries(store, bm25, cos, rows, counts, token_lists, has_vector: bool,
                 out: np.ndarray) -> None:
    """For a chunk of a batch: ``out[q]`` = no returned entry of query ``q`` reaches
    ``forgetting.archive_below`` (so :func:`with_archive` would consult the archive)."""
    fc = store.config.forgetting
    if not fc.archive_search or len(store.archive) == 0:
        return
    rc = store.config.recall
    for q in range(bm25.shape[0]):
        r = rows[q, :counts[q]]
        if r.shape[0] == 0:
            out[q] = True
            continue
        cue = np.empty(r.shape[0])
        cue_strengths(bm25[q, r], cos[q, r], store._bm25.idf_total(token_lists[q]),
                      rc.bm25_weight, rc.cos_weight, has_vector, cue)
        out[q] = cue.max() < fc.archive_below


def batch_with_archive(store, result, weak: np.ndarray, rows, counts, recall_one,
                       reasons: tuple[str, ...], as_arrow: bool):
    """The archive step of a batch: each ``weak`` query is recalled alone (read-only, on the
    same snapshot: ``recall_one(q)``), which gives it its archive hits exactly as a single
    recall would. Returns (the result with those queries' hits replaced, the store rows to
    reinforce, the ids of the archived entries returned)."""
    replaced: dict[int, list[RecallHit]] = {}
    for q in np.flatnonzero(weak).tolist():
        hits = recall_one(q)
        if any(h.reason == "archived" for h in hits):
            replaced[q] = hits
    row_of = store._table.row_of
    sel = []
    for q in range(rows.shape[0]):
        if q in replaced:
            sel.extend(row_of[h.entry.id] for h in replaced[q] if h.reason != "archived")
        else:
            sel.extend(rows[q, :counts[q]].tolist())
    archived = list(dict.fromkeys(h.entry.id for hits in replaced.values() for h in hits
                                  if h.reason == "archived"))
    if not replaced:
        return result, np.asarray(sel, np.int64), archived
    if as_arrow:
        result = _replace_arrow(result, replaced, reasons)
    else:
        for q, hits in replaced.items():
            result[q] = hits
    return result, np.asarray(sel, np.int64), archived


def _replace_arrow(table, replaced: dict[int, list[RecallHit]], reasons: tuple[str, ...]):
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pc.invert(pc.is_in(table.column("query_index"),
                              value_set=pa.array(list(replaced), pa.int32())))
    cols: dict[str, list] = {name: [] for name in table.column_names}
    for q, hits in replaced.items():
        for rank, h in enumerate(hits):
            b = h.breakdown
            values = {"query_index": q, "rank": rank, "id": h.entry.id, "score": h.score,
                      "recency": b.recency, "importance": b.importance, "bm25": b.bm25,
                      "cos": b.cos, "affinity": b.affinity, "graph": b.graph,
                      "reason": reasons.index(h.reason)}
            for name in cols:
                cols[name].append(values[name])
    arrays = []
    for name in table.column_names:
        if name == "reason":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(cols[name], pa.int8()),
                                                         pa.array(list(reasons))))
        else:
            arrays.append(pa.array(cols[name], table.schema.field(name).type))
    extra = pa.Table.from_arrays(arrays, schema=table.schema)
    merged = pa.concat_tables([table.filter(keep), extra])
    return merged.sort_by([("query_index", "ascending"), ("rank", "ascending")])


def restore_returned(store, ids, now: float) -> None:
    """Restore archived entries a reinforcing batch returned (SPEC §9)."""
    for entry_id in ids:
        if entry_id in store.archive and entry_id not in store:
            restore_locked(store, entry_id, now)
