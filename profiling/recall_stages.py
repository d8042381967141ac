"""Time each stage of one ``MemoryStore.recall`` (what py-spy cannot resolve at ~50 µs a call).

    python profiling/recall_stages.py --entries 500 --queries 20000
    python profiling/recall_stages.py --entries 100000 --queries 300

Mirrors ``maclaw_fast.memory.recall.recall`` with a timer around every stage (validation and
query vector, tokenising, the cached plan with its scope and the query's block, the one kernel
call that scores and ranks, typed hits) on the benchmark data of ``benchmarks/bench_memory.py``,
then times the real call for comparison. Keep it in step with ``recall()`` when that changes.
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
from maclaw_fast.memory.plan import recall_plan  # noqa: E402
from maclaw_kernels.recall import recall_block  # noqa: E402

STAGES = ("validate + query vector", "tokenize", "plan + scope + block", "kernel: scores + rank",
          "hits")


def staged_recall(store, query, qvec_in, acc):
    """``recall(query, query_vector=qvec_in, reinforce=False)`` stage by stage."""
    t0 = time.perf_counter()
    query = validate.query(query)
    qvec = R._query_vector(store, query, qvec_in)
    t1 = time.perf_counter()
    tokens = tokenize(query)
    t2 = time.perf_counter()
    with store.lock:
        now = float(store.clock())
        plan = recall_plan(store)
        head, tail, has_affinity, _ = plan.single_args(store, None)
        out = plan.out()
        block = R._block(store, plan, [tokens], qvec, R._floors(store, [query]),
                         R._times(store, [query], now))
        t3 = time.perf_counter()
        recall_block(*head, block, *tail, now)
        t4 = time.perf_counter()
        m = int(out.count[0])
        hits = hits_from_parts(store, out.rows[0, :m], out.parts[0, :, :m], has_affinity)
        t5 = time.perf_counter()
    acc += (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)
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
