"""Recall scoring (SPEC §6): fusion, seeds, graph propagation, ranked selection within a budget."""

import numpy as np
from numba import njit, prange

from maclaw_kernels.graph import propagate_relevance
from maclaw_kernels.topk import top_k_desc


@njit(cache=True)
def fuse_relevance(bm25, cos, affinity, scored, norm_mode, bm25_w, cos_w, bm25_out, rel_out):
    """``rel = bm25_w·norm(bm25) + cos_w·max(cos, 0) + affinity`` over ``scored`` rows.

    ``norm_mode``: 0 raw, 1 divide by the best BM25, 2 min-max over the hits (a lone or all-equal
    hit maps to 1).
    """
    n = scored.shape[0]
    lo = np.inf
    hi = 0.0
    for i in range(n if norm_mode != 0 else 0):
        if scored[i] and bm25[i] > 0.0:
            lo = min(lo, bm25[i])
            hi = max(hi, bm25[i])
    for i in range(n):
        if not scored[i]:
            bm25_out[i] = 0.0
            rel_out[i] = 0.0
            continue
        x = bm25[i]
        if x > 0.0 and norm_mode == 1:
            x = x / hi
        elif x > 0.0 and norm_mode == 2:
            x = 1.0 if hi == lo else (x - lo) / (hi - lo)
        bm25_out[i] = x
        rel_out[i] = bm25_w * x + cos_w * max(cos[i], 0.0) + affinity[i]


@njit(cache=True)
def base_scores(updated_at, weight, access, now, decay_per_hour, w_rec, w_imp,
                recency_out, importance_out, base_out):
    """Recency and importance of every row, and their weighted sum."""
    # access counts are small integers: one log per distinct count, not one per row
    log_table = np.full(64, -1.0)
    for i in range(updated_at.shape[0]):
        hours = max(now - updated_at[i], 0.0) / 3600.0
        recency_out[i] = np.exp(-decay_per_hour * hours)
        a = access[i]
        if 0 <= a < 64:
            if log_table[a] < 0.0:
                log_table[a] = np.log(1.0 + a)
            importance_out[i] = weight[i] + log_table[a]
        else:
            importance_out[i] = weight[i] + np.log(1.0 + a)
        base_out[i] = w_rec * recency_out[i] + w_imp * importance_out[i]


@njit(cache=True)
def rank_scored(base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w, hops, hop_factor,
                k, score_out, graph_out):
    """Score, propagate relevance from the top ``n_seeds`` through the graph, re-score, and return
    the top ``k`` scored rows (score desc, access desc, seq asc).

    Propagation only raises the scores of the rows it reaches, so the final top ``k`` lies within
    the first ranking's top ``k`` plus those rows: one full pass, then a pass over a mask.
    """
    n = base.shape[0]
    for i in range(n):
        score_out[i] = base[i] + w_rel * rel[i] if scored[i] else -np.inf
        graph_out[i] = 0.0
    top = top_k_desc(score_out, access, seq, scored, max(k, n_seeds))
    seeds = top[:min(n_seeds, top.shape[0])]
    if hops <= 0 or seeds.shape[0] == 0:
        return top[:k]
    gained = propagate_relevance(seeds, rel[seeds], nbr, edge_w, hops, hop_factor, scored)
    candidate = np.zeros(n, np.bool_)
    candidate[top] = True
    for i in range(n):
        if gained[i] > rel[i]:
            graph_out[i] = gained[i] - rel[i]
            score_out[i] = base[i] + w_rel * gained[i]
            candidate[i] = True
    return top_k_desc(score_out, access, seq, candidate, k)


@njit(cache=True)
def select_within_budget(pinned_rows, ranked_rows, tokens, max_entries, budget, out):
    """Assemble: every ``pinned_rows`` entry (self identity) always, then ``ranked_rows`` in order
    while fewer than ``max_entries``; an entry over the remaining budget is skipped, not a stop.
    Returns how many rows were written to ``out``."""
    n = 0
    used = 0
    for r in pinned_rows:
        out[n] = r
        n += 1
        used += tokens[r]
    for r in ranked_rows:
        if n >= max_entries:
            break
        if r < 0:
            continue
        if used + tokens[r] > budget:
            continue
        out[n] = r
        n += 1
        used += tokens[r]
    return n


@njit(cache=True)
def recall_one(base, bm25, cos, affinity, eligible, scored, access, seq, tokens, fixed_rows,
               lead_rows, norm_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w, hops,
               hop_factor, max_entries, budget, out_rows, out_score, out_bm25, out_rel,
               out_graph):
    """One query end to end; writes the selected rows and their score parts, returns the count.

    ``fixed_rows`` are always included (self identity); ``lead_rows`` come before the ranked rows
    (user facts). The ranked candidate list grows until the budget loop is satisfied.
    """
    n = base.shape[0]
    bm25n = np.empty(n)
    rel = np.empty(n)
    score = np.empty(n)
    graph = np.empty(n)
    fuse_relevance(bm25, cos, affinity, eligible, norm_mode, bm25_w, cos_w, bm25n, rel)
    n_scored = 0
    for i in range(n):
        if scored[i]:
            n_scored += 1
    k = min(max_entries + 8, n_scored)
    while True:
        ranked = rank_scored(base, rel, scored, access, seq, w_rel, n_seeds, nbr, edge_w, hops,
                             hop_factor, k, score, graph)
        cand = np.concatenate((lead_rows, ranked))
        m = select_within_budget(fixed_rows, cand, tokens, max_entries, budget, out_rows)
        if m >= max_entries or k >= n_scored:
            break
        k = min(2 * k, n_scored)
    for j in range(m):
        r = out_rows[j]
        out_score[j] = base[r] + w_rel * (rel[r] + graph[r])
        out_bm25[j] = bm25n[r]
        out_rel[j] = rel[r]
        out_graph[j] = graph[r]
    return m


@njit(cache=True)
def recall_single(updated_at, weight, now, decay_per_hour, w_rec, w_imp, bm25, cos, affinity,
                  eligible, scored, access, seq, tokens, fixed_rows, lead_rows, norm_mode, bm25_w,
                  cos_w, w_rel, n_seeds, nbr, edge_w, hops, hop_factor, max_entries, budget,
                  out_rows, out_parts):
    """:func:`base_scores` then :func:`recall_one`, in one call for the single-query path.

    ``out_parts`` rows, per selected row: score, bm25, rel, graph (as :func:`recall_one`), then
    recency, importance, max(cos, 0) and affinity.
    """
    n = updated_at.shape[0]
    recency = np.empty(n)
    importance = np.empty(n)
    base = np.empty(n)
    base_scores(updated_at, weight, access, now, decay_per_hour, w_rec, w_imp, recency,
                importance, base)
    m = recall_one(base, bm25, cos, affinity, eligible, scored, access, seq, tokens, fixed_rows,
                   lead_rows, norm_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w, hops,
                   hop_factor, max_entries, budget, out_rows, out_parts[0], out_parts[1],
                   out_parts[2], out_parts[3])
    for j in range(m):
        r = out_rows[j]
        out_parts[4, j] = recency[r]
        out_parts[5, j] = importance[r]
        out_parts[6, j] = max(np.float64(cos[r]), 0.0)
        out_parts[7, j] = affinity[r]
    return m


@njit(cache=True, parallel=True)
def recall_batch(base, bm25, cos, affinity, eligible, scored, access, seq, tokens, fixed_rows,
                 lead_rows, norm_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w, hops,
                 hop_factor, max_entries, budget, out_rows, out_score, out_bm25, out_rel,
                 out_graph, out_count):
    """:func:`recall_one` per query row of ``bm25``/``cos``/``affinity``/``eligible``/``scored``."""
    for q in prange(bm25.shape[0]):
        out_count[q] = recall_one(base, bm25[q], cos[q], affinity[q], eligible[q], scored[q],
                                  access, seq, tokens, fixed_rows, lead_rows, norm_mode, bm25_w,
                                  cos_w, w_rel, n_seeds, nbr, edge_w, hops, hop_factor,
                                  max_entries, budget, out_rows[q], out_score[q], out_bm25[q],
                                  out_rel[q], out_graph[q])
