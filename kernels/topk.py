"""Top-k selection with the store's tie-breaks."""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _before(a, b, score, access, seq):
    if score[a] != score[b]:
        return score[a] > score[b]
    if access[a] != access[b]:
        return access[a] > access[b]
    return seq[a] < seq[b]


@njit(cache=True)
def top_k_desc(score, access, seq, mask, k):
    """Rows of ``mask`` ordered by (score desc, access desc, seq asc), first ``k`` of them.

    A bounded insertion buffer: O(n·k) worst case but O(n) in practice for k ≤ ~64, without
    sorting the whole array.
    """
    out = np.empty(max(k, 0), dtype=np.int64)
    if k <= 0:
        return out
    m = 0
    for i in range(score.shape[0]):
        if not mask[i]:
            continue
        if m == k and not _before(i, out[m - 1], score, access, seq):
            continue
        j = m if m < k else k - 1
        while j > 0 and _before(i, out[j - 1], score, access, seq):
            out[j] = out[j - 1]
            j -= 1
        out[j] = i
        if m < k:
            m += 1
    return out[:m]
