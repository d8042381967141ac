"""Compile (and cache) every numba kernel by running each engine part once on tiny inputs.

The kernels compile on first use; numba keeps the machine code on disk (``cache=True``), so
only the first process after an install pays. :func:`warmup` runs the same calls a user's
first recall, batch, save, decay, archive search, route (with a usage history) and workspace
search make, with the same argument types, so none of them compiles later. ``maclaw-fast
warmup`` runs it. Two opt-in paths compile on their first use instead, each with its one-line
notice on stderr: a workspace search with ``SearchConfig.mmr`` and the int8 first pass of a
workspace of 4,096 chunks or more.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PARTS = ("memory", "router", "workspace")


def _memory() -> None:
    from maclaw_fast.config import CapacityConfig, MemoryConfig
    from maclaw_fast.memory.store import MemoryStore

    clock = {"t": 1.7e9}
    # a low GC threshold: gc archives entries, so the archive search has rows to score
    config = MemoryConfig(capacity=CapacityConfig(gc_threshold=8))
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(Path(tmp) / "s", embedder="hash", config=config,
                                 clock=lambda: clock["t"])
        store.save("I am Juniper, a coding agent", category="self_identity")
        store.save("Lin lives in Oslo", category="user_fact")
        store.save("deploy.sh needs AWS_REGION", category="project", tags=["atlas"])
        for session in range(2):  # two conversations: the thread prior applies
            for turn in range(3):
                store.save(f"turn {turn} of session {session} about the ferry",
                           category="conversation_summary", thread=f"s{session}")
        old = store.save("an old chat about pottery", category="conversation_summary")
        store.set_fields(old.id, status="dormant")
        store.save("Ana: the ferry leaves at noon", category="conversation_summary",
                   thread="s1")
        store.recall("ferry to Naxos", project="atlas")
        store.recall("when does Ana's ferry leave")  # a named speaker: the speaker order
        store.recall("pottery chat")  # revives the dormant entry
        store.recall_batch(["ferry", "deploy", "tea"], projects=[None, "atlas", None])
        store.recall_batch_arrow(["ferry", "pottery"], reinforce=False)
        clock["t"] += 400 * 86400.0
        store.decay()
        store.gc()
        store.recall("something unrelated", reinforce=True)  # the archive search
        store.bm25.scores(["ferry"], len(store), in_ranges=True)  # a large store's BM25
        store.close()
        MemoryStore.open(Path(tmp) / "s", embedder="hash").close()  # reopen: the loaders


def _router() -> None:
    from maclaw_fast.tools import RegisteredTool, ToolRegistry, ToolRouter, UsageTracker

    tools = [RegisteredTool(name=f"tool_{i}", description=f"does thing {i} with files and web")
             for i in range(40)]
    usage = UsageTracker()  # the experience signal of a router that records its tools' use
    usage.record("tool_3", "read a file", True)
    router = ToolRouter(ToolRegistry(tools), embedder="hash", usage=usage)
    router.route("read a file then search the web")
    router.route_batch(["read a file", "search the web"])
    router.route_batch_arrow(["read a file"])


def _workspace() -> None:
    from maclaw_fast.workspace import WorkspaceIndex

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text("# Notes\n\nAllergic to peanuts.\n\nLikes green tea.\n")
        (ws / "memory" / "2026-01-02.md").write_text("Deployed atlas to staging.\n")
        ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=Path(tmp) / "state")
        ix.search("peanut allergy")
        ix.close()


def warmup(parts=PARTS, *, out=sys.stderr) -> dict[str, float]:
    """Compile every kernel the named ``parts`` use; returns the seconds each took. Prints one
    line per part to ``out`` (None: silent)."""
    runs = {"memory": _memory, "router": _router, "workspace": _workspace}
    took = {}
    for name in parts:
        t0 = time.perf_counter()
        if out is not None:
            print(f"compiling the {name} kernels…", file=out, flush=True)
        runs[name]()
        took[name] = time.perf_counter() - t0
    np.seterr(all="warn")
    return took


def warm_in_background(parts=PARTS):
    """Run :func:`warmup` silently on a daemon thread and return the thread: a server answers
    at once and its first call waits only for what is left to compile (nothing once cached,
    where this costs about a second of loading)."""
    import threading

    def run() -> None:
        try:
            warmup(parts, out=None)
        except Exception as exc:  # noqa: BLE001 - a failed warmup only means a later compile
            print(f"maclaw_fast: background warmup failed: {exc}", file=sys.stderr, flush=True)

    thread = threading.Thread(target=run, name="maclaw-warmup", daemon=True)
    thread.start()
    return thread
