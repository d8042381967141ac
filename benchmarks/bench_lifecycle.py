"""Lifecycle benchmarks (pytest-benchmark): the decay pass, a maintenance run without LLM, and
recall over a store holding dormant and archived entries.

    python -m pytest benchmarks/bench_lifecycle.py --benchmark-only
    python benchmarks/bench_lifecycle.py      # the recall ratios, interleaved, written to
                                              # benchmarks/results/lifecycle.md

Not collected by the default test run; nothing here is a unit test (each benchmark does check
that the contenders agree before it is timed).

Groups:

* ``decay 100k`` — the forgetting curve over 100,000 entries (strength 0.5–3, ``updated_at``
  spread over 2,000 h, 5 % self_identity, 10 % not active): ``decay_pass`` (NumPy, serial)
  and :func:`lifecycle.decay` on a real store
  (kernel + column slicing + journaling the entries that turn dormant) vs the per-entry Python
  loop over the same NumPy columns (design §7 target: ≥ 30× faster).
* ``maintenance 500`` — ``Maintenance(store).run_once()`` without LLM on a 500-entry store
  (hash embedder): backup, GC (revives ≤ 10, archives 51 more), decay, exact dedup, skipped LLM
  steps; in memory (no backup) and on disk (journal + JSON backup) (target ≤ 50 ms). Each
  round starts from the same 500 entries (the setup re-fills the store; not timed).
* ``recall with dormant`` — one ``recall`` (query vector given, ``reinforce=False``) on the
  ``bench_memory`` data: 500 active entries alone; the same 500 plus 500 dormant ones (design R9:
  still indexed, scored, revived on a strong cue); the same with revival off; and 500 active
  plus 500 archived (archive search on). Queries: the ``bench_memory`` queries (random words,
  random vectors: weak cues, as most recalls are for most entries), and queries made of a
  dormant entry's words with its vector (strong cues: the revival path runs). Target: 500 + 500
  dormant within 1.3× of 500 alone, measured round-robin in one run (``__main__``). The
  ``__main__`` run also times the dormant store with its dormant rows' vectors removed (no
  cosine to compute for them), which shows what those cosines cost, the dormant store whose
  cues may come from the vector alone (``revive_needs_term=False``), and the whole call a user
  makes: the query as text, embedded by the default model (``embedder="auto"``, every entry
  saved with that model's vector), 500 active alone against 500 + 500 dormant; and the same
  entries saved as conversation turns (:func:`conversation_stores`: the thread prior's path),
  500 active turns alone against 500 + 500 dormant, with the query vector given and as text;
  and ``recall_batch`` over the notes stores (batches of 200 with the query vectors given, of
  100 as text).
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

import msgspec
import numpy as np
import pytest

from maclaw_fast.maintenance import Maintenance
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.lifecycle import decay
from maclaw_fast.text.tokenizer import tokenize
from maclaw_fast.memory.lifecycle import decay_pass

N = 100_000
NOW = 1_700_000_000.0
RATE, THRESHOLD = 0.003, 0.1


@pytest.fixture(scope="module")
def columns():
    rng = np.random.default_rng(0)
    strength = rng.uniform(0.5, 3.0, N)
    updated = NOW - rng.uniform(0, 2000, N) * 3600.0
    exempt = rng.random(N) < 0.05
    active = rng.random(N) > 0.10
    return strength, updated, exempt, active


def python_loop(strength, updated, exempt, active):
    out_s = strength.copy()
    out_d = np.zeros(len(strength), np.bool_)
    for i in range(len(strength)):
        if exempt[i] or not active[i]:
            continue
        s = strength[i]
        cur = 0.0 if s <= 0 else s * math.exp(-RATE * max(NOW - updated[i], 0.0) / 3600.0)
        if cur < THRESHOLD:
            out_s[i] = cur
            out_d[i] = True
    return out_s, out_d


def _kernel(fn, cols):
    out_s = np.empty(N)
    out_d = np.empty(N, np.bool_)
    fn(*cols, NOW, RATE, THRESHOLD, out_s, out_d)
    return out_s, out_d


@pytest.mark.benchmark(group="decay 100k")
def test_decay_python_loop(benchmark, columns):
    benchmark.pedantic(python_loop, args=columns, rounds=3, iterations=1)


@pytest.mark.benchmark(group="decay 100k")
@pytest.mark.parametrize("fn", [decay_pass], ids=["serial"])
def test_decay_kernel(benchmark, columns, fn):
    ref = python_loop(*columns)
    got = _kernel(fn, columns)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    np.testing.assert_array_equal(got[1], ref[1])
    benchmark(_kernel, fn, columns)


@pytest.mark.benchmark(group="decay 100k")
def test_decay_store_pass(benchmark):
    from maclaw_fast.config import CapacityConfig, MemoryConfig

    cfg = MemoryConfig(capacity=CapacityConfig(store_capacity=N), auto_link=False)
    rng = np.random.default_rng(1)
    store = MemoryStore.in_memory(embedder=None, clock=lambda: NOW, config=cfg)
    ages = rng.uniform(0, 700, N)
    store.import_records([{
        "id": f"e{i}", "content": f"entry {i}", "category": "preference", "tags": (),
        "created_at": NOW - a * 3600, "updated_at": NOW - a * 3600, "access_count": 1,
        "strength": 1.0, "status": "active", "pinned": False, "compact_form": "",
        "related_ids": [], "related_strengths": [], "embedding": None}
        for i, a in enumerate(ages)])
    assert len(store) == N
    benchmark(decay, store, now=NOW)


def _fill(store, seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(3000)]
    while len(store) < 500:
        k = len(store) + int(rng.integers(1e9))
        store.save(" ".join(rng.choice(words, 12)) + f" #{k}",
                   category=["preference", "instruction", "project_knowledge",
                             "session_checkpoint"][k % 4], tags=[f"t{k % 7}"])


@pytest.mark.benchmark(group="maintenance 500")
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_maintenance_run_without_llm(benchmark, where):
    tmp = tempfile.mkdtemp()
    store = (MemoryStore.in_memory(embedder="hash") if where == "memory"
             else MemoryStore.open(tmp + "/st", embedder="hash"))
    m = Maintenance(store)
    _fill(store, 0)
    m.run_once()  # warm-up (numba kernels load from cache)
    seeds = iter(range(1, 10_000))

    def setup():
        _fill(store, next(seeds))
        return (), {}

    report = None

    def run():
        nonlocal report
        report = m.run_once()

    benchmark.pedantic(run, setup=setup, rounds=15, iterations=1)
    # from the second run on, GC first revives up to 10 archived entries the store has room
    # for, then archives them with the rest: 51 more archived than revived, every round
    gc = report.gc
    assert gc.before == 500 and gc.after == 449 and gc.archived - gc.revived == 51
    store.close()


# --------------------------------------------------------------------------- recall with dormant
def recall_stores() -> dict:
    """The stores and queries of the ``recall with dormant`` group (see the docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory import build_store, make_corpus, make_queries

    corpus = make_corpus(1000, seed=0)
    half = {k: v[:500] for k, v in corpus.items()}
    alone = build_store(half)
    with_dormant = build_store(corpus)
    for i in with_dormant.bench_ids[500:]:
        with_dormant.set_fields(i, status="dormant", strength=0.05)
    no_revival = build_store(corpus)
    for i in no_revival.bench_ids[500:]:
        no_revival.set_fields(i, status="dormant", strength=0.05)
    no_revival.config = msgspec.structs.replace(no_revival.config, forgetting=msgspec.structs
                                                .replace(no_revival.config.forgetting,
                                                         revive=False))
    # what the dormant rows' cosines cost: the same store, the dormant rows without vectors
    # (their cosines 0, nothing to compute; their cue strengths from BM25 alone)
    no_vectors = build_store(corpus)
    for i in no_vectors.bench_ids[500:]:
        no_vectors.set_fields(i, status="dormant", strength=0.05)
    no_vectors.vectors.has_vec[[no_vectors.row_of_id(i) for i in no_vectors.bench_ids[500:]]] = False
    vector_cues = build_store(corpus)
    for i in vector_cues.bench_ids[500:]:
        vector_cues.set_fields(i, status="dormant", strength=0.05)
    vector_cues.config = msgspec.structs.replace(
        vector_cues.config, forgetting=msgspec.structs.replace(vector_cues.config.forgetting,
                                                               revive_needs_term=False))
    archived = build_store(corpus)
    archived.archive_rows([archived.row_of_id(i) for i in archived.bench_ids[500:]])
    queries, qvecs = make_queries(1000, seed=1)
    rng = np.random.default_rng(5)
    pick = rng.choice(np.arange(500, 1000), 200, replace=False)
    cued = [" ".join(corpus["texts"][i].split()[:6]) for i in pick.tolist()]
    cued_vecs = corpus["vectors"][pick]
    return {"500 active": alone, "500 active + 500 dormant": with_dormant,
            "500 active + 500 dormant, revival off": no_revival,
            "500 active + 500 dormant without vectors": no_vectors,
            VECTOR_CUES: vector_cues,
            "500 active + 500 archived": archived, "weak": (queries, qvecs),
            "strong": (cued, cued_vecs)}


VECTOR_CUES = "500 active + 500 dormant, cues from the vector alone too"


def whole_call_stores() -> dict:
    """The whole-call contenders: ``bench_memory``'s corpus saved with the default model's
    vectors (``embedder="auto"``), 500 active alone and 500 + 500 dormant; the queries as text
    (the store embeds each: 1,000 distinct queries cycle through a 256-entry query cache, so
    every call embeds)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory import build_store, make_corpus, make_queries

    corpus = make_corpus(1000, seed=0)
    probe = MemoryStore.in_memory()  # what "auto" picks for an empty store
    corpus["vectors"] = probe.embedder.embed(corpus["texts"])
    model = probe.embedder.fingerprint
    probe.close()
    alone = build_store({k: v[:500] for k, v in corpus.items()}, embedder="auto")
    with_dormant = build_store(corpus, embedder="auto")
    for i in with_dormant.bench_ids[500:]:
        with_dormant.set_fields(i, status="dormant", strength=0.05)
    queries, _ = make_queries(1000, seed=1)
    return {"alone": alone, "dormant": with_dormant, "queries": queries, "model": model}


def conversation_stores(embedder: str = "hash") -> dict:
    """The conversation contenders: ``bench_memory``'s corpus saved as conversation turns
    (``conversation_summary``, sessions of 20 turns a minute apart, each session its own thread,
    so the thread prior applies and recall takes its path) with the default configuration and
    the given vectors; 500 active turns alone, and 500 + the 500 older turns dormant. With
    ``embedder="auto"`` every turn is saved with the default model's vector (for the whole
    call: queries as text)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory import NOW, Clock, make_corpus

    from maclaw_fast.config import CapacityConfig, MemoryConfig

    corpus = make_corpus(1000, seed=0)
    if embedder != "hash":
        probe = MemoryStore.in_memory(embedder=embedder)
        corpus["vectors"] = probe.embedder.embed(corpus["texts"])
        probe.close()

    def build(first: int) -> MemoryStore:
        clock = Clock(NOW - 1000 * 60.0)
        store = MemoryStore.in_memory(
            embedder=embedder, clock=clock,
            config=MemoryConfig(capacity=CapacityConfig(store_capacity=2000)))
        ids = []
        for i in range(first, 1000):
            clock.t += 60.0
            ids.append(store.save(corpus["texts"][i], category="conversation_summary",
                                  thread=f"session {i // 20}", vector=corpus["vectors"][i]).id)
        for i in ids[:500 - first]:  # the older half of the 1,000: dormant
            store.set_fields(i, status="dormant", strength=0.05)
        clock.t = NOW
        return store

    return {"alone": build(500), "dormant": build(0)}


def text_call(store, queries):
    it = iter(range(10**12))

    def call():
        return store.recall(queries[next(it) % len(queries)], reinforce=False)
    return call


def batch_call(store, queries, qvecs, size: int):
    """``recall_batch`` over the next ``size`` queries (with their vectors unless ``qvecs`` is
    None: then embedded by the store)."""
    it = iter(range(10**12))

    def call():
        lo = (next(it) * size) % len(queries)
        return store.recall_batch(queries[lo:lo + size], reinforce=False,
                                  query_vectors=None if qvecs is None else qvecs[lo:lo + size])
    return call


def recall_call(store, queries, qvecs):
    it = iter(range(10**12))

    def call():
        i = next(it) % len(queries)
        return store.recall(queries[i], query_vector=qvecs[i], reinforce=False)
    return call


@pytest.fixture(scope="module")
def dormant_stores():
    return recall_stores()


@pytest.mark.benchmark(group="recall with dormant")
@pytest.mark.parametrize("which", ["500 active", "500 active + 500 dormant",
                                   "500 active + 500 dormant, revival off",
                                   "500 active + 500 archived"])
def test_recall_with_dormant(benchmark, dormant_stores, which):
    call = recall_call(dormant_stores[which], *dormant_stores["weak"])
    hits = benchmark.pedantic(call, rounds=2000, iterations=1, warmup_rounds=50)
    assert len(hits) == 20


@pytest.mark.benchmark(group="recall with dormant")
def test_recall_reviving(benchmark, dormant_stores):
    store = dormant_stores["500 active + 500 dormant"]
    call = recall_call(store, *dormant_stores["strong"])
    hits = benchmark.pedantic(call, rounds=1000, iterations=1, warmup_rounds=50)
    assert len(hits) == 20


def main() -> int:
    """Round-robin ratios of the ``recall with dormant`` group, written to
    ``benchmarks/results/lifecycle.md``."""
    import time

    from interleaved import ratio_summary, round_robin

    t0 = time.perf_counter()
    s = recall_stores()
    contenders = {name: (recall_call(s[name], *s["weak"]), 200)
                  for name in ("500 active", "500 active + 500 dormant",
                               "500 active + 500 dormant, revival off",
                               "500 active + 500 dormant without vectors", VECTOR_CUES,
                               "500 active + 500 archived")}
    contenders["500 active + 500 dormant, strong cues (revival runs)"] = (
        recall_call(s["500 active + 500 dormant"], *s["strong"]), 200)
    revived = sum(h.reason == "revived" for q, v in zip(*s["strong"])
                  for h in s["500 active + 500 dormant"].recall(q, query_vector=v,
                                                                reinforce=False))
    for call, _ in contenders.values():  # warm every path
        for _ in range(300):
            call()
    rounds = 75  # the ratios of single rounds spread 0.6–2.5× on the shared machine
    summary = ratio_summary(round_robin(contenders, rounds), "500 active")
    lines = ["# Lifecycle benchmarks: recall over dormant and archived entries", "",
             f"Generated by `python benchmarks/bench_lifecycle.py` ({time.strftime('%Y-%m-%d')}"
             f", {time.perf_counter() - t0:.0f} s). Data: `bench_memory`'s synthetic memories "
             "(384-d random unit vectors, query vector given, `reinforce=False`, top 20). "
             f"{rounds} rounds; in each, every contender runs 200 calls in turn (the order "
             "rotates); ratio = contender ÷ `500 active` in the same round (median, range).",
             "", "| store | p50 | ÷ 500 active (median) | range |", "|---|---|---|---|"]
    for name, r in summary.items():
        lines.append(f"| {name} | {r['p50'] * 1e6:.1f} µs | {r['ratio']:.2f}× | "
                     f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f}× |")
    ratio = summary["500 active + 500 dormant"]["ratio"]
    cos_share = (ratio - summary["500 active + 500 dormant without vectors"]["ratio"])
    dormant = s["500 active + 500 dormant"]
    rows = np.array([dormant.row_of_id(i) for i in dormant.bench_ids[500:]])
    with_term = np.mean([(dormant.bm25.scores(tokenize(q), len(dormant))[rows] > 0).sum()
                         for q in s["weak"][0][:200]])
    # conversation stores: the thread prior's path
    conv = conversation_stores()
    conv_calls = {"conversation: 500 active turns": (recall_call(conv["alone"], *s["weak"]),
                                                     100),
                  "conversation: 500 active + 500 dormant turns": (
                      recall_call(conv["dormant"], *s["weak"]), 100)}
    conv_revived = sum(h.reason == "revived" for q, v in zip(*s["weak"])
                       for h in conv["dormant"].recall(q, query_vector=v, reinforce=False))
    for call, _ in conv_calls.values():
        for _ in range(200):
            call()
    conv_summary = ratio_summary(round_robin(conv_calls, 40), "conversation: 500 active turns")
    conv_ratio = conv_summary["conversation: 500 active + 500 dormant turns"]["ratio"]
    lines += ["", "Conversation stores (the same entries and queries saved as turns, sessions of "
              "20 turns each their own thread, default configuration: the thread prior applies, "
              f"and recall takes its path; 40 rounds of 100 calls; {conv_revived} revived hits "
              f"over the {len(s['weak'][0])} weak queries):", "",
              "| store | p50 | ÷ 500 active (median) | range |", "|---|---|---|---|"]
    for name, r in conv_summary.items():
        lines.append(f"| {name} | {r['p50'] * 1e6:.1f} µs | {r['ratio']:.2f}× | "
                     f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f}× |")
    for store in conv.values():
        store.close()
    # the whole call: the query as text, embedded by the default model
    w = whole_call_stores()
    whole = {"500 active, query as text": (text_call(w["alone"], w["queries"]), 40),
             "500 active + 500 dormant, query as text": (text_call(w["dormant"], w["queries"]),
                                                         40)}
    for call, _ in whole.values():
        for _ in range(20):
            call()
    whole_summary = ratio_summary(round_robin(whole, 15), "500 active, query as text")
    whole_ratio = whole_summary["500 active + 500 dormant, query as text"]["ratio"]
    lines += ["", f"Strong-cue queries (6 words of a dormant entry, its vector): {revived} "
              "revived hits over 200 queries.", "",
              "`without vectors`: the dormant store with its dormant rows' vectors removed "
              "(cosine 0, none computed; revival from BM25 alone): the dormant rows' cosines "
              f"account for {cos_share:.2f} of the dormant store's ratio. A dormant row is cued "
              "only by a query sharing a term with it (`revive_needs_term`), so only those "
              f"rows' cosines are computed: here {with_term:.0f} of the 500 dormant rows per "
              "weak query (the synthetic words recur across entries); each costs ~35–45 ns, "
              "and an exact int8 first pass over them was no faster (its dot product is "
              "compute-bound in numba). `cues from the vector alone too`: "
              "`revive_needs_term=False`, every dormant row's cosine computed.", "",
              f"The whole call a user makes (the query as text, embedded by the default model "
              f"`{w['model']}`, every call a query-cache miss; 15 rounds of 40 calls):", "",
              "| store | p50 | ÷ 500 active (median) | range |", "|---|---|---|---|"]
    for name, r in whole_summary.items():
        lines.append(f"| {name} | {r['p50'] * 1e3:.2f} ms | {r['ratio']:.3f}× | "
                     f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}× |")
    # the same as conversation turns (the thread prior's path), the query as text
    conv_w = conversation_stores("auto")
    conv_whole = {"conversation: 500 active turns, query as text": (
                      text_call(conv_w["alone"], w["queries"]), 40),
                  "conversation: 500 active + 500 dormant turns, query as text": (
                      text_call(conv_w["dormant"], w["queries"]), 40)}
    for call, _ in conv_whole.values():
        for _ in range(20):
            call()
    conv_whole_summary = ratio_summary(round_robin(conv_whole, 15),
                                       "conversation: 500 active turns, query as text")
    conv_whole_ratio = conv_whole_summary[
        "conversation: 500 active + 500 dormant turns, query as text"]["ratio"]
    for name, r in conv_whole_summary.items():
        lines.append(f"| {name} | {r['p50'] * 1e3:.2f} ms | {r['ratio']:.3f}× | "
                     f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}× |")
    # many queries at once: recall_batch, query vectors given, then the queries as text
    batch = {"batch of 200, 500 active": (batch_call(s["500 active"], *s["weak"], 200), 3),
             "batch of 200, 500 active + 500 dormant": (
                 batch_call(s["500 active + 500 dormant"], *s["weak"], 200), 3),
             "batch of 100 as text, 500 active": (batch_call(w["alone"], w["queries"], None,
                                                             100), 1),
             "batch of 100 as text, 500 active + 500 dormant": (
                 batch_call(w["dormant"], w["queries"], None, 100), 1)}
    for call, _ in batch.values():
        call()
    per_round = round_robin(batch, 10)
    vec_summary = ratio_summary({k: per_round[k] for k in list(batch)[:2]},
                                "batch of 200, 500 active")
    text_summary = ratio_summary({k: per_round[k] for k in list(batch)[2:]},
                                 "batch of 100 as text, 500 active")
    batch_ratio = vec_summary["batch of 200, 500 active + 500 dormant"]["ratio"]
    batch_text_ratio = text_summary["batch of 100 as text, 500 active + 500 dormant"]["ratio"]
    lines += ["", "`recall_batch` over the same stores (10 rounds; the time per query: a call "
              "÷ its queries; as text, every query embedded by the default model):", "",
              "| store | per query | ÷ 500 active (median) | range |", "|---|---|---|---|"]
    for summary_, size in ((vec_summary, 200), (text_summary, 100)):
        for name, r in summary_.items():
            lines.append(f"| {name} | {r['p50'] / size * 1e6:.1f} µs | {r['ratio']:.3f}× | "
                         f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}× |")
    for store in (*w.values(), *conv_w.values()):
        if isinstance(store, MemoryStore):
            store.close()
    lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f} (the machine is shared: "
              "only same-run ratios mean anything).", "",
              "Target: recall latency with 500 + 500 dormant entries within 1.3× of 500 active "
              "alone, same run.", "",
              f"- The recall a user makes (the query as text, embedded by the default model): "
              f"{whole_ratio:.3f}× (notes), {conv_whole_ratio:.3f}× (conversation turns), "
              f"{batch_text_ratio:.3f}× (`recall_batch`) → "
              f"**{'met' if max(whole_ratio, conv_whole_ratio, batch_text_ratio) <= 1.3 else 'missed'}**.",
              f"- The engine alone (the query vector given, the embedder's milliseconds left "
              f"out): {ratio:.2f}× (notes), {conv_ratio:.2f}× (conversation turns), "
              f"{batch_ratio:.2f}× (`recall_batch`) → "
              f"**{'within' if max(ratio, conv_ratio, batch_ratio) <= 1.3 else 'above'} 1.3×**. "
              "Every per-row pass of a recall (BM25 postings, the cosines the cue test needs, "
              "the cue test, the ranking) covers the dormant rows too, as design R9 has them "
              "scored with the active ones; only what is not per row (argument checks, the "
              "hits) stays the same.", ""]
    out = Path(__file__).resolve().parent / "results" / "lifecycle.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
