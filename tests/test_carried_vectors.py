"""A store opened without a model (``embedder="none"``) keeps the vectors and fingerprint its
snapshot has: the next open with the model embeds only what was saved or edited meanwhile."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from maclaw_fast import MemoryConfig, MemoryStore
from maclaw_fast.config import PersistConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.persist.snapshot import read_snapshot, snapshot_meta
from maclaw_fast.text.tokenizer import analysed_text

SLOW_SNAPSHOTS = MemoryConfig(persist=PersistConfig(snapshot_debounce_s=3600))


class CountingHash(HashEmbedder):
    """The hash model, recording every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        return super().embed(texts)


def _model_store(path):
    with MemoryStore.open(path, embedder=HashEmbedder(64)) as s:
        kept = [s.save(f"tea with lemon {i}", category="preference", tags=["kitchen"]).id
                for i in range(6)]
        edited = s.save("the boat leaves friday", category="project").id
        gone = s.save("deploy on mondays", category="project").id
        vectors = {i: s.vector(i) for i in kept}
    return kept, edited, gone, vectors


@pytest.mark.parametrize("how", ["closed", "journal"])
def test_a_store_without_a_model_keeps_its_vectors_and_marks_new_text(tmp_path, how):
    path = tmp_path / "s"
    kept, edited, gone, vectors = _model_store(path)
    fingerprint = HashEmbedder(64).fingerprint
    s = MemoryStore.open(path, embedder="none", config=SLOW_SNAPSHOTS)
    new = s.save("the garden grows beans", category="preference", tags=["garden"]).id
    s.update(edited, content="the boat leaves saturday")
    s.delete(gone)
    s.pin(kept[0])  # a change that keeps the text: the vector stays
    if how == "closed":  # the snapshot this process writes
        s.close()
        table = read_snapshot(path / "snapshot.arrow")[0]
        meta = snapshot_meta(table)
        assert (meta.fingerprint, meta.dim) == (fingerprint, 64)
        assert "embedding" in table.column_names
        target = path
    else:  # left in the journal, replayed by the next open (a copy taken while it is open)
        target = tmp_path / "copy"
        shutil.copytree(path, target)
        s.close()
    model = CountingHash()
    with MemoryStore.open(target, embedder=model) as s:
        assert sorted(model.texts) == sorted([
            analysed_text("the garden grows beans", ("garden",)),
            analysed_text("the boat leaves saturday", ())])
        for i in kept:
            assert np.array_equal(s.vector(i), vectors[i])
        expected = HashEmbedder(64).embed([analysed_text("the boat leaves saturday", ())])[0]
        assert np.allclose(s.vector(edited), expected, atol=1e-6)
        assert s.vector(new) is not None and gone not in s
    model = CountingHash()
    with MemoryStore.open(target, embedder=model) as s:  # everything embedded now
        assert model.texts == [] and len(s) == 8


def test_a_reopen_without_a_model_that_changes_nothing_rewrites_nothing(tmp_path):
    path = tmp_path / "s"
    kept, *_ = _model_store(path)
    before = (path / "snapshot.arrow").read_bytes()
    with MemoryStore.open(path, embedder="none") as s:
        assert s.recall("tea lemon", reinforce=False)[0].entry.id in kept
    assert (path / "snapshot.arrow").read_bytes() == before
