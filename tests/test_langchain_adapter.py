"""LangChain adapters beyond the standard suites: metadata kept across a reopen, shared
contents, filters, MMR against a plain reference, the hybrid retriever's breakdown, and every
unsupported argument refused."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from maclaw_fast import MemoryStore
from maclaw_fast.errors import ValidationError
from maclaw_fast.integrations.langchain import (EmbeddingsEmbedder, MaclawEmbeddings,
                                                MaclawRetriever, MaclawVectorStore)

EMB = DeterministicFakeEmbedding(size=16)
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _texts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=4)) + f" #{i}" for i in range(n)]


def test_similar_equals_numpy_cosine_ranking():
    store = MemoryStore.in_memory(embedder=EmbeddingsEmbedder(EMB))
    texts = _texts(60)
    for t in texts:
        store.save(t, category="project")
    q = np.random.default_rng(1).normal(size=16)
    got = store.similar(q, k=10)
    mat = np.stack([store.vector(e.id) for e in store.entries()])
    ref = mat @ (q / np.linalg.norm(q)).astype(np.float32)
    order = np.argsort(-ref, kind="stable")[:10]
    assert [e.id for e, _ in got] == [store.entries()[i].id for i in order]
    assert np.allclose([s for _, s in got], ref[order], atol=1e-5)
    with pytest.raises(ValidationError):
        store.similar(q, k=-1)
    with pytest.raises(ValidationError):
        store.similar(np.ones(3), k=1)


def test_search_matches_langchain_in_memory_store():
    texts = _texts(40, seed=2)
    metas = [{"i": i, "even": i % 2 == 0} for i in range(40)]
    ids = [f"d{i}" for i in range(40)]
    ours, ref = MaclawVectorStore(EMB), InMemoryVectorStore(EMB)
    ours.add_texts(texts, metas, ids=ids)
    ref.add_texts(texts, metas, ids=ids)
    for q in ["alpha beta", "kappa iota theta", texts[7]]:
        a = ours.similarity_search_with_score(q, k=5)
        b = ref.similarity_search_with_score(q, k=5)
        assert [d.id for d, _ in a] == [d.id for d, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
        a = ours.similarity_search(q, k=4, filter={"even": True})
        b = ref.similarity_search(q, k=4, filter=lambda d: d.metadata["even"])
        assert [d.id for d in a] == [d.id for d in b] and all(d.metadata["even"] for d in a)
        a = ours.max_marginal_relevance_search(q, k=4, fetch_k=12, lambda_mult=0.3)
        b = ref.max_marginal_relevance_search(q, k=4, fetch_k=12, lambda_mult=0.3)
        assert [d.id for d in a] == [d.id for d in b]


def test_metadata_and_ids_survive_reopen(tmp_path):
    vs = MaclawVectorStore(EMB, path=tmp_path / "s")
    vs.add_texts(["one fact", "two fact", "three fact"],
                 [{"n": 1, "tags": ["a"]}, {"n": 2}, {"nested": {"x": 1.5}}], ids=["a", "b", "c"])
    vs.delete(["b"])
    vs.add_texts(["one fact, edited"], [{"n": 10}], ids=["a"])
    vs.close()
    vs = MaclawVectorStore(EMB, path=tmp_path / "s")
    got = {d.id: (d.page_content, d.metadata) for d in vs.get_by_ids(["a", "b", "c"])}
    assert got == {"a": ("one fact, edited", {"n": 10}), "c": ("three fact", {"nested": {"x": 1.5}})}
    assert len(vs.store) == 2  # the replaced and the deleted entries are gone
    vs.close()


def test_identical_contents_keep_each_id():
    vs = MaclawVectorStore(EMB)
    vs.add_texts(["same text", "same text"], [{"k": 1}, {"k": 2}], ids=["x", "y"])
    assert len(vs.store) == 1
    hits = vs.similarity_search("same text", k=5)
    assert [(d.id, d.metadata) for d in hits] == [("x", {"k": 1}), ("y", {"k": 2})]
    vs.delete(["x"])
    assert [d.id for d in vs.similarity_search("same text", k=5)] == ["y"]
    vs.delete(["y"])
    assert len(vs.store) == 0


def test_entries_saved_elsewhere_answer_to_their_own_id():
    store = MemoryStore.in_memory(embedder=EmbeddingsEmbedder(EMB))
    e = store.save("saved through the store API", category="preference", tags=["t"])
    vs = MaclawVectorStore(EMB, store=store)
    [doc] = vs.get_by_ids([e.id])
    assert doc.page_content == e.content and doc.metadata == {"category": "preference",
                                                              "tags": ["t"]}
    vs.delete([e.id])
    assert e.id not in store


def test_bad_values_are_refused_before_any_change_and_extra_keywords_ignored():
    """As InMemoryVectorStore: keyword arguments a call does not use are ignored (a retriever's
    search_kwargs copied from another store keep working); bad values are refused."""
    vs = MaclawVectorStore(EMB)
    with pytest.raises(ValidationError):
        vs.add_texts(["a", "b"], [{"ok": 1}, {"bad": object()}])
    with pytest.raises(ValidationError):
        vs.add_texts(["a", "b"], ids=["same", "same"])
    with pytest.raises(ValidationError):
        vs.add_texts(["a", " "])
    assert len(vs.store) == 0
    for call in (lambda: vs.similarity_search("a", k=-1),
                 lambda: vs.similarity_search("a", filter="even"),
                 lambda: vs.similarity_search("a", filter={"n": {"$regex": "x"}}),
                 lambda: vs.similarity_search("a", filter={"$not": {"n": 1}}),
                 lambda: vs.similarity_search("a", filter={"n": {"$in": 3}}),
                 lambda: vs.max_marginal_relevance_search("a", lambda_mult=2.0),
                 lambda: MaclawVectorStore.from_texts(["a"], EMB, collection="c")):
        with pytest.raises(ValidationError):
            call()
    assert vs.add_texts(["a"], namespace="x") and len(vs.store) == 1
    assert vs.similarity_search("a", k=1, where="x")[0].page_content == "a"
    assert vs.max_marginal_relevance_search("a", k=1, score_threshold=0.2)
    assert vs.delete() is True and vs.delete(None) is True and len(vs.store) == 1
    assert vs.delete(["nope"], cascade=True) is True


def ref_match(spec, meta):
    """A plain reading of the operator filters (Chroma / PGVector / Mongo style)."""
    missing = object()
    for key, cond in spec.items():
        if key == "$and":
            if not all(ref_match(s, meta) for s in cond):
                return False
            continue
        if key == "$or":
            if not any(ref_match(s, meta) for s in cond):
                return False
            continue
        v = meta.get(key, missing)
        ops = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, a in ops.items():
            if op == "$eq":
                ok = v is not missing and v == a
            elif op == "$ne":
                ok = v is missing or v != a
            elif op == "$in":
                ok = v is not missing and v in a
            elif op == "$nin":
                ok = v is missing or v not in a
            else:
                try:
                    ok = v is not missing and {"$gt": v > a if v is not missing else False,
                                               "$gte": v >= a, "$lt": v < a,
                                               "$lte": v <= a}[op]
                except TypeError:
                    ok = False
            if not ok:
                return False
    return True


def test_operator_filters_select_what_a_plain_reading_selects():
    import datetime as dt
    import random

    rng = random.Random(3)
    vs = MaclawVectorStore(EMB)
    metas = [{"n": rng.randint(0, 9), "who": rng.choice(["ann", "bo", "cy"]),
              "when": dt.datetime(2026, 1, 1 + rng.randint(0, 20), 12, 0)} for _ in range(40)]
    for m in metas[::5]:
        del m["n"]  # some documents lack the field
    ids = vs.add_texts([f"note {i} about tea" for i in range(40)], metas)
    day = dt.datetime(2026, 1, 10, 12, 0)
    filters = [{"n": {"$gt": 4}}, {"n": {"$gte": 4, "$lt": 7}}, {"who": {"$in": ["ann", "cy"]}},
               {"who": {"$nin": ["ann"]}}, {"n": {"$ne": 3}}, {"n": 5}, {"n": {"$eq": 5}},
               {"$or": [{"n": {"$lte": 1}}, {"who": "bo"}]},
               {"$and": [{"n": {"$gt": 2}}, {"who": {"$ne": "cy"}}]},
               {"when": {"$gte": day}}, {"who": "ann", "n": {"$lt": 5}}, {"n": {"$gt": "x"}}]
    for spec in filters:
        got = {d.id for d in vs.similarity_search("tea", k=100, filter=spec)}
        want = {i for i, m in zip(ids, metas) if ref_match(spec, m)}
        assert got == want, spec
    doc = vs.get_by_ids([ids[1]])[0]
    assert doc.metadata["when"] == metas[1]["when"]  # a datetime comes back a datetime
    assert isinstance(doc.metadata["when"], dt.datetime)
    with pytest.raises(ValidationError, match="dimension"):
        MaclawVectorStore(EMB, store=MemoryStore.in_memory(embedder="hash"))


def test_relevance_scores_and_retriever_from_vectorstore():
    vs = MaclawVectorStore.from_texts(["cats purr", "dogs bark"], EMB, ids=["c", "d"])
    [(doc, rel)] = vs.similarity_search_with_relevance_scores("cats purr", k=1)
    assert doc.id == "c" and rel == pytest.approx(1.0, abs=1e-5)
    r = vs.as_retriever(search_kwargs={"k": 1})
    assert [d.id for d in r.invoke("dogs bark")] == ["d"]


def test_hybrid_retriever_documents_carry_the_recall_breakdown():
    store = MemoryStore.in_memory(embedder="hash", clock=lambda: 1_700_000_000.0)
    store.save("I am Juniper, a coding agent", category="self_identity")
    store.save("deploy.sh fails on staging without AWS_REGION", category="project",
               tags=["atlas"])
    store.save("Lin prefers green tea", category="preference")
    hits = store.recall("deploy.sh staging", project="atlas", reinforce=False)
    docs = MaclawRetriever(store=store, k=10, project="atlas").invoke("deploy.sh staging")
    assert [d.metadata["maclaw"]["entry_id"] for d in docs] == [h.entry.id for h in hits]
    for d, h in zip(docs, hits):
        m = d.metadata["maclaw"]
        assert d.page_content == h.entry.content and m["score"] == h.score
        assert m["reason"] == h.reason and m["breakdown"]["bm25"] == h.breakdown.bm25
        assert m["breakdown"]["cos"] == h.breakdown.cos
    assert docs[0].metadata["maclaw"]["reason"] == "self_identity"
    r = MaclawRetriever(store=store, k=5)
    with pytest.raises(ValidationError, match="filter"):
        r.invoke("x", filter={"a": 1})
    with pytest.raises(ValidationError):
        MaclawRetriever(store=store, category="preference").invoke("tea")
    with pytest.raises(ValueError):
        MaclawRetriever(store="not a store")
    dyn = MaclawRetriever(store=store, dynamic=True, category="preference").invoke("tea")
    assert [d.page_content for d in dyn] == ["Lin prefers green tea"]


def test_retriever_over_vectorstore_keeps_ids_and_metadata():
    vs = MaclawVectorStore(EMB)
    vs.add_documents([Document("the cluster runs on ray", metadata={"src": "notes"}),
                      Document("tea at four", metadata={"src": "chat"})], ids=["r", "t"])
    # the fake embedding's vectors are random, and min-max cosine makes them half the relevance:
    # the order of two hits is not this test's subject, the ids and metadata each one keeps are
    docs = {d.id: d for d in MaclawRetriever(store=vs, k=2).invoke("ray cluster")}
    assert set(docs) == {"r", "t"}
    assert docs["r"].metadata["src"] == "notes" and docs["t"].metadata["src"] == "chat"
    assert docs["r"].metadata["maclaw"]["breakdown"]["bm25"] > 0


def test_embeddings_wrapper_matches_the_embedder():
    emb = MaclawEmbeddings("hash")
    got = np.asarray(emb.embed_documents(["green tea", "deploy"]), dtype=np.float32)
    assert np.allclose(got, emb.embedder.embed(["green tea", "deploy"]), atol=1e-6)
    with pytest.raises(ValidationError):
        emb.embed_documents("one string")
    with pytest.raises(ValidationError):
        MaclawEmbeddings(None)


def test_keyword_arguments_and_delete_none_follow_in_memory_store():
    ours, ref = MaclawVectorStore(EMB), InMemoryVectorStore(EMB)
    for vs in (ours, ref):
        vs.add_texts(["alpha beta", "gamma delta"], ids=["a", "b"], namespace="x")
        vs.delete(None)
        vs.delete(["zz"], cascade=True)
    assert len(ours.get_by_ids(["a", "b"])) == len(ref.get_by_ids(["a", "b"])) == 2
    for kw in ({"where": "x"}, {"score_threshold": 0.2}, {"search_type": "y"}):
        got = ours.similarity_search("alpha", k=2, **kw)
        want = ref.similarity_search("alpha", k=2, **kw)
        assert [d.id for d in got] == [d.id for d in want]
    r = ours.as_retriever(search_kwargs={"k": 1, "fetch_k": 5})
    assert len(r.invoke("alpha")) == 1
