"""Reply documents (``GraphConfig.reply_weight``, ``memory/replies.py``): a reply's BM25 document
holds the question it answers, at that weight, and follows the conversation links through
deletes, edits, archiving and restores, journal replay and reopen."""

from __future__ import annotations

import os
import shutil

import pytest

from maclaw_fast import MemoryConfig, MemoryStore
from maclaw_fast.config import GraphConfig, PersistConfig, RecallConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.text import tokenize

NOW = 1.8e9
QUERIES = ["ferry to Naxos", "pottery", "yoga", "class", "hiking trail", "made a bowl"]
TALK = [("q1", "Ana: Did you ever take the ferry to Naxos?", "s1"),
        ("a1", "Bo: Yes, I did!", "s1"),
        ("q2", "Bo: How was the pottery class?", "s1"),
        ("a2", "Ana: Loved it, I made a bowl.", "s1"),
        ("s3", "Ana: The hiking trail was closed.", "s2"),
        ("a3", "Bo: Oh no, what a pity.", "s2")]


def _talk(store) -> dict[str, str]:
    for i in range(8):
        store.save(f"note {i} on the build cache", category="project")
    return {name: store.save(text, category="conversation_summary", thread=thread).id
            for name, text, thread in TALK}


def _bm25(store, ids, name, query) -> float:
    row = store.row_of_id(ids[name])
    return float(store.bm25.scores(tokenize(query), store.table.n_rows)[row])


def test_a_reply_matches_the_words_of_its_question_at_the_configured_weight():
    off = MemoryConfig(graph=GraphConfig(reply_weight=0.0))
    with MemoryStore.in_memory(embedder=None, clock=lambda: NOW) as on, \
            MemoryStore.in_memory(embedder=None, clock=lambda: NOW, config=off) as plain:
        ids, plain_ids = _talk(on), _talk(plain)
        assert MemoryConfig().graph.reply_weight > 0.0
        reply, question = (_bm25(on, ids, name, "ferry to Naxos") for name in ("a1", "q1"))
        assert 0.0 < reply < question  # the question's words count less than its own
        assert _bm25(plain, plain_ids, "a1", "ferry to Naxos") == 0.0
        assert _bm25(on, ids, "a3", "hiking trail") == 0.0  # it follows no question
        assert _bm25(on, ids, "q2", "made a bowl") == 0.0  # a question holds no reply
        # a whole recall: the short reply comes back for its question's words, not without them
        cfg = RecallConfig(adjacency_hops=0, thread_bm25_weight=0.0, thread_cos_weight=0.0)
        for store, got in ((on, True), (plain, False)):
            store.config = MemoryConfig(recall=cfg, graph=store.config.graph)
            hits = {h.entry.content: h for h in store.recall("was there a ferry to Naxos",
                                                             reinforce=False)}
            assert (hits["Bo: Yes, I did!"].breakdown.bm25 > 0.0) is got
    with pytest.raises(ValidationError):
        GraphConfig(reply_weight=1.5)


def _change(store, ids) -> None:
    """Every change of a reply's question: a delete, an edit, an archive and a restore."""
    store.update(ids["q2"], content="Bo: How was the yoga class?")
    store.delete(ids["q1"])  # a1 follows nothing now
    store.archive_rows([store.row_of_id(ids["s3"])])  # a3 now follows nothing either
    store.save("Ana: Did the trail reopen?", category="conversation_summary", thread="s2")
    store.save("Bo: Not yet.", category="conversation_summary", thread="s2")
    store.restore(ids["s3"])


def _state(store, ids) -> dict:
    return {(name, q): round(_bm25(store, ids, name, q), 9)
            for name in ("a1", "q2", "a2", "a3") for q in QUERIES}


def test_a_reply_document_follows_its_question_through_edits_deletes_and_restores():
    with MemoryStore.in_memory(embedder=None, clock=lambda: NOW) as store:
        ids = _talk(store)
        assert _bm25(store, ids, "a2", "pottery") > 0.0
        _change(store, ids)
        assert _bm25(store, ids, "a2", "pottery") == 0.0
        assert _bm25(store, ids, "a2", "yoga") > 0.0  # the edited question
        assert _bm25(store, ids, "a1", "ferry to Naxos") == 0.0  # its question deleted
        assert _bm25(store, ids, "a3", "hiking trail") == 0.0  # restored before it, no "?"
        assert store.adjacent(ids["a3"])[0] == ids["s3"]


def test_reply_documents_survive_replay_and_reopen(tmp_path):
    slow = MemoryConfig(persist=PersistConfig(snapshot_debounce_s=3600))
    live = MemoryStore.open(tmp_path / "live", embedder=None, config=slow, clock=lambda: NOW)
    ids = _talk(live)
    _change(live, ids)
    want = _state(live, ids)
    shutil.copytree(tmp_path / "live", tmp_path / "copy")  # a crash: only the journal holds it
    live.close()
    path = tmp_path / "copy"
    for _ in ("replayed", "from saved terms"):
        with MemoryStore.open(path, embedder=None, clock=lambda: NOW) as store:
            assert _state(store, ids) == want
    os.remove(path / "terms.bin")  # tokenised: the questions come back with the links
    with MemoryStore.open(path, embedder=None, clock=lambda: NOW) as store:
        assert _state(store, ids) == want
    # a terms.bin made under another weight is not used
    with MemoryStore.open(path, embedder=None, clock=lambda: NOW,
                          config=MemoryConfig(graph=GraphConfig(reply_weight=0.5))) as store:
        assert _state(store, ids) != want
    with MemoryStore.open(path, embedder=None, clock=lambda: NOW) as store:
        assert _state(store, ids) == want


def test_weighted_extra_terms_count_their_weight_in_tf_and_length():
    from maclaw_fast.index.bm25 import Bm25Index

    whole, weighted, plain = (Bm25Index(tantivy_index=False) for _ in range(3))
    for ix in (whole, weighted, plain):
        ix.add(1, ["tea", "green", "tea", "cup"])
    whole.add(0, ["ferry", "boat"] + ["naxos", "trip"])
    weighted.add(0, ["ferry", "boat"], ["naxos", "trip"], 1.0)  # weight 1: the same document
    query = ["naxos", "boat"]
    assert weighted.scores(query, 2).tolist() == whole.scores(query, 2).tolist()
    weighted.add(0, ["ferry", "boat"], ["naxos", "trip"], 0.25)
    plain.add(0, ["ferry", "boat"])
    assert 0.0 < weighted.scores(["naxos"], 2)[0] < whole.scores(["naxos"], 2)[0]
    # the length grows by the extras' share, rounded half up: 2 + round(0.5) = 3 tokens
    assert weighted.avgdl == pytest.approx((3 + 4) / 2) and plain.avgdl == pytest.approx(3.0)
