"""Recall (SPEC §6): validate and convert to contiguous columns → numba kernels → typed hits."""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.embedding import check_vectors
from maclaw_fast.embedding.base import cosine_floor, plain_vector
from maclaw_fast.errors import ValidationError
from maclaw_fast.index.vectors import BOUND_SLACK, PARALLEL_ELEMENTS
from maclaw_fast.memory import validate
from maclaw_fast.memory.archive_search import (batch_with_archive, restore_returned,
                                              weak_queries, with_archive)
from maclaw_fast.memory.columns import CATEGORY_CODE, SELF_IDENTITY, USER_FACT
from maclaw_fast.memory.hits import REASONS, arrow_hits, batch_hits, hits_from_parts
from maclaw_fast.memory.revival import dormant_mask, reactivate, revive_single
from maclaw_fast.memory.thread_prior import query_prior, recall_threaded, thread_plan
from maclaw_fast.persist.journal import TouchOp
from maclaw_fast.records import RecallHit
from maclaw_fast.text.tokenizer import tokenize
from maclaw_fast.threads import batch_threads, blas_threads, numba_threads
from maclaw_kernels.recall import base_scores, recall_batch as recall_batch_kernel
from maclaw_kernels.recall import VIEWED_ARGS, recall_query, recall_single, recall_viewed
from maclaw_kernels.recall_large import recall_large
from maclaw_kernels.views import view_table

NORM_MODES = {"raw": 0, "max": 1, "minmax": 2}
COS_MODES = {"raw": 0, "minmax": 1}
_NO_VECTOR = np.zeros(0, np.float32)  # the query vector of a query without one
_NO_DORMANT = np.zeros(0, np.bool_)  # the fused kernel's dormant mask with revival off
_NO_PRIOR = np.zeros((0, 0))  # the batch kernel's thread prior when it does not apply
# rows per block of the large-store pass, a multiple of 4 (the dot kernel's step); measured at
# 100k × 384: 1,024 and 2,048 equal, 512 and 4,096 slower (block overhead, cache misses)
LARGE_BLOCK = 2048
# the most score-matrix elements a batch chunk holds (two buffers: ~24 MB at this size)
BATCH_CHUNK_ELEMENTS = 2_000_000
# calls of one plan on the array path before its address table is made (_FusedArgs.joined)
TABLE_AFTER_CALLS = 6
# ln(1 + a) for the small access counts, read by the kernels instead of a log per row
LOG_ACCESS = np.log1p(np.arange(64, dtype=np.float64))


class _Static:
    """Masks and row lists that change only when the store does (cached by table version)."""

    def __init__(self, store, dynamic: bool, category: str | None) -> None:
        t = store._table
        rc = store.config.recall
        self.version, self.config = t.version, store.config  # what this object was made for
        self.dynamic, self.category = dynamic, category
        n = t.n_rows
        active = t.alive[:n] & (t.status[:n] == 0)
        cat = t.category[:n]
        if category is not None:
            active = active & (cat == CATEGORY_CODE[category])
        self.active = active
        self.is_global = t.scope[:n] == 0
        # SPEC R4: of the self-identity entries at most max_identity lead (the kernel picks
        # them per call: access counts change in place); user facts lead only when among the
        # query's results (none in recall_dynamic); every entry is also ranked on its score
        self.fixed = _store_order(t, np.flatnonzero(active & (cat == SELF_IDENTITY)))
        self.user_fact = np.ascontiguousarray(active & (cat == USER_FACT))
        self.rankable = active
        self.max_entries = rc.dynamic_max_entries if dynamic else rc.max_entries
        self.budget = rc.dynamic_token_budget if dynamic else rc.token_budget
        if rc.bm25_norm not in NORM_MODES:
            raise ValidationError(f"bm25_norm must be one of {sorted(NORM_MODES)}")
        if rc.cos_norm not in COS_MODES:
            raise ValidationError(f"cos_norm must be one of {sorted(COS_MODES)}")
        self.norm = NORM_MODES[rc.bm25_norm]
        max_identity = max(int(rc.max_identity), 0)
        max_user_facts = 0 if dynamic else max(int(rc.max_user_facts), 0)
        self.projects: dict[str | None, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        g = store._graph
        # views into the columns: touch/link change them in place, anything that reallocates
        # them also bumps the table version and so rebuilds this object (order: KERNEL_ARGS)
        # a store without an embedder has no cosine: BM25 carries both weights, so relevance
        # keeps its range (≤ 1 + affinity) against recency and importance
        bm25_w, cos_w = ((rc.bm25_weight, rc.cos_weight) if store.dim
                         else (rc.bm25_weight + rc.cos_weight, 0.0))
        self.kernel_args = (t.access[:n], t.seq[:n], t.tokens[:n], self.fixed, self.user_fact,
                            self.norm, COS_MODES[rc.cos_norm], bm25_w, cos_w,
                            rc.weight_relevance, rc.graph_seeds, g.nbr[:n], g.weight[:n],
                            rc.graph_hops, rc.graph_hop_factor, g.prev[:n], g.next[:n],
                            rc.adjacency_hops, rc.adjacency_factor, rc.adjacency_mix,
                            max_identity,
                            max_user_facts, max(int(rc.user_fact_window), 0), self.max_entries,
                            self.budget)
        self.n = n
        self.width = self.max_entries + min(max_identity, self.fixed.shape[0])
        self.recency_args = (t.updated_at[:n], t.weight[:n])
        # the kernels' recency memo (key, updated_at seen, factor per row): refreshed in
        # place by each recall, so recency is a multiply per row, not an exp
        memo = (np.full(2, np.nan), np.full(n, np.nan), np.zeros(n))
        self.recency_knobs = (rc.recency_decay_per_hour, rc.weight_recency, rc.weight_importance,
                              *memo, LOG_ACCESS)
        self.no_cos = np.zeros(n, np.float32)  # read only: the query has no vector
        # the single-query kernels' rows and parts (the hits are built from them before the
        # store lock is released), their scratch, and the BM25 and cosine of every row
        self.single = (np.empty(self.width, np.int64), np.empty((9, self.width)),
                       np.empty((7, n)), np.zeros(n), np.zeros(n, np.float32))
        # the fused kernel's idf_total of the last query (the scale of its cue strengths)
        self.idf_out = np.full(1, np.nan)
        self._scratch = None
        # batches run in chunks of queries whose (chunk, n) score buffers are kept and reused:
        # fresh multi-megabyte arrays cost a page fault per 4 KiB on every batch (measured
        # ~3,600 faults, ~9 ms, per 1,000 × 500 batch once another thread has allocated)
        self.batch_chunk = int(min(1024, max(16, BATCH_CHUNK_ELEMENTS // max(n, 1))))
        self._batch = None
        # per project: the fused kernel's arguments after the five that change per call
        self.fused_tails: dict[str | None, _FusedArgs] = {}
        self.threads = None  # the thread prior's ThreadPlan, made on first use

    def scratch(self) -> tuple[np.ndarray, ...]:
        """Per-row cosines, scores and score bounds for the large-store kernel, reused under
        the store lock."""
        if self._scratch is None:
            self._scratch = (np.empty(self.n, np.float32), np.empty(self.n), np.empty(self.n),
                             np.empty(self.n))
        return self._scratch

    def batch_buffers(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(BM25 float64, cosine float32) buffers of ``rows`` × n, reused under the store lock."""
        if self._batch is None:
            self._batch = (np.zeros((self.batch_chunk, self.n)),
                           np.zeros((self.batch_chunk, self.n), np.float32))
        return self._batch[0][:rows], self._batch[1][:rows]

    def scope_masks(self, store, project: str | None):
        """(eligible, affinity, scored, whether any affinity is not 0) for one project:
        project-scoped entries need the project's tag; ``scored`` = the eligible rows the
        ranking sees (every one: self-identity entries and user facts compete too)."""
        cached = self.projects.get(project)
        if cached is None:
            eligible, affinity = _scope_masks(self, store, project)
            cached = self.projects[project] = (eligible, affinity, eligible & self.rankable,
                                               bool(affinity.any()))
        return cached


def _scope_masks(static, store, project: str | None) -> tuple[np.ndarray, np.ndarray]:
    n = static.n
    affinity = np.zeros(n)
    if project is None or project == "":
        return static.active, affinity
    tagged = np.zeros(n, dtype=np.bool_)
    rows = [r for r in store._table.rows_with_tag(project) if r < n]
    tagged[rows] = True
    affinity[tagged] = store.config.recall.project_affinity
    return static.active & (static.is_global | tagged), affinity


def _static(store, dynamic: bool, category: str | None) -> _Static:
    cache = store._plan_cache
    static = cache.get((dynamic, category))
    if (static is not None and static.version == store._table.version
            and static.config is store.config):
        return static
    key = (store._table.version, id(store.config))
    if cache.get("version") != key:
        cache.clear()
        cache["version"] = key
    static = cache[(dynamic, category)] = _Static(store, dynamic, category)
    return static


class _Plan:
    """A snapshot's cached :class:`_Static` part plus every row's recency and importance now
    (the batch path)."""

    def __init__(self, store, *, dynamic: bool, category: str | None) -> None:
        static = self.static = _static(store, dynamic, category)
        n = static.n
        self.now = float(store.clock())
        self.recency = np.empty(n)
        self.importance = np.empty(n)
        self.base = np.empty(n)
        base_scores(*static.recency_args, static.kernel_args[0], self.now, *static.recency_knobs,
                    self.recency, self.importance, self.base)


def _store_order(t, rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows[np.argsort(t.seq[rows], kind="stable")], dtype=np.int64)


def _query_vectors(store, queries: list[str], given) -> np.ndarray | None:
    if given is not None:
        if not store.dim:
            raise ValidationError("this store has no embedder (BM25-only): query vectors unused")
        vecs = check_vectors(given, store.dim, what="query vector")
        if vecs.shape[0] != len(queries):
            raise ValidationError(f"{vecs.shape[0]} query vectors for {len(queries)} queries")
        return vecs
    if store._qcache is None or not queries:
        return None
    # like recall(): a blank query has no meaning to embed, so it scores cos 0
    blank = [i for i, q in enumerate(queries) if not q.strip()]
    if not blank:
        return store._qcache.get_many(queries)
    out = np.zeros((len(queries), store.dim), np.float32)
    keep = [i for i in range(len(queries)) if queries[i].strip()]
    if keep:
        out[keep] = store._qcache.get_many([queries[i] for i in keep])
    return out


def _query_vector(store, query: str, given) -> tuple[np.ndarray | None, bool]:
    """(the query's vector or None, whether its length is still to be checked). A vector given
    in the kernels' own form (:func:`plain_vector`) is passed on as it is: the fused kernel checks
    that it is finite and of unit length itself, saving a NumPy call per recall."""
    if given is None:
        if store._qcache is not None and query.strip():
            return store._qcache.get_many([query])[0], False  # embed outside the store lock
        return None, False
    if store.dim and plain_vector(given, store.dim):
        return given, True
    return _query_vectors(store, [query], given)[0], False


def _checked(store, qvec: np.ndarray) -> np.ndarray:
    """``qvec`` through :func:`check_vectors`: normalised, or a ValidationError."""
    return check_vectors(qvec, store.dim, what="query vector")[0]


def recall(store, query, *, project=None, reinforce=True, query_vector=None, dynamic=False,
           category=None) -> list[RecallHit]:
    # the usual argument types are checked inline; the validators (a call each, ~0.5 µs in
    # the loop together) see only the rest, and raise or accept as before
    if type(query) is not str:
        query = validate.query(query)
    if project is not None and type(project) is not str:
        project = validate.project(project)
    if type(reinforce) is not bool:
        reinforce = validate.flag(reinforce, "reinforce")
    if category is not None:
        category = validate.category(category)
    if query_vector is not None and store.dim and plain_vector(query_vector, store.dim):
        qvec, unchecked = query_vector, True  # the fused kernel checks its length itself
    else:
        qvec, unchecked = _query_vector(store, query, query_vector)
    # an ASCII query is split by the fused kernel itself when that kernel runs (the usual case)
    tokens = None if query.isascii() else tokenize(query)
    with store._lock:
        store._check_open()
        static = _static(store, dynamic, category)
        now = float(store.clock())
        fused = static.fused_tails.get(project)
        if fused is None or fused.tail[0] is not store._vectors.matrix:  # it moves as stores grow
            fused = static.fused_tails[project] = _FusedArgs(store, static, project)
        large = store._bm25.is_large or static.n * store.dim >= PARALLEL_ELEMENTS
        threads = thread_plan(store, static)
        prior = None
        ranked = False  # revival done with the ranking, every row's scores in static.single
        if threads is not None:  # the thread prior applies: scores first, then the ranking
            if unchecked:
                qvec, unchecked = _checked(store, qvec), False
            tokens = tokenize(query) if tokens is None else tokens
            m, prior = recall_threaded(store, static, threads, tokens, qvec, now, project,
                                       dynamic, category)
            ran_fused = False
            ranked = True
        elif large:
            m, ran_fused = _recall_other(store, static, query, tokens, qvec, unchecked, now,
                                         project, fused)
        else:
            m, ran_fused = _recall_fused(store, query, tokens, qvec, unchecked, now, fused), True
        # dormant entries the query cues strongly compete too (SPEC R9; memory/revival.py):
        # the fused kernel has ranked them already, the other paths rank again
        m, cues = revive_single(store, static, project, query, tokens, qvec, now, m,
                                float(static.idf_out[0]) if ran_fused else None, dynamic,
                                category, ranked)
        rows, parts = static.single[0], static.single[1]
        hits = hits_from_parts(store, rows[:m], parts[:, :m], fused.has_affinity)
        # the archive, when nothing here matches strongly (SPEC R9; memory/archive_search.py)
        out = with_archive(store, static, cues, hits, rows[:m], project, dynamic, category,
                           False, now, prior)
        if reinforce and out is not hits:  # merged: the limits may have cut some of rows[:m]
            out = _reinforce_hits(store, out, now)
        elif reinforce and m:
            _reinforce(store, rows[:m], now)
        return out


class _FusedArgs:
    """The fused kernel's arguments after the five that change per call, for one plan and
    project: the plan's part (``tail``, made once) after the BM25 index's arrays (joined again
    only when the index hands out new ones), and the same as an address table for
    :func:`recall_viewed` (None when an argument does not fit it, or not made yet). The joined
    tuple keeps every array the table points at alive."""

    __slots__ = ("_calls", "_index_args", "_joined", "_views", "has_affinity", "tail")

    def __init__(self, store, static, project) -> None:
        eligible, affinity, scored, self.has_affinity = static.scope_masks(store, project)
        vec = store._vectors
        rows, parts, work, bm25, cos = static.single
        # dormant entries the query may revive in the same pass (SPEC R9; memory/revival.py)
        fc = store.config.forgetting
        dormant = (dormant_mask(store, project, dynamic=static.dynamic,
                                category=static.category) if fc.revive else _NO_DORMANT)
        self.tail = (vec.matrix, vec.has_vec, *static.recency_args, *static.recency_knobs,
                     affinity, eligible, scored, *static.kernel_args, bm25, cos, work, rows, parts,
                     dormant, float(fc.revive_min_cue),
                     float(fc.revive_needs_term), cosine_floor(store.embedder), static.idf_out)
        self._index_args = self._joined = self._views = None
        self._calls = 0

    def joined(self, index_args: tuple) -> tuple[tuple, tuple | None]:
        """(the arguments as a tuple, as ``(views, knobs)`` or None). Rent or buy: the table
        costs ~25–50 µs to make and saves ~6–8 µs a call, and every ``save`` makes a new plan,
        so it is made only once :data:`TABLE_AFTER_CALLS` calls have run without it (an agent
        that saves between recalls never pays for it; a store read many times pays at most
        twice the best choice)."""
        if index_args is not self._index_args:
            self._index_args, self._joined = index_args, index_args + self.tail
            self._views, self._calls = None, 0
        self._calls += 1
        if self._calls == TABLE_AFTER_CALLS:
            self._views = view_table(self._joined, VIEWED_ARGS)
        return self._joined, self._views


def _recall_fused(store, query, tokens, qvec, unchecked, now, fused: _FusedArgs) -> int:
    """BM25, cosines and ranking in one kernel call (an ASCII query as text when ``tokens``
    is None); returns the count of selected rows."""
    if tokens is None and not store._bm25.vocab.term_words():
        tokens = tokenize(query)  # nothing learned yet (a fresh store): the kernel would ask
    text, term_ids, index_args = store._bm25.fused_query_args(query, tokens)
    args, views = fused.joined(index_args)
    while True:
        qv = _NO_VECTOR if qvec is None else qvec
        if views is not None:
            m = recall_viewed(text, term_ids, qv, unchecked, now, *views)
        else:
            m = recall_query(text, term_ids, qv, unchecked, now, *args)
        if m >= 0:
            return m
        if m == -2:  # a word the kernel's table lacks: the Python tokenizer's terms
            tokens = tokenize(query)
            text, term_ids, index_args = store._bm25.fused_query_args(query, tokens)
            args, views = fused.joined(index_args)
            continue
        # not finite or not of unit length: normalised, or a ValidationError
        qvec, unchecked = _checked(store, qvec), False


def _recall_other(store, static, query, tokens, qvec, unchecked, now, project,
                  fused: _FusedArgs) -> tuple[int, bool]:
    """The paths of a large store: int8 codes first for a large matrix, BM25 across threads
    for many postings; otherwise the fused kernel. Returns (the count of selected rows,
    whether the fused kernel ran)."""
    n = static.n
    vec, bm25_index = store._vectors, store._bm25
    parallel_dot = qvec is not None and n * store.dim >= PARALLEL_ELEMENTS
    if not parallel_dot and not bm25_index.is_large:
        return _recall_fused(store, query, tokens, qvec, unchecked, now, fused), True
    if unchecked:
        qvec = _checked(store, qvec)  # only the fused kernel checks it
    tokens = tokenize(query) if tokens is None else tokens
    eligible, affinity, scored, _ = static.scope_masks(store, project)
    rows, parts, work, bm25, cos = static.single
    if parallel_dot:
        vec.keep_codes()  # recall over a large store reads int8 codes first
        return recall_large(vec.matrix[:n], vec.codes[:n], vec.scale[:n], vec.err[:n],
                            BOUND_SLACK, vec.has_vec[:n], qvec, *static.recency_args, now,
                            *static.recency_knobs, bm25_index.scores(tokens, n), affinity,
                            eligible, scored, *static.kernel_args, LARGE_BLOCK,
                            *static.scratch(), rows, parts), False
    # a large BM25-only store (or one the dot product stays serial for): BM25 across threads
    cos = vec.scores(qvec, n, cos) if qvec is not None else static.no_cos
    return recall_single(*static.recency_args, now, *static.recency_knobs,
                         bm25_index.scores(tokens, n), cos, affinity, eligible, scored,
                         *static.kernel_args, work, rows, parts), False


def _reinforce(store, rows, now: float) -> None:
    step = store.config.forgetting.reinforce_step
    row_list = rows.tolist()
    store._apply_touch(row_list, 1, step, now)
    store._log(TouchOp(store._table.ids_of(row_list), 1, step, now))
    reactivate(store, rows, now)  # revived entries become active again (SPEC R9)


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
        plan = _Plan(store, dynamic=False, category=None)
        static = plan.static
        n = static.n
        # one mask row per distinct project; each query points at its row
        uniq = {p: i for i, p in enumerate(dict.fromkeys(projects))}
        masks = [static.scope_masks(store, p) for p in uniq] or [static.scope_masks(store, None)]
        scope_of = np.array([uniq[p] for p in projects], dtype=np.int64)
        eligible, affinity, scored = (np.stack([m[i] for m in masks]) for i in range(3))
        # dormant entries the queries may revive, ranked in the same kernel pass (SPEC R9)
        fc = store.config.forgetting
        dormant = (np.stack([dormant_mask(store, p) for p in uniq] or [dormant_mask(store, None)])
                   if fc.revive else np.zeros((eligible.shape[0], 0), np.bool_))
        revives = bool(dormant.any())
        threads = thread_plan(store, static)
        width = static.width
        rows = np.full((nq, width), -1, np.int64)
        parts = [np.zeros((nq, width)) for _ in range(5)]  # score, bm25, rel, graph, reason
        counts = np.zeros(nq, np.int64)
        cos_sel = np.zeros((nq, width), np.float32)  # each hit's cosine
        weak = np.zeros(nq, np.bool_)  # no strong match: the archive is consulted
        with numba_threads(batch_threads(store.config.batch_threads)), blas_threads(1):
            for lo in range(0, nq, static.batch_chunk):
                hi = min(nq, lo + static.batch_chunk)
                bm25_buf, cos_buf = static.batch_buffers(hi - lo)
                bm25 = store._bm25.scores_batch(token_lists[lo:hi], n, out=bm25_buf)
                if qvecs is not None:
                    cos = store._vectors.scores_batch(qvecs[lo:hi], n, out=cos_buf)
                else:
                    cos = cos_buf
                    cos.fill(0.0)
                idf = (store._bm25.idf_totals(token_lists[lo:hi]) if revives
                       else np.zeros(hi - lo))
                prior = _NO_PRIOR
                if threads is not None:  # the thread prior, query by query
                    prior = np.empty((hi - lo, n))
                    for q in range(lo, hi):
                        query_prior(store, threads, store._bm25.query_args(token_lists[q]),
                                    cos[q - lo], qvecs is not None, prior[q - lo])
                recall_batch_kernel(plan.base, bm25, cos, affinity, eligible, scored,
                                    scope_of[lo:hi], static.recency_args[0],
                                    *static.kernel_args, rows[lo:hi],
                                    *(p[lo:hi] for p in parts), counts[lo:hi], dormant, idf,
                                    qvecs is not None, fc.revive_needs_term,
                                    cosine_floor(store.embedder), float(fc.revive_min_cue),
                                    prior)
                weak_queries(store, bm25, cos, rows[lo:hi], counts[lo:hi], token_lists[lo:hi],
                             qvecs is not None, weak[lo:hi])
                if n:  # -1 marks an unused slot: any valid column will do there
                    cos_sel[lo:hi] = np.take_along_axis(cos, np.maximum(rows[lo:hi], 0), axis=1)
        if as_arrow:
            result = arrow_hits(store, plan, rows, parts, counts, cos_sel, affinity, scope_of)
        else:
            result = batch_hits(store, plan, rows, parts, counts, cos_sel, affinity, scope_of)
        # queries without a strong match consult the archive as recall() does (SPEC R9)
        result, sel, archived = batch_with_archive(
            store, result, weak, rows, counts,
            lambda q: recall(store, queries[q], project=projects[q], reinforce=False,
                             query_vector=None if qvecs is None else qvecs[q]),
            REASONS, as_arrow)
        if reinforce and sel.shape[0]:
            _reinforce(store, sel, plan.now)
        if reinforce and archived:
            restore_returned(store, archived, plan.now)
        return result


def summary(store, category: str, limit: int) -> str:
    """Active entries of ``category`` as ``compact_form or content`` joined with " | ", cut at
    ``limit`` characters + "…" (the prompt summaries of SPEC §6)."""
    parts = [e.compact_form or e.content for e in store.list(category=category)
             if e.status == "active"]
    text = " | ".join(parts)
    return text if len(text) <= limit else text[:limit] + "…"
