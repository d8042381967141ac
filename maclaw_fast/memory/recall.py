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
from itertools import chain, repeat

import msgspec
import numpy as np

from maclaw_fast.embedding import check_vectors
from maclaw_fast.embedding.base import (CJK_SHARE, cjk_share, cosine_floor, cosine_reach,
                                        plain_vector)
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.index.vectors import PARALLEL_ELEMENTS
from maclaw_fast.memory.archive_search import batch_with_archive, restore_returned, with_archive
from maclaw_fast.memory.hits import REASONS, arrow_hits, batch_hits, hits_from_parts
from maclaw_fast.memory.plan import RecallPlan, new_out, recall_plan
from maclaw_fast.memory.speakers import speaker_order
from maclaw_fast.persist.journal import PutOp, TouchOp
from maclaw_fast.records import RecallHit
from maclaw_fast.text.dates import may_name_time, query_time
from maclaw_fast.text.tokenizer import tokenize
from maclaw_fast.threads import batch_threads, pool
from maclaw_kernels.recall import Block, Out, recall_block
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
    if store.query_cache is None or not queries:
        return None
    keep = [i for i, q in enumerate(queries) if q.strip()]
    if len(keep) == len(queries):
        return store.query_cache.get_many(queries)
    out = np.zeros((len(queries), store.dim), np.float32)
    if keep:
        out[keep] = store.query_cache.get_many([queries[i] for i in keep])
    return out


def _query_vector(store, query: str, given) -> np.ndarray | None:
    """One unit query vector as a block of one (1, dim), or None."""
    if given is None and (store.query_cache is None or not query.strip()):
        return None
    # the usual case: already of unit length, used as given (tested as a Python float: NumPy
    # scalar arithmetic cost more than the dot itself)
    if store.dim and plain_vector(given, store.dim) and abs(float(given.dot(given)) - 1.0) < 1e-6:
        return given[None]
    return _query_vectors(store, [query], given)[:1]


# ---------------------------------------------------------------------- the kernel's block
def _floors(store, queries: list[str]) -> np.ndarray:
    """Each query's (cosine floor, ``cos_spread`` × reach, BM25 weight, cosine weight) for the
    query's language (a Chinese or mixed query: ``cjk_bm25_weight``) when one differs from the
    plan's; no rows when none does (the plan's then hold)."""
    if store.embedder is None or all(map(str.isascii, queries)):
        return _NO_SCALES
    rows, differs = _language_rows(store.embedder, store.config.recall)
    if len(queries) == 1:  # one recall: its row as it is (read only), or none
        c = 0 if queries[0].isascii() else 2 if cjk_share(queries) >= CJK_SHARE else 1
        return rows[c:c + 1] if differs[c] else _NO_SCALES
    case = np.fromiter((0 if q.isascii() else 2 if cjk_share((q,)) >= CJK_SHARE else 1
                        for q in queries), np.int64, len(queries))
    return rows[case] if differs[case].any() else _NO_SCALES


def _language_rows(embedder, rc) -> tuple[np.ndarray, np.ndarray]:
    """The rows :func:`_floors` gives an ASCII query, another query with few Han characters
    and a Chinese or mixed one (they depend on the query through that alone: one Han share a
    query, not four lookups), and whether each differs from the plan's; kept for the last
    (embedder, config) pair."""
    made = _ROWS_MADE[0]
    if made is None or made[0] is not embedder or made[1] is not rc:
        own = (cosine_floor(embedder), rc.cos_spread, rc.bm25_weight, rc.cos_weight)
        zh = (rc.cjk_bm25_weight, rc.bm25_weight + rc.cos_weight - rc.cjk_bm25_weight) \
            if rc.cjk_bm25_weight > 0.0 else own[2:]
        rows = np.array([(cosine_floor(embedder, q), rc.cos_spread * cosine_reach(embedder, q))
                         + (zh if cjk_share((q,)) >= CJK_SHARE else own[2:])
                         for q in ("", "\u00e9", "\u4e2d")])  # ASCII, accented, Han
        made = _ROWS_MADE[0] = (embedder, rc, rows, (rows != own).any(axis=1))
    return made[2], made[3]


_ROWS_MADE: list = [None]  # (embedder, recall config, rows, differs) of _language_rows


def _times(store, queries: list[str], now: float) -> np.ndarray:
    """The time each query asks about (:func:`query_time`; NaN: none); no rows when no query
    names one or the time carries no weight."""
    if store.config.recall.time_weight <= 0.0:
        return _NO_FLOORS
    if len(queries) == 1:  # one recall: no array unless its query names a time
        if not may_name_time(queries[0]):  # most queries: out after the cheap test
            return _NO_FLOORS
        t = query_time(queries[0], now)
        return _NO_FLOORS if t != t else np.array([t])
    if not may_name_time("\n".join(queries)):  # a batch's queries tested in one scan
        return _NO_FLOORS
    when = np.array([query_time(q, now) for q in queries])
    return when if not np.isnan(when).all() else _NO_FLOORS


def _block(store, plan: RecallPlan, token_lists: list[list[str]], qvecs,
           floors: np.ndarray, when: np.ndarray) -> tuple:
    """A block of queries as the kernel reads them (lock held), as a plain tuple: every query's
    vocabulary ids, its vector, and for a large store its BM25 and cosines scored across
    threads first; ``floors``: :func:`_floors`; ``when``: :func:`_times`."""
    index = store.bm25
    get = index.vocab.getter()
    if len(token_lists) == 1:
        k = len(token_lists[0])
        ids = np.fromiter(map(get, token_lists[0], repeat(-1)), np.int64, k)
        indptr = _SPANS[k] if k < len(_SPANS) else np.array((0, k), np.int64)
    else:
        indptr = np.zeros(len(token_lists) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, token_lists), np.int64, len(token_lists)),
                  out=indptr[1:])
        ids = np.fromiter(map(get, chain.from_iterable(token_lists), repeat(-1)), np.int64,
                          int(indptr[-1]))
    has_vector = qvecs is not None
    vectors = qvecs if has_vector else _NO_VECTORS
    n = plan.n
    bm25, cos = _NO_BM25, _NO_COS
    if len(token_lists) == 1 and index.is_large:  # many postings: split across threads
        bm25 = index.scores(token_lists[0], n)[None]
    if len(token_lists) == 1 and has_vector and n * store.dim >= PARALLEL_ELEMENTS:
        cos = store.vectors.scores(vectors[0], n)[None]
    return (ids, indptr, vectors, has_vector, bm25, cos, floors, when)  # a Block


# ---------------------------------------------------------------------- one query
def recall(store, query, *, project=None, reinforce=True, query_vector=None, dynamic=False,
           category=None) -> list[RecallHit]:
    # plain arguments are checked inline; the validators see only the rest
    if type(query) is not str or not query.isascii():
        query = validate.query(query)
    if project is not None:
        project = validate.project(project)
    if type(reinforce) is not bool:
        reinforce = validate.flag(reinforce, "reinforce")
    reinforce = reinforce and not store.read_only  # a read-only store changes nothing
    if category is not None:
        category = validate.category(category)
    qvec = _query_vector(store, query, query_vector)  # embedding runs outside the lock
    tokens = tokenize(query)
    floors = _NO_SCALES if query.isascii() else _floors(store, [query])  # ASCII: the plan's
    with store.lock:
        store.check_open()
        now = float(store.clock())
        plan = recall_plan(store, dynamic, category)
        when = _times(store, [query], now)
        head, tail, has_affinity, work = plan.single_args(store, project)
        recall_block(*head, _block(store, plan, [tokens], qvec, floors, when), *tail, now)
        out = plan.out()
        named = speaker_order(store, [query], out.rows, out.parts, out.count)
        m = int(out.count[0])
        rows = out.rows[0, :m]
        hits = found = hits_from_parts(store, rows, out.parts[0, :, :m],
                                       has_affinity or when.shape[0] > 0 or named)
        fc = store.config.forgetting
        # an empty archive (the usual case) is settled before the NumPy read
        if fc.archive_search and len(store.archive) and out.best_cue[0] < fc.archive_below:
            scale = floors[0] if floors.shape[0] else plan.scales
            hits = with_archive(store, plan, work, tokens, None if qvec is None else qvec[0],
                                hits, rows, project, dynamic, category, now, scale,
                                named.get(0, ()))
        if reinforce and hits is not found and any(h.reason == "archived" for h in hits):
            hits = _reinforce_hits(store, hits, now)
        elif reinforce and m:
            _reinforce(store, rows.copy(), now)
        return hits


_NO_VECTORS = np.zeros((1, 0), np.float32)
_SPANS = [np.array((0, k), np.int64) for k in range(64)]  # a query's term span (kernel reads)
_NO_BM25, _NO_COS = np.zeros((0, 0)), np.zeros((0, 0), np.float32)
_NO_FLOORS, _NO_SCALES = np.zeros(0), np.zeros((0, 4))


# ---------------------------------------------------------------------- many queries
def _run_blocks(store, plan, scopes, scope_of, block: Block, out: Out, threads: int,
                now: float) -> None:
    """:func:`recall_block` over the queries in ``threads`` contiguous shares at once (the
    kernel releases the GIL); each share writes its own rows of ``out`` with its own scratch."""
    nq = scope_of.shape[0]
    shares = max(1, min(threads, nq // 8))
    corpus, static = plan.corpus(store), plan.static_args(store)
    cuts = [nq * b // shares for b in range(shares + 1)]

    def run(lo, hi, fresh):
        part = (block.term_ids, block.term_indptr[lo:hi + 1], block.vectors[lo:hi]
                if block.has_vector else block.vectors, block.has_vector, block.bm25, block.cos,
                block.cos_floor[lo:hi] if block.cos_floor.shape[0] else block.cos_floor,
                block.when[lo:hi] if block.when.shape[0] else block.when)
        recall_block(corpus, static[0], static[1], tuple(scopes), scope_of[lo:hi], static[2],
                     static[3], part, tuple(plan.base), tuple(plan.work(store, fresh=fresh)),
                     tuple(a[lo:hi] for a in out), now)

    if shares == 1:
        run(0, nq, False)
    else:
        run(0, 0, False)  # no query: brings the shared base scores to ``now`` before the threads
        list(pool().map(lambda b: run(cuts[b], cuts[b + 1], b > 0), range(shares)))


def recall_batch(store, queries, *, projects=None, reinforce=True, query_vectors=None,
                 as_arrow=False):
    if isinstance(queries, str) or not hasattr(queries, "__len__"):
        raise ValidationError("queries must be a list of strings")
    queries = [q if type(q) is str and q.isascii() else validate.query(q)  # plain: valid
               for q in queries]
    nq = len(queries)
    projects = validate.projects(projects, nq)
    reinforce = validate.flag(reinforce, "reinforce") and not store.read_only
    qvecs = _query_vectors(store, queries, query_vectors)
    token_lists = [tokenize(q) for q in queries]
    with store.lock:
        store.check_open()
        now = float(store.clock())
        plan = recall_plan(store)
        scopes, scope_of = plan.batch_scopes(store, projects)
        out = new_out(nq, plan.width)
        block = Block(*_block(store, plan, token_lists, qvecs, _floors(store, queries),
                              _times(store, queries, now)))
        n_threads = batch_threads(store.config.batch_threads) or (os.cpu_count() or 1)
        _run_blocks(store, plan, scopes, scope_of, block, out, n_threads, now)
        rows, parts, counts = out.rows, out.parts, out.count
        named = speaker_order(store, queries, rows, parts, counts)
        if as_arrow:
            result = arrow_hits(store, rows, parts, counts)
        else:
            result = batch_hits(store, rows, parts, counts, bool(scopes.affinity.any())
                                or block.when.shape[0] > 0 or named)
        # queries without a strong match consult the archive as recall() does
        fc = store.config.forgetting
        weak = out.best_cue < fc.archive_below
        if not fc.archive_search or len(store.archive) == 0:
            weak[:] = False
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
    store.apply_touch(row_list, 1, step, now)
    store.journal(TouchOp(store.table.ids_of(row_list), 1, step, now))
    reactivate(store, rows, now)


def reactivate(store, rows, now: float) -> list[str]:
    """Make the dormant entries among ``rows`` (just returned by a reinforcing recall) active:
    strength 1.0, ``updated_at = now``, journaled; returns their ids."""
    t = store.table
    rows = np.asarray(rows, np.int64)
    sleeping = rows[t.status[rows] == DORMANT]
    ops = []
    for r in sorted(set(sleeping.tolist())):
        entry = msgspec.structs.replace(store.entry_at(r), status="active", strength=1.0,
                                        updated_at=float(now))
        t.write(r, entry)
        ops.append(PutOp(entry, None, False))
    if ops:
        store.journal(*ops)
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
    with store.lock:
        store.check_writable()
        out = _reinforce_hits(store, hits, float(store.clock()))
        return sum(1 for h in out if h.entry.id in store.table.row_of)


def _reinforce_hits(store, hits: list[RecallHit], now: float) -> list[RecallHit]:
    """Reinforce the returned ``hits`` (lock held): the rows first, then the archived ones
    restored (restoring may evict, which moves rows); archived hits come back restored."""
    row_of = store.table.row_of
    rows = list(dict.fromkeys(row_of[h.entry.id] for h in hits if h.entry.id in row_of))
    if rows:
        _reinforce(store, np.array(rows, np.int64), now)
    archived = [h.entry.id for h in hits if h.entry.id not in row_of]
    restore_returned(store, archived, now)  # only those still in the archive
    return [msgspec.structs.replace(h, entry=store.entry_at(row_of[h.entry.id]))
            if h.entry.id in archived and h.entry.id in row_of else h for h in hits]


def summary(store, category: str, limit: int) -> str:
    """Active entries of ``category`` as ``compact_form or content`` joined with " | ", cut at
    ``limit`` characters + "…" (the prompt summaries)."""
    parts = [e.compact_form or e.content for e in store.list(category=category)
             if e.status == "active"]
    text = " | ".join(parts)
    return text if len(text) <= limit else text[:limit] + "…"
