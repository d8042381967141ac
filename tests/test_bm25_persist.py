"""Bm25Index postings saved and loaded back (what a store's reopen uses): the loaded index scores
every query as an index built by adding the same documents one by one, before and after further
edits; inconsistent postings are refused and leave the index empty."""

from __future__ import annotations

import random

import msgspec
import numpy as np
import pytest

from maclaw_fast.index.bm25 import Bm25Index


def _random_index(rnd: random.Random) -> tuple[Bm25Index, dict[int, list[str]]]:
    words = [f"w{i}" for i in range(150)] + ["部署", "脚本"]
    ix = Bm25Index(tantivy_index=False)
    docs: dict[int, list[str]] = {}
    for _ in range(rnd.randint(1, 250)):  # adds, replacements and removes in random order
        key = rnd.randrange(300)
        if rnd.random() < 0.15 and docs:
            gone = rnd.choice(sorted(docs))
            ix.remove(gone)
            del docs[gone]
            continue
        toks = [rnd.choice(words) for _ in range(rnd.randint(0, 40))]
        ix.add(key, toks)
        docs[key] = toks
    return ix, docs


def _queries(rnd: random.Random) -> list[list[str]]:
    return [[f"w{rnd.randrange(160)}" for _ in range(rnd.randint(1, 5))] for _ in range(20)]


@pytest.mark.parametrize("seed", range(8))
def test_loaded_postings_score_as_documents_added_one_by_one(seed):
    rnd = random.Random(seed)
    ix, docs = _random_index(rnd)
    keys = sorted(docs)
    rnd.shuffle(keys)  # the saved order is the caller's (a snapshot's row order)
    loaded = Bm25Index(tantivy_index=False)
    assert loaded.load_postings(np.arange(len(keys)), ix.postings(keys))
    plain = Bm25Index(tantivy_index=False)
    for row, key in enumerate(keys):
        plain.add(row, docs[key])
    n = len(keys) + 10
    for q in _queries(rnd):
        np.testing.assert_allclose(loaded.scores(q, n), plain.scores(q, n), rtol=1e-6)
        np.testing.assert_allclose(loaded.scores_batch([q, q[:1]], n),
                                   plain.scores_batch([q, q[:1]], n), rtol=1e-6)
    # later edits: the loaded arrays are the index's own and grow like any others
    for _ in range(60):
        row = rnd.randrange(n)
        if rnd.random() < 0.3:
            loaded.remove(row)
            plain.remove(row)
        else:
            toks = [f"w{rnd.randrange(170)}" for _ in range(rnd.randint(0, 30))]
            loaded.add(row, toks)
            plain.add(row, toks)
    for q in _queries(rnd):
        np.testing.assert_allclose(loaded.scores(q, n), plain.scores(q, n), rtol=1e-6)


def test_an_index_with_documents_or_a_vocabulary_refuses_postings():
    ix = Bm25Index(tantivy_index=False)
    ix.add(0, ["tea", "green"])
    p = ix.postings([0])
    busy = Bm25Index(tantivy_index=False)
    busy.add(5, ["coffee"])
    assert not busy.load_postings([0], p)
    assert busy.scores(["tea"], 6).tolist() == [0.0] * 6
    assert not Bm25Index().load_postings([0, 0], ix.postings([0, 0]))  # repeated keys


@pytest.mark.parametrize("damage", ["term", "doc", "indptr", "offsets", "words", "lengths"])
def test_inconsistent_postings_are_refused_and_change_nothing(damage):
    ix = Bm25Index(tantivy_index=False)
    ix.add(0, ["tea", "green", "tea"])
    ix.add(1, ["coffee", "green"])
    p = ix.postings([0, 1])
    bad = {
        "term": {"terms": p.terms + 5},
        "doc": {"docs": p.docs + 2},
        "indptr": {"indptr": p.indptr[:-1]},
        "offsets": {"offsets": p.offsets[::-1].copy()},
        "words": {"words": ["tea", "tea", "coffee"]},
        "lengths": {"lengths": p.lengths[:1]},
    }[damage]
    fresh = Bm25Index(tantivy_index=False)
    assert not fresh.load_postings([0, 1], msgspec.structs.replace(p, **bad))
    assert len(fresh) == 0 and len(fresh.vocab) == 0
    assert fresh.load_postings([0, 1], p)  # the intact postings still load
    np.testing.assert_allclose(fresh.scores(["green"], 2), ix.scores(["green"], 2))
