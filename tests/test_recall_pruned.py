"""A large store's recall through the int8 first pass (maclaw_fast.memory.pruned) returns what
the dense cosine scan returns, bit for bit: hits, order, scores and every score part. The
threshold is lowered so that small stores take the pruned path here."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

import maclaw_fast.memory.pruned as pruned
import maclaw_fast.memory.recall as recall_mod
from maclaw_fast.memory import MemoryStore
from tests.maint_helpers import H, Clock

WORDS = [f"w{i}" for i in range(120)]
DIM = 384


def _store(kind: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    clock = Clock(1.8e9)
    store = MemoryStore.in_memory(embedder="hash", clock=clock)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    p = 1.0 / np.arange(1, len(WORDS) + 1) ** 1.1
    p /= p.sum()
    cats = ("instruction", "preference", "project", "user_fact", "self_identity")
    ids = []
    for i in range(n):
        clock.t = 1.8e9 - float(rng.random()) * 30 * 24 * H
        text = " ".join(rng.choice(WORDS, int(rng.integers(4, 12)), p=p)) + f" {i}"
        if kind == "conversation":
            ids.append(store.save(f"speaker {i % 2}: {text}", category="conversation_summary",
                                  thread=f"s{i // 8}", vector=vecs[i]).id)
        else:
            store.save(text, category=cats[i % 5] if i % 7 else "instruction",
                       tags=["atlas"] if i % 3 == 0 else (), vector=vecs[i])
    clock.t = 1.8e9
    for entry_id in ids[::6]:  # some turns are dormant: revival joins the ranking
        store.set_fields(entry_id, status="dormant")
    return store, vecs, rng


def _hits(store, query, qvec, project=None):
    return [(h.entry.id, h.score, h.reason, msgspec.structs.astuple(h.breakdown))
            for h in store.recall(query, query_vector=qvec, project=project, reinforce=False)]


@pytest.mark.parametrize("kind,seed", [("notes", 1), ("conversation", 2)])
def test_pruned_recall_equals_the_dense_scan(monkeypatch, kind, seed):
    store, vecs, rng = _store(kind, 400, seed)
    verdicts = []
    check = recall_mod.is_exact
    monkeypatch.setattr(recall_mod, "is_exact", lambda *a: verdicts.append(check(*a))
                        or verdicts[-1])
    queries = []
    for q in range(24):
        words = " ".join(rng.choice(WORDS, int(rng.integers(1, 5))))
        qvec = rng.standard_normal(DIM).astype(np.float32)
        if q % 3 == 0:  # near a stored row: one cosine stands out
            qvec = vecs[int(rng.integers(len(vecs)))] + 0.05 * qvec / np.sqrt(DIM)
        queries.append((words, (qvec / np.linalg.norm(qvec)).astype(np.float32),
                        "atlas" if q % 4 == 1 else None))
    monkeypatch.setattr(pruned, "PRUNE_ROWS", 10**9)
    dense = [_hits(store, *q) for q in queries]
    assert not verdicts  # the dense path ran
    monkeypatch.setattr(pruned, "PRUNE_ROWS", 0)
    assert [_hits(store, *q) for q in queries] == dense
    assert len(verdicts) == len(queries) and sum(verdicts) >= len(queries) // 4


def test_a_ranking_that_cannot_be_shown_exact_is_rerun_on_the_dense_scan(monkeypatch):
    store, vecs, rng = _store("notes", 200, 3)
    qvec = vecs[7]
    monkeypatch.setattr(pruned, "PRUNE_ROWS", 10**9)
    dense = _hits(store, "w1 w2", qvec)
    monkeypatch.setattr(pruned, "PRUNE_ROWS", 0)
    monkeypatch.setattr(recall_mod, "is_exact", lambda *a: False)
    assert _hits(store, "w1 w2", qvec) == dense
