"""Workspace search kernels (design §14): MMR over the few dozen candidates of one query."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _jaccard(ids, lo_a, hi_a, lo_b, hi_b):
    na = hi_a - lo_a
    nb = hi_b - lo_b
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    inter = 0
    a = lo_a
    b = lo_b
    while a < hi_a and b < hi_b:  # both runs are sorted and unique
        if ids[a] == ids[b]:
            inter += 1
            a += 1
            b += 1
        elif ids[a] < ids[b]:
            a += 1
        else:
            b += 1
    return inter / (na + nb - inter)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def mmr_order(scores, tok_indptr, tok_ids, lam):
    """Greedy MMR: repeatedly take the item maximising ``lam·minmax(score) − (1−lam)·max Jaccard
    to the taken ones`` (ties → higher raw score, then earlier). Item ``i``'s token set is the
    sorted unique run ``tok_ids[tok_indptr[i]:tok_indptr[i+1]]``. Returns the visiting order."""
    n = scores.shape[0]
    order = np.empty(n, np.int64)
    if n == 0:
        return order
    lo = np.inf
    hi = -np.inf
    max_sim = np.empty(n)  # np.empty and loops: np.zeros, min() and max() compile more
    taken = np.empty(n, np.bool_)
    for i in range(n):
        lo = min(lo, scores[i])
        hi = max(hi, scores[i])
        max_sim[i] = 0.0
        taken[i] = False
    rng = hi - lo
    for step in range(n):
        best = -1
        best_mmr = -np.inf
        for i in range(n):
            if taken[i]:
                continue
            rel = (scores[i] - lo) / rng if rng > 0 else 1.0
            m = lam * rel - (1.0 - lam) * max_sim[i]
            if best < 0 or m > best_mmr or (m == best_mmr and scores[i] > scores[best]):
                best = i
                best_mmr = m
        order[step] = best
        taken[best] = True
        for i in range(n):
            if not taken[i]:
                sim = _jaccard(tok_ids, tok_indptr[i], tok_indptr[i + 1], tok_indptr[best],
                               tok_indptr[best + 1])
                max_sim[i] = max(max_sim[i], sim)
    return order
