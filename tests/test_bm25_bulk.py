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


def test_queries_fold_a_long_tail_into_the_postings():
    """Docs added after the last postings build are scanned doc by doc; once queries have
    scanned as many tail postings as a rebuild would touch, the index rebuilds, and the scores
    do not change (to rounding: the tail sums a doc's terms in another order)."""
    rng = random.Random(3)
    vocab = [f"t{i}" for i in range(50)]
    idx = Bm25Index(tantivy_index=False)
    idx.add_many(list(range(400)), [rng.choices(vocab, k=12) for _ in range(400)])
    for key in range(400, 440):  # below the insert-time rebuild threshold
        idx.add(key, rng.choices(vocab, k=12))
    assert idx._main_upto < idx._n_docs
    queries = [rng.choices(vocab, k=3) for _ in range(40)]
    before = [idx.scores(q, 440) for q in queries[:1]]
    rebuilt_after = None
    for i, q in enumerate(queries):
        idx.scores(q, 440)
        if idx._main_upto == idx._n_docs:
            rebuilt_after = i + 1
            break
    assert rebuilt_after is not None and rebuilt_after > 1
    np.testing.assert_allclose(idx.scores(queries[0], 440), before[0], rtol=1e-12)


def test_parallel_query_path_gives_identical_scores(monkeypatch):
    """Above PARALLEL_POSTINGS a query splits its documents across numba's threads; through the
    index API the scores equal the serial path's exactly, with a tail and deleted docs."""
    import maclaw_fast.index.bm25 as bm25_module

    rng = random.Random(11)
    vocab = [f"t{i}" for i in range(80)] + ["部署", "脚本"]
    idx = Bm25Index(tantivy_index=False)
    idx.add_many(list(range(600)), [rng.choices(vocab, k=rng.randint(1, 20)) for _ in range(600)])
    for key in range(600, 660):
        idx.add(key, rng.choices(vocab, k=10))
    for key in rng.sample(range(660), 40):
        idx.remove(key)
    queries = [rng.choices(vocab, k=rng.randint(1, 5)) for _ in range(30)]
    idx._tail_work = -10**12  # keep the tail unfolded: a fold changes the summation order
    assert idx._main_upto < idx._n_docs
    serial = [idx.scores(q, 660) for q in queries]
    monkeypatch.setattr(bm25_module, "PARALLEL_POSTINGS", 0)
    for q, want in zip(queries, serial):
        assert idx.scores(q, 660).tolist() == want.tolist()
    assert idx._main_upto < idx._n_docs
