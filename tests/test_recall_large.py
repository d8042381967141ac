"""The large-store recall kernel against the dense single-query kernel it must equal: the same rows
and the same score parts, bit for bit, on random stores (many small blocks, graph walks, every
normalisation, budgets that force the deeper ranking) — and against the store's own oracle test
through the public API with the size switch lowered."""

import numpy as np
import pytest

from maclaw_fast.index.vectors import BOUND_SLACK
from maclaw_kernels.quantized import quantize_rows
from maclaw_kernels.recall import recall_single
from maclaw_kernels.recall_large import recall_large, top_of, within_hops
from maclaw_kernels.topk import top_k_desc
from maclaw_kernels.vectors import dot_scores, dot_scores_parallel
from tests.test_memory_kernels import random_graph, recency_knobs, ro
from tests.test_recall_kernels import random_links


def large_case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    d = int(rng.choice([3, 8, 16]))
    matrix = rng.normal(size=(n, d)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    has_vec = rng.random(n) < 0.9
    query = rng.normal(size=d).astype(np.float32)
    query /= np.linalg.norm(query)
    now = 1.8e9
    # coarse values make ties in score, then access, common: the tie-breaks are exercised
    updated = now - rng.choice([0.0, 3600.0, 86400.0, 9e5], n) - (seed % 2) * rng.uniform(0, 9e5, n)
    weight = rng.choice([1.0, 2.0, 3.5], n)
    access = rng.integers(0, 80, n).astype(np.int64)  # ≥ 64: past the kernels' log table
    seq = rng.permutation(n).astype(np.int64)
    tokens = rng.choice([0, 10, 50, 200, 800, 2500], n).astype(np.int64)
    bm25 = np.where(rng.random(n) < 0.4, rng.choice([0.5, 1.0, 2.0], n) * (1 + rng.random(n)), 0.0)
    affinity = np.where(rng.random(n) < 0.2, 3.0, 0.0)
    eligible = rng.random(n) < 0.9
    cat = rng.choice(3, n, p=[0.04, 0.06, 0.9])
    scored = eligible & (rng.random(n) < 0.95)
    fixed = np.flatnonzero(cat == 0).astype(np.int64)
    nbr, w = random_graph(rng, n)
    prev, nxt = random_links(rng, n)
    return dict(rng=rng, n=n, matrix=matrix, has_vec=has_vec, query=query, now=now,
                updated=updated, weight=weight, access=access, seq=seq, tokens=tokens, bm25=bm25,
                affinity=affinity, eligible=eligible, scored=scored, fixed=fixed,
                user_fact=cat == 1, nbr=nbr, w=w, prev=prev, nxt=nxt)


def run_both(c, mode, n_seeds, hops, max_entries, budget, block, readonly=False, w_rec=1.0,
             cos_mode=0, adj_hops=2, max_identity=3, max_user_facts=3, window=5, adj_mix=0.4):
    width = max_entries + min(max_identity, c["fixed"].size)
    cols = [c[k] for k in ("bm25", "affinity", "eligible", "scored", "access", "seq", "tokens",
                           "fixed", "user_fact")]
    if readonly:
        cols = ro(*cols)
    knobs = (mode, cos_mode, 0.4, 0.6, 1.0, n_seeds, c["nbr"], c["w"], hops, 0.5, c["prev"],
             c["nxt"], adj_hops, 0.8, adj_mix, max_identity, max_user_facts, window, max_entries, budget)
    cos = np.empty(c["n"], np.float32)
    # the bounded path's cosines are row_dot's bits (dot_scores' four-row loop may sum in
    # another order); with min-max cosines the kernel ranks dot_scores' cosines densely
    dot = dot_scores if cos_mode else dot_scores_parallel
    dot(c["matrix"], c["n"], c["has_vec"], c["query"], cos)
    ref_rows, ref_parts = np.full(width, -1, np.int64), np.zeros((9, width))
    m_ref = recall_single(c["updated"], c["weight"], c["now"],
                          *recency_knobs(c["n"], 0.005, w_rec, 0.8), cols[0], cos, *cols[1:],
                          *knobs, np.empty((7, c["n"])), ref_rows, ref_parts)
    rows, parts = np.full(width, -1, np.int64), np.zeros((9, width))
    n, d = c["matrix"].shape
    codes, scale, err = np.zeros((n, d), np.int8), np.zeros(n, np.float32), np.zeros(n)
    quantize_rows(c["matrix"], codes, scale, err)
    scratch = [np.full(n, np.nan, np.float32)] + [np.full(n, np.nan) for _ in range(3)]
    m = recall_large(c["matrix"], codes, scale, err, BOUND_SLACK, c["has_vec"], c["query"],
                     c["updated"], c["weight"], c["now"],  # a memo of its own: same bits
                     *recency_knobs(c["n"], 0.005, w_rec, 0.8), *cols, *knobs, block, *scratch,
                     rows, parts)
    return (m_ref, ref_rows[:m_ref], ref_parts[:, :m_ref]), (m, rows[:m], parts[:, :m])


@pytest.mark.parametrize("seed", range(40))
def test_recall_large_equals_recall_single(seed):
    """Equal rows and parts, bit for bit; the bounded path with raw cosines, the dense one it
    falls back to with min-max cosines (SPEC R3 needs every cosine)."""
    c = large_case(seed)
    block = int(c["rng"].choice([4, 8, 12, 64, 2048]))
    settings = ((0, 5, 1, 20, 2000, 0, 2), (1, 3, 2, 5, 300, 0, 0), (2, 5, 1, 15, 1500, 1, 2),
                (0, 1, 0, 1, 50, 0, 1), (0, 5, 3, 20, 400, 0, 2), (0, 0, 1, 20, 2000, 0, 2),
                (1, 5, 0, 20, 2000, 0, 3))
    for mode, n_seeds, hops, max_entries, budget, cos_mode, adj_hops in settings:
        ref, got = run_both(c, mode, n_seeds, hops, max_entries, budget, block,
                            readonly=(seed % 7 == 0), cos_mode=cos_mode, adj_hops=adj_hops,
                            max_identity=int(seed % 4), max_user_facts=int(seed % 3) + 1,
                            adj_mix=0.4 if seed % 2 else 0.0)
        ctx = (f"seed {seed} block {block} mode {mode} seeds {n_seeds} hops {hops} "
               f"cos {cos_mode} adjacency {adj_hops}")
        assert got[0] == ref[0], ctx
        assert got[1].tolist() == ref[1].tolist(), ctx
        np.testing.assert_array_equal(got[2], ref[2], err_msg=ctx)


def test_budget_starved_result_ranks_deeper():
    """Every top candidate over the budget: the kernel must look past its first k rows, as the
    dense kernel does."""
    c = large_case(3)
    n = c["n"]
    c["scored"] = c["eligible"].copy()
    c["fixed"] = np.zeros(0, np.int64)
    c["user_fact"] = np.zeros(n, np.bool_)
    c["tokens"] = np.where(np.arange(n) % 3 == 0, 1, 5000).astype(np.int64)
    ref, got = run_both(c, 0, 5, 1, 20, 100, 8)
    assert got[0] == ref[0] > 0
    assert got[1].tolist() == ref[1].tolist()
    np.testing.assert_array_equal(got[2], ref[2])


@pytest.mark.parametrize("seed", range(20))
def test_top_k_and_top_of_keep_the_ranked_top(seed):
    """The heap top-k, on random and on rising scores (a store in insertion order), and its use
    over a candidate list with repeats and −1 pads."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    score = rng.choice([0.5, 1.0, 1.5, 2.0], n) + (seed % 3 == 0) * rng.random(n)
    if seed % 2:
        score = np.sort(score)
    access = rng.integers(0, 3, n).astype(np.int64)
    seq = rng.permutation(n).astype(np.int64)
    k = int(rng.integers(1, 30))
    want = sorted(range(n), key=lambda i: (-score[i], -access[i], seq[i]))[:k]
    assert top_k_desc(score, access, seq, np.ones(n, np.bool_), k).tolist() == want
    parts = np.array_split(rng.permutation(n), 4)
    cand = np.concatenate([sorted(p, key=lambda i: (-score[i], -access[i], seq[i]))[:k]
                           for p in parts] + [np.full(3, -1), parts[0][:2]]).astype(np.int64)
    assert top_of(rng.permutation(cand), score, access, seq, k).tolist() == want


@pytest.mark.parametrize("seed", range(15))
def test_within_hops_matches_breadth_first_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    nbr, _ = random_graph(rng, n)
    seeds = rng.choice(n, size=min(n, int(rng.integers(1, 5))), replace=False).astype(np.int64)
    hops = int(rng.integers(1, 4))
    seen, frontier = set(), set(seeds.tolist())
    for _ in range(hops):
        frontier = {int(t) for f in frontier for t in nbr[f] if t >= 0}
        seen |= frontier
    want = sorted(seen - set(seeds.tolist()))
    assert within_hops(seeds, nbr, hops).tolist() == want


@pytest.mark.parametrize("embedder", ["hash", None])
def test_store_recall_paths_are_identical(monkeypatch, embedder):
    """The public API through each single-query path returns exactly the same hits: ids, order,
    reasons and every score part. Default: one fused kernel call reading its arrays through an
    address table; with the table refused, the same kernel given the arrays; with the size
    switches lowered, the large-store kernel (vectors) and BM25 across threads then ranking."""
    import maclaw_fast.index.bm25 as bm25_module
    import maclaw_fast.memory.recall as recall_module
    from maclaw_fast.config import MemoryConfig, RecallConfig
    from maclaw_fast.memory.store import MemoryStore

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(60)] + ["部署", "脚本", "数据库", "deploy", "script"]
    cats = ["instruction", "preference", "project_knowledge", "user_fact", "self_identity",
            "session_checkpoint"]
    now = [1.7e9]
    switches = [(recall_module, "PARALLEL_ELEMENTS")] if embedder else []
    switches.append((bm25_module, "PARALLEL_POSTINGS"))
    # the thread prior off: with it, a store of conversations takes one path of its own (the
    # oracle checks it, tests/test_recall_oracle.py); these saves make such conversations
    config = MemoryConfig(recall=RecallConfig(thread_bm25_weight=0.0, thread_cos_weight=0.0))
    with MemoryStore.in_memory(embedder=embedder, clock=lambda: now[0], config=config) as store:
        for i in range(260):
            now[0] += float(rng.choice([60.0, 3600.0, 86400.0]))
            text = " ".join(rng.choice(words, int(rng.integers(3, 12))))
            store.save(f"{text} {i}", category=str(rng.choice(cats)),
                       tags=tuple(rng.choice(["atlas", "zeus", "ops"], int(rng.integers(0, 2)))))
        queries = [" ".join(rng.choice(words, int(rng.integers(1, 5)))) for _ in range(25)]
        viewed_calls = []
        viewed = recall_module.recall_viewed
        monkeypatch.setattr(recall_module, "recall_viewed",
                            lambda *args: viewed_calls.append(1) or viewed(*args))
        for project in (None, "atlas"):
            for q in queries + [""]:
                # until a call runs through the address table (the first calls of a plan do
                # not, and a rebuild of the BM25 index's main part starts the count again)
                for _ in range(4 * recall_module.TABLE_AFTER_CALLS):
                    n_viewed = len(viewed_calls)
                    want = store.recall(q, project=project, reinforce=False)
                    if len(viewed_calls) > n_viewed:
                        break
                assert want and len(viewed_calls) == n_viewed + 1
                with monkeypatch.context() as patch:
                    patch.setattr(recall_module, "view_table", lambda args, kinds: None)
                    store._plan_cache.clear()  # the table is made with the plan
                    for _ in range(recall_module.TABLE_AFTER_CALLS):
                        got = store.recall(q, project=project, reinforce=False)
                        assert [(h.entry.id, h.reason, h.breakdown) for h in got] == [
                            (h.entry.id, h.reason, h.breakdown) for h in want], q
                assert len(viewed_calls) == n_viewed + 1
                store._plan_cache.clear()
                for module, name in switches:
                    with monkeypatch.context() as patch:
                        patch.setattr(module, name, 0)
                        got = store.recall(q, project=project, reinforce=False)
                    assert [h.entry.id for h in got] == [h.entry.id for h in want], (q, name)
                    assert [h.reason for h in got] == [h.reason for h in want], (q, name)
                    assert [h.breakdown for h in got] == [h.breakdown for h in want], (q, name)


@pytest.mark.parametrize("seed", range(6))
def test_recall_large_skipping_rows_by_bound_changes_nothing(seed):
    """Bigger stores, so block buffers fill and rows are skipped by their best-case score;
    also a negative recency weight (the bound uses recency 0 then)."""
    c = large_case(seed)
    rng = c["rng"]
    n = 3000
    big = large_case(100 + seed)
    while big["n"] < n:  # stack cases into one store of ≥ n rows
        more = large_case(int(rng.integers(1000, 9999)))
        if more["matrix"].shape[1] != big["matrix"].shape[1]:
            continue
        off = big["n"]
        for key in ("matrix", "has_vec", "updated", "weight", "access", "tokens", "bm25",
                    "affinity", "eligible", "scored", "user_fact"):
            big[key] = np.concatenate((big[key], more[key]))
        big["seq"] = np.concatenate((big["seq"], more["seq"] + off))
        nbr = np.where(more["nbr"] >= 0, more["nbr"] + off, -1)
        big["nbr"] = np.concatenate((big["nbr"], nbr))
        big["w"] = np.concatenate((big["w"], more["w"]))
        big["fixed"] = np.concatenate((big["fixed"], more["fixed"] + off))
        for key in ("prev", "nxt"):
            big[key] = np.concatenate((big[key], np.where(more[key] >= 0, more[key] + off, -1)))
        big["n"] = off + more["n"]
    for mode, w_block, w_rec in ((0, 256, 1.0), (2, 64, 1.0), (1, 2048, 1.0), (0, 256, -0.5)):
        ref, got = run_both(big, mode, 5, 1, 20, 2000, w_block, w_rec=w_rec)
        assert got[1].tolist() == ref[1].tolist()
        np.testing.assert_array_equal(got[2], ref[2])


def test_reinforcing_recalls_through_the_address_table_see_every_touch(monkeypatch):
    """Default recalls (each one touching its hits in place) through the address table return
    what the array path returns, call after call: the table points at the live columns."""
    import maclaw_fast.memory.recall as recall_module
    from maclaw_fast.memory.store import MemoryStore

    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(40)] + ["deploy", "script", "部署"]
    texts = [" ".join(rng.choice(words, int(rng.integers(3, 10)))) for _ in range(120)]
    queries = [" ".join(rng.choice(words, int(rng.integers(1, 4)))) for _ in range(40)]

    def run(table: bool) -> list:
        now = [1.7e9]
        out = []
        with monkeypatch.context() as patch:
            if not table:
                patch.setattr(recall_module, "view_table", lambda args, kinds: None)
            with MemoryStore.in_memory(embedder="hash", clock=lambda: now[0]) as store:
                for i, text in enumerate(texts):
                    now[0] += 600.0
                    store.save(f"{text} {i}", category="project_knowledge")
                for q in queries:
                    now[0] += 30.0
                    out.append([(h.entry.content, h.entry.access_count, h.breakdown)
                                for h in store.recall(q)])
        return out

    assert run(table=True) == run(table=False)
