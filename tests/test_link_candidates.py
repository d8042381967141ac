"""memory/linking.py link_candidates against a plain Python reference of design §4 auto-link."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.memory.linking import link_candidates


def reference(bm25, cos, alive, seq, row, use_cos, min_cos, w_bm, w_cos, top):
    others = [i for i in range(len(bm25)) if i != row and alive[i]]
    best = max([bm25[i] for i in others] + [0.0])
    if use_cos:
        cand = [(w_bm * float(bm25[i]) + w_cos * float(cos[i]), -seq[i], i, float(cos[i]))
                for i in others if float(cos[i]) >= min_cos]  # float64, like the store
    else:
        cand = [(bm25[i], -seq[i], i, min(1.0, bm25[i] / best)) for i in others if bm25[i] > 0]
    cand.sort(reverse=True)
    return [c[2] for c in cand[:top]], [c[3] for c in cand[:top]]


@pytest.mark.parametrize("seed", range(40))
def test_link_candidates_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    bm25 = np.where(rng.random(n) < 0.5, 0.0, rng.integers(0, 4, n) * 0.5)  # ties on purpose
    cos = (rng.integers(0, 10, n) / 10).astype(np.float32)
    alive = rng.random(n) < 0.85
    seq = rng.permutation(n).astype(np.int64)
    row = int(rng.integers(0, n))
    for use_cos in (False, True):
        got_rows, got_s = link_candidates(bm25, cos, alive, seq, row, use_cos, 0.7, 0.4, 0.6, 3)
        want_rows, want_s = reference(bm25, cos, alive, seq, row, use_cos, 0.7, 0.4, 0.6, 3)
        assert got_rows.tolist() == want_rows
        assert got_s.tolist() == pytest.approx(want_s)
