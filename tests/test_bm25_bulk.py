"""Bulk indexing: the count_terms kernel and Bm25Index.add_many against one-by-one adds."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from maclaw_fast.index.bm25 import Bm25Index
from maclaw_kernels.bm25 import count_terms


@pytest.mark.parametrize("seed", range(10))
def test_count_terms_matches_counter(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, size=int(rng.integers(1, 20)))
    flat = rng.integers(0, 12, size=int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    terms = np.zeros(flat.size, np.int32)
    tfs = np.zeros(flat.size, np.float32)
    nterms = np.zeros(lengths.size, np.int32)
    used = count_terms(flat, offsets, 12, terms, tfs, nterms)
    pos = 0
    for d in range(lengths.size):
        want = Counter(flat[offsets[d]:offsets[d + 1]].tolist())
        got = dict(zip(terms[pos:pos + nterms[d]].tolist(), tfs[pos:pos + nterms[d]].tolist()))
        assert got == want
        pos += nterms[d]
    assert used == pos


@pytest.mark.parametrize("seed", range(5))
def test_add_many_equals_adds_and_tantivy(seed):
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(200)] + ["部署", "脚本", "数据库"]
    docs = {k: [rnd.choice(words) for _ in range(rnd.randint(0, 70))] for k in range(300)}
    one, bulk = Bm25Index(), Bm25Index()
    for k, toks in docs.items():
        one.add(k, toks)
    keys = list(docs)
    bulk.add_many(keys[:120], [docs[k] for k in keys[:120]])
    bulk.add_many(keys[120:], [docs[k] for k in keys[120:]])
    for k in rnd.sample(keys, 20):  # updates through add_many replace the old document
        docs[k] = [rnd.choice(words) for _ in range(rnd.randint(1, 50))]
        one.add(k, docs[k])
        bulk.add_many([k], [docs[k]])
    for k in rnd.sample(keys, 15):
        one.remove(k)
        bulk.remove(k)
    for _ in range(25):
        q = [rnd.choice(words) for _ in range(3)]
        a, b = one.scores(q, 300), bulk.scores(q, 300)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        for key, score in bulk.tantivy_scores(q).items():
            assert b[key] == pytest.approx(score, rel=1e-4)


def test_add_many_rejects_mismatched_input():
    with pytest.raises(ValueError):
        Bm25Index().add_many([1, 1], [["a"], ["b"]])
    with pytest.raises(ValueError):
        Bm25Index().add_many([1], [])
