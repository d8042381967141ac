"""Recall scoring (SPEC §6): fusion, seeds, graph propagation, ranked selection within a budget."""

import numpy as np
from numba import njit, prange

from maclaw_kernels.bm25 import bm25_query
from maclaw_kernels.graph import propagate_linked
from maclaw_kernels.recall_assemble import (KIND_RANKED, cos_range, norm_cos, pick_identity,
                                            select_hits)
from maclaw_kernels.revival import (count_cued, linked_cosines, revived_masks,
                                    terms_idf_total)
from maclaw_kernels.terms import ascii_query_terms
from maclaw_kernels.topk import top_k_desc, top_k_known
from maclaw_kernels.vectors import dot_scores_wanted, is_unit_vector
from maclaw_kernels.views import block, column


# the hit-reason code of a revived dormant row (memory.hits.REASONS[4])
REASON_REVIVED = 4.0


@njit(cache=True)
def bm25_hit_range(bm25, scored):
    """(lowest, highest) BM25 above 0 among ``scored`` rows ((inf, 0) when none): the min-max
    and max normalisations need them before any row is fused."""
    lo = np.inf
    hi = 0.0
    for i in range(scored.shape[0]):
        if scored[i] and bm25[i] > 0.0:
            lo = min(lo, bm25[i])
            hi = max(hi, bm25[i])
    return lo, hi


@njit(cache=True)
def row_relevance(x, cos_i, affinity_i, norm_mode, lo, hi, cos_mode, c_lo, c_hi, bm25_w, cos_w):
    """(normalised BM25, fused relevance) of one eligible row with raw BM25 ``x`` and cosine
    ``cos_i``: BM25 by ``norm_mode`` over the hits' range (``lo``, ``hi``), the cosine by
    :func:`norm_cos` over the candidates' range (``c_lo``, ``c_hi``)."""
    if x > 0.0 and norm_mode == 1:
        x = x / hi
    elif x > 0.0 and norm_mode == 2:
        x = 1.0 if hi == lo else (x - lo) / (hi - lo)
    return x, bm25_w * x + cos_w * norm_cos(cos_i, cos_mode, c_lo, c_hi) + affinity_i


@njit(cache=True)
def fusion_ranges(bm25, cos, eligible, norm_mode, cos_mode):
    """(BM25 lo, BM25 hi, cosine lo, cosine hi) over the ``eligible`` rows, as
    :func:`row_relevance` takes them (placeholders for the raw modes)."""
    lo, hi = bm25_hit_range(bm25, eligible) if norm_mode != 0 else (np.inf, 0.0)
    c_lo, c_hi = cos_range(cos, eligible) if cos_mode != 0 else (np.inf, -np.inf)
    return lo, hi, c_lo, c_hi


@njit(cache=True)
def recency_epoch(now, decay_per_hour):
    """The epoch of the recency memo at ``now``: ``now`` rounded down to a multiple of the span
    over which the decay falls by e^15, so every call at ``now`` (any process, any history)
    shares it and the memo's factors stay within float64 range."""
    rate = abs(decay_per_hour)
    span = 54000.0 / rate if rate > 1e-12 else 1e300
    return np.floor(now / span) * span


@njit(cache=True)
def refresh_recency(updated_at, now, decay_per_hour, memo_key, memo_at, memo_factor):
    """Bring the memo up to date and return ``decay_now`` for :func:`row_recency`.

    ``memo_factor[i] = exp(decay·(updated_at[i] − epoch)/3600)`` is recomputed only for rows
    whose ``updated_at`` differs from ``memo_at`` (all of them when the epoch or the decay
    changed: ``memo_key`` holds both): recency then costs a multiply per row, not an exp."""
    epoch = recency_epoch(now, decay_per_hour)
    if memo_key[0] != epoch or memo_key[1] != decay_per_hour:
        memo_at[:] = np.nan
        memo_key[0] = epoch
        memo_key[1] = decay_per_hour
    stale = 0
    for i in range(updated_at.shape[0]):  # branch-free: the common case is no stale row
        stale += updated_at[i] != memo_at[i]
    if stale:
        for i in range(updated_at.shape[0]):
            if updated_at[i] != memo_at[i]:
                memo_at[i] = updated_at[i]
                memo_factor[i] = np.exp(decay_per_hour * (updated_at[i] - epoch) / 3600.0)
    return np.exp(-decay_per_hour * (now - epoch) / 3600.0)


@njit(cache=True, inline="always")
def row_recency(updated_at_i, now, decay_now, factor_i):
    """``exp(-decay·max(now − updated_at, 0)/3600)`` from :func:`refresh_recency`."""
    return 1.0 if updated_at_i >= now else decay_now * factor_i


@njit(cache=True, inline="always")
def base_scores(updated_at, weight, access, now, decay_per_hour, w_rec, w_imp, memo_key, memo_at,
                memo_factor, log_table, recency_out, importance_out, base_out):
    """Recency and importance (``weight + ln(1 + access)``, ``log_table[a] = ln(1 + a)`` for
    the small counts) of every row, and their weighted sum; the recency memo is
    :func:`refresh_recency`'s."""
    decay_now = refresh_recency(updated_at, now, decay_per_hour, memo_key, memo_at, memo_factor)
    n_logged = log_table.shape[0]
    for i in range(updated_at.shape[0]):
        rec = row_recency(updated_at[i], now, decay_now, memo_factor[i])
        a = access[i]  # inline: a helper taking the table costs 5× here (array refcounts)
        imp = weight[i] + (log_table[a] if 0 <= a < n_logged else np.log(1.0 + a))
        recency_out[i] = rec
        importance_out[i] = imp
        base_out[i] = w_rec * rec + w_imp * imp


@njit(cache=True, inline="always")
def score_rows(base, bm25, cos, affinity, eligible, scored, norm_mode, cos_mode, bm25_w, cos_w,
               w_rel, bm25_out, rel_out, score_out, graph_out):
    """``rel = bm25_w·norm(bm25) + cos_w·norm(cos) + affinity`` over the ``eligible`` rows
    (0 elsewhere), the score ``base + w_rel·rel`` of the ``scored`` ones (−inf elsewhere) and
    ``graph_out`` zeroed, in one pass over the rows; returns the scored rows' (lowest score,
    highest score, count) for :func:`top_k_known`.

    ``norm_mode``: 0 raw, 1 divide by the best BM25, 2 min-max over the eligible hits (a lone or
    all-equal hit maps to 1); ``cos_mode``: 0 raw (``max(cos, 0)``), 1 min-max over the eligible
    rows (:func:`norm_cos`).
    """
    lo, hi, c_lo, c_hi = fusion_ranges(bm25, cos, eligible, norm_mode, cos_mode)
    s_lo = np.inf
    s_hi = -np.inf
    count = 0
    for i in range(base.shape[0]):
        graph_out[i] = 0.0
        bm25_out[i] = 0.0
        rel_out[i] = 0.0
        if eligible[i]:
            bm25_out[i], rel_out[i] = row_relevance(bm25[i], cos[i], affinity[i], norm_mode, lo,
                                                    hi, cos_mode, c_lo, c_hi, bm25_w, cos_w)
        score_out[i] = -np.inf
        if scored[i]:
            score_out[i] = base[i] + w_rel * rel_out[i]
            s_lo = min(s_lo, score_out[i])
            s_hi = max(s_hi, score_out[i])
            count += 1
    return s_lo, s_hi, count


@njit(cache=True, inline="always")
def linked_relevance(own, sim, link, mix):
    """The relevance of a row the graph walk reached: ``own`` (its fused relevance), ``sim``
    and ``link`` (the best a seed's relevance gave it along the similarity edges and the
    conversation links, :func:`maclaw_kernels.graph.propagate_linked`). A similarity neighbour
    keeps the larger of its own and the walk's value; along the links, ``mix`` 0 does the same,
    ``mix`` > 0 adds ``mix·link`` to its own (a reply keeps its own match and gains a share of
    the question it answers)."""
    v = max(own, sim)
    if mix <= 0.0:
        return max(v, link)
    if link > 0.0:
        return max(v, own + mix * link)
    return v


@njit(cache=True)
def rank_scored(base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w, hops, hop_factor,
                prev, nxt, adj_hops, adj_factor, adj_mix, k, score_out, graph_out):
    """Score, propagate relevance from the top ``n_seeds`` through the graph, re-score, and return
    the top ``k`` scored rows (score desc, access desc, seq asc)."""
    for i in range(base.shape[0]):
        score_out[i] = base[i] + w_rel * rel[i] if scored[i] else -np.inf
        graph_out[i] = 0.0
    top = top_k_desc(score_out, access, seq, scored, max(k, n_seeds))
    return rerank_with_graph(top, base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w,
                             hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, k,
                             score_out, graph_out)


@njit(cache=True)
def rerank_with_graph(top, base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w, hops,
                      hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, k, score_out,
                      graph_out):
    """Given ``top`` = the first ``max(k, n_seeds)`` rows by ``score_out`` (``graph_out`` zero):
    propagate from the first ``n_seeds`` along the similarity edges and the conversation links
    (:func:`maclaw_kernels.graph.propagate_linked`), update the rows reached, return the new
    top ``k``.

    Propagation only raises the scores of the rows it reaches, so the new top ``k`` lies within
    ``top`` plus those rows.
    """
    seeds = top[:min(n_seeds, top.shape[0])]
    if (hops <= 0 and adj_hops <= 0) or seeds.shape[0] == 0:
        return top[:k]
    sim, link, reached = propagate_linked(seeds, rel[seeds], nbr, edge_w, hops, hop_factor,
                                          prev, nxt, adj_hops, adj_factor, scored)
    rows = np.empty(top.shape[0] + reached.shape[0], np.int64)
    rows[:top.shape[0]] = top
    m = top.shape[0]
    for r in reached:
        g = linked_relevance(rel[r], sim[r], link[r], adj_mix)
        if g > rel[r]:
            graph_out[r] = g - rel[r]
            score_out[r] = base[r] + w_rel * g
            rows[m] = r
            m += 1
    if m == top.shape[0]:  # no row gained: the order stands
        return top[:k]
    # in row order, so full ties break as over the whole array (a top row may have gained too)
    rows = np.unique(rows[:m])
    return rows[top_k_desc(score_out[rows], access[rows], seq[rows], np.ones(rows.shape[0],
                                                                           np.bool_), k)]


@njit(cache=True, inline="always")
def hit_reason(kind, graph):
    """Why a selected row is a hit, as a code: its :func:`select_hits` kind (2 self identity,
    3 a leading user fact), else 1 when the graph walk raised it, 0 when ranked on its own."""
    if kind != KIND_RANKED:
        return kind
    return 1.0 if graph > 0.0 else 0.0


@njit(cache=True)
def recall_one(base, bm25, cos, affinity, eligible, scored, updated_at, access, seq, tokens,
               fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel, n_seeds, nbr,
               edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, max_identity,
               max_user_facts, lead_window, max_entries, budget, work, out_rows, out_score,
               out_bm25, out_rel, out_graph, out_reason):
    """One query end to end; writes the selected rows, their score parts and :func:`hit_reason`
    codes, returns the count.

    ``fixed_rows``: the self-identity candidates, of which :func:`pick_identity` leads with at
    most ``max_identity``; ``user_fact`` marks the rows of which at most ``max_user_facts``
    lead when among the first ``lead_window`` ranked rows (:func:`select_hits`); every other
    ``scored`` row is ranked by its score. The ranked candidate list grows until the budget loop
    is satisfied. ``work``: four float64 rows of at least ``n`` each, scratch (a caller's buffer spares
    allocations).
    """
    n = base.shape[0]
    bm25n = work[0, :n]
    rel = work[1, :n]
    score = work[2, :n]
    graph = work[3, :n]
    s_lo, s_hi, n_scored = score_rows(base, bm25, cos, affinity, eligible, scored, norm_mode,
                                      cos_mode, bm25_w, cos_w, w_rel, bm25n, rel, score, graph)
    # the leading user facts are looked for in the first lead_window ranked rows: rank as deep
    k = min(max(max_entries + 8, lead_window), n_scored)
    top = top_k_known(score, access, seq, scored, max(k, n_seeds), s_lo, s_hi, n_scored)
    ranked = rerank_with_graph(top, base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w,
                               hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, k,
                               score, graph)
    fixed = pick_identity(fixed_rows, eligible, access, updated_at, seq, max_identity)
    while True:
        ranked_rel = np.empty(ranked.shape[0])
        for j in range(ranked.shape[0]):
            ranked_rel[j] = rel[ranked[j]] + graph[ranked[j]]
        m = select_hits(fixed, ranked, ranked_rel, user_fact, max_user_facts, lead_window,
                        tokens, max_entries, budget, out_rows, out_reason)
        if m >= max_entries or k >= n_scored:
            break
        # entries over the budget (or leading elsewhere) left it short: rank deeper
        k = min(2 * k, n_scored)
        ranked = rank_scored(base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w, hops,
                             hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, k, score, graph)
    for j in range(m):
        r = out_rows[j]
        out_score[j] = base[r] + w_rel * (rel[r] + graph[r])
        out_bm25[j] = bm25n[r]
        out_rel[j] = rel[r]
        out_graph[j] = graph[r]
        out_reason[j] = hit_reason(out_reason[j], graph[r])
    return m


@njit(cache=True, inline="always")
def copy_row_parts(m, out_rows, recency, importance, cos, affinity, out_parts):
    """Rows 4–7 of ``out_parts`` for the ``m`` selected rows: recency, importance,
    max(cos, 0) and affinity."""
    for j in range(m):
        r = out_rows[j]
        out_parts[4, j] = recency[r]
        out_parts[5, j] = importance[r]
        out_parts[6, j] = max(np.float64(cos[r]), 0.0)
        out_parts[7, j] = affinity[r]


# the recall kernels' arguments that describe the plan (the store's ``kernel_args``), in order
KERNEL_ARGS = ("access", "seq", "tokens", "fixed_rows", "user_fact", "norm_mode", "cos_mode",
               "bm25_w", "cos_w", "w_rel", "n_seeds", "nbr", "edge_w", "hops", "hop_factor",
               "prev", "nxt", "adj_hops", "adj_factor", "adj_mix", "max_identity", "max_user_facts",
               "lead_window",
               "max_entries", "budget")


@njit(cache=True)
def recall_single(updated_at, weight, now, decay_per_hour, w_rec, w_imp, memo_key, memo_at,
                  memo_factor, log_table, bm25, cos, affinity, eligible, scored, access, seq,
                  tokens, fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel,
                  n_seeds, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix,
                  max_identity, max_user_facts, lead_window, max_entries, budget, work, out_rows,
                  out_parts):
    """:func:`base_scores` then :func:`recall_one`, in one call for the single-query path.

    ``work``: seven float64 rows of at least ``n``, scratch. ``out_parts`` rows, per selected
    row: score, bm25, rel, graph (as :func:`recall_one`), then recency, importance, max(cos, 0),
    affinity and the :func:`hit_reason` code.
    """
    n = updated_at.shape[0]
    recency, importance, base = work[4, :n], work[5, :n], work[6, :n]
    base_scores(updated_at, weight, access, now, decay_per_hour, w_rec, w_imp, memo_key, memo_at,
                memo_factor, log_table, recency, importance, base)
    m = recall_one(base, bm25, cos, affinity, eligible, scored, updated_at, access, seq, tokens,
                   fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel, n_seeds,
                   nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix,
                   max_identity, max_user_facts, lead_window, max_entries, budget, work, out_rows,
                   out_parts[0], out_parts[1], out_parts[2], out_parts[3], out_parts[8])
    copy_row_parts(m, out_rows, recency, importance, cos, affinity, out_parts)
    return m


@njit(cache=True)
def recall_query(query_text, term_ids, query, check_unit, now, term_data, term_offsets,
                 term_table, df, n_live, indptr, post_docs, post_tfs, main_upto, n_docs,
                 doc_start, doc_nterms, fwd_terms, fwd_tfs, doc_norm, doc_live, doc_key, k1, b,
                 avgdl, term_weight, matrix, has_vec, updated_at, weight, decay_per_hour, w_rec,
                 w_imp, memo_key, memo_at, memo_factor, log_table, affinity, eligible, scored,
                 access, seq, tokens, fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w,
                 w_rel, n_seeds, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor,
                 adj_mix, max_identity, max_user_facts, lead_window, max_entries, budget, bm25, cos,
                 work, out_rows, out_parts, dormant, revive_bar, needs_term, cos_floor, idf_out):
    """One query end to end: BM25 into ``bm25``, cosines into ``cos`` (of the ``eligible`` and
    ``dormant`` rows, 0 for the others: no other row's is read), then what
    :func:`recall_single` does, in one call (each call level of this many arrays costs ~1 µs).

    The query's terms: an ASCII query given as its bytes (``query_text``) is split and looked up
    here (:func:`maclaw_kernels.terms.ascii_query_terms` over the vocabulary's word table);
    a query holding a word the table lacks returns -2 before anything is written (the caller
    tokenizes it and passes term ids); with an empty ``query_text`` the caller's ``term_ids``
    are used. ``query``: its vector (empty:
    none, every cosine 0). With ``check_unit``, a vector that is not finite and of unit length
    (within 1e-6 in its squared norm) returns -1 before anything is written. The five
    arguments that change per call come first, so a caller can keep the rest as one tuple; the
    BM25 index's arrays (:func:`maclaw_kernels.bm25.bm25_query`'s, after the vocabulary's term
    arrays) come next.

    Cue-driven revival (SPEC §0 R9) in the same pass: the ``dormant`` rows (of the query's
    scope; an empty array: revival off) the query cues at least ``revive_bar`` strongly
    (:func:`maclaw_kernels.revival.cue_strength`), and the dormant rows within ``adj_hops``
    conversation links of one, compete with the eligible rows; a dormant row selected has the
    reason code :data:`REASON_REVIVED`. ``needs_term`` (1.0 or 0.0; a float so that it fits the
    knobs of :func:`recall_viewed`): only a dormant row holding a query term is cued, so only
    those rows' cosines are computed first and the rows linked to a cued one's after the cue
    test (:func:`maclaw_kernels.revival.linked_cosines`); ``cos_floor``: the model's, as
    :func:`maclaw_kernels.revival.cue_strength` takes it. ``idf_out[0]``: the query's ``idf_total``, the scale of
    its cue strengths (:func:`maclaw_kernels.revival.query_idf_total`).
    """
    if check_unit and query.shape[0] and not is_unit_vector(query, 1e-6):
        return -1
    if len(query_text):
        term_ids, known = ascii_query_terms(query_text, term_data, term_offsets, term_table)
        if not known:  # a word the fast path has not learned: the caller tokenizes the query
            return -2
    n = updated_at.shape[0]
    bm25[:n] = 0.0
    bm25_query(term_ids, df, n_live, indptr, post_docs, post_tfs, main_upto, n_docs, doc_start,
               doc_nterms, fwd_terms, fwd_tfs, doc_norm, doc_live, doc_key, k1, b, avgdl,
               term_weight, bm25[:n])
    has_vector = query.shape[0] > 0
    if has_vector:
        # only the rows the query may return: the eligible ones and (revival on) the dormant
        # ones it may cue (those holding a query term, when cues need one)
        dot_scores_wanted(matrix, n, has_vec, query, eligible, dormant,
                          bm25[:n] if needs_term != 0.0 else bm25[:0], cos)
    else:
        cos[:n] = 0.0
    idf_total = terms_idf_total(term_ids, df, n_live)
    idf_out[0] = idf_total
    plan = (access, seq, tokens, fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w,
            w_rel, n_seeds, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor,
            adj_mix, max_identity, max_user_facts, lead_window, max_entries, budget)
    recency = (updated_at, weight, now, decay_per_hour, w_rec, w_imp, memo_key, memo_at,
               memo_factor, log_table)
    term = needs_term != 0.0
    if count_cued(dormant, bm25[:n], cos[:n], idf_total, bm25_w, cos_w, has_vector, term,
                  cos_floor, revive_bar) == 0:
        return recall_single(*recency, bm25[:n], cos[:n], affinity, eligible, scored, *plan,
                             work, out_rows, out_parts)
    el, sc = revived_masks(dormant, bm25[:n], cos[:n], idf_total, bm25_w, cos_w, has_vector,
                           term, cos_floor, revive_bar, prev, nxt, adj_hops, eligible, scored)
    if term and has_vector:
        linked_cosines(matrix, has_vec, query, dormant, bm25[:n], el, cos)
    m = recall_single(*recency, bm25[:n], cos[:n], affinity, el, sc, *plan, work, out_rows,
                      out_parts)
    for j in range(m):
        if dormant[out_rows[j]]:
            out_parts[8, j] = REASON_REVIVED
    return m


# recall_query's arguments after the five that change per call, as recall_viewed reads them:
# an array's dtype and dimensions (a row of ``views``), or "" for a scalar (an entry of ``knobs``)
VIEWED_ARGS = (
    ("u1", 1), ("i8", 1), ("i8", 1), ("i8", 1), "", ("i8", 1), ("i4", 1), ("f4", 1), "", "",
    ("i8", 1), ("i4", 1), ("i4", 1), ("f4", 1), ("f4", 1), ("b1", 1), ("i8", 1), "", "", "",
    ("f8", 1), ("f4", 2), ("b1", 1), ("f8", 1), ("f8", 1), "", "", "", ("f8", 1), ("f8", 1),
    ("f8", 1), ("f8", 1), ("f8", 1), ("b1", 1), ("b1", 1),
    # the plan's kernel arguments (KERNEL_ARGS)
    ("i8", 1), ("i8", 1), ("i8", 1), ("i8", 1), ("b1", 1), "", "", "", "", "", "", ("i8", 2),
    ("f8", 2), "", "", ("i8", 1), ("i8", 1), "", "", "", "", "", "", "", "",
    # scratch and outputs, then revival
    ("f8", 1), ("f4", 1), ("f8", 2), ("i8", 1), ("f8", 2), ("b1", 1), "", "", "", ("f8", 1))


@njit(cache=True)
def recall_viewed(query_text, term_ids, query, check_unit, now, views, knobs):
    """:func:`recall_query` with every array after the first five arguments given as a row of
    the address table ``views`` and every scalar as an entry of ``knobs`` (float64), in the order
    of :data:`VIEWED_ARGS` (:mod:`maclaw_kernels.views`: ~5 µs less per call at 500 rows)."""
    v, k = views, knobs
    i64 = np.int64
    return recall_query(
        query_text, term_ids, query, check_unit, now, column(v, 0, np.uint8),
        column(v, 1, np.int64), column(v, 2, np.int64), column(v, 3, np.int64), i64(k[0]),
        column(v, 4, np.int64), column(v, 5, np.int32), column(v, 6, np.float32), i64(k[1]),
        i64(k[2]), column(v, 7, np.int64), column(v, 8, np.int32), column(v, 9, np.int32),
        column(v, 10, np.float32), column(v, 11, np.float32), column(v, 12, np.bool_),
        column(v, 13, np.int64), k[3], k[4], k[5], column(v, 14, np.float64),
        block(v, 15, np.float32), column(v, 16, np.bool_), column(v, 17, np.float64),
        column(v, 18, np.float64), k[6], k[7], k[8], column(v, 19, np.float64),
        column(v, 20, np.float64), column(v, 21, np.float64), column(v, 22, np.float64),
        column(v, 23, np.float64), column(v, 24, np.bool_), column(v, 25, np.bool_),
        column(v, 26, np.int64), column(v, 27, np.int64), column(v, 28, np.int64),
        column(v, 29, np.int64), column(v, 30, np.bool_), i64(k[9]), i64(k[10]), k[11], k[12],
        k[13], i64(k[14]), block(v, 31, np.int64), block(v, 32, np.float64), i64(k[15]), k[16],
        column(v, 33, np.int64), column(v, 34, np.int64), i64(k[17]), k[18], k[19],
        i64(k[20]), i64(k[21]), i64(k[22]), i64(k[23]), i64(k[24]), column(v, 35, np.float64),
        column(v, 36, np.float32), block(v, 37, np.float64), column(v, 38, np.int64),
        block(v, 39, np.float64), column(v, 40, np.bool_), k[25], k[26], k[27],
        column(v, 41, np.float64))


@njit(cache=True, parallel=True)
def recall_batch(base, bm25, cos, affinity, eligible, scored, scope_of, updated_at, access, seq,
                 tokens, fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel,
                 n_seeds, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix,
                 max_identity, max_user_facts, lead_window, max_entries, budget, out_rows,
                 out_score, out_bm25, out_rel, out_graph, out_reason, out_count, dormant, idf,
                 has_vector, needs_term, cos_floor, revive_bar, prior):
    """:func:`recall_one` per query row of ``bm25``/``cos``; query ``q`` takes its masks from
    row ``scope_of[q]`` of ``affinity``/``eligible``/``scored``/``dormant`` (one row per
    distinct project, not one per query). Revival as in :func:`recall_query`, in the same
    pass: ``dormant`` rows (columns 0: revival off) the query cues at least ``revive_bar``
    strongly (its ``idf_total`` ``idf[q]``; with ``needs_term`` only rows holding a query
    term) and those linked to them compete, and are marked
    :data:`REASON_REVIVED` when selected. ``prior``: each query's thread prior per row
    (:mod:`maclaw_kernels.thread_prior`), added to the base scores as ``w_rel × prior``; no
    rows: none."""
    n = base.shape[0]
    for q in prange(bm25.shape[0]):
        s = scope_of[q]
        base_q = base
        if prior.shape[0] > 0:
            base_q = base + w_rel * prior[q, :n]
        el, sc = eligible[s], scored[s]
        if count_cued(dormant[s], bm25[q], cos[q], idf[q], bm25_w, cos_w, has_vector,
                      needs_term, cos_floor, revive_bar) > 0:
            el, sc = revived_masks(dormant[s], bm25[q], cos[q], idf[q], bm25_w, cos_w,
                                   has_vector, needs_term, cos_floor, revive_bar, prev, nxt,
                                   adj_hops, eligible[s], scored[s])
        m = recall_one(base_q, bm25[q], cos[q], affinity[s], el, sc, updated_at, access, seq,
                       tokens, fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel,
                       n_seeds, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor,
                       adj_mix, max_identity, max_user_facts, lead_window, max_entries, budget,
                       np.empty((4, n)), out_rows[q], out_score[q], out_bm25[q], out_rel[q],
                       out_graph[q], out_reason[q])
        if dormant.shape[1] >= n:
            for j in range(m):
                if dormant[s, out_rows[q, j]]:
                    out_reason[q, j] = REASON_REVIVED
        out_count[q] = m
