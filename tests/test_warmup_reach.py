"""After ``warmup``, the first calls of every part (default configuration) compile nothing: a
kernel the warmup misses would stall a user's first answer instead."""

from __future__ import annotations

import json
import subprocess
import sys

SCENARIO = r"""
import json, tempfile
from pathlib import Path
from numba.core import event
compiled = []
class Seen(event.Listener):
    def on_start(self, ev): compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev): pass
event.register("numba:compile", Seen())
from maclaw_fast.config import CapacityConfig, MemoryConfig
from maclaw_fast.memory.store import MemoryStore
from maclaw_fast.tools import RegisteredTool, ToolRegistry, ToolRouter, UsageTracker
from maclaw_fast.workspace import WorkspaceIndex
clock = {"t": 1.8e9}
with tempfile.TemporaryDirectory() as tmp:
    s = MemoryStore.open(Path(tmp) / "m", embedder="hash", clock=lambda: clock["t"],
                         config=MemoryConfig(capacity=CapacityConfig(gc_threshold=20)))
    for i in range(30):
        s.save(f"note {i} about boats and {i % 7} gardens", category="project",
               thread=f"t{i % 3}")
    s.save("Ana: I love sailing", category="conversation_summary")
    s.recall("boats"); s.recall("what does Ana love"); s.recall_batch(["boats", "gardens"])
    s.recall_batch_arrow(["boats"])
    clock["t"] += 500 * 86400
    s.decay(); s.gc(); s.recall("zebra crossing", reinforce=True)
    s.close()
    MemoryStore.open(Path(tmp) / "m", embedder="hash").close()
    usage = UsageTracker()
    usage.record("t1", "open the file", True)
    tools = [RegisteredTool(name=f"t{i}", description=f"tool {i} for files") for i in range(30)]
    router = ToolRouter(ToolRegistry(tools), embedder="hash", usage=usage)
    router.route("open the file"); router.route_batch(["open", "files"])
    ws = Path(tmp) / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("Boats and sails.\n")
    (ws / "memory" / "2026-01-02.md").write_text("Boats and gardens.\n")
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=Path(tmp) / "state")
    ix.search("boats")
    ix.close()
print(json.dumps(sorted(set(compiled))))
"""


def test_after_warmup_the_first_calls_compile_nothing():
    warm = [sys.executable, "-c", "from maclaw_fast.warmup import warmup; warmup(out=None)"]
    subprocess.run(warm, check=True, capture_output=True, timeout=600)  # loads, or compiles once
    run = subprocess.run([sys.executable, "-c", SCENARIO], check=True, capture_output=True,
                         text=True, timeout=600)
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []
