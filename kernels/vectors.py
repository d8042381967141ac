"""Exact inner-product scores against a row-major float32 matrix."""

import numpy as np
from numba import njit, prange


@njit(cache=True, fastmath=True)
def dot_scores(matrix, n_rows, has_vec, query, out):
    """``out[i] = matrix[i] · query`` for rows ``i < n_rows`` with ``has_vec[i]`` (else 0).

    Every row goes through :func:`row_dot`, so the dense, parallel, batched and int8-rescoring
    paths give the same bits: a four-rows-per-step loop here was vectorised by LLVM in another
    summation order under fastmath (1 ulp apart from ``row_dot`` for d ≥ 16 on some CPUs).
    """
    for r in range(n_rows):
        out[r] = row_dot(matrix, r, query) if has_vec[r] else np.float32(0.0)


@njit(cache=True, fastmath=True, parallel=True)
def dot_scores_batch(matrix, n_rows, has_vec, queries, out):
    """:func:`dot_scores` for each row of ``queries`` into ``out[q]`` (rows split across threads,
    so a large matrix is streamed once per thread, not once per query)."""
    nq = queries.shape[0]
    for i in prange(n_rows):
        if has_vec[i]:
            for q in range(nq):
                out[q, i] = row_dot(matrix, i, queries[q])  # the same bits as dot_scores
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
