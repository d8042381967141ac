"""MemoryStore behaviour: design §1, §4–§6 and the §15 memory examples."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from maclaw_fast import MemoryConfig, MemoryStore, NotFoundError, ValidationError
from maclaw_fast.config import CapacityConfig, RecallConfig
from maclaw_fast.errors import DuplicateError, StoreClosedError
from maclaw_fast.index.graph import MemoryGraph
from tests.maint_helpers import Clock

T0 = 1_780_000_000.0


def unit(v) -> np.ndarray:
    v = np.asarray(v, np.float32)
    return v / np.linalg.norm(v)


class FixedEmbedder:
    """4-d embedder with vectors chosen per text (unknown text → zero vector)."""

    dim = 4
    fingerprint = "fixed-4"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts):
        return np.array([self.table.get(t.strip(), [0, 0, 0, 0]) for t in texts], np.float32)


@pytest.fixture()
def clock():
    return Clock(T0)


@pytest.fixture()
def store(clock):
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        yield s


# ---------------------------------------------------------------- design §15 examples
def test_recency_after_24h_and_base_scores(clock):
    with MemoryStore.in_memory(embedder=None, clock=clock) as s:
        pk = s.save("alpha note", category="project_knowledge")
        ins = s.save("beta note", category="instruction")
        hits = {h.entry.id: h for h in s.recall("zzz unrelated", reinforce=False)}
        assert hits[pk.id].score == pytest.approx(1 + 2 + math.log(2), abs=1e-9)
        assert hits[pk.id].score == pytest.approx(3.693, abs=5e-4)
        assert hits[ins.id].score == pytest.approx(4.693, abs=5e-4)
        clock.t += 24 * 3600
        hits = {h.entry.id: h for h in s.recall("zzz unrelated", reinforce=False)}
        assert hits[pk.id].breakdown.recency == pytest.approx(0.8869, abs=1e-4)


def test_graph_keeps_five_strongest_and_rejects_weaker():
    g = MemoryGraph(max_edges=5)
    for i, s in enumerate([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], start=1):
        g.link(0, i, s)
    assert sorted(w for _, w in g.neighbours(0)) == pytest.approx([0.2, 0.3, 0.4, 0.5, 0.6])
    assert 1 not in [t for t, _ in g.neighbours(0)]
    g.link(0, 7, 0.05)
    assert 7 not in [t for t, _ in g.neighbours(0)]
    assert g.neighbours(7) == [(0, 0.05)]  # the other direction had room


def test_vectors_link_by_cosine(clock):
    a, b, c = unit([1, 0, 0, 0]), unit([0.98, 0.1, 0, 0]), unit([0, 1, 0, 0])
    emb = FixedEmbedder({"A": a.tolist(), "B": b.tolist(), "C": c.tolist()})
    with MemoryStore.in_memory(embedder=emb, clock=clock) as s:
        ea = s.save("A", category="preference")
        eb = s.save("B", category="preference")
        ec = s.save("C", category="preference")
        cos_ab = float(a @ b)
        assert s.get(ea.id).related_ids == (eb.id,)
        assert s.get(eb.id).related_ids == (ea.id,)
        assert s.get(ea.id).related_strengths[0] == pytest.approx(cos_ab, abs=1e-6)
        assert ec.id not in s.get(ea.id).related_ids
        assert s.get(ec.id).related_ids == ()


# ---------------------------------------------------------------- save / CRUD
def test_save_fills_defaults_and_maps_aliases(store):
    e = store.save("  tea please ", category="user", tags=["a", "a", " b "])
    assert e.category == "user_fact" and e.scope == "global"
    assert e.tags == ("a", "b") and e.access_count == 1 and e.strength == 1.0
    p = store.save("atlas uses postgres", category="reference", tags=["atlas"])
    assert p.category == "project_knowledge" and p.scope == "project"
    assert store.save("x", category="feedback").category == "instruction"


def test_identical_content_updates_instead_of_adding(store, clock):
    e = store.save("same text", category="preference", tags=["z"])
    clock.t += 100
    again = store.save("same text", category="instruction", tags=["a"])
    assert again.id == e.id and len(store) == 1
    assert again.access_count == 2 and again.tags == ("a", "z")
    assert again.updated_at == clock.t and again.category == "preference"


def test_dormant_entry_revives_on_identical_save(store):
    e = store.save("old fact about kites", category="preference")
    store.set_fields(e.id, status="dormant", strength=0.05)
    # a strong cue still finds it, marked as revived (design R9); a weak one does not
    assert [h.reason for h in store.recall("kites", reinforce=False)
            if h.entry.id == e.id] == ["revived"]
    assert all(h.entry.id != e.id for h in store.recall("kites and gliders in a storm",
                                                        reinforce=False))
    back = store.save("old fact about kites", category="preference")
    assert back.status == "active" and back.strength == 1.0
    assert any(h.entry.id == e.id for h in store.recall("kites", reinforce=False))


def test_update_delete_list_pin_touch(store, clock):
    a = store.save("first memory about rust", category="preference", tags=["lang"])
    b = store.save("second memory about go", category="project", tags=["atlas"])
    with pytest.raises(DuplicateError):
        store.update(a.id, content="second memory about go")
    clock.t += 10
    u = store.update(a.id, content="first memory about zig", category="instruction")
    assert u.content.endswith("zig") and u.category == "instruction" and u.updated_at == clock.t
    assert [h.entry.id for h in store.recall("zig", reinforce=False)
            if h.breakdown.bm25 > 0] == [a.id]
    assert not any(h.breakdown.bm25 > 0 for h in store.recall("rust", reinforce=False))
    assert [e.id for e in store.list(category="project")] == [b.id]
    assert [e.id for e in store.list(keyword="ATLAS")] == [b.id]
    assert len(store.list(limit=1)) == 1
    assert store.pin(b.id).pinned and not store.unpin(b.id).pinned
    before = store.get(b.id)
    store.touch([b.id, b.id])
    after = store.get(b.id)
    assert after.access_count == before.access_count + 2 and after.updated_at == before.updated_at
    gone = store.delete(b.id)
    assert gone.id == b.id and b.id not in store and len(store) == 1
    with pytest.raises(NotFoundError):
        store.get(b.id)


def snapshot_state(store):
    return msgspec.json.encode(store.entries())


@pytest.mark.parametrize("call", [
    lambda s: s.save("", category="preference"),
    lambda s: s.save("   ", category="preference"),
    lambda s: s.save(123, category="preference"),
    lambda s: s.save("ok", category="nonsense"),
    lambda s: s.save("ok", category="preference", tags="notalist"),
    lambda s: s.save("ok", category="preference", tags=[1]),
    lambda s: s.save("ok", category="preference", vector=[0.1] * 7),
    lambda s: s.save("ok", category="preference", vector=[float("nan")] * 384),
    lambda s: s.save("ok", category="preference", pinned="yes"),
    lambda s: s.recall(None),
    lambda s: s.recall("q", query_vector=np.ones(3)),
    lambda s: s.recall("q", query_vector=np.full(384, np.nan)),
    lambda s: s.recall("q", query_vector=np.full(384, np.nan, np.float32)),  # the kernel's check
    lambda s: s.recall("q", query_vector=np.full(384, np.inf, np.float32)),
    lambda s: s.recall("q", project=5),
    lambda s: s.recall_batch(["a", "b"], query_vectors=np.ones((1, 384))),
    lambda s: s.recall_batch("not a list"),
    lambda s: s.update("missing-id", content="x"),
    lambda s: s.update(s.list()[0].id, content=""),
    lambda s: s.delete("missing-id"),
    lambda s: s.list(category="bad"),
    lambda s: s.set_fields(s.list()[0].id, content="x"),
    lambda s: s.set_fields(s.list()[0].id, status="zombie"),
])
def test_bad_input_raises_and_changes_nothing(store, call):
    store.save("existing memory", category="preference", tags=["t"])
    before = snapshot_state(store)
    with pytest.raises((ValidationError, NotFoundError)):
        call(store)
    assert snapshot_state(store) == before


def test_closed_store_refuses_work(clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    s.close()
    with pytest.raises(StoreClosedError):
        s.save("x", category="preference")


# ---------------------------------------------------------------- recall
def test_recall_order_si_then_relevant_uf_then_scored(store):
    """design R4: self identity leads; a user fact leads only when relevant to the query."""
    si = store.save("I am Juniper, the agent", category="self_identity")
    uf = store.save("User lives in Hangzhou", category="user_fact")
    pk = store.save("deploy script needs AWS_REGION", category="project", tags=["atlas"])
    hits = store.recall("deploy script", project="atlas", reinforce=False)
    assert [h.entry.id for h in hits] == [si.id, pk.id, uf.id]
    assert [h.reason for h in hits] == ["self_identity", "scored", "scored"]
    lead = store.recall("where does the user live, Hangzhou?", reinforce=False)
    assert [(h.entry.id, h.reason) for h in lead[:2]] == [(si.id, "self_identity"),
                                                         (uf.id, "user_fact")]
    b = hits[1].breakdown
    assert b.affinity == 3.0 and b.bm25 > 0
    assert hits[1].score == pytest.approx(b.total)
    # relevance weighted 10 (design R3); the cosine enters min-max normalised (≥ 0), so the
    # breakdown's raw cosine bounds it only from below
    floor = b.recency + b.importance + 10.0 * (0.4 * b.bm25 + b.affinity + b.graph)
    assert floor <= b.total <= floor + 10.0 * 0.6 + 1e-9


def test_project_scope_filter(store):
    a = store.save("atlas uses postgres 16", category="project", tags=["atlas"])
    b = store.save("dataviz uses duckdb", category="project", tags=["dataviz"])
    g = store.save("prefers short answers", category="preference")
    ids = lambda p: {h.entry.id for h in store.recall("uses", project=p, reinforce=False)}
    assert ids("atlas") == {a.id, g.id}
    assert ids("ATLAS") == {a.id, g.id}  # tags compare case-insensitively
    assert ids("") == {a.id, b.id, g.id}
    assert ids(None) == {a.id, b.id, g.id}


def test_budget_skips_large_entries_and_caps_at_twenty(clock):
    cfg = MemoryConfig(recall=RecallConfig(token_budget=100))
    with MemoryStore.in_memory(embedder=None, clock=clock, config=cfg) as s:
        big = s.save("needle " + "x" * 500, category="preference")
        small = [s.save(f"needle small {i}", category="preference") for i in range(30)]
        ids = [h.entry.id for h in s.recall("needle", reinforce=False)]
        assert big.id not in ids  # 500+ bytes = 125 tokens > budget: skipped, not a stop
        assert len(ids) == 20 and set(ids) <= {e.id for e in small}


def test_self_identity_always_included_even_over_budget(clock):
    cfg = MemoryConfig(recall=RecallConfig(token_budget=10))
    with MemoryStore.in_memory(embedder=None, clock=clock, config=cfg) as s:
        si = s.save("I am the agent. " * 20, category="self_identity")
        hits = s.recall("anything", reinforce=False)
        assert [h.entry.id for h in hits] == [si.id]


def test_reinforcement(store, clock):
    e = store.save("remember the kettle", category="preference")
    clock.t += 3600
    store.recall("kettle")
    after = store.get(e.id)
    assert after.access_count == 2 and after.strength == 2.0 and after.updated_at == clock.t
    store.recall("kettle", reinforce=False)
    assert store.get(e.id).access_count == 2


def test_graph_expansion_lifts_a_linked_neighbour(clock):
    with MemoryStore.in_memory(embedder=None, clock=clock) as s:
        seed = s.save("kiwi orchard irrigation", category="preference")
        friend = s.save("kiwi harvest schedule", category="preference")  # links to seed by bm25
        # four instructions outrank the friend, so the seeds are them + the matching seed
        for i in range(4):
            s.save(f"filler rule number {i}", category="instruction")
        assert friend.id in s.get(seed.id).related_ids
        hits = s.recall("orchard irrigation", reinforce=False)
        by = {h.entry.id: h for h in hits}
        # seed matches; the friend matches nothing of the query but inherits relevance
        assert by[seed.id].breakdown.bm25 > 0
        assert by[friend.id].breakdown.bm25 == 0 and by[friend.id].breakdown.graph > 0
        assert by[friend.id].reason == "graph"


def test_recall_dynamic_ranks_user_facts_and_filters_category(store):
    u = store.save("User is left-handed", category="user_fact")
    p = store.save("prefers dark mode editors", category="preference")
    i = store.save("always use dark mode in screenshots", category="instruction")
    hits = store.recall_dynamic("dark mode", reinforce=False)
    assert {h.entry.id for h in hits} == {p.id, i.id, u.id}  # design R4: ranked like any other
    assert hits[-1].entry.id == u.id and all(h.reason == "scored" for h in hits)
    hits = store.recall_dynamic("dark mode", category="instruction", reinforce=False)
    assert [h.entry.id for h in hits] == [i.id]


def test_deploy_script_query_finds_chinese_memory_top3():
    with MemoryStore.in_memory(embedder="default") as s:
        target = s.save("部署脚本 deploy.sh 在 staging 环境因为缺少 AWS_REGION 环境变量而失败",
                        category="project", tags=["atlas", "deploy"])
        for text in ["周末去杭州西湖划船，天气很好", "用户喜欢喝龙井茶，不加糖",
                     "数据库迁移用 golang-migrate 管理", "The CI pipeline caches pip wheels",
                     "Lin prefers dark mode in every editor", "家庭相册的照片每周备份到 NAS",
                     "Meeting notes: quarterly planning moved to Friday",
                     "前端图表在数据点很多时渲染变慢", "Use ruff for linting Python code",
                     "billing-api 的金额以分为单位存储"]:
            s.save(text, category="project", tags=["misc"])
        hits = s.recall("部署脚本出了什么问题", reinforce=False)
        assert target.id in [h.entry.id for h in hits[:3]]


def test_recall_batch_equals_recall(store):
    texts = ["deploy script", "green tea", "postgres migrations", "部署 脚本", "kettle"]
    for i, t in enumerate(texts * 3):
        store.save(f"{t} note {i}", category=["preference", "project"][i % 2],
                   tags=["atlas"] if i % 3 == 0 else [])
    queries = ["deploy", "tea migrations", "部署", "", "unknownword"]
    projects = ["atlas", None, "", None, "atlas"]
    batch = store.recall_batch(queries, projects=projects, reinforce=False)
    table = store.recall_batch_arrow(queries, projects=projects, reinforce=False)
    for q, (query, proj) in enumerate(zip(queries, projects)):
        single = store.recall(query, project=proj, reinforce=False)
        assert [h.entry.id for h in batch[q]] == [h.entry.id for h in single]
        assert [h.score for h in batch[q]] == pytest.approx([h.score for h in single], rel=1e-5)
        assert [h.reason for h in batch[q]] == [h.reason for h in single]
        rows = table.filter(table.column("query_index").to_numpy() == q)
        assert rows.column("id").to_pylist() == [h.entry.id for h in single]
        assert rows.column("reason").to_pylist() == [h.reason for h in single]


def test_recall_batch_is_the_same_on_any_thread_count(clock, monkeypatch):
    with MemoryStore.in_memory(embedder="hash", config=MemoryConfig(batch_threads=1),
                               clock=clock) as s:
        for i in range(300):
            s.save(f"note {i} about {['deploy', 'tea', 'boat', '部署'][i % 4]} {i % 7}",
                   category=["preference", "project"][i % 2], tags=["atlas"] if i % 3 else [])
        queries = [f"{w} {i % 7}" for i, w in enumerate(["deploy", "tea", "部署", "boat"] * 40)]
        projects = [None, "atlas"] * 80

        def run(threads):
            s.config = msgspec.structs.replace(s.config, batch_threads=threads)
            hits = s.recall_batch(queries, projects=projects, reinforce=False)
            table = s.recall_batch_arrow(queries, projects=projects, reinforce=False)
            return [[(h.entry.id, h.score) for h in hs] for hs in hits], table.to_pylist()

        serial = run(1)
        assert sum(map(len, serial[0])) == 160 * 20
        for threads in ("auto", 2, 0):
            assert run(threads) == serial, threads


@pytest.mark.parametrize("bad", ["fast", -1, 1.5, True])
def test_a_bad_batch_thread_setting_is_a_clear_error(bad):
    # checked when the config is built (design R8), not at the first batch recall
    with pytest.raises(ValidationError, match="batch_threads"):
        MemoryConfig(batch_threads=bad)


def test_batch_reinforcement_applies_after_scoring(store):
    e = store.save("unique kettle fact", category="preference")
    store.recall_batch(["kettle", "kettle"])
    assert store.get(e.id).access_count == 3


def test_capacity_moves_least_used_to_archive(clock):
    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=5))
    with MemoryStore.in_memory(embedder=None, clock=clock, config=cfg) as s:
        si = s.save("identity", category="self_identity")
        pinned = s.save("pinned one", category="preference", pinned=True)
        rest = []
        for i in range(5):
            clock.t += 1
            rest.append(s.save(f"note {i}", category="preference"))
            if i == 0:
                s.touch([rest[0].id])
            assert len(s) <= 5
        archived = {e.id for e in s.archive.list()}
        assert archived == {rest[1].id, rest[2].id}  # least used, then oldest
        assert si.id in s and pinned.id in s and rest[0].id in s


def test_prompt_summaries_join_and_cut(store):
    store.save("I am Juniper", category="self_identity")
    e = store.save("I write careful code " * 10, category="self_identity")
    store.set_fields(e.id, compact_form="careful coder")
    assert store.self_identity_summary() == "I am Juniper | careful coder"
    for i in range(40):
        store.save(f"user fact number {i}", category="user_fact")
    s = store.user_fact_summary()
    assert len(s) == 401 and s.endswith("…") and s.startswith("user fact number 0 | ")


def test_query_vector_check_uses_unit_vectors_as_given_and_copies_the_rest():
    """The per-query fast path: a writeable, contiguous float32 unit vector is used without a
    copy; anything else is converted and normalised; non-finite input is refused either way;
    and a vector given to ``save`` is copied, so the caller may reuse its buffer."""
    from maclaw_fast.embedding import check_vectors
    from maclaw_fast.errors import ValidationError

    rng = np.random.default_rng(0)
    unit = rng.normal(size=8).astype(np.float32)
    unit /= np.linalg.norm(unit)
    got = check_vectors(unit, 8)
    assert got.shape == (1, 8) and np.shares_memory(got, unit)
    frozen = unit.copy()
    frozen.flags.writeable = False
    assert not np.shares_memory(check_vectors(frozen, 8), frozen)
    long = unit * 3
    out = check_vectors(long, 8)
    assert not np.shares_memory(out, long)
    np.testing.assert_allclose(out[0], unit, rtol=1e-6)
    bad = unit.copy()
    bad[0] = np.nan
    with pytest.raises(ValidationError):
        check_vectors(bad, 8)
    with MemoryStore.in_memory(embedder="hash") as s:
        v = rng.normal(size=s.dim).astype(np.float32)
        v /= np.linalg.norm(v)
        q = v.copy()
        e = s.save("reused buffer", category="preference", vector=v)
        v[:] = 0.0
        hits = s.recall("reused buffer", query_vector=q, reinforce=False)
        assert hits[0].entry.id == e.id and hits[0].breakdown.cos == pytest.approx(1.0, abs=1e-5)


def test_query_vector_of_any_length_recalls_as_its_unit_vector(clock):
    """A float32 vector passed as it is (the fused kernel checks its length) that is not of unit
    length recalls exactly as its normalised form, and a zero vector as no vector at all."""
    from maclaw_fast.embedding import check_vectors

    rng = np.random.default_rng(5)
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        for i in range(40):
            v = rng.normal(size=s.dim).astype(np.float32)
            s.save(f"note {i} on topic {i % 5}", category="preference",
                   vector=v / np.linalg.norm(v))
        q = rng.normal(size=s.dim).astype(np.float32)

        def key(hits):
            return [(h.entry.id, h.score, h.breakdown.cos) for h in hits]

        def recall(v):
            return key(s.recall("topic 3", query_vector=v, reinforce=False))

        for given in (q, q * np.float32(3), q.astype(np.float64)):
            assert recall(given) == recall(check_vectors(given, s.dim)[0].copy())
        zero = recall(np.zeros(s.dim, np.float32))
        assert zero and [c for _, _, c in zero] == [0.0] * len(zero)


def test_reinforced_entries_match_a_fresh_build(clock):
    """Reinforcement updates cached entries in place of rebuilding them: every entry read after
    a run of reinforcing recalls equals one built from the columns afresh, and the recall masks
    cached before the run still answer like a store that never cached them."""
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        for i in range(60):
            s.save(f"deploy note {i} about servers and scripts {i % 7}", category="preference",
                   tags=("ops",) if i % 3 else ())
        for q in ("deploy servers", "scripts", "note 5", "deploy"):
            s.recall(q, project="ops")
            clock.t += 3600.0
        s.touch([s.list()[0].id, s.list()[0].id])
        cached = {e.id: e for e in s.list()}
        got = [[(h.entry.id, h.score) for h in s.recall(q, reinforce=False)]
               for q in ("deploy", "servers")]
        s.table._cache.clear()
        s.plans.clear()
        assert {e.id: e for e in s.list()} == cached
        assert [[(h.entry.id, h.score) for h in s.recall(q, reinforce=False)]
                for q in ("deploy", "servers")] == got


def test_cached_entries_follow_touches_exactly(clock):
    """After touches (rows listed several times) and reinforcing recalls, every cached entry
    equals the entry made afresh from the columns, bit for bit."""
    rng = np.random.default_rng(3)
    with MemoryStore.in_memory(embedder=None, clock=clock) as store:
        ids = [store.save(f"note {i} about deploy w{i % 7}", category="project_knowledge").id
               for i in range(40)]
        for step in range(30):
            clock.t += 37.5
            picked = [ids[int(k)] for k in rng.integers(0, len(ids), int(rng.integers(1, 9)))]
            store.touch(picked)  # duplicates included
            hits = store.recall(f"deploy w{step % 7}")  # reinforces its hits
            touched = set(picked) | {h.entry.id for h in hits}
            cached = {i: store.get(i) for i in touched}
            assert all(store.table._cache.get(store.table.row_of[i]) is cached[i]
                       for i in touched)  # these came from the cache
            store.table._cache.clear()
            assert {i: store.get(i) for i in touched} == cached


@pytest.mark.parametrize("seed", range(6))
def test_touch_counts_every_listing(seed):
    """A row listed twice gains twice (access and strength), the time is set only when given,
    and the other rows keep their values (a plain loop is the reference)."""
    from maclaw_fast.memory.columns import EntryTable

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    table = EntryTable(capacity=n)
    table.access[:n] = rng.integers(0, 9, n)
    table.strength[:n] = rng.random(n) * 3
    table.updated_at[:n] = rng.uniform(1e9, 2e9, n)
    ref = [table.access.tolist(), table.strength.tolist(), table.updated_at.tolist()]
    rows = rng.integers(0, n, int(rng.integers(0, 12))).tolist()
    add, step = int(rng.integers(1, 3)), float(rng.random())
    when = 1.9e9 if seed % 2 else None
    for r in rows:
        ref[0][r] += add
        ref[1][r] += step
        if when is not None:
            ref[2][r] = when
    table.touch(rows, add, step, when)
    assert table.access.tolist() == ref[0] and table.updated_at.tolist() == ref[2]
    assert table.strength.tolist() == ref[1]
