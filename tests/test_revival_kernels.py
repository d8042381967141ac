"""Cue strength and revival (docs/design.md, "Forgetting") against plain references:
``revived_masks`` against a Python loop, a batch's cue scales, and the archive
search kernel; the ranking's use of them is in ``test_recall_kernels.test_rank_one_*``."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from maclaw_fast.config import Bm25Config
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.memory.archive import ArchiveColumns, cue_strengths
from maclaw_fast.records import Entry
from maclaw_kernels import entry
from maclaw_kernels.revival import TERM_BM25, cue_strength, revived_masks
from maclaw_kernels.vectors import dot_tile
from tests.test_memory_kernels import WORDS, zipf_doc

revived_masks = entry(revived_masks)  # no CPython entry point of its own


def ref_cue(bm25, cos, idf_total, bw, cw, has_vector, needs_term=False, floor=0.0):
    if needs_term and not bm25 >= TERM_BM25:  # no telling query term: no cue, whatever the vector
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
    ids = index.term_ids(terms)
    p = index.query_postings()
    df, n_live = p.df, float(p.n_live)
    total, seen = 0.0, set()
    for t in ids.tolist():
        if t < 0 or t >= len(df) or df[t] <= 0:
            total += math.log((n_live + 0.5) / 0.5 + 1.0)
        elif t not in seen:
            seen.add(t)
            total += math.log((n_live - df[t] + 0.5) / (df[t] + 0.5) + 1.0)
    return total


@pytest.mark.parametrize("seed", range(6))
def test_cued_rows_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 120))
    bm25 = np.where(rng.random(n) < 0.4, rng.uniform(0.1, 6, n), 0.0)
    cos = rng.uniform(-0.5, 1, n).astype(np.float32)
    dormant = rng.random(n) < 0.5
    eligible = ~dormant & (rng.random(n) < 0.9)
    scored = eligible & (rng.random(n) < 0.95)
    prev, nxt = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    for a, b in zip(rng.permutation(n)[:-1], rng.permutation(n)[1:]):  # chains of links
        if rng.random() < 0.6 and prev[b] < 0 and nxt[a] < 0 and a != b:
            nxt[a], prev[b] = b, a
    for has_vector, term, floor in ((True, False, 0.0), (False, False, 0.0), (True, True, 0.0),
                                    (False, True, 0.0), (True, False, 0.71), (True, True, 0.4)):
        for hops in (0, 1, 2):
            idf, bar = float(rng.uniform(0.5, 8)), float(rng.choice([0.0, 0.2, 0.3, 0.6]))
            want = ref_revived(dormant, bm25, cos, idf, 0.4, 0.6, has_vector, bar, prev, nxt,
                               hops, term, floor)
            args = (bm25, cos, idf, 0.4, 0.6, has_vector, term, floor, bar, prev, nxt, hops,
                    eligible, scored)
            k, el, sc = revived_masks(dormant, *args)
            assert k == sum(1 for i in range(n) if dormant[i] and ref_cue(
                bm25[i], float(cos[i]), idf, 0.4, 0.6, has_vector, term, floor) >= bar)
            assert (el is eligible) == (k == 0)
            off, el_off, _ = revived_masks(np.zeros(0, np.bool_), *args)
            assert off == (k if n == 0 else 0) and el_off is eligible
            assert set(np.flatnonzero(el & ~eligible).tolist()) == want
            if term and bar > 0.0 and hops == 0:  # only rows holding a query term come back
                assert all(bm25[i] > 0 for i in want)
            assert set(np.flatnonzero(sc & ~scored).tolist()) == want
            assert (el[eligible]).all() and (sc[scored]).all()




@pytest.mark.parametrize("seed", range(3))
def test_archive_search_against_the_kernel_cue_and_a_plain_reference(seed):
    """The archive's NumPy ``cue_strengths`` gives the bits of the kernels' ``cue_strength``
    (every branch: no idf, no hit, no vector, zero weights, a floor of 1), and
    ``ArchiveColumns.search`` picks the live rows whose reference cue reaches the bar: strongest
    first, ties by the older entry, at most ``limit``, with the index's BM25 and ``dot_tile``'s
    cosines."""
    rng = np.random.default_rng(seed)
    kernel_cue = entry(cue_strength)
    n = 40
    bm25 = np.where(rng.random(n) < 0.4, 0.0, rng.random(n) * 6)
    cos = rng.uniform(-0.3, 1.0, n).astype(np.float32)
    for idf, bw, cw, has_vector, floor in [(3.0, 0.4, 0.6, True, 0.2), (0.0, 0.4, 0.6, True, 0.0),
                                           (2.0, 0.0, 0.0, True, 0.3), (2.5, 1.0, 0.0, False, 0.0),
                                           (1.5, 0.3, 0.7, True, 1.0)]:
        got = cue_strengths(bm25, cos, idf, bw, cw, has_vector, floor)
        want = [kernel_cue(bm25[i], cos[i], idf, bw, cw, has_vector, False, floor)
                for i in range(n)]
        assert got.tolist() == want
    docs_rng = random.Random(seed)
    cols = ArchiveColumns(Bm25Config())
    d = 12
    vecs = rng.standard_normal((n, d)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for i in range(n):
        text = " ".join(zipf_doc(docs_rng, docs_rng.randint(1, 10)))
        cols.add(Entry(id=f"e{i}", content=text, category="conversation_summary",
                       created_at=1.0 + i, updated_at=1.0 + i), vecs[i] if i % 7 else None)
    for i in rng.choice(n, 5, replace=False).tolist():
        cols.remove(f"e{i}")
    t = cols.table
    for case in range(6):
        terms = [docs_rng.choice(WORDS[:30]) for _ in range(docs_rng.randint(1, 4))]
        query = vecs[int(rng.integers(n))].copy() if case % 3 != 2 else None
        bar, limit = float(rng.choice([0.0, 0.2, 0.4])), int(rng.integers(1, 8))
        floor = float(rng.choice([0.0, 0.5]))
        got = cols.search(terms, query, 0.4, 0.6, bar, limit, floor)
        m = t.n_rows
        bm = cols.bm25.scores(terms, m)
        cs = np.zeros(m, np.float32)
        if query is not None:
            dot_tile(cols.vectors.matrix, m, cols.vectors.has_vec, query[None], 0, 1, cs[None])
        idf = ref_idf_total(cols.bm25, terms)
        ref = {r: ref_cue(float(bm[r]), float(cs[r]), idf, 0.4, 0.6, query is not None, False,
                          floor) for r in range(m) if t.alive[r]}
        picked = sorted((r for r in ref if ref[r] >= bar), key=lambda r: (-ref[r], t.seq[r]))
        assert [e.id for e, *_ in got] == [t.ids_of([r])[0] for r in picked[:limit]], case
        for (e, cue, b, c), r in zip(got, picked):
            assert cue == pytest.approx(ref[r], rel=1e-9, abs=1e-12)
            assert (b, c) == (float(bm[r]), float(cs[r]))