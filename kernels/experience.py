"""Experience score (design §12 UsageTracker) over a columnar ring of usage records.

Records live in arrays indexed by slot: ``rec_uid`` (tool id), ``rec_tok`` (``(W, T)`` token ids,
each row a set padded with −1), ``rec_ntok``, ``rec_ts`` (unix seconds) and ``rec_ok``. The newest
record sits at slot ``head − 1``; ``count`` records are live. An inverted index of the window by
token scores every tool at once, so routing pays for the records a message shares a token with.
"""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def experience_postings(rec_uid, rec_tok, rec_ntok, head, count, max_per_tool, n_uid, age_slot,
                        seen, post_ptr, post_age):
    """Inverted index of the window for :func:`experience_indexed`.

    ``age_slot[a]`` = slot of the ``a``-th newest record; ``seen[u]`` = records of tool ``u`` that
    count (its newest ``max_per_tool``); ``post_age[post_ptr[t]:post_ptr[t + 1]]`` = ages of the
    counted records holding token ``t``, ascending. ``post_ptr`` has ``n_vocab + 1`` entries and
    ``post_age`` room for ``count · rec_tok.shape[1]``.
    """
    for u in range(seen.shape[0]):  # loops and np.empty: np.zeros and copies compile more
        seen[u] = 0
    for t in range(post_ptr.shape[0]):
        post_ptr[t] = 0
    w = rec_uid.shape[0]
    keep = np.empty(count, np.bool_)
    for a in range(count):
        keep[a] = False
        r = head - 1 - a
        if r < 0:
            r += w
        age_slot[a] = r
        u = rec_uid[r]
        if u < 0 or u >= n_uid or seen[u] >= max_per_tool:
            continue
        seen[u] += 1
        keep[a] = True
        for t in range(rec_ntok[r]):
            post_ptr[rec_tok[r, t] + 1] += 1
    for t in range(1, post_ptr.shape[0]):
        post_ptr[t] += post_ptr[t - 1]
    cur = np.empty(post_ptr.shape[0] - 1, np.int64)
    for t in range(cur.shape[0]):
        cur[t] = post_ptr[t]
    for a in range(count):
        if keep[a]:
            r = age_slot[a]
            for t in range(rec_ntok[r]):
                tok = rec_tok[r, t]
                post_age[cur[tok]] = a
                cur[tok] += 1


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def experience_indexed(age_slot, seen, post_ptr, post_age, rec_uid, rec_ntok, rec_ts, rec_ok,
                       count, q_ids, q_size, now, decay, fail_w, inter, out):
    """``out[uid]`` = experience of tool ``uid`` for a query whose unique token ids are ``q_ids``
    (``q_size`` unique tokens in all, unknown ones included). Per tool, over its newest
    ``max_per_tool`` records (the :func:`experience_postings` index; only the records sharing a
    token with the query are visited, newest first): ``sum += jaccard · exp(−decay ·
    max(hours, 0)) · (1 if ok else fail_w)``; result ``clamp(sum / n, 0, 1)``. ``inter`` is a
    zeroed int32 scratch of at least ``count`` entries, left zeroed."""
    for u in range(out.shape[0]):
        out[u] = 0.0
    if q_size <= 0:
        return
    for t in range(q_ids.shape[0]):
        for p in range(post_ptr[q_ids[t]], post_ptr[q_ids[t] + 1]):
            inter[post_age[p]] += 1
    for a in range(count):
        k = inter[a]
        if k == 0:
            continue
        inter[a] = 0
        r = age_slot[a]
        hours = max((now - rec_ts[r]) / 3600.0, 0.0)
        jac = k / (q_size + rec_ntok[r] - k)
        out[rec_uid[r]] += jac * np.exp(-decay * hours) * (1.0 if rec_ok[r] else fail_w)
    for u in range(out.shape[0]):
        if seen[u] > 0:
            out[u] = min(max(out[u] / seen[u], 0.0), 1.0)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def experience_indexed_batch(age_slot, seen, post_ptr, post_age, rec_uid, rec_ntok, rec_ts,
                             rec_ok, count, q_indptr, q_ids, q_sizes, now, decay, fail_w, out):
    """:func:`experience_indexed` for many queries (query ``q`` owns
    ``q_ids[q_indptr[q]:q_indptr[q+1]]`` and writes ``out[q]``)."""
    inter = np.empty(max(count, 1), np.int32)  # left zeroed by each query
    for a in range(inter.shape[0]):
        inter[a] = 0
    for q in range(q_indptr.shape[0] - 1):
        experience_indexed(age_slot, seen, post_ptr, post_age, rec_uid, rec_ntok, rec_ts, rec_ok,
                           count, q_ids[q_indptr[q]:q_indptr[q + 1]], q_sizes[q], now, decay,
                           fail_w, inter, out[q])
