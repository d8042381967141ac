"""The mem0 facade's cost per search over the engine: p50 of ``Memory.search`` against
``MemoryStore.recall(reinforce=False)`` and ``MemoryStore.similar`` (query embedded) on the same
N memories, hash embedder, in one run. Writes benchmarks/results/mem0.md.

Usage: python benchmarks/bench_mem0.py [N] [QUERIES]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from maclaw_fast import MemoryStore
from maclaw_fast.compat.mem0 import Memory
from maclaw_fast.embedding import embed_checked

WORDS = ("tea coffee chess jazz lisbon porto tennis basil olive garlic rust python numba "
         "kernel sailing hiking violin cello pasta sushi").split()


def _texts(n: int) -> list[str]:
    return [f"memory {i}: likes {WORDS[i % 20]} and {WORDS[(i * 7) % 20]} on day {i % 31}"
            for i in range(n)]


def _p50(fn, queries) -> float:
    for q in queries[:20]:
        fn(q)  # warm-up (numba compile, caches)
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(n: int = 1000, nq: int = 300) -> str:
    texts = _texts(n)
    queries = [f"{WORDS[i % 20]} {WORDS[(i * 3) % 20]}" for i in range(nq)]
    m = Memory({"embedder": {"provider": "maclaw", "config": {"model": "hash"}}})
    for t in texts:
        m.add(t, user_id="u", infer=False)
    store = MemoryStore.in_memory(embedder="hash")
    for t in texts:
        store.save(t, category="user_fact")
    facade = _p50(lambda q: m.search(q, filters={"user_id": "u"}, top_k=20), queries)
    recall = _p50(lambda q: store.recall(q, reinforce=False), queries)
    similar = _p50(lambda q: store.similar(embed_checked(store.embedder, [q])[0], k=20), queries)
    rows = [("mem0 facade `Memory.search` (top_k=20)", facade),
            ("engine `MemoryStore.recall(reinforce=False)` (its configured k)", recall),
            ("engine `MemoryStore.similar` + embedding (k=20)", similar)]
    out = [f"# mem0 facade cost per search ({n} memories, hash embedder, {nq} queries, p50)", "",
           "| path | p50 ms |", "|---|---|"]
    out += [f"| {name} | {ms:.3f} |" for name, ms in rows]
    out += ["", f"Facade over recall: {facade - recall:+.3f} ms; over similar: "
            f"{facade - similar:+.3f} ms (same process, same run)."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    text = main(*args)
    Path(__file__).with_name("results").joinpath("mem0.md").write_text(text)
    print(text)
