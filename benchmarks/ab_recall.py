"""Same-run A/B of recall between two builds: single ``recall`` p50 against store size, beside a
bare NumPy ``E @ q`` + top-20 in the same process, and ``recall_batch_arrow`` / ``recall_batch``
queries per second.

    python benchmarks/ab_recall.py --base main --cand HEAD                     # 500 notes
    python benchmarks/ab_recall.py --base main --cand HEAD --sizes 500,1000,10000,100000 \\
        --kinds notes,conversation --batch --out benchmarks/results/recall_ab.md
    python benchmarks/ab_recall.py --base REV --cand main,HEAD    # two candidates, one run
    python benchmarks/ab_recall.py --base main --cand HEAD --cpu  # CPU time: a shared machine

Each build (a git revision) is exported to a temporary directory and imported from there by
this interpreter, each with its own default config. Per (size, kind) and round, a fresh process
per build builds the store through ``save`` (synthetic 8–24-word texts, four categories, tags,
ages over 30 days, 384-d random unit vectors given; ``conversation``: threads of 10 turns, so
the thread prior applies), then times ``recall(query, query_vector=…, reinforce=False)`` over
cycling queries; the builds take turns round after round, so the machine's drift hits both.
Reported: the median over rounds of each build's p50, the median and range of the per-round
ratio cand/base, and cand's p50 over the bare NumPy scan's (``E @ q`` of every row, then the
top 20 by ``argpartition``, on one BLAS thread; no BM25, no ranking: the floor of any exact
search on one core).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The store of one (size N, kind KIND) and its queries: what the child times, and what
# profiling/recall_large.py profiles (it runs this with N and KIND set).
STORE = r"""
import numpy as np
from maclaw_fast import MemoryStore
from maclaw_fast.config import CapacityConfig, MemoryConfig
import msgspec
NQ, DIM, NOW = 200, 384, 1.8e9
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(3000)]
p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
p /= p.sum()
def text(k):
    return " ".join(rng.choice(words, k, p=p))
def unit(n, seed):
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
cats = ("instruction", "preference", "project_knowledge", "session_checkpoint")
tags = ("atlas", "zeus", "hermes", "infra", "frontend", "billing", "ml", "ops")
vecs = unit(N, 1000)
t = [NOW]
cfg = MemoryConfig()
cfg = msgspec.structs.replace(
    cfg, auto_link=False, capacity=CapacityConfig(store_capacity=2 * N + 10,
                                                   gc_threshold=2 * N, archive_capacity=2 * N))
store = MemoryStore.in_memory(embedder="hash", clock=lambda: t[0], config=cfg)
for i in range(N):
    t[0] = NOW - float(rng.random()) * 30 * 86400 if KIND == "notes" else NOW - (N - i) * 60.0
    if KIND == "notes":
        store.save(f"{text(int(rng.integers(8, 25)))} {i}", category=cats[i % 4],
                   tags=[tags[int(rng.integers(0, 8))]], vector=vecs[i])
    else:
        store.save(f"speaker {i % 2}: {text(int(rng.integers(8, 25)))} {i}",
                   category="conversation_summary", thread=f"s{i // 10}", vector=vecs[i])
t[0] = NOW
queries = [text(int(rng.integers(2, 7))) for _ in range(NQ)]
Q = unit(NQ, 2000)
"""

CHILD = r"""
import json, sys, time

N, KIND, CALLS, BATCH = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
clock = time.process_time if sys.argv[5] == "cpu" else time.perf_counter  # cpu: all threads
""" + STORE + r"""for i in range(30):
    store.recall(queries[i % NQ], query_vector=Q[i % NQ], reinforce=False)
times = np.empty(CALLS)
for j in range(CALLS):
    i = j % NQ
    t0 = clock()
    store.recall(queries[i], query_vector=Q[i], reinforce=False)
    times[j] = clock() - t0
E = vecs
bare = np.empty(CALLS)
import threadpoolctl  # one BLAS thread: idle BLAS workers spin, which CPU time would count
with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
    for j in range(CALLS):
        q = Q[j % NQ]
        t0 = clock()
        s = E @ q
        top = np.argpartition(-s, 20)[:20]
        top = top[np.argsort(-s[top])]
        bare[j] = clock() - t0
out = {"p50": float(np.median(times)), "bare_p50": float(np.median(bare))}
if BATCH:
    qs = [queries[i % NQ] for i in range(BATCH)]
    qv = np.ascontiguousarray(Q[np.arange(BATCH) % NQ])
    for name, fn in (("arrow_qps", store.recall_batch_arrow), ("list_qps", store.recall_batch)):
        fn(qs[:50], query_vectors=qv[:50], reinforce=False)
        best = []
        for _ in range(3):
            t0 = clock()
            fn(qs, query_vectors=qv, reinforce=False)
            best.append(BATCH / (clock() - t0))
        out[name] = float(np.median(best))
print(json.dumps(out))
"""


def export(rev: str, repo: Path, into: Path) -> Path:
    """``rev`` of ``repo`` as files under ``into`` (``maclaw_kernels`` linked to ``kernels``)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "maclaw_kernels").symlink_to(into / "kernels")
    return into


def run(root: Path, n: int, kind: str, calls: int, batch: int, cpu: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), kind, str(calls), str(batch),
                          "cpu" if cpu else "wall"],
                         cwd=root, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--cand", default="HEAD")
    ap.add_argument("--sizes", default="500")
    ap.add_argument("--kinds", default="notes")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=0, help="also time batches of this many")
    ap.add_argument("--cpu", action="store_true",
                    help="time CPU, not wall-clock time (steadier on a shared machine)")
    ap.add_argument("--out", default=None, help="write a Markdown table here")
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    cands = args.cand.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"base": export(args.base, repo, Path(tmp) / "base")}
        for i, cand in enumerate(cands):
            roots[cand] = export(cand, repo, Path(tmp) / f"cand{i}")
        for root in roots.values():  # compile (numba caches under the export) before timing
            run(root, 50, "notes", 10, 0)
        for kind in args.kinds.split(","):
            for n in map(int, args.sizes.split(",")):
                calls = max(50, min(args.calls, int(args.calls * 2000 / n)))
                batch = args.batch if n <= 1000 else 0
                res: dict[str, list[dict]] = {name: [] for name in roots}
                names = list(roots)
                for r in range(args.rounds):  # the builds take turns going first
                    for name in names[r % len(names):] + names[:r % len(names)]:
                        res[name].append(run(roots[name], n, kind, calls, batch, args.cpu))
                for cand in cands:
                    row = {"kind": kind, "n": n, "cand": cand}
                    for key in ("p50", "bare_p50", "arrow_qps", "list_qps"):
                        if key not in res[cand][0]:
                            continue
                        b = [x[key] for x in res["base"]]
                        c = [x[key] for x in res[cand]]
                        ratios = [ci / bi for bi, ci in zip(b, c)]
                        row[key] = (statistics.median(b), statistics.median(c),
                                    statistics.median(ratios), min(ratios), max(ratios))
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    lines = [f"# Recall A/B: {', '.join(cands)} against {args.base}", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load "
             f"{os.getloadavg()[0]:.1f}; {args.rounds} rounds, builds alternating; default "
             "config of each build, vectors given (the model is not timed)"
             + ("; process CPU time, not wall-clock." if args.cpu else ".")]
    for cand in cands:
        lines += table(args, [row for row in rows if row["cand"] == cand],
                       [f"## {cand}"] if len(cands) > 1 else [])
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def table(args, rows: list[dict], heading: list[str]) -> list[str]:
    """One candidate's rows as Markdown: single recall p50, then batch queries per second."""
    lines = ["", *heading, *([""] if heading else []),
             "| store | entries | base p50 µs | cand p50 µs | cand/base (range) | "
             "NumPy E@q+top20 µs | cand/NumPy |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        b, c, r, lo, hi = row["p50"]
        bare = row["bare_p50"][1]
        lines.append(f"| {row['kind']} | {row['n']:,} | {b * 1e6:.1f} | {c * 1e6:.1f} | "
                     f"{r:.2f} ({lo:.2f}–{hi:.2f}) | {bare * 1e6:.1f} | {c / bare:.2f} |")
    batch_rows = [row for row in rows if "arrow_qps" in row]
    if batch_rows:
        lines += ["", f"Batches of {args.batch} queries (queries per second):", "",
                  "| store | entries | call | base q/s | cand q/s | cand/base (range) |",
                  "|---|---:|---|---:|---:|---:|"]
        for row in batch_rows:
            for key, call in (("arrow_qps", "recall_batch_arrow"), ("list_qps", "recall_batch")):
                b, c, r, lo, hi = row[key]
                lines.append(f"| {row['kind']} | {row['n']:,} | {call} | {b:,.0f} | {c:,.0f} | "
                             f"{r:.2f} ({lo:.2f}–{hi:.2f}) |")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
