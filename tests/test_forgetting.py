"""Forgetting that keeps what matters (design R9): tiered decay, cue-driven revival, archive
search, and the user-level timelines of the issue (60 days, 180 days)."""

from __future__ import annotations

import math
import random

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.config import CapacityConfig, ForgettingConfig, GraphConfig, MemoryConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.maintenance import Maintenance
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.archive import ArchiveColumns
from maclaw_fast.memory.lifecycle import decay
from maclaw_fast.text.tokenizer import analysed_text, tokenize
from maclaw_kernels import entry
from maclaw_kernels.revival import TERM_BM25, cue_strength
from tests.maint_helpers import H, Clock

cue_strength = entry(cue_strength)  # no CPython entry point of its own

DAY = 24 * H


def with_forgetting(config: MemoryConfig = MemoryConfig(), **changes) -> MemoryConfig:
    return msgspec.structs.replace(config, forgetting=msgspec.structs.replace(
        config.forgetting, **changes))


# --- configuration ---------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"dormant_categories": ("self_identity",)}, {"dormant_categories": ("nope",)},
    {"dormant_categories": "conversation_summary"}, {"revive_min_cue": -0.1},
    {"revive_min_cue": float("nan")}, {"archive_max_hits": -1}, {"archive_max_hits": 1.5},
    {"revive": "yes"}, {"decay_per_hour": "fast"}])
def test_forgetting_config_is_checked_when_built(changes):
    with pytest.raises(ValidationError):
        ForgettingConfig(**changes)


@pytest.mark.parametrize("changes", [{"store_capacity": 0}, {"gc_threshold": -1},
                                     {"archive_capacity": "many"}, {"revive_max": True}])
def test_capacity_config_is_checked_when_built(changes):
    with pytest.raises(ValidationError):
        CapacityConfig(**changes)


def test_config_decoded_from_json_is_checked_too():
    with pytest.raises(msgspec.ValidationError, match="unknown category"):  # msgspec's wrap
        msgspec.json.decode(b'{"dormant_categories": ["bogus"]}', type=ForgettingConfig)
    cfg = msgspec.json.decode(b'{"dormant_categories": ["user"]}', type=ForgettingConfig)
    assert cfg.dormant_categories == ("user",)  # an alias names its category


# --- tiered decay ----------------------------------------------------------------------------

def test_only_episodic_categories_turn_dormant_by_default():
    clock = Clock()
    with MemoryStore.in_memory(embedder=None, clock=clock) as s:
        ids = {c: s.save(f"an old {c} memory", category=c).id
               for c in ("self_identity", "instruction", "preference", "project_knowledge",
                         "session_checkpoint", "conversation_summary", "user_fact")}
        clock.t += 2000 * H
        rep = decay(s)
        assert sorted(rep.dormant_ids) == sorted([ids["session_checkpoint"],
                                                  ids["conversation_summary"]])
        assert rep.faded == 4  # instruction, preference, project_knowledge, user_fact
        for c in ("self_identity", "instruction", "preference", "project_knowledge",
                  "user_fact"):
            assert s.get(ids[c]).status == "active"
            assert s.get(ids[c]).strength == 1.0  # peak kept: S is recomputed from updated_at


def test_dormant_categories_are_configurable():
    clock = Clock()
    cfg = with_forgetting(dormant_categories=("preference", "user"))  # "user" = user_fact
    with MemoryStore.in_memory(embedder=None, clock=clock, config=cfg) as s:
        p = s.save("likes dark roast", category="preference")
        u = s.save("lives in Porto", category="user_fact")
        e = s.save("chatted about trains", category="conversation_summary")
        clock.t += 2000 * H
        assert sorted(decay(s).dormant_ids) == sorted([p.id, u.id])
        assert s.get(e.id).status == "active"


# --- kernels against plain references ---------------------------------------------------------

def ref_cue(bm25, cos, idf_total, bw, cw, has_vector, needs_term=False, floor=0.0):
    if needs_term and not bm25 >= TERM_BM25:
        return 0.0
    lex = min(1.0, bm25 / idf_total) if idf_total > 0 and bm25 > 0 else 0.0
    if not has_vector:
        return lex
    c = max((cos - floor) / (1.0 - floor), 0.0)
    return (bw * lex + cw * c) / (bw + cw) if bw + cw > 0 else 0.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 30), st.floats(-1, 1)), max_size=60),
       st.floats(0, 20), st.floats(0, 1), st.floats(0, 1), st.booleans(), st.booleans(),
       st.floats(0, 0.9))
def test_cue_kernels_match_reference(pairs, idf_total, bw, cw, has_vector, needs_term, floor):
    bm25 = np.array([p[0] for p in pairs], np.float64)
    cos = np.array([p[1] for p in pairs], np.float32)
    ref = [ref_cue(float(b), float(c), idf_total, bw, cw, has_vector, needs_term, floor)
           for b, c in zip(bm25, cos)]
    out = [cue_strength(b, c, idf_total, bw, cw, has_vector, needs_term, floor)
           for b, c in zip(bm25, cos)]
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7)


def test_idf_total_counts_unknown_words_as_unmatched():
    from maclaw_fast.index.bm25 import Bm25Index

    ix = Bm25Index(tantivy_index=False)
    docs = ["peanut butter toast", "peanut allergy card", "migration linter"]
    for i, d in enumerate(docs):
        ix.add(i, tokenize(d))

    def idf(df, n=3):
        return math.log((n - df + 0.5) / (df + 0.5) + 1)

    assert ix.idf_total(tokenize("peanut allergy")) == pytest.approx(idf(2) + idf(1))
    assert ix.idf_total(tokenize("peanut peanut zebra")) == pytest.approx(idf(2) + idf(0))
    # an unknown word counts at every occurrence (the kernel cannot tell two apart)
    assert ix.idf_total(tokenize("zebra zebra")) == pytest.approx(2 * idf(0))
    assert ix.idf_total([]) == 0.0
    # a document holding each query word once at the average length scores about idf_total
    s = ix.scores(tokenize("migration linter"), 3)
    assert s[2] == pytest.approx(ix.idf_total(tokenize("migration linter")), rel=0.35)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_archive_columns_search_matches_brute_force(seed):
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "kite", "tea", "port", "linter", "rust"]
    cols = ArchiveColumns(MemoryConfig().bm25)
    live: dict = {}
    dim = 8
    for step in range(rng.randint(1, 40)):
        if live and rng.random() < 0.3:
            gone = rng.choice(sorted(live))
            cols.remove(gone)
            del live[gone]
            continue
        eid = f"e{step}"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) + f" n{step}"
        v = np.array([rng.gauss(0, 1) for _ in range(dim)], np.float32)
        v /= np.linalg.norm(v)
        vec = v if rng.random() < 0.8 else None
        from maclaw_fast.records import Entry

        cols.add(Entry(id=eid, content=text, category="conversation_summary"), vec)
        live[eid] = (text, vec)
    q = " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
    qv = np.array([rng.gauss(0, 1) for _ in range(dim)], np.float32)
    qv /= np.linalg.norm(qv)
    got = cols.search(tokenize(q), qv, 0.4, 0.6, 0.0, 1000)
    # brute force: a fresh index over the live entries only
    from maclaw_fast.index.bm25 import Bm25Index

    ids = sorted(live)
    ix = Bm25Index(MemoryConfig().bm25, tantivy_index=False)
    for i, k in enumerate(ids):
        ix.add(i, tokenize(analysed_text(live[k][0], ())))
    bm = ix.scores(tokenize(q), len(ids))
    total = ix.idf_total(tokenize(q))
    want = {k: ref_cue(bm[i], float(live[k][1] @ qv) if live[k][1] is not None else 0.0,
                       total, 0.4, 0.6, True) for i, k in enumerate(ids)}
    assert {g[0].id for g in got} == set(ids)
    for e, cue, b, c in got:
        assert cue == pytest.approx(want[e.id], abs=1e-6)
        assert b == pytest.approx(bm[ids.index(e.id)])
    assert [g[1] for g in got] == sorted((g[1] for g in got), reverse=True)


# --- cue-driven revival ----------------------------------------------------------------------

TOPICS = ["deploy pipeline", "tea kettle", "sailing boat", "rust compiler", "garden roses",
          "tax forms", "piano lessons", "bike repair"]


def build(clock, config=MemoryConfig(), path=None, n=40, seed=0):
    rng = random.Random(seed)
    store = (MemoryStore.open(path, embedder="hash", clock=clock, config=config) if path
             else MemoryStore.in_memory(embedder="hash", clock=clock, config=config))
    ids = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        cat = ["conversation_summary", "session_checkpoint", "preference",
               "project_knowledge"][i % 4]
        ids.append(store.save(f"note {i} on {topic} with {rng.choice(TOPICS)} detail",
                              category=cat, tags=["atlas"] if i % 5 == 0 else []).id)
        clock.t += 3 * H
    return store, ids


@pytest.mark.parametrize("needs_term", [True, False])
def test_revival_is_recall_over_the_cued_entries_made_active(needs_term):
    """A recall that revives equals a recall (revival off) over the same store in which exactly
    the dormant entries whose cue reaches the bar are active: the same kernels, one mask more
    (with cues that need a query term, and with cues from the vector alone too)."""
    clock = Clock()
    store, ids = build(clock, with_forgetting(revive_needs_term=needs_term))
    clock.t += 900 * H
    dormant = decay(store).dormant_ids
    assert len(dormant) >= 10
    rc = store.config.recall
    for q in ["deploy pipeline note", "tea kettle", "sailing", "rust compiler 12", "roses tax",
              "what about piano lessons", "bike", "note 5 on garden roses"]:
        bm25 = store.bm25.scores(tokenize(q), store.table.n_rows)
        qv = store.embedder.embed([q])[0]
        total = store.bm25.idf_total(tokenize(q))
        cued = {i for i in dormant
                if ref_cue(bm25[store.row_of_id(i)], float(store.vector(i) @ qv), total,
                           rc.bm25_weight, rc.cos_weight, True, needs_term)
                >= store.config.forgetting.revive_min_cue}
        got = store.recall(q, reinforce=False, query_vector=qv)
        # the reference: a second store built the same way, the cued entries active
        clock2 = Clock()
        ref_store, ref_ids = build(clock2, with_forgetting(revive=False))
        clock2.t = clock.t
        decay(ref_store)
        for a, b in zip(ids, ref_ids):
            if a in cued:
                ref_store.set_fields(b, status="active")
        want = ref_store.recall(q, reinforce=False, query_vector=qv)
        to_ref = dict(zip(ids, ref_ids))
        assert [to_ref[h.entry.id] for h in got] == [h.entry.id for h in want], q
        assert [h.score for h in got] == pytest.approx([h.score for h in want]), q
        for h in got:
            assert (h.reason == "revived") == (h.entry.id in cued), q
            assert h.entry.id not in dormant or h.entry.id in cued
        ref_store.close()
    store.close()


def test_weak_cue_does_not_revive_and_the_bar_is_configurable():
    clock = Clock()
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        e = s.save("Sam and I talked about rainy weather over coffee",
                   category="conversation_summary")
        s.save("the scheduler retries failed jobs three times", category="project_knowledge")
        for i in range(30):
            s.save(f"project note {i}: {FILLER[i % len(FILLER)]} in module m{i}",
                   category="project_knowledge")
        clock.t += 60 * DAY
        assert decay(s).dormant_ids == [e.id]
        strong = s.recall("rainy weather over coffee with Sam", reinforce=False)
        assert [h.reason for h in strong if h.entry.id == e.id] == ["revived"]
        weak = s.recall("how many times does the scheduler retry jobs for Sam",
                        reinforce=False)
        assert e.id not in [h.entry.id for h in weak]
        s.config = with_forgetting(s.config, revive_min_cue=1.01)  # nothing reaches it
        assert e.id not in [h.entry.id for h in s.recall("rainy weather over coffee with Sam",
                                                         reinforce=False)]


def test_reinforcing_recall_reactivates_and_is_journaled(tmp_path):
    clock = Clock()
    path = tmp_path / "st"
    store, ids = build(clock, path=path, n=16)
    clock.t += 900 * H
    dormant = set(decay(store).dormant_ids)
    hits = store.recall("sailing boat note", reinforce=False)
    revived = [h.entry.id for h in hits if h.reason == "revived"]
    assert revived and all(store.get(i).status == "dormant" for i in revived)
    hits = store.recall("sailing boat note")
    for i in revived:
        e = store.get(i)
        assert (e.status, e.strength, e.updated_at) == ("active", 1.0, clock.t)
        assert e.access_count == 2
    untouched = dormant - set(revived)
    assert all(store.get(i).status == "dormant" for i in untouched)
    store.close()
    with MemoryStore.open(path, embedder="hash", clock=clock) as again:
        for i in revived:
            assert again.get(i).status == "active" and again.get(i).strength == 1.0
        assert all(again.get(i).status == "dormant" for i in untouched)


def test_batch_equals_single_with_dormant_and_archived_entries():
    clock = Clock()
    store, ids = build(clock, n=48)
    clock.t += 900 * H
    decay(store)
    rare = [store.save(text, category=cat, tags=tags).id for text, cat, tags in (
        ("the vault token rotates every friday", "project_knowledge", ["atlas"]),
        ("grandma's birthday is on june third", "user_fact", []),
        ("the wifi password is taped to the fridge", "conversation_summary", []))]
    store.archive_rows([store.row_of_id(i) for i in ids[3:48:7] + rare])
    queries = ["deploy pipeline note", "tea kettle", "sailing", "note 10 on tax forms",
               "nothing like this at all", "bike repair", "rust compiler detail",
               "when does the vault token rotate", "grandma birthday june",
               "wifi password fridge"]
    projects = [None, "atlas"] * 5
    single = [[(h.entry.id, h.reason, h.score) for h in
               store.recall(q, project=p, reinforce=False)] for q, p in zip(queries, projects)]
    reasons = {r for hs in single for _, r, _ in hs}
    assert {"revived", "archived"} <= reasons
    batch = store.recall_batch(queries, projects=projects, reinforce=False)
    table = store.recall_batch_arrow(queries, projects=projects, reinforce=False).to_pylist()
    for q, hs in enumerate(single):  # (float32 cosines summed in another order: scores ≈)
        got = [(h.entry.id, h.reason, h.score) for h in batch[q]]
        assert [g[:2] for g in got] == [h[:2] for h in hs], queries[q]
        assert [g[2] for g in got] == pytest.approx([h[2] for h in hs], rel=1e-6)
        rows = [r for r in table if r["query_index"] == q]
        assert [r["rank"] for r in rows] == list(range(len(hs)))
        assert [(r["id"], r["reason"]) for r in rows] == [h[:2] for h in hs]
        assert [r["score"] for r in rows] == pytest.approx([h[2] for h in hs], rel=1e-6)
    store.close()


# --- archive search --------------------------------------------------------------------------

def test_archive_is_searched_only_without_a_strong_match_and_restored_on_reinforce():
    clock = Clock()
    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=30))
    with MemoryStore.in_memory(embedder="hash", clock=clock, config=cfg) as s:
        port = s.save("the staging database listens on port 5433", category="project_knowledge")
        for i in range(40):
            clock.t += H
            s.save(f"helm chart {i} pins the redis image to version {i}.2",
                   category="project_knowledge")
        assert port.id in s.archive and port.id not in s
        hits = s.recall("which port does the staging database listen on", reinforce=False)
        assert hits[0].entry.id == port.id and hits[0].reason == "archived"
        assert hits[0].score == pytest.approx(hits[0].breakdown.total)
        # a strong match in the store: the archive is not consulted
        assert all(h.reason != "archived" for h in s.recall("helm chart redis image 33",
                                                              reinforce=False))
        # a weak cue (one word of seven shared) finds nothing there either
        assert all(h.reason != "archived" for h in s.recall(
            "what time is the rehearsal dinner at the staging venue", reinforce=False))
        s.config = with_forgetting(s.config, archive_search=False)
        assert port.id not in [h.entry.id for h in s.recall("staging database port 5433",
                                                             reinforce=False)]
        s.config = with_forgetting(s.config, archive_search=True)
        clock.t += H
        hits = s.recall("which port does the staging database listen on")
        assert hits[0].entry.id == port.id
        back = s.get(port.id)  # restored (design §9): access 1, updated now, active
        assert (back.access_count, back.updated_at, back.status) == (1, clock.t, "active")
        assert port.id not in s.archive and len(s) == 30  # the capacity rule applied


def test_archive_search_keeps_the_recall_scope():
    clock = Clock()
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        a = s.save("zeus deploys need the vault token", category="project_knowledge",
                   tags=["zeus"])
        s.save("unrelated filler about lunch", category="conversation_summary")
        s.archive_rows([s.row_of_id(a.id)])
        assert a.id not in [h.entry.id for h in s.recall("vault token deploys",
                                                         project="atlas", reinforce=False)]
        assert a.id in [h.entry.id for h in s.recall("vault token deploys", project="zeus",
                                                     reinforce=False)]
        assert a.id not in [h.entry.id for h in s.recall_dynamic(
            "vault token deploys", category="instruction", reinforce=False)]


# --- the timelines -------------------------------------------------------------------

FILLER = ("rebased the feature branch", "fixed a flaky test in the parser", "reviewed a pull "
          "request about caching", "updated the changelog", "paired on the search ranking",
          "profiled the importer", "renamed the config loader", "triaged three bug reports",
          "wrote docs for the cli", "benchmarked the tokenizer", "bumped the numpy pin",
          "discussed the sprint goals")


def other_work(store, clock, day: int, per_day: int) -> None:
    rng = random.Random(day)
    for k in range(per_day):
        clock.t += 2 * H
        what = rng.choice(FILLER)
        store.save(f"day {day} session {k}: {what} in module m{rng.randrange(500)}",
                   category=rng.choice(["conversation_summary", "session_checkpoint",
                                        "project_knowledge"]))


def test_allergy_and_instruction_are_recalled_after_60_days():
    """The issue's case: a user fact and an instruction saved once, the agent's daily
    maintenance and 60 days of other work, then a direct question about each."""
    clock = Clock()
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        allergy = s.save("The user is severely allergic to peanuts", category="user_fact")
        lint = s.save("Always run the migration linter before merging",
                      category="instruction")
        maint = Maintenance(s)
        for day in range(1, 61):
            clock.t = allergy.created_at + day * DAY
            other_work(s, clock, day, 3)
            maint.run_once()
        assert s.get(allergy.id).status == "active" and s.get(lint.id).status == "active"
        hits = s.recall("is the user allergic to peanuts?")
        assert allergy.id in [h.entry.id for h in hits[:3]]
        hits = s.recall("what must I run before merging the migration?")
        assert lint.id in [h.entry.id for h in hits[:3]]


def test_timeline_180_days_keeps_facts_and_lets_weak_episodes_fade():
    """180 simulated days of daily maintenance and unrelated saves (4 a day: GC and the
    archive take part): the fact and the instruction are still found by a direct question;
    an unimportant day-0 episode is not returned on a weak cue, yet a strong cue still finds
    it (it faded, it was not destroyed)."""
    clock = Clock()
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        t0 = clock.t
        allergy = s.save("The user is severely allergic to peanuts", category="user_fact")
        lint = s.save("Always run the migration linter before merging",
                      category="instruction")
        chat = s.save("Chatted with Priya about her hiking trip to the Azores",
                      category="conversation_summary")
        maint = Maintenance(s)
        for day in range(1, 181):
            clock.t = t0 + day * DAY
            other_work(s, clock, day, 4)
            maint.run_once()
        assert len(s) < 500 and len(s.archive) > 0  # GC and capacity were at work
        for entry, question in ((allergy, "is the user allergic to peanuts?"),
                                (lint, "what must I run before merging the migration?")):
            hits = s.recall(question, reinforce=False)
            assert entry.id in [h.entry.id for h in hits[:3]], question
        # weak: one incidental word of the episode among a question about other things
        weak = s.recall("what did we decide in the caching review about the parser, the "
                        "importer and the trip budget?", reinforce=False)
        assert chat.id not in [h.entry.id for h in weak]
        strong = s.recall("Priya hiking trip to the Azores", reinforce=False)
        assert chat.id in [h.entry.id for h in strong[:3]]
        assert [h.reason for h in strong if h.entry.id == chat.id][0] in ("revived", "archived")


def test_the_reply_to_a_revived_question_comes_back_with_it():
    """A dormant question the query cues strongly is revived; the dormant reply linked after it
    (which the query barely cues) competes too and is returned through the link walk, by
    ``recall`` and ``recall_batch`` alike; without conversation links it stays dormant."""
    def build(adjacency_hops, prior=0.0):
        from maclaw_fast.config import RecallConfig

        # the thread prior off unless asked: it lifts the reply on its own, as a turn of the
        # conversation the query matches, and this test is about the link walk (so are reply
        # documents, which give the reply its question's words: off)
        cfg = MemoryConfig(recall=RecallConfig(adjacency_hops=adjacency_hops,
                                               thread_bm25_weight=prior,
                                               thread_cos_weight=prior),
                           graph=GraphConfig(reply_weight=0.0))
        store = MemoryStore.in_memory(embedder=None, config=cfg, clock=lambda: 1.8e9)
        for i in range(20):
            store.save(f"note {i} about the weather and the garden", category="project")
        q = store.save("What did you take away from the book Becoming Nicole?",
                       category="conversation_summary", thread="talk")
        a = store.save("It taught me self-acceptance", category="conversation_summary",
                       thread="talk")
        for e in (q, a):
            store.set_fields(e.id, status="dormant")
        return store, q, a

    query = "what did Caroline take away from Becoming Nicole"
    store, q, a = build(2)
    hits = {h.entry.id: h for h in store.recall(query, reinforce=False)}
    assert hits[q.id].reason == "revived" and hits[a.id].reason == "revived"
    assert hits[a.id].breakdown.graph > 0.0
    batch = {h.entry.id: h.reason for h in store.recall_batch([query], reinforce=False)[0]}
    assert batch.get(q.id) == "revived" and batch.get(a.id) == "revived"
    store, q, a = build(0)
    hits = {h.entry.id: h for h in store.recall(query, reinforce=False)}
    assert hits[q.id].reason == "revived" and a.id not in hits
    # with the thread prior (two conversations: the notes' chain and "talk") the reply is
    # revived with its question too, and ranks as a turn of the conversation that matches
    store, q, a = build(2, prior=0.3)
    hits = {h.entry.id: h for h in store.recall(query, reinforce=False)}
    assert hits[q.id].reason == "revived" and hits[a.id].reason == "revived"
    batch = {h.entry.id: h.reason for h in store.recall_batch([query], reinforce=False)[0]}
    assert batch.get(q.id) == "revived" and batch.get(a.id) == "revived"


def _reinforce_world(clock):
    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=30))
    s = MemoryStore.in_memory(embedder="hash", clock=clock, config=cfg)
    s.save("the staging database listens on port 5433", category="project_knowledge")
    s.save("I am the release assistant", category="self_identity")
    s.save("the user is called Lin", category="user_fact")
    rng = random.Random(7)
    for i in range(40):
        clock.t += H
        s.save(f"helm chart {i} pins the {rng.choice(['redis', 'nginx', 'kafka'])} image "
               f"to version {i}.2 on staging", category="project_knowledge")
    old = s.save("kubectl context for the staging cluster is stg-eu",
                 category="session_checkpoint")
    clock.t += 2000 * H
    decay(s)  # the session checkpoint goes dormant
    return s, old.id


def _state(store) -> dict:
    return {e.content: (e.category, e.status, e.strength, e.access_count, e.updated_at,
                        e.created_at) for e in store.entries()}


def test_reinforcing_kept_hits_afterwards_equals_a_reinforcing_recall():
    """store.reinforce(hits of a reinforce=False recall) leaves the store exactly as the
    reinforcing recall would have: access, strength, updated_at, dormant entries woken,
    archived ones restored; a subset touches only itself."""
    clock_a, clock_b = Clock(), Clock()
    a, dormant_id = _reinforce_world(clock_a)
    b, _ = _reinforce_world(clock_b)
    assert a.get(dormant_id).status == "dormant" and len(a.archive) > 0
    queries = ["which port does the staging database listen on",  # the archived entry
               "kubectl context staging cluster",                    # the dormant one
               "helm chart redis image version", "who is the user"]
    seen_reasons = set()
    for q in queries:
        clock_a.t += H
        clock_b.t += H
        want = a.recall(q)
        hits = b.recall(q, reinforce=False)
        assert [h.entry.content for h in hits] == [h.entry.content for h in want]
        seen_reasons |= {h.reason for h in hits}
        assert b.reinforce(hits) == len(hits)
        assert _state(b) == _state(a), q  # ids differ between the two stores: not compared
        assert len(b.archive) == len(a.archive)
    assert a.get(dormant_id).status == "active" and "archived" in seen_reasons
    # only the hits given are touched; one deleted meanwhile is skipped
    clock_b.t += H
    hits = b.recall("helm chart nginx image version", reinforce=False)
    b.delete(hits[1].entry.id)
    before = _state(b)
    assert b.reinforce(hits[:2]) == 1
    after = _state(b)
    changed = [c for c in after if after[c] != before[c]]
    first = hits[0].entry.content
    assert changed == [first] and after[first][3] == before[first][3] + 1
    with pytest.raises(ValidationError):
        b.reinforce(["not a hit"])
    a.close()
    b.close()


def test_memory_tool_recall_strengthens_only_the_results_it_returns():
    from maclaw_fast.agent.handlers import recall_memory

    with MemoryStore.in_memory(embedder="hash", clock=Clock()) as s:
        for i in range(6):
            s.save(f"atlas deploy note {i} for the release train", category="project_knowledge")
        before = {e.content: e.access_count for e in s.entries()}
        out = recall_memory(s, "atlas deploy release", max_results=2)
        returned = [r["content"] for r in out["results"]]
        grew = [e.content for e in s.entries() if e.access_count == before[e.content] + 1]
        assert len(returned) == 2 and sorted(grew) == sorted(returned)
        assert len(recall_memory(s, "atlas deploy release", max_results=2,
                                 reinforce=False)["results"]) == 2
        assert sum(e.access_count for e in s.entries()) == sum(before.values()) + 2


@pytest.mark.parametrize("needs_term", [True, False])
def test_a_dormant_entry_needs_a_shared_term_to_be_cued(needs_term):
    """A query whose vector is the dormant episode's own but which shares no term with it
    revives it only when cues may come from the vector alone (``revive_needs_term=False``);
    by default the same query with one of its words does, by ``recall`` and ``recall_batch``."""
    cfg = with_forgetting(revive_needs_term=needs_term)
    with MemoryStore.in_memory(embedder="hash", config=cfg, clock=lambda: 1.8e9) as s:
        for i in range(12):
            s.save(f"note {i} on the build cache and flaky tests", category="project_knowledge")
        ep = s.save("Booked the ferry to Naxos for the family trip",
                    category="conversation_summary")
        s.set_fields(ep.id, status="dormant")
        v = s.vector(ep.id)
        for query in ("what plans were made for the holidays", "the ferry booking"):
            single = {h.entry.id: h.reason for h in s.recall(query, query_vector=v,
                                                             reinforce=False)}
            batch = {h.entry.id: h.reason for h in s.recall_batch(
                [query], query_vectors=v[None], reinforce=False)[0]}
            want = "revived" if (query.endswith("booking") or not needs_term) else None
            assert single.get(ep.id) == want and batch.get(ep.id) == want, query


@pytest.mark.parametrize("floor", [1.0, -0.1, float("nan"), "0.5"])
def test_an_embedder_with_a_bad_cosine_floor_is_refused_at_open(floor):
    from maclaw_fast.embedding import HashEmbedder
    from maclaw_fast.errors import EmbeddingError

    emb = HashEmbedder()
    emb.cosine_floor = floor
    with pytest.raises(EmbeddingError, match="cosine_floor"):
        MemoryStore.in_memory(embedder=emb)


def _ferry_revived(floor: float, config: MemoryConfig) -> bool:
    """A dormant episode cued by its vector (cosine 0.9) and one shared word ("family"),
    under the embedder's cosine floor ``floor``: whether recall brings it back."""
    from maclaw_fast.embedding import HashEmbedder

    emb = HashEmbedder(dim=64)
    emb.cosine_floor = floor
    with MemoryStore.in_memory(embedder=emb, clock=lambda: 1.8e9, config=config) as s:
        for i in range(12):
            s.save(f"note {i} on the build cache and flaky tests", category="project")
        ep = s.save("Booked the ferry to Naxos for the family trip",
                    category="conversation_summary")
        s.set_fields(ep.id, status="dormant")
        rng = np.random.default_rng(0)
        v = s.vector(ep.id).astype(np.float64)
        noise = rng.standard_normal(v.shape[0])
        noise -= (noise @ v) * v
        q = 0.9 * v + np.sqrt(1 - 0.81) * noise / np.linalg.norm(noise)  # cosine 0.9
        q = (q / np.linalg.norm(q)).astype(np.float32)
        hits = s.recall("the family holidays booking", query_vector=q, reinforce=False)
        return any(h.entry.id == ep.id and h.reason == "revived" for h in hits)


def test_the_default_bar_revives_on_one_rare_shared_word():
    """revive_min_cue 0.25 (the top of LoCoMo's tuning-half best range, quality_lifecycle.md):
    a rare word the question shares is cue enough even where the vector counts nothing; 0.3
    needed more. (A name shared by several old episodes is not: tests/test_embedding_auto.py.)"""
    assert MemoryConfig().forgetting.revive_min_cue == 0.25
    assert _ferry_revived(0.95, MemoryConfig())
    assert not _ferry_revived(0.95, with_forgetting(revive_min_cue=0.3))


def test_a_cosine_floor_lowers_vector_cues_as_the_kernel_maps_them():
    """The same store and query with the embedder's floor at 0 and at 0.6: a dormant entry
    cued by its vector (cosine 0.9) and one word keeps its cue only while the floored cosine
    still reaches the bar (0.3 here, above the one word's share), as ``cue_strength`` maps
    it: (0.9 − 0.6) / 0.4 = 0.75."""
    config = with_forgetting(revive_min_cue=0.3)
    got = {floor: _ferry_revived(floor, config) for floor in (0.0, 0.6, 0.95)}
    rc = config.recall
    bar = config.forgetting.revive_min_cue
    for floor, came_back in got.items():
        # "family" is the one shared word: its lexical part is small but above 0
        c = max((0.9 - floor) / (1 - floor), 0.0)
        if c * rc.cos_weight / (rc.bm25_weight + rc.cos_weight) >= bar:
            assert came_back, floor
    assert got[0.0] and not got[0.95]


def test_an_archived_hit_of_a_chinese_query_is_weighed_as_the_query_is():
    """A Chinese query's archived hits take its BM25 / cosine weights (``cjk_bm25_weight``), as
    its hits in the store do; an English query's keep the configured weights (raw BM25 and
    cosine, so no normalisation caps both parts at 1)."""
    def archived(query: str, cjk: float) -> list[float]:
        clock = Clock()
        rc = msgspec.structs.replace(MemoryConfig().recall, cjk_bm25_weight=cjk,
                                     bm25_norm="raw", cos_norm="raw")
        cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=30), recall=rc)
        with MemoryStore.in_memory(embedder="hash", clock=clock, config=cfg) as s:
            s.save("预发环境的数据库端口是五四三三 the staging database port is 5433",
                   category="project_knowledge")
            for i in range(40):
                clock.t += H
                s.save(f"helm chart {i} pins the redis image to version {i}.2",
                       category="project_knowledge")
            return [h.score for h in s.recall(query, reinforce=False) if h.reason == "archived"]

    zh = "预发环境的数据库端口是多少"
    assert archived(zh, 0.2) and archived(zh, 0.2) != archived(zh, 0.6)
    en = "which port does the staging database listen on"
    assert archived(en, 0.2) and archived(en, 0.2) == archived(en, 0.6)
