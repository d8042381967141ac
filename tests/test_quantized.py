"""The int8 first pass with error bounds (``kernels/quantized.py``): the bounds hold, and the
rows it lets through give the full float32 scan's top k, scores bit for bit, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from maclaw_kernels import entry
from maclaw_kernels.quantized import bound_rows, kth_largest, query_norm, rescore_candidates
from maclaw_kernels.vectors import dot_tile
from maclaw_fast.workspace.search import best_rows

from maclaw_fast.index.vectors import BOUND_SLACK, VectorColumn, quantize_rows

kth_largest = entry(kth_largest)  # no CPython entry point of its own


def unit_rows(rng, n: int, d: int) -> np.ndarray:
    m = rng.standard_normal((n, d)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def make(seed: int):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 2500)), int(rng.choice([3, 8, 37, 64, 384]))
    m = unit_rows(rng, n, d)
    dup = rng.random(n) < 0.1  # exact ties: copies of row 0
    m[dup] = m[0]
    if seed % 3 == 0:  # clustered: near-equal scores everywhere
        m = m * 0.01 + unit_rows(rng, 1, d)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
    has = rng.random(n) < 0.9
    q = unit_rows(rng, 1, d)[0] if seed % 2 else m[int(rng.integers(n))].copy()
    if seed % 5 == 0:
        q = q * np.float32(1.7)  # not unit: the bound scales with |q|
    return rng, m, has, q


@pytest.mark.parametrize("seed", range(30))
def test_bounds_hold_and_the_top_k_is_the_full_scans(seed):
    rng, m, has, q = make(seed)
    n, d = m.shape
    codes, scale, err = np.zeros((n, d), np.int8), np.zeros(n, np.float32), np.zeros(n)
    quantize_rows(m, codes, scale, err)
    lo, hi = np.empty(n), np.empty(n)
    cut = int(rng.integers(0, n + 1))  # two ranges: the bounds do not depend on the cut
    for a, b in ((0, cut), (cut, n)):
        bound_rows(codes, scale, err, has, q, query_norm(q), BOUND_SLACK, a, b, lo, hi)
    dense = np.empty(n, np.float32)
    dot_tile(m, n, has, q[None], 0, 1, dense[None])
    exact = (m.astype(np.float64) @ q.astype(np.float64)) * has
    assert (lo <= exact).all() and (exact <= hi).all()
    assert (lo <= dense).all() and (dense <= hi).all()
    for k in (1, 6, 24, 200, n, n + 5):
        out = np.full(n, np.nan, np.float32)
        scored = rescore_candidates(lo, hi, n, k, m, has, q, out)
        assert scored >= min(k, n)
        want = best_rows(dense.astype(np.float64), k)
        got = best_rows(out.astype(np.float64), k)
        assert got.tolist() == want.tolist(), (seed, k)
        assert out[got].tolist() == dense[want].tolist()  # the same bits


def test_kth_largest_matches_a_sort():
    rng = np.random.default_rng(1)
    for n in (0, 1, 5, 100, 3000):
        v = np.round(rng.standard_normal(n), 1)  # ties
        for k in (1, 3, n, n + 1):
            want = np.sort(v)[::-1][k - 1] if 0 < k <= n else -np.inf
            assert kth_largest(v, n, k) == want


@pytest.mark.parametrize("from_start", [True, False])
def test_the_column_keeps_its_codes_in_step_with_the_matrix(from_start):
    rng = np.random.default_rng(2)
    col = VectorColumn(16, capacity=4, quantized=from_start)
    rows = rng.permutation(40)[:30]
    col.set_rows(rows, unit_rows(rng, 30, 16))
    if not from_start:  # codes switched on later (a store that has grown large)
        col.set(int(rows[0]), None)
        col.keep_codes()
        col.keep_codes()  # a second call changes nothing
    for r in rows[:5]:
        col.set(int(r), None)
    col.set(3, unit_rows(rng, 1, 16)[0])
    col.reserve(43)
    col.move(np.array([3, 7]), np.array([41, 42]))
    col.truncate(43)
    n = 43
    # every growth keeps rows on cache-line boundaries (the dot kernels' loads never straddle)
    assert col.matrix.ctypes.data % 64 == 0 and col.codes.ctypes.data % 64 == 0
    codes, scale, err = np.zeros((n, 16), np.int8), np.zeros(n, np.float32), np.zeros(n)
    quantize_rows(col.matrix[:n], codes, scale, err)
    live = col.has_vec[:n]
    assert (col.codes[:n][live] == codes[live]).all() and (col.scale[:n] == scale).all()
    assert (col.err[:n][live] == err[live]).all() and not col.codes[:n][~live].any()
    q = unit_rows(rng, 1, 16)[0]
    out = np.empty(n, np.float32)
    col.top_scores(q, n, 5, out)
    assert best_rows(out.astype(np.float64), 5).tolist() == \
        best_rows(col.scores(q, n).astype(np.float64), 5).tolist()
    with pytest.raises(ValueError, match="quantized"):
        VectorColumn(16).top_scores(q, 1, 1, out)
