"""Time each stage of one ``MemoryStore.recall`` (what py-spy cannot resolve at ~50 µs a call).

    python profiling/recall_stages.py --entries 500 --queries 20000
    python profiling/recall_stages.py --entries 100000 --queries 300

Mirrors ``maclaw_fast.memory.recall.recall`` with a timer around every stage (validation, query
vector, tokenising, cached plan and masks, BM25, cosines, ranking, typed hits; at 500 entries the
real call runs the last three kernels as one, ``recall_viewed``, its arrays passed as one address
table, and splits ASCII queries inside it) on the benchmark data of
``benchmarks/bench_memory.py``, then times the real call for comparison, so the sum of the stages
overstates the call by the boundaries it adds. Keep it in step with ``recall()`` when that
changes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_memory as bm  # noqa: E402

from maclaw_fast.memory import recall as R  # noqa: E402
from maclaw_fast.memory import validate  # noqa: E402
from maclaw_fast.memory.hits import hits_from_parts  # noqa: E402
from maclaw_fast.text.tokenizer import tokenize  # noqa: E402
from maclaw_kernels.bm25 import bm25_query  # noqa: E402
from maclaw_kernels.vectors import dot_scores  # noqa: E402

STAGES = ("validate + query vector", "tokenize", "plan + masks", "BM25 (arguments + kernel)",
          "cosines (kernel)", "ranking (kernel)", "hits")


def staged_recall(store, query, qvec_in, acc):
    """``recall()`` with the fused kernel call (``recall_query``) split back into its three
    kernels, so each can be timed; the real call is timed separately in :func:`main`."""
    pc = time.perf_counter
    t0 = pc()
    query = validate.query(query)
    qvec = R._query_vectors(store, [query], qvec_in)
    t1 = pc()
    tokens = tokenize(query)
    t2 = pc()
    with store._lock:
        static = R._static(store, False, None)
        n = static.n
        now = float(store.clock())
        eligible, affinity, scored, has_affinity = static.scope_masks(store, None)
        rows, parts, work, bm25, cos = static.single
        t3 = pc()
        if n * store.dim >= R.PARALLEL_ELEMENTS:
            bm25 = store._bm25.scores(tokens, n)
            t4 = pc()
            vec = store._vectors
            vec.keep_codes()
            t5 = pc()  # the large-store kernel bounds and scores the cosines itself
            m = R.recall_large(vec.matrix[:n], vec.codes[:n], vec.scale[:n], vec.err[:n],
                               R.BOUND_SLACK, vec.has_vec[:n], qvec[0], *static.recency_args,
                               now, *static.recency_knobs, bm25, affinity, eligible, scored,
                               *static.kernel_args, R.LARGE_BLOCK, *static.scratch(), rows, parts)
        else:
            bm25[:] = 0.0
            bm25_query(*store._bm25.query_args(tokens), bm25)
            t4 = pc()
            dot_scores(store._vectors.matrix, n, store._vectors.has_vec, qvec[0], cos)
            t5 = pc()
            m = R.recall_single(*static.recency_args, now, *static.recency_knobs, bm25, cos,
                                affinity, eligible, scored, *static.kernel_args, work, rows,
                                parts)
        t6 = pc()
        hits = hits_from_parts(store, rows[:m], parts[:, :m], has_affinity)
        t7 = pc()
    acc += np.diff([t0, t1, t2, t3, t4, t5, t6, t7])
    return hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=500)
    ap.add_argument("--queries", type=int, default=20000)
    args = ap.parse_args()
    store = bm.build_store(bm.make_corpus(args.entries, seed=0), auto_link=args.entries <= 5000)
    queries, vecs = bm.make_queries(1000, seed=1)
    nq = len(queries)
    acc = np.zeros(len(STAGES))
    for i in range(min(2000, args.queries)):  # warm caches, entries and the numba dispatch
        staged_recall(store, queries[i % nq], vecs[i % nq], acc)
    acc[:] = 0
    start = time.perf_counter()
    for i in range(args.queries):
        staged_recall(store, queries[i % nq], vecs[i % nq], acc)
    total = (time.perf_counter() - start) / args.queries
    real = []
    for i in range(args.queries):
        t = time.perf_counter()
        store.recall(queries[i % nq], query_vector=vecs[i % nq], reinforce=False)
        real.append(time.perf_counter() - t)
    print(f"{args.entries} entries, {args.queries} queries (mean per query)")
    for name, seconds in zip(STAGES, acc / args.queries):
        print(f"  {name:24s} {seconds * 1e6:9.1f} µs")
    print(f"  {'staged total':24s} {total * 1e6:9.1f} µs")
    print(f"  {'recall() p50':24s} {np.median(real) * 1e6:9.1f} µs")


if __name__ == "__main__":
    main()
