"""BM25 scoring over CSR postings (term → docs), scattered into caller-keyed output rows."""

from collections import namedtuple

import numpy as np
from numba import njit, prange

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


@njit(cache=True, inline="always")
def _accumulate(term_ids, idf, indptr, post_docs, post_tfs, doc_norm, doc_live, doc_key,
                k1, b, avgdl, out, d_lo, d_hi):
    """Add the postings of docs ``d_lo..d_hi`` (a term's postings are sorted by doc)."""
    n_terms = indptr.shape[0] - 1
    for i in range(term_ids.shape[0]):
        t = term_ids[i]
        if t < 0 or t >= n_terms:
            continue
        w = idf[i] * (k1 + 1.0)
        docs = post_docs[indptr[t]:indptr[t + 1]]
        lo = indptr[t] + np.searchsorted(docs, d_lo)
        hi = indptr[t] + np.searchsorted(docs, d_hi)
        for p in range(lo, hi):
            d = post_docs[p]
            if doc_live[d]:
                # widen explicitly: without the JIT, float32 scalars would keep float32 math
                tf = np.float64(post_tfs[p])
                norm = np.float64(doc_norm[d])
                out[doc_key[d]] += w * tf / (tf + k1 * (1.0 - b + b * norm / avgdl))


@njit(cache=True)
def bm25_scores(term_ids, idf, indptr, post_docs, post_tfs, doc_norm, doc_live, doc_key,
                k1, b, avgdl, out):
    """Add the BM25 score of every live doc holding one of ``term_ids`` into ``out[doc_key[d]]``.

    ``term_ids`` are the query's unique term ids (``-1`` = unknown, skipped), ``idf`` their
    weights, ``doc_norm`` the (field-norm encoded) document lengths.
    """
    _accumulate(term_ids, idf, indptr, post_docs, post_tfs, doc_norm, doc_live, doc_key,
                k1, b, avgdl, out, 0, doc_live.shape[0])


@njit(cache=True, parallel=True)
def bm25_scores_batch(q_indptr, term_ids, idf, indptr, post_docs, post_tfs, doc_norm, doc_live,
                      doc_key, k1, b, avgdl, out):
    """:func:`bm25_scores` for many queries: query ``q`` owns ``term_ids[q_indptr[q]:q_indptr[q+1]]``
    and writes row ``out[q]``."""
    for q in prange(q_indptr.shape[0] - 1):
        lo = q_indptr[q]
        hi = q_indptr[q + 1]
        _accumulate(term_ids[lo:hi], idf[lo:hi], indptr, post_docs, post_tfs, doc_norm, doc_live,
                    doc_key, k1, b, avgdl, out[q], 0, doc_live.shape[0])


@njit(cache=True)
def build_csr(n_terms, terms, docs, tfs):
    """Counting-sort COO postings (term, doc, tf) into CSR by term; within a term docs keep the
    input order. Returns ``(indptr, post_docs, post_tfs)``."""
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    for i in range(terms.shape[0]):
        indptr[terms[i] + 1] += 1
    for t in range(n_terms):
        indptr[t + 1] += indptr[t]
    fill = indptr[:-1].copy()
    post_docs = np.empty(terms.shape[0], dtype=np.int32)
    post_tfs = np.empty(terms.shape[0], dtype=np.float32)
    for i in range(terms.shape[0]):
        p = fill[terms[i]]
        post_docs[p] = docs[i]
        post_tfs[p] = tfs[i]
        fill[terms[i]] = p + 1
    return indptr, post_docs, post_tfs


@njit(cache=True)
def bm25_scores_forward(uniq, idf, lo, hi, doc_start, doc_nterms, fwd_terms, fwd_tfs, doc_norm,
                        doc_live, doc_key, k1, b, avgdl, out):
    """BM25 of docs ``lo..hi`` by scanning their own terms, for the query's distinct terms
    ``uniq`` with weights ``idf``: serves the small, unsorted tail of recent documents without
    building postings for it. Each term's part is added in query-term order with the
    arithmetic of the postings path, so a document scores the same bits on either side."""
    for d in range(lo, hi):
        if not doc_live[d]:
            continue
        for i in range(uniq.shape[0]):
            t = uniq[i]
            for p in range(doc_start[d], doc_start[d] + doc_nterms[d]):
                if fwd_terms[p] == t:
                    w = idf[i] * (k1 + 1.0)
                    tf = np.float64(fwd_tfs[p])
                    norm = np.float64(doc_norm[d])
                    out[doc_key[d]] += w * tf / (tf + k1 * (1.0 - b + b * norm / avgdl))
                    break


@njit(cache=True)
def count_terms(flat_ids, offsets, n_vocab, out_terms, out_tfs, out_nterms):
    """Per document ``d`` (tokens ``flat_ids[offsets[d]:offsets[d+1]]``), its distinct terms in
    first-seen order with their counts, packed one document after another. Returns how many
    (term, tf) pairs were written. O(tokens), one scratch array over the vocabulary."""
    first = np.full(n_vocab, -1, np.int64)
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


@njit(cache=True)
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


@njit(cache=True)
def query_terms_batch(flat_ids, offsets, df, n_live, term_weight, q_indptr_out, ids_out,
                      idf_out):
    """:func:`query_idf` of every query (query ``q`` owns ``flat_ids[offsets[q]:offsets[q+1]]``),
    as CSR: query ``q``'s terms, first seen first, are ``ids_out[q_indptr_out[q]:
    q_indptr_out[q + 1]]``. The same order as one query alone, so the same sums. Returns the
    total count. ``term_weight``: zeroed scratch over the vocabulary, zeroed again on return."""
    m = 0
    q_indptr_out[0] = 0
    for q in range(offsets.shape[0] - 1):
        uniq, idf = query_idf(flat_ids[offsets[q]:offsets[q + 1]], df, n_live, term_weight)
        for j in range(uniq.shape[0]):
            ids_out[m] = uniq[j]
            idf_out[m] = idf[j]
            term_weight[uniq[j]] = 0.0
            m += 1
        q_indptr_out[q + 1] = m
    return m


@njit(cache=True, nogil=True)
def bm25_range(uniq, idf, p, out, d_lo, d_hi):
    """The documents ``d_lo..d_hi`` of :func:`bm25_query` for its terms ``uniq`` and ``idf``
    (:func:`query_idf`'s): CSR postings below ``main_upto``, forward lists above. Releases the
    GIL: a large index scores document ranges on several threads, each document summed in the
    same order as in one pass, so the result is identical."""
    _accumulate(uniq, idf, p.indptr, p.post_docs, p.post_tfs, p.doc_norm, p.doc_live,
                p.doc_key, p.k1, p.b, p.avgdl, out, d_lo, d_hi)
    lo_tail = max(p.main_upto, d_lo)
    if lo_tail < d_hi:
        bm25_scores_forward(uniq, idf, lo_tail, d_hi, p.doc_start, p.doc_nterms, p.fwd_terms,
                            p.fwd_tfs, p.doc_norm, p.doc_live, p.doc_key, p.k1, p.b, p.avgdl,
                            out)


@njit(cache=True)
def bm25_query(term_ids, p, out):
    """One query's BM25 added into ``out[doc_key]`` over the :data:`Postings` ``p``: the terms
    of :func:`query_idf`; documents below ``main_upto`` scored from the CSR postings, the tail
    up to ``n_docs`` by its forward lists. Returns how many distinct terms were scored."""
    uniq, idf = query_idf(term_ids, p.df, p.n_live, p.term_weight)
    if uniq.shape[0] == 0:
        return 0
    bm25_range(uniq, idf, p, out, np.int64(0), p.n_docs)  # not a literal: one compile
    p.term_weight[uniq] = 0.0
    return uniq.shape[0]


@njit(cache=True)
def check_postings(terms, docs, offsets, lengths, indptr, n_words, df_out):
    """Whether saved postings are consistent (what ``index.bm25_persist.Postings.check`` asks,
    shapes aside): ``terms`` in ``[0, n_words)``, ``docs`` in ``[0, len(lengths))``, both
    offset arrays non-decreasing from 0 to ``len(terms)``, lengths ≥ 0. Counts each term's
    documents into ``df_out`` (zeroed here, ≥ ``n_words`` entries) on the way."""
    nnz, n = terms.shape[0], lengths.shape[0]
    df_out[:] = 0
    if offsets[0] != 0 or offsets[n] != nnz or indptr[0] != 0 or indptr[n_words] != nnz:
        return False
    for i in range(n):
        if offsets[i + 1] < offsets[i] or lengths[i] < 0:
            return False
    for w in range(n_words):
        if indptr[w + 1] < indptr[w]:
            return False
    for j in range(nnz):
        t, d = terms[j], docs[j]
        if t < 0 or t >= n_words or d < 0 or d >= n:
            return False
        df_out[t] += 1
    return True
