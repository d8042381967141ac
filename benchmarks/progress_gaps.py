"""How long the command line goes without showing anything: runs ``maclaw-fast`` commands with
``--progress`` and timestamps every write to stderr.

Reports, per command: the wall time, the time to the first progress output (interpreter start
and imports included), and the longest silence between two outputs after that (what a user
watches while the command works). Sizes: an import of 1,000 memories and an index of a
500-file workspace (benchmarks/gen_workspace.py), both with the hashing embedder so the figure
is the CLI's, not a model's.

Usage: ``python benchmarks/progress_gaps.py [--e5]`` (``--e5``: also import the 200 sample
memories with multilingual-e5-small, no vector cache).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def watch(label: str, argv: list[str]) -> dict:
    """Run ``maclaw-fast argv`` and time its stderr writes."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "maclaw_fast.cli", *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    stamps = []
    while True:
        if sel.select(timeout=0.05):
            data = os.read(proc.stderr.fileno(), 65536)
            if not data:
                break
            stamps.append(time.perf_counter() - t0)
    proc.wait()
    end = time.perf_counter() - t0
    if proc.returncode != 0 or not stamps:
        raise SystemExit(f"{argv} failed or showed nothing (rc {proc.returncode})")
    gaps = [b - a for a, b in zip(stamps, stamps[1:])] + [end - stamps[-1]]
    return {"command": label, "wall_s": round(end, 2),
            "first_output_s": round(stamps[0], 2), "longest_silence_s": round(max(gaps), 2),
            "writes": len(stamps)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--e5", action="store_true", help="also the e5 import of the sample")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.gen_workspace import generate

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "m.json"
        src.write_text(json.dumps([{"content": f"note {i}: build step {i * 7} uses cache {i % 13}",
                                    "category": "preference", "age_hours": i / 10}
                                   for i in range(1000)]), encoding="utf-8")
        rows.append(watch("import 1,000 memories (hash)",
                          ["import", str(src), "--store", f"{tmp}/s1", "--embedder", "hash",
                           "--progress"]))
        generate(f"{tmp}/ws", n_files=500, target_mb=2.0, seed=0)
        rows.append(watch("index 500 files, 2 MB (hash)",
                          ["index", "--workspace", f"{tmp}/ws", "--embedder", "hash",
                           "--progress"]))
        if args.e5:
            rows.append(watch("import 200 sample memories (e5, no cache)",
                              ["import", str(ROOT / "data" / "memories.json"), "--store",
                               f"{tmp}/s2", "--embedder", "e5", "--no-embed-cache",
                               "--progress"]))
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} ({os.cpu_count()} cores)")
    print("| command | wall s | first output s | longest silence s | writes |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['command']} | {r['wall_s']} | {r['first_output_s']} | "
              f"{r['longest_silence_s']} | {r['writes']} |")


if __name__ == "__main__":
    main()
