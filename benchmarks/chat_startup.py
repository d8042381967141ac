"""How long ``maclaw-fast chat`` takes to start: from the process start to its banner line (store
open, catalog and model loaded, MCP servers attached), with and without one stdio MCP server
(tests/mcp_orders_server.py, a real MCP SDK server).

With ``--baseline REF`` the same runs are made, interleaved, with the code of git revision REF
(exported to a temporary directory), so both figures come from the same load.

Usage: ``python benchmarks/chat_startup.py [--baseline main] [--repeat 3] [--embedder auto]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BANNER = b"maclaw-fast chat:"


def start_once(src: Path, home: Path, mcp: Path | None, embedder: str) -> float:
    """Seconds from spawning chat (code under ``src``) to its banner; then it is told /exit."""
    argv = [sys.executable, "-m", "maclaw_fast.cli", "chat", "--llm-url",
            "http://127.0.0.1:9/v1", "--model", "m", "--store", str(home / "store"),
            "--embedder", embedder]
    if mcp is not None:
        argv += ["--mcp-config", str(mcp)]
    env = dict(os.environ, PYTHONPATH=str(src), MACLAW_HOME=str(home), PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=src, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    seen = b""
    while BANNER not in seen:
        chunk = proc.stdout.read1(65536)
        if not chunk:
            raise SystemExit(f"chat ended before its banner (rc {proc.wait()}):\n{seen[-2000:]}")
        seen += chunk
    elapsed = time.perf_counter() - t0
    proc.communicate(b"/exit\n", timeout=120)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=None, metavar="REF",
                    help="also time the code of this git revision, interleaved")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--embedder", default="auto", help="chat's --embedder (default auto)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        trees = {"current": ROOT}
        if args.baseline:
            base = tmp / "baseline"
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            # the installed package maps kernels/ to maclaw_kernels: the baseline's own ones
            (base / "maclaw_kernels").symlink_to(base / "kernels", target_is_directory=True)
            trees = {"baseline": base, "current": ROOT}
        mcp = tmp / "mcp.json"
        mcp.write_text(json.dumps({"mcpServers": {"orders": {
            "command": sys.executable,
            "args": [str(ROOT / "tests" / "mcp_orders_server.py"), "--transport", "stdio"]}}}))
        times: dict[tuple[str, str], list[float]] = {}
        # one warm-up run per tree (bytecode, numba and tool-embedding caches), not counted
        for name, src in trees.items():
            start_once(src, tmp / f"home-{name}", mcp, args.embedder)
        for _ in range(args.repeat):
            for name, src in trees.items():
                for label, cfg in (("no MCP server", None), ("one stdio MCP server", mcp)):
                    t = start_once(src, tmp / f"home-{name}", cfg, args.embedder)
                    times.setdefault((name, label), []).append(t)
    print(f"chat start-up to its banner (--embedder {args.embedder}), median of "
          f"{args.repeat} (min-max):")
    for (name, label), ts in times.items():
        print(f"  {name:9} {label:22} {statistics.median(ts):6.2f} s  "
              f"({min(ts):.2f}-{max(ts):.2f})")
    for name in trees:
        extra = (statistics.median(times[(name, "one stdio MCP server")])
                 - statistics.median(times[(name, "no MCP server")]))
        print(f"  {name}: attaching the server adds {extra:.2f} s")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
