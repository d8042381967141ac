"""The thread prior of recall: how well a row's whole conversation matches the query.

A thread is a chain of the conversation links (design R5: ``prev``/``next``). Each thread is
scored as one document, its rows' text together (BM25 with thread-level idf, length and
saturation, by :func:`maclaw_kernels.bm25.bm25_query` over the threads' own postings) and its
rows' vectors summed (the cosine of the centroid); a row gains the weighted, normalised score of
its thread. A session in which several turns match is more likely the one
asked about than a session with one accidental match (LoCoMo: the turn that answers is often
worded unlike the question while its neighbours are not).
"""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
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


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def thread_vector_norms(matrix, has_vec, member, thread_of, n_threads, out):
    """``out[t]`` = the length of the sum of the vectors of the ``member`` rows of thread ``t``
    that have one (0 when none): the centroid's cosine is then Σ cos / this."""
    d = matrix.shape[1]
    acc = np.empty((n_threads, d))
    acc[:] = 0.0
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


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def thread_prior(tbm25, cos, has_vec, use_cos, member, thread_of, n_threads, vnorm, w_bm25,
                 w_cos, out):
    """Each ``member`` row's prior (0 for the others): ``w_bm25`` × its thread's BM25 over the
    best thread's + ``w_cos`` × its thread's centroid cosine (Σ of its rows' ``cos`` over
    ``vnorm``), min-max over the threads that have vectors; the cosine part only with
    ``use_cos``."""
    n = member.shape[0]
    csum = np.empty(n_threads)
    csum[:] = 0.0
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
