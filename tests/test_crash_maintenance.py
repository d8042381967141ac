"""SIGKILL a real subprocess in the middle of a maintenance run: the store must open, a backup
from before the run must exist, and no entry may be half-changed (design §8, §10)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast.memory import MemoryStore
from maclaw_fast.maintenance.pipeline import list_backups
from tests.llm_server import Reply, Slow
from tests.maint_helpers import H, Router

ROOT = Path(__file__).resolve().parents[1]
NOW = time.time()
CHILD = r"""
import sys
from maclaw_fast.llm import LLMClient, LLMConfig
from maclaw_fast.maintenance import Maintenance
from maclaw_fast.memory import MemoryStore
store = MemoryStore.open(sys.argv[1], embedder=None)
llm = LLMClient(LLMConfig(base_url=sys.argv[2] + "/v1", model="m", timeout_s=10,
                          max_retries=0))
print("READY", flush=True)
Maintenance(store, llm).run_once()
print("DONE", flush=True)
"""
CATS = ["instruction", "preference", "project_knowledge", "session_checkpoint",
        "conversation_summary", "user_fact"]


def compressed(content: str) -> str:
    return content[: len(content) // 4].strip() + " (c)"


def compact(content: str) -> str:
    return "K:" + content[:8]


def _compress_reply(body):
    msgs = body["messages"]
    content = msgs[-1]["content"]
    if isinstance(content, list):
        content = content[0]["text"]
    original = content.split("\n\n", 1)[1]
    return Slow(0.03, Reply(text=compressed(original)))


def _compact_reply(body):
    text = json.dumps(body)
    items = re.findall(r"\[(\d+)\] (.*?)(?=\\n\[\d+\] |\\n\\n)", text)
    return Slow(0.03, Reply(text=json.dumps(
        [{"index": int(i), "compact": compact(json.loads(f'"{c}"'))} for i, c in items])))


def build(path: Path) -> dict:
    recs = []
    for i in range(470):
        cat = "self_identity" if i < 5 else CATS[i % 6]
        body = f"memory {i:04d} on subject {i * 7919 % 1000} in {cat}"
        if 100 <= i < 140:
            body += " with a long explanation " + "of details and more details " * 8
        ts = NOW - (i % 50) * 30 * H  # some old enough to fall dormant
        recs.append({"id": f"e{i:04d}", "content": body, "category": cat, "tags": (f"t{i % 9}",),
                     "created_at": ts, "updated_at": ts, "access_count": 1 + i % 4,
                     "strength": 1.0, "status": "active", "pinned": i % 50 == 7,
                     "compact_form": "", "related_ids": [], "related_strengths": [],
                     "embedding": None})
    for j in range(10):  # exact duplicates for dedup
        src = recs[200 + j]
        recs.append(dict(src, id=f"d{j:04d}", content=src["content"].upper(), access_count=1))
    with MemoryStore.open(path, embedder=None) as s:
        assert s.import_records(recs) == 480
        return {e.id: e for e in s.entries()}


def _wait(cond, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("kill_after", [0, 4, 20, 38])  # of 40 LLM calls in a full run
def test_sigkill_mid_maintenance(tmp_path, llm_server, kill_after):
    path = tmp_path / "st"
    original = build(path)
    llm_server.default = Router(merge=Slow(0.03, Reply(text="[]")), compress=_compress_reply,
                                compact=_compact_reply, promote=Reply(text="[]"),
                                reflect=Reply(text="[]"))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), llm_server.url],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == b"READY"
        if kill_after == 0:
            assert _wait(lambda: list_backups(path / "backups"))
        else:
            assert _wait(lambda: len(llm_server.requests) >= kill_after or
                         proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

    backups = list_backups(path / "backups")
    assert len(backups) == 1
    data = json.loads(backups[0].read_text())
    assert {d["id"]: d["content"] for d in data} == {k: e.content for k, e in original.items()}

    with MemoryStore.open(path, embedder=None) as s:
        live = {e.id: e for e in s.entries()}
        archived = {e.id for e in s.archive.list()}
        for i, e in live.items():
            o = original[i]
            assert e.category == o.category and e.tags == o.tags and e.pinned == o.pinned
            if e.content != o.content:  # compressed: whole, never a partial rewrite
                assert e.content == compressed(o.content)
            assert e.compact_form in ("", compact(e.content))
            assert e.status in ("active", "dormant")
            if e.status == "dormant":
                assert e.strength < 0.1
            assert e.access_count == o.access_count or (i not in original)
        for i in archived:
            assert s.archive.get(i).content == original[i].content
        lost = set(original) - set(live) - archived
        dedup_losers = {f"d{j:04d}" for j in range(10)}
        assert lost <= dedup_losers  # nothing vanished except exact duplicates
        if kill_after >= 20:  # the run got far enough to have rewritten entries
            assert any(e.content != original[i].content for i, e in live.items())
        # a move killed half-way leaves a copy on both sides (never none); GC tidies it up
        both = set(live) & archived
        assert len(both) <= 1
        assert s.gc().before == len(live)
        assert not {e.id for e in s.entries()} & {e.id for e in s.archive.list()}
