"""A large store's recall through the int8 first pass (:mod:`maclaw_kernels.quantized`): which
rows get exact cosines, and the check that the ranking equals the one every exact cosine gives.

The ranking (:func:`maclaw_kernels.recall.recall_block`) runs unchanged on an *optimistic*
cosine column: exact for the rows :func:`exact_cosines` picks, the int8 upper bound for the
others. Every stage is monotone in a row's own cosine once the ranges it is normalised by are
exact (the eligible rows' highest and lowest cosine, the threads' highest and lowest centroid
cosine: the rows that may set them are picked), so a row left at its bound scores at least its
true score. :func:`ranking_is_exact` then proves that no such row was selected, seeded the walk,
set the user-fact bar or could have ranked above a selected row; the caller reruns the dense
scan when it cannot (docs/performance.md).
"""

import numpy as np
from numba import njit

from maclaw_kernels.quantized import kth_largest
from maclaw_kernels.recall import Knobs
from maclaw_kernels.recall_assemble import KIND_IDENTITY, KIND_USER_FACT, cos_ends, norm_cos
from maclaw_kernels.vectors import row_dot

# an int8 bound's float32 copy is nudged outwards by this (above a float32 ulp at |x| ≤ 1)
NUDGE = 1e-6


@njit(cache=True, no_cfunc_wrapper=True)
def optimistic_column(lo, hi, eligible, dormant, members, matrix, has_vec, query, exact, cos,
                      low):
    """Mark ``exact`` (keeping its marks) the rows that may hold the ``eligible`` rows' highest
    or lowest cosine and the ``dormant`` ones (revival; no rows: off); when the thread prior
    reads cosines (``members``: thread_of, member, vnorm; no rows: it does not) also every row
    of a thread with an exact row and of each thread that may hold the highest or lowest
    centroid cosine. Then write ``cos`` (the exact cosine, else ``hi`` nudged up) and ``low``
    (exact, else ``lo`` nudged down): the ranges the ranking normalises by are then exact in
    both, and each row's true cosine lies between them. Returns how many rows are exact."""
    thread_of, member, vnorm = members
    n = lo.shape[0]
    top, bottom = -np.inf, np.inf
    for i in range(n):
        if eligible[i]:
            top = max(top, lo[i])
            bottom = min(bottom, hi[i])
    revives = dormant.shape[0] == n
    for i in range(n):
        exact[i] = exact[i] or (eligible[i] and (hi[i] + 2 * NUDGE >= top or lo[i] <= bottom)) \
            or (revives and dormant[i])
    n_threads = vnorm.shape[0]
    if member.shape[0] == n:
        t_exact = np.zeros(n_threads, np.bool_)
        t_lo, t_hi = np.zeros(n_threads), np.zeros(n_threads)
        for i in range(n):
            if member[i]:
                t_exact[thread_of[i]] |= exact[i]
                if has_vec[i]:  # summed as thread_prior sums, bounds as the columns hold them
                    t_hi[thread_of[i]] += np.float64(np.float32(hi[i] + NUDGE))
                    t_lo[thread_of[i]] += np.float64(np.float32(lo[i] - NUDGE))
        top, bottom = -np.inf, np.inf
        for t in range(n_threads):
            if vnorm[t] > 0.0:
                top = max(top, t_lo[t] / vnorm[t])
                bottom = min(bottom, t_hi[t] / vnorm[t])
        for t in range(n_threads):
            if vnorm[t] > 0.0 and (t_hi[t] / vnorm[t] >= top or t_lo[t] / vnorm[t] <= bottom):
                t_exact[t] = True
        for i in range(n):
            if member[i] and t_exact[thread_of[i]]:
                exact[i] = True
    count = 0
    for i in range(n):
        if not has_vec[i]:
            cos[i] = low[i] = np.float32(0.0)
        elif exact[i]:
            cos[i] = low[i] = row_dot(matrix, i, query)
        else:
            cos[i] = np.float32(hi[i] + NUDGE)
            low[i] = np.float32(lo[i] - NUDGE)
        count += exact[i]
    return count


@njit(cache=True, no_cfunc_wrapper=True)
def mark_contenders(cos, low, bm25, base, prior_hi, prior_lo, eligible, affinity, user_fact,
                    knobs, links, members, matrix, has_vec, query, exact):
    """Mark ``exact`` the rows whose pre-walk score may reach the k-th best (bounds from the
    ``cos`` / ``low`` columns of :func:`optimistic_column`, exact ``bm25``, ``base`` f8[3, n]
    at now, the thread prior between ``prior_lo`` and ``prior_hi``), the graph and
    conversation neighbours (``links``: nbr, prev, nxt) of those that may seed the walk, the
    user facts that may reach the lead bar, and the threads (``members``) of all of them;
    their cosines in ``cos`` made exact. Which rows: a heuristic, :func:`ranking_is_exact`
    decides."""
    kn = Knobs(*knobs)
    nbr, prev, nxt = links
    thread_of, member, vnorm = members
    n = cos.shape[0]
    mode, bm_mode = int(kn.cos_norm), int(kn.bm25_norm)
    c_lo, c_hi = cos_ends(cos, eligible, mode, kn.cos_floor, kn.cos_spread)
    b_lo, b_hi = np.inf, 0.0
    for i in range(n):
        if eligible[i] and bm25[i] > 0.0:
            b_lo = min(b_lo, bm25[i])
            b_hi = max(b_hi, bm25[i])
    ub, lb, rel_lb = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        ub[i] = lb[i] = rel_lb[i] = -np.inf
        if not eligible[i]:
            continue
        x = bm25[i]
        if x > 0.0 and bm_mode == 1:
            x = x / b_hi
        elif x > 0.0 and bm_mode == 2:
            x = 1.0 if b_hi == b_lo else (x - b_lo) / (b_hi - b_lo)
        own = kn.bm25_w * x + affinity[i]
        rel_lb[i] = own + kn.cos_w * norm_cos(low[i], mode, c_lo, c_hi)
        lb[i] = base[2, i] + kn.w_rel * (prior_lo[i] + rel_lb[i])
        ub[i] = base[2, i] + kn.w_rel * (prior_hi[i] + own
                                         + kn.cos_w * norm_cos(cos[i], mode, c_lo, c_hi))
    bar = kth_largest(lb, n, max(int(kn.max_entries) + 8, int(kn.lead_window)))
    seed_bar = kth_largest(lb, n, max(int(kn.n_seeds), 1))
    fact_bar = kth_largest(rel_lb, n, max(int(kn.lead_window), 1))
    for i in range(n):
        if ub[i] < bar and not (user_fact[i] and ub[i] - base[2, i] >= kn.w_rel * fact_bar):
            continue
        exact[i] = True
        if ub[i] < seed_bar:
            continue
        for s in range(nbr.shape[1]):  # what the walk from a seed reaches first
            if nbr[i, s] >= 0:
                exact[nbr[i, s]] = True
        for side in range(2):
            r = i
            for _ in range(int(kn.adj_hops)):
                r = prev[r] if side == 0 else nxt[r]
                if r < 0:
                    break
                exact[r] = True
    if member.shape[0] == n:  # whole threads: their centroid cosines exact
        t_exact = np.zeros(vnorm.shape[0], np.bool_)
        for i in range(n):
            if member[i] and exact[i]:
                t_exact[thread_of[i]] = True
        for i in range(n):
            if member[i] and t_exact[thread_of[i]]:
                exact[i] = True
    for i in range(n):
        if exact[i] and has_vec[i]:
            cos[i] = row_dot(matrix, i, query)


@njit(cache=True, no_cfunc_wrapper=True)
def ranking_is_exact(exact, scored, user_fact, mat, out_rows, out_reason, m, knobs):
    """Whether a ranking run on :func:`exact_cosines`' column equals the exact one: the
    selection is full (``m`` = max_entries) and every selected row exact; no other row's
    final score (``mat[2]``) reaches the lowest selected ranked row's; no other row's pre-walk
    score (``mat[4] + w_rel·mat[1]``) reaches the exact rows' ``n_seeds``-th; and when
    ``scored`` user facts may lead, no other row's relevance (``mat[1]``) passes the exact
    rows' ``lead_window``-th and no other user fact reaches that bar. ``mat``: rank_one's
    scratch after the run; ``scored`` before revival (revived rows are exact)."""
    kn = Knobs(*knobs)
    n = exact.shape[0]
    if m < int(kn.max_entries):
        return False
    s_min = np.inf
    for j in range(m):
        r = out_rows[j]
        if not exact[r]:
            return False
        if out_reason[j] != KIND_IDENTITY and out_reason[j] != KIND_USER_FACT:
            s_min = min(s_min, mat[2, r])
    vals = np.empty(n)
    pre_max, final_max, rel_max = -np.inf, -np.inf, -np.inf
    facts = False
    for i in range(n):
        vals[i] = -np.inf
        if not scored[i]:
            continue
        facts = facts or user_fact[i]
        pre = mat[4, i] + kn.w_rel * mat[1, i]  # as ranked_rows computes it
        if exact[i]:
            vals[i] = pre
        else:
            pre_max = max(pre_max, pre)
            final_max = max(final_max, mat[2, i])
            rel_max = max(rel_max, mat[1, i])
    if final_max >= s_min:
        return False
    walks = kn.hops > 0 or kn.adj_hops > 0
    if walks and kn.n_seeds > 0 and pre_max >= kth_largest(vals, n, int(kn.n_seeds)):
        return False
    if not facts or kn.max_user_facts <= 0 or kn.lead_window <= 0:
        return True
    for i in range(n):
        vals[i] = mat[1, i] if scored[i] and exact[i] else -np.inf
    bar = kth_largest(vals, n, int(kn.lead_window))
    if rel_max > bar:
        return False
    for i in range(n):
        if scored[i] and user_fact[i] and not exact[i]:
            v = mat[1, i] + mat[3, i]
            if v > 0.0 and v >= bar:
                return False
    return True
