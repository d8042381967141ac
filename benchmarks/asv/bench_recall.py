"""asv benchmarks of the memory engine: recall at 500 entries, recall_batch 1,000 × 500, save.

Same synthetic data as ``benchmarks/bench_memory.py`` (whose generators these import): 384-d random
unit vectors precomputed, so the engine is measured and not the embedding model.

    asv run --quick --python=same          # the working tree, in the current environment
    asv run --python=same HEAD^!           # one commit (the env is "existing": what is installed)

A commit whose API lacks what a benchmark needs skips it (``NotImplementedError`` in setup).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))  # benchmarks/: the shared data generators


def _world(n_entries: int, n_queries: int):
    try:
        import bench_memory as bm
        from maclaw_fast.memory.store import MemoryStore  # noqa: F401
    except ImportError as exc:  # an old commit: nothing to measure
        raise NotImplementedError(str(exc)) from exc
    corpus = bm.make_corpus(n_entries, seed=0)
    queries, Q = bm.make_queries(n_queries, seed=1)
    bm.set_threads(bm.THREADS["numba"], bm.THREADS["blas"], bm.THREADS["omp"])
    return bm, corpus, queries, Q


class Recall500:
    """One ``recall`` (top 20) over 500 entries; ``reinforce=False``."""

    timeout = 300

    def setup(self):
        bm, corpus, self.queries, self.Q = _world(500, 1000)
        self.store = bm.build_store(corpus)
        if not hasattr(self.store, "recall"):
            raise NotImplementedError
        self.i = 0
        self.store.recall(self.queries[0], query_vector=self.Q[0], reinforce=False)

    def time_recall(self):
        i = self.i = (self.i + 1) % len(self.queries)
        self.store.recall(self.queries[i], query_vector=self.Q[i], reinforce=False)


class RecallBatch1000x500:
    """``recall_batch`` of 1,000 queries over 500 entries, list and Arrow forms."""

    timeout = 600

    def setup(self):
        bm, corpus, self.queries, self.Q = _world(500, 1000)
        self.store = bm.build_store(corpus)
        if not hasattr(self.store, "recall_batch_arrow"):
            raise NotImplementedError
        self.store.recall_batch(self.queries[:8], query_vectors=self.Q[:8], reinforce=False)
        self.store.recall_batch_arrow(self.queries[:8], query_vectors=self.Q[:8],
                                      reinforce=False)

    def time_recall_batch_arrow(self):
        self.store.recall_batch_arrow(self.queries, query_vectors=self.Q, reinforce=False)

    def time_recall_batch_list(self):
        self.store.recall_batch(self.queries, query_vectors=self.Q, reinforce=False)

    def track_queries_per_second_arrow(self):
        import time

        t0 = time.perf_counter()
        self.store.recall_batch_arrow(self.queries, query_vectors=self.Q, reinforce=False)
        return len(self.queries) / (time.perf_counter() - t0)

    track_queries_per_second_arrow.unit = "queries/s"


class Save:
    """1,000 saves into a fresh on-disk store (journal, fsync interval), no embedder / a vector
    given."""

    timeout = 600
    params = ["no-embedder", "vector"]
    param_names = ["embedding"]
    number = 1
    repeat = (3, 5, 30.0)

    def setup(self, embedding):
        from maclaw_fast.config import CapacityConfig, MemoryConfig, PersistConfig
        from maclaw_fast.memory.store import MemoryStore

        bm, corpus, _, _ = _world(1000, 1)
        self.texts, self.tags, self.cats = corpus["texts"], corpus["tags"], corpus["categories"]
        self.vecs = corpus["vectors"] if embedding == "vector" else [None] * 1000
        self.embedder = "hash" if embedding == "vector" else None
        self.cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=10_000),
                                persist=PersistConfig(fsync="interval"))
        self.tmp = tempfile.mkdtemp(prefix="asv-save-")
        self.n = 0
        self.MemoryStore = MemoryStore

    def teardown(self, embedding):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def time_save_1000(self, embedding):
        self.n += 1
        with self.MemoryStore.open(Path(self.tmp) / str(self.n), embedder=self.embedder,
                                   config=self.cfg) as store:
            for i in range(1000):
                store.save(self.texts[i], category=self.cats[i], tags=self.tags[i],
                           vector=self.vecs[i])
