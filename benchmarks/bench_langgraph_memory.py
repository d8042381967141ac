"""Memory of MaclawLangGraphStore per 100,000 items: the Python heap an open store holds for its
items (tracemalloc), after writing them and after reopening the directory, and the time of both
(under tracemalloc, which slows allocation several-fold).

    python benchmarks/bench_langgraph_memory.py [--items 100000]

Items are unindexed (no embedder: the vectors' own memory is the store's, see
docs/performance.md); each value is a small dict like a LangMem memory.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langgraph.store.base import PutOp  # noqa: E402

from maclaw_fast.integrations.langgraph_store import MaclawLangGraphStore  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp(prefix="lg_mem_")) / "store"
    n = args.items
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    s = MaclawLangGraphStore(path=path)
    for i in range(0, n, 1000):
        s.batch([PutOp(("memories", f"user{j % 100}"), f"m{j}",
                       {"content": f"user {j % 100} fact number {j}", "kind": "fact"})
                 for j in range(i, min(i + 1000, n))])
    written = time.perf_counter() - t0
    gc.collect()
    after_write = tracemalloc.get_traced_memory()[0] - base
    s.close()
    del s
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    s = MaclawLangGraphStore(path=path)
    reopened = time.perf_counter() - t0
    gc.collect()
    after_open = tracemalloc.get_traced_memory()[0] - base
    assert len(s.search(("memories", "user7"), limit=1000)) == n // 100
    s.close()
    print(f"{n:,} items: written in {written:.1f} s, heap {after_write / 2**20:.1f} MiB "
          f"({after_write / n:.0f} B/item); reopened in {reopened:.1f} s, heap "
          f"{after_open / 2**20:.1f} MiB ({after_open / n:.0f} B/item)")


if __name__ == "__main__":
    main()
