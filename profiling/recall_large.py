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
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
from maclaw_kernels import entry
from maclaw_kernels import recall as K
from maclaw_kernels.bm25 import Postings, bm25_query
from maclaw_kernels.recall_assemble import kth_relevance, lead_facts
from maclaw_kernels.thread_prior import thread_prior

# the stages only other kernels call, timed from Python through a copy with an entry point
fuse, ranked_rows, kth_relevance, lead_facts = map(entry, (K.fuse, K.ranked_rows, kth_relevance,
                                                         lead_facts))

from maclaw_fast.memory import recall as R
from maclaw_fast.memory.plan import recall_plan
from maclaw_fast.text.tokenizer import tokenize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from ab_recall import STORE

NOW = 1.8e9  # the clock of ab_recall's store


def build(n: int, kind: str):
    """``ab_recall.py``'s store of ``n`` entries, its 200 queries and their vectors."""
    names = {"N": n, "KIND": kind}
    exec(STORE, names)  # noqa: S102 (the very code ab_recall's child runs)
    return names["store"], names["queries"], names["Q"]


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
    work, th = plan.work(store), plan.threads(store)
    head, tail, _, _ = plan.single_args(store, None)
    el = sc = scope.eligible[0]
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
        timed("ranking kernel, given both", K.recall_block, *head, block, *tail, NOW)
        if th.n_threads:
            tb = np.zeros(int(th.n_threads))
            timed("  thread prior: BM25", bm25_query, ids,
                  Postings(*th.postings, work.term_weight), tb, np.zeros(0))
            timed("  thread prior: centroids", thread_prior, tb, cos, store.vectors.has_vec, True,
                  th.member, th.thread_of, int(th.n_threads), th.vnorm, th.w_bm25, th.w_cos,
                  np.empty(n))
        bm25n, rel, score, graph = (np.empty(n) for _ in range(4))
        timed("  fusion", fuse, bm25, cos, scope.affinity[0], el, knobs, plan.scales, bm25n, rel)
        base = plan.base.values[2].copy()
        timed("  top-k and walk", ranked_rows, rows, knobs, base, rel, sc, 28, score, graph)
        timed("  user-fact bar", kth_relevance, rel, sc, int(knobs.lead_window))
        timed("  user-fact lead", lead_facts, scope.user_facts, sc, rel, graph, rows.seq, 0.5,
              int(knobs.max_user_facts))
    print(f"{args.kind}, {n:,} entries, {int(th.n_threads):,} threads, {args.calls} queries "
          "(medians)")
    for name, values in times.items():
        print(f"  {name:28s} {np.median(values) * 1e6:10.1f} µs")


if __name__ == "__main__":
    main()
