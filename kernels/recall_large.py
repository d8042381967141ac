"""One recall over a store too large for the cache: a parallel pass streams the vectors and keeps
each block's best rows, a short serial tail ranks and assembles.

Gives the same rows and parts as :func:`maclaw_kernels.recall.recall_single`: the per-row
arithmetic is the same (:func:`row_recency`, :func:`row_relevance`, the dot kernel on blocks that
start on multiples of four rows) and the ranking is exact, because the global top ``k`` lies in
the union of every block's top ``k``. Nothing per row is written but the cosines, so memory
traffic stays that of the matrix itself.
"""

import numpy as np
from numba import njit, prange

from maclaw_kernels.graph import propagate_relevance
from maclaw_kernels.recall import (bm25_hit_range, log_access_table, recall_single, row_recency,
                                   row_relevance, select_within_budget)
from maclaw_kernels.vectors import dot_scores


@njit(cache=True)
def ahead(score_a, access_a, seq_a, score_b, access_b, seq_b):
    """Row a ranks before row b: score desc, then access desc, then seq asc."""
    if score_a != score_b:
        return score_a > score_b
    if access_a != access_b:
        return access_a > access_b
    return seq_a < seq_b


@njit(cache=True)
def offer(rows, scores, m, row, score, access, seq):
    """Insert ``row`` into the ranked buffer ``rows``/``scores`` holding ``m`` entries (capacity
    ``rows.shape[0]``) if it ranks high enough; returns the new count."""
    k = rows.shape[0]
    if k == 0:
        return 0
    if m == k:
        last = rows[k - 1]
        if not ahead(score, access[row], seq[row], scores[k - 1], access[last], seq[last]):
            return m
        p = k - 1
    else:
        p = m
        m += 1
    while p > 0 and ahead(score, access[row], seq[row], scores[p - 1], access[rows[p - 1]],
                          seq[rows[p - 1]]):
        rows[p] = rows[p - 1]
        scores[p] = scores[p - 1]
        p -= 1
    rows[p] = row
    scores[p] = score
    return m


@njit(cache=True, parallel=True)
def score_blocks(matrix, has_vec, query, updated_at, weight, access, seq, now, decay_per_hour,
                 w_rec, w_imp, bm25, affinity, scored, norm_mode, lo, hi, bm25_w, cos_w, w_rel,
                 block, cos, cand_rows, cand_scores, n_scored):
    """Cosines of every row into ``cos``; block ``b`` (rows ``b·block`` on, ``block`` a multiple
    of 4) ranks its ``scored`` rows into ``cand_rows[b]``/``cand_scores[b]`` (−1 pads) and
    counts them into ``n_scored[b]``."""
    n = updated_at.shape[0]
    log_table = log_access_table(64)
    for b in prange(cand_rows.shape[0]):
        s = b * block
        e = min(n, s + block)
        dot_scores(matrix[s:e], e - s, has_vec[s:e], query, cos[s:e])
        rows = cand_rows[b]
        scores = cand_scores[b]
        rows[:] = -1
        m = 0
        count = 0
        for i in range(s, e):
            if not scored[i]:
                continue
            count += 1
            a = access[i]
            imp = weight[i] + (log_table[a] if 0 <= a < 64 else np.log(1.0 + a))
            base = w_rec * row_recency(updated_at[i], now, decay_per_hour) + w_imp * imp
            rel = row_relevance(bm25[i], cos[i], affinity[i], norm_mode, lo, hi, bm25_w,
                                cos_w)[1]
            score = base + w_rel * rel
            if m == rows.shape[0] and m > 0:
                last = rows[m - 1]
                if not ahead(score, a, seq[i], scores[m - 1], access[last], seq[last]):
                    continue
            m = offer(rows, scores, m, i, score, access, seq)
        n_scored[b] = count


@njit(cache=True)
def merge_candidates(cand_rows, cand_scores, k, access, seq):
    """The top ``k`` of every block's candidates: ``(rows, scores)`` ranked."""
    rows = np.full(k, -1, np.int64)
    scores = np.empty(k)
    m = 0
    for b in range(cand_rows.shape[0]):
        for j in range(cand_rows.shape[1]):
            if cand_rows[b, j] >= 0:
                m = offer(rows, scores, m, cand_rows[b, j], cand_scores[b, j], access, seq)
    return rows[:m], scores[:m]


@njit(cache=True)
def within_hops(seeds, nbr, hops):
    """Every row at most ``hops`` edges from ``seeds`` (seeds excluded, each row once)."""
    found = np.empty(0, np.int64)
    frontier = seeds
    for _ in range(hops):
        nxt = nbr[frontier].ravel()
        nxt = nxt[nxt >= 0]
        if nxt.shape[0] == 0:
            break
        found = np.concatenate((found, nxt))
        frontier = np.unique(nxt)
    found = np.unique(found)
    keep = np.ones(found.shape[0], np.bool_)
    for j in range(found.shape[0]):
        for s in seeds:
            keep[j] = keep[j] and found[j] != s
    return found[keep]


@njit(cache=True)
def row_parts(r, updated_at, weight, access, now, decay_per_hour, w_rec, w_imp, bm25, cos,
              affinity, eligible, norm_mode, lo, hi, bm25_w, cos_w):
    """(recency, importance, base, normalised bm25, relevance) of row ``r``, as the dense
    kernels compute them."""
    rec = row_recency(updated_at[r], now, decay_per_hour)
    imp = weight[r] + np.log(1.0 + access[r])
    bn, rel = 0.0, 0.0
    if eligible[r]:
        bn, rel = row_relevance(bm25[r], cos[r], affinity[r], norm_mode, lo, hi, bm25_w, cos_w)
    return rec, imp, w_rec * rec + w_imp * imp, bn, rel


@njit(cache=True)
def rank_sparse(top, top_scores, k, n_seeds, hops, hop_factor, nbr, edge_w, scored, access, seq,
                w_rel, parts_args):
    """:func:`maclaw_kernels.recall.rerank_with_graph` on the candidate rows only: returns the
    top ``k`` rows and the dense relevance each row gained (zeros when no walk ran)."""
    seeds = top[:min(n_seeds, top.shape[0])]
    gained = np.zeros(0)
    if hops <= 0 or seeds.shape[0] == 0:
        return top[:k], gained
    seed_rel = np.empty(seeds.shape[0])
    for j in range(seeds.shape[0]):
        seed_rel[j] = row_parts(seeds[j], *parts_args)[4]
    gained = propagate_relevance(seeds, seed_rel, nbr, edge_w, hops, hop_factor, scored)
    ranked = np.full(k, -1, np.int64)
    scores = np.empty(k)
    m = 0
    for j in range(top.shape[0]):
        r = top[j]
        score = top_scores[j]
        if gained[r] > 0.0:
            _rec, _imp, base, _bn, rel = row_parts(r, *parts_args)
            if gained[r] > rel:
                score = base + w_rel * gained[r]
        m = offer(ranked, scores, m, r, score, access, seq)
    reach = within_hops(seeds, nbr, hops)
    for r in reach:
        if not scored[r] or gained[r] <= 0.0:
            continue
        is_top = False
        for t in top:
            is_top = is_top or t == r
        _rec, _imp, base, _bn, rel = row_parts(r, *parts_args)
        if not is_top and gained[r] > rel:
            m = offer(ranked, scores, m, r, base + w_rel * gained[r], access, seq)
    return ranked[:m], gained


@njit(cache=True)
def recall_large(matrix, has_vec, query, updated_at, weight, now, decay_per_hour, w_rec, w_imp,
                 bm25, affinity, eligible, scored, access, seq, tokens, fixed_rows, lead_rows,
                 norm_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w, hops, hop_factor,
                 max_entries, budget, block, cos, out_rows, out_parts):
    """:func:`maclaw_kernels.recall.recall_single` from the query vector (same ``out_parts``
    rows); ``cos`` (float32, one per row) is scratch a caller may reuse."""
    n = updated_at.shape[0]
    lo, hi = bm25_hit_range(bm25, eligible) if norm_mode != 0 else (np.inf, 0.0)
    k_top = max(max_entries + 8, n_seeds)
    n_blocks = (n + block - 1) // block
    cand_rows = np.empty((n_blocks, k_top), np.int64)
    cand_scores = np.empty((n_blocks, k_top))
    counts = np.zeros(n_blocks, np.int64)
    score_blocks(matrix, has_vec, query, updated_at, weight, access, seq, now, decay_per_hour,
                 w_rec, w_imp, bm25, affinity, scored, norm_mode, lo, hi, bm25_w, cos_w, w_rel,
                 block, cos, cand_rows, cand_scores, counts)
    n_scored = counts.sum()
    k = min(max_entries + 8, n_scored)
    top, top_scores = merge_candidates(cand_rows, cand_scores, max(k, n_seeds), access, seq)
    parts_args = (updated_at, weight, access, now, decay_per_hour, w_rec, w_imp, bm25, cos,
                  affinity, eligible, norm_mode, lo, hi, bm25_w, cos_w)
    ranked, gained = rank_sparse(top, top_scores, k, n_seeds, hops, hop_factor, nbr, edge_w,
                                 scored, access, seq, w_rel, parts_args)
    m = select_within_budget(fixed_rows, np.concatenate((lead_rows, ranked)), tokens,
                             max_entries, budget, out_rows)
    if m < max_entries and k < n_scored:  # entries over budget left it short: rank deeper
        return recall_single(updated_at, weight, now, decay_per_hour, w_rec, w_imp, bm25, cos,
                             affinity, eligible, scored, access, seq, tokens, fixed_rows,
                             lead_rows, norm_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w,
                             hops, hop_factor, max_entries, budget, out_rows, out_parts)
    for j in range(m):
        r = out_rows[j]
        rec, imp, base, bn, rel = row_parts(r, *parts_args)
        graph = 0.0
        if gained.shape[0] and scored[r] and gained[r] > rel:
            graph = gained[r] - rel
        out_parts[0, j] = base + w_rel * (rel + graph)
        out_parts[1, j] = bn
        out_parts[2, j] = rel
        out_parts[3, j] = graph
        out_parts[4, j] = rec
        out_parts[5, j] = imp
        out_parts[6, j] = max(np.float64(cos[r]), 0.0)
        out_parts[7, j] = affinity[r]
    return m
