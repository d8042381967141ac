"""design §8 on real files: journal + snapshot, crash safety (SIGKILL), torn tails, corrupt
snapshots, the writer lock, fingerprints, reference import/export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import msgspec
import numpy as np
import pytest

from maclaw_fast import MemoryConfig, MemoryStore, StoreLockedError, ValidationError
from maclaw_fast.config import PersistConfig
from maclaw_fast.embedding import HashEmbedder


def cfg(fsync="interval", debounce=5.0):
    return MemoryConfig(persist=PersistConfig(fsync=fsync, snapshot_debounce_s=debounce))


def fill(store, n=40):
    topics = ["deploy script", "green tea", "postgres migration", "部署 脚本", "dark mode",
              "kettle", "typescript", "数据库 查询"]
    for i in range(n):
        store.save(f"{topics[i % len(topics)]} memory number {i}",
                   category=["preference", "project", "instruction", "user"][i % 4],
                   tags=["atlas"] if i % 3 == 0 else ["misc"], pinned=i % 11 == 0)


def recall_signature(store, queries=("deploy", "tea", "部署", "migration kettle")):
    return [[(h.entry.id, round(h.score, 9)) for h in store.recall(q, reinforce=False)]
            for q in queries]


def test_reopen_gives_identical_state_and_recall(tmp_path):
    path = tmp_path / "store"
    clock = lambda: 1_780_000_000.0  # noqa: E731 - recency must not drift between the opens
    with MemoryStore.open(path, embedder="hash", config=cfg(), clock=clock) as s:
        fill(s)
        s.recall("deploy")  # reinforcement goes through the journal too
        s.delete(s.list()[3].id)
        before_entries = msgspec.json.encode(s.entries())
        before = recall_signature(s)
        vec = s.vector(s.list()[0].id)
    with MemoryStore.open(path, embedder="hash", config=cfg(), clock=clock) as s:
        assert msgspec.json.encode(s.entries()) == before_entries
        assert recall_signature(s) == before
        assert np.array_equal(s.vector(s.list()[0].id), vec)


def test_journal_replay_without_snapshot(tmp_path):
    """State written only to the journal (no close, no snapshot since the new store's empty
    one) comes back on open."""
    from maclaw_fast.persist.snapshot import peek_meta

    path = tmp_path / "store"
    s = MemoryStore.open(path, embedder=None, config=cfg(fsync="always", debounce=0))
    fill(s, 25)
    expected = msgspec.json.encode(s.entries())
    s.durability.lock.release()  # simulate the process dying: no snapshot, lock gone
    assert peek_meta(path / "snapshot.arrow").seq == 0  # the new store's, before any save
    with MemoryStore.open(path, embedder=None, config=cfg()) as s2:
        assert msgspec.json.encode(s2.entries()) == expected


WRITER = textwrap.dedent("""
    import sys
    from maclaw_fast import MemoryStore, MemoryConfig
    from maclaw_fast.config import PersistConfig
    cfg = MemoryConfig(persist=PersistConfig(fsync="always", snapshot_debounce_s=0.05))
    store = MemoryStore.open(sys.argv[1], embedder=None, config=cfg)
    i = 0
    while True:
        e = store.save(f"streamed memory {i} about topic {i % 7}", category="preference",
                       tags=[f"t{i % 5}"])
        print(e.id, flush=True)
        i += 1
""")


def test_sigkill_during_saves_loses_nothing_returned(tmp_path):
    path = tmp_path / "store"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                            text=True)
    returned = []
    deadline = time.monotonic() + 60
    while len(returned) < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        returned.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert len(returned) >= 50, "the writer did not get going"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a torn tail is expected and reported
        with MemoryStore.open(path, embedder=None) as s:
            missing = [i for i in returned if i not in s]
            assert missing == []
            assert len(s) >= len(returned)


def test_torn_journal_tail_is_dropped_and_reported(tmp_path):
    path = tmp_path / "store"
    s = MemoryStore.open(path, embedder=None, config=cfg(fsync="always", debounce=0))
    fill(s, 10)
    expected = [e.id for e in s.entries()]
    s.durability.lock.release()
    with open(path / "journal.bin", "ab") as fh:
        fh.write(b"\x40\x00\x00\x00\x01\x02\x03")  # a frame header promising 64 bytes, then 3
    with pytest.warns(RuntimeWarning, match="torn"):
        s2 = MemoryStore.open(path, embedder=None)
    assert [e.id for e in s2.entries()] == expected
    assert any("torn" in n for n in s2.durability.notes)
    s2.save("after recovery", category="preference")
    s2.close()
    with MemoryStore.open(path, embedder=None) as s3:
        assert len(s3) == len(expected) + 1


def test_corrupt_snapshot_is_moved_aside_and_previous_used(tmp_path):
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=None) as s:
        fill(s, 12)
    with MemoryStore.open(path, embedder=None) as s:
        s.save("one more", category="preference")
        ids_after_second = {e.id for e in s.entries()}
    assert (path / "snapshot.arrow.prev").exists()
    (path / "snapshot.arrow").write_bytes(b"not an arrow file")
    with pytest.warns(RuntimeWarning, match="unreadable"):
        s = MemoryStore.open(path, embedder=None)
    with s:
        ids = {e.id for e in s.entries()}
        # the older snapshot plus the journal rotated at the newer one: nothing lost
        assert ids == ids_after_second
    assert any(p.name.startswith("snapshot.arrow.corrupt.") for p in path.iterdir())


def test_corrupt_snapshot_without_fallback_rebuilds_from_the_journals(tmp_path):
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=None) as s:
        fill(s, 5)
        ids = [e.id for e in s.entries()]
    (path / "snapshot.arrow").write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning):
        with MemoryStore.open(path, embedder=None) as s:
            assert [e.id for e in s.entries()] == ids  # the journal since seq 1 is kept
            assert s.durability.notes


def test_corrupt_snapshots_and_no_full_journal_open_partial_loudly(tmp_path):
    path = tmp_path / "store"
    for i in range(3):
        with MemoryStore.open(path, embedder=None) as s:
            for j in range(5):
                s.save(f"round {i} memory {j}", category="preference")
    (path / "snapshot.arrow").write_bytes(b"garbage")
    (path / "snapshot.arrow.prev").write_bytes(b"garbage too")
    with pytest.warns(RuntimeWarning, match="lost"):
        with MemoryStore.open(path, embedder=None) as s:
            assert len(s) < 15
            assert any("lost" in n for n in s.durability.notes)
    assert len([p for p in path.iterdir() if ".corrupt." in p.name]) == 2
    with MemoryStore.open(path, embedder=None) as s:  # and it opens cleanly afterwards
        assert s.durability.notes == []


def test_second_writer_is_refused(tmp_path):
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=None) as s:
        s.save("held", category="preference")
        with pytest.raises(StoreLockedError):
            MemoryStore.open(path, embedder=None)
        code = ("import sys\nfrom maclaw_fast import MemoryStore, StoreLockedError\n"
                "try:\n    MemoryStore.open(sys.argv[1], embedder=None)\n"
                "except StoreLockedError:\n    sys.exit(3)\n")
        res = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60)
        assert res.returncode == 3
        assert len(s) == 1
    with MemoryStore.open(path, embedder=None) as s:  # released on close
        assert len(s) == 1


def test_fingerprint_change_reembeds(tmp_path):
    path = tmp_path / "store"
    with MemoryStore.open(path, embedder=HashEmbedder(dim=384)) as s:
        fill(s, 8)
    small = HashEmbedder(dim=32)
    with MemoryStore.open(path, embedder=small) as s:
        for e in s.entries():
            v = s.vector(e.id)
            assert v.shape == (32,)
            expect = small.embed([e.content + " " + " ".join(e.tags)])[0]
            assert np.allclose(v, expect, atol=1e-6)
        assert s.recall("deploy", reinforce=False)


def test_bad_fsync_policy_is_rejected(tmp_path):
    with pytest.raises(ValidationError):
        MemoryStore.open(tmp_path / "s", embedder=None, config=cfg(fsync="sometimes"))


def test_export_import_roundtrip(tmp_path):
    src = tmp_path / "memories.json"
    with MemoryStore.open(tmp_path / "a", embedder="hash") as s:
        fill(s, 20)
        n = s.export_maclaw(src)
        original = {e.id: e for e in s.entries()}
    data = json.loads(src.read_text(encoding="utf-8"))
    assert n == 20 and len(data) == 20
    assert src.read_text(encoding="utf-8").startswith("[\n  {")  # 2-space indent
    assert {"id", "content", "category", "tags", "created_at", "updated_at", "access_count",
            "embedding", "related_ids", "strength", "status", "scope", "pinned",
            "compact_form"} <= set(data[0])
    with MemoryStore.open(tmp_path / "b", embedder="hash") as s:
        assert s.import_maclaw(src) == 20
        assert s.import_maclaw(src) == 0  # same ids again: nothing added
        for e in s.entries():
            o = original[e.id]
            assert (e.content, e.category, e.tags, e.access_count, e.pinned) == \
                   (o.content, o.category, o.tags, o.access_count, o.pinned)
            assert e.updated_at == pytest.approx(o.updated_at, abs=1e-3)
            assert set(e.related_ids) == set(o.related_ids)


def test_import_rejects_bad_file_and_changes_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"content": "ok", "category": "preference"},
                               {"content": "x", "category": "nope"}]))
    with MemoryStore.open(tmp_path / "s", embedder=None) as s:
        with pytest.raises(ValidationError):
            s.import_maclaw(bad)
        assert len(s) == 0


def test_peek_meta_reads_the_metadata_only_through_the_checksum(tmp_path):
    from maclaw_fast.memory.model_choice import recorded_fingerprint
    from maclaw_fast.persist.snapshot import peek_meta

    emb = HashEmbedder(64)
    store = MemoryStore.open(tmp_path / "s", embedder=emb)
    store.save("the deploy script needs AWS_REGION", category="project")
    store.close()
    snap = tmp_path / "s" / "snapshot.arrow"
    meta = peek_meta(snap)
    assert meta is not None and meta.dim == 64
    assert recorded_fingerprint(tmp_path / "s") == emb.fingerprint
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0x10  # one flipped bit in the columns: the checksum fails
    snap.write_bytes(bytes(data))
    assert peek_meta(snap) is None and recorded_fingerprint(tmp_path / "s") is None
    snap.write_bytes(bytes(data[:-20]))  # the trailer cut off a format 2 file
    assert peek_meta(snap) is None
    assert peek_meta(tmp_path / "missing.arrow") is None
