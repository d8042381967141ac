"""The sharded Ray service against recall in one process, in the same run: single recalls one
actor call each, the batched client (``recall_many``) and the async client (``arecall``, 10,000
coroutines gathered), over stores kept open on both sides.

    python benchmarks/bench_ray_service.py [--stores 100] [--entries 100] [--queries 10000]

Writes ``benchmarks/results/ray_service.md``. Hash embedder (query embedding is not timed),
``reinforce=False`` everywhere (nothing written), 2 shards on a local Ray with 2 CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from maclaw_fast.compat.stores import LocalStores  # noqa: E402

WORDS = ["deploy", "staging", "tea", "region", "cluster", "ray", "atlas", "jazz", "tennis",
         "lisbon", "python", "rollback", "vpn", "coffee", "build", "cache", "green", "friday"]


def build(root: Path, stores: int, entries: int) -> None:
    rng = np.random.default_rng(1)
    local = LocalStores(root, embedder="hash")
    for s in range(stores):
        with local.store(f"s{s:04d}") as st:
            st.save_many([{"content": " ".join(rng.choice(WORDS, 6)) + f" #{s}.{i}",
                           "category": "project"} for i in range(entries)])
    local.close()


def requests(stores: int, n: int) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(2)
    return [(f"s{rng.integers(stores):04d}", " ".join(rng.choice(WORDS, 2)),
             str(rng.choice(["atlas", "zeus"]))) for _ in range(n)]


def in_process(root: Path, reqs) -> float:
    local = LocalStores(root, embedder="hash")
    for name in sorted({r[0] for r in reqs}):  # open every store first, as the actors keep them
        with local.store(name) as st:
            st.recall("warm", reinforce=False)
    t0 = time.perf_counter()
    for name, query, project in reqs:
        with local.store(name) as st:
            st.recall(query, project=project, reinforce=False)
    rate = len(reqs) / (time.perf_counter() - t0)
    local.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--entries", type=int, default=100)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--singles", type=int, default=1_000, help="single sync recalls timed")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ray_service.md"))
    args = ap.parse_args()
    import ray

    from maclaw_fast.integrations.ray_service import ShardedMemory

    root = Path(tempfile.mkdtemp(prefix="ray_service_"))
    build(root, args.stores, args.entries)
    reqs = requests(args.stores, args.queries)
    local_rate = in_process(root, reqs)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    mem = ShardedMemory(root, shards=2, embedder="hash")
    mem.recall_many([(f"s{s:04d}", "warm") for s in range(args.stores)], reinforce=False)
    t0 = time.perf_counter()
    single = [mem.recall(n, q, project=p, reinforce=False) for n, q, p in reqs[:args.singles]]
    single_rate = args.singles / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    many = mem.recall_many(reqs, reinforce=False)
    many_rate = len(reqs) / (time.perf_counter() - t0)

    async def gathered():
        return await asyncio.gather(*[mem.arecall(n, q, project=p, reinforce=False)
                                      for n, q, p in reqs])

    t0 = time.perf_counter()
    together = asyncio.run(gathered())
    async_rate = len(reqs) / (time.perf_counter() - t0)
    same = ([[h["entry"]["id"] for h in hits] for hits in single]
            == [[h["entry"]["id"] for h in hits] for hits in many[:args.singles]]
            and [[h["entry"]["id"] for h in hits] for hits in many]
            == [[h["entry"]["id"] for h in hits] for hits in together])
    mem.close()
    ray.shutdown()
    load = os.getloadavg()[0]
    rows = [("in one process, single recalls on open stores", local_rate),
            (f"service, single recalls (one actor call each; {args.singles:,})", single_rate),
            (f"service, recall_many ({args.queries:,} in calls of <= 512 per shard)", many_rate),
            (f"service, arecall ({args.queries:,} coroutines gathered)", async_rate)]
    lines = ["# Sharded Ray service (`python benchmarks/bench_ray_service.py`)", "",
             f"{args.stores} stores x {args.entries} entries (hash embedder), {args.queries:,} "
             f"recalls (random store, 2-word query, project), reinforce=False; 2 shards on a "
             f"local Ray (num_cpus=2); 2-core machine shared with other jobs (load "
             f"{load:.1f} at the end); one run.", "",
             "| path | recalls/s | vs in-process |", "|---|---|---|"]
    lines += [f"| {what} | {rate:,.0f} | {rate / local_rate:.2f}x |" for what, rate in rows]
    lines += ["", f"Same hits (entry ids, in order) on every service path: {same}."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
