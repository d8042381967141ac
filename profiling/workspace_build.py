"""Time the stages of a full workspace index build and of a reopen (wall clock, per stage).

    python profiling/workspace_build.py                 # 2,000 files / 20 MB, as the benchmark
    python profiling/workspace_build.py --files 500 --mb 5 --no-fork

Generates the benchmark workspace (``benchmarks/gen_workspace.py``) once under ``--dir``, builds
its index (hash embedder; the embedding cache is warmed first, so the rebuilds measure the
index, not the embedder), then rebuilds it ``--rounds`` times with a timer around each stage:
the analysis in this process (chunking and tokenising: with the fork, the parent's half),
waiting for the child's half, adding rows and BM25 (the stage that consumes the analysed parts,
so it includes the two before), embedding-cache lookups, the snapshot. Reopens are timed last.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from gen_workspace import generate  # noqa: E402

import maclaw_fast.text.bulk as bulk  # noqa: E402
import maclaw_fast.workspace.analyse as analyse_module  # noqa: E402
import maclaw_fast.workspace.index as index_module  # noqa: E402
from maclaw_fast.config import SearchConfig  # noqa: E402
from maclaw_fast.workspace import WorkspaceIndex  # noqa: E402

STAGES = {  # label → (object, attribute) wrapped with a timer
    "sync (all of it)": (index_module.WorkspaceIndex, "sync"),
    "analysis in this process": (analyse_module, "analyse"),
    "wait for the child": (bulk, "_collect"),
    "analysis + rows + BM25": (index_module.WorkspaceIndex, "_add_parts"),
    "embedding-cache lookups": (index_module.WorkspaceIndex, "_embed_rows"),
    "snapshot": (index_module.WorkspaceIndex, "_persist"),
}


def timed(acc: dict, label: str, func):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            acc[label] = acc.get(label, 0.0) + time.perf_counter() - t
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/maclaw_ws_profile")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-fork", action="store_true", help="SearchConfig(fork_workers=False)")
    args = ap.parse_args()
    base = Path(args.dir)
    ws, ix_dir = base / "ws", base / "ix"
    if not ws.exists():
        generate(ws, n_files=args.files, target_mb=args.mb, seed=0)
    config = SearchConfig(sync_on_search=False, fork_workers=not args.no_fork)
    WorkspaceIndex.open(ws, embedder="hash", index_dir=ix_dir, config=config).close()
    acc: dict[str, float] = {}
    for label, (owner, name) in STAGES.items():
        setattr(owner, name, timed(acc, label, getattr(owner, name)))
    totals = []
    for _ in range(args.rounds):
        for name in ("workspace-chunks.arrow", "workspace-journal.jsonl"):
            (ix_dir / name).unlink(missing_ok=True)
        t = time.perf_counter()
        WorkspaceIndex.open(ws, embedder="hash", index_dir=ix_dir, config=config).close()
        totals.append(time.perf_counter() - t)
    print(f"rebuild of {ws} (mean of {args.rounds}; fork {'off' if args.no_fork else 'on'})")
    print(f"  {'open → close':26s} {sum(totals) / len(totals):7.3f} s  (best {min(totals):.3f})")
    for label, seconds in acc.items():
        print(f"  {label:26s} {seconds / args.rounds:7.3f} s")
    reopen = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        WorkspaceIndex.open(ws, embedder="hash", index_dir=ix_dir, config=config,
                            sync=False).close()
        reopen.append(time.perf_counter() - t)
    print(f"  {'reopen (no sync)':26s} {sum(reopen) / len(reopen):7.3f} s")


if __name__ == "__main__":
    main()
