"""Issue 32 findings: export/import path errors, set_meta values, duplicate Authorization headers.
Each asserts a class from maclaw_fast.errors and that nothing is left behind or changed."""

from __future__ import annotations

import asyncio
import os

import pytest

from maclaw_fast import MemoryConfig, MemoryStore, ValidationError
from maclaw_fast.config import PersistConfig
from maclaw_fast.server.http import BearerAuth
from maclaw_fast.server.users import UserAuth

TOKEN = "t" * 32


def _store(tmp_path):
    cfg = MemoryConfig(persist=PersistConfig(snapshot_debounce_s=0))
    return MemoryStore.open(tmp_path / "s", embedder=None, config=cfg)


def test_export_path_errors_are_project_errors_and_leave_no_tmp(tmp_path):
    (tmp_path / "adir").mkdir()
    with _store(tmp_path) as s:
        s.save("a memory to export", category="preference")
        for bad in (tmp_path / "adir", tmp_path / "missing" / "x.json", None, 5, b"x.json",
                    str(tmp_path / "bad\udcff.json"), str(tmp_path / ("n" * 400)), ""):
            with pytest.raises(ValidationError):
                s.export_maclaw(bad)
        assert s.export_maclaw(tmp_path / "ok.json") == 1
    left = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert left == [] and os.listdir(tmp_path / "adir") == []


def test_import_of_a_non_path_is_a_validation_error(tmp_path):
    with _store(tmp_path) as s:
        for bad in (5, None, 3.5, ["x"]):
            with pytest.raises(ValidationError):
                s.import_maclaw(bad)
        assert s.entries() == [] or len(list(s.entries())) == 0


def test_set_meta_refuses_objects_and_deep_nesting(tmp_path):
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with _store(tmp_path) as s:
        for bad in (object(), [1, 2], {"a": 1}, deep, None, b"bytes"):
            with pytest.raises(ValidationError):
                s.set_meta("k", bad)
        s.set_meta("n", 1.5)
        s.set_meta("t", "text")
        assert s.meta.get("n") == "1.5" and s.meta.get("t") == "text" and "k" not in s.meta


def _run_auth(auth, headers):
    seen, sent = [], []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    auth.app = app

    async def send(msg):
        sent.append(msg)

    asyncio.run(auth({"type": "http", "headers": headers}, None, send))
    return seen, sent


@pytest.mark.parametrize("make", [lambda: BearerAuth(None, TOKEN),
                                  lambda: UserAuth(None, {TOKEN: "alice"})])
def test_duplicate_authorization_headers_are_refused(make):
    good = (b"authorization", f"Bearer {TOKEN}".encode())
    bad = (b"authorization", b"Bearer nope")
    for headers in ([good, bad], [bad, good], [good, good]):
        seen, sent = _run_auth(make(), headers)
        assert seen == [] and sent[0]["status"] == 401
    seen, sent = _run_auth(make(), [good])
    assert seen == ["http"]


def _latin1_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "ok.md").write_text("the deploy key lives in the vault\n")
    raw = os.path.join(os.fsencode(ws / "memory"), b"caf\xe9.md")
    with open(raw, "wb") as fh:
        fh.write(b"latin one name\n")
    return ws


def test_non_utf8_file_name_is_skipped_with_a_warning(tmp_path):
    from maclaw_fast.workspace.index import WorkspaceIndex

    ws = _latin1_workspace(tmp_path)
    with pytest.warns(RuntimeWarning, match="not valid UTF-8"):
        ix = WorkspaceIndex.open(ws, embedder=None)
    try:
        assert ix.search("deploy key").results[0].citation == "memory/ok.md#L1-L1"
        assert ix.search("latin").results == []
    finally:
        ix.close()


@pytest.mark.parametrize("cmd", [["index"], ["search", "deploy key"]])
def test_cli_works_on_a_workspace_with_a_non_utf8_name(tmp_path, cmd):
    import subprocess
    import sys

    ws = _latin1_workspace(tmp_path)
    args = [sys.executable, "-m", "maclaw_fast.cli", cmd[0], "--workspace", str(ws),
            "--embedder", "none", *cmd[1:]]
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_oversized_workspace_file_is_skipped_with_a_warning(tmp_path, monkeypatch):
    from maclaw_fast.workspace.files import discover

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "big.md").write_text("x " * 600)
    (ws / "memory" / "small.md").write_text("fine\n")
    with pytest.warns(RuntimeWarning, match="over the 1000-byte bound"):
        assert [f.rel for f in discover(ws, max_bytes=1000)] == ["memory/small.md"]
    monkeypatch.setenv("MACLAW_WORKSPACE_MAX_FILE_BYTES", "1000")
    with pytest.warns(RuntimeWarning):
        assert [f.rel for f in discover(ws)] == ["memory/small.md"]
    monkeypatch.setenv("MACLAW_WORKSPACE_MAX_FILE_BYTES", "lots")
    with pytest.raises(ValidationError):
        discover(ws)
    monkeypatch.delenv("MACLAW_WORKSPACE_MAX_FILE_BYTES")
    assert len(discover(ws)) == 2


def test_empty_token_is_refused_not_taken_as_no_token(tmp_path):
    import subprocess

    from tests.test_mcp_server import _env, _serve

    store = str(tmp_path / "s")
    for args, extra in ((["--token", ""], {}), (["--token", "  "], {}),
                        ([], {"MACLAW_MCP_TOKEN": ""})):
        env = dict(_env(tmp_path / "home"), **extra)
        proc = subprocess.run(_serve("--transport", "http", "--port", "1", "--store", store,
                                     *args), env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "bearer token is empty" in proc.stderr, proc.stderr
    assert not os.path.exists(store)


def _journal_store(tmp_path):
    path = tmp_path / "s"
    cfg = MemoryConfig(persist=PersistConfig(snapshot_debounce_s=60))
    s = MemoryStore.open(path, embedder=None, config=cfg)
    s.save("kept before the damage", category="preference")
    s.close()
    return path, cfg


def test_journal_garbage_to_its_end_is_damage_and_copied_aside(tmp_path):
    import warnings

    path, cfg = _journal_store(tmp_path)
    garbage = b"\xff\xff\xff\x7f" + os.urandom(4000)  # an implausible frame length, then noise
    with open(path / "journal.bin", "ab") as fh:
        fh.write(garbage)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = MemoryStore.open(path, embedder=None, config=cfg)
    s.close()
    text = " ".join(str(w.message) for w in seen)
    assert "damaged" in text and "unfinished write" not in text
    copies = [p for p in path.iterdir() if p.name.startswith("journal.bin.corrupt.")]
    assert copies and copies[0].read_bytes().endswith(garbage)


def test_torn_tail_is_copied_aside_before_it_is_dropped(tmp_path):
    path, cfg = _journal_store(tmp_path)
    with open(path / "journal.bin", "ab") as fh:
        fh.write(b"\x40\x00\x00\x00\x01\x02\x03\x04partial")  # 64-byte payload announced, 7 there
    with pytest.warns(RuntimeWarning, match="torn.*copy is in"):
        s = MemoryStore.open(path, embedder=None, config=cfg)
    assert [e.content for e in s.entries()] == ["kept before the damage"]
    s.close()
    assert any(p.name.startswith("journal.bin.corrupt.") for p in path.iterdir())


