"""Exact inner-product scores against a row-major float32 matrix."""

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True, nogil=True)
def dot_scores(matrix, n_rows, has_vec, query, out):
    """``out[i] = matrix[i] · query`` for rows ``i < n_rows`` with ``has_vec[i]`` (else 0).
    Releases the GIL: a large matrix is scored in row ranges on several threads.

    Every row goes through :func:`row_dot`, so the dense, split and int8-rescoring paths give
    the same bits: a four-rows-per-step loop here was vectorised by LLVM in another
    summation order under fastmath (1 ulp apart from ``row_dot`` for d ≥ 16 on some CPUs).
    """
    for r in range(n_rows):
        out[r] = row_dot(matrix, r, query) if has_vec[r] else np.float32(0.0)


@njit(cache=True, fastmath=True, nogil=True)
def dot_tile(matrix, n_rows, has_vec, queries, q0, q1, out):
    """``out[q − q0, i] = matrix[i] · queries[q]`` for the queries ``q0..q1`` (0 for rows
    without a vector): each row is read once for the whole tile, not once per query, and every
    value has the bits of :func:`dot_scores` (the same :func:`row_dot`)."""
    for i in range(n_rows):
        if has_vec[i]:
            for q in range(q0, q1):
                out[q - q0, i] = row_dot(matrix, i, queries[q])
        else:
            for q in range(q0, q1):
                out[q - q0, i] = 0.0


@njit(cache=True, fastmath=True)
def row_dot(matrix, i, query):
    """``matrix[i] · query`` in float32: the loop of :func:`dot_scores`, shared with
    the exact rescoring of ``quantized.py`` so both give the same bits. Not inlined at numba's
    level on purpose: a caller compiled without fastmath would then sum in another order."""
    acc = np.float32(0.0)
    for j in range(query.shape[0]):
        acc += matrix[i, j] * query[j]
    return acc
