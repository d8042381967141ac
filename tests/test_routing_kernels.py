"""Routing and experience kernels against plain Python references on random inputs."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_kernels import entry
from maclaw_kernels.experience import (experience_indexed,
                                      experience_indexed_batch, experience_postings)
from maclaw_kernels.vectors import dot_tile
from maclaw_kernels.routing import (NORM_MINMAX, NORM_RAW_COS, NORM_ZSCORE,
                                    fill_select, fuse_scores, rank_keys,
                                    route_one, route_rows, selected_fields, topk_where,
                                    Catalog, RouteKnobs, RouteOut)

experience_indexed, fill_select, rank_keys = map(entry, (experience_indexed, fill_select,
                                                        rank_keys))  # no CPython entry points

# ---------------------------------------------------------------- references


def ref_minmax(x, mask):
    vals = [x[i] for i in range(len(x)) if mask[i]]
    out = [0.0] * len(x)
    if not vals:
        return out
    lo, hi = min(vals), max(vals)
    for i in range(len(x)):
        if mask[i]:
            out[i] = (x[i] - lo) / (hi - lo) if hi > lo else (1.0 if x[i] > 0 else 0.0)
    return out


def ref_topk(x, mask, k, tie):
    rows = [i for i in range(len(x)) if mask[i]]
    return sorted(rows, key=lambda i: (-x[i], tie[i]))[:k]


def ref_zscore(x, mask):
    vals = [float(x[i]) for i in range(len(x)) if mask[i]]
    out = [0.0] * len(x)
    if not vals:
        return out
    mu = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals))
    for i in range(len(x)):
        if mask[i]:
            out[i] = (x[i] - mu) / sd if sd > 0 else 0.0
    return out


def ref_fuse(bm, cos, cand, n_vec, wb, wc, tie, norm=NORM_MINMAX):
    vec = ref_topk(cos, [cand[i] and cos[i] > 0 for i in range(len(cos))], n_vec, tie)
    hit = [bool(cand[i] and bm[i] > 0) for i in range(len(bm))]
    for i in vec:
        hit[i] = True
    if norm == NORM_ZSCORE:
        nb, nc = ref_zscore(bm, hit), ref_zscore(cos, hit)
    else:
        nb = ref_minmax(bm, hit)
        nc = ref_minmax(cos, hit) if norm == NORM_MINMAX else [max(c, 0.0) for c in cos]
    fused = [wb * nb[i] + wc * nc[i] if hit[i] else 0.0 for i in range(len(bm))]
    out = ref_minmax(fused, hit)
    vals = {fused[i] for i in range(len(bm)) if hit[i]}
    if norm == NORM_ZSCORE and len(vals) == 1:  # equal hits all lead
        out = [1.0 if hit[i] else 0.0 for i in range(len(bm))]
    return hit, out


def ref_fill(key, cand, nonbuiltin, slots, nb_slots, tie):
    order = sorted((i for i in range(len(key)) if cand[i]), key=lambda i: (-key[i], tie[i]))
    out, nb = [], 0
    for i in order:
        if len(out) >= slots:
            break
        if nonbuiltin[i]:
            if nb >= nb_slots:
                continue
            nb += 1
        out.append(i)
    return out


def ref_experience(records, q_tokens, now, n_uid, per_tool=200, decay=0.01, fail_w=-0.3):
    """records newest first: (uid, token set, ts, ok); Python sets, per tool walk."""
    q = set(q_tokens)
    out = [0.0] * n_uid
    if not q:
        return out
    for u in range(n_uid):
        total, count = 0.0, 0
        for uid, toks, ts, ok in records:
            if uid != u:
                continue
            if count >= per_tool:
                break
            count += 1
            j = len(q & toks) / len(q | toks)
            total += j * math.exp(-decay * max((now - ts) / 3600, 0)) * (1.0 if ok else fail_w)
        out[u] = min(max(total / count, 0.0), 1.0) if count else 0.0
    return out


# ---------------------------------------------------------------- strategies

def arrays(draw, n, lo=0.0, hi=5.0, zero_p=0.4):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.uniform(lo, hi, n)
    x[rng.random(n) < zero_p] = 0.0
    x[rng.random(n) < 0.1] = x[0]  # ties
    return x


@st.composite
def scored(draw):
    n = draw(st.integers(1, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bm = arrays(draw, n)
    cos = rng.uniform(-0.5, 1.0, n).astype(np.float32)
    cos[rng.random(n) < 0.1] = cos[0]
    cand = rng.random(n) < 0.8
    return bm, cos, cand, rng


def shuffled_ties(rng, n):
    """A tie-break rank per row (a permutation: the router's rank by tool name)."""
    return rng.permutation(n).astype(np.int64)


@given(scored(), st.integers(0, 70))
@settings(max_examples=150, deadline=None)
def test_topk_matches_reference(data, k):
    bm, _, cand, rng = data
    tie = shuffled_ties(rng, bm.shape[0])
    idx = np.empty(max(k, 1), np.int64)
    m = topk_where(bm, cand, cand, True, tie, k, idx)  # the ``cand`` rows
    assert idx[:m].tolist() == ref_topk(bm, cand, k, tie)
    flag, want = rng.random(bm.shape[0]) < 0.5, bool(rng.random() < 0.5)
    m = topk_where(bm, cand, flag, want, tie, k, idx)  # those whose flag is ``want``
    assert idx[:m].tolist() == ref_topk(bm, cand & (flag == want), k, tie)


@given(scored(), st.integers(1, 10), st.sampled_from([(0.4, 0.6), (1.0, 0.0), (0.0, 1.0),
                                                       (0.3, 0.7)]),
       st.sampled_from([NORM_RAW_COS, NORM_MINMAX, NORM_ZSCORE]))
@settings(max_examples=300, deadline=None)
def test_fuse_matches_reference(data, n_vec, w, norm):
    bm, cos, cand, rng = data
    n = bm.shape[0]
    tie = shuffled_ties(rng, n)
    hit, fused = np.zeros(n, np.bool_), np.zeros(n)
    n_hit = fuse_scores(bm, cos, cand, tie, n_vec, w[0], w[1], norm, hit, fused,
                        np.empty(n_vec, np.int64))
    rhit, rfused = ref_fuse(bm, cos.astype(np.float64), cand, n_vec, *w, tie, norm)
    assert hit.tolist() == rhit and n_hit == sum(rhit)
    np.testing.assert_allclose(fused, rfused, atol=1e-9)


def test_minmax_cosine_spreads_compressed_cosines():
    """R3: e5-style cosines packed into 0.03 of range still order the fusion; raw they vanish
    next to a min-max BM25 (the first build's failure)."""
    bm = np.array([1.0, 3.0, 0.0, 2.0])
    cos = np.array([0.83, 0.81, 0.84, 0.82], np.float32)
    cand, tie = np.ones(4, np.bool_), np.arange(4, dtype=np.int64)
    hit, fused = np.zeros(4, np.bool_), np.zeros(4)
    fuse_scores(bm, cos, cand, tie, 4, 0.3, 0.7, NORM_MINMAX, hit, fused, np.empty(4, np.int64))
    assert int(np.argmax(fused)) == 2  # the best cosine wins at 0.3/0.7
    fuse_scores(bm, cos, cand, tie, 4, 0.3, 0.7, NORM_ZSCORE, hit, fused, np.empty(4, np.int64))
    assert int(np.argmax(fused)) == 2  # z-scores are scale-free too
    fuse_scores(bm, cos, cand, tie, 4, 0.3, 0.7, NORM_RAW_COS, hit, fused, np.empty(4, np.int64))
    assert int(np.argmax(fused)) == 1  # raw: BM25 decides


def test_zscore_fusion_lets_a_standout_outweigh_a_flat_signal():
    """One tool alone matches the words (BM25 10 vs 1 for the other 49 hits) while the cosines
    rise evenly over 0.51–0.60 and put it last: min-max stretches the flat cosine to [0, 1] and
    its top wins; as z-scores the BM25 standout lies ~7 deviations out and leads."""
    n = 50
    bm = np.ones(n)
    bm[0] = 10.0
    cos = np.concatenate([[0.50], np.linspace(0.51, 0.60, n - 1)]).astype(np.float32)
    cand, tie = np.ones(n, np.bool_), np.arange(n, dtype=np.int64)
    hit, fused = np.zeros(n, np.bool_), np.zeros(n)
    fuse_scores(bm, cos, cand, tie, n, 0.4, 0.6, NORM_MINMAX, hit, fused, np.empty(n, np.int64))
    assert int(np.argmax(fused)) == n - 1
    fuse_scores(bm, cos, cand, tie, n, 0.4, 0.6, NORM_ZSCORE, hit, fused, np.empty(n, np.int64))
    assert int(np.argmax(fused)) == 0 and fused.max() == 1.0 and fused.min() == 0.0


def test_zscore_lone_hit_keeps_its_lead():
    bm = np.array([0.0, 2.0, 0.0])
    cos = np.zeros(3, np.float32)
    cand, tie = np.ones(3, np.bool_), np.arange(3, dtype=np.int64)
    hit, fused = np.zeros(3, np.bool_), np.zeros(3)
    assert fuse_scores(bm, cos, cand, tie, 2, 0.4, 0.6, NORM_ZSCORE, hit, fused,
                       np.empty(2, np.int64)) == 1
    assert fused.tolist() == [0.0, 1.0, 0.0]


@given(scored(), st.integers(0, 30), st.integers(0, 20))
@settings(max_examples=150, deadline=None)
def test_rank_and_fill_match_reference(data, slots, nb_slots):
    bm, cos, cand, rng = data
    n = bm.shape[0]
    hit = cand & (bm > 0)
    ret = np.where(hit, rng.random(n), 0.0)
    exp_by_uid = rng.random(5)
    row_uid = rng.integers(-1, 6, n).astype(np.int32)  # 5 is out of range: experience 0
    prio = rng.integers(0, 11, n) * 0.1
    group = cand & (rng.random(n) < 0.2)
    nonbuiltin = rng.random(n) < 0.5
    e, s, key = np.zeros(n), np.zeros(n), np.zeros(n)
    rank_keys(ret, exp_by_uid, row_uid, prio, cand, hit, group, 0.6, 0.3, 0.1, e, s, key)
    for i in range(n):
        u = row_uid[i]
        want_e = exp_by_uid[u] if 0 <= u < 5 else 0.0
        want_s = 0.6 * ret[i] + 0.3 * want_e + 0.1 * prio[i]
        tier = 4.0 if group[i] else 2.0 if hit[i] else 0.0
        assert e[i] == want_e and math.isclose(s[i], want_s, abs_tol=1e-12)
        assert key[i] == (want_s + tier if cand[i] else -1.0)
    out = np.empty(max(slots, 1), np.int64)
    bufs = (np.empty(max(slots, 1), np.int64), np.empty(max(slots, 1), np.int64))
    tie = shuffled_ties(rng, n)
    m = fill_select(key, tie, cand, nonbuiltin, slots, nb_slots, out, *bufs)
    assert out[:m].tolist() == ref_fill(key, cand, nonbuiltin, slots, nb_slots, tie)


def test_route_rows_equals_route_one():
    rng = np.random.default_rng(7)
    nq, n = 12, 200
    bm = rng.uniform(0, 4, (nq, n)) * (rng.random((nq, n)) < 0.2)
    cos = rng.uniform(-0.2, 0.8, (nq, n)).astype(np.float32)
    exp = rng.random((nq, 30))
    uid = rng.integers(-1, 30, n).astype(np.int32)
    prio = rng.integers(0, 11, n) * 0.1
    cand = rng.random(n) < 0.9
    group = (rng.random((nq, n)) < 0.05) & cand
    nonb = rng.random(n) < 0.5
    tie = rng.permutation(n).astype(np.int64)
    w_cos = rng.uniform(0.2, 0.8, nq)
    tail = (0.6, 0.3, 0.1, 6, 3)
    o = np.zeros((nq, 6), np.int64)
    on, oc = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
    hit = np.zeros((nq, n), np.bool_)
    r, e, s = np.zeros((nq, n)), np.zeros((nq, n)), np.zeros((nq, n))
    catalog = Catalog(uid, prio, cand, tie, nonb)
    knobs = RouteKnobs(*map(float, (10, 0.4, NORM_ZSCORE, *tail)))
    for lo, hi in ((0, 5), (5, 5), (5, nq)):  # message ranges, as the threads take them
        route_rows(bm, cos, exp, group, w_cos, catalog, knobs, RouteOut(o, hit, r, e, s), on, oc,
                   lo, hi)
    for q in range(nq):
        o1, h1 = np.zeros(6, np.int64), np.zeros(n, np.bool_)
        r1, e1, s1 = np.zeros(n), np.zeros(n), np.zeros(n)
        n_sel, n_cand = route_one(bm[q], cos[q], exp[q], group[q], float(w_cos[q]), catalog,
                                  knobs, RouteOut(o1, h1, r1, e1, s1))
        assert (n_sel, n_cand) == (on[q], oc[q])
        assert o1[:n_sel].tolist() == o[q, :n_sel].tolist()
        assert np.array_equal(s1, s[q]) and np.array_equal(h1, hit[q])
        assert sum(nonb[o1[:n_sel]]) <= 3


@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_selected_fields_matches_per_pair_reads(seed, nq, n):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, n + 1))
    out_n = rng.integers(0, k + 1, nq)
    out_idx = np.stack([rng.permutation(n)[:k] for _ in range(nq)]).astype(np.int64)
    score, ret, exp, bm = (rng.random((nq, n)) for _ in range(4))
    cos = rng.uniform(-1, 1, (nq, n)).astype(np.float32)
    group, hit = rng.random((nq, n)) < 0.3, rng.random((nq, n)) < 0.5
    prio = rng.random(n)
    total = int(out_n.sum())
    rows, fields = np.empty(total, np.int64), np.empty((8, total))
    selected_fields(out_idx, out_n, score, ret, exp, prio, bm, cos, group, hit, rows, fields)
    want_rows, want = [], []
    for q in range(nq):
        for p in range(out_n[q]):
            r = int(out_idx[q, p])
            want_rows.append(r)
            want.append([score[q, r], ret[q, r], exp[q, r], prio[r], bm[q, r], float(cos[q, r]),
                         float(group[q, r]), float(hit[q, r])])
    assert rows.tolist() == want_rows
    assert fields.T.tolist() == want


# ---------------------------------------------------------------- experience

@st.composite
def windows(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    w = draw(st.integers(1, 80))
    count = draw(st.integers(0, w))
    head = draw(st.integers(0, w - 1))
    n_uid, n_vocab, t = 6, 12, 5
    uid = rng.integers(0, n_uid, w).astype(np.int32)
    tok = np.full((w, t), -1, np.int32)
    ntok = np.zeros(w, np.int32)
    for r in range(w):
        toks = rng.choice(n_vocab, rng.integers(0, t + 1), replace=False)
        tok[r, : toks.size] = toks
        ntok[r] = toks.size
    ts = 1000.0 - rng.uniform(-3600, 3600 * 200, w)  # some records in the future
    ok = rng.random(w) < 0.7
    q = rng.choice(n_vocab, rng.integers(0, 6), replace=False).astype(np.int32)
    unknown = int(rng.integers(0, 3))  # query tokens the window never saw
    per_tool = int(rng.integers(1, 8))
    return uid, tok, ntok, ts, ok, head, count, q, unknown, per_tool, n_uid, n_vocab


def _newest_first(uid, tok, ntok, ts, ok, head, count):
    w = uid.shape[0]
    out = []
    for j in range(count):
        r = (head - 1 - j) % w
        out.append((int(uid[r]), set(tok[r, : ntok[r]].tolist()), float(ts[r]), bool(ok[r])))
    return out


def _postings(uid, tok, ntok, head, count, per_tool, n_uid, n_vocab):
    idx = (np.zeros(max(count, 1), np.int64), np.zeros(n_uid, np.int64),
           np.zeros(n_vocab + 1, np.int64), np.zeros(max(count * tok.shape[1], 1), np.int64))
    experience_postings(uid, tok, ntok, head, count, per_tool, n_uid, *idx)
    return idx


@given(windows())
@settings(max_examples=200, deadline=None)
def test_experience_matches_python_sets(win):
    """The indexed kernel against plain Python sets; its scratch is left zeroed and a batch
    gives each query's bits."""
    uid, tok, ntok, ts, ok, head, count, q, unknown, per_tool, n_uid, n_vocab = win
    q_size = q.size + unknown
    q_tokens = q.tolist() + [f"unk{i}" for i in range(unknown)]
    want = np.array(ref_experience(_newest_first(uid, tok, ntok, ts, ok, head, count), q_tokens,
                                   1000.0, n_uid, per_tool))
    idx = _postings(uid, tok, ntok, head, count, per_tool, n_uid, n_vocab)
    inter = np.zeros(uid.shape[0], np.int32)
    got = np.full(n_uid, np.nan)
    for _ in range(2):  # the scratch is left zeroed: a second query gives the same
        experience_indexed(*idx, uid, ntok, ts, ok, count, q, q_size, 1000.0, 0.01, -0.3, inter,
                           got)
        np.testing.assert_allclose(got, want, atol=1e-12)
        assert not inter.any()
    batch = np.full((2, n_uid), np.nan)
    experience_indexed_batch(*idx, uid, ntok, ts, ok, count, np.array([0, q.size, 2 * q.size]),
                             np.concatenate([q, q]), np.array([q_size, q_size]), 1000.0, 0.01,
                             -0.3, batch)
    assert np.array_equal(batch[0], got) and np.array_equal(batch[1], got)


def test_batched_cosines_are_bitwise_equal_to_single_query_kernel():
    """The vector column's batch (tiles of queries on threads) gives every query the bits of the
    one-query kernel."""
    from maclaw_fast.index.vectors import VectorColumn

    rng = np.random.default_rng(11)
    for n, d, nq, parts in ((37, 384, 21, 0), (5, 7, 3, 1), (64, 128, 40, 3)):
        col = VectorColumn(d)
        m = rng.standard_normal((n + 3, d)).astype(np.float32)
        has = rng.random(n + 3) < 0.9
        for i in range(n + 3):
            col.set(i, m[i] if has[i] else None)
        q = rng.standard_normal((nq, d)).astype(np.float32)
        out = np.full((nq, n), np.nan, np.float32)
        col.scores_batch(q, n, out, parts)
        for i in range(nq):
            one = np.empty(n, np.float32)
            dot_tile(col.matrix, n, col.has_vec, q[i][None], 0, 1, one[None])
            assert np.array_equal(one, out[i])
        np.testing.assert_allclose(out, np.where(has[:n], q @ col.matrix[:n].T, 0.0),
                                   rtol=1e-4, atol=1e-4)
