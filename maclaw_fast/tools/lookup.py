"""Retrieval-only lookups of :class:`~maclaw_fast.tools.router.ToolRouter` (design §12):
``retrieve`` (the hybrid ranking alone, used by the quality benchmark), ``search_deferred`` and
``discover``. A mixin over the router's own state (its lock, rows and columns), kept apart so the
router module holds the routing path only.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.errors import ValidationError
from maclaw_fast.text import tokenize
from maclaw_fast.tools.fusion import (clause_texts, foreign_query_scale, fusion_norm,
                                      split_query_vector)
from maclaw_fast.tools.intents import clause_bests, spread
from maclaw_fast.tools.types import ToolScore
from maclaw_kernels.routing import fuse_scores, topk_where


class RetrievalMixin:
    """``retrieve``, ``search_deferred``, ``discover`` and ``stats`` for :class:`ToolRouter`."""

    def stats(self) -> dict:
        """What the router holds and how it ranks: tool counts, tools without a description,
        the embedding model and how it was chosen, the fusion weights.

        Examples
        --------
        >>> router.stats()["embedder_choice"]                          # doctest: +SKIP
        'auto: e5 for a catalog of 941 tools whose text is 41% Han characters'
        """
        with self._lock:
            tools = [t for t in self._tools if t is not None]
            n = self.n_rows
            c = self._cols
            bare = [t.name for t in tools if not t.description.strip()]
            return {"tools": len(tools), "routable": int(c["routable"][:n].sum()),
                    "core": int(c["core"][:n].sum()), "deferred": int(c["deferred"][:n].sum()),
                    "without_description": len(bare), "without_description_names": bare[:20],
                    "embedder": self.embedder.fingerprint if self.embedder else None,
                    "embedder_choice": self.embedder_choice,
                    "fusion": {"bm25_weight": self.config.bm25_weight,
                               "cos_weight": self.config.cos_weight,
                               "score_norm": self.config.score_norm,
                               "cos_norm": self.config.cos_norm,
                               "query_clauses": self.config.query_clauses}}

    def retrieve(self, message: str, k: int = 5, *, mode: str = "hybrid",
                 query_vector: np.ndarray | None = None, deferred: bool | None = None,
                 include_core: bool = True,
                 weights: tuple[float, float] | None = None) -> list[ToolScore]:
        """Rank available tools by retrieval alone (no experience, priority, groups or budget).

        ``mode``: ``hybrid``, ``bm25`` or ``vector``. ``deferred``: True = only deferred tools,
        False = none, None = both. ``weights``: ``(bm25, cos)`` fusion weights for this call
        (default: the config's). ``query_vector``: as in :meth:`route`. Used by
        :meth:`search_deferred` and the quality benchmark.

        Examples
        --------
        >>> [t.name for t in router.retrieve("query the database", 2)]   # doctest: +SKIP
        ['db_query', 'db_schema']
        """
        if not isinstance(message, str):
            raise ValidationError("message must be a string")
        if mode not in ("hybrid", "bm25", "vector"):
            raise ValidationError(f"mode must be hybrid, bm25 or vector, not {mode!r}")
        if not isinstance(k, int) or k < 1:
            raise ValidationError("k must be an int >= 1")
        if weights is None:
            weights = (self.config.bm25_weight, self.config.cos_weight)
        elif len(weights) != 2 or not (min(weights) >= 0 and sum(weights) > 0):
            raise ValidationError("weights must be (bm25, cos), both >= 0, not both 0")
        with self._lock:
            self._sync()
            n, c = self.n_rows, self._cols
            cand = c["routable"][:n].copy()
            if deferred is not None:
                cand &= c["deferred"][:n] if deferred else ~c["deferred"][:n]
            if not include_core:
                cand &= ~c["core"][:n]
            tokens = [tokenize(message)]
            qv, cv = None, None
            if query_vector is not None and self.vectors is not None:
                qv, cv = split_query_vector(query_vector, self.vectors.dim)
            qv, clauses = (self._query_vectors([message], qv, cv, checked=True) if mode != "bm25"
                           else (None, None))
            bm, cos, _, clause_cos = self._signals(tokens, qv, True, clauses)
            if mode == "vector":
                bm[:] = 0.0
            w_bm, w_cos = {"hybrid": tuple(weights), "bm25": (1.0, 0.0),
                           "vector": (0.0, 1.0)}[mode]
            hit, fused = np.zeros(n, np.bool_), np.zeros(n)
            n_vec = max(self.config.vector_candidates_factor * self.config.max_tools, k)
            if mode == "hybrid":
                w_cos *= foreign_query_scale([message], self.embedder, self.config)[0]
            tie = self._ties()
            fuse_scores(bm[0], cos[0], cand, tie, n_vec, float(w_bm), float(w_cos),
                        fusion_norm(self.config), hit, fused, np.empty(n_vec, np.int64))
            texts = clause_texts([message], self.config)[0] if self.config.clause_budget else []
            depth = max(k, self.config.clause_within) if texts else k
            idx = np.empty(depth, np.int64)
            m = topk_where(fused, hit, hit, True, tie, depth, idx)
            if texts:  # a tool for each clause (tools/intents.py)
                if clause_cos is not None and clause_cos.shape[0] != len(texts):
                    clause_cos = None
                bests = clause_bests(None if mode == "vector" else self.bm25, texts,
                                     clause_cos, n, cand, tie, n_vec, float(w_bm),
                                     np.full(len(texts), float(w_cos)), fusion_norm(self.config))
                idx = np.asarray(spread(idx[:m].tolist(), bests, k, self.config.clause_within),
                                 np.int64)
                m = len(idx)
            return [ToolScore(name=self._names[r], reason="ranked", score=float(fused[r]),
                              retrieval=float(fused[r]), bm25=float(bm[0, r]),
                              cosine=float(cos[0, r])) for r in idx[:m]]

    def search_deferred(self, query: str, k: int | None = None) -> list[ToolScore]:
        """Find deferred tools for ``query`` by the routing's hybrid retrieval (; the reference
        used a substring match)."""
        return self.retrieve(query, k or self.config.deferred_search_k, deferred=True)

    def discover(self, query: str, session: str) -> list[str]:
        """BM25 over available non-core tools; the top ``discover_top`` hits are activated for
        ``session`` (they count as core until :meth:`reset_session`). Returns their names."""
        if not isinstance(session, str) or not session:
            raise ValidationError("session must be a non-empty string")
        with self._lock:
            n = self.n_rows
            bm = self.bm25.scores(tokenize(query or ""), n)
            mask = self._cols["routable"][:n] & ~self._state(session).core & (bm > 0)
            idx = np.empty(max(self.config.discover_top, 1), np.int64)
            m = topk_where(bm, mask, mask, True, self._ties(), self.config.discover_top, idx)
            names = [self._names[r] for r in idx[:m]]
            self.activate(session, names)
            return names
