"""How long the command line goes without showing anything: runs ``maclaw-fast`` commands with
``--progress`` and timestamps every write to stderr.

Reports, per command: the wall time, the time to the first progress output (interpreter start
and imports included), the longest silence between two outputs after that (what a user
watches while the command works) and the output it followed. stderr is a pseudo-terminal, as
a user's (``--pipe``: a pipe, where lines are redrawn once a second). Sizes: an import of 1,000 memories and an index of a
500-file workspace (benchmarks/gen_workspace.py), both with the hashing embedder so the figure
is the CLI's, not a model's.

Usage: ``python benchmarks/progress_gaps.py [--e5] [--pipe]`` (``--e5``: also import the 200 sample
memories with multilingual-e5-small, no vector cache).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import selectors
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def watch(label: str, argv: list[str], tty: bool = True) -> dict:
    """Run ``maclaw-fast argv`` and time its stderr writes (``tty``: stderr is a pseudo-terminal,
    as a user's; else a pipe, as a log's)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", COLUMNS="100")
    if tty:
        master, slave = pty.openpty()
        # a terminal's size (a new pty has none, and a bar of width 0 draws nothing)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        err, read_fd = slave, master
    else:
        read_fd, err = os.pipe()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "maclaw_fast.cli", *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=err, env=env)
    os.close(err)
    sel = selectors.DefaultSelector()
    sel.register(read_fd, selectors.EVENT_READ)
    stamps, texts = [], []
    while True:
        if sel.select(timeout=0.05):
            try:
                data = os.read(read_fd, 65536)
            except OSError:  # the pty closes with the child
                data = b""
            if not data:
                break
            stamps.append(time.perf_counter() - t0)
            texts.append(data.decode("utf-8", "replace"))
    proc.wait()
    os.close(read_fd)
    end = time.perf_counter() - t0
    if proc.returncode != 0 or not stamps:
        raise SystemExit(f"{argv} failed or showed nothing (rc {proc.returncode})")
    gaps = [b - a for a, b in zip(stamps, stamps[1:])] + [end - stamps[-1]]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    after = " ".join(ANSI.sub("", texts[worst]).replace("\r", "\n").split("\n")[-2:]).strip()
    return {"command": label, "wall_s": round(end, 2),
            "first_output_s": round(stamps[0], 2), "longest_silence_s": round(max(gaps), 2),
            "writes": len(stamps), "silent_after": after[-70:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--e5", action="store_true", help="also the e5 import of the sample")
    ap.add_argument("--pipe", action="store_true",
                    help="stderr to a pipe (a log) instead of a pseudo-terminal (a user)")
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
                           "--progress"], tty=not args.pipe))
        generate(f"{tmp}/ws", n_files=500, target_mb=2.0, seed=0)
        rows.append(watch("index 500 files, 2 MB (hash)",
                          ["index", "--workspace", f"{tmp}/ws", "--embedder", "hash",
                           "--progress"], tty=not args.pipe))
        if args.e5:
            rows.append(watch("import 200 sample memories (e5, no cache)",
                              ["import", str(ROOT / "data" / "memories.json"), "--store",
                               f"{tmp}/s2", "--embedder", "e5", "--no-embed-cache",
                               "--progress"], tty=not args.pipe))
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} ({os.cpu_count()} cores)")
    print(f"stderr: {'a pipe' if args.pipe else 'a pseudo-terminal'}")
    print("| command | wall s | first output s | longest silence s | writes | silent after |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['command']} | {r['wall_s']} | {r['first_output_s']} | "
              f"{r['longest_silence_s']} | {r['writes']} | {r['silent_after']} |")


if __name__ == "__main__":
    main()
