"""What a fresh install pays before its first answer: compiling the numba kernels, then the
first recall and the first route of a new process once they are cached.

    python benchmarks/first_use.py                       # this checkout
    python benchmarks/first_use.py --base main --out benchmarks/results/first_use.md

Each figure is the CPU time (user + system) of a child process, so a busy machine inflates it
less than wall time. Per build (a git revision exported to a temporary folder, or this
checkout), with an empty numba cache: ``warmup`` (every kernel compiled and cached), then in
new processes the first ``recall`` on a 500-entry store and the first ``route`` over 1,000 tools
(hash embedder: no model loading or embedding in the figure; store and catalog built first).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_recall import export  # noqa: E402  (a git revision as files to import)

WARMUP = r"""
import json, resource, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = cpu()
try:  # builds before the engine-level warmup first: an installed newer package would else
    from maclaw_kernels.warmup import warmup  # lend its maclaw_fast.warmup to an old build
except ImportError:
    from maclaw_fast.warmup import warmup
warmup() if warmup.__module__.startswith("maclaw_kernels") else warmup(out=None)
print(json.dumps({"warmup_cpu_s": cpu() - t0}))
"""

FIRST = r"""
import json, resource, sys
import numpy as np
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
what = sys.argv[1]
if what == "recall":
    from maclaw_fast import MemoryStore
    s = MemoryStore.in_memory(embedder="hash")
    rng = np.random.default_rng(0)
    s.import_records([{"content": f"memory {i} about " + " ".join(
        f"w{j}" for j in rng.integers(0, 300, 12)), "category": "preference"}
        for i in range(500)])
    t0 = cpu()
    s.recall("w1 w2 memory")
else:
    from maclaw_fast.tools import RegisteredTool, ToolRegistry, ToolRouter
    tools = [RegisteredTool(name=f"tool_{i}", description=f"does thing {i} with " + " ".join(
        f"w{j}" for j in range(i % 50, i % 50 + 8))) for i in range(1000)]
    r = ToolRouter(ToolRegistry(tools), embedder="hash")
    t0 = cpu()
    r.route("read a file then search the web")
print(json.dumps({f"first_{what}_cpu_s": cpu() - t0}))
"""


def measure(root: Path) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=cache,
                   MACLAW_QUIET_COMPILE="1")
        for code, args in ((WARMUP, []), (FIRST, ["recall"]), (FIRST, ["route"])):
            proc = subprocess.run([sys.executable, "-c", code, *args], cwd=root, env=env,
                                  capture_output=True, text=True, check=True)
            out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=None, help="a git revision to measure beside this one")
    ap.add_argument("--cand", default=None, help="a git revision (default: this checkout)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        builds = {"cand": export(args.cand, repo, Path(tmp) / "cand") if args.cand else repo}
        if args.base:
            builds["base"] = export(args.base, repo, Path(tmp) / "base")
        for name, root in builds.items():
            rows[name] = measure(root)
            print(name, json.dumps(rows[name]), file=sys.stderr, flush=True)
    keys = ("warmup_cpu_s", "first_recall_cpu_s", "first_route_cpu_s")
    labels = ("warmup, empty numba cache", "first recall, 500 entries, new process",
              "first route, 1,000 tools, new process")
    head = "| figure (CPU s) | " + " | ".join(rows) + " |"
    lines = ["# First use: compile and first calls", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load "
             f"{os.getloadavg()[0]:.1f}; base = {args.base or '—'}, cand = "
             f"{args.cand or 'this checkout'}. CPU time of each child process.", "",
             head, "|---|" + "---:|" * len(rows)]
    for key, label in zip(keys, labels):
        lines.append(f"| {label} | " + " | ".join(f"{rows[n][key]:.2f}" for n in rows) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
