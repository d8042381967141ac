"""The Chroma/PGVector filter operators on MaclawVectorStore: each gives the documents that
InMemoryVectorStore gives with the equivalent Python predicate; other operators raise ValueError."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from maclaw_fast.integrations.langchain import MaclawVectorStore

EMB = DeterministicFakeEmbedding(size=16)
WHO = ["ann", "bob", "cy"]

CASES = [
    ({"n": {"$gt": 4}}, lambda m: m["n"] > 4),
    ({"n": {"$gte": 4, "$lt": 9}}, lambda m: 4 <= m["n"] < 9),
    ({"n": {"$lte": 2}}, lambda m: m["n"] <= 2),
    ({"who": {"$in": ["ann", "cy"]}}, lambda m: m["who"] in ("ann", "cy")),
    ({"who": {"$nin": ["ann"]}}, lambda m: m["who"] != "ann"),
    ({"who": {"$ne": "bob"}}, lambda m: m["who"] != "bob"),
    ({"who": {"$eq": "bob"}}, lambda m: m["who"] == "bob"),
    ({"who": "bob", "n": {"$gt": 3}}, lambda m: m["who"] == "bob" and m["n"] > 3),
    ({"$and": [{"who": "ann"}, {"n": {"$lt": 10}}]}, lambda m: m["who"] == "ann" and m["n"] < 10),
    ({"$or": [{"who": "ann"}, {"n": {"$gte": 15}}]}, lambda m: m["who"] == "ann" or m["n"] >= 15),
    ({"tag": {"$eq": "x"}}, lambda m: m.get("tag") == "x"),
    ({"n": {"$gt": "a"}}, lambda m: False),  # unlike types never match
]


@pytest.fixture(scope="module")
def stores():
    texts = [f"note {i} about {WHO[i % 3]}" for i in range(18)]
    metas = [{"n": i, "who": WHO[i % 3], **({"tag": "x"} if i % 4 == 0 else {})}
             for i in range(18)]
    ids = [f"d{i}" for i in range(18)]
    ours, ref = MaclawVectorStore(EMB), InMemoryVectorStore(EMB)
    ours.add_texts(texts, metas, ids=ids)
    ref.add_texts(texts, metas, ids=ids)
    return ours, ref


@pytest.mark.parametrize("spec,pred", CASES)
def test_operator_filter_matches_the_predicate(stores, spec, pred):
    ours, ref = stores
    got = ours.similarity_search("note about ann", k=18, filter=spec)
    want = ref.similarity_search("note about ann", k=18, filter=lambda d: pred(d.metadata))
    assert [d.id for d in got] == [d.id for d in want]


@pytest.mark.parametrize("spec", [{"n": {"$regex": "1"}}, {"$not": [{"n": 1}]},
                                  {"n": {"$in": "ann"}}, {"$or": []}, {"$and": {"n": 1}},
                                  {"n": {}}])
def test_unknown_or_malformed_operators_raise_value_error(stores, spec):
    with pytest.raises(ValueError):
        stores[0].similarity_search("note", k=3, filter=spec)
