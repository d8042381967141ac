"""Recall ranking (docs/design.md, "Recall"): one query's BM25, cosines and thread prior over
every row → the selected rows and their score parts.

The stages, in the order :func:`rank_one` runs them: the memory-stream base score (recency
and importance, plus the thread prior); revival (dormant rows the query cues strongly join the
candidates); fusion (normalised BM25 and cosine plus project affinity and, for a query that
names a time, how near each row's save time is: :func:`near_in_time`); the top rows; the graph
and conversation-link walk from the best seeds; the identity / user-fact block; the entry and
token budget. :func:`recall_block` runs the whole pipeline, BM25 and cosines first, for a block
of queries (one, or a batch's share on one thread).

The arrays travel as the records below, built in one place
(:mod:`maclaw_fast.memory.plan`); every scalar knob is a float64 of :data:`Knobs`.

A stage with one caller is inlined at numba's level (``inline="always"``): numba links every
compiled callee into each caller and LLVM optimises it again there, so each level of the call
tree costs compile time on a fresh install (measured: ~1.4 s of the memory warmup's ~18 s).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from maclaw_kernels.bm25 import Postings, bm25_query
from maclaw_kernels.graph import propagate_linked
from maclaw_kernels.recall_assemble import (KIND_RANKED, ends_of_range, kth_relevance,
                                            lead_facts, norm_cos_rows, pick_identity,
                                            select_hits)
from maclaw_kernels.revival import cue_strength, revived_masks, terms_idf_total
from maclaw_kernels.thread_prior import thread_prior
from maclaw_kernels.topk import top_k_desc, top_k_known
from maclaw_kernels.vectors import dot_tile

# Per-row columns of a store (views of its table and graph) and the recency memo:
# ``updated_at`` f8, ``weight`` f8 (category importance), ``access`` i8, ``seq`` i8 (store
# order), ``tokens`` i8 (budget cost); ``nbr`` i8[n, slots] / ``edge_w`` f8[n, slots] the
# similarity edges; ``prev`` / ``nxt`` i8 the conversation links (-1 = none); ``memo_key``
# f8[2], ``memo_at`` f8[n], ``memo_factor`` f8[n] (:func:`refresh_recency`); ``log_table``
# f8 with ``log_table[a] = ln(1 + a)`` for small access counts; ``created_at`` f8 (save time).
Rows = namedtuple("Rows", ["updated_at", "weight", "access", "seq", "tokens", "nbr", "edge_w",
                           "prev", "nxt", "memo_key", "memo_at", "memo_factor", "log_table",
                           "created_at"])

# Which rows one recall may return: ``eligible`` b1 (candidates, the rows ranked: active, in
# scope), ``affinity`` f8 (project bonus), ``dormant`` b1 (dormant rows of the scope; length 0:
# revival off), ``fixed`` i8 (self-identity candidates, store order), ``user_facts`` i8 (the
# user-fact rows of the view, ascending; none: no lead to look for).
Scope = namedtuple("Scope", ["eligible", "affinity", "dormant", "fixed", "user_facts"])

# The scoring knobs, every one a float64 (one tuple type, one compiled specialization).
Knobs = namedtuple("Knobs", [
    "decay_per_hour", "w_rec", "w_imp", "w_rel", "bm25_norm", "cos_norm", "n_seeds", "hops",
    "hop_factor", "adj_hops", "adj_factor", "adj_mix", "max_identity", "max_user_facts",
    "lead_window", "max_entries", "budget", "revive_bar", "revive_needs_term", "time_weight",
    "time_scale"])

# The knobs a query's language sets (float64 each): the model's cosine floor, ``cos_spread``
# (× the model's reach) and the BM25 and cosine weights; a store's unless a Block row says.
Scales = namedtuple("Scales", ["cos_floor", "cos_spread", "bm25_w", "cos_w"])

# What every query reads of the store's indexes: the BM25 ``postings``
# (:data:`maclaw_kernels.bm25.Postings` but its ``term_weight`` scratch, :data:`Work`'s is
# used: one array fewer to pass), the unit vectors ``matrix`` f4[n, d] and ``has_vec`` b1, and
# ``doc_k`` f8 every BM25 document's :func:`maclaw_kernels.bm25.length_terms` (empty: the
# kernel computes them).
Corpus = namedtuple("Corpus", ["postings", "matrix", "has_vec", "doc_k"])

# The conversation threads of the thread prior (``n_threads`` 0: the prior does not apply):
# ``postings`` the threads as BM25 documents (:data:`Postings` but its ``term_weight``, as in
# :data:`Corpus`; thread ``t`` keyed ``t``),
# ``thread_of`` i8[n], ``member`` b1[n], ``vnorm`` f8[threads] (length of each thread's vector
# sum), then ``n_threads``, ``w_bm25``, ``w_cos`` as float64.
Threads = namedtuple("Threads", ["postings", "thread_of", "member", "vnorm", "n_threads",
                                 "w_bm25", "w_cos"])

# A block of queries: query ``q``'s vocabulary ids are ``term_ids[term_indptr[q]:
# term_indptr[q + 1]]`` (-1 = unknown), its unit vector ``vectors[q]`` (read only when
# ``has_vector``); ``bm25`` / ``cos`` f8/f4[q, n] computed beforehand (a large store scores
# across threads), or with no rows: computed here; ``cos_floor`` f8[q, 4] each query's
# :data:`Scales` (no rows: the store's for every query).
# ``when`` f8[q]: the time each query asks about (NaN: none; no rows: no query names one).
Block = namedtuple("Block", ["term_ids", "term_indptr", "vectors", "has_vector", "bm25", "cos",
                             "cos_floor", "when"])

# One thread's scratch: ``bm25`` f8[n] (every row's, for the last query of the block), ``cos``
# f4[tile, n] (the cosines of up to ``tile`` queries, computed together: each vector row is
# read once per tile; row 0 holds a single query's), ``mat`` f8[7, n], ``term_weight`` f8
# zeroed over the vocabulary.
Work = namedtuple("Work", ["bm25", "cos", "mat", "term_weight"])

# Every row's memory-stream score at time ``at[0]``: ``values`` f8[3, n] (recency, importance,
# base score; :func:`base_scores`), ``at`` f8[1].
Base = namedtuple("Base", ["values", "at"])

# What a block writes: ``rows`` i8[q, width], ``parts`` f8[q, N_PARTS, width], ``count`` i8[q],
# ``best_cue`` f8[q] (the strongest cue among a query's selected rows: the archive is consulted
# below a bar).
Out = namedtuple("Out", ["rows", "parts", "count", "best_cue"])

# rows of ``out_parts``: what each selected row's score is made of
PART_SCORE, PART_BM25, PART_REL, PART_GRAPH = 0, 1, 2, 3
PART_RECENCY, PART_IMPORTANCE, PART_COS, PART_AFFINITY, PART_REASON = 4, 5, 6, 7, 8
N_PARTS = 9
# the hit-reason codes (memory.hits.REASONS): ranked, graph, identity, user fact, revived
REASON_GRAPH = 1.0
REASON_REVIVED = 4.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def recency_epoch(now, decay_per_hour):
    """``now`` rounded down to a multiple of the span over which the decay falls by e^15: every
    call at ``now`` shares the memo's epoch and its factors stay within float64 range."""
    rate = abs(decay_per_hour)
    span = 54000.0 / rate if rate > 1e-12 else 1e300
    return np.floor(now / span) * span


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def refresh_recency(rows, now, decay_per_hour):
    """Bring the memo up to date and return ``decay_now``: ``memo_factor[i] =
    exp(decay·(updated_at[i] − epoch)/3600)`` is recomputed only for rows whose ``updated_at``
    changed, so recency costs a multiply per row, not an exp."""
    epoch = recency_epoch(now, decay_per_hour)
    key, at, factor = rows.memo_key, rows.memo_at, rows.memo_factor
    if key[0] != epoch or key[1] != decay_per_hour:
        at[:] = np.nan
        key[0] = epoch
        key[1] = decay_per_hour
    updated = rows.updated_at
    for i in range(updated.shape[0]):
        if updated[i] != at[i]:
            at[i] = updated[i]
            factor[i] = np.exp(decay_per_hour * (updated[i] - epoch) / 3600.0)
    return np.exp(-decay_per_hour * (now - epoch) / 3600.0)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def base_scores(rows, knobs, now, out):
    """Into ``out`` (f8[3, n]): every row's recency ``exp(-decay·max(now − updated_at, 0)/3600)``,
    importance ``weight + ln(1 + access)`` and their weighted sum, the memory-stream base score
    (the same for every query at ``now``)."""
    decay_now = refresh_recency(rows, now, knobs.decay_per_hour)
    table = rows.log_table
    for i in range(rows.updated_at.shape[0]):
        rec = 1.0 if rows.updated_at[i] >= now else decay_now * rows.memo_factor[i]
        a = rows.access[i]
        imp = rows.weight[i] + (table[a] if 0 <= a < table.shape[0] else np.log(1.0 + a))
        out[0, i] = rec
        out[1, i] = imp
        out[2, i] = knobs.w_rec * rec + knobs.w_imp * imp


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def fuse(bm25, cos, affinity, eligible, knobs, scales, bm25_out, rel_out):
    """``rel = bm25_w·norm(bm25) + cos_w·norm(cos) + affinity`` of the ``eligible`` rows (0
    elsewhere). BM25 by ``bm25_norm``: 0 raw, 1 over the best hit, 2 min-max over the hits (a
    lone or all-equal hit maps to 1); the cosine by ``cos_norm`` (:func:`norm_cos` over the
    ends :func:`cos_ends` gives: the candidates' range, or one tied to the model's
    ``cos_floor``).

    Each loop after the ranges is one expression per row without a branch (a select), so it
    runs on vector registers, divisions included (~2x faster at 1,000 rows, the same bits;
    no kernel checks for a zero divisor, and none is here: see the conditions)."""
    n = bm25.shape[0]
    mode = int(knobs.bm25_norm)
    cos_mode = int(knobs.cos_norm)
    lo = np.inf
    hi = 0.0
    c_lo = np.float32(np.inf)  # float32 as the cosines: a min or max is one of them, exact
    c_hi = np.float32(-np.inf)
    for i in range(n):  # both ranges in one pass over the candidates, one branch a row
        if eligible[i]:
            x = bm25[i]
            lo = min(lo, x if x > 0.0 else np.inf)  # the least hit
            hi = max(hi, x)  # the best hit (0 stays when none is above it)
            c_lo = min(c_lo, cos[i])
            c_hi = max(c_hi, cos[i])
    c_lo, c_hi = ends_of_range(np.float64(c_lo), np.float64(c_hi), cos_mode, scales.cos_floor,
                               scales.cos_spread)
    norm_cos_rows(cos, cos_mode, c_lo, c_hi, rel_out)  # kept in rel_out for the sum below
    if mode == 1 and hi > 0.0:
        for i in range(n):
            x = bm25[i]
            bm25_out[i] = (x / hi if x > 0.0 else x) if eligible[i] else 0.0
    elif mode == 2 and hi > lo:
        width = hi - lo
        for i in range(n):
            x = bm25[i]
            bm25_out[i] = ((x - lo) / width if x > 0.0 else x) if eligible[i] else 0.0
    elif mode == 2:  # one score among the hits: each maps to 1
        for i in range(n):
            x = bm25[i]
            bm25_out[i] = (1.0 if x > 0.0 else x) if eligible[i] else 0.0
    else:  # raw, or no candidate matched a term
        for i in range(n):
            bm25_out[i] = bm25[i] if eligible[i] else 0.0
    bm25_w, cos_w = scales.bm25_w, scales.cos_w
    for i in range(n):
        r = bm25_w * bm25_out[i] + cos_w * rel_out[i] + affinity[i]
        rel_out[i] = r if eligible[i] else 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def linked_relevance(own, sim, link, mix):
    """A row the walk reached: the larger of ``own`` and ``sim`` (similarity edges); along the
    conversation links ``mix`` 0 keeps the larger too, ``mix`` > 0 adds ``mix·link`` to its own
    (a reply keeps its own match and gains a share of the question it answers)."""
    v = max(own, sim)
    if mix <= 0.0:
        return max(v, link)
    if link > 0.0:
        return max(v, own + mix * link)
    return v


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def walk_leaves(seeds, rows, hops, adj_hops):
    """Whether a walk from ``seeds`` can reach a row: a seed has a similarity edge (``hops`` >
    0) or a conversation link (``adj_hops`` > 0). A store without either skips the walk's
    buffers over every row."""
    for s in seeds:
        if adj_hops > 0 and (rows.prev[s] >= 0 or rows.nxt[s] >= 0):
            return True
        if hops > 0:
            for e in range(rows.nbr.shape[1]):
                if rows.nbr[s, e] >= 0:
                    return True
    return False


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def ranked_rows(rows, knobs, base, rel, scored, k, score, graph):
    """Score every ``scored`` row (``base + w_rel·rel``; −inf elsewhere), take the best
    ``max(k, n_seeds)``, propagate relevance from the first ``n_seeds`` along the similarity
    edges and conversation links, raise the rows reached and return the top ``k`` (score desc,
    access desc, seq asc) with the count of scored rows. A walk only raises scores, so the new
    top lies within the first top and the rows it reached."""
    lo = np.inf
    hi = -np.inf
    count = np.int64(0)  # not the literal 0: a callee would compile once more for it
    cand = np.empty(base.shape[0], np.bool_)  # the rows the new top is among
    for i in range(base.shape[0]):
        cand[i] = False
        graph[i] = 0.0
        score[i] = -np.inf
        if scored[i]:
            score[i] = base[i] + knobs.w_rel * rel[i]
            lo = min(lo, score[i])
            hi = max(hi, score[i])
            count += 1
    k = min(k, count)
    n_seeds, hops, adj_hops = int(knobs.n_seeds), int(knobs.hops), int(knobs.adj_hops)
    top = top_k_known(score, rows.access, rows.seq, scored, max(k, n_seeds), lo, hi, count)
    seeds = top[:min(n_seeds, top.shape[0])]
    if not walk_leaves(seeds, rows, hops, adj_hops):
        return top[:k], count
    sim, link, reached = propagate_linked(seeds, rel[seeds], rows.nbr, rows.edge_w, hops,
                                          knobs.hop_factor, rows.prev, rows.nxt, adj_hops,
                                          knobs.adj_factor, scored)
    for r in top:
        cand[r] = True
    raised = False
    for r in reached:
        g = linked_relevance(rel[r], sim[r], link[r], knobs.adj_mix)
        if g > rel[r]:
            graph[r] = g - rel[r]
            score[r] = base[r] + knobs.w_rel * g
            cand[r] = True
            raised = True
    if not raised:
        return top[:k], count
    return top_k_desc(score, rows.access, rows.seq, cand, k), count


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def rank_one(rows, scope, knobs, scales, bm25, cos, prior, idf_total, has_vector, base, work,
             out_rows, out_parts):
    """One query from its relevance inputs to the selected rows (written into ``out_rows`` and
    ``out_parts``; returns their count). ``base``: :func:`base_scores`' rows; ``work``: five
    float64 rows of at least n, scratch."""
    n = bm25.shape[0]
    bm25n, rel, score, graph = work[0, :n], work[1, :n], work[2, :n], work[3, :n]
    base_q = base[2, :n]
    if prior.shape[0] > 0:  # the thread prior orders conversations, after the walk
        base_q = work[4, :n]
        for i in range(n):  # loops, not slice copies: those compile a shape-error formatter
            base_q[i] = base[2, i] + knobs.w_rel * prior[i]
    eligible = scored = scope.eligible
    cue = (idf_total, scales.bm25_w, scales.cos_w, has_vector, knobs.revive_needs_term != 0.0,
           scales.cos_floor)
    n_cued, eligible, scored = revived_masks(scope.dormant, bm25, cos, *cue, knobs.revive_bar,
                                             rows.prev, rows.nxt, int(knobs.adj_hops),
                                             eligible, scored)
    revived = n_cued > 0
    fuse(bm25, cos, scope.affinity, eligible, knobs, scales, bm25n, rel)
    max_entries = int(knobs.max_entries)
    lead_window = int(knobs.lead_window)
    k = max(max_entries + 8, lead_window)  # room for entries skipped by the budget
    ranked, n_scored = ranked_rows(rows, knobs, base_q, rel, scored, k, score, graph)
    fixed = pick_identity(scope.fixed, eligible, rows.access, rows.updated_at, rows.seq,
                          int(knobs.max_identity))
    reason = out_parts[PART_REASON]
    lead = scope.user_facts[:0]
    if scope.user_facts.shape[0] > 0 and knobs.max_user_facts > 0:  # else no fact can lead
        bar = kth_relevance(rel, scored, lead_window)  # among the best matches (own, not walked)
        lead = lead_facts(scope.user_facts, scored, rel, graph, rows.seq, bar,
                          int(knobs.max_user_facts))
    while True:
        m = select_hits(fixed, lead, ranked, rows.tokens, max_entries, int(knobs.budget),
                        out_rows, reason)
        if m >= max_entries or k >= n_scored:
            break
        k = min(2 * k, n_scored)  # entries over the budget left it short: rank deeper
        ranked, n_scored = ranked_rows(rows, knobs, base_q, rel, scored, k, score, graph)
    for j in range(m):
        r = out_rows[j]
        out_parts[PART_SCORE, j] = base_q[r] + knobs.w_rel * (rel[r] + graph[r])
        out_parts[PART_BM25, j] = bm25n[r]
        out_parts[PART_REL, j] = rel[r]
        out_parts[PART_GRAPH, j] = graph[r]
        out_parts[PART_RECENCY, j] = base[0, r]
        out_parts[PART_IMPORTANCE, j] = base[1, r]
        out_parts[PART_COS, j] = max(np.float64(cos[r]), 0.0)
        out_parts[PART_AFFINITY, j] = scope.affinity[r]
        if revived and scope.dormant[r]:
            reason[j] = REASON_REVIVED
        elif reason[j] == KIND_RANKED and graph[r] > 0.0:
            reason[j] = REASON_GRAPH
    return m


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def near_in_time(created_at, when, weight, scale, affinity, out):
    """``affinity + weight·exp(−|created_at − when| / scale)`` into ``out``: a memory saved
    near the time the query asks about gains up to ``weight`` of relevance."""
    for i in range(out.shape[0]):
        out[i] = affinity[i] + weight * np.exp(-abs(created_at[i] - when) / scale)
    return out


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def query_prior(term_ids, term_weight, cos, has_vec, has_vector, threads, no_k, out):
    """Every row's thread prior for one query into ``out`` (0 for the rows that are no
    thread's members): each thread scored as one document, BM25 of its rows' text and the
    cosine of their centroid (:mod:`maclaw_kernels.thread_prior`)."""
    n_threads = int(threads.n_threads)
    tb = np.empty(n_threads)
    tb[:] = 0.0
    bm25_query(term_ids, Postings(*threads.postings, term_weight), tb, no_k)
    thread_prior(tb, cos, has_vec, has_vector and threads.w_cos > 0.0, threads.member,
                 threads.thread_of, n_threads, threads.vnorm, threads.w_bm25, threads.w_cos,
                 out)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def recall_block(corpus, threads, rows, scopes, scope_of, knobs, scales, block, base, work, out,
                 now):
    """Recall at ``now`` for each query ``q`` of ``block``: its BM25 and cosine over every
    row, its thread prior, then :func:`rank_one` over the masks of ``scopes`` row
    ``scope_of[q]`` (one row per distinct project; ``dormant`` with no columns: revival off).
    ``base`` is brought to ``now`` first unless it is there already (a batch does it once,
    before its threads). Releases the GIL: a batch runs blocks on several threads, each with
    its own ``work`` and ``out`` rows.

    The records come as plain tuples and are named again here: numba types a namedtuple
    argument field by field in Python, ~8 µs a call for these, a plain tuple in C."""
    corpus, threads, rows, scopes = Corpus(*corpus), Threads(*threads), Rows(*rows), \
        Scope(*scopes)
    knobs, scales, block, base, work, out = Knobs(*knobs), Scales(*scales), Block(*block), \
        Base(*base), Work(*work), Out(*out)
    if base.at[0] != now:
        base_scores(rows, knobs, now, base.values)
        base.at[0] = now
    n = base.values.shape[1]
    p = Postings(*corpus.postings, work.term_weight)
    bm25 = work.bm25[:n]
    prior = work.mat[5, :n]
    no_prior = prior[:0]
    nq, tile = scope_of.shape[0], work.cos.shape[0]
    no_k = corpus.doc_k[:0]  # the threads' length terms: computed per posting
    for t0 in range(0, nq, tile):
        t1 = min(nq, t0 + tile)
        if block.has_vector and block.cos.shape[0] == 0:
            dot_tile(corpus.matrix, n, corpus.has_vec, block.vectors, t0, t1, work.cos)
        for q in range(t0, t1):
            cos = work.cos[q - t0, :n]
            if not block.has_vector:
                cos[:] = 0.0
            elif block.cos.shape[0] > 0:
                for i in range(n):
                    cos[i] = block.cos[q, i]
            term_ids = block.term_ids[block.term_indptr[q]:block.term_indptr[q + 1]]
            if block.bm25.shape[0] > 0:
                for i in range(n):
                    bm25[i] = block.bm25[q, i]
            else:
                bm25[:] = 0.0
                bm25_query(term_ids, p, bm25, corpus.doc_k)
            this_prior = no_prior
            if threads.n_threads > 0:
                query_prior(term_ids, work.term_weight, cos, corpus.has_vec, block.has_vector,
                            threads, no_k, prior)
                this_prior = prior
            idf_total = terms_idf_total(term_ids, p.df, p.n_live)
            sq = scales  # the query's language's, when the block has its own
            if block.cos_floor.shape[0] > 0:
                sq = Scales(block.cos_floor[q, 0], block.cos_floor[q, 1], block.cos_floor[q, 2],
                            block.cos_floor[q, 3])
            s = scope_of[q]
            affinity = scopes.affinity[s]
            if block.when.shape[0] > 0 and knobs.time_weight > 0.0 and block.when[q] == \
                    block.when[q]:  # (not NaN) the query names a time: favour memories of then
                affinity = near_in_time(rows.created_at, block.when[q], knobs.time_weight,
                                        knobs.time_scale, affinity, work.mat[6, :n])
            scope = Scope(scopes.eligible[s], affinity, scopes.dormant[s], scopes.fixed,
                          scopes.user_facts)
            m = rank_one(rows, scope, knobs, sq, bm25, cos, this_prior, idf_total,
                         block.has_vector, base.values, work.mat, out.rows[q], out.parts[q])
            out.count[q] = m
            best = 0.0
            for j in range(m):
                r = out.rows[q, j]
                best = max(best, cue_strength(bm25[r], cos[r], idf_total, sq.bm25_w,
                                              sq.cos_w, block.has_vector, np.bool_(False),
                                              sq.cos_floor))
            out.best_cue[q] = best
