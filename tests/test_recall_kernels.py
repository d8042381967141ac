"""The recall kernels (``kernels/recall.py``, ``recall_assemble.py``, the conversation walk of
``graph.py``) against plain-Python references on random inputs: the memory-stream base score,
fusion (BM25 and cosine normalisations), ranking with the graph walk (similarity edges and
conversation links), the leading block and the assembly within the budget, revival inside the
ranking, and ``recall_block`` (one query or many, scores given or computed)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from maclaw_kernels import entry
from maclaw_kernels.graph import propagate_linked, propagate_reached
from maclaw_kernels.recall import (
    N_PARTS,
    REASON_REVIVED,
    Knobs,
    Rows,
    Scales,
    Scope,
    base_scores,
    fuse,
    rank_one,
    ranked_rows,
    recency_epoch,
    refresh_recency,
    walk_leaves,
)
from maclaw_kernels.recall_assemble import kth_relevance, lead_facts, pick_identity, select_hits
from tests.test_memory_kernels import assert_order, random_graph, ref_propagate

# kernels with no CPython entry point of their own
propagate_linked, fuse, ranked_rows, kth_relevance, lead_facts, pick_identity, select_hits = map(
    entry, (propagate_linked, fuse, ranked_rows, kth_relevance, lead_facts, pick_identity,
            select_hits))


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
    """design R5: from each seed, ≤ hops steps each way, ``value·factor^h``; stop at a missing
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


def ref_fuse(bm25, cos, affinity, eligible, mode, cos_mode, bw, cw, floor=0.0, spread=0.6):
    hits = [bm25[i] for i in range(len(bm25)) if eligible[i] and bm25[i] > 0]
    hi, lo = (max(hits), min(hits)) if hits else (0.0, 0.0)
    cands = [float(cos[i]) for i in range(len(cos)) if eligible[i]]
    c_lo, c_hi = (min(cands), max(cands)) if cands else (0.0, 0.0)
    least = spread * (1.0 - floor)  # modes 2-4: (lo, hi) from the floor or the candidates
    ends = {2: (floor, 1.0), 3: (c_lo, max(c_hi, c_lo + least)),
            4: (floor, max(c_hi, floor + least))}
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
        elif cos_mode in ends:
            e_lo, e_hi = ends[cos_mode]
            c = max((c - e_lo) / (e_hi - e_lo), 0.0) if e_hi > e_lo else 0.0
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


def ref_lead(user_fact, scored, rel, graph, seq, bar, max_uf):
    """The leading user facts: scored facts with relevance > 0 and ≥ bar, most relevant first
    (ties: lower seq), at most max_uf."""
    cands = [r for r in range(len(user_fact)) if user_fact[r] and scored[r]
             and rel[r] + graph[r] > 0 and rel[r] + graph[r] >= bar]
    return sorted(cands, key=lambda r: (-(rel[r] + graph[r]), seq[r]))[:max(max_uf, 0)]


def ref_select(fixed, lead, ranked, tokens, max_entries, budget):
    """(rows, kinds): the fixed rows, the leading user facts, the rest; 2 / 3 / 0."""
    out, kinds, used = [], [], 0
    for r in fixed:
        out.append(int(r))
        kinds.append(2)
        used += tokens[r]
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
@pytest.mark.parametrize("seed", range(8))
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


@pytest.mark.parametrize("seed", range(6))
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


@pytest.mark.parametrize("seed", range(8))
def test_kth_relevance_matches_a_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    rel = rng.choice([0.0, 0.2, 0.5, 0.5, 0.9], n)
    scored = rng.random(n) < 0.7
    for k in (0, 1, 3, 5, 60):
        best = sorted(rel[scored].tolist(), reverse=True)[:k]
        assert kth_relevance(rel, scored, k) == (best[-1] if best and k > 0 else np.inf)


@pytest.mark.parametrize("seed", range(8))
def test_lead_facts_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    user_fact = rng.random(n) < 0.4
    scored = rng.random(n) < 0.8
    rel = rng.choice([0.0, 0.3, 0.6, 0.6, 1.2], n)  # ties on purpose
    graph = np.where(rng.random(n) < 0.2, 0.3, 0.0)
    seq = rng.permutation(n).astype(np.int64)
    for bar, max_uf in ((0.0, 3), (0.6, 3), (0.9, 1), (np.inf, 3), (0.3, 0), (-1.0, 60)):
        got = lead_facts(np.flatnonzero(user_fact), scored, rel, graph, seq, bar, max_uf)
        assert got.tolist() == ref_lead(user_fact, scored, rel, graph, seq, bar, max_uf)


@pytest.mark.parametrize("seed", range(8))
def test_select_hits_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    tokens = rng.choice([0, 5, 100, 700, 2100], n).astype(np.int64)
    perm = rng.permutation(n)
    n_fixed = int(rng.integers(0, 4))
    fixed = perm[:n_fixed].astype(np.int64)
    lead = perm[n_fixed:n_fixed + int(rng.integers(0, 4))].astype(np.int64)
    ranked = rng.permutation(n).astype(np.int64)  # the fixed and leading rows are ranked too
    ranked[rng.random(ranked.size) < 0.1] = -1  # padding rows are skipped
    for max_entries, budget in ((20, 2000), (3, 2000), (15, 1500), (2, 10), (0, 0), (8, 5000)):
        out = np.full(n_fixed + max_entries + 1, -7, np.int64)
        kind = np.full(n_fixed + max_entries + 1, -7.0)
        m = select_hits(fixed, lead, ranked, tokens, max_entries, budget, out, kind)
        rows, kinds = ref_select(fixed.tolist(), lead.tolist(), ranked, tokens, max_entries,
                                 budget)
        assert out[:m].tolist() == rows and kind[:m].tolist() == kinds


# ================================================================== records
def make_rows(updated, weight, access, seq, tokens, nbr, w, prev, nxt):
    n = len(updated)
    return Rows(np.asarray(updated, np.float64), np.asarray(weight, np.float64),
                np.asarray(access, np.int64), np.asarray(seq, np.int64),
                np.asarray(tokens, np.int64), nbr, w, prev, nxt, np.full(2, np.nan),
                np.full(n, np.nan), np.zeros(n), np.log1p(np.arange(64, dtype=np.float64)),
                np.asarray(updated, np.float64))


def make_knobs(plan=None, *, decay=0.005, w_rec=1.0, w_imp=0.7, bar=0.3, needs_term=True,
               time_weight=0.0, time_scale=3 * 86400.0):
    mode, cos_mode, n_seeds, hops, adj_hops, max_id, max_uf, window, max_entries, budget = (
        plan or (1, 1, 5, 1, 2, 3, 3, 5, 20, 2000))
    return Knobs(*map(float, (decay, w_rec, w_imp, 1.0, mode, cos_mode, n_seeds, hops, 0.5,
                              adj_hops, 0.8, plan_mix(plan), max_id, max_uf, window,
                              max_entries, budget, bar, needs_term, time_weight, time_scale)))


def make_scales(floor=0.0, spread=0.6, bm25_w=0.4, cos_w=0.6):
    return Scales(float(floor), float(spread), float(bm25_w), float(cos_w))


def plan_mix(plan):
    """Both ways of combining a conversation link's value: plans whose lead window is 5 add a
    share, the others keep the larger."""
    return 0.4 if plan is None or plan[7] == 5 else 0.0


# ================================================================== base scores
def ref_recency(updated, now, decay):
    return np.array([math.exp(-decay * max(now - u, 0.0) / 3600) for u in updated])


@pytest.mark.parametrize("seed", range(4))
def test_base_scores_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    now = 1.7e9
    updated = now - rng.uniform(-3600, 1e7, n)  # some in the future: age 0
    weight = rng.choice([4.0, 3.0, 2.0, 1.5, 1.0], n)
    access = rng.integers(0, 100, n)  # ≥ 64: past the log table
    rows = make_rows(updated, weight, access, np.arange(n), np.zeros(n), None, None, None,
                     None)
    out = np.full((3, n), np.nan)
    base_scores(rows, make_knobs(), now, out)
    for i in range(n):
        r = math.exp(-0.005 * max(now - updated[i], 0.0) / 3600)
        m = weight[i] + math.log(1 + access[i])
        assert out[0, i] == pytest.approx(r, rel=1e-12)
        assert out[1, i] == pytest.approx(m, rel=1e-12)
        assert out[2, i] == pytest.approx(r + 0.7 * m, rel=1e-12)
    one = make_rows([now - 86400.0], [2.0], [1], [0], [0], None, None, None, None)
    base_scores(one, make_knobs(w_imp=1.0), now, out[:, :1])
    assert round(float(out[0, 0]), 4) == 0.8869  # recency after 24 h


@pytest.mark.parametrize("decay", [0.005, 0.0, -0.01])
def test_refresh_recency_matches_exp_and_heals_stale_rows(decay):
    """The memo gives exp(-decay·age) (age 0 in the future) to 1e-12, recomputes exactly the
    rows whose updated_at changed, starts over in a new epoch, and gives the same bits as a
    fresh memo whatever happened before."""
    rng = np.random.default_rng(7)
    n = 40
    now = 1.8e9
    updated = now - rng.uniform(-7200, 60 * 86400, n)
    rows = make_rows(updated, np.ones(n), np.ones(n), np.arange(n), np.zeros(n), None, None,
                     None, None)

    def recency(r, t):
        d = refresh_recency(r, t, decay)
        return np.array([1.0 if r.updated_at[i] >= t else d * r.memo_factor[i]
                         for i in range(n)])

    np.testing.assert_allclose(recency(rows, now), ref_recency(updated, now, decay), rtol=1e-12,
                               atol=1e-300)
    touched = rng.choice(n, 5, replace=False)
    factors = rows.memo_factor.copy()
    rows.updated_at[touched] = now  # what reinforcement does
    got = recency(rows, now + 60)
    np.testing.assert_allclose(got, ref_recency(rows.updated_at, now + 60, decay), rtol=1e-12,
                               atol=1e-300)
    untouched = np.setdiff1d(np.arange(n), touched)
    assert rows.memo_factor[untouched].tolist() == factors[untouched].tolist()
    fresh = rows._replace(memo_key=np.full(2, np.nan), memo_at=np.full(n, np.nan),
                          memo_factor=np.zeros(n))
    assert got.tolist() == recency(fresh, now + 60).tolist()
    later = now + 400 * 86400  # past the epoch's span for every decay here but 0
    key = rows.memo_key.copy()
    np.testing.assert_allclose(recency(rows, later), ref_recency(rows.updated_at, later, decay),
                               rtol=1e-12, atol=1e-300)
    assert decay == 0.0 or rows.memo_key[0] != key[0]
    assert rows.memo_key[0] == recency_epoch(later, decay) <= later


# ================================================================== fusion and ranking
def recall_inputs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    bm25 = np.where(rng.random(n) < 0.4, rng.choice([0.5, 1.0, 2.0, 3.3], n) * (
        1 + (seed % 2) * rng.random(n)), 0.0)
    cos = np.where(rng.random(n) < 0.5, rng.choice([-0.25, 0.25, 0.5, 0.75], n),
                   0.0).astype(np.float32)
    affinity = np.where(rng.random(n) < 0.2, 3.0, 0.0)
    eligible = rng.random(n) < 0.85
    cat = rng.choice(3, n, p=[0.08, 0.12, 0.80])  # 0 = self identity, 1 = user fact, 2 = rest
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
            "eligible": eligible, "scored": eligible.copy(), "base": base, "access": access,
            "seq": seq, "updated": updated, "tokens": tokens, "fixed": fixed,
            "user_fact": cat == 1, "nbr": nbr, "w": w, "prev": prev, "nxt": nxt}


@pytest.mark.parametrize("seed", range(8))
def test_fuse_matches_reference(seed):
    """Every BM25 normalisation (raw, by the best hit, min-max over the hits) and cosine one (raw,
    min-max over the candidates, floor, spread, floor to best), over the eligible rows only."""
    c = recall_inputs(seed)
    n = c["n"]
    for mode, cos_mode, floor, spread in itertools.product((0, 1, 2), (0, 1, 2, 3, 4),
                                                           (0.0, 0.3), (0.6, 2.0)):
        knobs = make_knobs((mode, cos_mode, 5, 1, 2, 3, 3, 5, 20, 2000))
        bn, rel = np.full(n, np.nan), np.full(n, np.nan)
        fuse(c["bm25"], c["cos"], c["affinity"], c["eligible"], knobs,
             make_scales(floor, spread), bn, rel)
        rb, rr = ref_fuse(c["bm25"], c["cos"], c["affinity"], c["eligible"], mode, cos_mode,
                          0.4, 0.6, floor, spread)
        np.testing.assert_allclose(bn, rb, rtol=1e-12, atol=0)
        np.testing.assert_allclose(rel, rr, rtol=1e-12, atol=1e-15)


def test_fuse_worked_minmax_examples():
    """BM25 min-max {1, 3, 2} → {0, 1, 0.5}; a lone hit → 1; cosines {0.2, 0.6, 0.4} min-max →
    {0, 1, 0.5}."""
    for vals, want in (([1.0, 3.0, 2.0], [0.0, 1.0, 0.5]), ([2.0], [1.0])):
        n = len(vals)
        yes = np.ones(n, np.bool_)
        bn, rel = np.empty(n), np.empty(n)
        fuse(np.array(vals), np.zeros(n, np.float32), np.zeros(n), yes,
             make_knobs((2, 0, 5, 1, 2, 3, 3, 5, 20, 2000)), make_scales(), bn, rel)
        assert bn.tolist() == want
        fuse(np.zeros(n), (np.array(vals) / 5.0).astype(np.float32), np.zeros(n), yes,
             make_knobs((0, 1, 5, 1, 2, 3, 3, 5, 20, 2000)), make_scales(bm25_w=0.0, cos_w=1.0),
             bn, rel)
        np.testing.assert_allclose(rel, want, rtol=1e-6, atol=1e-7)


def case_rows(c):
    return make_rows(c["updated"], np.ones(c["n"]), c["access"], c["seq"], c["tokens"], c["nbr"],
                     c["w"], c["prev"], c["nxt"])


@pytest.mark.parametrize("seed", range(8))
def test_ranked_rows_match_reference(seed):
    """Score, top rows, the walk from the seeds along both kinds of edges, the new top k."""
    c = recall_inputs(seed)
    n = c["n"]
    _, rel = ref_fuse(c["bm25"], c["cos"], c["affinity"], c["eligible"], 1, 1, 0.4, 0.6)
    rel = np.array(rel)
    rows = case_rows(c)
    for n_seeds, hops, adj_hops, k, mix in ((5, 1, 2, 20, 0.0), (5, 1, 2, 20, 0.4),
                                            (1, 2, 0, 3, 0.4), (3, 0, 1, n + 2, 0.4),
                                            (3, 0, 0, 10, 0.0)):
        knobs = make_knobs((1, 1, n_seeds, hops, adj_hops, 3, 3, 5, 20, 2000))._replace(
            adj_mix=mix)
        score, graph = np.full(n, np.nan), np.full(n, np.nan)
        got, count = ranked_rows(rows, knobs, c["base"], rel, c["scored"], k, score, graph)
        order, ref_score, ref_graph = ref_rank(c["base"], rel, c["scored"], c["access"],
                                               c["seq"], 1.0, n_seeds, c["nbr"], c["w"], hops,
                                               0.5, c["prev"], c["nxt"], adj_hops, 0.8, mix)
        ctx = f"seeds {n_seeds} hops {hops} adjacency {adj_hops} mix {mix}"
        assert count == int(c["scored"].sum())
        assert_order(got, order[:k], ref_score.__getitem__, ctx)
        for i in range(n):
            if c["scored"][i]:
                assert score[i] == pytest.approx(ref_score[i], rel=1e-12), ctx
                assert graph[i] == pytest.approx(ref_graph[i], abs=1e-12), ctx


def test_walk_leaves_only_from_a_seed_with_an_edge_or_a_link():
    """The walk is skipped only when no seed has a similarity edge (hops on) or a conversation
    link (adjacency on): a store without either, or a walk turned off."""
    nbr = np.full((4, 2), -1, np.int64)
    none = np.full(4, -1, np.int64)
    rows = make_rows(np.zeros(4), np.ones(4), np.zeros(4), np.arange(4), np.zeros(4), nbr,
                     np.zeros((4, 2)), none, none)
    seeds = np.array([0, 2], np.int64)
    assert not walk_leaves(seeds, rows, 1, 2)
    nbr[2, 1] = 3  # an edge from a seed: only a similarity walk leaves along it
    assert walk_leaves(seeds, rows, 1, 0) and not walk_leaves(seeds, rows, 0, 2)
    nbr[2, 1] = -1
    nxt = none.copy()
    nxt[0] = 1  # a link from a seed: only a conversation walk leaves along it
    linked = rows._replace(nxt=nxt)
    assert walk_leaves(seeds, linked, 0, 2) and not walk_leaves(seeds, linked, 1, 0)
    assert not walk_leaves(np.array([1, 3], np.int64), linked, 1, 2)  # not from a seed


PLANS = (  # norm, cos_mode, seeds, hops, adjacency hops, max_identity, max_user_facts, lead
    # window, entries, budget
    (0, 0, 5, 1, 0, 50, 50, 20, 20, 2000), (1, 1, 3, 2, 2, 3, 3, 5, 5, 300),
    (2, 1, 5, 1, 1, 1, 0, 5, 15, 1500), (0, 0, 1, 0, 0, 0, 3, 5, 1, 50),
    (1, 1, 5, 1, 2, 3, 2, 40, 20, 2000))


def ref_recall(c, q, plan, revived=()):
    """The selected rows, kinds and every row's score, normalised BM25, relevance and graph gain
    of one query, its candidates widened by the ``revived`` rows."""
    mode, cos_mode, n_seeds, hops, adj_hops, max_id, max_uf, window, max_entries, budget = plan
    eligible, scored = q["eligible"].copy(), q["scored"].copy()
    eligible[list(revived)] = True
    scored[list(revived)] = True
    bn, rel = ref_fuse(q["bm25"], q["cos"], q["affinity"], eligible, mode, cos_mode, 0.4, 0.6)
    order, _score, graph = ref_rank(c["base"], rel, scored, c["access"], c["seq"], 1.0, n_seeds,
                                    c["nbr"], c["w"], hops, 0.5, c["prev"], c["nxt"], adj_hops,
                                    0.8, plan_mix(plan))
    fixed = ref_pick(c["fixed"], eligible, c["access"], c["updated"], c["seq"], max_id)
    best = sorted((rel[r] for r in range(len(rel)) if scored[r]), reverse=True)[:max(window, 0)]
    bar = best[-1] if best else np.inf
    lead = ref_lead(c["user_fact"], scored, rel, graph, c["seq"], bar, max_uf)
    rows, kinds = ref_select(fixed, lead, order, c["tokens"], max_entries, budget)
    full = {i: c["base"][i] + rel[i] + graph[i] for i in range(len(rel))}
    return rows, kinds, full, bn, rel, graph


def query_case(c, rng):
    n = c["n"]
    eligible = c["eligible"] & (rng.random(n) < 0.9)
    return {"bm25": np.where(rng.random(n) < 0.4, rng.uniform(0.1, 5, n), 0.0),
            "cos": np.where(rng.random(n) < 0.5, rng.choice([-0.25, 0.25, 0.5, 0.75], n),
                            0.0).astype(np.float32),
            "affinity": np.where(rng.random(n) < 0.2, 3.0, 0.0), "eligible": eligible,
            "scored": eligible.copy(), "dormant": ~eligible & (rng.random(n) < 0.6)}


@pytest.mark.parametrize("seed", range(10))
def test_rank_one_matches_reference(seed):
    """One query from its scores to the selected rows and every score part: the reference's
    fusion, ranking, walk, leading block and budget; with revival on, the dormant rows the
    reference cues join the candidates and come back marked revived."""
    from tests.test_revival_kernels import ref_revived

    c = recall_inputs(seed)
    rng, n = c["rng"], c["n"]
    rows = case_rows(c)
    base = np.stack([rng.random(n), rng.random(n), c["base"]])
    revived_any = False
    for plan in PLANS:
        q = query_case(c, rng)
        q["bm25"][q["dormant"] & (rng.random(n) < 0.5)] = 6.0  # some dormant rows named
        for revive in (False, True):
            dormant = q["dormant"] if revive else np.zeros(0, np.bool_)
            idf = float(rng.uniform(2, 8))
            scope = Scope(q["eligible"], q["affinity"], dormant, c["fixed"],
                          np.flatnonzero(c["user_fact"]))
            width = plan[8] + min(plan[5], c["fixed"].size)
            out_rows = np.full(width, -1, np.int64)
            parts = np.full((N_PARTS, width), np.nan)
            parts[8] = 0.0
            m = rank_one(rows, scope, make_knobs(plan), make_scales(), q["bm25"], q["cos"],
                         np.zeros(0), idf, True, base, np.full((6, max(n, 1)), np.nan),
                         out_rows, parts)
            back = (ref_revived(q["dormant"], q["bm25"], q["cos"], idf, 0.4, 0.6, True, 0.3,
                                c["prev"], c["nxt"], plan[4], True) if revive else set())
            revived_any |= bool(back)
            want_rows, kinds, full, bn, rel, graph = ref_recall(c, q, plan, back)
            ctx = f"plan {plan} revive {revive}"
            got = out_rows[:m]
            assert_order(got, want_rows, lambda i: full[i], ctx)
            kind_of = dict(zip(want_rows, kinds))
            for j, r in enumerate(got.tolist()):
                assert parts[0, j] == pytest.approx(full[r], rel=1e-12), ctx
                assert parts[1, j] == pytest.approx(bn[r], rel=1e-12), ctx
                assert parts[2, j] == pytest.approx(rel[r], rel=1e-12, abs=1e-15), ctx
                assert parts[3, j] == pytest.approx(graph[r], abs=1e-12), ctx
                assert (parts[4, j], parts[5, j]) == (base[0, r], base[1, r]), ctx
                assert parts[6, j] == max(float(q["cos"][r]), 0.0), ctx
                assert parts[7, j] == q["affinity"][r], ctx
                want = (REASON_REVIVED if r in back else
                        kind_of.get(r, 0) or (1 if graph[r] > 0 else 0))
                assert parts[8, j] == want, ctx
    if seed < 4:
        assert revived_any or c["n"] < 5
