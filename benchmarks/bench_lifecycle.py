"""Lifecycle benchmarks (pytest-benchmark): the decay pass and a maintenance run without LLM.

    python -m pytest benchmarks/bench_lifecycle.py --benchmark-only

Not collected by the default test run; nothing here is a unit test (each benchmark does check
that the contenders agree before it is timed).

Groups:

* ``decay 100k`` — the forgetting curve over 100,000 entries (strength 0.5–3, ``updated_at``
  spread over 2,000 h, 5 % self_identity, 10 % not active): ``decay_pass`` (numba, serial),
  ``decay_pass_batch`` (numba prange, all threads) and :func:`lifecycle.decay` on a real store
  (kernel + column slicing + journaling the entries that turn dormant) vs the per-entry Python
  loop over the same NumPy columns (SPEC §7 target: ≥ 30× faster).
* ``maintenance 500`` — ``Maintenance(store).run_once()`` without LLM on a 500-entry store
  (hash embedder): backup, GC (archives 51, revives ≤ 10), decay, exact dedup, skipped LLM
  steps; in memory (no backup) and on disk (journal + JSON backup) (target ≤ 50 ms). Each
  round starts from the same 500 entries (the setup re-fills the store; not timed).
"""

from __future__ import annotations

import math
import tempfile

import numpy as np
import pytest

from maclaw_fast.maintenance import Maintenance
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.lifecycle import decay
from maclaw_kernels.decay import decay_pass, decay_pass_batch

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
@pytest.mark.parametrize("fn", [decay_pass, decay_pass_batch], ids=["serial", "prange"])
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
    assert report.gc.before == 500 and report.gc.archived == 51
    store.close()
