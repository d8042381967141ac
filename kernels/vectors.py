"""Exact inner-product scores against a row-major float32 matrix."""

import numpy as np
from numba import njit, prange


@njit(cache=True, fastmath=True)
def dot_scores(matrix, n_rows, has_vec, query, out):
    """``out[i] = matrix[i] · query`` for rows ``i < n_rows`` with ``has_vec[i]`` (else 0).

    Four rows per step share each load of ``query`` and give the core four independent sums.
    """
    d = query.shape[0]
    i = 0
    while i + 4 <= n_rows:
        a0 = a1 = a2 = a3 = np.float32(0.0)
        for j in range(d):
            x = query[j]
            a0 += matrix[i, j] * x
            a1 += matrix[i + 1, j] * x
            a2 += matrix[i + 2, j] * x
            a3 += matrix[i + 3, j] * x
        out[i] = a0 if has_vec[i] else np.float32(0.0)
        out[i + 1] = a1 if has_vec[i + 1] else np.float32(0.0)
        out[i + 2] = a2 if has_vec[i + 2] else np.float32(0.0)
        out[i + 3] = a3 if has_vec[i + 3] else np.float32(0.0)
        i += 4
    for r in range(i, n_rows):
        out[r] = row_dot(matrix, r, query) if has_vec[r] else np.float32(0.0)


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


@njit(cache=True, fastmath=True)
def row_dot(matrix, i, query):
    """``matrix[i] · query`` in float32: the loop of :func:`dot_scores_parallel`, shared with
    the exact rescoring of ``quantized.py`` so both give the same bits. Not inlined at numba's
    level on purpose: a caller compiled without fastmath would then sum in another order."""
    acc = np.float32(0.0)
    for j in range(query.shape[0]):
        acc += matrix[i, j] * query[j]
    return acc


@njit(cache=True, fastmath=True, parallel=True)
def dot_scores_parallel(matrix, n_rows, has_vec, query, out):
    """:func:`dot_scores` with rows split across threads: one query over a matrix too large for
    the cache is bound by memory bandwidth, which one core cannot saturate."""
    for i in prange(n_rows):
        out[i] = row_dot(matrix, i, query) if has_vec[i] else np.float32(0.0)


@njit(cache=True)
def is_unit_vector(vector, tol):
    """``|‖vector‖² − 1| < tol``, the squares summed in float64 (False for NaN or inf)."""
    total = 0.0
    for j in range(vector.shape[0]):
        total += np.float64(vector[j]) * np.float64(vector[j])
    return abs(total - 1.0) < tol
