"""Revival on the recall paths that run outside the fused kernel. The thread-prior path
(conversation stores) widens its masks with the dormant turns a question cues before its one
ranking (``memory.revival.revival_masks``): checked on random conversation stores against the
batch kernel (revival and the prior inside one kernel) and against a plain-Python reference of
which dormant turns come back. The large-store paths rank again with the same widened masks:
checked against the fused kernel."""

from __future__ import annotations

import random

import numpy as np
import pytest

from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.revival import revival_masks
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


@pytest.mark.parametrize("seed", range(8))
def test_threaded_recall_revives_as_the_batch_kernel(seed):
    """The thread prior applies, dormant turns are revived, and single recall (masks widened
    in Python, one ranking) returns what the batch kernel returns: the same entries, reasons
    and scores."""
    store, vectors, dormant = conversation_store(seed, embedder=seed % 4 != 3)
    from maclaw_fast.memory.recall import _static as plan  # the plan's threads
    from maclaw_fast.memory.thread_prior import thread_plan

    assert thread_plan(store, plan(store, False, None)) is not None
    queries = queries_for(seed, vectors)
    vecs = None if queries[0][1] is None else np.stack([v for _, v in queries])
    single = [store.recall(q, query_vector=v, reinforce=False) for q, v in queries]
    batch = store.recall_batch([q for q, _ in queries], query_vectors=vecs, reinforce=False)
    revived = 0
    for (q, _), hs, bs in zip(queries, single, batch):
        assert [(h.entry.id, h.reason) for h in hs] == [(h.entry.id, h.reason) for h in bs], q
        assert [h.score for h in hs] == pytest.approx([h.score for h in bs], rel=1e-6), q
        assert all((h.reason == "revived") == (h.entry.id in dormant) for h in hs)
        revived += sum(h.reason == "revived" for h in hs)
    assert revived > 0
    store.close()


@pytest.mark.parametrize("seed", range(8))
def test_revival_masks_against_a_plain_loop(seed):
    """``revival_masks`` adds to copies of the masks exactly the dormant rows the Python
    reference revives (cue strength at the bar, the links walked ``adjacency_hops`` deep
    through dormant rows), leaves the caller's masks alone, and says whether it widened."""
    store, vectors, dormant_ids = conversation_store(seed)
    rng = np.random.default_rng(seed)
    n = len(store)
    rows = {store._row(i) for i in dormant_ids}
    dormant = np.array([r in rows for r in range(n)])
    prev, nxt = store.conversation_links()
    fc, rc = store.config.forgetting, store.config.recall
    for q, vec in queries_for(seed, vectors, n=8):
        bm25 = store._bm25.scores(tokenize(q), n)
        cos = (store._vectors.scores(vec, n) if vec is not None
               else np.zeros(n, np.float32))
        idf = store._bm25.idf_total(tokenize(q))
        eligible = ~dormant & (rng.random(n) < 0.9)
        scored = eligible.copy()
        before = (eligible.copy(), scored.copy())
        el, sc, widened = revival_masks(store, None, bm25, cos, vec is not None, idf, eligible,
                                        scored)
        want = ref_revived(dormant, bm25, cos, idf, rc.bm25_weight, rc.cos_weight,
                           vec is not None, fc.revive_min_cue, prev, nxt, rc.adjacency_hops,
                           fc.revive_needs_term, 0.0)
        assert widened == bool(want)
        assert set(np.flatnonzero(el & ~eligible).tolist()) == want
        assert set(np.flatnonzero(sc & ~scored).tolist()) == want
        assert (el[eligible]).all() and (sc[scored]).all()
        assert (eligible == before[0]).all() and (scored == before[1]).all()
    store.close()


def test_threaded_scores_give_the_query_idf_total():
    """The thread-prior path's cue scale (from the term ids it looked up for BM25) is the
    index's ``idf_total`` of the same tokens, unknown words included."""
    from maclaw_fast.memory.recall import _static as plan
    from maclaw_fast.memory.thread_prior import thread_plan, threaded_scores

    store, vectors, _ = conversation_store(3)
    static = plan(store, False, None)
    threads = thread_plan(store, static)
    for q in ("Caroline ferry naxos", "kayak lake zzunknownword", "qqnever", "Melanie Melanie"):
        tokens = tokenize(q)
        _, idf = threaded_scores(store, static, threads, tokens, None)
        assert idf == store._bm25.idf_total(tokens)
    store.close()


@pytest.mark.parametrize("embedder", ["hash", None])
def test_every_single_recall_path_revives_alike(monkeypatch, embedder):
    """A note store (no thread prior) with dormant entries: the fused kernel (revival in its
    pass) and the large-store paths (ranked, then ranked again with the masks that
    ``revival_masks`` widens) return the same entries, reasons and score parts."""
    import maclaw_fast.index.bm25 as bm25_module
    import maclaw_fast.memory.recall as recall_module

    rng = np.random.default_rng(11)
    config = MemoryConfig(recall=RecallConfig(thread_bm25_weight=0.0, thread_cos_weight=0.0))
    now = [1.7e9]
    with MemoryStore.in_memory(embedder=embedder, clock=lambda: now[0], config=config) as store:
        ids = []
        for i in range(160):
            now[0] += 3600.0
            text = " ".join(rng.choice(WORDS, int(rng.integers(3, 9))))
            ids.append(store.save(f"{text} {i}", category="conversation_summary").id)
        for i in ids[:80]:
            store.set_fields(i, status="dormant", strength=0.05)
        queries = [" ".join(rng.choice(WORDS, int(rng.integers(1, 4)))) for _ in range(20)]
        switches = [(bm25_module, "PARALLEL_POSTINGS")]
        if embedder:
            switches.append((recall_module, "PARALLEL_ELEMENTS"))
        revived = 0
        for q in queries:
            want = store.recall(q, reinforce=False)
            revived += sum(h.reason == "revived" for h in want)
            for module, name in switches:
                with monkeypatch.context() as patch:
                    patch.setattr(module, name, 0)
                    store._plan_cache.clear()
                    got = store.recall(q, reinforce=False)
                store._plan_cache.clear()
                assert [(h.entry.id, h.reason) for h in got] == [
                    (h.entry.id, h.reason) for h in want], (q, name)
                assert [h.breakdown for h in got] == [h.breakdown for h in want], (q, name)
        assert revived > 0
