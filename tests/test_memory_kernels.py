"""Memory kernels (kernels/{bm25,vectors,topk,graph,recall,decay}.py) against plain references on
random inputs, plus the BM25 index against real tantivy and against a fresh build after random
edit sequences.

References are plain Python/NumPy written from the design (§2 BM25, §3 vectors, §4 expansion, §6
recall, §7 forgetting), never outputs of the code under test. FAISS ``IndexFlatIP`` is the oracle
for inner products, tantivy for BM25. Every ``*_batch`` (prange) variant is compared with its serial
form and the reference; one case per kernel runs on read-only input arrays.

Ordering checks tolerate ties: two rows whose reference scores are within 1e-9 may come in either
order. Inputs are quantised here and there so that exact ties (and the tie-break rules) occur.

    NUMBA_DISABLE_JIT=1 pytest tests/test_memory_kernels.py   # the pure-Python lane
"""

from __future__ import annotations

import math
import random
from collections import Counter

import faiss
import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from maclaw_kernels import entry
from maclaw_kernels.bm25 import (Postings, bm25_query, bm25_range, build_csr,
                                 length_terms, query_idf)
from maclaw_kernels.graph import propagate_reached
from maclaw_kernels.topk import top_k_desc
from maclaw_kernels.vectors import dot_tile

from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.index.vectors import VectorColumn
from maclaw_fast.memory.lifecycle import decay_pass
from maclaw_fast.text import tokenize

top_k_desc = entry(top_k_desc)  # no CPython entry point of its own

K1, B = 1.2, 0.75
NO_K = np.zeros(0)  # no documents' length terms given: the kernels compute them
TIE = 1e-9
JIT = not numba.config.DISABLE_JIT
# Without the JIT the BM25 kernels compute in float32 (see test_bm25_kernel_is_float64): the
# pure-Python lane compares BM25 at float32 precision, the JIT lane at float64.
BM25_RTOL = 1e-12 if JIT else 1e-6
MIRROR_REL = 1e-9 if JIT else 1e-6


def recency_knobs(n, decay=0.005, w_rec=1.0, w_imp=0.7):
    """decay, weights, a fresh recency memo (key, updated_at seen, factors) and the log table:
    the kernels' recency arguments after ``now``."""
    return (decay, w_rec, w_imp, np.full(2, np.nan), np.full(n, np.nan), np.zeros(n),
            np.log1p(np.arange(64.0)))


def ro(*arrays):
    """Read-only copies (the kernels must accept non-writeable inputs)."""
    out = []
    for a in arrays:
        a = np.array(a, copy=True)
        a.flags.writeable = False
        out.append(a)
    return out if len(out) > 1 else out[0]


def assert_order(got, ref_order, ref_score, ctx=""):
    """``got`` equals ``ref_order`` up to swaps of rows whose reference scores tie (≤ 1e-9)."""
    got = [int(x) for x in got]
    ref_order = [int(x) for x in ref_order]
    assert len(got) == len(ref_order), f"{ctx}: {got} vs {ref_order}"
    for i, (g, r) in enumerate(zip(got, ref_order)):
        if g != r:
            assert abs(ref_score(g) - ref_score(r)) <= TIE * max(1.0, abs(ref_score(r))), \
                f"{ctx}: position {i}: {g} ({ref_score(g)}) vs {r} ({ref_score(r)})\n" \
                f"got {got}\nref {ref_order}"
    assert len(set(got)) == len(got)


# ================================================================== fieldnorm / BM25 reference
def fieldnorm_values():
    """tantivy fieldnorm/code.rs: 0–23 exact, then 3-bit mantissa floats offset by 24."""
    vals = list(range(24))
    for x in range(256 - 24):
        e, m = divmod(x, 8)
        vals.append(24 + (m if e == 0 else (8 + m) << (e - 1)))
    return vals


FIELDNORMS = fieldnorm_values()


def fieldnorm(n):
    return max(v for v in FIELDNORMS if v <= n)


def ref_bm25(docs: dict[int, list[str]], q_tokens: list[str]) -> dict[int, float]:
    """design §2 over a key → tokens corpus; hits only."""
    n = len(docs)
    if n == 0:
        return {}
    avgdl = sum(len(t) for t in docs.values()) / n
    df = Counter(tok for toks in docs.values() for tok in set(toks))
    out = {}
    for key, toks in docs.items():
        tf = Counter(toks)
        dl = fieldnorm(len(toks))
        s = 0.0
        for tok in dict.fromkeys(q_tokens):
            if tf[tok]:
                idf = math.log((n - df[tok] + 0.5) / (df[tok] + 0.5) + 1.0)
                s += idf * tf[tok] * (K1 + 1) / (tf[tok] + K1 * (1 - B + B * dl / avgdl))
        if s > 0:
            out[key] = s
    return out


# ================================================================== kernels/bm25.py
def random_postings(rng, n_terms, n_docs):
    terms, docs, tfs = [], [], []
    for d in rng.permutation(n_docs):  # docs arrive in any order
        for t in rng.choice(n_terms, size=rng.integers(0, min(n_terms, 12) + 1), replace=False):
            terms.append(int(t))
            docs.append(int(d))
            tfs.append(float(rng.integers(1, 6)))
    return (np.array(terms, np.int64), np.array(docs, np.int32), np.array(tfs, np.float32))


def ref_build_csr(n_terms, terms, docs, tfs):
    by_term = [[] for _ in range(n_terms)]
    for t, d, f in zip(terms.tolist(), docs.tolist(), tfs.tolist()):
        by_term[t].append((d, f))  # input order within a term
    indptr = [0]
    for lst in by_term:
        indptr.append(indptr[-1] + len(lst))
    return indptr, [d for lst in by_term for d, _ in lst], [f for lst in by_term for _, f in lst]


def ref_bm25_scores(term_ids, idf, terms, docs, tfs, doc_norm, doc_live, doc_key, avgdl, out):
    out = [float(x) for x in out]
    doc_norm, doc_live, doc_key = doc_norm.tolist(), doc_live.tolist(), doc_key.tolist()
    n_terms_known = set(terms.tolist())
    for t, w in zip(term_ids.tolist(), idf.tolist()):
        if t < 0 or t not in n_terms_known:
            continue
        for tt, d, f in zip(terms.tolist(), docs.tolist(), tfs.tolist()):
            if tt == t and doc_live[d]:
                out[doc_key[d]] += w * (K1 + 1) * f / (f + K1 * (1 - B + B * doc_norm[d] / avgdl))
    return out


def bm25_case(seed):
    rng = np.random.default_rng(seed)
    n_terms, n_docs = int(rng.integers(1, 40)), int(rng.integers(1, 60))
    terms, docs, tfs = random_postings(rng, n_terms, n_docs)
    doc_norm = np.array([fieldnorm(int(x)) for x in rng.integers(0, 300, n_docs)], np.float32)
    doc_live = rng.random(n_docs) < 0.8
    n_keys = n_docs + int(rng.integers(0, 10))
    doc_key = rng.permutation(n_keys)[:n_docs].astype(np.int64)
    avgdl = float(rng.uniform(1, 100))
    return rng, n_terms, terms, docs, tfs, doc_norm, doc_live, doc_key, n_keys, avgdl


def query_terms(rng, n_terms):
    ids = list(rng.choice(n_terms + 3, size=int(rng.integers(0, 6)), replace=False) - 1)
    ids = np.array(ids, np.int32)  # -1 and ids ≥ n_terms must be skipped
    return ids, rng.uniform(0.01, 5, ids.size)


@pytest.mark.parametrize("seed", range(25))
def test_build_csr_matches_reference(seed):
    _rng, n_terms, terms, docs, tfs, *_ = bm25_case(seed)
    indptr, pd, pt = build_csr(n_terms, terms, docs, tfs)
    r_indptr, r_docs, r_tfs = ref_build_csr(n_terms, terms, docs, tfs)
    assert indptr.tolist() == r_indptr
    assert pd.tolist() == r_docs and pt.tolist() == r_tfs


def postings_case(seed):
    """A random index as :func:`bm25_query` reads it (documents from ``main_upto`` on in the
    forward lists only) and the COO postings the reference scores from."""
    rng, n_terms, terms, docs, tfs, doc_norm, doc_live, doc_key, n_keys, avgdl = bm25_case(seed)
    n_docs = doc_norm.size
    main_upto = int(rng.integers(0, n_docs + 1))
    in_main = docs < main_upto
    indptr, pd, pt = build_csr(n_terms, terms[in_main], docs[in_main], tfs[in_main])
    order = np.lexsort((terms, docs))
    fwd_terms, fwd_tfs = terms[order].astype(np.int32), tfs[order]
    doc_nterms = np.bincount(docs, minlength=n_docs).astype(np.int32)
    doc_start = (np.cumsum(doc_nterms) - doc_nterms).astype(np.int64)
    df = np.bincount(terms, minlength=n_terms + 2).astype(np.int64)
    n_live = int(rng.integers(1, 80))
    p = Postings(df, n_live, indptr, pd, pt, main_upto, n_docs, doc_start, doc_nterms,
                 fwd_terms, fwd_tfs, doc_norm, doc_live, doc_key, K1, B, avgdl,
                 np.zeros(n_terms + 8))
    return rng, p, (terms, docs, tfs), n_keys


def ref_query(raw, p, coo, out0):
    """The reference BM25 of one query given as raw vocabulary ids."""
    df, n_live = p.df, p.n_live
    uniq = [t for t in dict.fromkeys(raw.tolist()) if 0 <= t < df.size and df[t] > 0]
    idf = np.array([np.log((n_live - df[t] + 0.5) / (df[t] + 0.5) + 1.0) for t in uniq])
    return uniq, ref_bm25_scores(np.array(uniq, np.int64), idf, *coo, p.doc_norm, p.doc_live,
                                 p.doc_key, p.avgdl, out0)


@pytest.mark.parametrize("seed", range(25))
def test_bm25_query_matches_reference(seed):
    """One query end to end: duplicates, unknown ids and df = 0 terms skipped, idf from df, docs
    below ``main_upto`` from the CSR and the rest from the forward lists; the scratch comes back
    zeroed."""
    rng, p, coo, n_keys = postings_case(seed)
    raw = rng.integers(-1, p.df.size, int(rng.integers(0, 9)))  # repeats and unknowns
    out0 = rng.uniform(0, 1, n_keys)  # the kernel adds into ``out``
    uniq, ref = ref_query(raw, p, coo, out0)
    out = out0.copy()
    if seed % 3 == 0:  # read-only inputs are accepted
        p = p._replace(post_docs=ro(p.post_docs), doc_norm=ro(p.doc_norm))
    assert bm25_query(raw.astype(np.int64), p, out, NO_K) == len(uniq)
    np.testing.assert_allclose(out, ref, rtol=BM25_RTOL, atol=1e-12)
    assert not p.term_weight.any()


@pytest.mark.parametrize("seed", range(20))
def test_bm25_ranges_equal_one_pass(seed):
    """Split into document ranges (postings sorted by doc, as the index builds them), the scores
    are bit-identical to one pass's, tail included."""
    rng, n_terms, terms, docs, tfs, doc_norm, doc_live, doc_key, n_keys, avgdl = bm25_case(seed)
    n_docs = doc_norm.size
    order = np.lexsort((terms, docs))  # by doc, so each term's postings come out doc-sorted
    terms, docs, tfs = terms[order], docs[order], tfs[order]
    main_upto = int(rng.integers(0, n_docs + 1))
    in_main = docs < main_upto
    indptr, pd, pt = build_csr(n_terms, terms[in_main], docs[in_main], tfs[in_main])
    doc_nterms = np.bincount(docs, minlength=n_docs).astype(np.int32)
    doc_start = (np.cumsum(doc_nterms) - doc_nterms).astype(np.int64)
    df = np.bincount(terms, minlength=n_terms).astype(np.int64)
    raw = rng.integers(-1, n_terms + 1, int(rng.integers(0, 9))).astype(np.int64)
    args = (df, n_docs, indptr, pd, pt, main_upto, n_docs, doc_start, doc_nterms,
            terms.astype(np.int32), tfs, doc_norm, doc_live, doc_key, K1, B, avgdl)
    want = np.zeros(n_keys)
    got_serial = bm25_query(raw, Postings(*args, np.zeros(n_terms + 2)), want, NO_K)
    for parts in (1, 2, 3, 7):
        out = np.zeros(n_keys)
        scratch = np.zeros(n_terms + 2)
        p = Postings(*args, scratch)
        uniq, idf = query_idf(raw, df, n_docs, scratch)
        assert uniq.shape[0] == got_serial
        for i in range(parts):
            bm25_range(uniq, idf, p, NO_K, out, i * n_docs // parts, (i + 1) * n_docs // parts)
        assert out.tolist() == want.tolist()
    # every document's length term made beforehand (a recall plan's): the same bits again
    known = np.zeros(n_keys)
    assert bm25_query(raw, Postings(*args, np.zeros(n_terms + 2)), known, length_terms(p)) \
        == got_serial
    assert known.tobytes() == want.tobytes()


def test_large_index_scores_in_ranges_as_one_pass(monkeypatch):
    """An index over the parallel threshold scores document ranges on the thread pool: the
    same bits as one pass, and the term scratch is left zeroed."""
    import maclaw_fast.index.bm25 as bm25_module

    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    idx = Bm25Index()
    for k in range(300):
        idx.add(k, list(rng.choice(words, int(rng.integers(1, 12)))))
    query = ["w1", "w7", "w7", "nope", "w33"]
    serial = idx.scores(query, 300)
    assert not idx.is_large
    monkeypatch.setattr(bm25_module, "PARALLEL_POSTINGS", 1)
    assert idx.is_large
    assert idx.scores(query, 300).tolist() == serial.tolist()
    assert not idx.query_postings().term_weight.any()


def test_bm25_kernel_is_float64():
    indptr, pd, pt = build_csr(1, np.array([0], np.int64), np.array([0], np.int32),
                               np.array([3.0], np.float32))
    out = np.zeros(1)
    p = Postings(np.ones(1, np.int64), 1, indptr, pd, pt, 1, 1, np.zeros(1, np.int64),
                 np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32),
                 np.array([7.0], np.float32), np.ones(1, np.bool_), np.zeros(1, np.int64), K1, B,
                 3.0, np.zeros(1))
    bm25_range(np.array([0], np.int64), np.array([0.1]), p, NO_K, out, np.int64(0), np.int64(1))
    want = 0.1 * (K1 + 1) * 3.0 / (3.0 + K1 * (1 - B + B * 7.0 / 3.0))
    assert out[0] == pytest.approx(want, rel=1e-13)


# ================================================================== BM25 index vs tantivy
WORDS = [f"w{i}" for i in range(400)] + ["部署", "脚本", "问题", "数据库", "查询", "缓存", "记忆", "服务器"]


def zipf_doc(rng: random.Random, n: int) -> list[str]:
    return [WORDS[min(int(rng.paretovariate(0.9)) - 1, len(WORDS) - 1)] if rng.random() < 0.7
            else rng.choice(WORDS) for _ in range(n)]


def doc_len(rng: random.Random) -> int:
    r = rng.random()
    return rng.randint(1, 40) if r < 0.3 else rng.randint(41, 200) if r < 0.8 \
        else rng.randint(201, 1500)


@pytest.mark.parametrize("seed", range(4))
def test_bm25_mirror_matches_tantivy(seed):
    """The numba mirror, the plain reference (with the one-byte length encoding) and real
    tantivy agree to 1e-4 on corpora with documents far past 40 tokens."""
    rng = random.Random(seed)
    idx = Bm25Index()
    docs = {}
    for key in rng.sample(range(400), rng.randint(30, 150)):
        toks = zipf_doc(rng, doc_len(rng))
        if rng.random() < 0.2:  # real tokenizer output too (Chinese segmentation)
            toks = tokenize("部署脚本出了什么问题 " + " ".join(toks[:60]))
        docs[key] = toks
        idx.add(key, toks)
    n_keys = 400
    for _ in range(25):
        q = [rng.choice(WORDS) if rng.random() < 0.5 else WORDS[rng.randint(0, 20)]
             for _ in range(rng.randint(1, 4))] + (["nosuchtoken"] if rng.random() < 0.2 else [])
        ref = ref_bm25(docs, q)
        tv = idx.tantivy_scores(q)
        mirror = idx.scores(q, n_keys)
        assert set(tv) == set(ref), q
        for k, s in ref.items():
            assert tv[k] == pytest.approx(s, rel=1e-4), (q, k)
            assert mirror[k] == pytest.approx(s, rel=MIRROR_REL), (q, k)
        assert np.count_nonzero(mirror) == len(ref)
    lengths = {fieldnorm(len(t)) != len(t) for t in docs.values()}
    assert True in lengths  # the length encoding really mattered


def test_fieldnorm_table_against_tantivy():
    """Single-term documents of length L: tantivy's score pins the encoded length."""
    idx = Bm25Index()
    lengths = list(range(1, 45)) + [47, 55, 61, 100, 130, 700, 1000, 2049]
    for key, n in enumerate(lengths):
        idx.add(key, ["x"] + ["pad"] * (n - 1))
    ref = ref_bm25({k: ["x"] + ["pad"] * (n - 1) for k, n in enumerate(lengths)}, ["x"])
    tv = idx.tantivy_scores(["x"])
    for k in ref:
        assert tv[k] == pytest.approx(ref[k], rel=1e-5), lengths[k]


def _fresh(docs: dict[int, list[str]]) -> Bm25Index:
    idx = Bm25Index(tantivy_index=False)
    for key in sorted(docs):
        idx.add(key, docs[key])
    return idx


def run_edits(seed, n_ops, p_delete, p_update, long_docs, checkpoints=3, counters=None):
    rng = random.Random(seed)
    idx = Bm25Index(tantivy_index=False)
    docs: dict[int, list[str]] = {}
    check_at = set(rng.sample(range(n_ops), min(checkpoints, n_ops))) | {n_ops - 1}
    for step in range(n_ops):
        r = rng.random()
        if docs and r < p_delete:
            key = rng.choice(list(docs))
            idx.remove(key)
            del docs[key]
        elif docs and r < p_delete + p_update:
            key = rng.choice(list(docs))  # add with the same key = update
            docs[key] = zipf_doc(rng, doc_len(rng) if long_docs else rng.randint(0, 30))
            idx.add(key, docs[key])
        else:
            key = rng.randrange(1000)
            docs[key] = zipf_doc(rng, doc_len(rng) if long_docs else rng.randint(0, 30))
            idx.add(key, docs[key])
        if rng.random() < 0.02:
            idx.remove(rng.randrange(1000, 1100))  # unknown keys are ignored
        if step in check_at:
            compare_with_fresh(idx, docs, rng)
    return idx, docs


def compare_with_fresh(idx, docs, rng):
    fresh = _fresh(docs)
    n_keys = 1000
    qs = [[rng.choice(WORDS[:60]) for _ in range(rng.randint(1, 4))] for _ in range(6)] + [[]]
    batch = idx.scores_batch(qs, n_keys)
    fbatch = fresh.scores_batch(qs, n_keys)
    for qi, q in enumerate(qs):
        got = idx.scores(q, n_keys)
        np.testing.assert_allclose(got, fresh.scores(q, n_keys), rtol=1e-12, atol=0)
        np.testing.assert_allclose(batch[qi], got, rtol=1e-12, atol=0)
        np.testing.assert_allclose(fbatch[qi], got, rtol=1e-12, atol=0)
        ref = ref_bm25(docs, q)
        assert set(np.flatnonzero(got).tolist()) == set(ref)
        for k, s in ref.items():
            assert got[k] == pytest.approx(s, rel=MIRROR_REL)
    assert len(idx) == len(docs)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 400),
       p_delete=st.floats(0, 0.5), p_update=st.floats(0, 0.4), long_docs=st.booleans())
def test_incremental_bm25_equals_fresh_build(seed, n_ops, p_delete, p_update, long_docs):
    run_edits(seed, n_ops, p_delete, p_update, long_docs)


def test_incremental_bm25_rebuild_and_compaction_paths(monkeypatch):
    """Enough edits to fold the delta into the main CSR and to compact dead docs, with scores
    equal to a fresh build at checkpoints in between."""
    calls = Counter()
    for name in ("_rebuild_main", "_compact"):
        orig = getattr(Bm25Index, name)

        def spy(self, _orig=orig, _name=name):
            calls[_name] += 1
            return _orig(self)
        monkeypatch.setattr(Bm25Index, name, spy)
    run_edits(7, 700, 0.3, 0.2, True, checkpoints=8)
    assert calls["_rebuild_main"] >= 2 and calls["_compact"] >= 1, calls


def test_query_arguments_follow_every_edit():
    """``query_args`` keeps its arrays and scalars between queries: after every kind of edit
    (add, update, bulk adds by tokens and by ids, remove, clear, rebuilds and compaction) the
    next query scores as a fresh build does."""
    rng = random.Random(11)
    idx = Bm25Index(tantivy_index=False)
    docs: dict[int, list[str]] = {}
    for step in range(400):
        r = rng.random()
        if docs and r < 0.3:
            key = rng.choice(list(docs))
            idx.remove(key)
            del docs[key]
        elif r < 0.45:
            new = {rng.randrange(500): zipf_doc(rng, rng.randint(0, 12)) for _ in range(3)}
            new = {k: v for k, v in new.items() if k not in docs}
            if rng.random() < 0.5:
                idx.add_many(list(new), list(new.values()))
            else:
                ids = idx.vocab.ids([t for toks in new.values() for t in toks], add=True)
                idx.add_many_ids(list(new), ids, [len(v) for v in new.values()])
            docs.update(new)
        elif r < 0.46:
            idx.clear()
            docs.clear()
        else:
            key = rng.randrange(500)
            docs[key] = zipf_doc(rng, rng.randint(0, 12))
            idx.add(key, docs[key])
        q = [rng.choice(WORDS[:40]) for _ in range(rng.randint(1, 3))]
        np.testing.assert_allclose(idx.scores(q, 500), _fresh(docs).scores(q, 500), rtol=1e-12,
                                   atol=0, err_msg=f"step {step}")


def test_tantivy_after_edits_matches_reference():
    """tantivy (the index of record) after adds, updates and deletes: scored against the live
    set only."""
    rng = random.Random(5)
    idx = Bm25Index()
    docs = {}
    for _ in range(120):
        key = rng.randrange(60)
        if key in docs and rng.random() < 0.4:
            idx.remove(key)
            del docs[key]
        else:
            docs[key] = zipf_doc(rng, rng.randint(1, 80))
            idx.add(key, docs[key])
    for _ in range(10):
        q = [rng.choice(WORDS[:30]) for _ in range(2)]
        ref = ref_bm25(docs, q)
        tv = idx.tantivy_scores(q)
        assert set(tv) == set(ref)
        for k, s in ref.items():
            assert tv[k] == pytest.approx(s, rel=1e-4), (q, k)


# ================================================================== kernels/vectors.py
def unit_rows(rng, n, d):
    m = rng.normal(size=(n, d)).astype(np.float32)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m.astype(np.float32)


def faiss_scores(matrix, n_rows, has_vec, queries):
    """Inner products from a real FAISS IndexFlatIP over the rows that have a vector."""
    rows = np.flatnonzero(has_vec[:n_rows])
    out = np.zeros((queries.shape[0], n_rows), np.float32)
    if rows.size == 0:
        return out
    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(np.ascontiguousarray(matrix[rows]))
    dist, lab = index.search(np.ascontiguousarray(queries), rows.size)
    for q in range(queries.shape[0]):
        out[q, rows[lab[q]]] = dist[q]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_dot_tile_of_one_query_matches_faiss_and_numpy(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.choice([4, 16, 384]))
    cap = int(rng.integers(1, 300))
    n_rows = int(rng.integers(0, cap + 1))
    matrix = unit_rows(rng, cap, d)
    has_vec = rng.random(cap) < 0.85
    queries = unit_rows(rng, int(rng.integers(1, 9)), d)
    fa = faiss_scores(matrix, n_rows, has_vec, queries)
    ref = (queries.astype(np.float64) @ matrix[:n_rows].astype(np.float64).T) * has_vec[:n_rows]
    np.testing.assert_allclose(fa, ref, atol=2e-6)  # the oracle agrees with plain NumPy
    m_in, h_in = (ro(matrix, has_vec) if seed % 4 == 0 else (matrix, has_vec))
    for q in range(queries.shape[0]):
        out = np.full(n_rows, np.nan, np.float32)
        query = ro(queries[q]) if seed % 4 == 0 else queries[q]
        dot_tile(m_in, n_rows, h_in, query[None], 0, 1, out[None])
        np.testing.assert_allclose(out, fa[q], atol=2e-6)
    col = VectorColumn(d)  # the engine's vector column (rows arrive normalised), both paths
    for r in range(cap):
        col.set(r, matrix[r] if has_vec[r] else None)
    one = col.scores(queries[0], n_rows)
    np.testing.assert_allclose(one, fa[0], atol=2e-6)
    import maclaw_fast.index.vectors as vectors_module

    saved = vectors_module.PARALLEL_ELEMENTS
    vectors_module.PARALLEL_ELEMENTS = 1  # row ranges on the thread pool: the same bits
    try:
        assert col.scores(queries[0], n_rows).tolist() == one.tolist()
    finally:
        vectors_module.PARALLEL_ELEMENTS = saved


# ================================================================== kernels/topk.py
def ref_top_k(score, access, seq, mask, k):
    rows = [i for i in range(len(score)) if mask[i]]
    rows.sort(key=lambda i: (-score[i], -access[i], seq[i]))  # stable: index breaks full ties
    return rows[: max(k, 0)]


@pytest.mark.parametrize("seed", range(40))
def test_top_k_desc_matches_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 120))
    score = rng.integers(0, 6, n).astype(np.float64) / 2  # many exact ties
    score[rng.random(n) < 0.1] = -np.inf
    if seed % 2:
        score = score + rng.random(n)
    access = rng.integers(1, 4, n).astype(np.int64)
    seq = rng.permutation(n).astype(np.int64)
    if seed % 7 == 0:
        seq[:] = 0  # full ties: the lower row wins
    mask = rng.random(n) < 0.8
    for k in (1, 5, 20, n, n + 3):
        if k == 0:
            continue  # see test_top_k_desc_k_zero
        args = (score, access, seq, mask)
        if seed % 5 == 0:
            args = ro(*args)
        got = top_k_desc(*args, k)
        assert got.tolist() == ref_top_k(score, access, seq, mask, k), (k, seed)


@pytest.mark.parametrize("shape", ["rising", "clustered", "outlier", "uniform"])
def test_top_k_desc_matches_sort_on_large_inputs(shape):
    """Inputs where the bucket threshold decides: thousands of rows, scores rising with the row,
    scores that differ in the last bits of a large value, one far outlier."""
    rng = np.random.default_rng(len(shape))
    n = 3000
    score = {"rising": np.sort(rng.random(n)), "uniform": rng.random(n),
             "clustered": 1e6 + rng.integers(0, 50, n) * np.spacing(1e6),
             "outlier": np.concatenate([rng.random(n - 1), [1e9]])}[shape]
    access = rng.integers(1, 4, n).astype(np.int64)
    seq = rng.permutation(n).astype(np.int64)
    mask = rng.random(n) < 0.9
    for k in (1, 28, 64, 500):
        assert top_k_desc(score, access, seq, mask, k).tolist() == \
            ref_top_k(score, access, seq, mask, k), (shape, k)


_TOPK_ZERO = """
import numpy as np
from maclaw_kernels import entry
from maclaw_kernels.topk import top_k_desc
top_k_desc = entry(top_k_desc)
from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.memory.store import MemoryStore
for _ in range(3):
    assert top_k_desc(np.array([1.0, 2.0]), np.ones(2, np.int64), np.arange(2),
                      np.ones(2, np.bool_), 0).tolist() == []
store = MemoryStore.in_memory(embedder=None,
                              config=MemoryConfig(recall=RecallConfig(graph_seeds=0)))
for i in range(50):
    store.save(f"note {i} deploy", category="preference")
for _ in range(50):
    hits = store.recall("deploy", reinforce=False)
assert len(hits) == 20 and all(h.breakdown.graph == 0 for h in hits)
print("ok")
"""


def test_top_k_desc_k_zero():
    """Run in a subprocess: the bug crashes the interpreter."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _TOPK_ZERO], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode,
                                                                   proc.stderr[-2000:])


# ================================================================== kernels/graph.py
def random_graph(rng, n, width=5):
    nbr = np.full((n, width), -1, np.int64)
    w = np.zeros((n, width))
    for i in range(n):
        for s in range(width):
            if n and rng.random() < 0.6:
                nbr[i, s] = rng.integers(0, n)
                w[i, s] = rng.choice([rng.uniform(0, 1), 0.5, 1.0])
    return nbr, w


def ref_propagate(seeds, seed_values, nbr, edge_w, hops, factor, eligible):
    """Max over walks of ≤ hops edges from a seed, entering only eligible non-seed nodes, each
    edge multiplying by ``edge · factor`` (dynamic programming over walk length)."""
    n = nbr.shape[0]
    seed_set = {int(s) for s in seeds}
    best = [0.0] * n
    layer = {}
    for s, v in zip(seeds.tolist(), seed_values.tolist()):
        layer[s] = max(layer.get(s, 0.0), float(v))
    for _ in range(hops):
        nxt = {}
        for node, val in layer.items():
            for slot in range(nbr.shape[1]):
                t = int(nbr[node, slot])
                if t < 0 or t in seed_set or not eligible[t]:
                    continue
                v = val * edge_w[node, slot] * factor
                if v > nxt.get(t, 0.0):
                    nxt[t] = v
        for t, v in nxt.items():
            best[t] = max(best[t], v)
        layer = nxt
    return best


@pytest.mark.parametrize("seed", range(40))
def test_propagate_relevance_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    nbr, w = random_graph(rng, n)
    eligible = rng.random(n) < 0.8
    seeds = rng.choice(n, size=int(rng.integers(0, min(n, 6) + 1)), replace=False)
    seeds = seeds.astype(np.int64)
    vals = rng.uniform(0, 4, seeds.size)
    for hops in (0, 1, 2, 3):
        for factor in (0.5, 0.9):
            args = (seeds, vals, nbr, w, hops, factor, eligible)
            if seed % 5 == 0:
                args = (ro(seeds), ro(vals), ro(nbr), ro(w), hops, factor, ro(eligible))
            got = propagate_reached(*args)[0]
            ref = ref_propagate(seeds, vals, nbr, w, hops, factor, eligible)
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0, err_msg=f"hops {hops}")
            best, reached = propagate_reached(*args)
            assert best.tolist() == got.tolist()
            assert sorted(reached.tolist()) == np.flatnonzero(np.asarray(ref) > 0).tolist()


# ================================================================== kernels/decay.py
def ref_decay(strength, updated, exempt, active, now, rate, threshold):
    out_s, out_d = [], []
    for s, u, ex, ac in zip(strength, updated, exempt, active):
        if ex or not ac:
            out_s.append(s)
            out_d.append(False)
            continue
        cur = 0.0 if s <= 0 else s * math.exp(-rate * max(now - u, 0.0) / 3600)
        if cur < threshold:
            out_s.append(cur)
            out_d.append(True)
        else:
            out_s.append(s)
            out_d.append(False)
    return out_s, out_d


@pytest.mark.parametrize("seed", range(15))
def test_decay_pass_and_batch_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 500))
    now = 1.7e9
    strength = rng.choice([0.0, -1.0, 0.05, 1.0, 2.0, 5.0], n) * (1 + rng.random(n) * (seed % 2))
    updated = now - rng.uniform(-3600, 3e6, n)
    exempt = rng.random(n) < 0.1
    active = rng.random(n) < 0.85
    ref_s, ref_d = ref_decay(strength, updated, exempt, active, now, 0.003, 0.1)
    out_s, out_d = np.full(n, np.nan), np.ones(n, np.bool_)
    args = (strength, updated, exempt, active)
    if seed % 4 == 0:
        args = ro(*args)
    count = decay_pass(*args, now, 0.003, 0.1, out_s, out_d)
    np.testing.assert_allclose(out_s, ref_s, rtol=1e-12, atol=0)
    assert out_d.tolist() == ref_d and count == sum(ref_d)


def test_decay_spec_examples():
    """design §15: strength 1.0 after 336 h → 0.3649 (stays active); after 768 h → dormant;
    self identity (exempt) at any age stays active."""
    now = 1.7e9
    upd = np.array([now - 336 * 3600, now - 768 * 3600, now - 5000 * 3600])
    out_s, out_d = np.empty(3), np.empty(3, np.bool_)
    decay_pass(np.ones(3), upd, np.array([False, False, True]), np.ones(3, np.bool_), now, 0.003,
               0.1, out_s, out_d)
    assert out_d.tolist() == [False, True, False]
    assert out_s[0] == 1.0 and round(1.0 * math.exp(-0.003 * 336), 4) == 0.3649
    assert out_s[1] == pytest.approx(math.exp(-0.003 * 768))


def unit_vector(rng, d: int) -> np.ndarray:
    v = rng.standard_normal(d).astype(np.float32)
    return v / np.linalg.norm(v)


