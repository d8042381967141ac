"""Regenerate the reliability figures: run the fault suite (``tests/fault``) and write what it
measured to ``benchmarks/results/reliability.md`` and the table in ``docs/reliability.md``.

    python benchmarks/reliability.py            # full scale (pytest --soak): several minutes
    python benchmarks/reliability.py --bounded  # the scale of the README's test command

Figures: kills and acknowledged writes per fsync policy (and how many were lost), kills during
workspace syncs, corruptions tried / recovered / reported / refused (silent rollbacks, drops
without a copy), fuzz inputs per entry point (and raw exceptions), malformed MCP requests
answered, soak operations.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "reliability.md"
README = ROOT / "docs" / "reliability.md"  # the table between the markers is rewritten
BEGIN, END = "<!-- reliability -->", "<!-- /reliability -->"


def run_suite(soak: bool) -> tuple[dict, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        cmd = [sys.executable, "-m", "pytest", "tests/fault", "-q", "-p", "no:cacheprovider"]
        if soak:
            cmd.append("--soak")
        t0 = time.monotonic()
        rc = subprocess.call(cmd, cwd=ROOT, env=dict(os.environ, MACLAW_FAULT_STATS=str(stats)))
        elapsed = time.monotonic() - t0
        data = json.loads(stats.read_text()) if stats.exists() else {}
    return data, rc, elapsed


def table(data: dict, soak: bool, rc: int, elapsed: float) -> str:
    rows = []
    for policy in ("always", "interval"):
        k = data.get(f"kill_{policy}")
        if k:
            rows.append(f"| kill -9 during writes, snapshots and archive moves (fsync "
                        f"`{policy}`) | {k['kills']} kills, {k['acknowledged']:,} acknowledged "
                        f"writes | {k['lost']} lost |")
    w = data.get("workspace_kill")
    if w:
        rows.append(f"| kill -9 during workspace index syncs (reopened without a sync) | "
                    f"{w['kills']} kills, {w['acknowledged']:,} acknowledged file versions | "
                    f"{w['lost']} lost or inconsistent |")
    c = data.get("corruption")
    if c:
        kinds = c.get("kinds", {})
        whole = sum(kinds.get(k, 0) for k in ("delete", "empty", "garbage"))
        what = (f"single-bit flips and truncations of the {c['files']} persisted files"
                + (f", and each deleted, emptied or overwritten with random bytes ({whole})"
                   if whole else ""))
        rows.append(f"| {what} | {c['tried']} tried | {c['recovered']} recovered, "
                    f"{c['reported']} reported (file moved or copied aside, store opens), "
                    f"{c.get('refused', 0)} refused until `recover=True`, "
                    f"{c.get('silent_rollbacks', 0)} silent rollbacks, "
                    f"{c.get('dropped_without_copy', 0)} drops without a copy, "
                    f"{c['failed']} failed |")
    for key, what in (("fuzz_api", "MemoryStore API, export/import paths included,"),
                      ("fuzz_pool", "StorePool store names,"), ("fuzz_cli", "CLI,"),
                      ("fuzz_mcp", "MCP tools,")):
        f = data.get(key)
        if f:
            raw = f.get("raw_exceptions", 0)
            rows.append(f"| hypothesis fuzz, {what} all of Unicode, lone surrogates, every "
                        f"type | {f['inputs']:,} inputs | 0 crashes or hangs, {raw} raw "
                        f"exceptions |")
    m = data.get("mcp_malformed")
    if m:
        rows.append(f"| MCP stdio, malformed requests (lone surrogates, not JSON, not "
                    f"JSON-RPC) | {m['requests']} requests | {m['answered']} answered with a "
                    f"JSON-RPC error, slowest {m['slowest_s']} s, server kept serving |")
    s = data.get("soak")
    if s:
        rows.append(f"| {s['threads']}-thread mixed-operation soak | {s['operations']:,} "
                    f"operations | {len(s['errors'])} invariant violations |")
    mode = "full scale, `--soak`" if soak else "bounded scale"
    status = "passed" if rc == 0 else f"FAILED (pytest exit {rc})"
    return ("| scenario | tried | outcome |\n|---|---|---|\n" + "\n".join(rows) +
            f"\n\nFault suite at {mode}: {status} in {elapsed:.0f} s "
            f"(`python benchmarks/reliability.py`).")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bounded", action="store_true",
                    help="the bounded scale of the README's test command instead of --soak")
    ap.add_argument("--no-readme", action="store_true", help="leave docs/reliability.md alone")
    args = ap.parse_args(argv)
    soak = not args.bounded
    data, rc, elapsed = run_suite(soak)
    body = table(data, soak, rc, elapsed)
    RESULTS.write_text("# Reliability (tests/fault)\n\nRegenerated by "
                       "`python benchmarks/reliability.py`.\n\n" + body + "\n\n```json\n" +
                       json.dumps(data, indent=2, sort_keys=True) + "\n```\n", encoding="utf-8")
    if not args.no_readme:
        text = README.read_text(encoding="utf-8")
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        if pattern.search(text):
            README.write_text(pattern.sub(lambda _: f"{BEGIN}\n{body}\n{END}", text),
                              encoding="utf-8")
    print(body)
    return rc


if __name__ == "__main__":
    sys.exit(main())
