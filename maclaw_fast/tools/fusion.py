"""How the router fuses its two signals for a message (, RouterConfig): the fusion weights
that depend on the message, the kernel's normalisation mode, and the sentence clauses whose
vectors join the message's."""

from __future__ import annotations

import numpy as np

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import check_vectors
from maclaw_fast.errors import ValidationError
from maclaw_fast.text import cjk_ratio
from maclaw_fast.text.clauses import clauses
from maclaw_kernels.routing import NORM_MINMAX, NORM_RAW_COS, NORM_ZSCORE


def foreign_query_scale(messages: list[str], embedder, config: RouterConfig) -> np.ndarray:
    """Per-message factor on the cosine weight of the fusion, for a message mostly in Chinese
    (``RouterConfig.foreign_query_min_ratio``), so that it fuses as ``w : 1 − w`` (the fused
    score is min-max normalised after, so only the ratio of the two weights counts): ``w`` is
    :func:`chinese_bm25_weight` (``foreign_query_bm25_weight`` when the embedder was not trained
    on Chinese, ``cjk_query_bm25_weight`` when it reads it); 1 for every other message.

    Examples
    --------
    >>> class En: languages = ("en",)
    >>> cfg = RouterConfig(bm25_weight=0.4, cos_weight=0.6, foreign_query_bm25_weight=0.7)
    >>> foreign_query_scale(["查询数据库", "query"], En(), cfg).round(3).tolist()
    [0.286, 1.0]
    """
    scale = np.ones(len(messages))
    w = chinese_bm25_weight(embedder, config)
    if not w:
        return scale
    factor = (config.bm25_weight / w) * (1.0 - w) / config.cos_weight
    for i, m in enumerate(messages):
        if cjk_ratio(m) >= config.foreign_query_min_ratio:
            scale[i] = factor
    return scale


def chinese_bm25_weight(embedder, config: RouterConfig) -> float:
    """The bm25 weight a mostly-Chinese message fuses with (0: the config's weights): by the
    languages the embedder names, ``foreign_query_bm25_weight`` without Chinese among them,
    ``cjk_query_bm25_weight`` with it; 0 for an embedder that names none.

    Examples
    --------
    >>> class Zh: languages = ("multi", "en", "zh")
    >>> chinese_bm25_weight(Zh(), RouterConfig()) == RouterConfig().cjk_query_bm25_weight
    True
    """
    langs = getattr(embedder, "languages", None)
    if not langs:
        return 0.0
    return config.cjk_query_bm25_weight if "zh" in langs else config.foreign_query_bm25_weight


def foreign_scaling(embedder, config: RouterConfig) -> bool:
    """Whether :func:`foreign_query_scale` can be below 1 (else every factor is 1 and a caller
    can skip the per-message check)."""
    return bool(chinese_bm25_weight(embedder, config))


def fusion_norm(config: RouterConfig) -> int:
    """The ``norm`` argument of the fusion kernel for a config (``score_norm``, ``cos_norm``)."""
    if config.score_norm == "zscore":
        return NORM_ZSCORE
    return NORM_MINMAX if config.cos_norm == "minmax" else NORM_RAW_COS


def clause_texts(messages: list[str], config: RouterConfig) -> tuple[list[str], np.ndarray]:
    """The sentence clauses of every message (``RouterConfig.query_clauses``) as one list, and
    for each clause the position of its message.

    Examples
    --------
    >>> clause_texts(["Find the invoice from May. Then email it to the accountant.", "hi"],
    ...              RouterConfig())
    (['Find the invoice from May.', 'Then email it to the accountant.'], array([0, 0]))
    """
    texts: list[str] = []
    owner: list[int] = []
    if config.query_clauses:
        for q, m in enumerate(messages):
            parts = clauses(m, config.clause_min_chars, config.max_clauses)
            texts += parts
            owner += [q] * len(parts)
    return texts, np.asarray(owner, np.int64)


def split_query_vector(query_vector, dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A caller's query vector as ``(message vector (1, dim), clause vectors (m, dim) or
    None)``: a ``(dim,)`` vector is the message's; an ``(m + 1, dim)`` array is the message's
    vector followed by those of its clauses."""
    q = check_vectors(query_vector, dim, what="query vector")
    return q[:1], (q[1:] if q.shape[0] > 1 else None)


def max_clause_cosines(vectors, n_rows: int, clause_vecs: np.ndarray, owner: np.ndarray,
                       cos: np.ndarray) -> np.ndarray | None:
    """``cos[q, i] = max(cos[q, i], best cosine of tool i over message q's clauses)``: a tool
    counts by the part of the request that names it. Returns each clause's cosines
    ``(len(owner), n_rows)`` (None when there are none)."""
    if n_rows == 0 or len(owner) == 0:
        return None
    extra = np.zeros((len(owner), n_rows), np.float32)
    vectors.scores_batch(clause_vecs, n_rows, extra, 1)
    for j, q in enumerate(owner.tolist()):  # np.maximum.at is ~10× slower for a few rows
        np.maximum(cos[q], extra[j], out=cos[q])
    return extra


def message_vectors(messages, given, clause_vectors, query_cache, dim: int,
                    config: RouterConfig, checked: bool = False,
                    split: tuple | None = None) -> tuple[np.ndarray, tuple | None]:
    """``(message vectors (nq, dim), (clause vectors, their messages) or None)``: the messages'
    vectors as ``given`` (checked here unless ``checked``: :func:`split_query_vector` already
    did) or from ``query_cache`` (0 for a blank message); the clauses' as given (all of the one
    message) or embedded through ``query_cache`` (``split``: the messages' :func:`clause_texts`
    when the caller has them)."""
    if given is not None:
        q = given if checked else check_vectors(given, dim, what="query vector")
        if q.shape[0] != len(messages):
            raise ValidationError(f"{q.shape[0]} query vectors for {len(messages)} messages")
    else:
        q = np.zeros((len(messages), dim), np.float32)
        idx = [i for i, m in enumerate(messages) if m.strip()]
        if idx:
            q[idx] = query_cache.get_many([messages[i] for i in idx])
    if clause_vectors is not None:
        return q, (clause_vectors, np.zeros(len(clause_vectors), np.int64))
    texts, owner = clause_texts(messages, config) if split is None else split
    return q, ((query_cache.get_many(texts), owner) if texts else None)
