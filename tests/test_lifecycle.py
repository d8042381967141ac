"""Forgetting curve, dormancy, reinforcement, revival and restore (design §7, §9, §15)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.errors import DuplicateError, NotFoundError
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.lifecycle import decay, replace_entries, restore
from maclaw_fast.memory.lifecycle import decay_pass

from tests.maint_helpers import H, T0, Clock
from tests.test_memory_kernels import ref_decay


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(clock):
    with MemoryStore.in_memory(embedder="hash", clock=clock) as s:
        yield s


# --- design §15 worked examples ----------------------------------------------------------------

def _kernel_strength(strength: float, seconds: float) -> float:
    """S(t) as the decay kernel computes it (a threshold above every S writes S out)."""
    out_s, out_d = np.empty(1), np.empty(1, np.bool_)
    decay_pass(np.array([strength]), np.zeros(1), np.zeros(1, np.bool_), np.ones(1, np.bool_),
               seconds, 0.003, 2.0, out_s, out_d)
    return float(out_s[0])


def test_spec_examples_strength_after_336_and_768_hours():
    assert round(_kernel_strength(1.0, 336 * H), 4) == 0.3649
    assert _kernel_strength(1.0, 768 * H) < 0.1
    assert _kernel_strength(0.0, 1.0) == 0.0
    assert _kernel_strength(-1.0, 1.0) == 0.0
    # half-life ≈ 9.6 days
    assert abs(_kernel_strength(1.0, 9.627 * 24 * H) - 0.5) < 1e-3


def test_decay_pass_336h_stays_active_with_peak_strength(store, clock):
    e = store.save("deploys with make release", category="project_knowledge", tags=["atlas"])
    clock.t += 336 * H
    rep = decay(store)
    assert rep.dormant == 0 and rep.checked == 1
    got = store.get(e.id)
    assert got.status == "active" and got.strength == 1.0  # peak kept, decay recomputed


def test_decay_pass_768h_marks_dormant_and_persists_S(store, clock):
    e = store.save("deployed with make release today", category="session_checkpoint")
    si = store.save("I am the build assistant", category="self_identity")
    clock.t += 768 * H
    rep = decay(store)
    assert rep.dormant_ids == [e.id]
    got = store.get(e.id)
    assert got.status == "dormant"
    assert got.strength == pytest.approx(math.exp(-0.003 * 768))
    assert store.get(si.id).status == "active"  # self_identity at any age stays active
    clock.t += 10_000 * H
    assert decay(store).dormant == 0
    assert store.get(si.id).status == "active"


def test_superseded_and_dormant_entries_are_skipped(store, clock):
    a = store.save("talked about tabs", category="conversation_summary")
    store.set_fields(a.id, status="superseded")
    clock.t += 2000 * H
    assert decay(store).dormant == 0
    assert store.get(a.id).status == "superseded" and store.get(a.id).strength == 1.0


def test_dormant_not_recalled_and_back_on_identical_save(store, clock):
    e = store.save("the staging database lives on port 5433", category="session_checkpoint")
    other = store.save("staging database password rotates monthly", category="project_knowledge")
    clock.t += 768 * H
    store.save("fresh note about the staging database", category="project_knowledge")
    store.touch([other.id])
    decay(store)
    assert store.get(e.id).status == "dormant"
    # a strong cue revives it (design R9) ...
    hits = store.recall("staging database port", reinforce=False)
    assert [h.reason for h in hits if h.entry.id == e.id] == ["revived"]
    # ... but with revival off a dormant entry is never recalled (design §7)
    import msgspec

    store.config = msgspec.structs.replace(store.config, forgetting=msgspec.structs.replace(
        store.config.forgetting, revive=False))
    ids = [h.entry.id for h in store.recall("staging database port", reinforce=False)]
    assert e.id not in ids
    back = store.save("the staging database lives on port 5433", category="session_checkpoint")
    assert back.id == e.id and back.status == "active" and back.strength == 1.0
    assert back.updated_at == clock.t
    ids = [h.entry.id for h in store.recall("staging database port", reinforce=False)]
    assert e.id in ids


def test_recall_reinforcement_postpones_dormancy(store, clock):
    e = store.save("kubectl context is prod-eu", category="session_checkpoint")
    clock.t += 500 * H
    hits = store.recall("kubectl context")
    assert [h.entry.id for h in hits] == [e.id]
    got = store.get(e.id)
    assert got.strength == 2.0 and got.updated_at == clock.t and got.access_count == 2
    clock.t += 768 * H  # 2·exp(-2.304) = 0.1998 ≥ 0.1
    assert decay(store).dormant == 0
    clock.t += 240 * H
    assert decay(store).dormant_ids == [e.id]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1.0, 5.0), st.floats(0.0, 3000.0), st.booleans(),
                          st.booleans()), min_size=0, max_size=200),
       st.floats(0.0, 4000.0))
def test_decay_kernels_match_reference(rows, now_h):
    strength = np.array([r[0] for r in rows], np.float64)
    updated = np.array([r[1] * H for r in rows], np.float64)
    exempt = np.array([r[2] for r in rows], np.bool_)
    active = np.array([r[3] for r in rows], np.bool_)
    ref_s, ref_d = ref_decay(strength, updated, exempt, active, now_h * H, 0.003, 0.1)
    out_s = np.empty(len(rows))
    out_d = np.empty(len(rows), np.bool_)
    count = decay_pass(strength, updated, exempt, active, now_h * H, 0.003, 0.1, out_s, out_d)
    np.testing.assert_allclose(out_s, ref_s, rtol=1e-12)
    np.testing.assert_array_equal(out_d, ref_d)
    assert count == sum(ref_d)


def test_store_decay_parallel_and_serial_agree(clock):
    rng = np.random.default_rng(3)
    outs = []
    for parallel in (False, True):
        with MemoryStore.in_memory(embedder=None, clock=clock,) as s:
            ids = [s.save(f"note {i} about subject {i * 7}", category="session_checkpoint").id
                   for i in range(300)]
            for i, ages in zip(ids, rng.uniform(0, 1500, 300)):
                s.set_fields(i, updated_at=clock.t - ages * H)
            rng = np.random.default_rng(3)
            rep = decay(s, parallel=parallel)
            outs.append(sorted(int(x.split()[1]) for x in
                               (s.get(i).content for i in rep.dormant_ids)))
    assert outs[0] == outs[1] and len(outs[0]) > 0


def test_decay_is_journaled(tmp_path, clock):
    path = tmp_path / "st"
    with MemoryStore.open(path, embedder=None, clock=clock) as s:
        e = s.save("old note about ssh keys", category="conversation_summary")
        clock.t += 800 * H
        decay(s)
    with MemoryStore.open(path, embedder=None, clock=clock) as s:
        assert s.get(e.id).status == "dormant"
        assert s.get(e.id).strength < 0.1


# --- restore --------------------------------------------------------------------------------

@pytest.mark.parametrize("embedder", [None, "hash"])
def test_restore_reindexes_relinks_and_resets_access(clock, embedder):
    store = MemoryStore.in_memory(embedder=embedder, clock=clock)
    a = store.save("the payment service uses stripe webhooks", category="project_knowledge")
    b = store.save("stripe webhooks are verified with a signing secret",
                   category="project_knowledge")
    store.touch([a.id, a.id])
    store.archive_rows([store.row_of_id(a.id)])
    assert a.id not in store and a.id in store.archive
    clock.t += 50 * H
    back = restore(store, a.id)
    assert back.access_count == 1 and back.updated_at == clock.t
    assert back.status == "active" and back.strength == 1.0
    assert a.id not in store.archive
    if embedder is None:  # BM25 links (hash vectors of these texts are below cos 0.7)
        assert b.id in back.related_ids and a.id in store.get(b.id).related_ids
    else:
        assert store.vector(a.id) is not None
    ids = [h.entry.id for h in store.recall("stripe webhooks payment", reinforce=False)]
    assert a.id in ids
    with pytest.raises(NotFoundError):
        restore(store, a.id + "x")


def test_restore_of_dormant_revives_and_duplicate_is_refused(store, clock):
    a = store.save("drank oolong tea", category="conversation_summary")
    clock.t += 900 * H
    decay(store)
    store.archive_rows([store.row_of_id(a.id)])
    assert store.archive.get(a.id).status == "dormant"
    store.save("drank oolong tea", category="conversation_summary")  # same content saved anew
    with pytest.raises(DuplicateError):
        restore(store, a.id)
    assert a.id in store.archive


def test_restore_runs_the_capacity_check(clock):
    from maclaw_fast.config import CapacityConfig, MemoryConfig

    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=3))
    with MemoryStore.in_memory(embedder=None, clock=clock, config=cfg) as s:
        ids = [s.save(f"fact number {i}", category="user_fact").id for i in range(4)]
        assert len(s) == 3 and ids[0] in s.archive
        clock.t += 1
        back = s.restore(ids[0])
        assert len(s) == 3 and back.id in s
        assert len(s.archive) == 1


def test_interrupted_restore_is_finished(store):
    a = store.save("notes on the release checklist", category="project_knowledge")
    store.archive.add(store.get(a.id), None)  # the state a crash mid-restore leaves
    assert restore(store, a.id).id == a.id
    assert a.id not in store.archive and a.id in store


def test_replace_entries_is_one_change(tmp_path, clock):
    path = tmp_path / "st"
    with MemoryStore.open(path, embedder="hash", clock=clock) as s:
        a = s.save("deploy with make release", category="project_knowledge", tags=["x"])
        b = s.save("deploy via make release target", category="project_knowledge", tags=["y"])
        c = s.save("unrelated thing", category="preference")
        clock.t += 10
        with pytest.raises(DuplicateError):
            replace_entries(s, a.id, content="unrelated thing", tags=["x"])
        # the merged text may be a removed member's text
        vec = s.embedder.embed(["deploy via make release target x y"])[0]
        merged = replace_entries(s, a.id, content="deploy via make release target",
                                 tags=["x", "y"], remove_ids=[b.id], vec=vec)
        assert merged.updated_at == T0 and merged.compact_form == ""
        assert b.id not in s and len(s) == 2
        assert s.save("deploy via make release target", category="project_knowledge").id == a.id
        s.durability.journal.close()  # simulate a crash: no snapshot on close
        s.durability.lock.release()
        s.closed = True
    with MemoryStore.open(path, embedder="hash", clock=clock) as s:
        assert sorted(e.id for e in s.entries()) == sorted([a.id, c.id])
        assert s.get(a.id).content == "deploy via make release target"
        assert s.get(a.id).tags == ("x", "y")
