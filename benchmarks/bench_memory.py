"""Memory benchmarks (pytest-benchmark): the engine against its baselines, measured in one run on
the same data.

    python -m pytest benchmarks/bench_memory.py --benchmark-only
    python benchmarks/report.py            # runs this file and writes benchmarks/results/memory.md

Not collected by the default test run (``testpaths = ["tests"]``); nothing here is a unit test.

Data (seeded, synthetic, identical for every contender): memories of 8–24 words drawn by a Zipf law
from a 4,000-word vocabulary (10 % of them Chinese, segmented by the design tokenizer), one or two
tags, categories instruction / preference / project_knowledge / session_checkpoint /
conversation_summary (no self_identity / user_fact, so every contender ranks the same set),
``updated_at`` spread over 30 days, access counts 1–5; 384-d random unit vectors for entries and
queries, precomputed, so the engine is measured and not the embedding model. Queries are 2–6 words
from the same law. ``project=None``, ``reinforce=False``.

Groups (each row of a group runs on the same data in the same process):

* ``recall 500`` — one query: ``MemoryStore.recall`` vs the plain-Python design §6 oracle
  (``benchmarks/oracles/recall_py.py``) vs hand-glue a user would write: tantivy BM25 + NumPy
  ``E @ q`` + NumPy fusion; tantivy + faiss ``IndexFlatIP`` (k = N); bm25s + faiss; bm25s +
  NumPy ``E @ q`` (not among the issue's glues, which use faiss, but the fastest). The hand-glue
  computes the same design §6 score (recency + importance + 0.4·bm25 + 0.6·cos, top 20) and is
  checked to return the engine's top 20 before it is timed.
* ``recall_batch 1000x500`` — 1,000 queries at once: ``recall_batch`` (list of hits) and
  ``recall_batch_arrow`` vs the same hand-glue, batched the way a user would (one matrix product,
  tantivy per query because tantivy-py has no multi-query call, bm25s ``retrieve`` numba backend).
* ``recall 100k`` — one query over 100,000 entries vs the memory-bandwidth floor measured here:
  a numba streaming read (sum) of the 100k × 384 float32 matrix (153.6 MB) with 1 and with 2
  threads, and NumPy ``E @ q`` (BLAS gemv); the engine at 1 and 2 numba threads.
* ``save`` — 1,000 saves into a fresh on-disk store (journal; fsync ``interval`` / ``never``;
  embedder None, or a vector given) vs the same saves into an in-memory store (no journal).
* ``threads`` — the batch and single paths under numba / BLAS / OpenMP thread settings.

Thread pools are set deliberately for the whole run (see ``THREADS``; override with the
environment variables ``BENCH_NUMBA_THREADS``, ``BENCH_BLAS_THREADS``, ``BENCH_OMP_THREADS``).
"""

from __future__ import annotations

import itertools
import os
import random
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from maclaw_fast.config import (CATEGORY_TABLE, Bm25Config, CapacityConfig,  # noqa: E402
                                GraphConfig, MemoryConfig, PersistConfig, RecallConfig)
from maclaw_fast.memory.store import MemoryStore  # noqa: E402
from maclaw_fast.text.tokenizer import analysed_text, tokenize  # noqa: E402

DIM = 384
# design §6 as the reference wrote it: what the hand-glue contenders compute
REFERENCE_SCORING = RecallConfig(bm25_norm="raw", cos_norm="raw", weight_relevance=1.0,
                                 bm25_weight=0.4, cos_weight=0.6, adjacency_hops=0)
N_SMALL = 500
N_QUERIES = 1000
N_BIG = 100_000
N_SAVE = 1000
TOP = 20
NOW = 1_800_000_000.0
DECAY = 0.005
K1P1 = 2.2  # k1 + 1
CATS = ("instruction", "preference", "project_knowledge", "session_checkpoint",
        "conversation_summary")
TAGS = ("atlas", "zeus", "hermes", "infra", "frontend", "billing", "ml", "ops")
ZH = ("部署", "脚本", "数据库", "服务器", "配置", "日志", "用户", "测试", "接口", "缓存", "前端",
      "后端", "监控", "告警", "版本", "发布", "权限", "文件", "网络", "性能")


def _thread_default(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


# Chosen by the ``threads`` group on the project's 2-core machine (benchmarks/results/memory.md):
# one thread per pool was fastest for every batch path in every run (numba's second thread waits
# at the parallel region's barrier whenever the other core is busy); the single 500-entry recall
# is serial and indifferent. The 100k group also reports the engine and the floor at 2 threads.
THREADS = {
    "numba": _thread_default("BENCH_NUMBA_THREADS", 1),
    "blas": _thread_default("BENCH_BLAS_THREADS", 1),
    "omp": _thread_default("BENCH_OMP_THREADS", 1),
}


def set_threads(numba_n: int, blas_n: int, omp_n: int) -> None:
    """numba's pool, every BLAS (NumPy's OpenBLAS and faiss's), and faiss's OpenMP pool."""
    import faiss
    import numba
    import threadpoolctl

    numba.set_num_threads(min(numba_n, numba.config.NUMBA_NUM_THREADS))
    threadpoolctl.threadpool_limits(limits=blas_n, user_api="blas")
    faiss.omp_set_num_threads(omp_n)


# --------------------------------------------------------------------------- data
def _vocabulary(n: int = 4000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    syl = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "den", "par", "gor", "ex", "tri",
           "qua", "zel", "bin", "cor", "dat", "fen", "hul"]
    words: list[str] = []
    seen = set()
    while len(words) < int(n * 0.9):
        w = "".join(rng.choice(syl) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    zh = list(itertools.permutations(ZH, 2))
    rng.shuffle(zh)
    words += ["".join(p) for p in zh[: n - len(words)]]
    rng.shuffle(words)
    return words


VOCAB = _vocabulary()
_ZIPF = np.cumsum(1.0 / np.arange(1, len(VOCAB) + 1) ** 1.05)
_ZIPF /= _ZIPF[-1]


def _words(rng: np.random.Generator, k: int) -> list[str]:
    idx = np.searchsorted(_ZIPF, rng.random(k))
    return [VOCAB[i] for i in idx]


def unit_vectors(n: int, seed: int) -> np.ndarray:
    """``n`` random unit vectors, float32, 384-d."""
    v = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def make_corpus(n: int, seed: int = 0) -> dict:
    """Synthetic memories (see the module docstring); contents are unique."""
    rng = np.random.default_rng(seed)
    texts, seen = [], set()
    while len(texts) < n:
        t = " ".join(_words(rng, int(rng.integers(8, 25))))
        if t not in seen:
            seen.add(t)
            texts.append(t)
    return {
        "texts": texts,
        "categories": [CATS[i] for i in rng.integers(0, len(CATS), n)],
        "tags": [tuple(sorted(set(rng.choice(TAGS, int(rng.integers(1, 3)), replace=True))))
                 for _ in range(n)],
        "age_h": rng.random(n) * 30 * 24,
        "extra_access": rng.integers(0, 5, n),
        "vectors": unit_vectors(n, seed + 1000),
    }


def make_queries(nq: int, seed: int = 1) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    return ([" ".join(_words(rng, int(rng.integers(2, 7)))) for _ in range(nq)],
            unit_vectors(nq, seed + 2000))


class Clock:
    """A settable clock, so entries get the corpus' ``updated_at``."""

    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def build_store(corpus: dict, *, path=None, auto_link: bool = True, embedder="hash",
                fsync: str = "interval") -> MemoryStore:
    """A store holding ``corpus`` through the public API: ``save`` (with the precomputed vector)
    at the entry's time, then ``touch`` for the extra access counts."""
    n = len(corpus["texts"])
    # the design §6 scoring the hand-glues implement (raw BM25 + raw cosine, weights 1/1/1,
    # tantivy's k1/b, no conversation links), so every contender ranks alike; the default
    # scoring runs the same kernels (benchmarks/ab_recall.py times it against an older build)
    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=max(2 * n, 500)),
                       persist=PersistConfig(fsync=fsync), auto_link=auto_link,
                       bm25=Bm25Config(), recall=REFERENCE_SCORING,
                       graph=GraphConfig(adjacency=False))
    clock = Clock()
    store = (MemoryStore.open(path, embedder=embedder, config=cfg, clock=clock) if path
             else MemoryStore.in_memory(embedder=embedder, config=cfg, clock=clock))
    ids = []
    for i in range(n):
        clock.t = NOW - float(corpus["age_h"][i]) * 3600.0
        e = store.save(corpus["texts"][i], category=corpus["categories"][i],
                       tags=corpus["tags"][i], vector=corpus["vectors"][i])
        ids.append(e.id)
    for i in np.flatnonzero(corpus["extra_access"]):
        store.touch([ids[i]] * int(corpus["extra_access"][i]))
    clock.t = NOW
    store.bench_ids = ids  # row order of the corpus, for the other contenders
    return store


def corpus_columns(store: MemoryStore, corpus: dict) -> dict:
    """What every other contender indexes: per entry (corpus order) id, tokens, vector,
    updated_at, category weight and access count, read back from the store."""
    entries = [store.get(i) for i in store.bench_ids]
    return {
        "ids": np.array(store.bench_ids, dtype=object),
        "tokens": [tokenize(analysed_text(e.content, e.tags)) for e in entries],
        "vectors": np.ascontiguousarray(corpus["vectors"], dtype=np.float32),
        "updated_at": np.array([e.updated_at for e in entries]),
        "weight": np.array([CATEGORY_TABLE[e.category][0] for e in entries]),
        "access": np.array([e.access_count for e in entries], dtype=np.float64),
        "entries": entries,
    }


# --------------------------------------------------------------------------- hand-glue peers
def _base(cols: dict, now: float) -> np.ndarray:
    hours = np.maximum(now - cols["updated_at"], 0.0) / 3600.0
    return np.exp(-DECAY * hours) + cols["weight"] + np.log1p(cols["access"])


def _top(score: np.ndarray, k: int = TOP) -> np.ndarray:
    part = np.argpartition(-score, k)[:k]
    return part[np.argsort(-score[part], kind="stable")]


def _top_rows(score: np.ndarray, k: int = TOP) -> np.ndarray:
    part = np.argpartition(-score, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(score, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


class TantivyBm25:
    """tantivy over our tokens (whitespace tokenizer), one segment so ``DocAddress.doc`` is the
    row; term queries built from our tokens (``parse_query`` raises on ordinary text)."""

    def __init__(self, tokens: list[list[str]]) -> None:
        import tantivy

        self.tantivy = tantivy
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema)
        w = self.index.writer(heap_size=200_000_000, num_threads=1)
        for toks in tokens:
            d = tantivy.Document()
            d.add_text("body", " ".join(toks))
            w.add_document(d)
        w.commit()
        w.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        assert self.searcher.num_segments == 1
        self.n = len(tokens)

    def scores(self, q_tokens: list[str], out: np.ndarray) -> np.ndarray:
        t = self.tantivy
        out[:] = 0.0
        uniq = list(dict.fromkeys(q_tokens))
        if not uniq:
            return out
        q = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, "body", tok, index_option="freq"))
             for tok in uniq])
        for score, addr in self.searcher.search(q, limit=self.n).hits:
            out[addr.doc] = score
        return out


class GlueTantivyNumpy:
    """tantivy BM25 + NumPy ``E @ q`` + NumPy fusion and top-k."""

    name = "hand-glue: tantivy + NumPy E@q"
    uses_faiss = False  # the glues use faiss; this one and bm25s + NumPy are extra

    def __init__(self, cols: dict) -> None:
        self.cols = cols
        self.E = cols["vectors"]
        self.bm25 = TantivyBm25(cols["tokens"])
        self.n = self.E.shape[0]

    def cos(self, q: np.ndarray) -> np.ndarray:
        return self.E @ q

    def cos_batch(self, Q: np.ndarray) -> np.ndarray:
        return Q @ self.E.T

    def bm25_batch(self, token_lists):
        out = np.zeros((len(token_lists), self.n))
        for i, toks in enumerate(token_lists):
            self.bm25.scores(toks, out[i])
        return out

    def recall(self, query: str, qvec: np.ndarray, now: float = NOW) -> np.ndarray:
        bm25 = self.bm25.scores(tokenize(query), np.empty(self.n))
        cos = np.maximum(self.cos(qvec), 0.0)
        score = _base(self.cols, now) + 0.4 * bm25 + 0.6 * cos
        return self.cols["ids"][_top(score)]

    def recall_batch(self, queries: list[str], Q: np.ndarray, now: float = NOW):
        bm25 = self.bm25_batch([tokenize(q) for q in queries])
        cos = np.maximum(self.cos_batch(Q), 0.0)
        score = _base(self.cols, now)[None, :] + 0.4 * bm25 + 0.6 * cos
        return self.cols["ids"][_top_rows(score)]


class GlueTantivyFaiss(GlueTantivyNumpy):
    """tantivy BM25 + faiss ``IndexFlatIP`` searched with k = N (every similarity)."""

    name = "hand-glue: tantivy + faiss IndexFlatIP"
    uses_faiss = True

    def __init__(self, cols: dict) -> None:
        import faiss

        super().__init__(cols)
        self.index = faiss.IndexFlatIP(DIM)
        self.index.add(self.E)

    def cos(self, q: np.ndarray) -> np.ndarray:
        D, I = self.index.search(q[None, :], self.n)
        out = np.empty(self.n, np.float32)
        out[I[0]] = D[0]
        return out

    def cos_batch(self, Q: np.ndarray) -> np.ndarray:
        D, I = self.index.search(Q, self.n)
        out = np.empty_like(D)
        np.put_along_axis(out, I, D, axis=1)
        return out


class GlueBm25sFaiss(GlueTantivyFaiss):
    """bm25s (k1 1.2, b 0.75, Lucene IDF) + faiss ``IndexFlatIP`` (k = N)."""

    name = "hand-glue: bm25s + faiss IndexFlatIP"

    def __init__(self, cols: dict) -> None:
        import bm25s

        GlueTantivyNumpy.__init__(self, cols)  # tantivy unused here, kept for symmetry
        import faiss

        self.index = faiss.IndexFlatIP(DIM)
        self.index.add(self.E)
        self.retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend="numba")
        self.retriever.index(cols["tokens"], show_progress=False)

    def bm25_single(self, toks: list[str]) -> np.ndarray:
        # bm25s' "lucene" scoring drops BM25's (k1 + 1) factor: scale back so the fusion weights
        # mean what design §6 says (same ranking of BM25 alone, same fused ranking as the engine)
        if not toks:
            return np.zeros(self.n)
        return self.retriever.get_scores(toks) * K1P1

    def bm25_batch(self, token_lists):
        nonempty = [t if t else ["\x00"] for t in token_lists]
        docs, scores = self.retriever.retrieve(nonempty, k=self.n, show_progress=False,
                                               backend_selection="numba",
                                               n_threads=THREADS["numba"])
        out = np.zeros((len(token_lists), self.n))
        np.put_along_axis(out, docs.astype(np.int64), scores * K1P1, axis=1)
        return out

    def recall(self, query: str, qvec: np.ndarray, now: float = NOW) -> np.ndarray:
        bm25 = self.bm25_single(tokenize(query))
        cos = np.maximum(self.cos(qvec), 0.0)
        score = _base(self.cols, now) + 0.4 * bm25 + 0.6 * cos
        return self.cols["ids"][_top(score)]


class GlueBm25sNumpy(GlueBm25sFaiss):
    """bm25s + NumPy ``E @ q``: not one of the issue's glues (those use faiss), but the fastest
    combination of the pieces a user would pick at 500 entries (faiss's k = N search sorts all
    N results; a BLAS gemv does not)."""

    name = "hand-glue: bm25s + NumPy E@q"
    uses_faiss = False
    cos = GlueTantivyNumpy.cos
    cos_batch = GlueTantivyNumpy.cos_batch


GLUES = (GlueTantivyNumpy, GlueTantivyFaiss, GlueBm25sFaiss, GlueBm25sNumpy)


# --------------------------------------------------------------------------- oracle adapter
def make_oracle(cols: dict, config: MemoryConfig):
    """The plain-Python design §6 recall (``benchmarks/oracles/recall_py.py``, the per-entry loop
    over dicts) over the same entries; returns ``recall(query, qvec) -> ids``. Entry tokens are
    given (indexing is not timed); the query is tokenised inside, as the engine does."""
    from oracles.recall_py import PyRecall

    entries = []
    for i, e in enumerate(cols["entries"]):
        entries.append({"id": e.id, "content": e.content, "category": e.category,
                        "tags": list(e.tags), "updated_at": e.updated_at,
                        "created_at": e.created_at,
                        "access_count": e.access_count, "scope": e.scope, "status": e.status,
                        "vector": cols["vectors"][i].tolist(),
                        "related": dict(zip(e.related_ids, e.related_strengths)),
                        "seq": i, "compact_form": e.compact_form, "tokens": cols["tokens"][i]})
    py = PyRecall(entries, config)

    def recall(query: str, qvec: np.ndarray, now: float = NOW):
        return [h[0] for h in py.recall(query, None, qvec.tolist(), None, now)]

    return recall


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session", autouse=True)
def _thread_pools():
    set_threads(THREADS["numba"], THREADS["blas"], THREADS["omp"])
    yield


def _mean_overlap(a_lists, b_lists) -> float:
    return float(np.mean([len(set(a) & set(b)) / max(len(a), 1) for a, b in zip(a_lists, b_lists)]))


@pytest.fixture(scope="module")
def small():
    corpus = make_corpus(N_SMALL, seed=0)
    queries, Q = make_queries(N_QUERIES, seed=1)
    store = build_store(corpus)
    cols = corpus_columns(store, corpus)
    glues = {cls.__name__: cls(cols) for cls in GLUES}
    # warm every path (numba compile, faiss, bm25s jit) and check the contenders agree
    engine = [[h.entry.id for h in store.recall(q, query_vector=Q[i], reinforce=False)]
              for i, q in enumerate(queries[:50])]
    store.recall_batch(queries[:8], query_vectors=Q[:8], reinforce=False)
    store.recall_batch_arrow(queries[:8], query_vectors=Q[:8], reinforce=False)
    agreement = {}
    for name, g in glues.items():
        single = [list(g.recall(q, Q[i])) for i, q in enumerate(queries[:50])]
        batch = [list(r) for r in g.recall_batch(queries[:50], Q[:50])]
        agreement[name] = (_mean_overlap(engine, single), _mean_overlap(engine, batch))
        assert agreement[name][0] >= 0.95 and agreement[name][1] >= 0.95, (name, agreement)
    return {"store": store, "cols": cols, "queries": queries, "Q": Q, "glues": glues,
            "engine_top": engine, "agreement": agreement}


def _cycle(n: int):
    it = itertools.count()
    return lambda: next(it) % n


def _info(benchmark, *, contender: str, role: str, size: str, per_call: int = 1, **extra):
    benchmark.extra_info.update({"contender": contender, "role": role, "size": size,
                                 "per_call": per_call, "threads": dict(THREADS), **extra})


# --------------------------------------------------------------------------- recall 500
SINGLE_ROUNDS = 2000


@pytest.mark.benchmark(group="recall 500")
def test_recall_engine(benchmark, small):
    store, queries, Q = small["store"], small["queries"], small["Q"]
    nxt = _cycle(len(queries))

    def run():
        i = nxt()
        return store.recall(queries[i], query_vector=Q[i], reinforce=False)

    hits = benchmark.pedantic(run, rounds=SINGLE_ROUNDS, iterations=1, warmup_rounds=50)
    _info(benchmark, contender="maclaw_fast recall", role="engine",
          size=f"{N_SMALL} entries x {DIM}-d, top {TOP}")
    assert len(hits) == TOP


@pytest.mark.benchmark(group="recall 500")
def test_recall_engine_reinforcing(benchmark, small, tmp_path_factory):
    """The default call: ``reinforce=True`` on an on-disk store, so every recall also updates
    access counts, strengths and times and journals a touch record (fsync ``interval``)."""
    store = build_store(make_corpus(N_SMALL, seed=0), path=tmp_path_factory.mktemp("reinforce"))
    queries, Q = small["queries"], small["Q"]
    nxt = _cycle(len(queries))

    def run():
        i = nxt()
        return store.recall(queries[i], query_vector=Q[i])

    try:
        benchmark.pedantic(run, rounds=SINGLE_ROUNDS, iterations=1, warmup_rounds=50)
    finally:
        store.close()
    _info(benchmark, contender="maclaw_fast recall, reinforce=True (default), on disk",
          role="engine-default", size=f"{N_SMALL} entries x {DIM}-d, top {TOP}")


@pytest.mark.benchmark(group="recall 500")
def test_recall_oracle(benchmark, small):
    recall = make_oracle(small["cols"], small["store"].config)
    queries, Q = small["queries"], small["Q"]
    got = [recall(q, Q[i]) for i, q in enumerate(queries[:10])]
    overlap = _mean_overlap(small["engine_top"][:10], got)
    assert overlap >= 0.95, overlap
    nxt = _cycle(len(queries))

    def run():
        i = nxt()
        return recall(queries[i], Q[i])

    benchmark.pedantic(run, rounds=30, iterations=1, warmup_rounds=1)
    _info(benchmark, contender="plain-Python design §6 oracle (benchmarks/oracles/recall_py.py)",
          role="baseline", size=f"{N_SMALL} entries x {DIM}-d, top {TOP}",
          agreement_top20=overlap)


@pytest.mark.benchmark(group="recall 500")
@pytest.mark.parametrize("glue", [c.__name__ for c in GLUES])
def test_recall_glue(benchmark, small, glue):
    g = small["glues"][glue]
    queries, Q = small["queries"], small["Q"]
    nxt = _cycle(len(queries))

    def run():
        i = nxt()
        return g.recall(queries[i], Q[i])

    benchmark.pedantic(run, rounds=SINGLE_ROUNDS, iterations=1, warmup_rounds=50)
    _info(benchmark, contender=g.name, role="glue", size=f"{N_SMALL} entries x {DIM}-d, top {TOP}",
          agreement_top20=small["agreement"][glue][0], uses_faiss=g.uses_faiss)


# --------------------------------------------------------------------------- recall_batch
BATCH_ROUNDS = 15


@pytest.mark.benchmark(group="recall_batch 1000x500")
@pytest.mark.parametrize("form", ["arrow", "list"])
def test_recall_batch_engine(benchmark, small, form):
    store, queries, Q = small["store"], small["queries"], small["Q"]
    fn = store.recall_batch_arrow if form == "arrow" else store.recall_batch
    res = benchmark.pedantic(fn, args=(queries,), kwargs={"query_vectors": Q, "reinforce": False},
                             rounds=BATCH_ROUNDS, iterations=1, warmup_rounds=1)
    _info(benchmark, contender=f"maclaw_fast recall_batch ({form})", role="engine",
          size=f"{N_QUERIES} queries x {N_SMALL} entries", per_call=N_QUERIES)
    assert (res.num_rows if form == "arrow" else sum(map(len, res))) == N_QUERIES * TOP


@pytest.mark.benchmark(group="recall_batch 1000x500")
@pytest.mark.parametrize("glue", [c.__name__ for c in GLUES])
def test_recall_batch_glue(benchmark, small, glue):
    g = small["glues"][glue]
    res = benchmark.pedantic(g.recall_batch, args=(small["queries"], small["Q"]),
                             rounds=BATCH_ROUNDS, iterations=1, warmup_rounds=1)
    _info(benchmark, contender=g.name, role="glue",
          size=f"{N_QUERIES} queries x {N_SMALL} entries", per_call=N_QUERIES,
          agreement_top20=small["agreement"][glue][1], uses_faiss=g.uses_faiss)
    assert res.shape == (N_QUERIES, TOP)


# --------------------------------------------------------------------------- interleaved
INTERLEAVED_ROUNDS = 25


@pytest.mark.benchmark(group="interleaved")
def test_recall_interleaved(benchmark, small, tmp_path_factory):
    """The single recall and its baselines in turns (``interleaved.py``): per round 200 calls of
    the engine (plain and as called by default, on disk), of every hand-glue, 3 of the oracle."""
    from interleaved import round_robin

    store, queries, Q = small["store"], small["queries"], small["Q"]
    disk = build_store(make_corpus(N_SMALL, seed=0), path=tmp_path_factory.mktemp("rr"))
    oracle = make_oracle(small["cols"], store.config)
    nxt = _cycle(len(queries))

    def call(fn):
        def run():
            i = nxt()
            fn(queries[i], Q[i])
        return run

    contenders = {
        "maclaw_fast recall": (call(lambda q, v: store.recall(q, query_vector=v,
                                                              reinforce=False)), 200),
        "maclaw_fast recall, reinforce=True (default), on disk":
            (call(lambda q, v: disk.recall(q, query_vector=v)), 200),
        "plain-Python design §6 oracle": (call(oracle), 3)}
    for g in small["glues"].values():
        contenders[g.name] = (call(g.recall), 200)
    for fn, _ in contenders.values():  # warm every path
        fn()
    try:
        per_round = benchmark.pedantic(round_robin, args=(contenders, INTERLEAVED_ROUNDS),
                                       rounds=1, iterations=1)
    finally:
        disk.close()
    _info(benchmark, contender="round robin, single recall", role="interleaved",
          size=f"{N_SMALL} entries x {DIM}-d, top {TOP}", per_round=per_round,
          engine="maclaw_fast recall",
          uses_faiss={g.name: g.uses_faiss for g in small["glues"].values()})


@pytest.mark.benchmark(group="interleaved")
def test_recall_batch_interleaved(benchmark, small):
    """The 1,000-query batch forms and the batched hand-glues in turns, one batch each per
    round."""
    from interleaved import round_robin

    store, queries, Q = small["store"], small["queries"], small["Q"]
    contenders = {
        "maclaw_fast recall_batch (arrow)":
            (lambda: store.recall_batch_arrow(queries, query_vectors=Q, reinforce=False), 1),
        "maclaw_fast recall_batch (list)":
            (lambda: store.recall_batch(queries, query_vectors=Q, reinforce=False), 1)}
    for g in small["glues"].values():
        contenders[g.name] = ((lambda g=g: g.recall_batch(queries, Q)), 1)
    per_round = benchmark.pedantic(round_robin, args=(contenders, BATCH_ROUNDS),
                                   rounds=1, iterations=1)
    _info(benchmark, contender="round robin, batch", role="interleaved",
          size=f"{N_QUERIES} queries x {N_SMALL} entries", per_call=N_QUERIES,
          per_round=per_round, engine="maclaw_fast recall_batch (list)",
          uses_faiss={g.name: g.uses_faiss for g in small["glues"].values()})


# --------------------------------------------------------------------------- recall 100k
@pytest.fixture(scope="module")
def big_matrix():
    return np.ascontiguousarray(make_corpus(N_BIG, seed=10)["vectors"]), make_queries(200, 11)


@pytest.fixture(scope="module")
def big(big_matrix):
    corpus = make_corpus(N_BIG, seed=10)
    queries, Q = big_matrix[1]
    store = build_store(corpus, auto_link=False)
    store.recall(queries[0], query_vector=Q[0], reinforce=False)
    return {"store": store, "queries": queries, "Q": Q}


def _stream_kernels():
    from numba import njit, prange

    @njit(cache=False, fastmath=True, parallel=True)
    def stream_parallel(m):
        total = np.float32(0.0)
        for i in prange(m.shape[0]):
            acc = np.float32(0.0)
            for j in range(m.shape[1]):
                acc += m[i, j]
            total += acc
        return total

    @njit(cache=False, fastmath=True)
    def stream_serial(m):
        acc = np.float32(0.0)
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                acc += m[i, j]
        return acc

    return stream_parallel, stream_serial


@pytest.mark.benchmark(group="recall 100k")
@pytest.mark.parametrize("numba_threads", [1, 2])
def test_recall_100k_engine(benchmark, big, numba_threads):
    import numba

    store, queries, Q = big["store"], big["queries"], big["Q"]
    nxt = _cycle(len(queries))

    def run():
        i = nxt()
        return store.recall(queries[i], query_vector=Q[i], reinforce=False)

    numba.set_num_threads(min(numba_threads, numba.config.NUMBA_NUM_THREADS))
    try:
        run()
        benchmark.pedantic(run, rounds=60, iterations=1, warmup_rounds=3)
    finally:
        numba.set_num_threads(THREADS["numba"])
    _info(benchmark, contender=f"maclaw_fast recall (numba {numba_threads} thread"
          f"{'s' if numba_threads > 1 else ''})", role="engine",
          size=f"{N_BIG} entries x {DIM}-d float32 = {N_BIG * DIM * 4 / 1e6:.1f} MB")


@pytest.mark.benchmark(group="recall 100k")
@pytest.mark.parametrize("kind", ["numba-stream-2-threads", "numba-stream-1-thread",
                                  "numpy-gemv"])
def test_recall_100k_floor(benchmark, big_matrix, kind):
    import numba

    E, (_, Q) = big_matrix
    par, ser = _stream_kernels()
    if kind == "numpy-gemv":
        nxt = _cycle(len(Q))
        fn = lambda: E @ Q[nxt()]  # noqa: E731
    else:
        kern = par if kind.endswith("2-threads") else ser
        fn = lambda: kern(E)  # noqa: E731
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        fn()
        benchmark.pedantic(fn, rounds=60, iterations=1, warmup_rounds=3)
    finally:
        numba.set_num_threads(THREADS["numba"])
    mb = E.nbytes / 1e6
    _info(benchmark, contender=f"floor: {kind}", role="floor",
          size=f"{N_BIG} x {DIM} float32 = {mb:.1f} MB")


# --------------------------------------------------------------------------- save
SAVE_VARIANTS = {
    "journal-interval-noembed": dict(fsync="interval", embedder=None),
    "journal-never-noembed": dict(fsync="never", embedder=None),
    "journal-interval-vector": dict(fsync="interval", embedder="hash"),
    "journal-never-vector": dict(fsync="never", embedder="hash"),
    "journal-interval-noembed-nolink": dict(fsync="interval", embedder=None, auto_link=False),
    "in-memory-noembed": dict(fsync=None, embedder=None),
    "in-memory-vector": dict(fsync=None, embedder="hash"),
}


@pytest.mark.benchmark(group="save")
@pytest.mark.parametrize("variant", list(SAVE_VARIANTS))
def test_save(benchmark, tmp_path_factory, variant):
    v = SAVE_VARIANTS[variant]
    corpus = make_corpus(N_SAVE, seed=20)
    texts, tags, cats = corpus["texts"], corpus["tags"], corpus["categories"]
    vecs = corpus["vectors"] if v["embedder"] else [None] * N_SAVE
    opened = []
    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=10 * N_SAVE),
                       persist=PersistConfig(fsync=v["fsync"] or "never"),
                       auto_link=v.get("auto_link", True))

    def setup():
        for s in opened:
            s.close()
        opened.clear()
        if v["fsync"] is None:
            s = MemoryStore.in_memory(embedder=v["embedder"], config=cfg)
        else:
            s = MemoryStore.open(tmp_path_factory.mktemp("save"), embedder=v["embedder"],
                                 config=cfg)
        opened.append(s)
        return (s,), {}

    def run(s):
        for i in range(N_SAVE):
            s.save(texts[i], category=cats[i], tags=tags[i], vector=vecs[i])

    benchmark.pedantic(run, setup=setup, rounds=5, iterations=1, warmup_rounds=1)
    for s in opened:
        s.close()
    _info(benchmark, contender=f"save ({variant})",
          role="engine" if v["fsync"] else "baseline",
          size=f"{N_SAVE} saves into a fresh store (auto-link "
               f"{'on' if v.get('auto_link', True) else 'off'})", per_call=N_SAVE)


# --------------------------------------------------------------------------- threads
THREAD_SETTINGS = [(1, 1, 1), (2, 1, 1), (1, 2, 2), (2, 2, 2)]


@pytest.mark.benchmark(group="threads")
@pytest.mark.parametrize("setting", THREAD_SETTINGS,
                         ids=[f"numba{a}-blas{b}-omp{c}" for a, b, c in THREAD_SETTINGS])
@pytest.mark.parametrize("path", ["recall_batch_arrow", "recall_batch", "recall",
                                  "glue_tantivy_faiss_batch", "glue_numpy_batch",
                                  "glue_bm25s_numpy_batch"])
def test_threads(benchmark, small, setting, path):
    store, queries, Q = small["store"], small["queries"], small["Q"]
    set_threads(*setting)
    default = store.config
    # the engine's batch kernels take their thread count from the config ("auto" by default)
    store.config = msgspec.structs.replace(default, batch_threads=setting[0])
    try:
        if path == "recall":
            nxt = _cycle(len(queries))

            def fn():
                i = nxt()
                return store.recall(queries[i], query_vector=Q[i], reinforce=False)
            rounds, per_call = 1000, 1
        elif path.startswith("glue"):
            g = small["glues"]["GlueTantivyFaiss" if "faiss" in path else "GlueBm25sNumpy"
                               if "bm25s" in path else "GlueTantivyNumpy"]
            fn = lambda: g.recall_batch(queries, Q)  # noqa: E731
            rounds, per_call = 10, N_QUERIES
        else:
            f = getattr(store, path)
            fn = lambda: f(queries, query_vectors=Q, reinforce=False)  # noqa: E731
            rounds, per_call = 10, N_QUERIES
        fn()
        benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    finally:
        store.config = default
        set_threads(THREADS["numba"], THREADS["blas"], THREADS["omp"])
    _info(benchmark, contender=path, role="threads", size=f"{N_QUERIES} queries x {N_SMALL}",
          per_call=per_call, setting={"numba": setting[0], "blas": setting[1],
                                      "omp": setting[2]})

