"""BM25 scoring over CSR postings (term → docs), scattered into caller-keyed output rows."""

from collections import namedtuple

import numpy as np
from numba import njit

# One index's arrays as the query kernels read them (built by ``Bm25Index.postings``):
# ``df`` per term, ``n_live`` documents; CSR postings (``indptr``, ``post_docs``, ``post_tfs``)
# for the documents below ``main_upto``, forward lists (``doc_start``, ``doc_nterms``,
# ``fwd_terms``, ``fwd_tfs``) for the tail up to ``n_docs``; per document its encoded length
# ``doc_norm``, ``doc_live`` and caller key ``doc_key``; ``k1``, ``b``, ``avgdl``; and
# ``term_weight``, a zeroed scratch over the vocabulary that a query leaves zeroed.
Postings = namedtuple("Postings", [
    "df", "n_live", "indptr", "post_docs", "post_tfs", "main_upto", "n_docs", "doc_start",
    "doc_nterms", "fwd_terms", "fwd_tfs", "doc_norm", "doc_live", "doc_key", "k1", "b", "avgdl",
    "term_weight"])


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def build_csr(n_terms, terms, docs, tfs):
    """Counting-sort COO postings (term, doc, tf) into CSR by term; within a term docs keep the
    input order. Returns ``(indptr, post_docs, post_tfs)``."""
    indptr = np.empty(n_terms + 1, np.int64)
    indptr[:] = 0
    for i in range(terms.shape[0]):
        indptr[terms[i] + 1] += 1
    fill = np.empty(n_terms, np.int64)
    for t in range(n_terms):
        fill[t] = indptr[t]
        indptr[t + 1] += indptr[t]
    post_docs = np.empty(terms.shape[0], np.int32)
    post_tfs = np.empty(terms.shape[0], np.float32)
    for i in range(terms.shape[0]):
        p = fill[terms[i]]
        post_docs[p] = docs[i]
        post_tfs[p] = tfs[i]
        fill[terms[i]] = p + 1
    return indptr, post_docs, post_tfs


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def count_terms(flat_ids, offsets, n_vocab, out_terms, out_tfs, out_nterms):
    """Per document ``d`` (tokens ``flat_ids[offsets[d]:offsets[d+1]]``), its distinct terms in
    first-seen order with their counts, packed one document after another. Returns how many
    (term, tf) pairs were written. O(tokens), one scratch array over the vocabulary."""
    first = np.empty(n_vocab, np.int64)
    first[:] = -1
    pos = 0
    for d in range(offsets.shape[0] - 1):
        start = pos
        for i in range(offsets[d], offsets[d + 1]):
            t = flat_ids[i]
            if first[t] < start:
                first[t] = pos
                out_terms[pos] = t
                out_tfs[pos] = 1.0
                pos += 1
            else:
                out_tfs[first[t]] += 1.0
        out_nterms[d] = pos - start
    return pos


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def query_idf(term_ids, df, n_live, term_weight):
    """Unique known terms of ``term_ids`` (first seen first; ``-1``, out of range or ``df == 0``
    skipped) and their ``idf = ln((N − df + ½)/(df + ½) + 1)``, also written into the zeroed
    scratch ``term_weight`` (the caller zeroes those entries again)."""
    uniq = np.empty(term_ids.shape[0], np.int64)
    idf = np.empty(term_ids.shape[0])
    m = 0
    for t in term_ids:
        if t < 0 or t >= df.shape[0] or df[t] <= 0 or term_weight[t] != 0.0:
            continue
        d = np.float64(df[t])
        w = np.log((n_live - d + 0.5) / (d + 0.5) + 1.0)
        term_weight[t] = w
        uniq[m] = t
        idf[m] = w
        m += 1
    return uniq[:m], idf[:m]


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def first_at_least(docs, lo, hi, d):
    """The first position in ``docs[lo:hi]`` (sorted) holding a value ≥ ``d`` (``hi``: none);
    written out: ``np.searchsorted`` compiles NumPy's comparison machinery (~0.4 s)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if docs[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def length_term(k1, b, norm, avgdl):
    """``k1·(1 − b + b·norm/avgdl)`` of one document (``norm`` its encoded length)."""
    return k1 * (1.0 - b + b * np.float64(norm) / avgdl)


def length_terms(p) -> np.ndarray:
    """Every document's ``k1·(1 − b + b·norm/avgdl)`` (the part of the BM25 denominator
    ``tf + …`` that depends on the document alone) over the :data:`Postings` ``p``: the same
    bits as :func:`bm25_range` computes per posting, made once per index state (a store's
    recall plan holds it), so a posting costs one division, not two."""
    norm = p.doc_norm[:p.n_docs].astype(np.float64)
    return p.k1 * (1.0 - p.b + p.b * norm / p.avgdl)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def bm25_range(uniq, idf, p, doc_k, out, d_lo, d_hi):
    """The documents ``d_lo..d_hi`` of :func:`bm25_query` for its terms ``uniq`` and ``idf``
    (:func:`query_idf`'s): CSR postings below ``main_upto`` (a term's postings are sorted by
    document), forward lists above. Each term's part is added in query-term order on either
    side, so a document scores the same bits whichever holds it, and document ranges scored
    on several threads (the GIL is released) equal one pass. ``doc_k``: every document's
    :func:`length_terms` (the same bits), or empty: computed here."""
    k1, b, avgdl = p.k1, p.b, p.avgdl
    known = doc_k.shape[0] >= p.n_docs
    n_terms = p.indptr.shape[0] - 1
    for i in range(uniq.shape[0]):
        t = uniq[i]
        if t < 0 or t >= n_terms:
            continue
        w = idf[i] * (k1 + 1.0)
        lo = first_at_least(p.post_docs, p.indptr[t], p.indptr[t + 1], d_lo)
        hi = first_at_least(p.post_docs, lo, p.indptr[t + 1], d_hi if d_hi < p.main_upto
                            else p.main_upto)
        for j in range(lo, hi):
            d = p.post_docs[j]
            if p.doc_live[d]:
                # widen explicitly: without the JIT, float32 scalars would keep float32 math
                tf = np.float64(p.post_tfs[j])
                k = doc_k[d] if known else length_term(k1, b, p.doc_norm[d], avgdl)
                out[p.doc_key[d]] += w * tf / (tf + k)
    for d in range(max(p.main_upto, d_lo), d_hi):  # the tail: each document's own terms
        if not p.doc_live[d]:
            continue
        k = doc_k[d] if known else length_term(k1, b, p.doc_norm[d], avgdl)
        for i in range(uniq.shape[0]):
            for j in range(p.doc_start[d], p.doc_start[d] + p.doc_nterms[d]):
                if p.fwd_terms[j] == uniq[i]:
                    tf = np.float64(p.fwd_tfs[j])
                    out[p.doc_key[d]] += idf[i] * (k1 + 1.0) * tf / (tf + k)
                    break


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def bm25_query(term_ids, p, out, doc_k):
    """One query's BM25 added into ``out[doc_key]`` over the :data:`Postings` ``p``: the terms
    of :func:`query_idf`; documents below ``main_upto`` scored from the CSR postings, the tail
    up to ``n_docs`` by its forward lists (``doc_k``: as :func:`bm25_range` takes it). Returns
    how many distinct terms were scored."""
    uniq, idf = query_idf(term_ids, p.df, p.n_live, p.term_weight)
    if uniq.shape[0] == 0:
        return 0
    bm25_range(uniq, idf, p, doc_k, out, np.int64(0), p.n_docs)  # not a literal: one compile
    p.term_weight[uniq] = 0.0
    return uniq.shape[0]
