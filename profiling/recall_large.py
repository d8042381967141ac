"""Where one recall over a large store spends its time: each per-row stage timed alone.

    python profiling/recall_large.py --entries 100000 --calls 30
    python profiling/recall_large.py --entries 10000 --kind conversation

The store is ``benchmarks/ab_recall.py``'s (synthetic notes or conversation turns, 384-d random
unit vectors given). Timed per query, medians: the whole ``recall``; the cosine scan
(``VectorColumn.scores``: on both cores from 4M matrix elements, as recall runs it); BM25
(``Bm25Index.scores``); the ranking kernel given both (``recall_block``, as recall runs it for a
large store); and inside it, each called alone on the same arrays: the thread prior (its
threads' BM25 and the centroid pass), fusion, the top-k with the walk, the user-fact bar and
lead. Keep it in step with ``maclaw_fast.memory.recall`` when that changes.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import msgspec
import numpy as np
from maclaw_kernels import recall as K
from maclaw_kernels.bm25 import Postings, bm25_query
from maclaw_kernels.recall_assemble import kth_relevance, lead_facts
from maclaw_kernels.thread_prior import thread_prior

from maclaw_fast import MemoryStore
from maclaw_fast.config import CapacityConfig, MemoryConfig
from maclaw_fast.memory import recall as R
from maclaw_fast.memory.plan import recall_plan
from maclaw_fast.text.tokenizer import tokenize

DIM, NOW = 384, 1.8e9


def build(n: int, kind: str):
    """``ab_recall.py``'s store of ``n`` entries, 200 queries and their vectors."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
    p /= p.sum()

    def text(k):
        return " ".join(rng.choice(words, k, p=p))

    def unit(m, seed):
        v = np.random.default_rng(seed).standard_normal((m, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    cats = ("instruction", "preference", "project_knowledge", "session_checkpoint")
    tags = ("atlas", "zeus", "hermes", "infra", "frontend", "billing", "ml", "ops")
    vecs, t = unit(n, 1000), [NOW]
    cfg = msgspec.structs.replace(MemoryConfig(), auto_link=False, capacity=CapacityConfig(
        store_capacity=2 * n + 10, gc_threshold=2 * n, archive_capacity=2 * n))
    store = MemoryStore.in_memory(embedder="hash", clock=lambda: t[0], config=cfg)
    for i in range(n):
        t[0] = NOW - float(rng.random()) * 30 * 86400 if kind == "notes" else NOW - (n - i) * 60.0
        if kind == "notes":
            store.save(f"{text(int(rng.integers(8, 25)))} {i}", category=cats[i % 4],
                       tags=[tags[int(rng.integers(0, 8))]], vector=vecs[i])
        else:
            store.save(f"speaker {i % 2}: {text(int(rng.integers(8, 25)))} {i}",
                       category="conversation_summary", thread=f"s{i // 10}", vector=vecs[i])
    t[0] = NOW
    return store, [text(int(rng.integers(2, 7))) for _ in range(200)], unit(200, 2000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--kind", choices=("notes", "conversation"), default="notes")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    store, queries, qvecs = build(args.entries, args.kind)
    for i in range(20):
        store.recall(queries[i], query_vector=qvecs[i], reinforce=False)
    plan = recall_plan(store)
    n, scope, knobs, rows = plan.n, plan.scope(store, None)[0], plan.knobs, plan.rows
    work, out, th = plan.work(store), plan.out(), plan.threads(store)
    static = plan.static_args(store)
    el, sc = scope.eligible[0], scope.scored[0]
    times: dict[str, list[float]] = {}

    def timed(name, fn, *fn_args):
        t0 = time.perf_counter()
        result = fn(*fn_args)
        times.setdefault(name, []).append(time.perf_counter() - t0)
        return result

    for j in range(args.calls):
        query, qvec = queries[j % 200], qvecs[j % 200]
        timed("recall", partial(store.recall, query, query_vector=qvec, reinforce=False))
        tokens = tokenize(query)
        cos = timed("cosine scan", store.vectors.scores, qvec, n)
        bm25 = timed("BM25", store.bm25.scores, tokens, n)
        ids = store.bm25.term_ids(tokens)
        block = (ids, np.array([0, ids.shape[0]]), qvec[None], True, bm25[None], cos[None],
                 R._NO_SCALES, R._NO_FLOORS)
        timed("ranking kernel, given both", K.recall_block, R._corpus(store), static[0],
              static[1], tuple(scope), R._ONE, static[2], block, tuple(plan.base), tuple(work),
              tuple(out), NOW)
        if th.n_threads:
            tb = np.zeros(int(th.n_threads))
            timed("  thread prior: BM25", bm25_query, ids,
                  Postings(*th.postings[:17], work.term_weight), tb)
            timed("  thread prior: centroids", thread_prior, tb, cos, store.vectors.has_vec, True,
                  th.member, th.thread_of, int(th.n_threads), th.vnorm, th.w_bm25, th.w_cos,
                  np.empty(n))
        bm25n, rel, score, graph = (np.empty(n) for _ in range(4))
        timed("  fusion", K.fuse, bm25, cos, scope.affinity[0], el, knobs, bm25n, rel)
        base = plan.base.values[2].copy()
        timed("  top-k and walk", K.ranked_rows, rows, knobs, base, rel, sc, 28, score, graph)
        timed("  user-fact bar", kth_relevance, rel, sc, int(knobs.lead_window))
        timed("  user-fact lead", lead_facts, scope.user_fact, sc, rel, graph, rows.seq, 0.5,
              int(knobs.max_user_facts))
    print(f"{args.kind}, {n:,} entries, {int(th.n_threads):,} threads, {args.calls} queries "
          "(medians)")
    for name, values in times.items():
        print(f"  {name:28s} {np.median(values) * 1e6:10.1f} µs")


if __name__ == "__main__":
    main()
