"""Recall's speaker order (``maclaw_fast.memory.speakers``): marked rows gain, then reorder."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True)
def raise_and_order(rows, parts, m, own, keep, bonus, weight, score_at, affinity_at, reason_at,
                    lead_a, lead_b):
    """One query's ``rows[:m]`` and ``parts[:, :m]``: after the leading block (part ``reason_at``
    ``lead_a`` or ``lead_b``) each ``own`` row and the first ``keep`` others gain ``bonus`` in part
    ``score_at``, ``weight`` in ``affinity_at``; then they are ordered by score, descending, ties
    kept (an insertion sort: a selection is some 20 rows, and NumPy's stable argsort with the
    fancy-index copies compiled for ~5 s on a fresh install)."""
    start = 0
    while start < m and (parts[reason_at, start] == lead_a or parts[reason_at, start] == lead_b):
        start += 1
    gained = False
    for j in range(start, m):
        if own[j] or keep > 0:
            keep -= 0 if own[j] else 1
            parts[score_at, j] += bonus
            parts[affinity_at, j] += weight
            gained = True
    if not gained:
        return False
    n_parts = parts.shape[0]
    col = np.empty(n_parts)
    for j in range(start + 1, m):
        s = parts[score_at, j]
        i = j - 1
        while i >= start and parts[score_at, i] < s:
            i -= 1
        if i + 1 == j:
            continue
        r = rows[j]
        for p in range(n_parts):
            col[p] = parts[p, j]
        for t in range(j, i + 1, -1):
            rows[t] = rows[t - 1]
            for p in range(n_parts):
                parts[p, t] = parts[p, t - 1]
        rows[i + 1] = r
        for p in range(n_parts):
            parts[p, i + 1] = col[p]
    return True
