"""A/B timing of ``MemoryStore.recall`` between two builds, each with its own default config.

    python benchmarks/ab_recall.py --base main --cand HEAD [--rounds 6] [--calls 2000]

Each build (a git revision) is exported to a temporary directory and imported from there by
this same interpreter. One store of 500 synthetic entries (the ``recall 500`` benchmark's
corpus: 8–24 words, four categories, tags, random ages, 384-d vectors given to ``save``) is built
per round in a fresh process, and ``recall(query, query_vector=…, reinforce=False)`` is timed
over cycling queries. The builds take turns, round after round, so the machine's drift hits
both; the result is the median over rounds of each build's p50 and the candidate/base ratio per
round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
import numpy as np
from maclaw_fast import MemoryStore
from maclaw_fast.config import CapacityConfig, MemoryConfig

N, NQ, DIM, NOW = 500, 200, 384, 1.8e9
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(3000)]
p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
p /= p.sum()
def text(k):
    return " ".join(rng.choice(words, k, p=p))
def unit(n, seed):
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
cats = ("instruction", "preference", "project_knowledge", "session_checkpoint")
tags = ("atlas", "zeus", "hermes", "infra", "frontend", "billing", "ml", "ops")
vecs = unit(N, 1000)
t = [NOW]
store = MemoryStore.in_memory(embedder="hash", clock=lambda: t[0],
                              config=MemoryConfig(capacity=CapacityConfig(store_capacity=1000)))
for i in range(N):
    t[0] = NOW - float(rng.random()) * 30 * 86400
    store.save(f"{text(int(rng.integers(8, 25)))} {i}", category=cats[i % 4],
               tags=[tags[int(rng.integers(0, 8))]], vector=vecs[i])
t[0] = NOW
queries = [text(int(rng.integers(2, 7))) for _ in range(NQ)]
Q = unit(NQ, 2000)
for i in range(300):
    store.recall(queries[i % NQ], query_vector=Q[i % NQ], reinforce=False)
calls = int(sys.argv[1])
times = np.empty(calls)
for j in range(calls):
    i = j % NQ
    t0 = time.perf_counter()
    store.recall(queries[i], query_vector=Q[i], reinforce=False)
    times[j] = time.perf_counter() - t0
print(json.dumps({"p50": float(np.median(times)), "mean": float(times.mean())}))
"""


def export(rev: str, repo: Path, into: Path) -> Path:
    """``rev`` of ``repo`` as files under ``into`` (``maclaw_kernels`` linked to ``kernels``)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "maclaw_kernels").symlink_to(into / "kernels")
    return into


def run(root: Path, calls: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", CHILD, str(calls)], cwd=root, env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--cand", default="HEAD")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"base": export(args.base, repo, Path(tmp) / "base"),
                 "cand": export(args.cand, repo, Path(tmp) / "cand")}
        for root in roots.values():  # compile (numba caches under the export) before timing
            run(root, 10)
        res: dict[str, list[float]] = {"base": [], "cand": []}
        for r in range(args.rounds):
            order = ("base", "cand") if r % 2 == 0 else ("cand", "base")
            for name in order:
                res[name].append(run(roots[name], args.calls)["p50"])
            print(f"round {r}: base {res['base'][-1] * 1e6:.1f} µs, "
                  f"cand {res['cand'][-1] * 1e6:.1f} µs", file=sys.stderr, flush=True)
    import statistics

    ratios = [c / b for b, c in zip(res["base"], res["cand"])]
    report = {"base": args.base, "cand": args.cand, "rounds": args.rounds, "calls": args.calls,
              "base_p50_us": statistics.median(res["base"]) * 1e6,
              "cand_p50_us": statistics.median(res["cand"]) * 1e6,
              "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
              "ratio_max": max(ratios), "date": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
