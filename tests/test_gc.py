"""GC with archive revival (design §9) as properties over random stores of up to 600 entries."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maclaw_fast.config import CATEGORIES
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.lifecycle import gc, restore

H = 3600.0
NOW = 1_700_000_000.0
TAGS = ["atlas", "Atlas", "ops", "db", "ui", "tea", "vim", "k8s", "billing", "docs"]
STATUSES = ["active"] * 8 + ["dormant", "superseded"]


def _record(i: int, rng: np.random.Generator, prefix: str) -> dict:
    ts = NOW - float(rng.uniform(0, 3000)) * H
    return {
        "id": f"{prefix}-{i:05d}", "content": f"{prefix} memory {i} about {rng.integers(1e9)}",
        "category": CATEGORIES[int(rng.integers(len(CATEGORIES)))],
        "tags": tuple(sorted({TAGS[int(k)] for k in rng.integers(0, len(TAGS),
                                                                  rng.integers(0, 3))})),
        "created_at": ts, "updated_at": ts, "access_count": int(rng.integers(1, 30)),
        "strength": 1.0, "status": STATUSES[int(rng.integers(len(STATUSES)))],
        "pinned": bool(rng.random() < 0.08), "compact_form": "", "related_ids": [],
        "related_strengths": [], "embedding": None,
    }


def build(n_store: int, n_archive: int, seed: int) -> MemoryStore:
    rng = np.random.default_rng(seed)
    store = MemoryStore.in_memory(embedder=None, clock=lambda: NOW)
    for i in range(n_archive):
        rec = _record(i, rng, "arch")
        store.archive.add(_entry(rec), None)
    store.import_records([_record(i, rng, "live") for i in range(n_store)])
    return store


def _entry(rec: dict):
    from maclaw_fast.records import Entry

    return Entry(id=rec["id"], content=rec["content"], category=rec["category"],
                 tags=rec["tags"], created_at=rec["created_at"], updated_at=rec["updated_at"],
                 access_count=rec["access_count"], status=rec["status"])


def snapshot(store) -> dict:
    return {e.id: e for e in store.entries()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_store=st.integers(0, 600), n_archive=st.integers(0, 1100), seed=st.integers(0, 2**31))
def test_gc_properties(n_store, n_archive, seed):
    store = build(n_store, n_archive, seed)
    cap = store.config.capacity
    before = snapshot(store)
    archive_before = {e.id: e for e in store.archive.list()}
    rep = gc(store)
    after = snapshot(store)

    # counts
    assert rep.before == len(before) and rep.after == len(after) == len(store)
    assert rep.before == rep.after + rep.archived - rep.revived
    archived = set(before) - set(after)
    revived = set(after) - set(before)
    assert len(archived) == rep.archived and len(revived) == rep.revived
    # nothing archived in this run came back in this run: an entry that did would still be in
    # both snapshots, but with access_count 1 and updated_at = now
    for i in set(before) & set(after):
        assert (after[i].access_count, after[i].updated_at) == \
            (before[i].access_count, before[i].updated_at)
    assert revived <= set(archive_before)

    # protected and pinned entries are never archived
    for i in archived:
        assert before[i].category != "self_identity" and not before[i].pinned
    # below the threshold after archiving (unless only protected entries are left)
    if len(before) >= cap.gc_threshold:
        unprotected_left = [e for i, e in after.items() if i not in revived
                            and e.category != "self_identity" and not e.pinned]
        assert rep.after - rep.revived < cap.gc_threshold or not unprotected_left
        # the least-used went first
        if archived and unprotected_left:
            worst_kept = min((e.access_count, e.updated_at) for e in unprotected_left)
            best_gone = max((before[i].access_count, before[i].updated_at) for i in archived)
            assert best_gone <= worst_kept
    else:
        assert rep.archived == 0

    # revival: ≤ 10, related to the top-20 active entries, never superseded, access_count 1
    assert rep.revived <= cap.revive_max
    base = [e for i, e in after.items() if i not in revived and e.status == "active"]
    top = sorted(base, key=lambda e: (-e.access_count, -e.updated_at))[: cap.revive_top]
    tags = {t.lower() for e in top for t in e.tags}
    cats = {e.category for e in top}
    for i in revived:
        e = after[i]
        assert e.category in cats or any(t.lower() in tags for t in e.tags)
        assert e.status != "superseded" and e.access_count == 1 and e.updated_at == NOW
        # a faded (dormant) entry comes back through a cue, not through GC (design R9)
        assert archive_before[i].status not in ("superseded", "dormant")
        assert i not in store.archive

    # the archive holds at most 1000, the newest by updated_at
    assert len(store.archive) <= cap.archive_capacity
    pool = {**archive_before, **{i: before[i] for i in archived}}
    kept = {e.id for e in store.archive.list()}
    dropped = set(pool) - kept - revived
    assert kept <= set(pool)
    if dropped and kept:
        assert max(pool[i].updated_at for i in dropped) <= \
            min(pool[i].updated_at for i in kept)
    store.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_archive=st.integers(1, 200), seed=st.integers(0, 2**31), pick=st.integers(0, 10**6))
def test_restore_gives_access_count_one(n_archive, seed, pick):
    store = build(20, n_archive, seed)
    ids = [e.id for e in store.archive.list()]
    entry_id = ids[pick % len(ids)]
    old = store.archive.get(entry_id)
    back = restore(store, entry_id)
    assert back.access_count == 1 and back.updated_at == NOW and back.content == old.content
    assert entry_id not in store.archive and entry_id in store
    assert back.status == ("superseded" if old.status == "superseded" else "active")
    store.close()


def test_gc_runs_from_the_store_and_persists(tmp_path):
    path = tmp_path / "st"
    rng = np.random.default_rng(0)
    with MemoryStore.open(path, embedder=None, clock=lambda: NOW) as s:
        s.import_records([_record(i, rng, "live") for i in range(480)])
        rep = s.gc()
        assert rep.archived == 480 - 449 and rep.after == 449 + rep.revived
        n, a = len(s), len(s.archive)
    with MemoryStore.open(path, embedder=None, clock=lambda: NOW) as s:
        assert (len(s), len(s.archive)) == (n, a)
        assert len(s) == 480 - rep.archived + rep.revived
