"""Ray scale-out throughput: batch recall over many stores, locally in one process and with Ray
Data on 1 and 2 workers in the same run, plus the per-store costs a cluster is sized from.

    python benchmarks/bench_ray.py [--stores 200] [--queries 50] [--entries 100]

Writes ``benchmarks/results/ray.md``. Stores use the hash embedder, so query embedding is not
timed (the ONNX model's ~2.5 ms per batched query is sized separately in the README).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from maclaw_fast import MemoryStore  # noqa: E402
from maclaw_fast.config import MemoryConfig, PersistConfig  # noqa: E402
from maclaw_fast.integrations.ray_batch import _with_rows, recall_batch_ray  # noqa: E402

WORDS = ["deploy", "staging", "tea", "region", "cluster", "ray", "atlas", "jazz", "tennis",
         "lisbon", "python", "rollback", "vpn", "coffee", "build", "cache", "green", "friday"]
NOW = 1_750_000_000.0


def build(root: Path, stores: int, entries: int) -> float:
    rng = np.random.default_rng(1)
    cfg = MemoryConfig(persist=PersistConfig(fsync="never"))
    t0 = time.perf_counter()
    for s in range(stores):
        with MemoryStore.open(root / f"s{s:04d}", embedder="hash", config=cfg,
                              clock=lambda: NOW - 3600) as st:
            for i in range(entries):
                st.save(" ".join(rng.choice(WORDS, 6)) + f" #{s}.{i}", category="project",
                        tags=[rng.choice(["atlas", "zeus"])])
    return time.perf_counter() - t0


def requests(stores: int, per_store: int) -> pa.Table:
    rng = np.random.default_rng(2)
    names = [f"s{s:04d}" for s in range(stores) for _ in range(per_store)]
    return pa.table({"store": names,
                     "query": [" ".join(rng.choice(WORDS, 2)) for _ in names],
                     "project": [rng.choice(["atlas", "zeus"]) for _ in names]})


def local(req: pa.Table, root: Path) -> tuple[pa.Table, float, float]:
    """One process, store after store; returns hits, total seconds, seconds spent opening."""
    names = np.asarray(req.column("store").to_pylist())
    parts, opening = [], 0.0
    t0 = time.perf_counter()
    for name in sorted(set(names)):
        rows = np.flatnonzero(names == name)
        t1 = time.perf_counter()
        st = MemoryStore.open(root / name, embedder="hash", clock=lambda: NOW)
        opening += time.perf_counter() - t1
        with st:
            hits = st.recall_batch_arrow(req.column("query").take(rows).to_pylist(),
                                         projects=req.column("project").take(rows).to_pylist(),
                                         reinforce=False)
        parts.append(_with_rows(hits, name, rows))
    total = time.perf_counter() - t0
    return (pa.concat_tables(parts).sort_by([("row", "ascending"), ("rank", "ascending")]),
            total, opening)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--entries", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ray.md"))
    args = ap.parse_args()
    import ray

    tmp = Path(tempfile.mkdtemp(prefix="bench_ray_"))
    try:
        build_s = build(tmp, args.stores, args.entries)
        disk = sum(f.stat().st_size for f in tmp.rglob("*") if f.is_file()) / args.stores
        req = requests(args.stores, args.queries)
        n = req.num_rows
        ref, local_s, open_s = local(req, tmp)
        with MemoryStore.open(tmp / "s0000", embedder="hash", clock=lambda: NOW) as st:
            qs = req.column("query").to_pylist()[: args.queries]
            st.recall_batch_arrow(qs, reinforce=False)
            t0 = time.perf_counter()
            for _ in range(20):
                st.recall_batch_arrow(qs, reinforce=False)
            hot_qps = 20 * len(qs) / (time.perf_counter() - t0)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        rows = []
        for workers in (1, 2, 1, 2):  # twice each, interleaved: the first run warms workers
            t0 = time.perf_counter()
            got = recall_batch_ray(req, tmp, embedder="hash", now=NOW, workers=workers,
                                   stores_per_task=max(1, args.stores // 16))
            rows.append((workers, time.perf_counter() - t0, got.equals(ref)))
        ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = {w: min(t for ww, t, _ in rows if ww == w) for w in (1, 2)}
    lines = [
        "# Ray scale-out (`python benchmarks/bench_ray.py`)", "",
        f"{args.stores} stores x {args.entries} entries (hash embedder, 384-d), "
        f"{args.queries} queries per store = {n:,} queries; 2-core machine, one run.", "",
        "| what | seconds | queries/s | vs local |", "|---|---|---|---|",
        f"| local, one process, store after store (open + recall_batch_arrow + close) | "
        f"{local_s:.2f} | {n / local_s:,.0f} | 1.00x |",
    ]
    for w in (1, 2):
        lines.append(f"| Ray Data, {w} worker(s) (best of 2) | {best[w]:.2f} | "
                     f"{n / best[w]:,.0f} | {local_s / best[w]:.2f}x |")
    lines += ["", f"2 workers vs 1: **{best[1] / best[2]:.2f}x**; every Ray run equal to the "
              f"local hits bit for bit: {all(eq for _, _, eq in rows)}.", "",
              "Per-store figures (the cluster sizing in the README uses these):", "",
              f"- opening a {args.entries}-entry store: {1000 * open_s / args.stores:.1f} ms "
              f"(of {1000 * local_s / args.stores:.1f} ms per store in the local run)",
              f"- recall on an open store: {hot_qps:,.0f} queries/s (recall_batch_arrow, "
              f"{args.queries} queries a call)",
              f"- building a store: {1000 * build_s / args.stores:.0f} ms; on disk "
              f"{disk / 1024:.0f} KiB per store", "",
              "All runs: " + ", ".join(f"{w} worker(s) {t:.2f} s" for w, t, _ in rows)]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
