"""The thread prior of recall: how well a row's whole conversation matches the query.

A thread is a chain of the conversation links (design R5: ``prev``/``next``). Each thread is
scored as one document, its rows' text together (BM25 with thread-level idf, length and
saturation) and its rows' vectors summed (the cosine of the centroid); a row gains the weighted,
normalised score of its thread. A session in which several turns match is more likely the one
asked about than a session with one accidental match (LoCoMo: the turn that answers is often
worded unlike the question while its neighbours are not).
"""

import numpy as np
from numba import njit



@njit(cache=True)
def thread_labels(prev, nxt, out):
    """Label every row with its thread: rows joined by ``prev``/``next`` links (-1 = none) share
    a label, labels 0, 1, … in the order of each thread's first row. Returns the count."""
    n = prev.shape[0]
    out[:n] = -1
    t = 0
    for i in range(n):
        if out[i] >= 0:
            continue
        head = i  # walk back to the thread's first row, then label it forwards
        steps = 0
        while prev[head] >= 0 and prev[head] < n and steps < n:
            head = prev[head]
            steps += 1
        r = head
        steps = 0
        while r >= 0 and r < n and out[r] < 0 and steps <= n:
            out[r] = t
            r = nxt[r]
            steps += 1
        if out[i] < 0:  # a row the walk from its head missed (inconsistent links): its own
            out[i] = t
        t += 1
    return t


@njit(cache=True)
def thread_vector_norms(matrix, has_vec, member, thread_of, n_threads, out):
    """``out[t]`` = the length of the sum of the vectors of the ``member`` rows of thread ``t``
    that have one (0 when none): the centroid's cosine is then Σ cos / this."""
    d = matrix.shape[1]
    acc = np.zeros((n_threads, d))
    for i in range(member.shape[0]):
        if member[i] and has_vec[i]:
            t = thread_of[i]
            for j in range(d):
                acc[t, j] += np.float64(matrix[i, j])
    for t in range(n_threads):
        s = 0.0
        for j in range(d):
            s += acc[t, j] * acc[t, j]
        out[t] = np.sqrt(s)


@njit(cache=True)
def thread_bm25(term_ids, p, thread_of, member, n_threads, k1, b, out):
    """BM25 of every thread as one document (its ``member`` rows' terms together) into
    ``out[:n_threads]``: N counts the threads with a member document of some length, df the
    threads holding the term, a thread's length is the sum of its rows' lengths. ``p``: the row
    index's :data:`maclaw_kernels.bm25.Postings` (CSR postings, then the tail by its forward
    lists); ``term_ids`` may repeat or hold -1 (skipped). Returns the number of threads with a
    member document."""
    df, indptr, post_docs, post_tfs = p.df, p.indptr, p.post_docs, p.post_tfs
    main_upto, n_docs, doc_start, doc_nterms = p.main_upto, p.n_docs, p.doc_start, p.doc_nterms
    fwd_terms, fwd_tfs, doc_norm, doc_live, doc_key = (p.fwd_terms, p.fwd_tfs, p.doc_norm,
                                                      p.doc_live, p.doc_key)
    out[:n_threads] = 0.0
    length = np.zeros(n_threads)
    has_doc = np.zeros(n_threads, np.bool_)
    n_keys = member.shape[0]
    for d in range(n_docs):
        if doc_live[d]:
            r = doc_key[d]
            if 0 <= r < n_keys and member[r] and doc_norm[d] > 0.0:
                length[thread_of[r]] += np.float64(doc_norm[d])
                has_doc[thread_of[r]] = True
    n_with = 0
    total = 0.0
    for t in range(n_threads):
        if has_doc[t]:
            n_with += 1
            total += length[t]
    if n_with == 0:
        return 0
    avg = max(total / n_with, 1e-9)
    # the query's distinct known terms, first seen first
    uniq = np.empty(term_ids.shape[0], np.int64)
    m = 0
    for t in term_ids:
        if t < 0 or t >= df.shape[0] or df[t] <= 0:
            continue
        seen = False
        for j in range(m):
            if uniq[j] == t:
                seen = True
        if not seen:
            uniq[m] = t
            m += 1
    tf = np.zeros((m, n_threads))
    n_terms = indptr.shape[0] - 1
    for j in range(m):
        t = uniq[j]
        if t < n_terms:
            for p in range(indptr[t], indptr[t + 1]):
                d = post_docs[p]
                if doc_live[d]:
                    r = doc_key[d]
                    if 0 <= r < n_keys and member[r]:
                        tf[j, thread_of[r]] += np.float64(post_tfs[p])
    for d in range(main_upto, n_docs):  # the tail, not in the postings yet
        if not doc_live[d]:
            continue
        r = doc_key[d]
        if r < 0 or r >= n_keys or not member[r]:
            continue
        for p in range(doc_start[d], doc_start[d] + doc_nterms[d]):
            for j in range(m):
                if fwd_terms[p] == uniq[j]:
                    tf[j, thread_of[r]] += np.float64(fwd_tfs[p])
    for j in range(m):
        n_df = 0
        for t in range(n_threads):
            if tf[j, t] > 0.0:
                n_df += 1
        idf = np.log((n_with - n_df + 0.5) / (n_df + 0.5) + 1.0)
        for t in range(n_threads):
            x = tf[j, t]
            if x > 0.0:
                out[t] += idf * x * (k1 + 1.0) / (x + k1 * (1.0 - b + b * length[t] / avg))
    return n_with


@njit(cache=True)
def thread_prior(tbm25, cos, has_vec, use_cos, member, thread_of, n_threads, vnorm, w_bm25,
                 w_cos, out):
    """Each ``member`` row's prior (0 for the others): ``w_bm25`` × its thread's BM25 over the
    best thread's + ``w_cos`` × its thread's centroid cosine (Σ of its rows' ``cos`` over
    ``vnorm``), min-max over the threads that have vectors; the cosine part only with
    ``use_cos``."""
    n = member.shape[0]
    csum = np.zeros(n_threads)
    if use_cos:
        for i in range(n):
            if member[i] and has_vec[i]:
                csum[thread_of[i]] += np.float64(cos[i])
    b_hi = 0.0
    c_lo = np.inf
    c_hi = -np.inf
    for t in range(n_threads):
        b_hi = max(b_hi, tbm25[t])
        if use_cos and vnorm[t] > 0.0:
            csum[t] = csum[t] / vnorm[t]
            c_lo = min(c_lo, csum[t])
            c_hi = max(c_hi, csum[t])
    for i in range(n):
        out[i] = 0.0
        if not member[i]:
            continue
        t = thread_of[i]
        v = 0.0
        if b_hi > 0.0:
            v += w_bm25 * tbm25[t] / b_hi
        if use_cos and vnorm[t] > 0.0 and c_hi > c_lo:
            v += w_cos * (csum[t] - c_lo) / (c_hi - c_lo)
        out[i] = v
