"""One recall over a store too large for the cache: a parallel pass over the int8 codes of the
vectors keeps each block's best rows, a short serial tail ranks and assembles.

Gives the same rows and parts as :func:`maclaw_kernels.recall.recall_single`: the per-row
arithmetic is the same (:func:`row_recency`, :func:`row_relevance`, the float32 loop of the
dot kernel) and the ranking is exact. The int8 codes bound every row's cosine, so its score
(monotone in the cosine); a row whose upper bound cannot reach the block's ``k``-th lower bound
cannot be among the block's best ``k`` (``quantized.py``), so only the others are scored from
the float32 vectors; and the global top ``k`` lies in the union of every block's top ``k``.
A cosine needed later (a row the graph walk reaches, a fixed or leading row) is computed then.

The bounds need the cosine's part of a score to be known from the cosine alone, which holds for
the raw cosine; with the cosines min-max normalised over the candidates (SPEC R3) every cosine
is needed first, so that mode computes them all (across threads) and ranks densely.
"""

import numpy as np
from numba import njit, prange

from maclaw_kernels.graph import propagate_linked
from maclaw_kernels.quantized import bound_rows, kth_largest, query_norm
from maclaw_kernels.recall import (bm25_hit_range, hit_reason, linked_relevance, recall_single,
                                   refresh_recency, row_recency, row_relevance)
from maclaw_kernels.recall_assemble import pick_identity, select_hits
from maclaw_kernels.topk import top_k_desc
from maclaw_kernels.vectors import dot_scores, dot_scores_parallel, row_dot


@njit(cache=True, inline="always")
def _row_base(updated_at_i, weight_i, now, decay_now, factor_i, w_rec, w_imp, logged):
    """Row base score (recency and importance) as :func:`recall_single` computes it, given
    ``logged`` = :func:`_log_access` of the row."""
    return (w_rec * row_recency(updated_at_i, now, decay_now, factor_i)
            + w_imp * (weight_i + logged))


@njit(cache=True)
def _log_access(access_i, log_table):
    """``ln(1 + access)`` as :func:`maclaw_kernels.recall.base_scores` takes it."""
    if 0 <= access_i < log_table.shape[0]:
        return log_table[access_i]
    return np.log(1.0 + access_i)


@njit(cache=True)
def score_block(matrix, codes, scale, err, has_vec, query, q_norm, slack, updated_at, weight,
                access, seq, now, decay_now, memo_factor, w_rec, w_imp, bm25, affinity, scored,
                norm_mode, lo, hi, bm25_w, cos_w, w_rel, log_table, start, end, cos, score,
                low, high, cand_rows):
    """Rows ``start..end``: score bounds from the int8 codes, then the exact cosine and score of
    every scored row whose upper bound reaches the block's ``k``-th lower bound (others: score
    −inf, cosine NaN), the block's best rows into ``cand_rows`` (−1 pads). Returns how many
    rows were scored."""
    bound_rows(codes, scale, err, has_vec, query, q_norm, slack, start, end, low, high)
    count = 0
    for i in range(start, end):
        if not scored[i]:
            low[i] = -np.inf
            continue
        count += 1
        a = access[i]  # inline, not _log_access: a helper taking the table costs ~5× per row
        logged = log_table[a] if 0 <= a < log_table.shape[0] else np.log(1.0 + a)
        base = _row_base(updated_at[i], weight[i], now, decay_now, memo_factor[i], w_rec, w_imp,
                         logged)
        score[i] = base  # kept for the exact pass below
        s1 = base + w_rel * row_relevance(bm25[i], low[i], affinity[i], norm_mode, lo, hi, 0,
                                          0.0, 0.0, bm25_w, cos_w)[1]
        s2 = base + w_rel * row_relevance(bm25[i], high[i], affinity[i], norm_mode, lo, hi, 0,
                                          0.0, 0.0, bm25_w, cos_w)[1]
        low[i], high[i] = min(s1, s2), max(s1, s2)
    floor = kth_largest(low[start:end], end - start, cand_rows.shape[0])
    for i in range(start, end):
        if scored[i] and high[i] >= floor:
            cos[i] = row_dot(matrix, i, query) if has_vec[i] else np.float32(0.0)
            score[i] += w_rel * row_relevance(bm25[i], cos[i], affinity[i], norm_mode, lo, hi,
                                              0, 0.0, 0.0, bm25_w, cos_w)[1]
        else:
            cos[i] = np.nan
            score[i] = -np.inf
    top = top_k_desc(score[start:end], access[start:end], seq[start:end], scored[start:end],
                     cand_rows.shape[0])
    cand_rows[:] = -1
    cand_rows[:top.shape[0]] = top + start
    return count


@njit(cache=True, parallel=True)
def score_blocks(matrix, codes, scale, err, has_vec, query, slack, updated_at, weight, access,
                 seq, now, decay_now, memo_factor, w_rec, w_imp, log_table, bm25, affinity,
                 scored, norm_mode, lo, hi, bm25_w, cos_w, w_rel, block, cos, score, low, high,
                 cand_rows, n_scored):
    """:func:`score_block` for blocks of ``block`` rows across numba's threads; block ``b``
    writes ``cand_rows[b]`` and ``n_scored[b]``."""
    n = updated_at.shape[0]
    q_norm = query_norm(query)
    for b in prange(cand_rows.shape[0]):
        s = b * block
        n_scored[b] = score_block(matrix, codes, scale, err, has_vec, query, q_norm, slack,
                                  updated_at, weight, access, seq, now, decay_now,
                                  memo_factor, w_rec, w_imp, bm25, affinity, scored, norm_mode,
                                  lo, hi, bm25_w, cos_w, w_rel, log_table, s, min(n, s + block),
                                  cos, score, low, high, cand_rows[b])


@njit(cache=True)
def fill_cosines(rows, matrix, has_vec, query, cos):
    """The exact cosine of every row of ``rows`` the block pass left as NaN."""
    for r in rows:
        if r >= 0 and np.isnan(cos[r]):
            cos[r] = row_dot(matrix, r, query) if has_vec[r] else np.float32(0.0)


@njit(cache=True)
def top_of(rows, score, access, seq, k):
    """The best ``k`` of the distinct ``rows`` (any order, −1 ignored) by ``score[row]``, as
    :func:`top_k_desc` ranks them over the whole array."""
    rows = np.unique(rows[rows >= 0])  # row order, so full ties break as they do densely
    top = top_k_desc(score[rows], access[rows], seq[rows], np.ones(rows.shape[0], np.bool_), k)
    return rows[top]


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
def row_parts(r, updated_at, weight, access, now, decay_now, memo_factor, log_table, w_rec,
              w_imp, bm25, cos, affinity, eligible, norm_mode, lo, hi, bm25_w, cos_w):
    """(recency, importance, base, normalised bm25, relevance) of row ``r``, as the dense
    kernels compute them."""
    rec = row_recency(updated_at[r], now, decay_now, memo_factor[r])
    imp = weight[r] + _log_access(access[r], log_table)
    bn, rel = 0.0, 0.0
    if eligible[r]:
        bn, rel = row_relevance(bm25[r], cos[r], affinity[r], norm_mode, lo, hi, 0, 0.0, 0.0,
                                bm25_w, cos_w)
    return rec, imp, w_rec * rec + w_imp * imp, bn, rel


@njit(cache=True)
def along_links(seeds, prev, nxt, adj_hops):
    """Every row at most ``adj_hops`` conversation links before or after a seed (seeds
    excluded; a row may repeat)."""
    found = np.empty(2 * seeds.shape[0] * max(adj_hops, 0), np.int64)
    m = 0
    for s in seeds:
        for links in (prev, nxt):
            node = s
            for _ in range(adj_hops):
                node = links[node]
                if node < 0:
                    break
                found[m] = node
                m += 1
    keep = np.ones(m, np.bool_)
    for j in range(m):
        for s in seeds:
            keep[j] = keep[j] and found[j] != s
    return found[:m][keep]


@njit(cache=True)
def rank_sparse(top, k, n_seeds, hops, hop_factor, nbr, edge_w, prev, nxt, adj_hops, adj_factor,
                adj_mix, scored, access, seq, w_rel, score, parts_args, vec_args):
    """:func:`maclaw_kernels.recall.rerank_with_graph` over ``top`` and the rows the walk can
    reach (``score`` is updated for the rows that gain; their cosines are filled in from
    ``vec_args`` = matrix, has_vec, query, cos): returns the top ``k`` rows and the dense
    values the walk gave each row along the similarity edges and the conversation links (both
    empty when no walk ran)."""
    seeds = top[:min(n_seeds, top.shape[0])]
    if (hops <= 0 and adj_hops <= 0) or seeds.shape[0] == 0:
        return top[:k], np.zeros(0), np.zeros(0)
    seed_rel = np.empty(seeds.shape[0])
    for j in range(seeds.shape[0]):
        seed_rel[j] = row_parts(seeds[j], *parts_args)[4]
    sim, link = propagate_linked(seeds, seed_rel, nbr, edge_w, hops, hop_factor, prev, nxt,
                                 adj_hops, adj_factor, scored)[:2]
    reach = np.unique(np.concatenate((within_hops(seeds, nbr, max(hops, 0)),
                                      along_links(seeds, prev, nxt, adj_hops))))
    reach = reach[scored[reach]]
    fill_cosines(reach, *vec_args)
    for r in reach:
        if sim[r] > 0.0 or link[r] > 0.0:
            _rec, _imp, base, _bn, rel = row_parts(r, *parts_args)
            g = linked_relevance(rel, sim[r], link[r], adj_mix)
            if g > rel:
                score[r] = base + w_rel * g
    return top_of(np.concatenate((top, reach)), score, access, seq, k), sim, link


@njit(cache=True)
def recall_large(matrix, codes, scale, err, slack, has_vec, query, updated_at, weight, now,
                 decay_per_hour, w_rec, w_imp, memo_key, memo_at, memo_factor, log_table, bm25,
                 affinity, eligible, scored, access, seq, tokens, fixed_rows, user_fact,
                 norm_mode, cos_mode, bm25_w, cos_w, w_rel, n_seeds, nbr, edge_w, hops,
                 hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, max_identity, max_user_facts,
                 lead_window, max_entries, budget, block, cos, score, low, high, out_rows,
                 out_parts):
    """:func:`maclaw_kernels.recall.recall_single` from the query vector (same ``out_parts``
    rows), given the int8 ``codes``, ``scale`` and error bound ``err`` of every row
    (``quantized.quantize_rows``) and the rounding ``slack``; ``cos`` (float32), ``score``,
    ``low`` and ``high`` (float64), one per row, are scratch a caller may reuse; the recency
    memo and ``log_table`` are those of :func:`maclaw_kernels.recall.base_scores`."""
    n = updated_at.shape[0]
    plan = (fixed_rows, user_fact, norm_mode, cos_mode, bm25_w, cos_w, w_rel, n_seeds, nbr,
            edge_w, hops, hop_factor, prev, nxt, adj_hops, adj_factor, adj_mix, max_identity,
            max_user_facts, lead_window, max_entries, budget)
    if cos_mode != 0:  # min-max cosines need every cosine: exact, then ranked densely
        dot_scores(matrix, n, has_vec, query, cos)  # the single-query path's bits
        return recall_single(updated_at, weight, now, decay_per_hour, w_rec, w_imp, memo_key,
                             memo_at, memo_factor, log_table, bm25, cos, affinity, eligible,
                             scored, access, seq, tokens, *plan, np.empty((7, n)), out_rows,
                             out_parts)
    decay_now = refresh_recency(updated_at, now, decay_per_hour, memo_key, memo_at, memo_factor)
    lo, hi = bm25_hit_range(bm25, eligible) if norm_mode != 0 else (np.inf, 0.0)
    k_top = max(max_entries + 8, lead_window, n_seeds)
    n_blocks = (n + block - 1) // block
    cand_rows = np.empty((n_blocks, k_top), np.int64)
    counts = np.zeros(n_blocks, np.int64)
    score_blocks(matrix, codes, scale, err, has_vec, query, slack, updated_at, weight, access,
                 seq, now, decay_now, memo_factor, w_rec, w_imp, log_table, bm25, affinity,
                 scored, norm_mode, lo, hi, bm25_w, cos_w, w_rel, block, cos, score, low, high,
                 cand_rows, counts)
    n_scored = counts.sum()
    k = min(max(max_entries + 8, lead_window), n_scored)
    top = top_of(cand_rows.ravel(), score, access, seq, max(k, n_seeds))
    parts_args = (updated_at, weight, access, now, decay_now, memo_factor, log_table, w_rec,
                  w_imp, bm25, cos, affinity, eligible, norm_mode, lo, hi, bm25_w, cos_w)
    ranked, sim, link = rank_sparse(top, k, n_seeds, hops, hop_factor, nbr, edge_w, prev, nxt,
                                 adj_hops, adj_factor, adj_mix, scored, access, seq, w_rel, score,
                                 parts_args, (matrix, has_vec, query, cos))
    fill_cosines(ranked, matrix, has_vec, query, cos)
    ranked_rel = np.empty(ranked.shape[0])
    for j in range(ranked.shape[0]):
        r = ranked[j]
        rel = row_parts(r, *parts_args)[4]
        ranked_rel[j] = (linked_relevance(rel, sim[r], link[r], adj_mix) if sim.shape[0]
                         else rel)
    fixed = pick_identity(fixed_rows, eligible, access, updated_at, seq, max_identity)
    m = select_hits(fixed, ranked, ranked_rel, user_fact, max_user_facts, lead_window, tokens,
                    max_entries, budget, out_rows, out_parts[8])
    if m < max_entries and k < n_scored:  # entries over budget left it short: rank deeper
        dot_scores_parallel(matrix, n, has_vec, query, cos)  # row_dot's bits, as above
        return recall_single(updated_at, weight, now, decay_per_hour, w_rec, w_imp, memo_key,
                             memo_at, memo_factor, log_table, bm25, cos, affinity, eligible,
                             scored, access, seq, tokens, *plan, np.empty((7, n)), out_rows,
                             out_parts)
    fill_cosines(out_rows[:m], matrix, has_vec, query, cos)  # fixed and leading rows
    for j in range(m):
        r = out_rows[j]
        rec, imp, base, bn, rel = row_parts(r, *parts_args)
        graph = 0.0
        if sim.shape[0] and scored[r]:
            graph = max(linked_relevance(rel, sim[r], link[r], adj_mix) - rel, 0.0)
        out_parts[0, j] = base + w_rel * (rel + graph)
        out_parts[1, j] = bn
        out_parts[2, j] = rel
        out_parts[3, j] = graph
        out_parts[4, j] = rec
        out_parts[5, j] = imp
        out_parts[6, j] = max(np.float64(cos[r]), 0.0)
        out_parts[7, j] = affinity[r]
        out_parts[8, j] = hit_reason(out_parts[8, j], graph)
    return m
