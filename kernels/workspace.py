"""Workspace search kernels (design §14): top-k selection and MMR.

Each works on the few hundred candidates of one query (top-k on the dense score column of every
chunk), so all are serial: a thread pool would cost more to wake than the work.
"""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _worse(s_a, i_a, s_b, i_b):
    # ranking order: higher score first, then lower index; "worse" sorts later
    return s_a < s_b or (s_a == s_b and i_a > i_b)


@njit(cache=True)
def _sift_down(heap_s, heap_i, size, j):
    while True:
        c = 2 * j + 1
        if c >= size:
            return
        if c + 1 < size and _worse(heap_s[c + 1], heap_i[c + 1], heap_s[c], heap_i[c]):
            c += 1
        if not _worse(heap_s[c], heap_i[c], heap_s[j], heap_i[j]):
            return
        heap_s[c], heap_s[j] = heap_s[j], heap_s[c]
        heap_i[c], heap_i[j] = heap_i[j], heap_i[c]
        j = c


@njit(cache=True)
def top_k(scores, k, floor):
    """Indices of the ``k`` largest ``scores`` strictly above ``floor`` (NaN never counts), best
    first, ties by lower index. A size-``k`` heap whose root is the worst kept item."""
    heap_s = np.empty(max(k, 1), np.float64)
    heap_i = np.empty(max(k, 1), np.int64)
    size = np.int64(0)  # not the literal 0: _sift_down would compile once more for it
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        if not s > floor or k <= 0:
            continue
        if size < k:
            j = size
            size += 1
            heap_s[j] = s
            heap_i[j] = i
            while j > 0:
                p = (j - 1) // 2
                if not _worse(heap_s[j], heap_i[j], heap_s[p], heap_i[p]):
                    break
                heap_s[p], heap_s[j] = heap_s[j], heap_s[p]
                heap_i[p], heap_i[j] = heap_i[j], heap_i[p]
                j = p
        elif _worse(heap_s[0], heap_i[0], s, i):
            heap_s[0] = s
            heap_i[0] = i
            _sift_down(heap_s, heap_i, size, np.int64(0))
    out = np.empty(size, np.int64)
    for pos in range(size - 1, -1, -1):  # popping the worst fills the output from the back
        out[pos] = heap_i[0]
        heap_s[0] = heap_s[pos]
        heap_i[0] = heap_i[pos]
        _sift_down(heap_s, heap_i, pos, np.int64(0))
    return out


@njit(cache=True, inline="always")
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


@njit(cache=True)
def mmr_order(scores, tok_indptr, tok_ids, lam):
    """Greedy MMR: repeatedly take the item maximising ``lam·minmax(score) − (1−lam)·max Jaccard
    to the taken ones`` (ties → higher raw score, then earlier). Item ``i``'s token set is the
    sorted unique run ``tok_ids[tok_indptr[i]:tok_indptr[i+1]]``. Returns the visiting order."""
    n = scores.shape[0]
    order = np.empty(n, np.int64)
    if n == 0:
        return order
    lo = scores.min()
    rng = scores.max() - lo
    max_sim = np.zeros(n, np.float64)
    taken = np.zeros(n, np.bool_)
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
