"""``maclaw-fast serve --stores DIR --users FILE``: one store per user behind one HTTP server,
the store chosen by the bearer token alone; one user can never reach another's memories."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess

import pytest

from maclaw_fast import MemoryStore, ValidationError
from maclaw_fast.maintenance.records import last_maintenance
from maclaw_fast.server.users import UserAuth, parse_users
from tests.test_mcp_server import _data, _env, _error, _free_port, _serve, _wait_port

pytestmark = pytest.mark.timeout(120)
ALICE, BOB = "alice-token-0123456789", "bob-token-abcdefghijkl"


def test_users_file_is_checked():
    for bad in ({}, {"users": {}}, {"users": {"short": "a"}}, {"users": {ALICE: "../bob"}},
                {"users": {ALICE: "a/b"}}, {"users": {ALICE: 5}}, [ALICE],
                {"users": {" " + ALICE: "a"}}):
        with pytest.raises(ValidationError):
            parse_users(bad)
    assert parse_users({"users": {ALICE: "alice", BOB: "bob"}}) == {ALICE: "alice", BOB: "bob"}


def test_user_auth_maps_tokens_and_nothing_else():
    auth = UserAuth(None, {ALICE: "alice", BOB: "bob"})
    assert auth.store_of(f"Bearer {ALICE}".encode()) == "alice"
    assert auth.store_of(f"Bearer {BOB}".encode()) == "bob"
    for given in (b"", ALICE.encode(), f"Bearer {ALICE} ".encode(), b"Bearer alice",
                  f"bearer {ALICE}".encode(), f"Bearer {ALICE[:-1]}".encode()):
        assert auth.store_of(given) is None


def test_cli_refuses_half_configured_user_stores(tmp_path):
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": {ALICE: "alice"}}))
    for args in (["--transport", "http", "--stores", str(tmp_path / "s")],
                 ["--transport", "stdio", "--stores", str(tmp_path / "s"), "--users", str(users)],
                 ["--transport", "http", "--users", str(users)]):
        proc = subprocess.run(_serve(*args, "--port", "1"), env=_env(tmp_path / "home"),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "per-user stores need" in proc.stderr
    assert not (tmp_path / "s").exists()


def test_each_user_reaches_only_their_own_store(tmp_path):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": {ALICE: "alice", BOB: "bob"}}))
    root, port = tmp_path / "stores", _free_port()
    proc = subprocess.Popen(
        _serve("--transport", "http", "--port", str(port), "--stores", str(root), "--users",
               str(users), "--pool-size", "1"),
        env=_env(tmp_path / "home"), stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"

    async def session_of(token, body):
        # a header or argument naming another store changes nothing: only the token counts
        headers = {"Authorization": f"Bearer {token}", "X-Store": "alice",
                   "X-Maclaw-Store": "alice"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
            async with streamable_http_client(url + "?store=alice",
                                              http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    return await body(session)

    async def alice(session):
        saved = _data(await session.call_tool("memory_save", {
            "content": "Alice's bank PIN hint is the blue heron", "category": "user_fact"}))
        return saved["saved"]["id"]

    async def bob(session, secret_id):
        _data(await session.call_tool("memory_save", {"content": "Bob likes sailing boats",
                                                      "category": "preference"}))
        rec = _data(await session.call_tool("memory_recall", {"query": "bank PIN blue heron"}))
        assert all("heron" not in r["content"] for r in rec["results"])
        found = _data(await session.call_tool("memory_search", {"query": "heron"}))
        assert found["store"] == []
        assert "no memory" in _error(await session.call_tool("memory_get", {"id": secret_id}))
        assert "no memory" in _error(await session.call_tool("memory_forget",
                                                             {"id": secret_id}))
        assert "no memory" in _error(await session.call_tool("memory_pin", {"id": secret_id}))

    async def alice_again(session, secret_id):
        rec = _data(await session.call_tool("memory_recall", {"query": "blue heron"}))
        assert rec["results"][0]["id"] == secret_id
        assert all("sailing" not in r["content"] for r in rec["results"])

    async def main():
        async with httpx2.AsyncClient(timeout=10) as anon:
            for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                            {"Authorization": f"Bearer {ALICE}x"}):
                r = await anon.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                    headers=headers)
                assert r.status_code == 401
        secret = await session_of(ALICE, alice)
        await session_of(BOB, lambda s: bob(s, secret))  # pool of 1: alice's store was closed
        await session_of(ALICE, lambda s: alice_again(s, secret))
        await asyncio.gather(*[session_of(t, f) for t, f in
                               [(ALICE, lambda s: alice_again(s, secret)),
                                (BOB, lambda s: bob(s, secret))] * 3])

    try:
        _wait_port(proc, port)
        asyncio.run(asyncio.wait_for(main(), 100))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0
    assert sorted(p.name for p in root.iterdir()) == ["alice", "bob"]
    with MemoryStore.open(root / "alice", embedder="hash") as a:
        assert [e.content for e in a.entries()] == ["Alice's bank PIN hint is the blue heron"]
        # reopened holding a memory it was due: the per-user schedule maintained it
        assert last_maintenance(a).scheduled
    with MemoryStore.open(root / "bob", embedder="hash") as b:
        assert [e.content for e in b.entries()] == ["Bob likes sailing boats"]
        assert last_maintenance(b).scheduled
