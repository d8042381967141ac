"""How `recall` scales with the store and `recall_batch_arrow` with the batch, each beside the
hand-written baselines measured in the same run, interleaved (``benchmarks/interleaved.py``).

    python benchmarks/bench_scaling.py                       # writes benchmarks/results/scaling.md
    python benchmarks/bench_scaling.py --sizes 500,2000 --batches 1,10,100 --out /tmp/s.md
    python benchmarks/plots.py                               # redraws docs/img/ from the results

Data and contenders are ``benchmarks/bench_memory.py``'s: synthetic memories and queries, 384-d
random unit vectors given with every query (the model is not timed), the design §6 scoring the
hand-glues implement, top 20, ``reinforce=False``; stores built with auto-link off (linking makes
saving a large store quadratic). Every hand-glue is checked to return the engine's top 20 before
it is timed.

* Store sizes: per size one round robin of single recalls — the engine, bm25s + NumPy ``E @ q``,
  bm25s + faiss ``IndexFlatIP``, tantivy + faiss — each round a chunk of calls per contender
  (sized to ~20 ms), the order rotating; the table gives the median over the rounds of each
  round's median call and the ratio to the engine in the same round.
* Batch sizes (500 entries): per batch size one round robin of ``recall_batch_arrow``,
  ``recall_batch``, a loop of single ``recall`` calls and the batched bm25s + NumPy glue;
  queries per second of the median round.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_memory as bm  # noqa: E402
from interleaved import ratio_summary, round_robin  # noqa: E402

from maclaw_fast import __version__  # noqa: E402

ENGINE = "maclaw_fast recall"
SINGLE_GLUES = (bm.GlueBm25sNumpy, bm.GlueBm25sFaiss, bm.GlueTantivyFaiss)
BATCH_ENGINES = ("maclaw_fast recall_batch_arrow", "maclaw_fast recall_batch (list)")
BATCH_LOOP = "maclaw_fast recall, one call per query"
BATCH_GLUE = "hand-glue: bm25s + NumPy E@q"


def _overlap(a, b) -> float:
    return float(np.mean([len(set(x) & set(y)) / max(len(x), 1) for x, y in zip(a, b)]))


def _calls_for(fn, budget_s: float = 0.02) -> int:
    """Calls per round so that one contender's chunk takes about ``budget_s``."""
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    per_call = (time.perf_counter() - t0) / 3
    return int(min(200, max(3, budget_s / max(per_call, 1e-7))))


def store_sizes(sizes: list[int], rounds: int) -> list[dict]:
    """One row per store size: p50 (seconds) and ratio to the engine per contender."""
    queries, Q = bm.make_queries(bm.N_QUERIES, seed=1)
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        corpus = bm.make_corpus(n, seed=0)
        store = bm.build_store(corpus, auto_link=False)
        cols = bm.corpus_columns(store, corpus)
        glues = [cls(cols) for cls in SINGLE_GLUES]
        built = time.perf_counter() - t0
        engine_top = [[h.entry.id for h in store.recall(q, query_vector=Q[i], reinforce=False)]
                      for i, q in enumerate(queries[:30])]
        agreement = {}
        for g in glues:
            agreement[g.name] = _overlap(engine_top,
                                         [list(g.recall(q, Q[i])) for i, q in
                                          enumerate(queries[:30])])
            if agreement[g.name] < 0.95:
                raise SystemExit(f"{g.name} disagrees with the engine at {n}: {agreement}")
        counter = iter(range(10 ** 9))

        def call(fn):
            def run():
                i = next(counter) % len(queries)
                fn(queries[i], Q[i])
            return run

        fns = {ENGINE: call(lambda q, v: store.recall(q, query_vector=v, reinforce=False))}
        for g in glues:
            fns[g.name] = call(g.recall)
        contenders = {name: (fn, _calls_for(fn)) for name, fn in fns.items()}
        summary = ratio_summary(round_robin(contenders, rounds), ENGINE)
        rows.append({"entries": n, "summary": summary, "agreement": agreement,
                     "build_s": built})
        print(f"{n:>7} entries: " + ", ".join(f"{k} {v['p50'] * 1e6:.1f} µs"
                                             for k, v in summary.items()), file=sys.stderr)
        store.close()
    return rows


def batch_sizes(batches: list[int], rounds: int) -> list[dict]:
    """One row per batch size over the 500-entry store: queries/s per contender."""
    corpus = bm.make_corpus(bm.N_SMALL, seed=0)
    store = bm.build_store(corpus)
    glue = bm.GlueBm25sNumpy(bm.corpus_columns(store, corpus))
    queries, Q = bm.make_queries(max(batches), seed=1)
    store.recall_batch_arrow(queries[:8], query_vectors=Q[:8], reinforce=False)
    glue.recall_batch(queries[:8], Q[:8])
    rows = []
    for b in batches:
        qs, qv = queries[:b], Q[:b]
        fns = {
            BATCH_ENGINES[0]: lambda: store.recall_batch_arrow(qs, query_vectors=qv,
                                                               reinforce=False),
            BATCH_ENGINES[1]: lambda: store.recall_batch(qs, query_vectors=qv, reinforce=False),
            BATCH_LOOP: lambda: [store.recall(q, query_vector=qv[i], reinforce=False)
                                 for i, q in enumerate(qs)],
            BATCH_GLUE: lambda: glue.recall_batch(qs, qv),
        }
        contenders = {name: (fn, _calls_for(fn, 0.05)) for name, fn in fns.items()}
        summary = ratio_summary(round_robin(contenders, rounds), BATCH_ENGINES[0])
        rows.append({"batch": b, "summary": summary})
        print(f"batch {b:>6}: " + ", ".join(f"{k} {b / v['p50']:,.0f} q/s"
                                            for k, v in summary.items()), file=sys.stderr)
    store.close()
    return rows


def render(size_rows: list[dict], batch_rows: list[dict], *, rounds: int, batch_rounds: int,
           seconds: float, load_start: float) -> str:
    load = os.getloadavg()
    names = [ENGINE] + [g.name for g in SINGLE_GLUES]
    out = ["# Scaling: store size and batch size", "",
           f"Generated by `python benchmarks/bench_scaling.py` (maclaw_fast {__version__}, "
           f"{datetime.date.today().isoformat()}, {seconds:.0f} s). Machine: "
           f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
           f"load average {load_start:.1f} at the start, {load[0]:.1f} at the end (other jobs "
           "shared the machine: compare the ratios, not the absolute times). Thread pools: numba "
           f"{bm.THREADS['numba']}, BLAS {bm.THREADS['blas']}, faiss OpenMP "
           f"{bm.THREADS['omp']} (the engine's batch kernels at their default "
           "`batch_threads=\"auto\"`). Data, scoring and contenders as in "
           "`benchmarks/bench_memory.py` (384-d random unit vectors given with every query, "
           "top 20, `reinforce=False`, auto-link off); every hand-glue returns the engine's top "
           "20 (agreement below). Read the ratios: each comes from rounds in which the "
           "contenders take turns.", "",
           "## `recall` against store size", "",
           f"{rounds} rounds per size; per round a chunk of calls of each contender (~20 ms), "
           "the order rotating. p50 = median over the rounds of each round's median call, in "
           "µs; “÷ engine” = contender ÷ engine in the same round (median over the rounds).", "",
           "| entries | " + " | ".join(f"{n} p50 (µs)" for n in names) + " | "
           + " | ".join(f"{n} ÷ engine" for n in names[1:]) + " | lowest agreement |",
           "|---" * (1 + 2 * len(names)) + "|"]
    for r in size_rows:
        s = r["summary"]
        out.append(f"| {r['entries']} | "
                   + " | ".join(f"{s[n]['p50'] * 1e6:.1f}" for n in names) + " | "
                   + " | ".join(f"{s[n]['ratio']:.2f}" for n in names[1:])
                   + f" | {min(r['agreement'].values()):.3f} |")
    bnames = list(BATCH_ENGINES) + [BATCH_LOOP, BATCH_GLUE]
    out += ["", "## `recall_batch_arrow` against batch size", "",
            f"500 entries; {batch_rounds} rounds per batch size, each contender one chunk of "
            "whole batches per round (~50 ms), the order rotating. Queries per second of the "
            "median round; “÷ arrow” = the contender's time ÷ `recall_batch_arrow`'s in the "
            "same round.", "",
            "| batch | " + " | ".join(f"{n} queries/s" for n in bnames) + " | "
            + " | ".join(f"{n} ÷ arrow" for n in bnames[1:]) + " |",
            "|---" * (1 + 2 * len(bnames) - 1) + "|"]
    for r in batch_rows:
        s, b = r["summary"], r["batch"]
        out.append(f"| {b} | " + " | ".join(f"{b / s[n]['p50']:.0f}" for n in bnames) + " | "
                   + " | ".join(f"{s[n]['ratio']:.2f}" for n in bnames[1:]) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500,2000,10000,50000")
    ap.add_argument("--batches", default="1,10,100,1000,5000")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch-rounds", type=int, default=7)
    ap.add_argument("--out", default=str(HERE / "results" / "scaling.md"))
    args = ap.parse_args(argv)
    bm.set_threads(bm.THREADS["numba"], bm.THREADS["blas"], bm.THREADS["omp"])
    t0, load_start = time.perf_counter(), os.getloadavg()[0]
    sizes = store_sizes([int(x) for x in args.sizes.split(",")], args.rounds)
    batches = batch_sizes([int(x) for x in args.batches.split(",")], args.batch_rounds)
    text = render(sizes, batches, rounds=args.rounds, batch_rounds=args.batch_rounds,
                  seconds=time.perf_counter() - t0, load_start=load_start)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
