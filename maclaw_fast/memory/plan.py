"""The recall plan: what a recall needs of a store that changes only when the store does.

One :class:`RecallPlan` per (table version, dynamic view, category filter) holds the kernels'
records (:data:`maclaw_kernels.recall.Rows`, :data:`~maclaw_kernels.recall.Knobs`, a
:data:`~maclaw_kernels.recall.Scope` per project), the conversation threads of the thread prior
and the buffers a recall writes into. This module is the one place those records are built.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.errors import ValidationError
from maclaw_fast.memory.columns import CATEGORY_CODE, SELF_IDENTITY, STATUS_CODE, USER_FACT
from maclaw_fast.memory.thread_prior import ThreadPlan, empty_postings
from maclaw_kernels.bm25 import length_terms
from maclaw_kernels.recall import N_PARTS, Base, Knobs, Out, Rows, Scales, Scope, Threads, Work

NORM_MODES = {"raw": 0, "max": 1, "minmax": 2}
COS_MODES = {"raw": 0, "minmax": 1, "floor": 2, "spread": 3, "floor_best": 4}
# ln(1 + a) for the small access counts, read by the kernels instead of a log per row
# queries whose cosines are computed together: each vector row read once per tile, not per query
COS_TILE = 16
LOG_ACCESS = np.log1p(np.arange(64, dtype=np.float64))
_NO_ROWS, _NO_MASK, _NO_FLOATS = np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0)
_NO_POSTINGS = tuple(empty_postings())[:-1]  # the thread prior's when it does not apply
_ONE = np.zeros(1, np.int64)  # a single query's scope row


def new_out(queries: int, width: int) -> Out:
    """Output arrays for a block of ``queries`` (unused row slots -1)."""
    return Out(np.full((queries, width), -1, np.int64), np.zeros((queries, N_PARTS, width)),
               np.zeros(queries, np.int64), np.zeros(queries))


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` itself when writable (one compiled kernel for every store), else a copy."""
    return a if a.flags.writeable else a.copy()


def cosine_floor_of(store) -> float:
    from maclaw_fast.embedding.base import cosine_floor

    return float(cosine_floor(store.embedder))


class RecallPlan:
    """The records and buffers of recalls on one snapshot of a store (see the module doc)."""

    def __init__(self, store, dynamic: bool, category: str | None) -> None:
        t, g = store.table, store.graph
        rc, fc = store.config.recall, store.config.forgetting
        if rc.bm25_norm not in NORM_MODES:
            raise ValidationError(f"bm25_norm must be one of {sorted(NORM_MODES)}")
        if rc.cos_norm not in COS_MODES:
            raise ValidationError(f"cos_norm must be one of {sorted(COS_MODES)}")
        self.version, self.config = t.version, store.config  # what this plan was made for
        self.dynamic, self.category = dynamic, category
        self.n = n = t.n_rows
        cat = t.category[:n]
        in_view = t.alive[:n].copy()
        if category is not None:
            in_view &= cat == CATEGORY_CODE[category]
        active = in_view & (t.status[:n] == 0)
        self.is_global = t.scope[:n] == 0
        self.active = active
        # the dormant rows a query may revive: those of the view (no user facts in the
        # dynamic view, as recall_dynamic returns none)
        dormant = in_view & (t.status[:n] == STATUS_CODE["dormant"])
        if dynamic:
            dormant &= cat != USER_FACT
        self.dormant = dormant if fc.revive else None
        # design R4: at most max_identity self-identity entries lead (picked per call: access
        # counts change in place); user facts lead only when among the query's results
        fixed = np.flatnonzero(active & (cat == SELF_IDENTITY))
        self.fixed = np.ascontiguousarray(fixed[np.argsort(t.seq[fixed], kind="stable")],
                                          dtype=np.int64)
        self.user_facts = np.flatnonzero(active & (cat == USER_FACT)).astype(np.int64)
        self.max_entries = rc.dynamic_max_entries if dynamic else rc.max_entries
        self.budget = rc.dynamic_token_budget if dynamic else rc.token_budget
        max_identity = max(int(rc.max_identity), 0)
        self.width = self.max_entries + min(max_identity, self.fixed.shape[0])
        self.rows = Rows(*(_writable(a) for a in (
            t.updated_at[:n], t.weight[:n], t.access[:n], t.seq[:n], t.tokens[:n], g.nbr[:n],
            g.weight[:n], g.prev[:n], g.next[:n])),
            np.full(2, np.nan), np.full(n, np.nan), np.zeros(n), LOG_ACCESS,
            _writable(t.created_at[:n]))
        # a store without an embedder has no cosine: BM25 carries both weights, so relevance
        # keeps its range against recency and importance
        bm25_w, cos_w = ((rc.bm25_weight, rc.cos_weight) if store.dim
                         else (rc.bm25_weight + rc.cos_weight, 0.0))
        self.knobs = Knobs(*map(float, (
            rc.recency_decay_per_hour, rc.weight_recency, rc.weight_importance,
            rc.weight_relevance, NORM_MODES[rc.bm25_norm], COS_MODES[rc.cos_norm],
            rc.graph_seeds, rc.graph_hops, rc.graph_hop_factor, rc.adjacency_hops,
            rc.adjacency_factor, rc.adjacency_mix, max_identity,
            0 if dynamic else max(int(rc.max_user_facts), 0), max(int(rc.user_fact_window), 0),
            self.max_entries, self.budget, fc.revive_min_cue, fc.revive_needs_term,
            rc.time_weight, rc.time_scale_days * 86400.0)))
        self.scales = Scales(*map(float, (cosine_floor_of(store), rc.cos_spread, bm25_w, cos_w)))
        self._scopes: dict[str | None, tuple[Scope, bool]] = {}
        self._threads: Threads | bool = False  # made on first use
        self._static: tuple | None = None
        self._corpus: tuple = (None, None, None)  # (postings, matrix, Corpus) made from them
        self._single: dict[str | None, tuple] = {}  # single_args per project
        # every row's recency, importance and base score at the last recall's ``now``
        self.base = Base(np.empty((3, n)), np.full(1, np.nan))
        self._work: Work | None = None  # a single recall's scratch and outputs, made on
        self._out: Out | None = None  # first use (written under the store lock)

    def scope(self, store, project: str | None) -> tuple[Scope, bool]:
        """The :data:`Scope` of one project (project-scoped entries need its tag) as masks of
        one row, and whether any row has an affinity in it."""
        cached = self._scopes.get(project)
        if cached is None:
            n = self.n
            affinity = np.zeros(n)
            eligible = self.active
            dormant = self.dormant
            if project:
                tagged = np.zeros(n, np.bool_)
                tagged[[r for r in store.table.rows_with_tag(project) if r < n]] = True
                affinity[tagged] = store.config.recall.project_affinity
                in_scope = self.is_global | tagged
                eligible = eligible & in_scope
                if dormant is not None:
                    dormant = dormant & in_scope
            if dormant is None or not dormant.any():
                dormant = np.zeros((1, 0), np.bool_)
            scope = Scope(eligible[None], affinity[None], dormant.reshape(1, -1), self.fixed,
                          self.user_facts)
            cached = self._scopes[project] = (scope, bool(affinity.any()))
        return cached

    def batch_scopes(self, store, projects: list) -> tuple[Scope, np.ndarray]:
        """One :data:`Scope` whose masks hold a row per distinct project of ``projects``
        (``dormant`` with no columns when none may revive), and each query's row."""
        uniq = {p: i for i, p in enumerate(dict.fromkeys(projects))} or {None: 0}
        scopes = [self.scope(store, p)[0] for p in uniq]
        if len(scopes) == 1:
            return scopes[0], np.zeros(len(projects), np.int64)
        revives = any(s.dormant.shape[1] for s in scopes)
        dormant = (np.concatenate([s.dormant if s.dormant.shape[1]
                                   else np.zeros((1, self.n), np.bool_) for s in scopes])
                   if revives else np.zeros((len(scopes), 0), np.bool_))
        stacked = Scope(*(np.concatenate([getattr(s, f) for s in scopes])
                          for f in ("eligible", "affinity")), dormant, self.fixed,
                        self.user_facts)
        return stacked, np.array([uniq[p] for p in projects], dtype=np.int64)

    def threads(self, store) -> Threads:
        """The conversation threads when the thread prior applies (a weight above 0 and at
        least two conversations of two or more rows); ``n_threads`` 0 when it does not."""
        if self._threads is False:
            rc = store.config.recall
            plan = None
            if rc.thread_bm25_weight > 0.0 or rc.thread_cos_weight > 0.0:
                plan = ThreadPlan(store, self.n, self.category)
                if plan.n_conversations < 2:
                    plan = None
            if plan is None:
                self._threads = Threads(_NO_POSTINGS, _NO_ROWS, _NO_MASK, _NO_FLOATS, 0.0, 0.0,
                                        0.0)
            else:
                self._threads = Threads(tuple(plan.postings)[:-1], plan.thread_of, plan.member,
                                        plan.vnorm, float(plan.n_threads),
                                        float(rc.thread_bm25_weight),
                                        float(rc.thread_cos_weight))
        return self._threads

    def work(self, store, *, fresh: bool = False) -> Work:
        """Scratch for one thread's recalls (``fresh``: a new one, for a batch's extra
        threads; otherwise the plan's own, used under the store lock, made anew when the
        vocabulary outgrew it)."""
        if (self._work is None or fresh
                or self._work.term_weight.shape[0] < len(store.bm25.vocab)):
            n = self.n
            tile = max(1, min(COS_TILE, (1 << 22) // max(n, 1)))  # at most 16 MiB of cosines
            work = Work(np.zeros(n), np.zeros((tile, n), np.float32), np.empty((7, n)),
                        np.zeros(max(len(store.bm25.vocab), 1)))
            if fresh:
                return work
            self._work = work
        return self._work

    def static_args(self, store) -> tuple:
        """The kernel's threads, rows, knobs and scales records as plain tuples (see
        :func:`maclaw_kernels.recall.recall_block`), made once per plan."""
        if self._static is None:
            self._static = (tuple(self.threads(store)), tuple(self.rows), tuple(self.knobs),
                            tuple(self.scales))
        return self._static

    def corpus(self, store) -> tuple:
        """The store's indexes as the kernel reads them (a plain :data:`Corpus` tuple), with
        every BM25 document's length term (none for a large index: a single recall scores it
        across threads first); made again when the index hands out new arrays."""
        postings, matrix = store.bm25.query_postings(), store.vectors.matrix
        made_of, made_with, corpus = self._corpus
        if made_of is not postings or made_with is not matrix:
            corpus = (tuple(postings)[:-1], matrix, store.vectors.has_vec,
                      _NO_FLOATS if store.bm25.is_large else length_terms(postings))
            self._corpus = (postings, matrix, corpus)
        return corpus

    def single_args(self, store, project: str | None) -> tuple[tuple, tuple, bool, Work]:
        """One recall's arguments of :func:`maclaw_kernels.recall.recall_block` as plain tuples:
        those before the query's block (corpus, threads, rows, the scope of ``project``, its
        row, knobs, scales) and those after it but ``now`` (base, work, out), whether any row
        has an affinity in ``project``, and the scratch the call writes; made again only when
        the index or the scratch changed."""
        postings, matrix, work = store.bm25.query_postings(), store.vectors.matrix, \
            self.work(store)
        cached = self._single.get(project)
        if cached is None or cached[0] is not postings or cached[1] is not matrix \
                or cached[2] is not work:
            threads, rows, knobs, scales = self.static_args(store)
            scope, has_affinity = self.scope(store, project)
            cached = self._single[project] = (
                postings, matrix, work,
                (self.corpus(store), threads, rows, tuple(scope), _ONE, knobs, scales),
                (tuple(self.base), tuple(work), tuple(self.out())), has_affinity, work)
        return cached[3:]

    def out(self) -> Out:
        """A single recall's outputs (a block of one query)."""
        if self._out is None:
            self._out = new_out(1, self.width)
        return self._out

    def nbytes(self) -> int:
        """Bytes of the buffers and masks this plan holds (what ``trim`` releases)."""
        total = self.base.values.nbytes + sum(a.nbytes for a in self.rows[9:12])
        if self._work is not None:
            total += sum(a.nbytes for a in self._work)
        if self._corpus[2] is not None:
            total += self._corpus[2][3].nbytes  # the BM25 documents' length terms
        for scope, _ in self._scopes.values():
            total += scope.eligible.nbytes + scope.affinity.nbytes + scope.dormant.nbytes
        return total


def recall_plan(store, dynamic: bool = False, category: str | None = None) -> RecallPlan:
    """The store's cached plan for this view (made anew once the table or config changed)."""
    cache = store.plans
    key = (store.table.version, id(store.config))
    if cache.get("version") != key:
        cache.clear()
        cache["version"] = key
    plan = cache.get((dynamic, category))
    if plan is None:
        plan = cache[(dynamic, category)] = RecallPlan(store, dynamic, category)
    return plan
