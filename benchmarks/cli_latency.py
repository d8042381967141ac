"""What one command-line call costs as a whole process: ``maclaw-fast save`` and ``maclaw-fast
recall`` on a 200-entry store on disk, with the default embedder, two builds side by side.

    python benchmarks/cli_latency.py --base main
    python benchmarks/cli_latency.py --base main --rounds 10 --out benchmarks/results/cli_latency.md

Per build (a git revision exported to a temporary folder, or this checkout): its own numba cache
(filled by ``maclaw-fast warmup`` first), its own embedding cache and store, made by the build
itself and warmed by one call of each command. Then the builds take turns, round after round, so
the machine's drift hits both: each call is a new process, timed from its start to its exit
(wall), with its CPU time (user + system) and peak memory (``wait4``). Reported: the median per
build and the median of the per-round ratios cand / base.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_recall import export  # noqa: E402  (a git revision as files to import)

MAKE_STORE = r"""
import sys
from maclaw_fast import MemoryStore
with MemoryStore.open(sys.argv[1]) as s:
    s.import_records([{"content": f"note {i} about the atlas project: deploy step {i % 17}, "
                                  f"owner {('ana', 'bo', 'chen')[i % 3]}, tea {i % 5}",
                       "category": "project_knowledge", "tags": ["atlas"]} for i in range(200)])
"""

COMMANDS = {
    "save": ["save", "--category", "preference", "likes oolong tea in the afternoon"],
    "recall": ["recall", "who owns deploy step 3 of atlas"],
}


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def prepare(root: Path, work: Path) -> tuple[dict, list[str]]:
    """The build's environment and command prefix, its caches warm and its store made."""
    work.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(work / "numba"),
               MACLAW_CACHE_DIR=str(work / "cache"), MACLAW_QUIET_COMPILE="1")
    prefix = [sys.executable, "-m", "maclaw_fast"]
    subprocess.run([*prefix, "warmup"], env=env, cwd=root, check=True, capture_output=True)
    subprocess.run([sys.executable, "-c", MAKE_STORE, str(work / "store")], env=env, cwd=root,
                   check=True, capture_output=True)
    for args in COMMANDS.values():  # the embedding and cut caches as a user's second call
        timed([*prefix, args[0], "--store", str(work / "store"), *args[1:]], env, root)
    return env, prefix


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main", help="a git revision to measure beside this one")
    ap.add_argument("--cand", default=None, help="a git revision (default: this checkout)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        roots = {"cand": export(args.cand, repo, tmp / "cand") if args.cand else repo,
                 "base": export(args.base, repo, tmp / "base")}
        setup = {name: prepare(root, tmp / f"work-{name}") for name, root in roots.items()}
        for _ in range(args.rounds):
            for what, cmd_args in COMMANDS.items():
                for name, root in roots.items():
                    env, prefix = setup[name]
                    store = str(tmp / f"work-{name}" / "store")
                    cmd = [*prefix, cmd_args[0], "--store", store, *cmd_args[1:]]
                    figures.setdefault((what, name), []).append(timed(cmd, env, root))
    lines = ["# Command-line calls: whole process", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load "
             f"{os.getloadavg()[0]:.1f}; base = {args.base}, cand = "
             f"{args.cand or 'this checkout'}; {args.rounds} interleaved rounds, medians. "
             "A 200-entry store on disk, default embedder, caches warm.", "",
             "| command | wall s cand / base | ratio | CPU s cand / base | ratio "
             "| peak MiB cand / base |", "|---|---|---:|---|---:|---|"]
    for what in COMMANDS:
        c, b = figures[(what, "cand")], figures[(what, "base")]
        med = [[statistics.median(x[i] for x in runs) for i in range(3)] for runs in (c, b)]
        ratio = [statistics.median(x[i] / y[i] for x, y in zip(c, b)) for i in range(2)]
        lines.append(f"| `maclaw-fast {what}` | {med[0][0]:.3f} / {med[1][0]:.3f} | "
                     f"{ratio[0]:.2f}× | {med[0][1]:.3f} / {med[1][1]:.3f} | {ratio[1]:.2f}× | "
                     f"{med[0][2]:.0f} / {med[1][2]:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
