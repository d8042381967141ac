"""Recall's speaker order (``maclaw_fast.memory.speakers``): marked rows gain, then reorder."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True)
def raise_and_order(rows, parts, m, own, keep, bonus, weight, score_at, affinity_at, reason_at,
                    lead_a, lead_b):
    """One query's ``rows[:m]`` and ``parts[:, :m]``: after the leading block (part ``reason_at``
    ``lead_a`` or ``lead_b``) each ``own`` row and the first ``keep`` others gain ``bonus`` in part
    ``score_at``, ``weight`` in ``affinity_at``; then they are ordered by score, descending, ties
    kept."""
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
    order = start + np.argsort(-parts[score_at, start:m], kind="mergesort")  # stable
    rows[start:m] = rows[order]
    parts[:, start:m] = parts[:, order]
    return True
