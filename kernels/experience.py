"""Experience score (SPEC §12 UsageTracker) over a columnar ring of usage records.

Records live in arrays indexed by slot: ``rec_uid`` (tool id), ``rec_tok`` (``(W, T)`` token ids,
each row a set padded with −1), ``rec_ntok``, ``rec_ts`` (unix seconds) and ``rec_ok``. The newest
record sits at slot ``head − 1``; ``count`` records are live. One pass over the window scores every
tool at once, so routing pays for the window once per message, not once per tool.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True)
def experience_all(rec_uid, rec_tok, rec_ntok, rec_ts, rec_ok, head, count, q_ids, q_size,
                   now, decay, fail_w, max_per_tool, qmask, out):
    """``out[uid]`` = experience of tool ``uid`` for a query whose unique token ids are ``q_ids``
    (``q_size`` unique tokens in all, unknown ones included).

    Per tool, walking from newest to oldest over at most ``max_per_tool`` records:
    ``sum += jaccard · exp(−decay · max(hours, 0)) · (1 if ok else fail_w)``; result
    ``clamp(sum / n, 0, 1)``. ``qmask`` is a zeroed bool scratch over the token ids; it is left
    zeroed.
    """
    n_uid = out.shape[0]
    out[:] = 0.0
    if q_size <= 0:
        return
    seen = np.zeros(n_uid, np.int64)
    for t in range(q_ids.shape[0]):
        qmask[q_ids[t]] = True
    w = rec_uid.shape[0]
    for j in range(count):
        r = head - 1 - j
        if r < 0:  # ring wrap without an integer division per record
            r += w
        u = rec_uid[r]
        if u < 0 or u >= n_uid or seen[u] >= max_per_tool:
            continue
        seen[u] += 1
        inter = 0
        for t in range(rec_ntok[r]):
            if qmask[rec_tok[r, t]]:
                inter += 1
        if inter == 0:
            continue
        hours = max((now - rec_ts[r]) / 3600.0, 0.0)
        jac = inter / (q_size + rec_ntok[r] - inter)
        out[u] += jac * np.exp(-decay * hours) * (1.0 if rec_ok[r] else fail_w)
    for u in range(n_uid):
        if seen[u] > 0:
            out[u] = min(max(out[u] / seen[u], 0.0), 1.0)
    for t in range(q_ids.shape[0]):
        qmask[q_ids[t]] = False


@njit(cache=True, parallel=True)
def experience_all_batch(rec_uid, rec_tok, rec_ntok, rec_ts, rec_ok, head, count, q_indptr,
                         q_ids, q_sizes, now, decay, fail_w, max_per_tool, n_vocab, out):
    """:func:`experience_all` for many queries: query ``q`` owns
    ``q_ids[q_indptr[q]:q_indptr[q+1]]`` and writes ``out[q]``."""
    for q in prange(q_indptr.shape[0] - 1):
        qmask = np.zeros(max(n_vocab, 1), np.bool_)
        experience_all(rec_uid, rec_tok, rec_ntok, rec_ts, rec_ok, head, count,
                       q_ids[q_indptr[q]:q_indptr[q + 1]], q_sizes[q], now, decay, fail_w,
                       max_per_tool, qmask, out[q])
