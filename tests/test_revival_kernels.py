"""Cue-driven revival inside the fused recall kernel (SPEC §0 R9), against plain references:
``count_cued`` / ``revived_masks`` against a Python loop, and ``recall_query`` with a dormant
mask against ``recall_single`` over masks widened by that reference (the same rows and parts,
revived rows marked), on random stores, queries and conversation links."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from maclaw_fast.index.bm25 import Bm25Index
from maclaw_kernels.bm25 import bm25_query
from maclaw_kernels.recall import (REASON_REVIVED, VIEWED_ARGS, recall_batch, recall_one,
                                   recall_query, recall_single, recall_viewed)
from maclaw_kernels.revival import count_cued, mark_dormant, revived_masks
from maclaw_kernels.vectors import dot_scores
from maclaw_kernels.views import view_table
from tests.test_memory_kernels import WORDS, recency_knobs, unit_vector, zipf_doc
from tests.test_recall_kernels import PLANS, plan_args, query_case, recall_inputs, width_of


def ref_cue(bm25, cos, idf_total, bw, cw, has_vector, needs_term=False, floor=0.0):
    if needs_term and bm25 <= 0:  # no term of the query: no cue, whatever the vector
        return 0.0
    lex = min(1.0, bm25 / idf_total) if idf_total > 0 and bm25 > 0 else 0.0
    if not has_vector:
        return lex
    c = max((cos - floor) / (1.0 - floor), 0.0)  # the model's cosines on the tuned scale
    return (bw * lex + cw * c) / (bw + cw) if bw + cw > 0 else 0.0


def ref_revived(dormant, bm25, cos, idf_total, bw, cw, has_vector, bar, prev, nxt, hops,
                needs_term=False, floor=0.0):
    """The rows a query brings back: cued dormant rows and the dormant rows within ``hops``
    links of one (a walk stops at a row that is not dormant)."""
    out = set()
    for i in range(len(bm25)):
        if not dormant[i] or ref_cue(float(bm25[i]), float(cos[i]), idf_total, bw, cw,
                                     has_vector, needs_term, floor) < bar:
            continue
        out.add(i)
        for links in (prev, nxt):
            node = i
            for _ in range(hops):
                node = int(links[node])
                if node < 0 or not dormant[node]:
                    break
                out.add(node)
    return out


def ref_idf_total(index, terms):
    """Σ idf over the distinct known terms, idf(df = 0) for every unknown word."""
    _, ids, arrays = index.fused_query_args("", terms)  # the word table's, then df, n_live
    df, n_live = arrays[3], float(arrays[4])
    total, seen = 0.0, set()
    for t in ids.tolist():
        if t < 0 or t >= len(df) or df[t] <= 0:
            total += math.log((n_live + 0.5) / 0.5 + 1.0)
        elif t not in seen:
            seen.add(t)
            total += math.log((n_live - df[t] + 0.5) / (df[t] + 0.5) + 1.0)
    return total


@pytest.mark.parametrize("seed", range(20))
def test_cued_rows_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 120))
    bm25 = np.where(rng.random(n) < 0.4, rng.uniform(0.1, 6, n), 0.0)
    cos = rng.uniform(-0.5, 1, n).astype(np.float32)
    dormant = rng.random(n) < 0.5
    eligible = ~dormant & (rng.random(n) < 0.9)
    scored = eligible & (rng.random(n) < 0.95)
    c = recall_inputs(seed)  # only for its conversation links
    prev, nxt = (np.resize(c["prev"], n), np.resize(c["nxt"], n))
    prev[prev >= n] = -1
    nxt[nxt >= n] = -1
    for has_vector, term, floor in ((True, False, 0.0), (False, False, 0.0), (True, True, 0.0),
                                    (False, True, 0.0), (True, False, 0.71), (True, True, 0.4)):
        for hops in (0, 1, 2):
            idf, bar = float(rng.uniform(0.5, 8)), float(rng.choice([0.0, 0.2, 0.3, 0.6]))
            want = ref_revived(dormant, bm25, cos, idf, 0.4, 0.6, has_vector, bar, prev, nxt,
                               hops, term, floor)
            k = count_cued(dormant, bm25, cos, idf, 0.4, 0.6, has_vector, term, floor, bar)
            assert k == sum(1 for i in range(n) if dormant[i] and ref_cue(
                bm25[i], float(cos[i]), idf, 0.4, 0.6, has_vector, term, floor) >= bar)
            assert count_cued(np.zeros(0, np.bool_), bm25, cos, idf, 0.4, 0.6, has_vector,
                              term, floor, bar) == (k if n == 0 else 0)
            el, sc = revived_masks(dormant, bm25, cos, idf, 0.4, 0.6, has_vector, term, floor,
                                   bar, prev, nxt, hops, eligible, scored)
            assert set(np.flatnonzero(el & ~eligible).tolist()) == want
            if term and bar > 0.0 and hops == 0:  # only rows holding a query term come back
                assert all(bm25[i] > 0 for i in want)
            assert set(np.flatnonzero(sc & ~scored).tolist()) == want
            assert (el[eligible]).all() and (sc[scored]).all()


@pytest.mark.parametrize("seed", range(12))
def test_recall_query_revives_as_recall_single_over_widened_masks(seed):
    """The fused kernel with a dormant mask selects what ``recall_single`` selects over the
    eligible rows plus the reference's revived rows, bit for bit, with the revived rows'
    reason code; its ``idf_out`` is the query's idf_total; the address-table entry agrees."""
    c = recall_inputs(seed)
    rng, n = c["rng"], c["n"]
    q = query_case(c, rng)
    dormant = ~q["eligible"] & (rng.random(n) < 0.7)
    docs_rng = random.Random(seed)
    index = Bm25Index(tantivy_index=False)
    index.add_many(list(range(n)), [zipf_doc(docs_rng, docs_rng.randint(0, 12))
                                    for _ in range(n)])
    d = int(rng.choice([8, 37]))
    matrix = rng.standard_normal((n + 3, d)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    has_vec = rng.random(n + 3) < 0.9
    now = 1.8e9
    updated = now - rng.uniform(-3600, 90 * 86400, n)
    weight = rng.uniform(0.5, 3, n)
    revived_any = linked_without_hit = 0
    for plan, term, floor in ((p, t, f) for p in PLANS for t, f in ((0.0, 0.0), (1.0, 0.0),
                                                                    (1.0, 0.5))):
        width = width_of(c, plan)
        tail = plan_args(c, plan)
        adj_hops = plan[4]
        for qvec in (matrix[int(rng.integers(n))].copy() if n else unit_vector(rng, d),
                     np.zeros(0, np.float32)):
            terms = [docs_rng.choice(WORDS[:40]) for _ in range(docs_rng.randint(1, 4))]
            bm25, cos = np.zeros(n), np.zeros(n, np.float32)
            bm25_query(*index.query_args(terms), bm25)
            if qvec.size:
                dot_scores(matrix, n, has_vec, qvec, cos)
            idf = ref_idf_total(index, terms)
            bar = float(rng.choice([0.05, 0.2, 0.4]))
            back = ref_revived(dormant, bm25, cos, idf, 0.4, 0.6, qvec.size > 0, bar,
                               c["prev"], c["nxt"], adj_hops, bool(term), floor)
            revived_any += bool(back)
            # revived for a link, holding no query term: its cosine is computed after the cues
            linked_without_hit += bool(term) and qvec.size > 0 and any(
                bm25[r] <= 0 for r in back)
            el, sc = q["eligible"].copy(), q["scored"].copy()
            el[list(back)] = True
            sc[list(back)] = True
            rows_ref, parts_ref = np.full(width, -1, np.int64), np.zeros((9, width))
            m_ref = recall_single(updated, weight, now, *recency_knobs(n), bm25, cos,
                                  q["affinity"], el, sc, *tail, np.empty((7, n)), rows_ref,
                                  parts_ref)
            for j in range(m_ref):
                if rows_ref[j] in back:
                    parts_ref[8, j] = REASON_REVIVED
            text, term_ids, index_args = index.fused_query_args("", terms)
            rows, parts, idf_out = np.full(width, -1, np.int64), np.zeros((9, width)), np.zeros(1)
            rest = (*index_args, matrix, has_vec, updated, weight, *recency_knobs(n),
                    q["affinity"], q["eligible"], q["scored"], *tail, np.zeros(n),
                    np.zeros(n, np.float32), np.empty((7, n)), rows, parts, dormant, bar, term,
                    floor, idf_out)
            ctx = (f"plan {plan}, term {term}, floor {floor}, vector {qvec.size}, "
                   f"revived {sorted(back)}")
            for run in ("arrays", "views"):
                rows[:], parts[:], idf_out[:] = -1, 0.0, np.nan
                if run == "arrays":
                    m = recall_query(text, term_ids, qvec, True, now, *rest)
                else:
                    m = recall_viewed(text, term_ids, qvec, True, now,
                                      *view_table(rest, VIEWED_ARGS))
                assert m == m_ref and rows[:m].tolist() == rows_ref[:m].tolist(), ctx
                assert parts[:, :m].tolist() == parts_ref[:, :m].tolist(), ctx
                assert idf_out[0] == pytest.approx(idf, rel=1e-12), ctx
            # the caller's masks are left as they were
            assert not (q["eligible"] & dormant).any()
    if seed in (1, 2, 3):
        assert revived_any  # the cases do exercise revival
    LINKED_WITHOUT_HIT[seed] = linked_without_hit


LINKED_WITHOUT_HIT: dict[int, int] = {}


def test_lazy_linked_cosines_are_exercised():
    """The cases above do revive linked rows that hold no query term (whose cosines the fused
    kernel computes after the cue test), so its bit-for-bit agreement covers that path."""
    if len(LINKED_WITHOUT_HIT) < 12:
        pytest.skip("runs after test_recall_query_revives_as_recall_single_over_widened_masks")
    assert sum(LINKED_WITHOUT_HIT.values()) > 0


@pytest.mark.parametrize("seed", range(6))
def test_idf_totals_of_a_batch_equal_each_query_alone(seed):
    """``Bm25Index.idf_totals`` (one kernel call for a batch's cue scales) gives each token
    list exactly its ``idf_total``, and that is the plain sum over distinct known terms plus
    idf(df = 0) per unknown word."""
    rng = random.Random(seed)
    index = Bm25Index(tantivy_index=False)
    n = rng.randint(0, 60)
    index.add_many(list(range(n)), [zipf_doc(rng, rng.randint(0, 10)) for _ in range(n)])
    lists = [[rng.choice(WORDS[:50] + ["zzunknown", "qqnever"]) for _ in range(rng.randint(0, 6))]
             for _ in range(rng.randint(0, 25))]
    got = index.idf_totals(lists)
    assert got.shape == (len(lists),)
    assert got.tolist() == [index.idf_total(t) for t in lists]
    for t, g in zip(lists, got.tolist()):
        assert g == pytest.approx(ref_idf_total(index, t), rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_recall_batch_revives_as_recall_one_over_widened_masks(seed):
    """The batch kernel with a dormant mask per scope gives each query what ``recall_one``
    gives over its scope's masks widened by the reference's revived rows, revived rows marked;
    a scope without dormant rows (or revival off: no columns) ranks as before."""
    c = recall_inputs(seed)
    rng, n = c["rng"], c["n"]
    qs = [query_case(c, rng) for _ in range(int(rng.integers(1, 6)))]
    nq = len(qs)
    dormant = np.stack([~q["eligible"] & (rng.random(n) < 0.6) for q in qs])
    dormant[nq // 2] = False  # one scope with nothing dormant
    qs[0]["bm25"][dormant[0]] = 5.0  # the first query names its dormant rows: revival runs
    idf = rng.uniform(0.5, 6, nq)
    revived = 0
    for plan in PLANS:
        width = width_of(c, plan)
        for has_vector, bar, term, floor in ((True, 0.2, False, 0.0), (False, 0.3, False, 0.0),
                                             (True, 0.45, False, 0.0), (True, 0.2, True, 0.0),
                                             (True, 0.1, True, 0.6)):
            for off in (False, True):
                d = np.zeros((nq, 0), np.bool_) if off else dormant
                rows = np.full((nq, width), -1, np.int64)
                parts = [np.zeros((nq, width)) for _ in range(5)]
                counts = np.zeros(nq, np.int64)
                stack = [np.stack([q[k] for q in qs]) for k in ("bm25", "cos", "affinity",
                                                                  "eligible", "scored")]
                recall_batch(c["base"], *stack, np.arange(nq), c["updated"], *plan_args(c, plan),
                             rows, *parts, counts, d, idf, has_vector, term, floor, bar,
                             np.zeros((0, 0)))
                for qi, q in enumerate(qs):
                    back = set() if off else ref_revived(
                        dormant[qi], q["bm25"], q["cos"], idf[qi], 0.4, 0.6, has_vector, bar,
                        c["prev"], c["nxt"], plan[4], term, floor)
                    revived += len(back)
                    el, sc = q["eligible"].copy(), q["scored"].copy()
                    el[list(back)] = True
                    sc[list(back)] = True
                    r_ref = np.full(width, -1, np.int64)
                    p_ref = [np.zeros(width) for _ in range(5)]
                    m = recall_one(c["base"], q["bm25"], q["cos"], q["affinity"], el, sc,
                                   c["updated"], *plan_args(c, plan), np.empty((4, n)), r_ref,
                                   *p_ref)
                    for j in range(m):
                        if r_ref[j] in back:
                            p_ref[4][j] = REASON_REVIVED
                    ctx = f"plan {plan} query {qi} off {off} revived {sorted(back)}"
                    assert counts[qi] == m and rows[qi, :m].tolist() == r_ref[:m].tolist(), ctx
                    for p, pr in zip(parts, p_ref):
                        assert p[qi, :m].tolist() == pr[:m].tolist(), ctx
    if dormant[0].any():
        assert revived  # the cases do exercise revival


@pytest.mark.parametrize("seed", range(5))
def test_mark_dormant_against_a_plain_loop(seed):
    """``mark_dormant`` sets the code of exactly the selected rows that are dormant and leaves
    every other entry as it was."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    dormant = rng.random(n) < 0.4
    rows = rng.choice(n, int(rng.integers(0, n + 1)), replace=False).astype(np.int64)
    reason = rng.integers(0, 4, rows.shape[0]).astype(np.float64)
    want = [REASON_REVIVED if dormant[r] else x for r, x in zip(rows.tolist(), reason.tolist())]
    mark_dormant(rows, dormant, REASON_REVIVED, reason)
    assert reason.tolist() == want


@pytest.mark.parametrize("seed", range(8))
def test_archive_cues_against_a_plain_reference(seed):
    """``archive_cues`` gives every row's BM25 (as the index scores it) and cosine (as
    ``dot_scores``), a cue of -1 for dead rows, and selects the live rows whose reference cue
    strength (no shared term needed) reaches the bar: strongest first, ties by ``seq``, at
    most ``limit``."""
    from maclaw_kernels.revival import archive_cues

    rng = np.random.default_rng(seed)
    docs_rng = random.Random(seed)
    n = int(rng.integers(1, 60))
    index = Bm25Index(tantivy_index=False)
    index.add_many(list(range(n)), [zipf_doc(docs_rng, docs_rng.randint(0, 10))
                                    for _ in range(n)])
    d = 12
    matrix = rng.standard_normal((n + 2, d)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    has_vec = rng.random(n + 2) < 0.85
    alive = rng.random(n) < 0.85
    seq = rng.permutation(n).astype(np.int64)
    for case in range(6):
        terms = [docs_rng.choice(WORDS[:30]) for _ in range(docs_rng.randint(1, 4))]
        with_vec = case % 3 != 2
        query = matrix[int(rng.integers(n))].copy() if with_vec else np.zeros(0, np.float32)
        has_vector = with_vec or case == 5  # a query vector the archive cannot use
        bar, limit = float(rng.choice([0.0, 0.2, 0.4])), int(rng.integers(0, 8))
        floor = float(rng.choice([0.0, 0.5]))
        bm25, cos, cue = np.zeros(n), np.zeros(n, np.float32), np.zeros(n)
        rows = np.full(n, -1, np.int64)
        k = archive_cues(*index.query_args(terms), matrix, has_vec, query, has_vector, alive,
                         seq, 0.4, 0.6, floor, bar, limit, bm25, cos, cue, rows)
        want_bm25 = index.scores(terms, n)
        want_cos = np.zeros(n, np.float32)
        if with_vec:
            dot_scores(matrix, n, has_vec, query, want_cos)
        assert bm25.tolist() == want_bm25.tolist() and cos.tolist() == want_cos.tolist()
        idf = ref_idf_total(index, terms)
        ref = [ref_cue(float(want_bm25[r]), float(want_cos[r]), idf, 0.4, 0.6, has_vector,
                       False, floor) if alive[r] else -1.0 for r in range(n)]
        assert cue.tolist() == pytest.approx(ref, rel=1e-9, abs=1e-12)
        picked = sorted((r for r in range(n) if alive[r] and ref[r] >= bar),
                        key=lambda r: (-ref[r], seq[r]))[:limit]
        assert rows[:k].tolist() == picked, (case, terms)
