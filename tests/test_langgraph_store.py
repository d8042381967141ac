"""MaclawLangGraphStore against LangGraph's own InMemoryStore: the behaviours LangGraph documents
and tests for its in-memory store, run on both stores with equal results; then what only ours
has (persistence, TTL) and the refusals."""

from __future__ import annotations

import random

import msgspec
import pytest
from langgraph.store.base import (GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition,
                                  PutOp, SearchOp)
from langgraph.store.memory import InMemoryStore

from maclaw_fast.errors import ValidationError
from maclaw_fast.integrations.langgraph_store import MaclawLangGraphStore
from tests.lg_helpers import TrigramEmbeddings

EMB = TrigramEmbeddings(64)


def _make(kind, tmp_path, index=True, **kw):
    idx = {"dims": EMB.dims, "embed": EMB, "fields": ["text"]} if index else None
    if kind == "langgraph":
        return InMemoryStore(index=idx)
    kw.setdefault("ranking", "cosine")  # InMemoryStore's ranking, compared score for score
    if kind == "maclaw":
        return MaclawLangGraphStore(index=idx, **kw)
    return MaclawLangGraphStore(index=idx, path=tmp_path / "lg", **kw)


KINDS = ["langgraph", "maclaw", "maclaw_disk"]


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


class _Score(float):
    """A score that equals another within float32 rounding (ours are float32 cosines of
    normalised vectors, LangGraph's float64 of raw ones)."""

    def __eq__(self, other):
        return isinstance(other, float) and abs(float(self) - float(other)) < 1e-5

    __hash__ = float.__hash__


def _view(results):
    """What must be equal across stores: keys, namespaces, values, scores."""
    def one(r):
        if r is None or isinstance(r, tuple):
            return r
        if isinstance(r, list):
            return [one(x) for x in r]
        score = getattr(r, "score", None)
        return (r.namespace, r.key, r.value, None if score is None else _Score(score))
    return [one(r) for r in results]


NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
              ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
              ("admin", "users", "789")]


def test_list_namespaces_filters_and_pages(kind, tmp_path):
    results = {}
    for k in ("langgraph", kind):
        s = _make(k, tmp_path / k, index=False)
        for i, ns in enumerate(NAMESPACES):
            s.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
        results[k] = [s.list_namespaces(prefix=("a", "b")), s.list_namespaces(suffix=("f",)),
                      s.list_namespaces(prefix=("a",), suffix=("f",)),
                      s.list_namespaces(prefix=("a", "b"), max_depth=3),
                      s.list_namespaces(prefix=("a", "b"), limit=2),
                      s.list_namespaces(prefix=("a", "b"), offset=2),
                      s.list_namespaces(prefix=("a", "*", "f")),
                      s.list_namespaces(suffix=("*", "f")),
                      s.list_namespaces(prefix=("nonexistent",)),
                      s.list_namespaces(prefix=("users", "123")),
                      s.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")),
                      s.list_namespaces(max_depth=2), s.list_namespaces()]
    assert results[kind] == results["langgraph"]
    assert results[kind][0] == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                ("a", "b", "f")]
    assert results[kind][3] == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert results[kind][8] == [] and results[kind][10] == []


def test_list_namespaces_pagination_and_empty(kind, tmp_path):
    s = _make(kind, tmp_path, index=False)
    assert s.list_namespaces() == []
    for i in range(20):
        s.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for off in (0, 5, 15):
        assert s.list_namespaces(prefix=("namespace",), limit=5, offset=off) == \
            [("namespace", f"sub_{i:02d}") for i in range(off, off + 5)]


async def test_invalid_namespaces_are_refused(kind, tmp_path):
    s = _make(kind, tmp_path, index=False)
    doc = {"foo": "bar"}
    for ns in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            s.put(ns, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await s.aput(ns, "foo", doc)
    await s.aput(("foo", "langgraph", "foo"), "bar", doc)
    assert (await s.aget(("foo", "langgraph", "foo"), "bar")).value == doc
    assert (await s.asearch(("foo", "langgraph", "foo")))[0].value == doc
    await s.adelete(("foo", "langgraph", "foo"), "bar")
    assert await s.aget(("foo", "langgraph", "foo"), "bar") is None
    s.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # below the public put: allowed
    assert s.get(("langgraph", "foo"), "bar").value == doc
    s.delete(("langgraph", "foo"), "bar")
    assert s.get(("langgraph", "foo"), "bar") is None


def test_vector_search_follows_updates_and_index_false(kind, tmp_path):
    s = _make(kind, tmp_path)
    s.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    s.put(("test",), "doc2", {"text": "something about dogs"})
    s.put(("test",), "doc3", {"text": "text about birds"})
    first = s.search(("test",), query="Zany Xerxes")
    assert first[0].key == "doc1"
    s.put(("test",), "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in s.search(("test",), query="Zany Xerxes")}
    assert after["doc1"] < first[0].score
    new = {r.key: r.score for r in s.search(("test",), query="new text about dogs")}
    assert new["doc1"] > after["doc1"]
    s.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in [r.key for r in s.search(("test",), query="new text about dogs",
                                                  limit=3)]


FILTER_DOCS = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
               ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
               ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
               ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]


async def test_search_with_filters_equals_langgraph(kind, tmp_path):
    queries = [("apple", {"color": "red"}), ("car", {"color": "red"}),
               ("bbbbluuu", {"score": {"$gt": 3.2}}),
               ("apple", {"score": {"$gte": 4.0}, "color": "green"}),
               ("car", {"score": {"$lt": 4.0}, "color": {"$ne": "blue"}}), (None, {"color": "red"})]
    got = {}
    for k in ("langgraph", kind):
        s = _make(k, tmp_path / k)
        for key, value in FILTER_DOCS:
            await s.aput(("test",), key, value)
        got[k] = [_view([await s.asearch(("test",), query=q, filter=f)])[0] for q, f in queries]
    assert got[kind] == got["langgraph"]
    assert [r[1] for r in got[kind][0]] == ["doc1", "doc2"]
    assert len(got[kind][2]) == 3 and got[kind][2][0][1] == "doc4"


def test_pagination_and_edge_queries(kind, tmp_path):
    s = _make(kind, tmp_path)
    for i in range(5):
        s.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    p1 = s.search(("test",), query="test", limit=2)
    p2 = s.search(("test",), query="test", limit=2, offset=2)
    assert len(p1) == len(p2) == 2 and {r.key for r in p1}.isdisjoint(r.key for r in p2)
    assert len(s.search(("test",), query="test", limit=10)) == 5
    for q in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(s.search(("test",), query=q, limit=10)) == 5


def test_batch_reads_before_writes_and_last_write_wins(kind, tmp_path):
    out = {}
    for k in ("langgraph", kind):
        s = _make(k, tmp_path / k)
        s.put(("n",), "k", {"text": "old"})
        out[k] = _view(s.batch([PutOp(("n",), "k", {"text": "new"}), GetOp(("n",), "k"),
                                PutOp(("n",), "k", {"text": "newest"}),
                                SearchOp(("n",), query="newest"),
                                ListNamespacesOp(match_conditions=(
                                    MatchCondition("prefix", ("n",)),))]))
        out[k].append(_view([s.get(("n",), "k")]))
    assert out[kind] == out["langgraph"]
    assert out[kind][1][2] == {"text": "old"} and out[kind][-1][0][2] == {"text": "newest"}


def test_random_operation_sequences_give_equal_results(kind, tmp_path):
    rng = random.Random(7)
    words = ["tea", "deploy", "staging", "ray", "cluster", "zebra", "apple", "region"]
    spaces = [("u", "lin"), ("u", "ana"), ("u", "lin", "notes"), ("proj", "atlas")]
    # each namespace is first made by a put: LangGraph's store also makes one on a get (an
    # empty namespace it then lists), which ours does not
    # (texts are unique: LangGraph's store fails on two equal texts in one batch)
    ops = [PutOp(ns, "seed", {"text": f"seed {i}", "n": 0, "tags": []})
           for i, ns in enumerate(spaces)]
    for step in range(300):
        ns, key = rng.choice(spaces), f"k{rng.randrange(12)}"
        r = rng.random()
        if r < 0.45:
            value = {"text": " ".join(rng.sample(words, 3)) + f" {step}", "n": rng.randrange(5),
                     "tags": rng.sample(words, 2)}
            ops.append(PutOp(ns, key, value))  # index=False: see the test below
        elif r < 0.55:
            ops.append(PutOp(ns, key, None))
        elif r < 0.7:
            ops.append(GetOp(ns, key))
        elif r < 0.92:
            flt = rng.choice([None, {"n": 2}, {"n": {"$gte": 3}}, {"tags": {"$ne": None}}])
            ops.append(SearchOp(ns[:rng.randrange(len(ns) + 1)], filter=flt,
                                query=rng.choice([None, " ".join(rng.sample(words, 2))]),
                                limit=rng.randrange(1, 8), offset=rng.randrange(3)))
        else:
            ops.append(ListNamespacesOp(max_depth=rng.choice([None, 1, 2]),
                                        match_conditions=(MatchCondition("suffix", ("lin",)),)
                                        if rng.random() < 0.5 else None))
    ref, ours = _make("langgraph", tmp_path), _make(kind, tmp_path)
    for i in range(0, len(ops), 4):  # batches of four
        assert _view(ours.batch(ops[i:i + 4])) == _view(ref.batch(ops[i:i + 4])), f"batch {i}"


def test_unindexed_rewrite_drops_the_old_vector(tmp_path):
    """put(index=False) over an indexed item leaves it without a vector (LangGraph's in-memory
    store keeps scoring it by its old text)."""
    s = _make("maclaw", tmp_path)
    s.put(("a",), "k", {"text": "zebra stripes"})
    s.put(("a",), "k", {"text": "nothing alike"}, index=False)
    [hit] = s.search(("a",), query="zebra stripes")
    assert hit.score is None and len(s.store) == 0


def test_items_survive_reopen_faithfully(tmp_path):
    s = _make("maclaw_disk", tmp_path)
    s.put(("u", "lin"), "a", {"text": "green tea at four", "nested": {"x": [1, 2.5, None]}})
    s.put(("u", "lin"), "b", {"text": "deploy.sh needs AWS_REGION"})
    s.put(("u", "ana"), "c", {"text": "ray cluster on two nodes"})
    s.delete(("u", "lin"), "b")
    before = [s.get(("u", "lin"), "a"), s.search(("u",), query="green tea"),
              s.list_namespaces()]
    s.close()
    s = _make("maclaw_disk", tmp_path)
    after = [s.get(("u", "lin"), "a"), s.search(("u",), query="green tea"),
             s.list_namespaces()]
    assert after == before  # Item equality includes both timestamps
    assert s.get(("u", "lin"), "b") is None and len(s.store) == 2
    s.close()


def test_ttl_expires_refreshes_and_sweeps(tmp_path):
    now = [1000.0]
    s = MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["text"]},
                             path=tmp_path / "ttl", ttl={"default_ttl": 2.0, "refresh_on_read": True},
                             clock=lambda: now[0])
    s.put(("t",), "short", {"text": "short lived"}, ttl=1.0)
    s.put(("t",), "default", {"text": "default ttl"})
    s.put(("t",), "forever", {"text": "kept"}, ttl=None)
    now[0] += 50
    assert s.get(("t",), "short") is not None  # read at 50 s: refreshed to expire at 110 s
    now[0] += 100  # 150 s: "short" (110 s) and "default" (120 s) have expired
    assert s.get(("t",), "short") is None and s.get(("t",), "default") is None
    assert [i.key for i in s.search(("t",))] == ["forever"]
    assert s.list_namespaces() == [("t",)]
    assert s.sweep_ttl() == 2 and len(s.store) == 1
    s.put(("t",), "n", {"text": "no refresh"}, ttl=1.0)
    now[0] += 50
    s.get(("t",), "n", refresh_ttl=False)
    now[0] += 20
    assert s.get(("t",), "n") is None
    s.close()


def test_refusals_leave_the_store_unchanged(tmp_path):
    s = _make("maclaw", tmp_path)
    s.put(("a",), "k", {"text": "kept"})
    bad = [lambda: s.put(("a",), "x", {"v": object()}),
           lambda: s.put(("a",), "x", {1: "non-string key"}),
           lambda: s.put(("a",), "x", {"text": "t"}, index="text"),
           lambda: s.put(("a",), "x", {"text": "t"}, ttl=-1),
           lambda: s.search(("a",), filter={"n": {"$regex": "x"}}),
           lambda: s.search(("a",), limit=-1),
           lambda: s.batch([PutOp(("a",), "ok", {"text": "t"}), PutOp(("a",), "x", "str")]),
           lambda: s.list_namespaces(max_depth=0)]
    for call in bad:
        with pytest.raises(ValidationError):
            call()
    assert [i.key for i in s.search(("a",))] == ["k"] and len(s.store) == 1
    plain = MaclawLangGraphStore()
    with pytest.raises(ValidationError, match="index config"):
        plain.put(("a",), "k", {"text": "t"}, index=["text"])
    for cfg in ({"dims": 8, "embed": EMB, "distance": "l2"}, {"dims": -1, "embed": EMB}):
        with pytest.raises(ValidationError):
            MaclawLangGraphStore(index=cfg)
    with pytest.raises(ValidationError, match="cosine"):
        MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "distance_type": "l2"})
    with pytest.raises(ValidationError, match="ranking"):
        MaclawLangGraphStore(ranking="bm25")


def test_a_store_with_its_own_embedder_indexes_whole_values():
    from maclaw_fast import MemoryStore
    from maclaw_fast.integrations.langchain import MaclawEmbeddings

    mem = MemoryStore.in_memory(embedder="hash")
    ours = MaclawLangGraphStore(store=mem, ranking="cosine")
    ref = InMemoryStore(index={"dims": mem.dim, "embed": MaclawEmbeddings(mem.embedder)})
    for s in (ours, ref):
        s.put(("m",), "1", {"content": "Lin prefers green tea"})
        s.put(("m",), "2", {"content": "deploy.sh fails without AWS_REGION"})
    assert _view([ours.search(("m",), query="green tea")]) == \
        _view([ref.search(("m",), query="green tea")])


def test_hybrid_search_puts_a_keyword_match_first(tmp_path):
    """The default ranking is the engine's recall: an item that holds the query's rare word comes
    first although its text's cosine ranks it low; ``ranking="cosine"`` ranks as InMemoryStore."""
    docs = {"kw": {"text": "notes on zebrafish tanks"}, "near1": {"text": "zebra fish"},
            "near2": {"text": "zebra-fish"}, "near3": {"text": "zebra fishes"},
            "other": {"text": "quarterly budget review"}}
    query = "zebrafish"
    got = {}
    for ranking in ("hybrid", "cosine"):
        s = MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["text"]},
                                 ranking=ranking)
        for key, value in docs.items():
            s.put(("d",), key, value)
        got[ranking] = [i.key for i in s.search(("d",), query=query)]
    ref = InMemoryStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["text"]})
    for key, value in docs.items():
        ref.put(("d",), key, value)
    assert got["cosine"] == [i.key for i in ref.search(("d",), query=query)]
    assert got["cosine"].index("kw") == 3  # cosine ranks the only keyword match fourth
    assert got["hybrid"][0] == "kw" and sorted(got["hybrid"]) == sorted(docs)


def test_hybrid_search_pages_past_the_recalled_entries(monkeypatch):
    """Items beyond the recall's candidates follow by cosine, then items without a vector; pages
    neither repeat nor skip an item."""
    s = MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["text"]})
    for i in range(12):
        s.put(("p",), f"k{i:02d}", {"text": f"note {i} about item {i * 7}"})
    s.put(("p",), "plain", {"text": "not indexed"}, index=False)
    full = [i.key for i in s.search(("p",), query="note about item 21", limit=20)]
    cfg = s.store.config  # recall ranks only 5 entries: the other 7 come by cosine
    monkeypatch.setattr(s.store, "config", msgspec.structs.replace(
        cfg, recall=msgspec.structs.replace(cfg.recall, max_entries=5)))
    paged = [i.key for off in range(0, 13, 4)
             for i in s.search(("p",), query="note about item 21", limit=4, offset=off)]
    assert sorted(paged) == sorted(full) and len(paged) == 13 and paged[-1] == "plain"
    assert paged[:5] == full[:5]


def test_dotted_filters_and_sql_index_settings():
    """Filter keys as the SQL stores read them (a dotted path into nested values; InMemoryStore
    reads them literally), and their index settings that mean something here."""
    s = MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["text"],
                                    "distance_type": "cosine",
                                    "ann_index_config": {"kind": "hnsw", "m": 16}})
    sql = MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "text_fields": "title"})
    assert sql.fields == ["title"]  # SqliteStore's name for fields, a string or a list
    with pytest.raises(ValidationError, match="text_fields"):
        MaclawLangGraphStore(index={"dims": EMB.dims, "embed": EMB, "fields": ["a"],
                                    "text_fields": ["b"]})
    s.put(("f",), "a", {"text": "one", "meta": {"owner": "lin", "n": 3}})
    s.put(("f",), "b", {"text": "two", "meta": {"owner": "ana", "n": 5}})
    s.put(("f",), "c", {"text": "three", "meta.owner": "lin"})  # a literal dotted key wins
    found = {k: [i.key for i in s.search(("f",), filter=f)]
             for k, f in {"eq": {"meta.owner": "lin"}, "gt": {"meta.n": {"$gt": 4}},
                          "none": {"meta.owner.x": "lin"}}.items()}
    assert found == {"eq": ["a", "c"], "gt": ["b"], "none": []}


def test_omit_expired_false_returns_expired_items_until_the_sweep():
    now = [0.0]
    s = MaclawLangGraphStore(ttl={"omit_expired": False, "sweep_interval_minutes": 60},
                             clock=lambda: now[0])
    s.put(("t",), "k", {"v": 1}, ttl=1.0)
    now[0] = 120.0
    assert s.get(("t",), "k", refresh_ttl=False).value == {"v": 1}
    assert len(s.search(("t",), refresh_ttl=False)) == 1
    assert s.sweep_ttl() == 1 and s.get(("t",), "k") is None
    with pytest.raises(ValidationError):
        MaclawLangGraphStore(ttl={"omit_expired": "no"})


def test_deletes_leave_no_meta_behind(tmp_path):
    s = _make("maclaw_disk", tmp_path)
    for i in range(20):
        s.put(("u",), f"k{i}", {"text": f"item {i}"})
    for i in range(20):
        s.delete(("u",), f"k{i}")
    assert not any(k.startswith("langgraph/") for k in s.store.meta)
    s.put(("u",), "kept", {"text": "kept"})
    s.close()
    s = _make("maclaw_disk", tmp_path)  # replayed from the journal
    assert [k for k in s.store.meta if k.startswith("langgraph/")] == ['langgraph/[["u"],"kept"]']
    assert [i.key for i in s.search(("u",))] == ["kept"] and len(s.store) == 1
    s.close()
