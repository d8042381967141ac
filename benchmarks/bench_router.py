"""Routing benchmarks (pytest-benchmark), each against its plain-Python baseline in the same run.

    pytest benchmarks/bench_router.py --benchmark-columns=median,mean,ops,rounds

Data: a synthetic catalog of 1,000 tools (23 core + 977 others, English and Chinese words, group
tags, mixed categories), a full 2,000-record usage window, 384-d HashEmbedder vectors. Query
vectors are precomputed (no model time). Targets (issue 4): route p50 ≤ 300 µs and ≥ 30× the
Python router; route_batch ≥ 10,000 messages/s; experience over the window ≤ 50 µs and ≥ 20× Python
sets; registering 10,000 tools (no embedding) < 5 s.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracles.router_py import PyRouter  # noqa: E402

from maclaw_fast.config import RouterConfig  # noqa: E402
from maclaw_fast.embedding import HashEmbedder  # noqa: E402
from maclaw_fast.index import encode_length  # noqa: E402
from maclaw_fast.text import tokenize  # noqa: E402
from maclaw_fast.tools import (Platform, RegisteredTool, ToolRegistry, ToolRouter,  # noqa: E402
                               UsageTracker)

N_TOOLS = 1000
WINDOW = 2000
NOW = 1_800_000_000.0
ZH = ["查询", "数据库", "文件", "网页", "浏览器", "发送", "邮件", "图片", "翻译", "日历", "天气", "订单",
      "报告", "表格", "音乐", "视频", "地图", "股票", "快递", "会议"]
EN = [f"w{i}" for i in range(1500)] + ["search", "file", "database", "browser", "git", "web",
                                        "test", "schedule", "config", "memory", "image", "email"]
TAGS = ["database", "sql", "git", "file", "web", "search", "browser", "automation", "schedule",
        "memory", "config", "gui", "misc", "media", "office"]


def _catalog(n: int, seed: int = 0) -> list[RegisteredTool]:
    rng = random.Random(seed)
    core = RouterConfig().core_tools
    tools = []
    for i in range(n):
        name = core[i] if i < len(core) else f"tool_{i}"
        words = rng.sample(EN, 10) + rng.sample(ZH, 3)
        tools.append(RegisteredTool(
            name=name, description=" ".join(words),
            category="builtin" if i < len(core) or rng.random() < 0.3 else rng.choice(
                ["mcp", "skill", "non_code"]),
            tags=rng.sample(TAGS, 2), priority=rng.randint(0, 10),
            body="\n".join(" ".join(rng.sample(EN, 8)) for _ in range(3))))
    return tools


def _messages(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(EN, 6)) + " " + "".join(rng.sample(ZH, 2)) for _ in range(n)]


@pytest.fixture(scope="module")
def world():
    tools = _catalog(N_TOOLS)
    rng = random.Random(2)
    usage = UsageTracker(clock=lambda: NOW)
    for _ in range(WINDOW):
        t = rng.choice(tools)
        usage.record(t.name, rng.sample(t.description.split(), 5), success=rng.random() < 0.8,
                     timestamp=NOW - rng.random() * 30 * 86400)
    emb = HashEmbedder(384)
    router = ToolRouter(ToolRegistry(tools), embedder=emb, usage=usage, platform=Platform())
    messages = _messages(1000)
    qvecs = emb.embed(messages)
    router.route(messages[0], query_vector=qvecs[0])  # compile + embed tools
    router.route_batch(messages[:4], query_vectors=qvecs[:4])
    return router, usage, tools, messages, qvecs, emb


@pytest.fixture(scope="module")
def oracle(world):
    router, usage, tools, messages, qvecs, emb = world
    # a tool's vector: the normalised mean of its whole text's and its description's
    # (RouterConfig.description_view)
    vecs = emb.embed([f"{t.name} {t.description}\n{t.body_summary}" for t in tools])
    has = np.array([bool(t.description.strip()) for t in tools])[:, None]
    vecs = vecs + has * emb.embed([t.description.strip() or "-" for t in tools])
    vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    py_tools = [{"name": t.name, "tokens": tokenize(f"{t.name} {t.description} {' '.join(t.tags)}"),
                 "category": t.category, "priority": t.priority, "tags": t.tags} for t in tools]
    records = [(r["tool_name"], set(r["query_tokens"]), NOW - 0.0, r["success"])
               for r in usage.records()]
    # exact timestamps from the tracker's columns (records() rounds to microseconds)
    order = [(usage.head - 1 - j) % usage.window for j in range(usage.count - 1, -1, -1)]
    records = [(name, toks, float(usage.rec_ts[slot]), ok)
               for (name, toks, _, ok), slot in zip(records, order)]
    cfg = RouterConfig()
    py = PyRouter(py_tools, vecs.tolist(), cfg.core_tools, w_bm25=cfg.bm25_weight,
                  w_cos=cfg.cos_weight, fieldnorm=lambda n: float(encode_length(n)),
                  norm=cfg.score_norm)
    return py, records


def _py_route(py, router, records, msg, qvec):
    tags = set(router.groups.activate(msg))
    return py.route(tokenize(msg), qvec.tolist(), tags, records, NOW)


def test_oracle_agrees(world, oracle):
    router, usage, tools, messages, qvecs, _ = world
    py, records = oracle
    for i in range(10):
        got = router.route(messages[i], query_vector=qvecs[i]).names
        want = _py_route(py, router, records, messages[i], qvecs[i])
        assert got == want


@pytest.mark.benchmark(group="route 1000 tools")
def test_route_numba(benchmark, world):
    router, usage, tools, messages, qvecs, _ = world
    it = iter(range(10**9))

    def run():
        i = next(it) % len(messages)
        return router.route(messages[i], query_vector=qvecs[i])
    res = benchmark(run)
    assert len(res.tools) <= 28


@pytest.mark.benchmark(group="route 1000 tools")
def test_route_python(benchmark, world, oracle):
    router, usage, tools, messages, qvecs, _ = world
    py, records = oracle
    it = iter(range(10**9))

    def run():
        i = next(it) % len(messages)
        return _py_route(py, router, records, messages[i], qvecs[i])
    res = benchmark.pedantic(run, rounds=20, iterations=1)
    assert len(res) <= 28


@pytest.mark.benchmark(group="route_batch 1000 messages")
def test_route_batch(benchmark, world):
    router, usage, tools, messages, qvecs, _ = world
    res = benchmark.pedantic(router.route_batch, args=(messages,),
                             kwargs={"query_vectors": qvecs}, rounds=5, iterations=1)
    assert len(res) == len(messages)
    if benchmark.stats is not None:  # None under --benchmark-disable (a plain test run)
        benchmark.extra_info["messages_per_s"] = len(messages) / benchmark.stats.stats.median


@pytest.mark.benchmark(group="route_batch 1000 messages")
def test_route_batch_arrow(benchmark, world):
    router, usage, tools, messages, qvecs, _ = world
    table = benchmark.pedantic(router.route_batch_arrow, args=(messages,),
                               kwargs={"query_vectors": qvecs}, rounds=5, iterations=1)
    assert table.num_rows == 28 * len(messages)
    if benchmark.stats is not None:  # None under --benchmark-disable (a plain test run)
        benchmark.extra_info["messages_per_s"] = len(messages) / benchmark.stats.stats.median


@pytest.mark.benchmark(group="experience 2000-record window")
def test_experience_numba(benchmark, world):
    router, usage, tools, messages, qvecs, _ = world
    toks = [tokenize(m) for m in messages[:100]]
    it = iter(range(10**9))
    out = benchmark(lambda: usage.experience_all(toks[next(it) % 100], NOW))
    assert out.shape[0] == len(usage.tools)


@pytest.mark.benchmark(group="experience 2000-record window")
def test_experience_python_sets(benchmark, world, oracle):
    router, usage, tools, messages, qvecs, _ = world
    py, records = oracle
    toks = [tokenize(m) for m in messages[:100]]
    it = iter(range(10**9))
    out = benchmark(lambda: PyRouter.experience_all(records, toks[next(it) % 100], NOW))
    assert isinstance(out, dict)


@pytest.mark.benchmark(group="register 10,000 tools")
def test_register_10000(benchmark):
    tools = _catalog(10_000, seed=5)

    def run():
        reg = ToolRegistry()
        router = ToolRouter(reg, embedder=None, platform=Platform())
        reg.register_many([RegisteredTool(name=t.name, description=t.description,
                                          category=t.category, tags=t.tags, priority=t.priority,
                                          body=t.body) for t in tools])
        return router
    router = benchmark.pedantic(run, rounds=2, iterations=1)
    assert router.n_rows == 10_000
