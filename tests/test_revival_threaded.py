"""Revival on conversation stores (the thread prior applies): a single recall and a batch
recall revive alike, and the dormant turns a recall returns are those a plain-Python reference
brings back (cue strength at the bar, the links walked through dormant rows)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.plan import recall_plan
from maclaw_fast.text.tokenizer import tokenize
from tests.test_revival_kernels import ref_revived

WORDS = ["ferry", "naxos", "pottery", "adoption", "agency", "marathon", "violin", "garden",
         "tomato", "kayak", "festival", "painting", "camping", "lake", "puppy", "recipe",
         "museum", "concert", "tennis", "library"]
SPEAKERS = ["Caroline", "Melanie"]
DIM = 16


def conversation_store(seed: int, *, embedder: bool = True):
    """Sessions of turns ("{speaker}: ..."), each session its own conversation thread, saved a
    day apart with random unit vectors; the older half set dormant. Returns the store, its
    rows' vectors by id, and the ids that are dormant."""
    rng = random.Random(seed)
    vrng = np.random.default_rng(seed)
    clock = {"t": 1.7e9}
    cfg = MemoryConfig(recall=RecallConfig(adjacency_hops=rng.choice([0, 1, 2])))
    store = MemoryStore.in_memory(embedder=HashEmbedder(dim=DIM) if embedder else None,
                                  config=cfg, clock=lambda: clock["t"])
    ids, vectors = [], {}
    for session in range(rng.randint(3, 6)):
        clock["t"] += 86400.0
        for turn in range(rng.randint(3, 9)):
            text = (f"{SPEAKERS[turn % 2]}: "
                    + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))))
            vec = None
            if embedder:
                vec = vrng.standard_normal(DIM).astype(np.float32)
                vec /= np.linalg.norm(vec)
            e = store.save(text, category="conversation_summary", thread=f"s{session}",
                           vector=vec)
            ids.append(e.id)
            vectors[e.id] = vec
            clock["t"] += 60.0
    dormant = ids[: len(ids) // 2]
    for i in dormant:
        store.set_fields(i, status="dormant", strength=0.05)
    return store, vectors, set(dormant)


def queries_for(seed: int, vectors: dict, n: int = 12):
    rng = random.Random(seed + 100)
    ids = list(vectors)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS + SPEAKERS) for _ in range(rng.randint(1, 4))]
        near = vectors[rng.choice(ids)]
        vec = None
        if near is not None:  # near one turn, so its cue may come from the vector as well
            vec = near + 0.3 * np.random.default_rng(len(out) + seed).standard_normal(DIM)
            vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        out.append((" ".join(words), vec))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_single_and_batch_recall_revive_alike(seed):
    """The thread prior applies, dormant turns are revived, and single recall returns what the
    batch returns: the same entries, reasons and scores."""
    store, vectors, dormant = conversation_store(seed, embedder=seed % 4 != 3)
    assert recall_plan(store).threads(store).n_threads > 0
    queries = queries_for(seed, vectors)
    vecs = None if queries[0][1] is None else np.stack([v for _, v in queries])
    single = [store.recall(q, query_vector=v, reinforce=False) for q, v in queries]
    batch = store.recall_batch([q for q, _ in queries], query_vectors=vecs, reinforce=False)
    revived = 0
    for (q, _), hs, bs in zip(queries, single, batch):
        assert [(h.entry.id, h.reason) for h in hs] == [(h.entry.id, h.reason) for h in bs], q
        assert [h.score for h in hs] == pytest.approx([h.score for h in bs], rel=1e-12), q
        assert all((h.reason == "revived") == (h.entry.id in dormant) for h in hs)
        revived += sum(h.reason == "revived" for h in hs)
    assert revived > 0
    store.close()


@pytest.mark.parametrize("seed", range(4))
def test_revived_turns_are_the_references(seed):
    """Every dormant turn a recall returns is one the reference revives for that query."""
    store, vectors, dormant_ids = conversation_store(seed)
    n = len(store)
    rows = {store.row_of_id(i) for i in dormant_ids}
    dormant = np.array([r in rows for r in range(n)])
    prev, nxt = store.conversation_links()
    fc, rc = store.config.forgetting, store.config.recall
    seen = 0
    for q, vec in queries_for(seed, vectors, n=8):
        bm25 = store.bm25.scores(tokenize(q), n)
        cos = (store.vectors.scores(vec, n) if vec is not None else np.zeros(n, np.float32))
        idf = store.bm25.idf_total(tokenize(q))
        want = ref_revived(dormant, bm25, cos, idf, rc.bm25_weight, rc.cos_weight,
                           vec is not None, fc.revive_min_cue, prev, nxt, rc.adjacency_hops,
                           fc.revive_needs_term, 0.0)
        got = {store.row_of_id(h.entry.id) for h in store.recall(q, query_vector=vec,
                                                                 reinforce=False)
               if h.reason == "revived"}
        assert got <= want, q
        seen += len(got)
    assert seen > 0
    store.close()
