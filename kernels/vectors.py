"""Exact inner-product scores against a row-major float32 matrix."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, fastmath=True, nogil=True)
def dot_tile(matrix, n_rows, has_vec, queries, q0, q1, out):
    """``out[q − q0, i] = matrix[i] · queries[q]`` for the queries ``q0..q1`` and the rows
    ``i < n_rows`` (0 for rows without a vector): each row is read once for the whole tile, not
    once per query. Every value comes from :func:`row_dot`, so the dense, row-range and
    int8-rescoring paths give the same bits. Releases the GIL: a large matrix is scored in row
    ranges on several threads; one query is a tile of one (``queries[None]``)."""
    for i in range(n_rows):
        if has_vec[i]:
            for q in range(q0, q1):
                out[q - q0, i] = row_dot(matrix, i, queries[q])
        else:
            for q in range(q0, q1):
                out[q - q0, i] = 0.0


@njit(cache=True, no_cfunc_wrapper=True, fastmath=True, no_cpython_wrapper=True)
def row_dot(matrix, i, query):
    """``matrix[i] · query`` in float32: the loop of :func:`dot_tile`, shared with
    the exact rescoring of ``quantized.py`` so both give the same bits. Not inlined at numba's
    level on purpose: a caller compiled without fastmath would then sum in another order."""
    acc = np.float32(0.0)
    for j in range(query.shape[0]):
        acc += matrix[i, j] * query[j]
    return acc
