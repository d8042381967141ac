"""Recall thousands of queries over many users' stores with Ray Data.

    python examples/ray_batch_job.py --root ./stores --requests requests.parquet --out hits.parquet
    python examples/ray_batch_job.py --demo ./demo-stores      # builds 50 stores and requests

``requests.parquet`` has string columns ``store``, ``query`` and optionally ``project``; the
output has one row per hit (input ``row``, ``store``, ``rank``, entry ``id``, ``score`` and its
breakdown, ``reason``). Starts a local Ray unless one is running (``ray.init(address=...)``
first to use a cluster; ``--root`` must then be on storage every node sees).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import ray

from maclaw_fast import MemoryStore
from maclaw_fast.integrations.ray_batch import recall_batch_ray

TOPICS = ["deploy", "staging", "green tea", "AWS_REGION", "tennis", "Lisbon", "rollback", "VPN"]


def build_demo(root: Path, stores: int = 50, per_store: int = 10) -> pa.Table:
    """``stores`` small stores under ``root`` and four requests for each."""
    names, queries = [], []
    for s in range(stores):
        name = f"user{s:03d}"
        with MemoryStore.open(root / name, embedder="hash") as st:
            for i in range(per_store):
                st.save(f"{name} note {i}: {TOPICS[(s + i) % 8]} and {TOPICS[(s * i) % 8]}",
                        category="project")
        for q in range(4):
            names.append(name)
            queries.append(TOPICS[(s + q) % 8])
    return pa.table({"store": names, "query": queries})


def main(argv=None) -> pa.Table:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", help="directory holding one sub-directory per store")
    ap.add_argument("--requests", help="Parquet file of (store, query[, project]) rows")
    ap.add_argument("--out", help="Parquet file for the hits")
    ap.add_argument("--demo", help="build demo stores and requests in this directory")
    ap.add_argument("--embedder", default=None, help="default, hash (the demo's); default: "
                    "hash with --demo, else default")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args(argv)
    if args.demo:
        root = Path(args.demo)
        requests = build_demo(root)
        embedder = args.embedder or "hash"
    else:
        if not (args.root and args.requests):
            ap.error("give --root and --requests, or --demo DIR")
        root, requests, embedder = Path(args.root), args.requests, args.embedder or "default"
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    hits = recall_batch_ray(requests, root, embedder=embedder, workers=args.workers)
    if args.out:
        pq.write_table(hits, args.out)
    print(f"{hits.num_rows} hits for {len(set(hits.column('row').to_pylist()))} queries over "
          f"{len(set(hits.column('store').to_pylist()))} stores")
    return hits


if __name__ == "__main__":
    main()
