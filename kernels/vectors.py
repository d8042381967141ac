"""Exact inner-product scores against a row-major float32 matrix."""

import numpy as np
from numba import njit, prange


@njit(cache=True, fastmath=True)
def dot_scores(matrix, n_rows, has_vec, query, out):
    """``out[i] = matrix[i] · query`` for rows ``i < n_rows`` with ``has_vec[i]`` (else 0)."""
    d = query.shape[0]
    for i in range(n_rows):
        if has_vec[i]:
            acc = np.float32(0.0)
            for j in range(d):
                acc += matrix[i, j] * query[j]
            out[i] = acc
        else:
            out[i] = 0.0


@njit(cache=True, fastmath=True, parallel=True)
def dot_scores_batch(matrix, n_rows, has_vec, queries, out):
    """:func:`dot_scores` for each row of ``queries`` into ``out[q]`` (rows split across threads,
    so a large matrix is streamed once per thread, not once per query)."""
    nq, d = queries.shape
    for i in prange(n_rows):
        if has_vec[i]:
            for q in range(nq):
                acc = np.float32(0.0)
                for j in range(d):
                    acc += matrix[i, j] * queries[q, j]
                out[q, i] = acc
        else:
            for q in range(nq):
                out[q, i] = 0.0


@njit(cache=True, fastmath=True, parallel=True)
def dot_scores_parallel(matrix, n_rows, has_vec, query, out):
    """:func:`dot_scores` with rows split across threads: one query over a matrix too large for
    the cache is bound by memory bandwidth, which one core cannot saturate."""
    d = query.shape[0]
    for i in prange(n_rows):
        acc = np.float32(0.0)
        for j in range(d):
            acc += matrix[i, j] * query[j]
        out[i] = acc if has_vec[i] else np.float32(0.0)
