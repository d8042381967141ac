"""Ctrl-C: one line at once, exit 130 within 2 s even inside a long native call, and a store
that reopens with every acknowledged save."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from maclaw_fast import MemoryStore, cli, interrupt

# hashlib's PBKDF2 is one native call that releases the GIL and never looks at signals: the
# stand-in for a model embedding a batch (minutes at this count)
BLOCKING = """
import hashlib, signal
from maclaw_fast import interrupt
signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's, even if we inherit SIG_IGN
with interrupt.guard():
    print("inside", flush=True)
    hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10 ** 9)
"""


def _spawn(code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))


def test_ctrl_c_inside_a_native_call_exits_130_within_2_s():
    proc = _spawn(BLOCKING)
    try:
        assert proc.stdout.readline().strip() == "inside"
        time.sleep(0.3)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        took = time.perf_counter() - t0
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert rc == interrupt.EXIT_CODE
    assert took < 2.0, took
    assert err.strip() == interrupt.MESSAGE  # one line, no traceback


def test_without_a_signal_the_guard_changes_nothing():
    with interrupt.guard(), interrupt.guard(force=False):
        pass
    assert not interrupt.fired()


def test_interrupted_command_says_so_exits_130_and_keeps_saved_memories(tmp_path, capsys,
                                                                        monkeypatch):
    store = str(tmp_path / "store")
    assert cli.main(["save", "Lin prefers green tea", "--category", "preference",
                     "--store", store, "--embedder", "hash"]) == 0
    src = tmp_path / "in.json"
    src.write_text(json.dumps([{"content": f"note {i}", "category": "project_knowledge"}
                               for i in range(5)]), encoding="utf-8")
    capsys.readouterr()

    def stopped(self, *a, **k):
        raise KeyboardInterrupt  # Ctrl-C while the import embeds

    monkeypatch.setattr(MemoryStore, "import_records", stopped)
    rc = cli.main(["import", str(src), "--store", store, "--embedder", "hash", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 130
    assert interrupt.MESSAGE in err and "Traceback" not in err
    monkeypatch.undo()
    with MemoryStore.open(store, embedder="hash") as s:  # unlocked, and the save is there
        assert [e.content for e in s.entries()] == ["Lin prefers green tea"]


@pytest.mark.parametrize("command", ["chat", "serve"])
def test_chat_and_serve_end_on_ctrl_c_their_own_way(command):
    args = cli.build_parser(command).parse_args([command])
    assert args.own_interrupt is True
