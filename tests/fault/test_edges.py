"""Inputs and files that used to reach a raw exception: a workspace file whose name is not
UTF-8, export and import paths, meta values; and the snapshot's rename step, which never leaves
a moment without ``snapshot.arrow``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.errors import ValidationError
from maclaw_fast.persist.snapshot import peek_meta


@pytest.fixture
def latin1_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\n\nAllergic to peanuts.\n")
    with open(os.path.join(os.fsencode(ws / "memory"), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"notes from a Latin-1 system about coffee\n")
    return ws


def test_a_non_utf8_file_name_is_skipped_with_a_warning(latin1_workspace, tmp_path):
    from maclaw_fast.workspace import WorkspaceIndex

    with pytest.warns(RuntimeWarning, match=r"caf\\xe9.md skipped: its name is not valid UTF-8"):
        ix = WorkspaceIndex.open(latin1_workspace, embedder=None, index_dir=tmp_path / "ix")
    try:
        hits = ix.search("peanuts").results
        assert [h.path for h in hits] == ["MEMORY.md"]
        ix.sync()  # and again
    finally:
        ix.close()


@pytest.mark.parametrize("command", [["index"], ["search", "peanuts"]])
def test_the_command_line_works_beside_a_non_utf8_file_name(latin1_workspace, tmp_path,
                                                             command):
    env = dict(os.environ, MACLAW_QUIET_COMPILE="1")
    proc = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *command, "--workspace",
                           str(latin1_workspace), "--embedder", "none"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not valid UTF-8" in proc.stderr and "Traceback" not in proc.stderr


def test_export_and_import_paths_are_checked_before_anything_is_written(tmp_path):
    with MemoryStore.in_memory(embedder=None) as s:
        s.save("a memory to export", category="preference")
        bad = [tmp_path, tmp_path / "missing" / "out.json", None, 5, b"out.json", "",
               "bad\udcff.json", "nul\x00.json", str(tmp_path / ("n" * 300))]
        for path in bad:
            with pytest.raises(ValidationError):
                s.export_maclaw(path)
        for path in (5, None, tmp_path, tmp_path / "absent.json"):
            with pytest.raises(ValidationError):
                s.import_maclaw(path)
        assert os.listdir(tmp_path) == []  # no .tmp left behind
        assert s.export_maclaw(tmp_path / "out.json") == 1


def test_meta_values_are_strings_or_numbers(tmp_path):
    with MemoryStore.in_memory(embedder=None) as s:
        for value in (object(), [1, 2], {"a": {"b": 1}}, None):
            with pytest.raises(ValidationError, match="meta value"):
                s.set_meta("key", value)
        s.set_meta("key", 3.5)
        assert s.meta["key"] == "3.5"


def test_a_snapshot_is_always_in_place_while_the_previous_moves_aside(tmp_path):
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder=None) as s:
        s.save("first", category="preference")
        s.flush()
        first = (path / "snapshot.arrow").read_bytes()
        (path / "snapshot.arrow.prev.tmp").write_bytes(b"left by a crash")
        s.save("second", category="preference")
        s.flush()
    assert (path / "snapshot.arrow.prev").read_bytes() == first
    assert not (path / "snapshot.arrow.prev.tmp").exists()
    assert peek_meta(path / "snapshot.arrow").seq > peek_meta(path / "snapshot.arrow.prev").seq


def test_an_empty_token_is_refused_not_taken_for_none():
    from maclaw_fast.server.http import check_bind, check_token

    with pytest.raises(ValidationError, match="empty"):
        check_token("")
    with pytest.raises(ValidationError, match="empty"):
        check_bind("127.0.0.1", "")
    check_bind("127.0.0.1", None)  # loopback without a token stays allowed


@pytest.mark.parametrize("headers,status", [
    ([(b"authorization", b"Bearer right-token-123")], 200),
    ([(b"authorization", b"Bearer wrong-token-123")], 401),
    ([(b"authorization", b"Bearer wrong-token-123"),
      (b"authorization", b"Bearer right-token-123")], 401),
    ([(b"authorization", b"Bearer right-token-123"),
      (b"authorization", b"Bearer right-token-123")], 401),
    ([], 401)])
def test_duplicate_authorization_headers_are_refused(headers, status):
    import asyncio

    from maclaw_fast.server.auth import BearerAuth
    from maclaw_fast.server.users import UserAuth

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})

    for auth in (BearerAuth(app, "right-token-123"),
                 UserAuth(app, {"right-token-123": "alice"})):
        sent = []

        async def send(message):
            sent.append(message)

        asyncio.run(auth({"type": "http", "headers": headers}, None, send))
        assert sent[0]["status"] == status, (type(auth).__name__, headers)


def test_memory_get_with_nul_is_a_clear_error(tmp_path):
    from maclaw_fast.workspace.files import resolve_memory_file

    (tmp_path / "MEMORY.md").write_text("x")
    for bad in ("MEMORY.md\x00", "memory/a\x00b.md", "caf\udce9.md"):
        with pytest.raises(ValidationError, match="NUL"):
            resolve_memory_file(tmp_path, bad)
