"""A reopen from the snapshot (bulk columns, saved BM25 term ids) equals a store rebuilt entry by
entry from the journal; the saved terms are used only when they match; an idle open store holds
one file descriptor and no tantivy writer."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from maclaw_fast import MemoryConfig, MemoryStore
from maclaw_fast.config import PersistConfig
from maclaw_fast.memory import reload as reload_module
from maclaw_fast.memory import terms_file

SLOW_SNAPSHOTS = MemoryConfig(persist=PersistConfig(snapshot_debounce_s=3600))
QUERIES = ["deploy tea", "部署 脚本", "boat", "note 3", "atlas friday", "unknownword"]


def _fill(path):
    """A store with edges, updates, deletes, pins, compact forms and Chinese text, left open
    (everything in the journal)."""
    store = MemoryStore.open(path, embedder="hash", config=SLOW_SNAPSHOTS)
    rnd = np.random.default_rng(5)
    words = ["deploy", "tea", "boat", "部署脚本", "friday", "atlas", "garden", "python"]
    ids = []
    for i in range(120):
        text = " ".join(rnd.choice(words, 4)) + f" note {i}"
        ids.append(store.save(text, category=["preference", "project", "user_fact",
                                              "instruction"][i % 4],
                              tags=["atlas"] if i % 3 else ["zeus", "Atlas"]).id)
    for i in range(0, 120, 9):
        store.delete(ids[i])
    store.update(ids[4], content="deploy the boat on friday", tags=["boat"])
    store.set_fields(ids[5], compact_form="short form", strength=0.5)
    store.pin(ids[7])
    store.save(store.get(ids[8]).content, category="preference", tags=["extra"])  # merges tags
    store.recall("deploy tea")  # reinforces: touches
    return store


def _state(store):
    t = store.table
    rows = t.live_rows()
    return {
        "arrow": store.to_arrow().to_pylist(),
        "bm25": [store.bm25.scores(q.split(), t.n_rows)[rows].tolist() for q in QUERIES],
        "recall": [[(h.entry.id, round(h.score, 12)) for h in
                    store.recall(q, reinforce=False)] for q in QUERIES],
        "graph": [sorted((t.ids[o], w) for o, w in store.graph.neighbours(int(r)))
                  for r in rows],
        "tokens": t.tokens[rows].tolist(),
        "weight": t.weight[rows].tolist(),
    }


@pytest.fixture
def replayed_and_reloaded(tmp_path):
    live = _fill(tmp_path / "live")
    shutil.copytree(tmp_path / "live", tmp_path / "copy")  # a crash: only the journal holds it
    live.close()
    from maclaw_fast.persist.snapshot import peek_meta

    assert peek_meta(tmp_path / "copy" / "snapshot.arrow").seq == 0  # the new store's: empty
    return tmp_path / "copy"


def test_reopen_from_snapshot_equals_journal_replay(replayed_and_reloaded, monkeypatch):
    path = replayed_and_reloaded
    clock = 1.9e9
    with MemoryStore.open(path, embedder="hash", clock=lambda: clock) as replayed:
        want = _state(replayed)  # rebuilt entry by entry; its load wrote snapshot + terms
    assert (path / "terms.bin").exists()

    def no_tokenising(*args, **kwargs):
        raise AssertionError("the reopen tokenised instead of loading the saved terms")

    with monkeypatch.context() as m:
        m.setattr(reload_module, "tokenize", no_tokenising)
        with MemoryStore.open(path, embedder="hash", clock=lambda: clock) as reloaded:
            assert _state(reloaded) == want
    os.remove(path / "terms.bin")  # without the terms file: tokenised, the same again
    with MemoryStore.open(path, embedder="hash", clock=lambda: clock) as tokenised:
        assert _state(tokenised) == want
    assert (path / "terms.bin").exists()  # written back on close


def _edit(store):
    """The same later edits on either copy (saves, an update, deletes, reinforcing recalls)."""
    ids = [e.id for e in store.entries()]
    for i in range(30):
        store.save(f"after reopen {i} deploy garden", category="project", tags=["atlas"])
    store.update(ids[3], content="garden boat after the reopen", tags=["boat"])
    for entry_id in ids[10:40:3]:
        store.delete(entry_id)
    store.recall("garden boat")


def test_a_store_loaded_from_saved_postings_edits_as_a_tokenised_one(replayed_and_reloaded,
                                                                      tmp_path):
    path = replayed_and_reloaded
    clock = 1.9e9
    with MemoryStore.open(path, embedder="hash", clock=lambda: clock):
        pass  # replays the journal, writes the snapshot and terms.bin
    shutil.copytree(path, tmp_path / "tokenised")
    os.remove(tmp_path / "tokenised" / "terms.bin")
    states = []
    for where in (path, tmp_path / "tokenised"):
        with MemoryStore.open(where, embedder="hash", clock=lambda: clock) as store:
            _edit(store)
            state = _state(store)
            # ids (and the links naming them) and save times differ between any two runs
            state["arrow"] = [{k: v for k, v in r.items()
                               if k not in ("id", "created_at", "updated_at", "related_ids")}
                              for r in state["arrow"]]
            state["recall"] = [[round(score, 12) for _, score in hits]
                               for hits in state["recall"]]
            state["graph"] = [[round(w, 12) for _, w in edges] for edges in state["graph"]]
            states.append(state)
    assert states[0] == states[1]


@pytest.mark.parametrize("damage", ["tokenizer", "stale", "garbage", "truncated", "flipped"])
def test_saved_terms_are_used_only_when_they_match(tmp_path, monkeypatch, damage):
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder="hash") as s:
        s.save("deploy script for atlas", category="project")
    stale = (path / "terms.bin").read_bytes()
    with MemoryStore.open(path, embedder="hash") as s:
        s.save("green tea in the morning", category="preference")
        want = [h.entry.id for h in s.recall("tea deploy", reinforce=False)]
    if damage == "tokenizer":
        monkeypatch.setattr(terms_file, "TOKENIZER_VERSION", "another-tokenizer")
    elif damage == "stale":
        (path / "terms.bin").write_bytes(stale)
    elif damage == "garbage":
        (path / "terms.bin").write_bytes(os.urandom(300))
    elif damage == "truncated":
        data = (path / "terms.bin").read_bytes()
        (path / "terms.bin").write_bytes(data[: len(data) // 2])
    else:  # one bit of the last term frequency: the arrays stay consistent, only the sum tells
        data = bytearray((path / "terms.bin").read_bytes())
        data[-21] ^= 0x01
        (path / "terms.bin").write_bytes(bytes(data))
    calls = []
    real = reload_module.tokenize
    monkeypatch.setattr(reload_module, "tokenize", lambda text: calls.append(text) or real(text))
    with MemoryStore.open(path, embedder="hash") as s:
        assert [h.entry.id for h in s.recall("tea deploy", reinforce=False)] == want
    assert len(calls) == 2  # both entries tokenised again


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_an_idle_open_store_holds_one_descriptor_and_no_writer_thread(tmp_path):
    with MemoryStore.open(tmp_path / "s", embedder="hash") as s:
        for i in range(30):
            s.save(f"note {i} about tea", category="preference")
    fds, threads = _fds(), _threads()
    stores = [MemoryStore.open(tmp_path / "s", embedder="hash")]
    stores[0].recall("tea", reinforce=False)
    for i in range(5):
        shutil.copytree(tmp_path / "s", tmp_path / f"c{i}", ignore=shutil.ignore_patterns(
            "store.lock"))
        stores.append(MemoryStore.open(tmp_path / f"c{i}", embedder="hash"))
        stores[-1].recall("tea", reinforce=False)
    assert _fds() - fds == len(stores)  # the directory lock, nothing else
    assert _threads() == threads  # no tantivy writer, no timer
    stores[0].save("a write opens the journal", category="preference")
    assert _fds() - fds == len(stores) + 1
    stores[0].flush()  # the snapshot empties the journal and closes it
    assert _fds() - fds == len(stores)
    for s in stores:
        s.close()
    assert _fds() == fds


def test_writes_to_many_stores_start_one_timer_thread(tmp_path):
    threads = _threads()
    stores = [MemoryStore.open(tmp_path / f"s{i}", embedder="hash") for i in range(20)]
    try:
        for i, s in enumerate(stores):
            s.save(f"note {i}", category="preference")  # a debounced snapshot + a journal fsync
        assert _threads() <= threads + 1
    finally:
        for s in stores:
            s.close()


def test_timers_run_in_order_and_cancel():
    import threading

    from maclaw_fast.timers import later

    seen, done = [], threading.Event()
    later(0.05, lambda: seen.append("b"))
    later(0.01, lambda: seen.append("a"))
    later(0.03, lambda: seen.append("x")).cancel()
    later(0.08, done.set)
    assert done.wait(10)
    assert seen == ["a", "b"]


def test_reopened_vectors_are_the_snapshots_bytes_and_stay_editable(tmp_path):
    from maclaw_fast.persist.snapshot import read_snapshot, table_entries

    store = MemoryStore.open(tmp_path / "s", embedder="hash", clock=lambda: 1.7e9)
    ids = [store.save(f"deploy note {i} boat tea {i * 7}", category="project").id
           for i in range(60)]
    store.close()
    _, expected = table_entries(read_snapshot(tmp_path / "s" / "snapshot.arrow")[0])
    store = MemoryStore.open(tmp_path / "s", embedder="hash", clock=lambda: 1.7e9)
    vc = store.vectors
    assert vc.matrix.base is not None and vc.matrix.flags.writeable  # no copy was made
    assert np.array_equal(vc.matrix[:60], expected) and vc.has_vec[:60].all()
    # edits on the adopted rows: a delete, an update (re-embeds in place), growth past them
    store.delete(ids[3])
    store.update(ids[5], content="garden python friday")
    more = [store.save(f"atlas garden {i}", category="preference").id for i in range(80)]
    before = [[(h.entry.id, round(h.score, 12)) for h in store.recall(q, reinforce=False)]
              for q in ("deploy boat", "garden python", "atlas garden 7")]
    store.close()
    store = MemoryStore.open(tmp_path / "s", embedder="hash", clock=lambda: 1.7e9)
    after = [[(h.entry.id, round(h.score, 12)) for h in store.recall(q, reinforce=False)]
             for q in ("deploy boat", "garden python", "atlas garden 7")]
    assert after == before and ids[5] in {h[0] for h in after[1]}
    assert len(store) == 139 and store.get(more[-1]) is not None
    store.close()


def test_vectors_are_copied_when_the_source_cannot_be_kept():
    import pyarrow as pa

    vecs = np.arange(12, dtype=np.float32).reshape(3, 4)
    frozen = pa.Array.from_buffers(pa.float32(), 12, [None, pa.py_buffer(vecs.tobytes())])
    col = pa.FixedSizeListArray.from_arrays(frozen, 4)
    assert reload_module.writable_values(col, 4) is None  # an immutable source (bytes)
    raw = np.frombuffer(vecs.tobytes(), np.uint8).copy()
    flat = pa.Array.from_buffers(pa.float32(), 12, [None, pa.py_buffer(memoryview(raw))])
    col = pa.FixedSizeListArray.from_arrays(flat, 4)
    view = reload_module.writable_values(col, 4)
    assert view is not None and np.array_equal(view, vecs) and view.flags.writeable
    assert reload_module.writable_values(col, 3) is None  # another dimension
    with_null = pa.FixedSizeListArray.from_arrays(flat, 4, mask=pa.array([False, True, False]))
    assert reload_module.writable_values(with_null, 4) is None
