"""The recall kernels (``kernels/recall.py``, ``recall_assemble.py``, the conversation walk of
``graph.py``) against plain-Python references on random inputs: fusion (BM25 and cosine
normalisations, SPEC R3), ranking with the graph walk (similarity edges and conversation links,
R5), the leading block (R4) and the assembly within the budget, and the single, fused and batch
entry points against each other."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from maclaw_fast.index.bm25 import Bm25Index
from maclaw_kernels.bm25 import bm25_query
from maclaw_kernels.graph import propagate_linked, propagate_reached
from maclaw_kernels.recall import (
    VIEWED_ARGS,
    base_scores,
    rank_scored,
    recall_batch,
    recall_one,
    recall_query,
    recall_single,
    recall_viewed,
    recency_epoch,
    refresh_recency,
    score_rows,
)
from maclaw_kernels.recall_assemble import pick_identity, select_hits
from maclaw_kernels.vectors import dot_scores, is_unit_vector
from maclaw_kernels.views import view_table
from tests.test_memory_kernels import (WORDS, assert_order, random_graph, recency_knobs,
                                       ref_propagate, ro, unit_vector, zipf_doc)


NO_DORMANT = np.zeros(0, np.bool_)  # recall_query's dormant mask with revival off


# ================================================================== references
def random_links(rng, n):
    """Conversation links: the rows in a random order cut into chains (prev/next, -1 = none)."""
    prev = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    order = rng.permutation(n)
    for a, b in zip(order[:-1], order[1:]):
        if rng.random() < 0.7:
            nxt[a], prev[b] = b, a
    return prev, nxt


def ref_links(seeds, values, prev, nxt, hops, factor, eligible):
    """SPEC R5: from each seed, ≤ hops steps each way, ``value·factor^h``; stop at a missing
    link, a seed or a row not eligible; the best value per row."""
    seed_set = {int(s) for s in seeds}
    best = [0.0] * len(prev)
    for s, v in zip(seeds, values):
        for links in (prev, nxt):
            node, val = int(s), float(v)
            for _ in range(hops):
                node = int(links[node])
                if node < 0 or node in seed_set or not eligible[node]:
                    break
                val *= factor
                best[node] = max(best[node], val)
    return best


def ref_fuse(bm25, cos, affinity, eligible, mode, cos_mode, bw, cw):
    hits = [bm25[i] for i in range(len(bm25)) if eligible[i] and bm25[i] > 0]
    hi, lo = (max(hits), min(hits)) if hits else (0.0, 0.0)
    cands = [float(cos[i]) for i in range(len(cos)) if eligible[i]]
    c_lo, c_hi = (min(cands), max(cands)) if cands else (0.0, 0.0)
    bn, rel = [], []
    for i in range(len(bm25)):
        if not eligible[i]:
            bn.append(0.0)
            rel.append(0.0)
            continue
        x = bm25[i]
        if x > 0 and mode == 1:
            x = x / hi
        elif x > 0 and mode == 2:
            x = 1.0 if hi == lo else (x - lo) / (hi - lo)
        c = float(cos[i])
        if cos_mode == 0:
            c = max(c, 0.0)
        else:
            c = (c - c_lo) / (c_hi - c_lo) if c_hi > c_lo else (1.0 if c > 0 else 0.0)
        bn.append(x)
        rel.append(bw * x + cw * c + affinity[i])
    return bn, rel


def ref_rank(base, rel, scored, access, seq, w_rel, n_seeds, nbr, w, hops, factor, prev, nxt,
             adj_hops, adj_factor, adj_mix):
    """(ranked rows, score per row, graph gain per row): rank, walk from the seeds, re-rank."""
    n = len(base)
    score = {i: base[i] + w_rel * rel[i] for i in range(n) if scored[i]}
    order = sorted(score, key=lambda i: (-score[i], -access[i], seq[i]))
    graph = [0.0] * n
    seeds = np.array(order[:n_seeds], np.int64)
    if (hops > 0 or adj_hops > 0) and seeds.size:
        values = np.array([rel[s] for s in seeds])
        gained = ref_propagate(seeds, values, nbr, w, max(hops, 0), factor, scored)
        walked = ref_links(seeds, values, prev, nxt, adj_hops, adj_factor, scored)
        for i in score:
            g = max(rel[i], gained[i])
            if walked[i] > 0:  # mix 0: the larger value; else own + mix × the walk's
                g = max(g, walked[i] if adj_mix <= 0 else rel[i] + adj_mix * walked[i])
            if g > rel[i]:
                graph[i] = g - rel[i]
                score[i] = base[i] + w_rel * g
        order = sorted(score, key=lambda i: (-score[i], -access[i], seq[i]))
    return order, score, graph


def ref_pick(fixed_rows, eligible, access, updated_at, seq, max_identity):
    rows = [int(r) for r in fixed_rows if eligible[r]]
    rows.sort(key=lambda r: (-access[r], -updated_at[r], seq[r]))
    return rows[:max(max_identity, 0)]


def ref_select(fixed, ranked, ranked_rel, user_fact, max_uf, window, tokens, max_entries,
               budget):
    """(rows, kinds): the fixed rows, the leading user facts, the rest; 2 / 3 / 0."""
    out, kinds, used = [], [], 0
    for r in fixed:
        out.append(int(r))
        kinds.append(2)
        used += tokens[r]
    cands = [(ranked_rel[j], int(ranked[j])) for j in range(min(window, len(ranked)))
             if ranked[j] >= 0 and user_fact[ranked[j]] and ranked_rel[j] > 0]
    lead = [r for _, r in sorted(cands, key=lambda c: -c[0])[:max(max_uf, 0)]]  # stable
    rest = [int(r) for r in ranked if r >= 0 and r not in fixed and r not in lead]
    for kind, group in ((3, lead), (0, rest)):
        for r in group:
            if len(out) >= max_entries:
                break
            if used + tokens[r] > budget:
                continue
            out.append(r)
            kinds.append(kind)
            used += tokens[r]
    return out, kinds


# ================================================================== the pieces
@pytest.mark.parametrize("seed", range(40))
def test_propagate_linked_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    nbr, w = random_graph(rng, n)
    prev, nxt = random_links(rng, n)
    eligible = rng.random(n) < 0.8
    seeds = rng.choice(n, size=int(rng.integers(0, min(n, 6) + 1)), replace=False)
    seeds = seeds.astype(np.int64)
    vals = rng.uniform(0, 4, seeds.size)
    for hops, adj_hops, factor in ((0, 2, 0.8), (1, 1, 0.5), (2, 3, 0.9), (1, 0, 0.8)):
        args = (seeds, vals, nbr, w, hops, 0.5, prev, nxt, adj_hops, factor, eligible)
        if seed % 5 == 0:
            args = (*ro(seeds, vals, nbr, w), hops, 0.5, *ro(prev, nxt), adj_hops, factor,
                    ro(eligible))
        best, linked, reached = propagate_linked(*args)
        sim = ref_propagate(seeds, vals, nbr, w, hops, 0.5, eligible)
        walk = ref_links(seeds, vals, prev, nxt, adj_hops, factor, eligible)
        np.testing.assert_allclose(best, sim, rtol=1e-12, atol=0, err_msg=f"hops {hops}")
        np.testing.assert_allclose(linked, walk, rtol=1e-12, atol=0, err_msg=f"hops {hops}")
        either = np.flatnonzero((np.asarray(sim) > 0) | (np.asarray(walk) > 0)).tolist()
        assert sorted(reached.tolist()) == either
        assert len(set(reached.tolist())) == reached.size  # each row reported once
        # the similarity half is exactly the similarity propagation
        assert best.tolist() == propagate_reached(seeds, vals, nbr, w, hops, 0.5,
                                                  eligible)[0].tolist()


@pytest.mark.parametrize("seed", range(30))
def test_pick_identity_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    access = rng.integers(1, 4, n).astype(np.int64)
    updated = rng.choice([1.0e9, 1.1e9, 1.2e9], n)  # ties: then store order
    seq = rng.permutation(n).astype(np.int64)
    eligible = rng.random(n) < 0.8
    fixed = rng.permutation(n)[: int(rng.integers(0, n + 1))].astype(np.int64)
    for max_identity in (0, 1, 3, 50):
        got = pick_identity(fixed, eligible, access, updated, seq, max_identity)
        assert got.tolist() == ref_pick(fixed, eligible, access, updated, seq, max_identity)


@pytest.mark.parametrize("seed", range(30))
def test_select_hits_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    tokens = rng.choice([0, 5, 100, 700, 2100], n).astype(np.int64)
    perm = rng.permutation(n)
    n_fixed = int(rng.integers(0, 4))
    fixed = perm[:n_fixed].astype(np.int64)
    ranked = rng.permutation(n).astype(np.int64)  # the fixed rows are ranked too
    ranked[rng.random(ranked.size) < 0.1] = -1  # padding rows are skipped
    ranked_rel = rng.choice([0.0, 0.3, 0.6, 0.6, 1.2], ranked.size)
    user_fact = rng.random(n) < 0.3
    user_fact[fixed] = False
    for max_entries, budget, max_uf, window in ((20, 2000, 3, 20), (3, 2000, 1, 3),
                                                (15, 1500, 3, 15), (2, 10, 0, 2), (0, 0, 3, 0),
                                                (8, 5000, 5, 30)):
        out = np.full(n_fixed + max_entries + 1, -7, np.int64)
        kind = np.full(n_fixed + max_entries + 1, -7.0)
        args = (fixed, ranked, ranked_rel, user_fact)
        if seed % 4 == 0:
            args = ro(*args)
        m = select_hits(*args, max_uf, window, tokens, max_entries, budget, out, kind)
        rows, kinds = ref_select(fixed.tolist(), ranked, ranked_rel, user_fact, max_uf, window,
                                 tokens, max_entries, budget)
        assert out[:m].tolist() == rows and kind[:m].tolist() == kinds


@pytest.mark.parametrize("seed", range(10))
def test_base_scores_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 100))
    now = 1.7e9
    updated = now - rng.uniform(-3600, 1e7, n)  # some in the future: age 0
    weight = rng.choice([4.0, 3.0, 2.0, 1.5, 1.0], n)
    access = rng.integers(0, 100, n).astype(np.int64)  # ≥ 64: past the kernel's log table
    rec, imp, base = np.empty(n), np.empty(n), np.empty(n)
    args = (updated, weight, access) if seed % 3 else ro(updated, weight, access)
    knobs = recency_knobs(n)
    base_scores(*args, now, *knobs, rec, imp, base)
    for i in range(n):
        r = math.exp(-0.005 * max(now - updated[i], 0.0) / 3600)
        m = weight[i] + math.log(1 + access[i])
        assert rec[i] == pytest.approx(r, rel=1e-12)
        assert imp[i] == pytest.approx(m, rel=1e-12)
        assert base[i] == pytest.approx(r + 0.7 * m, rel=1e-12)
    if seed == 0:  # SPEC §15: recency after 24 h
        r = np.empty(1)
        base_scores(np.array([now - 86400.0]), np.array([2.0]), np.array([1]), now,
                    *recency_knobs(1, w_imp=1.0), r, np.empty(1), np.empty(1))
        assert round(float(r[0]), 4) == 0.8869


def ref_recency(updated, now, decay):
    return np.array([math.exp(-decay * max(now - u, 0.0) / 3600) for u in updated])


@pytest.mark.parametrize("decay", [0.005, 0.0, 1.0, -0.01])
def test_refresh_recency_matches_exp_and_heals_stale_rows(decay):
    """The memo gives exp(-decay·age) (age 0 in the future) to 1e-12, recomputes exactly the
    rows whose updated_at changed, starts over in a new epoch or with a new decay, and gives the
    same bits as a fresh memo whatever happened before."""
    rng = np.random.default_rng(7)
    n = 300
    now = 1.8e9
    updated = now - rng.uniform(-7200, 60 * 86400, n)
    memo = recency_knobs(n, decay)[3:6]

    def recency(upd, t, m):
        return np.array([1.0 if upd[i] >= t else
                         refresh_recency(upd, t, decay, *m) * m[2][i] for i in range(n)])

    np.testing.assert_allclose(recency(updated, now, memo), ref_recency(updated, now, decay),
                               rtol=1e-12, atol=1e-300)
    assert memo[1].tolist() == updated.tolist()
    touched = rng.choice(n, 20, replace=False)
    factors = memo[2].copy()
    updated[touched] = now  # what reinforcement does
    got = recency(updated, now + 60, memo)
    np.testing.assert_allclose(got, ref_recency(updated, now + 60, decay), rtol=1e-12,
                               atol=1e-300)
    untouched = np.setdiff1d(np.arange(n), touched)
    assert memo[2][untouched].tolist() == factors[untouched].tolist()
    fresh = recency_knobs(n, decay)[3:6]
    assert got.tolist() == recency(updated, now + 60, fresh).tolist()
    later = now + 400 * 86400  # past the epoch's span for every decay here but 0
    key = memo[0].copy()
    np.testing.assert_allclose(recency(updated, later, memo), ref_recency(updated, later, decay),
                               rtol=1e-12, atol=1e-300)
    assert decay == 0.0 or memo[0][0] != key[0]
    assert memo[0][0] == recency_epoch(later, decay) <= later


def test_is_unit_vector():
    rng = np.random.default_rng(3)
    for d in (1, 8, 384):
        v = rng.normal(size=d).astype(np.float32)
        v /= np.linalg.norm(v)
        assert is_unit_vector(v, 1e-6)
        assert not is_unit_vector(v * np.float32(1.01), 1e-6)
        assert not is_unit_vector(np.zeros(d, np.float32), 1e-6)
        for bad in (np.nan, np.inf):
            w = v.copy()
            w[0] = bad
            assert not is_unit_vector(w, 1e-6)


# ================================================================== scoring and ranking
def recall_inputs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 150))
    bm25 = np.where(rng.random(n) < 0.4, rng.choice([0.5, 1.0, 2.0, 3.3], n) * (
        1 + (seed % 2) * rng.random(n)), 0.0)
    cos = np.where(rng.random(n) < 0.5, rng.choice([-0.25, 0.25, 0.5, 0.75], n), 0.0)
    affinity = np.where(rng.random(n) < 0.2, 3.0, 0.0)
    eligible = rng.random(n) < 0.85
    cat = rng.choice(3, n, p=[0.08, 0.12, 0.80])  # 0 = self identity, 1 = user fact, 2 = rest
    scored = eligible & (rng.random(n) < 0.95)  # the store ranks every candidate
    base = rng.choice([3.0, 3.5, 4.25, 5.0], n) + (seed % 3 == 0) * rng.random(n)
    access = rng.integers(1, 4, n).astype(np.int64)
    seq = rng.permutation(n).astype(np.int64)
    updated = rng.choice([1.7e9, 1.75e9, 1.8e9], n)
    tokens = rng.choice([0, 10, 50, 200, 800, 2500], n).astype(np.int64)
    fixed = np.flatnonzero(cat == 0)
    fixed = fixed[np.argsort(seq[fixed])].astype(np.int64)
    nbr, w = random_graph(rng, n)
    prev, nxt = random_links(rng, n)
    return {"rng": rng, "n": n, "bm25": bm25, "cos": cos, "affinity": affinity,
            "eligible": eligible, "scored": scored, "base": base, "access": access, "seq": seq,
            "updated": updated, "tokens": tokens, "fixed": fixed, "user_fact": cat == 1,
            "nbr": nbr, "w": w, "prev": prev, "nxt": nxt}


@pytest.mark.parametrize("seed", range(30))
def test_score_rows_matches_reference(seed):
    """Fusion over the eligible rows, scores over the scored ones, graph zeroed, and the scored
    scores' range; every BM25 and cosine normalisation."""
    c = recall_inputs(seed)
    n = c["n"]
    for mode in (0, 1, 2):
        for cos_mode in (0, 1):
            out = [np.full(n, np.nan) for _ in range(4)]
            args = (c["base"], c["bm25"], c["cos"], c["affinity"], c["eligible"], c["scored"])
            if seed % 5 == 0:
                args = ro(*args)
            lo, hi, count = score_rows(*args, mode, cos_mode, 0.4, 0.6, 1.5, *out)
            rb, rr = ref_fuse(c["bm25"], c["cos"], c["affinity"], c["eligible"], mode, cos_mode,
                              0.4, 0.6)
            np.testing.assert_allclose(out[0], rb, rtol=1e-12, atol=0)
            np.testing.assert_allclose(out[1], rr, rtol=1e-12, atol=1e-15)
            want = [c["base"][i] + 1.5 * rr[i] if c["scored"][i] else -np.inf for i in range(n)]
            np.testing.assert_allclose(out[2], want, rtol=1e-12, atol=0)
            assert not out[3].any()
            scored = [want[i] for i in range(n) if c["scored"][i]]
            assert count == len(scored)
            if scored:
                assert (lo, hi) == (min(scored), max(scored))


def test_score_rows_spec_minmax_examples():
    """SPEC §15: minmax {a:1, b:3, c:2} → {0, 1, 0.5}; minmax {a:2} → {1.0}. SPEC R3: cosines
    {0.2, 0.6, 0.4} min-max → {0, 1, 0.5}; a lone candidate's positive cosine → 1."""
    for vals, want in (([1.0, 3.0, 2.0], [0.0, 1.0, 0.5]), ([2.0], [1.0])):
        n = len(vals)
        out = [np.empty(n) for _ in range(4)]
        yes = np.ones(n, np.bool_)
        score_rows(np.zeros(n), np.array(vals), np.zeros(n), np.zeros(n), yes, yes, 2, 0, 1.0,
                   0.0, 1.0, *out)
        assert out[0].tolist() == want
        out = [np.empty(n) for _ in range(4)]
        cos = np.array(vals, np.float64) / 5.0
        score_rows(np.zeros(n), np.zeros(n), cos, np.zeros(n), yes, yes, 0, 1, 0.0, 1.0, 1.0,
                   *out)
        np.testing.assert_allclose(out[1], want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(30))
def test_rank_scored_matches_reference(seed):
    c = recall_inputs(seed)
    n = c["n"]
    _, rel = ref_fuse(c["bm25"], c["cos"], c["affinity"], c["eligible"], 1, 1, 0.4, 0.6)
    rel = np.array(rel)
    for n_seeds, hops, adj_hops, k, mix in ((5, 1, 2, 20, 0.0), (5, 1, 2, 20, 0.4),
                                            (1, 2, 0, 3, 0.4), (3, 0, 1, n + 2, 0.4),
                                            (3, 0, 2, 10, 0.0), (3, 0, 0, 10, 0.0)):
        score_out, graph_out = np.full(n, np.nan), np.full(n, np.nan)
        args = (c["base"], rel, c["scored"], c["access"], c["seq"])
        if seed % 5 == 0:
            args = ro(*args)
        got = rank_scored(*args, 1.0, n_seeds, c["nbr"], c["w"], hops, 0.5, c["prev"], c["nxt"],
                          adj_hops, 0.8, mix, k, score_out, graph_out)
        order, score, graph = ref_rank(c["base"], rel, c["scored"], c["access"], c["seq"], 1.0,
                                       n_seeds, c["nbr"], c["w"], hops, 0.5, c["prev"], c["nxt"],
                                       adj_hops, 0.8, mix)
        ctx = f"seeds {n_seeds} hops {hops} adjacency {adj_hops} mix {mix}"
        assert_order(got, order[:k], score.__getitem__, ctx)
        for i in range(n):
            if c["scored"][i]:
                assert score_out[i] == pytest.approx(score[i], rel=1e-12), ctx
                assert graph_out[i] == pytest.approx(graph[i], abs=1e-12), ctx
            else:
                assert score_out[i] == -np.inf and graph_out[i] == 0.0


# ================================================================== one query end to end
PLANS = (  # norm, cos_mode, seeds, hops, adjacency hops, max_identity, max_user_facts, lead
    # window, entries, budget
    (0, 0, 5, 1, 0, 50, 50, 20, 20, 2000), (1, 1, 3, 2, 2, 3, 3, 5, 5, 300),
    (2, 1, 5, 1, 1, 1, 0, 5, 15, 1500), (0, 0, 1, 0, 0, 0, 3, 5, 1, 50),
    (1, 1, 5, 1, 2, 3, 3, 5, 20, 2000), (1, 1, 5, 1, 2, 3, 2, 40, 20, 2000))


def plan_args(c, plan, readonly=False):
    """The kernels' plan arguments (KERNEL_ARGS order) for a ``PLANS`` row."""
    mode, cos_mode, n_seeds, hops, adj_hops, max_id, max_uf, window, max_entries, budget = plan
    arrays = (c["access"], c["seq"], c["tokens"], c["fixed"], c["user_fact"])
    nbr, w, prev, nxt = c["nbr"], c["w"], c["prev"], c["nxt"]
    if readonly:
        arrays = ro(*arrays)
        nbr, w, prev, nxt = ro(nbr, w, prev, nxt)
    return (*arrays, mode, cos_mode, 0.4, 0.6, 1.0, n_seeds, nbr, w, hops, 0.5, prev, nxt,
            adj_hops, 0.8, plan_mix(plan), max_id, max_uf, window, max_entries, budget)


def plan_mix(plan):
    """The plan's ``adj_mix``: both ways of combining a conversation link's value run with
    adjacency on (plans 1, 2 and 4 add a share, plan 5 keeps the larger)."""
    return 0.4 if plan[7] == 5 else 0.0


def width_of(c, plan):
    return plan[8] + min(plan[5], c["fixed"].size)


def ref_recall_one(c, q, plan, base=None):
    mode, cos_mode, n_seeds, hops, adj_hops, max_id, max_uf, window, max_entries, budget = plan
    base = c["base"] if base is None else base
    bn, rel = ref_fuse(q["bm25"], q["cos"], q["affinity"], q["eligible"], mode, cos_mode, 0.4,
                       0.6)
    order, _score, graph = ref_rank(base, rel, q["scored"], c["access"], c["seq"], 1.0, n_seeds,
                                    c["nbr"], c["w"], hops, 0.5, c["prev"], c["nxt"], adj_hops,
                                    0.8, plan_mix(plan))
    fixed = ref_pick(c["fixed"], q["eligible"], c["access"], c["updated"], c["seq"], max_id)
    ranked_rel = [rel[r] + graph[r] for r in order]
    rows, kinds = ref_select(fixed, order, ranked_rel, c["user_fact"], max_uf, window,
                             c["tokens"], max_entries, budget)
    full = {i: base[i] + 1.0 * (rel[i] + graph[i]) for i in range(len(rel))}
    return rows, kinds, full, bn, rel, graph


def check_recall_rows(got_rows, parts, ref, ctx):
    rows, kinds, full, bn, rel, graph = ref
    assert_order(got_rows, rows, lambda i: full[i], ctx)
    score, bm, rl, gr, reason = parts
    kind_of = dict(zip(rows, kinds))
    for j, r in enumerate(got_rows.tolist()):
        assert score[j] == pytest.approx(full[r], rel=1e-12), ctx
        assert bm[j] == pytest.approx(bn[r], rel=1e-12) and rl[j] == pytest.approx(rel[r])
        assert gr[j] == pytest.approx(graph[r], abs=1e-12), ctx
        want = kind_of.get(r, 0) or (1 if graph[r] > 0 else 0)
        assert reason[j] == want, ctx


def query_case(c, rng):
    n = c["n"]
    bm25 = np.where(rng.random(n) < 0.4, rng.uniform(0.1, 5, n), 0.0)
    cos = np.where(rng.random(n) < 0.5, rng.choice([-0.25, 0.25, 0.5, 0.75], n), 0.0)
    affinity = np.where(rng.random(n) < 0.2, 3.0, 0.0)
    eligible = c["eligible"] & (rng.random(n) < 0.9)
    scored = eligible & c["scored"]
    return {"bm25": bm25, "cos": cos, "affinity": affinity, "eligible": eligible,
            "scored": scored}


@pytest.mark.parametrize("seed", range(30))
def test_recall_one_and_batch_match_reference(seed):
    c = recall_inputs(seed)
    rng = c["rng"]
    qs = [query_case(c, rng) for _ in range(int(rng.integers(1, 5)))]
    for plan in PLANS:
        results = []
        width = width_of(c, plan)
        for qi, q in enumerate(qs):
            rows = np.full(width, -1, np.int64)
            parts = [np.full(width, np.nan) for _ in range(5)]
            arrays = [c["base"], q["bm25"], q["cos"], q["affinity"], q["eligible"], q["scored"],
                      c["updated"]]
            readonly = seed % 6 == 0
            if readonly:
                arrays = ro(*arrays)
            m = recall_one(*arrays, *plan_args(c, plan, readonly), np.full((4, c["n"]), np.nan),
                           rows, *parts)
            got, gparts = rows[:m], [p[:m] for p in parts]
            check_recall_rows(got, gparts, ref_recall_one(c, q, plan),
                              f"query {qi} plan {plan}")
            results.append((got, gparts))
        nq = len(qs)
        rows = np.full((nq, width), -1, np.int64)
        parts = [np.zeros((nq, width)) for _ in range(5)]
        counts = np.zeros(nq, np.int64)
        stack = [np.stack([q[k] for q in qs]) for k in ("bm25", "cos", "affinity", "eligible",
                                                           "scored")]
        # every query its own mask row, visited in reverse to check the indirection
        scope_of = np.arange(nq)[::-1].copy()
        stack[2:] = [m[::-1].copy() for m in stack[2:]]
        recall_batch(c["base"], *stack, scope_of, c["updated"], *plan_args(c, plan), rows,
                     *parts, counts, np.zeros((nq, 0), np.bool_), np.ones(nq), True, True, 0.0, 0.3,
                     np.zeros((0, 0)))
        for qi, (got, gparts) in enumerate(results):
            assert rows[qi, :counts[qi]].tolist() == got.tolist()
            for p, gp in zip(parts, gparts):
                assert p[qi, :counts[qi]].tolist() == gp.tolist()


@pytest.mark.parametrize("seed", range(12))
def test_recall_single_is_base_scores_then_recall_one(seed):
    """The single-query entry point computes recency/importance itself and returns the same rows
    and parts as base_scores followed by recall_one, plus recency, importance, cos⁺, affinity."""
    c = recall_inputs(seed)
    rng = c["rng"]
    n = c["n"]
    q = query_case(c, rng)
    q["cos"] = q["cos"].astype(np.float32)
    now = 1.8e9
    updated = now - rng.uniform(-3600, 90 * 86400, n)  # a few in the future: recency 1
    c["updated"] = updated
    weight = rng.uniform(0.5, 3, n)
    rec, imp, base = np.empty(n), np.empty(n), np.empty(n)
    base_scores(updated, weight, c["access"], now, *recency_knobs(n), rec, imp, base)
    plan = PLANS[int(rng.integers(len(PLANS)))]
    masks = (q["bm25"], q["cos"], q["affinity"], q["eligible"], q["scored"])
    width = width_of(c, plan)
    rows_ref = np.full(width, -1, np.int64)
    parts_ref = [np.zeros(width) for _ in range(5)]
    m_ref = recall_one(base, *masks, updated, *plan_args(c, plan), np.empty((4, n)), rows_ref,
                       *parts_ref)
    rows = np.full(width, -1, np.int64)
    parts = np.zeros((9, width))
    m = recall_single(updated, weight, now, *recency_knobs(n), *masks, *plan_args(c, plan),
                      np.empty((7, n)), rows, parts)
    assert m == m_ref and rows[:m].tolist() == rows_ref[:m].tolist()
    for j in range(4):
        assert parts[j, :m].tolist() == parts_ref[j][:m].tolist()
    sel = rows[:m]
    assert parts[4, :m].tolist() == rec[sel].tolist()
    assert parts[5, :m].tolist() == imp[sel].tolist()
    assert parts[6, :m].tolist() == np.maximum(q["cos"][sel].astype(np.float64), 0).tolist()
    assert parts[7, :m].tolist() == q["affinity"][sel].tolist()
    assert parts[8, :m].tolist() == parts_ref[4][:m].tolist()
    check_recall_rows(sel, [p[:m] for p in parts_ref], ref_recall_one(c, q, plan, base),
                      f"plan {plan}")


@pytest.mark.parametrize("seed", range(12))
def test_recall_query_is_bm25_and_dot_then_recall_single(seed):
    """The fused single-query kernel (BM25, cosines, base scores and fusion in one call) returns
    the rows, parts and cosines of the three separate kernels, bit for bit, given term ids or
    the query as ASCII text it splits itself, and given its arrays or an address table of them
    (``recall_viewed``): with and without a query vector, rows without vectors, every BM25 and
    cosine normalisation."""
    c = recall_inputs(seed)
    rng, n = c["rng"], c["n"]
    q = query_case(c, rng)
    docs_rng = random.Random(seed)
    index = Bm25Index(tantivy_index=False)
    index.add_many(list(range(n)), [zipf_doc(docs_rng, docs_rng.randint(0, 12)) for _ in range(n)])
    d = int(rng.choice([3, 8, 37, 384]))
    matrix = rng.standard_normal((n + 3, d)).astype(np.float32)  # capacity beyond n, as a store's
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    has_vec = rng.random(n + 3) < 0.9
    vector = matrix[int(rng.integers(n))].copy() if n and seed % 2 else unit_vector(rng, d)
    now = 1.8e9
    updated = now - rng.uniform(-3600, 90 * 86400, n)
    weight = rng.uniform(0.5, 3, n)
    for plan in PLANS:
        width = width_of(c, plan)
        plan_tail = plan_args(c, plan)
        for qvec in (vector, np.zeros(0, np.float32)):
            terms = [docs_rng.choice(WORDS[:60]) for _ in range(docs_rng.randint(0, 4))]
            args = index.query_args(terms)
            bm25, cos = np.zeros(n), np.zeros(n, np.float32)
            bm25_query(*args, bm25)
            if qvec.size:
                dot_scores(matrix, n, has_vec, qvec, cos)
            rows_ref, parts_ref = np.full(width, -1, np.int64), np.zeros((9, width))
            m_ref = recall_single(updated, weight, now, *recency_knobs(n), bm25, cos,
                                  q["affinity"], q["eligible"], q["scored"], *plan_tail,
                                  np.empty((7, n)), rows_ref, parts_ref)
            rows, parts = np.full(width, -1, np.int64), np.zeros((9, width))
            bm25_out, cos_out = np.full(n + 2, np.nan), np.full(n + 2, np.nan, np.float32)
            text, term_ids, index_args = index.fused_query_args("", terms)
            rest = (*index_args, matrix, has_vec, updated, weight, *recency_knobs(n),
                    q["affinity"], q["eligible"], q["scored"], *plan_tail, bm25_out, cos_out,
                    np.empty((7, n)), rows, parts, NO_DORMANT, 0.3, 1.0, 0.0, np.zeros(1))
            m = recall_query(text, term_ids, qvec, True, now, *rest)
            ctx = f"plan {plan}, vector {qvec.size}"
            # cosines of the eligible rows only (no dormant ones here), 0 for the rest
            cos_eligible = np.where(q["eligible"][:n], cos, np.float32(0.0)).tolist()
            assert m == m_ref and rows[:m].tolist() == rows_ref[:m].tolist(), ctx
            assert parts[:, :m].tolist() == parts_ref[:, :m].tolist(), ctx
            assert cos_out[:n].tolist() == cos_eligible and bm25_out[:n].tolist() == bm25.tolist()
            # the same arguments read through an address table
            views = view_table(rest, VIEWED_ARGS)
            assert views is not None
            rows[:], parts[:], cos_out[:], bm25_out[:] = -1, 0.0, np.nan, np.nan
            assert recall_viewed(text, term_ids, qvec, True, now, *views) == m, ctx
            assert rows[:m].tolist() == rows_ref[:m].tolist(), ctx
            assert parts[:, :m].tolist() == parts_ref[:, :m].tolist(), ctx
            assert cos_out[:n].tolist() == cos_eligible and bm25_out[:n].tolist() == bm25.tolist()
            # the same query as text, its words split and looked up inside the kernel
            text = ". ".join(t.upper() if len(t) % 2 else t for t in terms)
            rows_t, parts_t = np.full(width, -1, np.int64), np.zeros((9, width))

            def by_text():
                text_t, no_ids, index_args = index.fused_query_args(text)
                return recall_query(text_t, no_ids, qvec, True, now, *index_args, matrix,
                                    has_vec, updated, weight, *recency_knobs(n), q["affinity"],
                                    q["eligible"], q["scored"], *plan_tail, np.zeros(n),
                                    np.zeros(n, np.float32), np.empty((7, n)), rows_t, parts_t,
                                    NO_DORMANT, 0.3, 1.0, 0.0, np.zeros(1))

            if any(w not in index.vocab.term_words() for w in map(str.lower, terms)):
                # a word the kernel's table lacks: reported (-2), then learned from the query
                assert by_text() == -2, ctx
                index.fused_query_args(text, terms)
            m_t = by_text()
            assert m_t == m and rows_t[:m].tolist() == rows[:m].tolist(), ctx
            assert parts_t[:, :m].tolist() == parts[:, :m].tolist(), ctx
