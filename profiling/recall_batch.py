"""A steady recall_batch workload to profile: ``py-spy record -o out.svg -- python
profiling/recall_batch.py`` (see profiling/README.md)."""

from __future__ import annotations

import argparse
import time

import numpy as np

from maclaw_fast import MemoryConfig, MemoryStore
from maclaw_fast.embedding import HashEmbedder, l2_normalise


def build(n_entries: int, dim: int, seed: int = 0) -> MemoryStore:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(2000)]
    cfg = MemoryConfig(auto_link=True)
    store = MemoryStore.in_memory(embedder=HashEmbedder(dim=dim), config=cfg)
    vecs = l2_normalise(rng.standard_normal((n_entries, dim)).astype(np.float32))
    cats = ["preference", "project", "instruction", "session_checkpoint", "conversation_summary"]
    for i in range(n_entries):
        text = " ".join(rng.choice(words, size=rng.integers(5, 40)))
        store.save(f"{text} #{i}", category=cats[i % len(cats)],
                   tags=[f"p{i % 7}"], vector=vecs[i])
    return store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=500)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    store = build(args.entries, args.dim)
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(2000)]
    queries = [" ".join(rng.choice(words, size=4)) for _ in range(args.queries)]
    qv = l2_normalise(rng.standard_normal((args.queries, args.dim)).astype(np.float32))
    store.recall_batch_arrow(queries[:2], query_vectors=qv[:2], reinforce=False)  # compile
    t_end = time.perf_counter() + args.seconds
    rounds = 0
    t0 = time.perf_counter()
    while time.perf_counter() < t_end:
        store.recall_batch_arrow(queries, query_vectors=qv, reinforce=False)
        rounds += 1
    dt = time.perf_counter() - t0
    print(f"{rounds * args.queries / dt:,.0f} queries/s over {rounds} batches of {args.queries}"
          f" × {args.entries} entries")


if __name__ == "__main__":
    main()
