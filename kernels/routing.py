"""Tool routing kernels (design §12): min-max, top-k, hybrid fusion and the budgeted fill.

Rows are the router's tool rows; every per-row array has the same length. Ordering everywhere is
by value descending, ties broken by a smaller ``tie`` value (an int64 per row: the router passes
each tool's rank by name, so equal scores come back in one order whatever rows the tools landed
in, which keeps a routed list byte-stable for prompt caching); the serial and batch paths and the
plain references agree exactly.
"""

from collections import namedtuple

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def ranks_before(x, tie, i, j):
    """Row ``i`` ranks before row ``j``: larger ``x``, then smaller ``tie``."""
    return x[i] > x[j] or (x[i] == x[j] and tie[i] < tie[j])


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def topk_where(x, mask, flag, want, tie, k, buf):
    """Write the rows of the ``k`` largest ``x`` among the rows with ``mask[i]`` and ``flag[i] ==
    want`` into ``buf`` (descending, ties by smaller ``tie``) and return how many were written
    (``flag`` = ``mask``, ``want`` True: the ``mask`` rows). Insertion into a sorted buffer: O(n)
    when most rows fall below the current k-th value, which is the common case. ``want`` is a
    bool, never a literal: a literal would compile once more.

    The insertion is written out in the loop: a call to a function that writes into ``buf`` is
    not inlined and costs ~0.1 µs, which per row was most of a route's kernel time."""
    n = 0
    if k <= 0:
        return 0
    for i in range(x.shape[0]):
        if mask[i] and flag[i] == want and (n < k or ranks_before(x, tie, i, buf[k - 1])):
            j = n if n < k else k - 1
            while j > 0 and ranks_before(x, tie, i, buf[j - 1]):
                buf[j] = buf[j - 1]
                j -= 1
            buf[j] = i
            if n < k:
                n += 1
    return n


# fuse_scores ``norm``: how the two signals are put on one scale over the hits
NORM_RAW_COS = 0  # minmax(bm25) + max(cos, 0) (the first build's fusion)
NORM_MINMAX = 1  # minmax(bm25) + minmax(cos) (design R3)
NORM_ZSCORE = 2  # z-scores of both: (x − mean)/std over the hits


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def _moments(x, hit):
    """Mean and population standard deviation of ``x`` over the rows with ``hit``."""
    s = 0.0
    m = 0
    for i in range(x.shape[0]):
        if hit[i]:
            s += np.float64(x[i])
            m += 1
    if m == 0:
        return 0.0, 0.0
    mu = s / m
    v = 0.0
    for i in range(x.shape[0]):
        if hit[i]:
            d = np.float64(x[i]) - mu
            v += d * d
    return mu, np.sqrt(v / m)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def fuse_scores(bm25, cos, cand, tie, n_vec, w_bm25, w_cos, norm, hit, fused, scratch):
    """Hybrid retrieval over the candidate rows.

    ``hit`` = candidates with BM25 > 0, plus the ``n_vec`` best candidates with cos > 0 ([D]:
    vector-only matches count; ties by smaller ``tie``). Over the hits, ``fused =
    minmax(w_bm25·b + w_cos·c)``, 0 outside the hits, where by ``norm``:

    * ``NORM_ZSCORE``: ``b``, ``c`` are z-scores over the hits (a signal whose scores are equal
      gives 0). A signal that singles out a few rows has a long upper tail and so a large top
      z; a flat one (a long multi-intent request's cosines) has a small one: each counts by how
      much it separates the hits, which min-max hides by stretching any spread to [0, 1].
    * ``NORM_MINMAX``: min-max of both (design R3).
    * ``NORM_RAW_COS``: min-max BM25 and ``max(cos, 0)``.

    When every fused hit is equal, each gets 1.0 under z-scores, else 1.0 if it is > 0 (a lone
    hit keeps its lead). ``scratch`` is an int64 buffer of at least ``n_vec`` rows. Returns the
    number of hits.
    """
    n = bm25.shape[0]
    for i in range(n):
        hit[i] = cand[i] and cos[i] > 0.0
    m = topk_where(cos, hit, hit, np.bool_(True), tie, n_vec, scratch)
    for i in range(n):
        hit[i] = cand[i] and bm25[i] > 0.0
    for j in range(m):
        hit[scratch[j]] = True
    # each signal as (x − offset)/spread; a spread of 0 means the signal ranks nothing
    b0, bd, c0, cd = 0.0, 0.0, 0.0, 0.0
    if norm == NORM_ZSCORE:
        b0, bd = _moments(bm25, hit)
        c0, cd = _moments(cos, hit)
    else:
        lo = np.inf
        hi = -np.inf
        clo = np.inf
        chi = -np.inf
        for i in range(n):
            if hit[i]:
                # widen first: without the JIT, NumPy would compare and subtract in float32
                c = np.float64(cos[i])
                lo = min(lo, bm25[i])
                hi = max(hi, bm25[i])
                clo = min(clo, c)
                chi = max(chi, c)
        b0, bd = lo, hi - lo
        c0, cd = clo, chi - clo
    flo = np.inf
    fhi = -np.inf
    n_hit = 0
    for i in range(n):
        if not hit[i]:
            fused[i] = 0.0
            continue
        n_hit += 1
        x = bm25[i]
        c = np.float64(cos[i])
        if norm == NORM_ZSCORE:
            nb = (x - b0) / bd if bd > 0.0 else 0.0
            nc = (c - c0) / cd if cd > 0.0 else 0.0
        else:
            nb = (x - b0) / bd if bd > 0.0 else (1.0 if x > 0.0 else 0.0)
            if norm == NORM_MINMAX:
                nc = (c - c0) / cd if cd > 0.0 else (1.0 if c > 0.0 else 0.0)
            else:
                nc = max(c, 0.0)
        f = w_bm25 * nb + w_cos * nc
        fused[i] = f
        flo = min(flo, f)
        fhi = max(fhi, f)
    fspan = fhi - flo
    for i in range(n):
        if hit[i]:
            f = fused[i]
            if fspan > 0.0:
                fused[i] = (f - flo) / fspan
            else:
                fused[i] = 1.0 if (norm == NORM_ZSCORE or f > 0.0) else 0.0
    return n_hit


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def rank_keys(retrieval, exp_by_uid, row_uid, prio, cand, hit, group, w_ret, w_exp, w_prio,
              experience, score, key):
    """Three-signal score and the ordering key of every candidate row.

    ``experience[i] = exp_by_uid[row_uid[i]]`` (0 when ``row_uid[i] < 0``); ``score = w_ret·ret +
    w_exp·exp + w_prio·prio``; ``key`` adds a tier so that group-activated rows come first, then
    retrieval hits, then the rest (score ≤ 1 < the tier gaps); non-candidates get −1.
    """
    for i in range(score.shape[0]):
        u = row_uid[i]
        e = exp_by_uid[u] if u >= 0 and u < exp_by_uid.shape[0] else 0.0
        experience[i] = e
        s = w_ret * retrieval[i] + w_exp * e + w_prio * prio[i]
        score[i] = s
        if not cand[i]:
            key[i] = -1.0
        elif group[i]:
            key[i] = s + 4.0
        elif hit[i]:
            key[i] = s + 2.0
        else:
            key[i] = s


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def fill_select(key, tie, cand, nonbuiltin, slots, nb_slots, out_idx, buf_b, buf_n):
    """The budgeted fill (design §12 step 7): walk candidates by ``key`` descending (ties by
    smaller ``tie``), taking builtin rows freely and at most ``nb_slots`` non-builtin ones, until
    ``slots`` are taken. Equals the merge of the top builtin and the top non-builtin rows
    (:func:`topk_where` of each), which needs no full sort."""
    nb = topk_where(key, cand, nonbuiltin, np.bool_(False), tie, slots, buf_b)  # not literals
    nn = topk_where(key, cand, nonbuiltin, np.bool_(True), tie, min(nb_slots, slots), buf_n)
    a = 0
    c = 0
    t = 0
    while t < slots and (a < nb or c < nn):
        if c >= nn or (a < nb and ranks_before(key, tie, buf_b[a], buf_n[c])):
            out_idx[t] = buf_b[a]
            a += 1
        else:
            out_idx[t] = buf_n[c]
            c += 1
        t += 1
    return t


# A catalog as the routing kernels read it: per row its usage id ``uid`` i4 (-1 = none),
# ``prio`` f8, whether it is a candidate ``cand`` b1, its ``tie`` rank by name i8 and whether it
# is ``nonbuiltin`` b1.
Catalog = namedtuple("Catalog", ["uid", "prio", "cand", "tie", "nonbuiltin"])

# The routing knobs, every one a float64: vector candidates ``n_vec``, the BM25 weight, the
# fusion ``norm`` code, the weights of retrieval / experience / priority, the ``slots`` to fill
# and how many of them may be non-builtin.
RouteKnobs = namedtuple("RouteKnobs", ["n_vec", "w_bm25", "norm", "w_ret", "w_exp", "w_prio",
                                       "slots", "nb_slots"])

# What one message's routing writes: the selected rows ``idx`` and, per row, ``hit``,
# ``retrieval``, ``experience`` and ``score``.
RouteOut = namedtuple("RouteOut", ["idx", "hit", "retrieval", "experience", "score"])


# inlined: one compiled entry (route_rows), no re-optimised level
@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def route_one(bm25, cos, exp_by_uid, group, w_cos, catalog, knobs, out):
    """Fusion, three-signal score and budgeted fill for one message (``w_cos``: its cosine
    weight). Ties are broken by the smaller ``tie`` (each row's rank by tool name, so the order
    is a function of the catalog's content, not of the history that assigned the rows).

    Writes the selected rows into ``out.idx`` and returns ``(n_selected, n_candidates)`` where
    candidates are the rows that are retrieval hits or group-activated.
    """
    n = bm25.shape[0]
    c, k = catalog, knobs
    n_vec, slots = int(k.n_vec), int(k.slots)
    key = np.empty(n)
    scratch = np.empty(max(n_vec, 1), np.int64)
    fuse_scores(bm25, cos, c.cand, c.tie, n_vec, k.w_bm25, w_cos, int(k.norm), out.hit,
                out.retrieval, scratch)
    rank_keys(out.retrieval, exp_by_uid, c.uid, c.prio, c.cand, out.hit, group, k.w_ret,
              k.w_exp, k.w_prio, out.experience, out.score, key)
    n_cand = 0
    for i in range(n):
        if c.cand[i] and (out.hit[i] or group[i]):
            n_cand += 1
    buf_b = np.empty(max(slots, 1), np.int64)
    buf_n = np.empty(max(slots, 1), np.int64)
    n_sel = fill_select(key, c.tie, c.cand, c.nonbuiltin, slots, int(k.nb_slots), out.idx,
                        buf_b, buf_n)
    return n_sel, n_cand


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def route_rows(bm25, cos, exp_by_uid, group, w_cos, catalog, knobs, out, out_n, out_cand, lo,
               hi):
    """:func:`route_one` for messages ``lo..hi``; row ``q`` of every 2-D array (and of each array
    of ``out``) belongs to message ``q`` (``exp_by_uid`` is ``(nq, n_uid)``, ``w_cos``
    ``(nq,)``). Each message runs the same serial kernel, so the results equal the
    single-message path. Releases the GIL: a batch routes message ranges on several threads.
    The records may come as plain tuples (numba types a namedtuple argument field by field in
    Python, µs a call) and are named again here."""
    catalog, knobs, out = Catalog(*catalog), RouteKnobs(*knobs), RouteOut(*out)
    for q in range(lo, hi):
        n_sel, n_cand = route_one(bm25[q], cos[q], exp_by_uid[q], group[q], w_cos[q], catalog,
                                  knobs, RouteOut(out.idx[q], out.hit[q], out.retrieval[q],
                                                  out.experience[q], out.score[q]))
        out_n[q] = n_sel
        out_cand[q] = n_cand


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def selected_fields(out_idx, out_n, score, retrieval, experience, prio, bm25, cos, group, hit,
                    rows, fields):
    """Every message's selected rows flattened in order into ``rows`` (message ``q`` owns the
    next ``out_n[q]``) and, per selected (message, row) pair ``j``, ``fields[:, j]`` = score,
    retrieval, experience, priority, bm25, cosine, group, hit (the last two as 1.0/0.0). One pass
    instead of a fancy index per field: building a routed list is then one ``tolist``."""
    j = 0
    for q in range(out_idx.shape[0]):
        for p in range(out_n[q]):
            r = out_idx[q, p]
            rows[j] = r
            fields[0, j] = score[q, r]
            fields[1, j] = retrieval[q, r]
            fields[2, j] = experience[q, r]
            fields[3, j] = prio[r]
            fields[4, j] = bm25[q, r]
            fields[5, j] = cos[q, r]
            fields[6, j] = 1.0 if group[q, r] else 0.0
            fields[7, j] = 1.0 if hit[q, r] else 0.0
            j += 1
