"""The speaker order (``memory/speakers.py``) against a plain-Python reference on random selections: the named
speaker's rows after the leading block and the first ``keep`` others gain the bonus, and the
rows after the block are ordered by score again, ties in their order."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.memory.speakers import raise_and_order
from maclaw_kernels.recall import PART_AFFINITY as AFFINITY
from maclaw_kernels.recall import PART_REASON as REASON
from maclaw_kernels.recall import PART_SCORE as SCORE


def reference(rows, parts, m, own, keep, bonus, weight):
    rows, parts = rows.copy(), parts.copy()
    start = 0
    while start < m and parts[REASON, start] in (2.0, 3.0):
        start += 1
    others = [j for j in range(start, m) if not own[j]][:keep]
    gained = [j for j in range(start, m) if own[j] or j in others]
    for j in gained:
        parts[SCORE, j] += bonus
        parts[AFFINITY, j] += weight
    if gained:  # none gained: the selection is left as it came
        order = sorted(range(start, m), key=lambda j: -parts[SCORE, j])  # sorted() is stable
        rows[start:m], parts[:, start:m] = rows[order], parts[:, order]
    return rows, parts, bool(gained)


@pytest.mark.parametrize("seed", range(40))
def test_raise_and_order_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    width = 24
    m = int(rng.integers(0, width + 1))
    rows = rng.permutation(100)[:width].astype(np.int64)
    parts = np.zeros((9, width))
    parts[SCORE] = np.round(rng.uniform(5, 15, width), 1)  # rounded: ties occur
    parts[1:7] = rng.random((6, width))
    lead = int(rng.integers(0, 4))
    parts[REASON, :min(lead, m)] = rng.choice([2.0, 3.0], min(lead, m))
    parts[REASON, min(lead, m):] = rng.choice([0.0, 1.0, 4.0], width - min(lead, m))
    parts[SCORE, :min(lead, m)] += 100.0  # the block leads whatever its score
    own = rng.random(width) < 0.4
    bonus = float(rng.choice([0.0, 1.0, 2.0, 5.0]))
    keep = int(rng.integers(0, 4))
    want_rows, want_parts, want = reference(rows, parts, m, own, keep, bonus, bonus / 10)
    got = raise_and_order(rows, parts, m, own, keep, bonus, bonus / 10)
    assert got == want
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(parts, want_parts)
    assert (np.diff(parts[SCORE, min(lead, m):m]) <= 0).all() or not got
