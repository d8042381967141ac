"""Exact top-k inner products through an int8 first pass with per-row error bounds.

Each row keeps int8 codes ``c`` with a float32 scale ``s`` (``s = max|x| / 127``) and the exact
bound ``e = ||x - s·c||₂``, made by ``maclaw_fast.index.vectors.quantize_rows``. For a query
``q``, ``s·(q·c)`` is within ``e·||q|| + slack`` of ``q·x`` (Cauchy-Schwarz; ``slack`` covers
float32 rounding in both sums). The first pass reads a quarter of the bytes of the float32
matrix; every row whose upper bound reaches the ``k``-th largest lower bound is then scored
exactly, so the ``k`` best rows, ties included, are exactly those of the full float32 scan.
"""

import numpy as np
from maclaw_kernels.vectors import row_dot
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, fastmath=True, inline="always")
def _bounds_of(scale, err, has_vec, i, acc, q_norm, slack, lo_out, hi_out):
    if not has_vec[i]:  # no vector: the score is exactly 0
        lo_out[i] = 0.0
        hi_out[i] = 0.0
    else:
        a = np.float64(scale[i]) * np.float64(acc)
        margin = err[i] * q_norm + slack
        lo_out[i] = a - margin
        hi_out[i] = a + margin


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def query_norm(query):
    """||query||₂ in float64 (the bound scales with it)."""
    total = 0.0
    for j in range(query.shape[0]):
        total += np.float64(query[j]) * np.float64(query[j])
    return np.sqrt(total)


@njit(cache=True, no_cfunc_wrapper=True, fastmath=True, nogil=True)
def bound_rows(codes, scale, err, has_vec, query, q_norm, slack, start, end, lo_out, hi_out):
    """Lower and upper bounds of the inner products of rows ``start..end`` with ``query``. Four
    rows per step share each load of the query: 2.5× one at a time.
    Releases the GIL: a large column bounds row ranges on several threads."""
    d = query.shape[0]
    i = start
    while i + 4 <= end:
        a0 = a1 = a2 = a3 = np.float32(0.0)
        for j in range(d):
            x = query[j]
            a0 += x * np.float32(codes[i, j])
            a1 += x * np.float32(codes[i + 1, j])
            a2 += x * np.float32(codes[i + 2, j])
            a3 += x * np.float32(codes[i + 3, j])
        _bounds_of(scale, err, has_vec, i, a0, q_norm, slack, lo_out, hi_out)
        _bounds_of(scale, err, has_vec, i + 1, a1, q_norm, slack, lo_out, hi_out)
        _bounds_of(scale, err, has_vec, i + 2, a2, q_norm, slack, lo_out, hi_out)
        _bounds_of(scale, err, has_vec, i + 3, a3, q_norm, slack, lo_out, hi_out)
        i += 4
    for r in range(i, end):
        acc = np.float32(0.0)
        for j in range(d):
            acc += query[j] * np.float32(codes[r, j])
        _bounds_of(scale, err, has_vec, r, acc, q_norm, slack, lo_out, hi_out)


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def kth_largest(values, n, k):
    """The ``k``-th largest of ``values[:n]`` (-inf when ``n < k``): a min-heap of ``k``."""
    if k <= 0 or n < k:
        return -np.inf
    heap = np.empty(k)
    for i in range(k):  # insertion sort (a sorted array is a valid min-heap); ``sort()`` would
        v = values[i]   # compile NumPy's quicksort, seconds of a fresh install
        j = i
        while j > 0 and heap[j - 1] > v:
            heap[j] = heap[j - 1]
            j -= 1
        heap[j] = v
    for i in range(k, n):
        v = values[i]
        if v <= heap[0]:
            continue
        p = 0
        while 2 * p + 1 < k:
            c = 2 * p + 1
            if c + 1 < k and heap[c + 1] < heap[c]:
                c += 1
            if heap[c] >= v:
                break
            heap[p] = heap[c]
            p = c
        heap[p] = v
    return heap[0]


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def rescore_candidates(lo, hi, n_rows, k, matrix, has_vec, query, out):
    """``out[i]`` = the exact score of every row that may be among the ``k`` best, ``-inf`` for
    the others. Returns how many rows were scored exactly."""
    floor = kth_largest(lo, n_rows, k)
    scored = 0
    for i in range(n_rows):
        if hi[i] >= floor:
            out[i] = row_dot(matrix, i, query) if has_vec[i] else np.float32(0.0)
            scored += 1
        else:
            out[i] = -np.inf
    return scored

