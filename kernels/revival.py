"""Cue strength of dormant memories (design R9): which of them a query brings back."""

import numpy as np
from numba import njit


# the least BM25 that counts as holding a query term for ``needs_term``: about the idf of a term
# nine in ten memories hold (ln 1.11), so a word every memory holds cues none of them
TERM_BM25 = 0.1


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def cue_strength(bm25, cos, idf_total, bm25_w, cos_w, has_vector, needs_term, cos_floor):
    """Absolute strength of a query's cue for one memory, in [0, 1].

    Lexical part: ``min(1, bm25 / idf_total)``, where ``idf_total`` is the BM25 that a memory
    holding each query term once at the average length scores (so 1 = the whole query named,
    0.5 = half its weight), whatever else the store holds. With a query vector the two parts
    are mixed by the recall weights, ``max((cos - cos_floor) / (1 - cos_floor), 0)`` as the
    other part (``cos_floor``: the model's :attr:`cosine_floor`, which puts its cosines on the
    scale the bars were tuned on; 0 for that model); without one the lexical part alone. With
    ``needs_term`` a memory holding no term of the query that sets it apart (BM25 below
    :data:`TERM_BM25`: none, or only words (nearly) every memory holds) has no cue at all,
    however close its vector."""
    if needs_term and not bm25 >= TERM_BM25:
        return 0.0
    lex = 0.0
    if idf_total > 0.0 and bm25 > 0.0:
        lex = min(1.0, bm25 / idf_total)
    if not has_vector:
        return lex
    total = bm25_w + cos_w
    if total <= 0.0:
        return 0.0
    c = 0.0
    if cos_floor < 1.0:
        c = max((np.float64(cos) - cos_floor) / (1.0 - cos_floor), 0.0)
    return (bm25_w * lex + cos_w * c) / total


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def terms_idf_total(term_ids, df, n_live):
    """The ``idf_total`` of :func:`cue_strength` for one query given as vocabulary ids (-1 =
    unknown): Σ idf over its distinct known terms, plus ``idf(df = 0)`` for every word the
    index does not hold (no document can match it)."""
    n = np.float64(n_live)
    total = 0.0
    for i in range(term_ids.shape[0]):
        t = term_ids[i]
        if t < 0 or t >= df.shape[0] or df[t] <= 0:
            total += np.log((n + 0.5) / 0.5 + 1.0)
            continue
        seen = False
        for j in range(i):
            if term_ids[j] == t:
                seen = True
                break
        if not seen:
            d = np.float64(df[t])
            total += np.log((n - d + 0.5) / (d + 0.5) + 1.0)
    return total


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def revived_masks(dormant, bm25, cos, idf_total, bm25_w, cos_w, has_vector, needs_term,
                  cos_floor, min_cue, prev, nxt, adj_hops, eligible, scored):
    """How many ``dormant`` rows the query cues at least ``min_cue`` strongly
    (:func:`cue_strength`), and ``eligible`` and ``scored`` with those rows added, and the
    dormant rows within ``adj_hops`` conversation links (``prev``/``nxt``, -1 = none) of one (a
    walk stops at a row that is not dormant): the reply to a cued question competes with it, as
    it would had neither gone dormant. The masks are copies when a row came back, the given
    arrays when none did; ``dormant`` shorter than ``bm25`` turns revival off."""
    el, sc = eligible, scored
    count = 0
    if dormant.shape[0] < bm25.shape[0]:
        return count, el, sc
    for i in range(bm25.shape[0]):
        if not dormant[i] or cue_strength(bm25[i], cos[i], idf_total, bm25_w, cos_w,
                                          has_vector, needs_term, cos_floor) < min_cue:
            continue
        if count == 0:
            el, sc = np.empty(bm25.shape[0], np.bool_), np.empty(bm25.shape[0], np.bool_)
            for j in range(bm25.shape[0]):
                el[j] = eligible[j]
                sc[j] = scored[j]
        count += 1
        el[i] = True
        sc[i] = True
        for direction in range(2):
            links = prev if direction == 0 else nxt
            node = i
            for _ in range(adj_hops):
                node = links[node]
                if node < 0 or not dormant[node]:
                    break
                el[node] = True
                sc[node] = True
    return count, el, sc
