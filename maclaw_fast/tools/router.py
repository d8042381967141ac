"""ToolRouter (design §12): pick ≤ 28 tools per message by hybrid retrieval, experience, priority
and keyword groups, with an optional LLM rerank.

Layout: every registered tool owns a *row*; per-row NumPy columns (priority, builtin, available,
deferred, core, group bits, usage id) sit beside a :class:`Bm25Index` and a
:class:`VectorColumn` keyed by the same rows. The registry's change callbacks keep them in step
incrementally; tool vectors are embedded lazily, in one batch, before the next route (all of it in
:mod:`maclaw_fast.tools.catalog`). Scoring, fusion and the fill are numba kernels shared by
``route`` and ``route_batch`` (same answers).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import DiskEmbeddingCache, QueryCache, resolve_embedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.index import Bm25Index, VectorColumn
from maclaw_fast.text import tokenize
from maclaw_fast.threads import batch_threads, in_ranges
from maclaw_fast.tools.assemble import gather, selected, tool_scores
from maclaw_fast.tools.catalog import CatalogMixin, new_columns
from maclaw_fast.tools.fusion import (clause_texts, foreign_query_scale, foreign_scaling,
                                      fusion_norm, max_clause_cosines, message_vectors,
                                      split_query_vector)
from maclaw_fast.tools.groups import GroupActivator, match_skills
from maclaw_fast.tools.intents import admit, clause_bests, message_rank
from maclaw_fast.tools.lookup import RetrievalMixin
from maclaw_fast.tools.registry import Platform, RegisteredTool, ToolRegistry
from maclaw_fast.tools.rerank import rerank_fill
from maclaw_fast.tools.routelog import RouteLog
from maclaw_fast.tools.types import (RouteBatch, RouteResult, RouteState, ToolScore,
                                     arrow_columns, results_columns)
from maclaw_kernels.routing import RouteKnobs, route_rows


class ToolRouter(CatalogMixin, RetrievalMixin):
    """Routes messages to tools.

    Parameters
    ----------
    registry : the tools; the router follows its changes.
    embedder : ``"auto"`` (default; also ``"default"``): the model that reads the catalog's
        language, decided from the text of the tools registered when the router is made
        (MiniLM for English, multilingual-e5-small for Chinese or mixed catalogs; see
        :attr:`embedder_choice`); a model name (``"minilm"``, ``"e5"``, ``"hash"``), None (BM25
        only) or an embedder object.
    usage : a :class:`UsageTracker` for the experience signal (None: no experience).
    reranker : an object with ``rerank(message, candidates, top_k)`` or such a callable.
    enrichment : an :class:`EnrichmentStore` whose queries extend each tool's BM25 text.
    config : budgets, weights, core tool names, group table.
    platform : host capabilities (default: detected).
    route_log : a path or :class:`RouteLog`; None logs nothing.
    recommender : object with ``get_recommendations() -> [{name, description}]`` (skill hint).
    cache_dir : folder for the tool-embedding disk cache (None: no disk cache).

    Examples
    --------
    >>> from maclaw_fast.tools import ToolRegistry, RegisteredTool
    >>> reg = ToolRegistry([RegisteredTool(name=f"t{i}", description=f"tool {i}") for i in range(3)])
    >>> ToolRouter(reg, embedder=None).route("anything").names
    ['t0', 't1', 't2']
    """

    def __init__(self, registry: ToolRegistry, *, embedder="auto", usage=None, reranker=None,
                 enrichment=None, config: RouterConfig = RouterConfig(),
                 platform: Platform | None = None, route_log=None, recommender=None,
                 cache_dir=None) -> None:
        if not isinstance(registry, ToolRegistry):
            raise ValidationError("registry must be a ToolRegistry")
        if config.max_tools < 1 or config.max_dynamic < 0:
            raise ValidationError("max_tools must be >= 1 and max_dynamic >= 0")
        if config.cos_norm not in ("minmax", "raw"):
            raise ValidationError(f"cos_norm must be 'minmax' or 'raw', not {config.cos_norm!r}")
        if not (config.bm25_weight >= 0 and config.cos_weight >= 0
                and config.bm25_weight + config.cos_weight > 0):
            raise ValidationError("bm25_weight and cos_weight must be >= 0, not both 0")
        self.registry, self.config = registry, config
        self.embedder, self.embedder_choice = _choose_embedder(embedder, registry.list())
        self.usage, self.reranker, self.enrichment = usage, reranker, enrichment
        self.platform, self.recommender = platform or Platform.detect(), recommender
        self.route_log = RouteLog(route_log, config.route_log_max_bytes) if isinstance(
            route_log, (str, Path)) else route_log
        self.groups = GroupActivator(config.group_keywords + config.extra_group_keywords)
        self._group_bit = {t: 1 << i for i, t in enumerate(self.groups.tags[:63])}
        self._core_names = set(config.core_tools)
        self._lock = threading.RLock()
        self.bm25 = Bm25Index()
        self.vectors = VectorColumn(self.embedder.dim) if self.embedder else None
        self.query_cache = (QueryCache(self.embedder, config.query_cache_size,
                                       config.query_cache_ttl_s) if self.embedder else None)
        self.disk_cache = None
        if self.embedder and cache_dir is not None and config.embedding_disk_cache:
            self.disk_cache = DiskEmbeddingCache(Path(cache_dir) / "tool_embeddings.arrow",
                                                 self.embedder, config.embedding_cache_size)
        self._save_timer: threading.Timer | None = None
        self._rows: dict[str, int] = {}
        self._names: list[str | None] = []
        self._tools: list[RegisteredTool | None] = []
        self._free: list[int] = []  # rows of unregistered tools, reused first
        self._cols = new_columns()
        self._pending_vec: set[int] = set()
        self._sessions: dict[str, set[str]] = {}
        self._version, self.n_rows, self._uid_key = 0, 0, (-1, -1)
        self._tie: tuple[int, np.ndarray] = (-1, np.zeros(0, np.int64))
        self._states: dict[str | None, tuple[int, RouteState]] = {}
        registry.on_change(self._on_change)
        if enrichment is not None:
            enrichment.on_change(self._on_enrichment)
        self._index_tools(registry.list())

    def _query_vectors(self, messages, query_vectors, clause_vectors=None, checked=False,
                       split=None):
        if self.vectors is None:
            return None, None
        return message_vectors(messages, query_vectors, clause_vectors, self.query_cache,
                               self.vectors.dim, self.config, checked, split)

    def _weights(self):
        c = self.config
        if self.usage is not None and len(self.usage) > 0:
            return c.retrieval_weight, c.experience_weight, c.priority_weight
        return c.retrieval_weight_no_usage, 0.0, c.priority_weight

    def _group_mask(self, tags, cand, out):
        act = 0
        for t in tags:
            act |= self._group_bit.get(t, 0)
        if act:
            np.not_equal(self._cols["gbits"][: cand.shape[0]] & act, 0, out=out)
            out &= cand

    def _hint(self, tokens: list[str]) -> list[str]:
        if self.recommender is None or not tokens:
            return []
        return match_skills(tokens, self.recommender.get_recommendations() or ())

    def prepare(self) -> None:
        """Embed the tools not embedded yet now (loading the model), rather than in the next
        :meth:`route`; a chat calls it before its first prompt."""
        with self._lock:
            if self.vectors is not None:
                self._sync()

    # ------------------------------------------------------------------ routing
    def route(self, message: str, *, session: str | None = None,
              query_vector: np.ndarray | None = None) -> RouteResult:
        """Choose the tools for ``message`` (design §12 steps 1-9).

        ``query_vector`` skips embedding the message (it must come from the same embedder):
        the message's vector ``(dim,)``, or ``(m + 1, dim)``: it followed by the vectors of its
        ``m`` sentence clauses (``RouterConfig.query_clauses``; given a single vector, the
        router embeds the clauses itself).

        Examples
        --------
        >>> r = router.route("我要查询数据库")           # doctest: +SKIP
        >>> "query_database" in r.names, r.groups[:2]   # doctest: +SKIP
        (True, ('database', 'sql'))
        """
        if not isinstance(message, str):
            raise ValidationError("message must be a string")
        qv = cv = None
        if query_vector is not None and self.vectors is not None:
            qv, cv = split_query_vector(query_vector, self.vectors.dim)
        return self._route([message], session, qv, single=True, clause_vectors=cv,
                           checked=True)[0]

    def route_batch(self, messages: list[str], *, session: str | None = None,
                    query_vectors: np.ndarray | None = None) -> list[RouteResult]:
        """:meth:`route` for many messages with batched kernels (same result per message)."""
        if not isinstance(messages, (list, tuple)) or not all(isinstance(m, str)
                                                              for m in messages):
            raise ValidationError("messages must be a list of strings")
        if not messages:
            return []
        return self._route(list(messages), session, query_vectors, single=False)

    def route_batch_arrow(self, messages: list[str], *, session: str | None = None,
                          query_vectors: np.ndarray | None = None):
        """:meth:`route_batch` as one Arrow table, a row per (message, tool): ``message``,
        ``rank`` and the :class:`ToolScore` fields. Without a reranker, recommender or route log
        it is assembled straight from the kernels' arrays (no per-tool Python objects)."""
        import pyarrow as pa

        if self.reranker is None and self.recommender is None and self.route_log is None:
            with self._lock:
                b = self._compute(list(messages), session, query_vectors, single=False)
                if b.st.total > self.config.max_tools:
                    return pa.table(arrow_columns(b, np.array(self._names, dtype=object),
                                                   self._cols["prio"]))
        return pa.table(results_columns(self.route_batch(messages, session=session,
                                                         query_vectors=query_vectors)))

    def _signals(self, tokens, qv, single, clauses=None):
        n, nq = self.n_rows, len(tokens)
        bm = self.bm25.scores(tokens[0], n)[None] if single else self.bm25.scores_batch(tokens, n)
        cos = np.zeros((nq, n), np.float32)
        clause_cos = None
        if qv is not None and self.vectors is not None and n:
            if single:
                self.vectors.scores(qv[0], n, out=cos[0])
            else:  # not BLAS: its rounding differs from the serial kernel and could flip ties
                self.vectors.scores_batch(qv, n, cos, batch_threads(self.config.batch_threads))
            if clauses is not None:
                clause_cos = max_clause_cosines(self.vectors, n, clauses[0], clauses[1], cos)
        exp = np.zeros((nq, 0))
        if self.usage is not None and len(self.usage) > 0:
            exp = (self.usage.experience_all(tokens[0])[None] if single
                   else self.usage.experience_batch(tokens))
        # float64 like every other score the kernels take: one compiled version each
        return bm, cos.astype(np.float64), exp, clause_cos

    def _compute(self, messages, session, query_vectors, single, clause_vectors=None,
                 checked=False) -> RouteBatch:
        """Signals, fusion, scores and the fill for every message (caller holds the lock)."""
        cfg = self.config
        self._sync()
        b = RouteBatch()
        b.st = st = self._state(session)
        if st.total <= cfg.max_tools:
            return b
        b.tokens = [tokenize(m) for m in messages]
        split = clause_texts(messages, cfg)  # the clauses: their vectors and the budget
        qv, clauses = self._query_vectors(messages, query_vectors, clause_vectors, checked, split)
        b.bm, b.cos, exp, clause_cos = self._signals(b.tokens, qv, single, clauses)
        nq, n = b.bm.shape
        b.tags = [self.groups.activate(m, t) for m, t in zip(messages, b.tokens)]
        b.group = np.zeros((nq, n), np.bool_)
        for q in range(nq):
            self._group_mask(b.tags[q], st.cand, b.group[q])
        w_ret, w_exp, w_prio = self._weights()
        b.out_idx = np.zeros((nq, max(st.slots, 1)), np.int64)
        # the kernels write every row of these: no zeroing (memset of nq × n) needed
        b.hit = np.empty((nq, n), np.bool_)
        b.ret, b.exp, b.score = np.empty((nq, n)), np.empty((nq, n)), np.empty((nq, n))
        # a message's cosine weight differs from the config's only for an embedder that cannot
        # read the message's language (checked per message only then)
        w_cos = (cfg.cos_weight * foreign_query_scale(messages, self.embedder, cfg)
                 if foreign_scaling(self.embedder, cfg) else None)
        catalog = (st.uid, st.prio, st.cand, st.tie, st.nonbuiltin)  # a Catalog
        knobs = RouteKnobs(*map(float, (cfg.vector_candidates_factor * cfg.max_tools,
                                        cfg.bm25_weight, fusion_norm(cfg), w_ret, w_exp, w_prio,
                                        st.slots, st.nb_slots)))
        # plain tuples into the kernel: a namedtuple argument costs µs of typing a call
        out = (b.out_idx, b.hit, b.ret, b.exp, b.score)  # a RouteOut
        b.out_n, b.out_cand = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
        w = (np.array((cfg.cos_weight,) * nq) if w_cos is None  # (np.full costs more at nq 1)
             else np.asarray(w_cos, np.float64))
        flat = tuple(knobs)
        if single:
            route_rows(b.bm, b.cos, exp, b.group, w, catalog, flat, out, b.out_n, b.out_cand,
                       0, 1)
        else:
            in_ranges(nq, lambda lo, hi: route_rows(b.bm, b.cos, exp, b.group, w, catalog, flat,
                                                    out, b.out_n, b.out_cand, lo, hi),
                      batch_threads(cfg.batch_threads))
        if cfg.clause_budget:
            texts, owner = split
            if texts:
                self._clause_budget(b, texts, owner, clause_cos, w_cos, knobs)
        return b

    def _clause_budget(self, b, texts, owner, clause_cos, w_cos, knobs) -> None:
        """Give each clause's best tool a place among the rows the kernel chose (tools/intents)."""
        cfg, st = self.config, b.st
        if clause_cos is not None and clause_cos.shape[0] != len(texts):
            clause_cos = None  # a caller's clause vectors that are not these clauses: BM25 alone
        w = np.full(len(b.tokens), cfg.cos_weight) if w_cos is None else np.asarray(w_cos)
        bests = clause_bests(self.bm25, texts, clause_cos, b.bm.shape[1], st.cand, st.tie,
                             int(knobs.n_vec), cfg.bm25_weight, w[owner], int(knobs.norm))
        for q in np.unique(owner).tolist():
            m = int(b.out_n[q])
            sel = b.out_idx[q, :m].tolist()
            # most often every clause's best is in already (the budget is larger than k)
            rows = [r for r, o in zip(bests, owner.tolist()) if o == q and r >= 0]
            if set(rows) <= set(sel):
                continue
            rows = [r for r in rows
                    if 0 <= message_rank(b.ret[q], b.hit[q], st.tie, r) < cfg.clause_within]
            key = b.score[q] + np.where(b.group[q], 4.0, np.where(b.hit[q], 2.0, 0.0))
            b.out_idx[q, :m] = admit(sel, rows, key, st.tie, st.nonbuiltin, st.nb_slots)

    def _route(self, messages, session, query_vectors, single, clause_vectors=None,
               checked=False) -> list[RouteResult]:
        cfg = self.config
        with self._lock:
            b = self._compute(messages, session, query_vectors, single, clause_vectors, checked)
            st = b.st
            if st.total <= cfg.max_tools:  # step 1: the whole catalog fits
                results = [RouteResult(tools=list(st.all), total=st.total,
                                       n_core=len(st.core_list)) for _ in messages]
                if self.route_log is not None:  # nothing scored, but the decision is logged
                    self.route_log.write_whole(messages, results, st.n_cand,
                                               body_aware=self.vectors is not None)
                return results
            results = []
            prio, names = self._cols["prio"], self._names
            sel_rows, cols, starts = selected(b, prio)
            for q in range(len(messages)):
                lo, hi = starts[q], starts[q + 1]
                tools = list(st.core_list)
                if self.reranker is not None and b.out_cand[q] > st.slots:
                    rows, reranked = self._rerank(messages[q], st, b.group[q], b.hit[q],
                                                  b.score[q], sel_rows[lo:hi])
                    tools += tool_scores(names, rows, gather(b, prio, np.full(len(rows), q),
                                                             np.array(rows, np.int64)),
                                         0, len(rows), set(reranked))
                else:
                    reranked = []
                    tools += tool_scores(names, sel_rows, cols, lo, hi)
                skills = self._hint(b.tokens[q])
                if skills:
                    tools.append(ToolScore(name=cfg.hint_tool_name, reason="hint"))
                res = RouteResult(tools=tools, groups=b.tags[q], total=st.total,
                                  n_core=len(st.core_list), n_candidates=st.n_cand,
                                  hybrid=self.vectors is not None, reranked=tuple(reranked),
                                  hint=", ".join(skills))
                results.append(res)
                if self.route_log is not None:
                    self._log(messages[q], res, q, b.hit, b.ret, st.cand)
            return results

    def _rerank(self, message, st, group, hit, score, rows):
        rows_all = np.flatnonzero(st.cand)
        tier = np.where(group[rows_all], 2, np.where(hit[rows_all], 1, 0))
        order = rows_all[np.lexsort((st.tie[rows_all], -score[rows_all], -tier))].tolist()
        top = [r for r in order[: self.config.rerank_top] if group[r] or hit[r]]
        payload = [{"name": self._names[r], "description": self._tools[r].description,
                    "body_summary": self._tools[r].body_summary} for r in top]
        return rerank_fill(self.reranker, message, payload, top, order, rows,
                           self._cols["nonbuiltin"], st.slots, st.nb_slots, self.config.rerank_max)

    def _log(self, message, res, q, hit, ret, cand) -> None:
        rows = np.flatnonzero(hit[q] & cand)
        rows = rows[np.lexsort((self._ties()[rows], -ret[q, rows]))][:20]
        self.route_log.write(message, total=res.total, core=res.n_core,
                             candidates=res.n_candidates, hybrid=res.hybrid,
                             body_aware=self.vectors is not None,
                             top=[(self._names[r], float(ret[q, r])) for r in rows],
                             selected=res.names, reranked=list(res.reranked))


def _choose_embedder(embedder, tools) -> tuple:
    """The router's embedder and a line saying how it was chosen (``tools stats``)."""
    from maclaw_fast.embedding.auto import choose_model, cjk_share, tool_text
    from maclaw_fast.embedding.base import is_auto

    if is_auto(embedder):
        texts = [tool_text(t) for t in tools]
        share = cjk_share(texts)
        emb = resolve_embedder(embedder, texts=texts)
        why = (f"auto: {choose_model(texts)} for a catalog of {len(texts)} tools whose text is "
               f"{share:.0%} Han characters")
        return emb, why
    emb = resolve_embedder(embedder)
    if emb is None:
        return None, "none: BM25 only"
    return emb, (f"given: {embedder}" if isinstance(embedder, str) else "given: an embedder object")
