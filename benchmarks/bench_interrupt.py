"""How long ``maclaw-fast import`` takes to stop after Ctrl-C while the model embeds.

    python benchmarks/bench_interrupt.py [--root DIR ...] [--n 10000] [--after 12] [--runs 3]

Each ``--root`` is a checkout to run (default: this one); with two, the runs alternate between
them, so both see the same machine load. A run imports ``--n`` generated memories (Chinese and
English, so ``auto`` picks multilingual-e5-small) into a fresh store that holds one saved
memory, sends SIGINT ``--after`` seconds in, and records the seconds until the process exits,
its exit status, its last stderr line, and whether the store then opens with the saved memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _memories(n: int) -> list[dict]:
    rng = random.Random(1)
    zh = ["部署脚本在预发布环境失败", "会议改到三楼的会议室", "林遥喜欢下午喝绿茶", "数据库迁移需要先备份"]
    en = ["deploy script failed on staging", "Lin prefers green tea", "backup before migrating",
          "the Q3 report is due on Friday"]
    return [{"content": f"{rng.choice(zh)} 第{i}条 {rng.choice(en)} item {i} "
                        + " ".join(rng.choice(en) for _ in range(3)),
             "category": "project_knowledge"} for i in range(n)]


def _cli(root: Path, *args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONWARNINGS="ignore")
    return subprocess.Popen([sys.executable, "-c", "from maclaw_fast.cli import run; run()",
                             *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=root)  # cwd: ``-c`` puts it first on the path


def one_run(root: Path, src: Path, after: float) -> dict:
    store = tempfile.mkdtemp(prefix="bench_interrupt_")
    save = _cli(root, "save", "Lin prefers green tea", "--category", "preference",
                "--store", store, "--embedder", "e5")
    save.wait(300)
    proc = _cli(root, "import", str(src), "--store", store, "--embedder", "e5", "--quiet")
    time.sleep(after)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed after 120 s"
    took = time.perf_counter() - t0
    err = proc.stderr.read().strip().splitlines()
    out = subprocess.run([sys.executable, "-c", "from maclaw_fast.cli import run; run()",
                          "stats", "--store", store, "--json"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(root)), timeout=300, cwd=root,
                         check=False)
    entries = json.loads(out.stdout)["entries"] if out.returncode == 0 else None
    return {"exit_s": round(took, 2), "rc": rc, "last_line": err[-1] if err else "",
            "traceback": any("Traceback" in line for line in err), "entries_after": entries}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", action="append", type=Path, default=None)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--after", type=float, default=12.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    # a handled SIGINT is reset to the default in a child, an ignored one stays ignored (a
    # script started in the background ignores it): the children must hear Ctrl-C
    signal.signal(signal.SIGINT, signal.default_int_handler)
    roots = args.root or [ROOT]
    src = Path(tempfile.mkdtemp()) / "memories.json"
    src.write_text(json.dumps(_memories(args.n), ensure_ascii=False), encoding="utf-8")
    results: dict[str, list[dict]] = {str(r): [] for r in roots}
    for i in range(args.runs):
        for root in roots:
            res = one_run(root, src, args.after)
            results[str(root)].append(res)
            print(f"run {i + 1} {root}: {res}", flush=True)
    for root, runs in results.items():
        times = [r["exit_s"] for r in runs]
        print(f"{root}: exit after Ctrl-C median {statistics.median(times):.2f} s "
              f"(runs {times}), exit codes {[r['rc'] for r in runs]}, store entries after "
              f"{[r['entries_after'] for r in runs]}")


if __name__ == "__main__":
    main()
