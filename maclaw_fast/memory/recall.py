"""Recall (docs/design.md, "Recall"): one pipeline for every store, one query or many.

The stages, in order: validate the arguments and embed the query (outside the store lock);
then, under the lock, the candidates of the store's recall plan (:mod:`maclaw_fast.memory.plan`);
relevance (every row's BM25, cosine and, for conversation stores, thread prior); the ranking
kernel (:mod:`maclaw_kernels.recall`: memory-stream score, revival, fusion, graph and
conversation-link walk, identity / user-fact block, budget); typed hits; the archive when nothing
matches strongly (:mod:`maclaw_fast.memory.archive_search`); reinforcement of what was returned.
:func:`recall_batch` runs the same stages over many queries, the ranking across threads.
"""

from __future__ import annotations

import os

import msgspec
import numpy as np

from maclaw_fast.embedding import check_vectors
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.memory.archive_search import (QueryCues, batch_with_archive, restore_returned,
                                              weak_queries, with_archive)
from maclaw_fast.memory.hits import REASONS, arrow_hits, batch_hits, hits_from_parts
from maclaw_fast.memory.plan import RecallPlan, recall_plan
from maclaw_fast.persist.journal import PutOp, TouchOp
from maclaw_fast.records import RecallHit
from maclaw_fast.text.tokenizer import tokenize
from maclaw_fast.threads import batch_threads, blas_threads, numba_threads
from maclaw_kernels.recall import N_PARTS, Queries, base_scores, rank

_NO_PRIORS = np.zeros((0, 0))
DORMANT = 2  # the status code of dormant entries (columns.STATUS)


# ---------------------------------------------------------------------- arguments
def _query_vectors(store, queries: list[str], given) -> np.ndarray | None:
    """Unit query vectors: ``given`` checked, else embedded (a blank query scores cos 0)."""
    if given is not None:
        if not store.dim:
            raise ValidationError("this store has no embedder (BM25-only): query vectors unused")
        vecs = check_vectors(given, store.dim, what="query vector")
        if vecs.shape[0] != len(queries):
            raise ValidationError(f"{vecs.shape[0]} query vectors for {len(queries)} queries")
        return vecs
    if store._qcache is None or not queries:
        return None
    keep = [i for i, q in enumerate(queries) if q.strip()]
    if len(keep) == len(queries):
        return store._qcache.get_many(queries)
    out = np.zeros((len(queries), store.dim), np.float32)
    if keep:
        out[keep] = store._qcache.get_many([queries[i] for i in keep])
    return out


def _query_vector(store, query: str, given) -> np.ndarray | None:
    if given is None and (store._qcache is None or not query.strip()):
        return None
    return _query_vectors(store, [query], None if given is None else given)[0]


# ---------------------------------------------------------------------- relevance
def relevance(store, plan: RecallPlan, tokens: list[str], qvec) -> Queries:
    """One query's relevance inputs over every row of ``plan`` (lock held), as a block of one:
    BM25 and cosine into the plan's buffers, the thread prior when it applies, the query's
    ``idf_total``."""
    n = plan.n
    bm25, cos = plan.bm25, plan.cos
    bm25.fill(0.0)
    index = store._bm25
    index.scores(tokens, n, out=bm25[0])
    if qvec is None:
        cos.fill(0.0)
    else:
        store._vectors.scores(qvec, n, cos[0])
    threads = plan.threads(store)
    prior = _NO_PRIORS
    if threads is not None:
        prior = np.empty((1, n))
        threads.prior(store, index.term_ids(tokens), cos[0], qvec is not None, prior[0])
    idf = np.array([index.idf_total(tokens)])
    return Queries(bm25, cos, prior, idf, qvec is not None)


# ---------------------------------------------------------------------- one query
def recall(store, query, *, project=None, reinforce=True, query_vector=None, dynamic=False,
           category=None) -> list[RecallHit]:
    query = validate.query(query)
    project = validate.project(project)
    reinforce = validate.flag(reinforce, "reinforce")
    if category is not None:
        category = validate.category(category)
    qvec = _query_vector(store, query, query_vector)  # embedding runs outside the lock
    tokens = tokenize(query)
    with store._lock:
        store._check_open()
        now = float(store.clock())
        plan = recall_plan(store, dynamic, category)
        scope, has_affinity = plan.scope(store, project)
        q = relevance(store, plan, tokens, qvec)
        base_scores(plan.rows, plan.knobs, now, plan.base)
        rank(plan.rows, scope, _ONE, plan.knobs, q, plan.base, plan.out_rows, plan.out_parts,
             plan.out_count)
        m = int(plan.out_count[0])
        rows = plan.out_rows[0, :m]
        hits = hits_from_parts(store, rows, plan.out_parts[0, :, :m], has_affinity)
        cues = QueryCues(q.bm25[0], q.cos[0], float(q.idf[0]), tokens, qvec)
        out = with_archive(store, plan, cues, hits, rows, project, dynamic, category, False,
                           now, q.prior[0] if q.prior.shape[0] else None)
        if reinforce and out is not hits:  # merged: the limits may have cut some rows
            out = _reinforce_hits(store, out, now)
        elif reinforce and m:
            _reinforce(store, rows.copy(), now)
        return out


_ONE = np.zeros(1, np.int64)  # a single query's scope row


# ---------------------------------------------------------------------- many queries
def _rank_threads(plan, scopes, scope_of, queries: Queries, rows, parts, counts,
                  threads: int) -> None:
    """:func:`rank` over the queries in ``threads`` contiguous blocks at once (the kernel
    releases the GIL); each block writes its own rows of the outputs."""
    nq = queries.bm25.shape[0]
    blocks = max(1, min(threads, nq // 16))
    if blocks == 1:
        rank(plan.rows, scopes, scope_of, plan.knobs, queries, plan.base, rows, parts, counts)
        return
    cuts = [nq * b // blocks for b in range(blocks + 1)]

    def block(b):
        lo, hi = cuts[b], cuts[b + 1]
        prior = queries.prior[lo:hi] if queries.prior.shape[0] else queries.prior
        rank(plan.rows, scopes, scope_of[lo:hi], plan.knobs,
             Queries(queries.bm25[lo:hi], queries.cos[lo:hi], prior, queries.idf[lo:hi],
                     queries.has_vector), plan.base, rows[lo:hi], parts[lo:hi], counts[lo:hi])

    list(_pool().map(block, range(blocks)))


_POOL: list = []


def _pool():
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                        thread_name_prefix="maclaw-recall"))
    return _POOL[0]


def recall_batch(store, queries, *, projects=None, reinforce=True, query_vectors=None,
                 as_arrow=False):
    if isinstance(queries, str) or not hasattr(queries, "__len__"):
        raise ValidationError("queries must be a list of strings")
    queries = [validate.query(q) for q in queries]
    nq = len(queries)
    projects = validate.projects(projects, nq)
    reinforce = validate.flag(reinforce, "reinforce")
    qvecs = _query_vectors(store, queries, query_vectors)
    token_lists = [tokenize(q) for q in queries]
    with store._lock:
        store._check_open()
        now = float(store.clock())
        plan = recall_plan(store)
        n = plan.n
        scopes, scope_of = plan.batch_scopes(store, projects)
        threads = plan.threads(store)
        rows = np.full((nq, plan.width), -1, np.int64)
        parts = np.zeros((nq, N_PARTS, plan.width))
        counts = np.zeros(nq, np.int64)
        weak = np.zeros(nq, np.bool_)  # no strong match: the archive is consulted
        has_vector = qvecs is not None
        base_scores(plan.rows, plan.knobs, now, plan.base)
        n_threads = batch_threads(store.config.batch_threads) or (os.cpu_count() or 1)
        with numba_threads(n_threads), blas_threads(1):
            for lo in range(0, nq, plan.batch_chunk):
                hi = min(nq, lo + plan.batch_chunk)
                bm25, cos = plan.batch_buffers(hi - lo)
                store._bm25.scores_batch(token_lists[lo:hi], n, out=bm25)
                if has_vector:
                    store._vectors.scores_batch(qvecs[lo:hi], n, out=cos)
                else:
                    cos.fill(0.0)
                idf = store._bm25.idf_totals(token_lists[lo:hi])
                prior = _NO_PRIORS
                if threads is not None:
                    prior = np.empty((hi - lo, n))
                    for q in range(lo, hi):
                        threads.prior(store, store._bm25.term_ids(token_lists[q]), cos[q - lo],
                                      has_vector, prior[q - lo])
                _rank_threads(plan, scopes, scope_of[lo:hi],
                              Queries(bm25, cos, prior, idf, has_vector), rows[lo:hi],
                              parts[lo:hi], counts[lo:hi], n_threads)
                weak_queries(store, bm25, cos, rows[lo:hi], counts[lo:hi], idf, has_vector,
                             weak[lo:hi])
        if as_arrow:
            result = arrow_hits(store, rows, parts, counts)
        else:
            result = batch_hits(store, rows, parts, counts, bool(scopes.affinity.any()))
        # queries without a strong match consult the archive as recall() does
        result, sel, archived = batch_with_archive(
            store, result, weak, rows, counts,
            lambda q: recall(store, queries[q], project=projects[q], reinforce=False,
                             query_vector=None if qvecs is None else qvecs[q]),
            REASONS, as_arrow)
        if reinforce and sel.shape[0]:
            _reinforce(store, sel, now)
        if reinforce and archived:
            restore_returned(store, archived, now)
        return result


# ---------------------------------------------------------------------- reinforcement
def _reinforce(store, rows: np.ndarray, now: float) -> None:
    """Access + 1 and the strength step for ``rows`` (journaled); the dormant ones among them
    (revived by this recall) become active again."""
    step = store.config.forgetting.reinforce_step
    row_list = rows.tolist()
    store._apply_touch(row_list, 1, step, now)
    store._log(TouchOp(store._table.ids_of(row_list), 1, step, now))
    reactivate(store, rows, now)


def reactivate(store, rows, now: float) -> list[str]:
    """Make the dormant entries among ``rows`` (just returned by a reinforcing recall) active:
    strength 1.0, ``updated_at = now``, journaled; returns their ids."""
    t = store._table
    rows = np.asarray(rows, np.int64)
    if rows.shape[0] == 0:
        return []
    sleeping = np.unique(rows[t.status[rows] == DORMANT])
    ops = []
    for r in sleeping.tolist():
        entry = msgspec.structs.replace(store._entry(r), status="active", strength=1.0,
                                        updated_at=float(now))
        t.write(r, entry)
        ops.append(PutOp(entry, None, False))
    if ops:
        store._log(*ops)
    return [op.entry.id for op in ops]


def reinforce(store, hits) -> int:
    """Reinforce ``hits`` (from a ``reinforce=False`` recall) as a reinforcing recall would
    have: access + 1 and the strength step for those in the store (dormant ones wake), archived
    ones restored. Entries gone since are skipped; returns how many were reinforced."""
    if isinstance(hits, (str, bytes)) or not hasattr(hits, "__iter__"):
        raise ValidationError("hits must be a list of RecallHit")
    hits = list(hits)
    if not all(isinstance(h, RecallHit) for h in hits):
        raise ValidationError("hits must be a list of RecallHit")
    with store._lock:
        store._check_open()
        out = _reinforce_hits(store, hits, float(store.clock()))
        return sum(1 for h in out if h.entry.id in store._table.row_of)


def _reinforce_hits(store, hits: list[RecallHit], now: float) -> list[RecallHit]:
    """Reinforce the returned ``hits`` (lock held): the rows first, then the archived ones
    restored (restoring may evict, which moves rows); archived hits come back restored."""
    row_of = store._table.row_of
    rows = list(dict.fromkeys(row_of[h.entry.id] for h in hits if h.entry.id in row_of))
    if rows:
        _reinforce(store, np.array(rows, np.int64), now)
    archived = [h.entry.id for h in hits if h.entry.id not in row_of]
    restore_returned(store, archived, now)  # only those still in the archive
    return [msgspec.structs.replace(h, entry=store._entry(row_of[h.entry.id]))
            if h.entry.id in archived and h.entry.id in row_of else h for h in hits]


def summary(store, category: str, limit: int) -> str:
    """Active entries of ``category`` as ``compact_form or content`` joined with " | ", cut at
    ``limit`` characters + "…" (the prompt summaries)."""
    parts = [e.compact_form or e.content for e in store.list(category=category)
             if e.status == "active"]
    text = " | ".join(parts)
    return text if len(text) <= limit else text[:limit] + "…"
