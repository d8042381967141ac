"""Workspace kernels (kernels/workspace.py) against plain-Python references on random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from maclaw_kernels.workspace import mmr_order

from maclaw_fast.workspace.search import apply_decay, best_rows, merge_hybrid


# ---------------------------------------------------------------- plain references
def ref_top_k(scores, k, floor):
    items = [(-float(s), i) for i, s in enumerate(scores) if s > floor]
    return [i for _, i in sorted(items)[:k]]


def ref_merge(vec_idx, vec_sc, txt_idx, txt_sc, wv, wt):
    by_row: dict[int, list[float]] = {}
    for r, s in zip(vec_idx, vec_sc):
        by_row.setdefault(int(r), [0.0, 0.0])[0] = float(s)
    for r, s in zip(txt_idx, txt_sc):
        by_row.setdefault(int(r), [0.0, 0.0])[1] = float(s)
    rows = sorted(by_row)
    return rows, [wv * by_row[r][0] + wt * by_row[r][1] for r in rows]


def ref_decay(scores, ts, now, half_life):
    out = []
    for s, t in zip(scores, ts):
        if math.isnan(t):
            out.append(s)
        else:
            out.append(s * math.exp(-math.log(2) / half_life * max(0.0, now - t)))
    return out


def ref_jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def ref_mmr(scores, sets, lam):
    lo, hi = min(scores), max(scores)
    rel = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
    remaining = list(range(len(scores)))
    chosen: list[int] = []
    while remaining:
        best, best_m = None, -math.inf
        for i in remaining:
            sim = max((ref_jaccard(sets[i], sets[j]) for j in chosen), default=0.0)
            m = lam * rel[i] - (1 - lam) * sim
            if best is None or m > best_m or (m == best_m and scores[i] > scores[best]):
                best, best_m = i, m
        chosen.append(best)
        remaining.remove(best)
    return chosen


def _csr(sets):
    parts = [np.array(sorted(s), np.int64) for s in sets]
    indptr = np.zeros(len(parts) + 1, np.int64)
    indptr[1:] = np.cumsum([p.size for p in parts])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return indptr, flat


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("seed", range(25))
def test_top_k_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    # rounded values force ties; negatives and zeros must be excluded by the floor
    scores = np.round(rng.normal(size=n), 1)
    if seed % 5 == 0 and n:
        scores[rng.integers(0, n)] = np.nan
    k = int(rng.integers(0, 60))
    assert best_rows(scores, k).tolist() == ref_top_k(scores, k, 0.0)


def test_top_k_all_below_floor():
    assert best_rows(np.zeros(10), 5).tolist() == []
    assert best_rows(np.array([0.1, 0.9, 0.5]), 2).tolist() == [1, 2]


@pytest.mark.parametrize("seed", range(20))
def test_merge_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n_rows = 300
    vec_idx = rng.choice(n_rows, size=int(rng.integers(0, 50)), replace=False).astype(np.int64)
    txt_idx = rng.choice(n_rows, size=int(rng.integers(0, 50)), replace=False).astype(np.int64)
    vec_sc, txt_sc = rng.random(vec_idx.size), rng.random(txt_idx.size)
    wv, wt = float(rng.random()), float(rng.random())
    rows, merged, vs, ts = merge_hybrid(vec_idx, vec_sc, txt_idx, txt_sc, wv, wt)
    ref_rows, ref_scores = ref_merge(vec_idx, vec_sc, txt_idx, txt_sc, wv, wt)
    assert rows.tolist() == ref_rows
    np.testing.assert_allclose(merged, ref_scores, rtol=1e-12)
    np.testing.assert_allclose(merged, wv * vs + wt * ts, rtol=1e-12)


def test_merge_spec_example():
    # design §15: vector a 0.9 + keyword b 1.0 at 0.7/0.3 → [a 0.63, b 0.30]
    rows, merged, _, _ = merge_hybrid(np.array([0]), np.array([0.9]), np.array([1]),
                                      np.array([1.0]), 0.7, 0.3)
    assert rows.tolist() == [0, 1]
    np.testing.assert_allclose(merged, [0.63, 0.30])
    # the same id with 0.2 / 1.0 at 0.5/0.5 → one row scoring 0.6
    rows, merged, _, _ = merge_hybrid(np.array([4]), np.array([0.2]), np.array([4]),
                                      np.array([1.0]), 0.5, 0.5)
    assert rows.tolist() == [4] and merged.tolist() == pytest.approx([0.6])


@pytest.mark.parametrize("seed", range(10))
def test_decay_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = 200
    scores = rng.random(n)
    ts = rng.uniform(-100, 120, n)
    ts[rng.random(n) < 0.2] = np.nan
    now, hl = 100.0, float(rng.uniform(1, 60))
    ref = ref_decay(scores.tolist(), ts.tolist(), now, hl)
    apply_decay(scores, ts, now, hl)
    np.testing.assert_allclose(scores, ref, rtol=1e-12)


def test_decay_spec_examples():
    s = np.ones(5)
    apply_decay(s, np.array([90.0, 70.0, np.nan, 120.0, 100.0]), 100.0, 30.0)
    # age 10 → 0.7937, age 30 → 0.5, evergreen 1, future → age 0, today 1
    np.testing.assert_allclose(s, [0.7937005259840998, 0.5, 1.0, 1.0, 1.0], rtol=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_mmr_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    scores = np.round(rng.random(n), 1)  # ties on purpose
    sets = [set(rng.choice(12, size=int(rng.integers(0, 6)), replace=False).tolist())
            for _ in range(n)]
    lam = float(rng.choice([0.0, 0.3, 0.7, 1.0]))
    indptr, flat = _csr(sets)
    assert mmr_order(scores, indptr, flat, lam).tolist() == ref_mmr(scores.tolist(), sets, lam)


def test_mmr_score_spec_example_and_diversity():
    # design §15: relevance 1.0, max-sim 0.5, λ 0.7 → 0.55
    assert 0.7 * 1.0 - 0.3 * 0.5 == pytest.approx(0.55)
    # two duplicates and one distinct: MMR puts the distinct one second
    sets = [{1, 2, 3}, {1, 2, 3}, {7, 8}, {9}]
    indptr, flat = _csr(sets)
    scores = np.array([1.0, 0.95, 0.9, 0.5])
    assert mmr_order(scores, indptr, flat, 0.7).tolist() == [0, 2, 1, 3]
    assert mmr_order(scores, indptr, flat, 1.0).tolist() == [0, 1, 2, 3]


def test_jaccard_edge_cases_through_mmr():
    # both empty → similarity 1, so with λ=0 the empty second item loses to the non-empty one
    sets = [set(), set(), {1}]
    indptr, flat = _csr(sets)
    assert mmr_order(np.array([1.0, 1.0, 1.0]), indptr, flat, 0.0).tolist() == [0, 2, 1]
