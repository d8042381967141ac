"""The thread prior against plain-Python references on random inputs: thread labels from the
conversation links, the vector sums' lengths, BM25 of threads as documents (the threads'
postings built from the rows' CSR postings plus a forward-listed tail), and the per-row prior."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from maclaw_fast.memory.thread_prior import thread_postings
from maclaw_kernels.bm25 import Postings, bm25_query, build_csr
from maclaw_kernels.thread_prior import thread_labels, thread_prior, thread_vector_norms


def random_links(rng: random.Random, n: int) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Rows cut into random chains (in a shuffled row order); returns prev, next, the chains."""
    order = list(range(n))
    rng.shuffle(order)
    chains, i = [], 0
    while i < n:
        k = rng.randint(1, 6)
        chains.append(order[i:i + k])
        i += k
    prev = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    for c in chains:
        for a, b in zip(c, c[1:]):
            nxt[a], prev[b] = b, a
    return prev, nxt, chains


@pytest.mark.parametrize("seed", range(20))
def test_labels_group_each_chain(seed):
    rng = random.Random(seed)
    n = rng.randint(0, 60)
    prev, nxt, chains = random_links(rng, n)
    out = np.empty(n, np.int64)
    k = thread_labels(prev, nxt, out)
    assert k == len(chains)
    for c in chains:
        assert len({int(out[r]) for r in c}) == 1
    assert len({int(out[c[0]]) for c in chains}) == len(chains)
    # labels in the order of each thread's first row
    firsts = sorted(min(c) for c in chains)
    assert [int(out[r]) for r in firsts] == list(range(len(chains)))


@pytest.mark.parametrize("seed", range(10))
def test_vector_norms(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 40)), 5
    matrix = rng.normal(size=(n, d)).astype(np.float32)
    has_vec = rng.random(n) < 0.8
    member = rng.random(n) < 0.7
    thread_of = rng.integers(0, 6, n).astype(np.int64)
    out = np.empty(6)
    thread_vector_norms(matrix, has_vec, member, thread_of, 6, out)
    for t in range(6):
        total = [0.0] * d
        for i in range(n):
            if member[i] and has_vec[i] and thread_of[i] == t:
                total = [a + float(x) for a, x in zip(total, matrix[i])]
        assert out[t] == pytest.approx(math.sqrt(sum(x * x for x in total)), rel=1e-9, abs=1e-12)


def _index(rng: random.Random, n_rows: int, vocab: int):
    """Random documents (one per row, in a shuffled doc order, some dead) as the BM25 index's
    arrays: the first ``main_upto`` docs in CSR postings, the rest forward-listed."""
    docs = [Counter(rng.randrange(vocab) for _ in range(rng.randint(0, 8))) for _ in range(n_rows)]
    doc_key = np.array(rng.sample(range(n_rows), n_rows), np.int64)  # doc -> row
    live = np.array([rng.random() < 0.9 for _ in range(n_rows)])
    norm = np.array([float(sum(docs[d].values())) for d in range(n_rows)], np.float32)
    main_upto = rng.randint(0, n_rows)
    coo = [(t, d, tf) for d in range(main_upto) for t, tf in docs[d].items()]
    # the CSR covers the terms seen up to its last rebuild; the tail may hold newer ones
    n_main_terms = max([c[0] for c in coo], default=-1) + 1 if rng.random() < 0.5 else vocab
    indptr, post_docs, post_tfs = build_csr(n_main_terms, np.array([c[0] for c in coo], np.int32),
                                            np.array([c[1] for c in coo], np.int32),
                                            np.array([c[2] for c in coo], np.float32))
    start, nterms, fterms, ftfs = [], [], [], []
    for d in range(n_rows):
        start.append(len(fterms))
        nterms.append(len(docs[d]))
        for t, tf in docs[d].items():
            fterms.append(t)
            ftfs.append(tf)
    df = np.zeros(vocab, np.int64)
    for d in range(n_rows):
        if live[d]:
            for t in docs[d]:
                df[t] += 1
    arrays = (df, indptr, post_docs, post_tfs, main_upto, n_rows, np.array(start, np.int64),
              np.array(nterms, np.int32), np.array(fterms, np.int32),
              np.array(ftfs, np.float32), norm, live, doc_key)
    return docs, doc_key, live, norm, arrays


def ref_thread_bm25(q, docs, doc_key, live, norm, thread_of, member, n_threads, k1, b):
    groups: dict[int, Counter] = {}
    length = [0.0] * n_threads
    has = [False] * n_threads
    for d, c in enumerate(docs):
        r = int(doc_key[d])
        if live[d] and member[r]:
            t = int(thread_of[r])
            groups.setdefault(t, Counter()).update(c)
            if norm[d] > 0:
                length[t] += float(norm[d])
                has[t] = True
    n = sum(has)
    out = [0.0] * n_threads
    if n == 0:
        return out
    avg = sum(length[t] for t in range(n_threads) if has[t]) / n
    for term in dict.fromkeys(x for x in q if x >= 0):
        df = sum(1 for g in groups.values() if g[term] > 0)
        if df == 0:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
        for t, g in groups.items():
            x = g[term]
            if x:
                out[t] += idf * x * (k1 + 1) / (x + k1 * (1 - b + b * length[t] / avg))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_thread_bm25_matches_reference(seed):
    rng = random.Random(seed)
    n_rows, vocab = rng.randint(1, 50), rng.randint(2, 12)
    docs, doc_key, live, norm, arrays = _index(rng, n_rows, vocab)
    n_threads = rng.randint(1, 8)
    thread_of = np.array([rng.randrange(n_threads) for _ in range(n_rows)], np.int64)
    member = np.array([rng.random() < 0.8 for _ in range(n_rows)])
    q = np.array([rng.randrange(-1, vocab) for _ in range(rng.randint(0, 5))], np.int64)
    k1, b = rng.uniform(0.5, 2.0), rng.uniform(0.0, 1.0)
    out = np.full(n_threads, np.nan)
    df, indptr, post_docs, post_tfs, main_upto, n_docs, start, nterms, fterms, ftfs, norm_, \
        live_, key = arrays
    postings = Postings(df, int(live_.sum()), indptr, post_docs, post_tfs, main_upto, n_docs,
                        start, nterms, fterms, ftfs, norm_, live_, key, 1.2, 0.75, 1.0,
                        np.zeros(max(len(df), 1)))
    out[:] = 0.0
    bm25_query(q, thread_postings(postings, thread_of, member, n_threads, k1, b), out, np.zeros(0))
    expected = ref_thread_bm25(q.tolist(), docs, doc_key, live, norm, thread_of, member,
                               n_threads, k1, b)
    assert out.tolist() == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_prior_matches_reference(seed):
    rng = random.Random(seed)
    n, n_threads = rng.randint(1, 40), rng.randint(1, 7)
    thread_of = np.array([rng.randrange(n_threads) for _ in range(n)], np.int64)
    member = np.array([rng.random() < 0.8 for _ in range(n)])
    has_vec = np.array([rng.random() < 0.8 for _ in range(n)])
    cos = np.array([rng.uniform(-1, 1) for _ in range(n)], np.float32)
    tb = np.array([rng.choice((0.0, rng.uniform(0, 5))) for _ in range(n_threads)])
    vnorm = np.array([rng.choice((0.0, rng.uniform(0.5, 3))) for _ in range(n_threads)])
    use_cos = rng.random() < 0.7
    wb, wc = rng.uniform(0, 1), rng.uniform(0, 1)
    out = np.full(n, np.nan)
    thread_prior(tb, cos, has_vec, use_cos, member, thread_of, n_threads, vnorm, wb, wc, out)
    b_hi = max(tb.tolist())
    cent = {}
    if use_cos:
        for t in range(n_threads):
            if vnorm[t] > 0:
                cent[t] = sum(float(cos[i]) for i in range(n)
                              if member[i] and has_vec[i] and thread_of[i] == t) / vnorm[t]
    lo, hi = (min(cent.values()), max(cent.values())) if cent else (0.0, 0.0)
    for i in range(n):
        t = int(thread_of[i])
        want = 0.0
        if member[i]:
            want = wb * tb[t] / b_hi if b_hi > 0 else 0.0
            if t in cent and hi > lo:
                want += wc * (cent[t] - lo) / (hi - lo)
        assert out[i] == pytest.approx(want, rel=1e-9, abs=1e-12)
