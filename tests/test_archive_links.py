"""Archive search over conversation links (design R9, R5): archived entries keep the ids of
their conversation neighbours (journal, Arrow snapshot columns; an archive written without them
still opens), archive search walks them as recall walks the store's links, a restored entry
rejoins its conversation, and archived hits are normalised over the store's candidates as the
kernel normalises a row."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pyarrow as pa
import pytest

from maclaw_fast.config import CATEGORY_TABLE, MemoryConfig, RecallConfig
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.archive import LINK_COLUMNS, Archive
from maclaw_fast.persist.snapshot import read_snapshot, write_snapshot
from maclaw_fast.records import Entry
from tests.maint_helpers import Clock

QUERY = "what did Caroline take away from the book Becoming Nicole"


def with_forgetting(config: MemoryConfig, **changes) -> MemoryConfig:
    return msgspec.structs.replace(config, forgetting=msgspec.structs.replace(
        config.forgetting, **changes))


def conversation(store, clock):
    """Filler notes, then a question and its reply in one thread, then more talk: the question
    and the reply are archived (as GC archives the oldest turns)."""
    for i in range(12):
        clock.t += 60
        store.save(f"note {i} about the weather and the garden", category="project_knowledge")
    clock.t += 60
    q = store.save("What did you take away from the book Becoming Nicole?",
                   category="conversation_summary", thread="talk")
    clock.t += 60
    a = store.save("It taught me self-acceptance", category="conversation_summary",
                   thread="talk")
    clock.t += 60
    after = store.save("Then we talked about the hiking trip", category="conversation_summary",
                       thread="talk")
    store.archive_rows([store.row_of_id(q.id), store.row_of_id(a.id)])
    return q, a, after


def test_an_archived_reply_comes_back_with_its_archived_question():
    """The query cues the archived question strongly and the reply not at all (no shared word,
    no embedder): the reply is returned through the archived link, its graph part > 0; with the
    walk off it is not."""
    clock = Clock()
    with MemoryStore.in_memory(embedder=None, clock=clock) as s:
        q, a, after = conversation(s, clock)
        assert s.archive.neighbours(q.id) == ("", a.id)
        assert s.archive.neighbours(a.id) == (q.id, after.id)
        hits = {h.entry.id: h for h in s.recall(QUERY, reinforce=False)}
        assert hits[q.id].reason == "archived" and hits[a.id].reason == "archived"
        assert hits[a.id].breakdown.bm25 == 0.0 and hits[a.id].breakdown.graph > 0.0
        assert hits[a.id].score == pytest.approx(hits[a.id].breakdown.total)
        batch = {h.entry.id: h.reason for h in s.recall_batch([QUERY], reinforce=False)[0]}
        assert batch.get(q.id) == "archived" and batch.get(a.id) == "archived"
        s.config = with_forgetting(s.config, archive_links=False)
        hits = {h.entry.id: h for h in s.recall(QUERY, reinforce=False)}
        assert q.id in hits and a.id not in hits
        s.config = msgspec.structs.replace(with_forgetting(s.config, archive_links=True),
                                           recall=RecallConfig(adjacency_hops=0))
        assert a.id not in {h.entry.id for h in s.recall(QUERY, reinforce=False)}


def test_a_reinforcing_recall_restores_both_and_keeps_them_linked(tmp_path):
    clock = Clock()
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=None, clock=clock) as s:
        q, a, after = conversation(s, clock)
        prev, nxt = s.conversation_links()
        assert nxt[s.row_of_id(after.id)] == -1 and prev[s.row_of_id(after.id)] == -1
        clock.t += 60
        got = {h.entry.id for h in s.recall(QUERY)}
        assert {q.id, a.id} <= got and q.id in s and a.id in s
        assert q.id not in s.archive and a.id not in s.archive
        rows = {e: s.row_of_id(e) for e in (q.id, a.id, after.id)}
        prev, nxt = s.conversation_links()
        assert nxt[rows[q.id]] == rows[a.id] and prev[rows[a.id]] == rows[q.id]
        assert nxt[rows[a.id]] == rows[after.id] and prev[rows[after.id]] == rows[a.id]
    with MemoryStore.open(path, embedder=None, clock=clock) as s:  # the journal replays it
        rows = {e: s.row_of_id(e) for e in (q.id, a.id, after.id)}
        prev, nxt = s.conversation_links()
        assert nxt[rows[q.id]] == rows[a.id] and nxt[rows[a.id]] == rows[after.id]


def test_archived_links_survive_reopening_and_an_old_archive_opens(tmp_path):
    cfg = MemoryConfig()
    d = tmp_path / "archive"
    a = Archive(d, cfg)
    a.add(Entry(id="q", content="why?", category="conversation_summary"), None,
          links=("p", "r"))
    a.add(Entry(id="r", content="because", category="conversation_summary"), None)
    a.add(Entry(id="x", content="unlinked", category="conversation_summary"), None)
    a.close()
    table = read_snapshot(d / "snapshot.arrow")[0]
    assert all(name in table.column_names for name in LINK_COLUMNS)
    b = Archive(d, cfg)
    assert b.neighbours("q") == ("p", "r") and b.neighbours("r") == ("q", "")
    assert b.neighbours("x") == ("", "")
    b.remove("q")  # journaled: its links go with it
    b.close()
    c = Archive(d, cfg)
    assert c.neighbours("r") == ("", "") and "q" not in c
    c.close()
    # an archive snapshot written before the link columns existed
    table = read_snapshot(d / "snapshot.arrow")[0]
    old = table.drop_columns(list(LINK_COLUMNS))
    write_snapshot(d / "snapshot.arrow", old)
    e = Archive(d, cfg)
    assert sorted(x.id for x in e.list()) == ["r", "x"] and e.neighbours("r") == ("", "")
    e.add(Entry(id="s", content="later", category="conversation_summary"), None,
          links=("r", ""))
    assert e.neighbours("r") == ("", "s")
    e.close()


@pytest.mark.parametrize("mode", ["minmax", "floor", "floor_best", "spread"])
def test_archived_hits_are_normalised_over_the_store_candidates(mode):
    """An archived entry matched by its vector alone: its cosine is normalised as the kernel
    normalises a row: min-max over the store's candidates (capped at 1), from the model's
    cosine floor (the hashing embedder's is 0) to 1 or to the best candidate (at least 0.6),
    or min-max over a range of at least 0.6."""
    clock = Clock()
    cfg = MemoryConfig(recall=RecallConfig(cos_norm=mode))
    with MemoryStore.in_memory(embedder="hash", clock=clock, config=cfg) as s:
        ids = [s.save(f"note {i} on topic t{i} with detail d{i}", category="project_knowledge").id
               for i in range(10)]
        gone = ids[3]
        s.archive_rows([s.row_of_id(gone)])
        va = s.archive.vector(gone)
        qv = va + s.vector(ids[5])
        qv = (qv / np.linalg.norm(qv)).astype(np.float32)
        hits = s.recall("zzz qqq", query_vector=qv, reinforce=False)  # no BM25 match anywhere
        hit = next(h for h in hits if h.entry.id == gone)
        assert hit.reason == "archived"
        store_cos = np.array([float(s.vector(i) @ qv) for i in ids if i != gone])
        lo, hi = store_cos.min(), store_cos.max()
        norm = min(1.0, max(0.0, (float(va @ qv) - lo) / (hi - lo)))
        if mode == "floor":
            norm = max(float(va @ qv), 0.0)
        elif mode == "floor_best":
            norm = min(1.0, max(float(va @ qv), 0.0) / max(hi, 0.6))
        elif mode == "spread":
            norm = min(1.0, max(0.0, (float(va @ qv) - lo) / max(hi - lo, 0.6)))
        rc = s.config.recall
        entry = s.archive.get(gone)
        recency = math.exp(-rc.recency_decay_per_hour * (clock.t - entry.updated_at) / 3600)
        importance = CATEGORY_TABLE[entry.category][0] + math.log1p(entry.access_count)
        want = (rc.weight_recency * recency + rc.weight_importance * importance
                + rc.weight_relevance * rc.cos_weight * norm)
        assert hit.score == pytest.approx(want, rel=1e-6)
        assert hit.breakdown.cos == pytest.approx(float(va @ qv), rel=1e-6)


def test_archive_snapshot_link_columns_are_strings_or_ignored(tmp_path):
    """A snapshot whose link columns are not strings opens without links (never a crash)."""
    cfg = MemoryConfig()
    d = tmp_path / "archive"
    a = Archive(d, cfg)
    a.add(Entry(id="q", content="why?", category="conversation_summary"), None, links=("", "r"))
    a.close()
    table = read_snapshot(d / "snapshot.arrow")[0]
    table = table.drop_columns(list(LINK_COLUMNS))
    for name in LINK_COLUMNS:
        table = table.append_column(name, pa.array([7], pa.int64()))
    write_snapshot(d / "snapshot.arrow", table)
    b = Archive(d, cfg)
    assert [e.id for e in b.list()] == ["q"] and b.neighbours("q") == ("", "")
    b.close()
