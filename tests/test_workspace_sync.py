"""Workspace sync on real files: edit, add, delete, rename; embeddings never recomputed for
unchanged text; persistence across reopen; the folder watcher and the interval sync."""

from __future__ import annotations

import itertools
import os
import time

import pytest

from maclaw_fast.config import SearchConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.workspace import WorkspaceIndex

_TICK = itertools.count(1)


def write(path, text: str) -> None:
    """Write and give the file a fresh mtime: two writes inside one kernel clock tick would
    otherwise share an mtime, which no editor relies on either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    ns = time.time_ns() + next(_TICK) * 1_000_000
    os.utime(path, ns=(ns, ns))


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def paths(resp) -> list[str]:
    return [h.path for h in resp.results]


def keyword_hits(resp) -> list[str]:
    """The results that matched by keyword (the default fusion always ranks the nearest chunks
    by vector, relative to the best)."""
    return [h.path for h in resp.results if h.text_score > 0]


def long_doc(topic: str, n: int = 120) -> str:
    return "\n".join(f"{topic} paragraph {i}: " + "lorem ipsum dolor sit amet " * 3
                     for i in range(n)) + "\n"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    write(root / "MEMORY.md", "# Memory\nThe wifi password is hunter2.\n")
    write(root / "memory" / "2026-11-01.md", "Planted tomatoes in the garden.\n")
    write(root / "memory" / "projects" / "atlas.md", long_doc("atlas"))
    return root


def open_ix(root, tmp_path, emb=None, **cfg):
    return WorkspaceIndex.open(root, embedder=emb or CountingEmbedder(),
                               index_dir=tmp_path / "ix", config=SearchConfig(**cfg))


def test_edit_add_delete_rename_reflected_by_next_search(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    assert paths(ix.search("tomatoes")) == ["memory/2026-11-01.md"]
    # edit
    write(ws / "memory" / "2026-11-01.md", "Planted cucumbers instead.\n")
    resp = ix.search("cucumbers")
    assert resp.synced and paths(resp) == ["memory/2026-11-01.md"]
    assert keyword_hits(ix.search("tomatoes")) == []
    # add
    write(ws / "memory" / "2026-11-02.md", "Bought a kayak.\n")
    assert paths(ix.search("kayak")) == ["memory/2026-11-02.md"]
    # delete
    (ws / "memory" / "2026-11-02.md").unlink()
    assert keyword_hits(ix.search("kayak")) == []
    # rename
    os.rename(ws / "memory" / "2026-11-01.md", ws / "memory" / "garden.md")
    assert paths(ix.search("cucumbers")) == ["memory/garden.md"]
    assert ix.status().files == 3


def test_unchanged_text_is_never_reembedded(ws, tmp_path):
    emb = CountingEmbedder()
    ix = open_ix(ws, tmp_path, emb)
    n_chunks = ix.status().chunks
    assert len(emb.texts) == n_chunks and n_chunks > 4
    # touching a file (mtime only) hashes it but re-chunks and re-embeds nothing
    os.utime(ws / "memory" / "projects" / "atlas.md")
    rep = ix.sync()
    assert rep.touched == 1 and rep.chunks_added == 0 and len(emb.texts) == n_chunks
    # a plain search with nothing changed embeds only the query
    ix.search("wifi")
    assert emb.texts[n_chunks:] == ["wifi"]
    emb.texts.clear()
    # appending to a long file: only the chunk(s) whose text changed are embedded
    write(ws / "memory" / "projects" / "atlas.md", long_doc("atlas") + "new tail line\n")
    rep = ix.sync()
    assert rep.changed == 1 and 1 <= rep.embedded <= 2 and len(emb.texts) == rep.embedded
    # a rename keeps every chunk text: nothing embedded
    emb.texts.clear()
    os.rename(ws / "memory" / "projects" / "atlas.md", ws / "memory" / "atlas-notes.md")
    rep = ix.sync()
    assert rep.removed == 1 and rep.added == 1 and emb.texts == []
    ix.close()
    # a new process: everything comes from the on-disk cache and the chunk table
    emb2 = CountingEmbedder()
    ix2 = open_ix(ws, tmp_path, emb2)
    assert emb2.texts == [] and ix2.status().chunks == ix.status().chunks
    assert paths(ix2.search("wifi password"))[0] == "MEMORY.md"


def test_reopen_loads_state_without_rechunking(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    ix.close()
    ix2 = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "ix",
                              sync=False)
    assert ix2.status().chunks == ix.status().chunks and ix2.is_dirty() is False
    assert ix2.sync().chunks_added == 0
    write(ws / "MEMORY.md", "# Memory\nThe wifi password changed to correcthorse.\n")
    assert ix2.is_dirty() is True and ix2.status().dirty is True
    assert paths(ix2.search("correcthorse")) == ["MEMORY.md"]
    assert ix2.status().dirty is False


def test_journal_replays_small_changes_and_survives_a_torn_line(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    snapshot = tmp_path / "ix" / "workspace-chunks.arrow"
    journal = tmp_path / "ix" / "workspace-journal.jsonl"
    before = snapshot.stat().st_mtime_ns
    write(ws / "MEMORY.md", "# Memory\nThe boat is called Marlin.\n")
    (ws / "memory" / "2026-11-01.md").unlink()
    ix.sync()
    ix.close()
    assert snapshot.stat().st_mtime_ns == before and journal.stat().st_size > 0
    with open(journal, "ab") as fh:
        fh.write(b'{"g": 1, "removed": ["MEM')  # a write cut short by a crash
    emb = CountingEmbedder()
    ix2 = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix", sync=False)
    assert ix2.is_dirty() is False and emb.texts == []
    assert paths(ix2.search("marlin")) == ["MEMORY.md"] and ix2.status().files == 2
    assert keyword_hits(ix2.search("tomatoes")) == []
    ix2.save()  # a snapshot folds the journal in
    assert journal.stat().st_size == 0
    ix3 = open_ix(ws, tmp_path, CountingEmbedder())
    assert paths(ix3.search("marlin")) == ["MEMORY.md"] and ix3.status().chunks == \
        ix2.status().chunks


def test_lost_or_corrupt_state_is_rebuilt_from_the_embedding_cache(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    n = ix.status().chunks
    ix.close()
    (tmp_path / "ix" / "workspace-chunks.arrow").write_bytes(b"not arrow")
    emb = CountingEmbedder()
    ix2 = open_ix(ws, tmp_path, emb)
    assert ix2.status().chunks == n and emb.texts == []
    (tmp_path / "ix" / "workspace-chunks.arrow").unlink()
    ix3 = open_ix(ws, tmp_path, emb)
    assert ix3.status().chunks == n and emb.texts == []


def test_incompatible_state_is_replaced_by_a_fresh_snapshot(ws, tmp_path):
    open_ix(ws, tmp_path, chunk_tokens=50).close()  # another chunking: unusable state
    ix = open_ix(ws, tmp_path)
    assert ix.state.has_snapshot and ix.status().chunks > 0
    ix.close()
    ix2 = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "ix",
                              sync=False)
    assert ix2.status().chunks == ix.status().chunks
    rep = ix2.sync()
    assert rep.added == rep.changed == rep.chunks_added == 0


def test_model_change_reembeds_and_changes_ids(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    ids = set(filter(None, ix.ids))
    ix.close()

    class Other(CountingEmbedder):
        def __init__(self):
            super().__init__()
            self.fingerprint = "other-model:64"

    emb = Other()
    ix2 = open_ix(ws, tmp_path, emb)
    assert len(emb.texts) == ix2.status().chunks
    assert ids.isdisjoint(set(filter(None, ix2.ids)))


def test_force_sync_rechunks_without_reembedding(ws, tmp_path):
    emb = CountingEmbedder()
    ix = open_ix(ws, tmp_path, emb)
    before = len(emb.texts)
    rep = ix.sync(force=True)
    assert rep.changed == 3 and rep.embedded == 0 and len(emb.texts) == before


def test_row_reuse_keeps_scores_consistent(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    for i in range(5):  # churn: rows get freed and reused
        write(ws / "memory" / "projects" / "atlas.md", long_doc(f"atlas{i}", 40 + 10 * i))
        ix.sync()
    fresh = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "fresh")
    q = "atlas4 paragraph 7 lorem"
    a = [(h.path, h.start_line, round(h.score, 6)) for h in ix.search(q, min_score=0).results]
    b = [(h.path, h.start_line, round(h.score, 6)) for h in fresh.search(q, min_score=0).results]
    assert a == b and a
    assert ix.status().chunks == fresh.status().chunks


def wait_for(pred, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def test_watcher_syncs_within_the_debounce_window(ws, tmp_path):
    ix = open_ix(ws, tmp_path, sync_on_search=False)  # only the watcher may sync
    w = ix.watch()
    assert w.ready.wait(10) and ix.status().watching
    wait_for(lambda: w.syncs >= 1, 5)  # the start-up sync
    syncs = w.syncs
    write(ws / "memory" / "2026-11-03.md", "Adopted a hedgehog named Pip.\n")
    for i in range(3):  # a burst of saves: the debounce folds them into one sync
        write(ws / "memory" / "2026-11-03.md", f"Adopted a hedgehog named Pip. v{i}\n")
        time.sleep(0.1)
    t_saved = time.monotonic()
    # the sync lands one debounce (1.5 s) after the last save; allow scheduling slack
    wait_for(lambda: bool(keyword_hits(ix.search("hedgehog"))), w.debounce_s + 3.0)
    assert time.monotonic() - t_saved >= w.debounce_s - 0.3  # not before the debounce ran out
    assert w.syncs - syncs == 1
    assert "v2" in ix.search("hedgehog").results[0].snippet
    ix.close()
    assert not ix.status().watching


def test_watcher_marks_dirty_so_search_syncs_before_the_debounce(ws, tmp_path):
    ix = open_ix(ws, tmp_path)
    w = ix.watch()
    assert w.ready.wait(10)
    wait_for(lambda: w.syncs >= 1, 5)
    write(ws / "memory" / "2026-11-04.md", "The ferry leaves at nine.\n")
    wait_for(lambda: ix._dirty, 3)  # the event arrived; the debounced sync has not run yet
    resp = ix.search("ferry")
    assert resp.synced and paths(resp) == ["memory/2026-11-04.md"]
    ix.close()


def test_interval_sync_without_watching(ws, tmp_path):
    ix = open_ix(ws, tmp_path, sync_on_search=False)
    w = ix.watch(files=False, interval_s=0.2)
    write(ws / "memory" / "2026-11-05.md", "Booked the dentist for Friday.\n")
    wait_for(lambda: bool(keyword_hits(ix.search("dentist"))), 5)
    assert w.syncs >= 1 and w.events == 0
    ix.close()


def test_index_writes_do_not_trigger_the_watcher(ws, tmp_path):
    root = ws
    ix = WorkspaceIndex.open(root, embedder=CountingEmbedder())  # index in <ws>/.maclaw
    w = ix.watch()
    assert w.ready.wait(10)
    wait_for(lambda: w.syncs >= 1, 5)
    ix.sync(force=True)  # rewrites the index files inside the watched folder
    time.sleep(w.debounce_s + 0.5)
    assert w.events == 0
    ix.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_build_tokenised_on_two_cores_equals_one_on_one(tmp_path, monkeypatch):
    """Forcing the forked bulk tokeniser on a small workspace gives the same chunk tokens, BM25
    scores and search results as the in-process one."""
    import maclaw_fast.text.bulk as bulk

    ws = tmp_path / "ws"
    for i in range(30):
        write(ws / "memory" / f"2026-03-{i % 28 + 1:02d}-{i}.md",
              "\n".join(f"- deploy {i} 部署脚本 line {j} staging 数据库 v{j}.{i}"
                        for j in range(60)))
    serial = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "a")
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(bulk.os, "fork", lambda: forks.append(1) or real_fork())
    forked = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "b")
    assert forks == [1]
    kept_in = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "c",
                                  config=SearchConfig(fork_workers=False))
    assert forks == [1]  # the knob keeps a big sync in this process
    key = lambda ix: sorted((ix.paths[r], int(ix.start_line[r]), ix._token_text(r))  # noqa: E731
                            for r in range(ix.n_rows) if ix.live[r])
    assert key(forked) == key(serial) == key(kept_in) and len(key(serial)) > 30
    for q in ("deploy staging", "部署脚本", "v7.3 数据库"):
        a, b = serial.search(q, min_score=0.0), forked.search(q, min_score=0.0)
        assert [(h.path, h.start_line, h.score) for h in a.results] == \
               [(h.path, h.start_line, h.score) for h in b.results]


def _rows(ix):
    return sorted((ix.paths[r], int(ix.start_line[r]), ix.hashes[r], ix._token_text(r))
                  for r in range(ix.n_rows) if ix.live[r])


def test_a_reopened_snapshot_and_journal_equal_a_fresh_build(ws, tmp_path):
    """Tokens persist as ids into a stored term list (snapshot) or as text (journal); a rename
    reuses the removed chunk's tokens. The reopened index must hold the same rows, tokens and
    BM25 scores as one built from the files."""
    ix = open_ix(ws, tmp_path)
    journal = tmp_path / "ix" / "workspace-journal.jsonl"
    write(ws / "memory" / "2026-11-02.md", "部署脚本 deploy notes\nstaging 数据库 v2.1\n")
    ix.sync()
    os.rename(ws / "memory" / "2026-11-01.md", ws / "memory" / "2026-11-03.md")
    ix.sync()
    write(ws / "MEMORY.md", "# Memory\nThe boat is called Marlin.\n")
    ix.sync()
    ix.close()
    assert journal.stat().st_size > 0
    again = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "ix",
                                sync=False)
    fresh = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "fresh")
    assert _rows(again) == _rows(fresh) and len(_rows(fresh)) > 4
    for q in ("部署脚本 staging", "tomatoes garden", "marlin boat", "atlas paragraph 3"):
        a = [(h.path, h.start_line, round(h.score, 9)) for h in again.search(q, min_score=0).results]
        b = [(h.path, h.start_line, round(h.score, 9)) for h in fresh.search(q, min_score=0).results]
        assert a == b and a, q
    again.save()  # the journal folded into a new snapshot reads back the same
    third = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "ix",
                                sync=False)
    assert _rows(third) == _rows(fresh)


def test_a_vector_only_snapshot_serves_a_text_index_later(ws, tmp_path):
    open_ix(ws, tmp_path, text_search=False).close()
    text = open_ix(ws, tmp_path)  # same state folder, now with BM25
    fresh = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "fresh")
    assert _rows(text) == _rows(fresh)
    assert paths(text.search("wifi password", min_score=0))[0] == "MEMORY.md"


def test_state_of_another_tokenizer_is_rebuilt_not_mixed(ws, tmp_path, monkeypatch):
    """A state written under another analysis (here: no stop words, no stemming, under an older
    version name) is not loaded: the reopened index holds only the current tokenizer's terms,
    so "tomato" finds "Planted tomatoes" by text, as a fresh build does."""
    import maclaw_fast.workspace.analyse as analyse_mod
    import maclaw_fast.workspace.state as state_mod
    from maclaw_fast.text import Analyzer, tokenize

    with monkeypatch.context() as m:
        m.setattr(analyse_mod, "tokenize", Analyzer(stop_words=(), stemmer=None).tokenize)
        m.setattr(state_mod, "TOKENIZER_VERSION", "maclaw-tok-1")
        old = open_ix(ws, tmp_path)
        assert "tomatoes" in old.vocab.ids_dict and "tomato" not in old.vocab.ids_dict
        old.close()
    ix = WorkspaceIndex.open(ws, embedder=CountingEmbedder(), index_dir=tmp_path / "ix",
                             sync=False)
    assert "tomatoes" not in ix.vocab.ids_dict
    hits = ix.search("tomato", min_score=0.0).results
    assert hits and hits[0].path == "memory/2026-11-01.md" and hits[0].text_score > 0
    fresh = open_ix(ws, tmp_path / "fresh")
    assert sorted(ix.vocab.tokens) == sorted(fresh.vocab.tokens)
    assert set(ix.vocab.tokens) >= set(tokenize("Planted tomatoes in the garden"))
