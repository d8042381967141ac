"""A/B timing of reopening a store and answering its first recall, between two builds.

    python benchmarks/ab_reopen.py --base main --cand HEAD [--rounds 6] [--stores 40]

Each build (a git revision) is exported to a temporary directory and run from there by this same
interpreter. ``--stores`` stores of 500 memories (``bench_tenants``' generator: Zipf text, 384-d
random unit vectors) are written as snapshots once; each build gets its own copy and opens every
store once (writing its own ``terms.bin``), then, in a fresh process per round, times
``MemoryStore.open`` + ``recall(query, query_vector=…, reinforce=False)`` for every store, one at
a time (wall clock and the thread's CPU time; the close is not counted). The builds take turns
round after round, so the machine's drift hits both; reported: the median over rounds of each
build's p50, and the candidate/base ratio per round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ab_recall import export  # noqa: E402

CHILD = r"""
import json, sys, time
from pathlib import Path
import numpy as np
from maclaw_fast import MemoryStore
from maclaw_fast.embedding import HashEmbedder

root, warm = Path(sys.argv[1]), sys.argv[2] == "warm"
emb = HashEmbedder(384)
names = sorted(p.name for p in root.iterdir())
rng = np.random.default_rng(3)
q = rng.standard_normal((len(names), 384)).astype(np.float32)
q /= np.linalg.norm(q, axis=1, keepdims=True)
if warm:  # every store once: its terms file in this build's layout, and numba's caches
    for name in names:
        MemoryStore.open(root / name, embedder=emb).close()
s = MemoryStore.open(root / names[0], embedder=emb)  # compile and import outside the timing
s.recall("alpha beta", query_vector=q[0], reinforce=False)
s.close()
wall, cpu = [], []
for i, name in enumerate(names):
    c0, t0 = time.thread_time(), time.perf_counter()
    s = MemoryStore.open(root / name, embedder=emb)
    s.recall("report deploy notes", query_vector=q[i], reinforce=False)
    t1, c1 = time.perf_counter(), time.thread_time()
    s.close()
    wall.append(t1 - t0)
    cpu.append(c1 - c0)
print(json.dumps({"wall": float(np.median(wall)), "cpu": float(np.median(cpu))}))
"""


def run(build: Path, stores: Path, warm: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(build))
    out = subprocess.run([sys.executable, "-c", CHILD, str(stores), "warm" if warm else "time"],
                         cwd=build, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--cand", default="HEAD")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--stores", type=int, default=40)
    ap.add_argument("--memories", type=int, default=500)
    args = ap.parse_args(argv)
    import numpy as np
    from bench_tenants import template, vocabulary

    from maclaw_fast.embedding import HashEmbedder

    repo = HERE.parent
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rng = np.random.default_rng(11)
        words = vocabulary(rng, 30_000)
        for k in range(args.stores):
            template(tmp / "src" / f"s{k:03d}", rng, words, args.memories, HashEmbedder(384))
        builds, stores = {}, {}
        for name, rev in (("base", args.base), ("cand", args.cand)):
            builds[name] = export(rev, repo, tmp / name)
            stores[name] = tmp / f"stores-{name}"
            stores[name].mkdir()
            for d in (tmp / "src").iterdir():  # the snapshot only: each build writes its terms
                (stores[name] / d.name).mkdir()
                shutil.copy(d / "snapshot.arrow", stores[name] / d.name)
            run(builds[name], stores[name], warm=True)
        res: dict[str, list[dict]] = {"base": [], "cand": []}
        for r in range(args.rounds):
            for name in (("base", "cand") if r % 2 == 0 else ("cand", "base")):
                res[name].append(run(builds[name], stores[name], warm=False))
            print(f"round {r}: base {res['base'][-1]['cpu'] * 1e3:.2f} ms CPU, "
                  f"cand {res['cand'][-1]['cpu'] * 1e3:.2f} ms CPU", file=sys.stderr, flush=True)

    def med(name, key):
        return statistics.median(x[key] for x in res[name]) * 1e3

    ratios = [c["cpu"] / b["cpu"] for b, c in zip(res["base"], res["cand"])]
    report = {"base": args.base, "cand": args.cand, "rounds": args.rounds, "stores": args.stores,
              "memories": args.memories,
              "base_p50_ms": {"wall": med("base", "wall"), "cpu": med("base", "cpu")},
              "cand_p50_ms": {"wall": med("cand", "wall"), "cpu": med("cand", "cpu")},
              "cpu_ratio_median": statistics.median(ratios), "cpu_ratio_min": min(ratios),
              "cpu_ratio_max": max(ratios), "load_average": os.getloadavg(),
              "date": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
