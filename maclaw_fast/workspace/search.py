"""Workspace search (design §14): candidates, the hybrid merge, decay, MMR, threshold and results.

Pipeline for one query over the index's dense row columns:

1. keyword side: BM25 of every row from the numba mirror of the shared :class:`Bm25Index`, top
   ``candidates`` rows with s > 0, mapped to ``text_score = s/(1+s)``;
2. vector side: exact inner products from the shared :class:`VectorColumn`, top ``candidates``
   rows with similarity > 0;
3. union by row; the score that ranks is the fusion's (``SearchConfig.fusion``, weights
   :data:`FUSION_WEIGHTS` unless the config sets them): ``"normalised"`` (the default, design
   R3, chosen on the tuning halves of LoCoMo and SciFact as workspaces)
   ``wv·minmax(cosine) + wt·bm25/max(bm25)`` over the candidates, vector/text 0.4/0.6;
   ``"openclaw"`` OpenClaw's ``wv·vector + wt·text`` at 0.7/0.3; ``"calibrated"`` the same on
   absolute scales (cosine over the model's floor, BM25 over the query's Σ idf); optional
   temporal decay, sort, optional MMR;
4. keep scores ``≥ min_score`` (on the fusion's scale: under ``"normalised"`` it is relative to
   the query's best candidates, which score up to 1); when nothing passes but keywords matched,
   the keyword-matched rows instead; at most ``max_results`` within the total character
   budget.

Modes: hybrid, text (no embedder, or the embedder failed on this query: reported in ``degraded``),
vector (``text_search=False``).
"""

from __future__ import annotations

import re
import unicodedata

import msgspec
import numpy as np
from maclaw_kernels.vectors import dot_tile
from maclaw_kernels.routing import topk_where
from maclaw_kernels.workspace import mmr_order

from maclaw_fast.config import SearchConfig
from maclaw_fast.embedding.base import cosine_floor
from maclaw_fast.errors import EmbeddingError, ValidationError
from maclaw_fast.text import tokenize
from maclaw_fast.threads import spare_core

# each fusion's vector/text weights when the config leaves them unset (None)
FUSION_WEIGHTS = {"openclaw": (0.7, 0.3), "normalised": (0.4, 0.6), "calibrated": (0.5, 0.5)}
_WORD = re.compile(r"\w+")
# from this many chunks the vector search reads int8 codes first (``top_scores``); below it
# the float32 matrix fits the cache and one exact scan is as fast
QUANTIZED_MIN_ROWS = 4096
_SECONDS_PER_DAY = 86_400.0


class WorkspaceHit(msgspec.Struct, kw_only=True):
    """One result: where (path, 1-based inclusive lines, citation), how good, and a snippet."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    citation: str
    vector_score: float = 0.0
    text_score: float = 0.0


class SearchResponse(msgspec.Struct, kw_only=True):
    """Results plus how they were found.

    ``mode`` is the mode actually used; ``fallback`` is ``"keyword"`` when nothing passed
    ``min_score`` and the keyword matches were returned; ``degraded`` says why a hybrid search ran
    text-only; ``reason`` why there are no results (bad query, empty index).
    """

    results: list[WorkspaceHit]
    mode: str
    model: str | None
    query: str = ""
    fallback: str | None = None
    degraded: str | None = None
    reason: str | None = None
    synced: bool = False



def best_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` largest ``scores`` above 0 (NaN never counts), best first, ties to the
    lower row (the router's top-k kernel)."""
    rows = np.empty(max(k, 1), np.int64)
    hit = scores > 0.0
    m = topk_where(scores, hit, hit, True, np.arange(scores.shape[0]), k, rows)
    return rows[:m]


def merge_hybrid(vec_idx: np.ndarray, vec_score: np.ndarray, txt_idx: np.ndarray,
                 txt_score: np.ndarray, wv: float, wt: float):
    """Union of two candidate lists by row id (each holds a row at most once; a side that lacks
    a row scores 0 there): ``(rows ascending, wv·vector + wt·text, vector score, text score)``."""
    rows, where = np.unique(np.concatenate([vec_idx, txt_idx]), return_inverse=True)
    vs, ts = np.zeros(rows.shape[0]), np.zeros(rows.shape[0])
    vs[where[:vec_idx.shape[0]]] = vec_score
    ts[where[vec_idx.shape[0]:]] = txt_score
    return rows.astype(np.int64), wv * vs + wt * ts, vs, ts


def apply_decay(scores: np.ndarray, ts_days: np.ndarray, now_days: float,
                half_life_days: float) -> None:
    """``scores[i] *= exp(-ln2/half_life · max(0, now − ts[i]))`` in place; ``ts`` NaN = no decay
    (evergreen or no timestamp)."""
    age = np.maximum(now_days - ts_days, 0.0)
    scores *= np.where(np.isnan(ts_days), 1.0, np.exp(-np.log(2.0) / half_life_days * age))


def normalise_weights(vector_weight: float | None, text_weight: float | None,
                      fusion: str = "openclaw") -> tuple[float, float]:
    """Clamp each weight to [0, 1] and scale them to sum 1; either None, or both 0 → the
    fusion's own weights (:data:`FUSION_WEIGHTS`: 0.7/0.3 for ``"openclaw"``).

    Examples
    --------
    >>> normalise_weights(1.0, 1.0)
    (0.5, 0.5)
    >>> normalise_weights(0.0, 0.0)
    (0.7, 0.3)
    """
    if vector_weight is None or text_weight is None:
        return FUSION_WEIGHTS[fusion]
    wv = min(max(float(vector_weight), 0.0), 1.0)
    wt = min(max(float(text_weight), 0.0), 1.0)
    total = wv + wt
    if not total > 0.0:
        return FUSION_WEIGHTS[fusion]
    return wv / total, wt / total


def text_score(bm25) -> np.ndarray:
    """Map BM25 scores s ≥ 0 into [0, 1): ``s / (1 + s)``.

    Examples
    --------
    >>> [round(float(x), 4) for x in text_score(np.array([4.2, 2.1, 0.5, 0.0]))]
    [0.8077, 0.6774, 0.3333, 0.0]
    """
    s = np.maximum(np.asarray(bm25, np.float64), 0.0)
    return s / (1.0 + s)


def normalised_merge(vector: np.ndarray, text: np.ndarray, has_vectors: bool, wv: float,
                     wt: float) -> np.ndarray:
    """The ``"normalised"`` fusion (design R3) of merged candidates: ``wv·v + wt·t`` with ``v``
    the cosine min-max scaled over the vector candidates (rows with a cosine > 0; 1 when they
    are all equal; 0 for a row only BM25 found) and ``t`` the BM25 score over the best BM25
    score of the query (``text`` holds ``s/(1+s)``, a monotone map of it).

    Examples
    --------
    >>> normalised_merge(np.array([0.5, 0.3, 0.0]), np.array([0.0, 0.5, 0.75]), True, 0.5, 0.5)
    array([0.5       , 0.16666667, 0.5       ])
    """
    s = text / np.maximum(1.0 - text, 1e-12)  # back to the BM25 score
    best = s.max() if s.size else 0.0
    t = s / best if best > 0 else np.zeros_like(s)
    v = np.zeros_like(vector)
    if has_vectors:
        cand = vector > 0.0
        if cand.any():
            lo, hi = vector[cand].min(), vector[cand].max()
            v[cand] = (vector[cand] - lo) / (hi - lo) if hi > lo else 1.0
    return wv * v + wt * t


def calibrated_merge(vector: np.ndarray, text: np.ndarray, wv: float, wt: float,
                     idf_total: float, floor: float = 0.0) -> np.ndarray:
    """The ``"calibrated"`` fusion of merged candidates: ``wv·v + wt·t`` on absolute scales, so
    the score means the same in every query and ``min_score`` is a bar, not a rank.
    ``v = (cosine − floor) / (1 − floor)`` clipped to [0, 1] (``floor``: the model's cosine
    floor, 0 for MiniLM); ``t`` the BM25 score over ``idf_total`` (Σ idf of the query's terms:
    about the BM25 of a chunk holding each term once at the average length), at most 1.

    Examples
    --------
    >>> calibrated_merge(np.array([0.5, 0.3, 0.0]), np.array([0.0, 0.5, 0.75]), 0.5, 0.5, 2.0)
    array([0.25, 0.4 , 0.5 ])
    """
    s = text / np.maximum(1.0 - text, 1e-12)  # back to the BM25 score
    t = np.minimum(s / idf_total, 1.0) if idf_total > 0 else np.zeros_like(s)
    v = np.clip((vector - floor) / max(1.0 - floor, 1e-12), 0.0, 1.0)
    return wv * v + wt * t


def mmr_tokens(text: str) -> list[str]:
    """MMR's token set source: lower-cased NFC word characters.

    Examples
    --------
    >>> mmr_tokens("Deploy, deploy_key! Café")
    ['deploy', 'deploy_key', 'café']
    """
    return _WORD.findall(unicodedata.normalize("NFC", text.lower()))


def _mmr(ix, rows: np.ndarray, scores: np.ndarray, lam: float) -> np.ndarray:
    parts = []
    for r in rows:
        h = ix.hashes[r]
        ids = ix.mmr_tokens.get(h)
        if ids is None:
            # token → int by Python's hash: equal within the process, which is all a cache needs
            ids = np.unique(np.array([hash(t) for t in mmr_tokens(ix.texts[r])], np.int64))
            if len(ix.mmr_tokens) > 50_000:
                ix.mmr_tokens.clear()
            ix.mmr_tokens[h] = ids
        parts.append(ids)
    indptr = np.zeros(len(parts) + 1, np.int64)
    indptr[1:] = np.cumsum([p.size for p in parts])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return mmr_order(scores, indptr, flat, lam)


def make_snippet(text: str, query_tokens: list[str], limit: int) -> str:
    """``text`` when it fits, else a ``limit``-char window starting a little before the first
    query term (the chunk head when no term is found)."""
    if len(text) <= limit:
        return text
    low = text.lower()
    hits = [p for p in (low.find(t) for t in query_tokens) if p >= 0]
    start = 0
    if hits and min(hits) > limit // 2:
        start = min(min(hits) - limit // 5, len(text) - limit)
        nl = text.rfind("\n", start, min(hits))
        if nl >= 0 and min(hits) - nl < limit // 2:
            start = nl + 1  # begin on a line boundary when one is close
    return text[start:start + limit]


def _clamp_budget(hits: list[WorkspaceHit], budget: int) -> list[WorkspaceHit]:
    if budget <= 0:
        return hits
    out, remaining = [], budget
    for h in hits:
        if remaining <= 0:
            break
        if len(h.snippet) > remaining:
            h.snippet = h.snippet[:remaining]
        out.append(h)
        remaining -= len(h.snippet)
    return out


def _check_args(max_results, min_score, cfg: SearchConfig) -> tuple[int, float]:
    n = cfg.max_results if max_results is None else max_results
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValidationError(f"max_results must be an integer ≥ 1, got {max_results!r}")
    m = cfg.min_score if min_score is None else min_score
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not np.isfinite(m):
        raise ValidationError(f"min_score must be a finite number, got {min_score!r}")
    return int(n), float(m)


def search(ix, query, *, max_results: int | None = None,
           min_score: float | None = None) -> SearchResponse:
    """Search the workspace index ``ix``. Never raises for a bad query: the response says why.

    Parameters
    ----------
    query : the query text.
    max_results : default ``config.max_results`` (6).
    min_score : default ``config.min_score`` (0.35).

    Examples
    --------
    >>> import tempfile; from pathlib import Path
    >>> from maclaw_fast.workspace.index import WorkspaceIndex
    >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "MEMORY.md").write_text("zebra crossing notes")
    >>> r = WorkspaceIndex.open(ws, embedder=None).search("zebra")
    >>> r.mode, r.results[0].path
    ('text', 'MEMORY.md')
    """
    cfg: SearchConfig = ix.config
    n_max, floor = _check_args(max_results, min_score, cfg)
    if not isinstance(query, str):
        return SearchResponse(results=[], mode=ix.mode, model=ix.model,
                              reason=f"query must be a string, got {type(query).__name__}")
    query = query.strip()
    if not query:
        return SearchResponse(results=[], mode=ix.mode, model=ix.model, reason="empty query")
    synced = False
    if cfg.sync_on_search and ix.is_dirty():
        try:
            ix.sync()
            synced = True
        except OSError as exc:  # e.g. the index folder became read-only: answer from what we have
            ix.last_error = f"sync before search failed: {exc}"
    with ix.lock:
        resp = _search_locked(ix, query, n_max, floor)
    resp.synced = synced
    return resp


def _search_locked(ix, query: str, n_max: int, floor: float) -> SearchResponse:
    cfg: SearchConfig = ix.config
    mode, degraded = ix.mode, None
    n = ix.n_rows
    cand = min(cfg.max_candidates, max(1, n_max * cfg.candidate_multiplier))
    tokens = tokenize(query) if ix.bm25 is not None else []
    qvec = None
    if ix.vectors is not None:
        try:
            qvec = ix.query_cache.get(query)
            if ix.last_error and ix.last_error.startswith("query embedding failed"):
                ix.last_error = None  # the embedder works again
        except EmbeddingError as exc:
            ix.last_error = f"query embedding failed: {exc}"
            if ix.bm25 is None:
                return SearchResponse(results=[], mode=mode, model=ix.model, query=query,
                                      degraded=str(exc), reason="the embedder failed and there "
                                      "is no keyword index (vector-only mode)")
            mode, degraded = "text", f"embedder failed ({exc}); fell back to text-only"
    empty = np.zeros(0, np.int64), np.zeros(0, np.float64)
    t_idx, t_sc = empty
    spare = spare_core()
    if ix.bm25 is not None and tokens and n:
        # a big index splits BM25 across the cores while they are idle
        dense = ix.bm25.scores(tokens, n, in_ranges=spare and ix.bm25.is_large)
        t_idx = best_rows(dense, cand)
        t_sc = text_score(dense[t_idx])
    v_idx, v_sc = empty
    if qvec is not None and n:
        if ix.vec_out.shape[0] < n:
            ix.vec_out = np.empty(max(n, 2 * ix.vec_out.shape[0]), np.float32)
        dense_v = ix.vec_out[:n]
        if ix.vectors.quantized and n >= QUANTIZED_MIN_ROWS:
            ix.vectors.top_scores(qvec, n, cand, dense_v)  # exact for the rows that can win
        elif spare:
            ix.vectors.scores(qvec, n, out=dense_v)
        else:
            dot_tile(ix.vectors.matrix, n, ix.vectors.has_vec, qvec[None], 0, 1, dense_v[None])
        dense_v = dense_v.astype(np.float64)  # float64 scores: one compiled top-k kernel
        v_idx = best_rows(dense_v, cand)
        v_sc = dense_v[v_idx]
    if mode == "hybrid":
        wv, wt = normalise_weights(cfg.vector_weight, cfg.text_weight, cfg.fusion)
    else:
        wv, wt = (1.0, 0.0) if mode == "vector" else (0.0, 1.0)
    rows, relevance, vs, ts = merge_hybrid(v_idx, v_sc, t_idx, t_sc, wv, wt)
    if rows.size == 0:
        return SearchResponse(results=[], mode=mode, model=ix.model, query=query,
                              degraded=degraded, reason="no matches" if n else "index is empty")
    # ``relevance`` is OpenClaw's merge; the fusion's score ranks and min_score judges it
    if cfg.fusion == "calibrated":
        idf_total = ix.bm25.idf_total(tokens) if tokens and ix.bm25 is not None else 0.0
        scores = calibrated_merge(vs, ts, wv, wt, idf_total, cosine_floor(ix.embedder, query))
    elif cfg.fusion == "normalised":
        scores = normalised_merge(vs, ts, v_idx.size > 0, wv, wt)
    else:
        scores = relevance
    if cfg.temporal_decay:
        now_days = ix.clock() / _SECONDS_PER_DAY
        half_life = max(1.0, float(cfg.half_life_days))
        apply_decay(scores, ix.ts_days[rows], now_days, half_life)
    order = np.argsort(-scores, kind="stable")  # rows ascend, so ties go to the lower row
    if cfg.mmr and order.size > 1:
        lam = min(max(float(cfg.mmr_lambda), 0.0), 1.0)
        order = order[_mmr(ix, rows[order], scores[order], lam)]
    keep = order[scores[order] >= floor]
    fallback = None
    if keep.size == 0:
        keep = order[ts[order] > 0.0]
        fallback = "keyword" if keep.size else None
    hits = []
    for i in keep[:n_max]:
        r = int(rows[i])
        path, s, e = ix.paths[r], int(ix.start_line[r]), int(ix.end_line[r])
        hits.append(WorkspaceHit(
            path=path, start_line=s, end_line=e, score=float(scores[i]),
            snippet=make_snippet(ix.texts[r], tokens, cfg.snippet_chars), source="memory",
            citation=f"{path}#L{s}-L{e}", vector_score=float(vs[i]), text_score=float(ts[i])))
    reason = None if hits else f"no result scored ≥ min_score {floor}"
    return SearchResponse(results=_clamp_budget(hits, cfg.max_total_chars), mode=mode,
                          model=ix.model, query=query, fallback=fallback, degraded=degraded,
                          reason=reason)
