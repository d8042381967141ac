"""``maclaw-fast serve`` driven by the MCP SDK's client, over stdio (spawned by the client) and
streamable HTTP on 127.0.0.1 (a subprocess on a free port)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.errors import ValidationError
from maclaw_fast.server.http import BearerAuth, check_bind, is_loopback

ROOT = Path(__file__).resolve().parents[1]
CATALOG = str(ROOT / "data" / "tools.json")
TOOLS = {"memory_save", "memory_recall", "memory_search", "memory_get", "memory_forget",
         "memory_pin", "route_tools", "discover_tool",
         "select_coding_agent"}  # no LLM here: no memory_extract
TOKEN = "test-token-0123456789"
pytestmark = pytest.mark.timeout(90)


def _env(home: Path) -> dict:
    return dict(os.environ, MACLAW_HOME=str(home), PYTHONPATH=str(ROOT))


def _serve(*args: str) -> list[str]:
    return [sys.executable, "-m", "maclaw_fast.cli", "serve", "--embedder", "hash", *args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _error(result) -> str:
    assert result.is_error
    return result.content[0].text


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Team\nOn-call rotation changes every Monday at 9:00.\n")
    (ws / "memory" / "2024-05-01.md").write_text("Decided to move CI to self-hosted runners.\n")
    return ws


async def _exercise(session, *, workspace: bool) -> dict:
    """The common tool walk; returns what later checks need."""
    tools = (await session.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    schemas = {t.name: t.input_schema for t in tools}
    assert schemas["memory_save"]["required"] == ["content"]
    assert "preference" in json.dumps(schemas["memory_save"]["properties"]["category"])
    assert schemas["memory_recall"]["properties"]["max_results"]["anyOf"][0]["minimum"] == 1

    saved = _data(await session.call_tool("memory_save", {
        "content": "The user prefers dark mode in every editor", "category": "preference",
        "tags": ["ui"]}))
    mid = saved["saved"]["id"]
    assert saved["created"] and saved["saved"]["category"] == "preference"
    again = _data(await session.call_tool("memory_save", {
        "content": "The user prefers dark mode in every editor", "category": "preference"}))
    assert not again["created"] and again["saved"]["id"] == mid
    _data(await session.call_tool("memory_save", {"content": "Staging runs on atlas-2",
                                                  "category": "project", "tags": ["atlas"]}))

    rec = _data(await session.call_tool("memory_recall", {"query": "dark mode editor"}))
    assert rec["results"][0]["id"] == mid and "breakdown" in rec["results"][0]
    scoped = _data(await session.call_tool("memory_recall", {"query": "staging atlas",
                                                             "project": "other"}))
    assert all(r["category"] != "project_knowledge" for r in scoped["results"])

    found = _data(await session.call_tool("memory_search", {"query": "dark mode"}))
    assert [e["id"] for e in found["store"]] == [mid]
    if workspace:
        ws = _data(await session.call_tool("memory_search", {"query": "on-call rotation"}))
        cite = ws["workspace"]["results"][0]["citation"]
        assert cite.startswith("MEMORY.md#L")
        got = _data(await session.call_tool("memory_get", {"path": "MEMORY.md", "from_line": 2,
                                                           "lines": 1}))
        assert got["text"] == "On-call rotation changes every Monday at 9:00."
        assert "outside" in _error(await session.call_tool("memory_get",
                                                           {"path": "../secret.md"}))
    entry = _data(await session.call_tool("memory_get", {"id": mid}))["entry"]
    assert entry["access_count"] >= 2 and entry["tags"] == ["ui"]

    assert _data(await session.call_tool("memory_pin", {"id": mid}))["entry"]["pinned"]
    routed = _data(await session.call_tool("route_tools", {"message": "查询数据库里的订单"}))
    names = [t["name"] for t in routed["tools"]]
    assert "db_query" in names and len(names) <= 28 and "database" in routed["groups"]
    disc = _data(await session.call_tool("discover_tool", {"query": "kubernetes pods",
                                                           "session": "s1"}))
    assert "kubectl_get" in [t["name"] for t in disc["activated"]]
    again = _data(await session.call_tool("route_tools", {"message": "hello", "session": "s1"}))
    assert "kubectl_get" in [t["name"] for t in again["tools"]]

    # a 120 KB message: each call answers within seconds (a result or a clear error)
    long_text = "the deploy failed on staging because a key was missing; " * 2200
    for tool, args in (("route_tools", {"message": long_text}),
                       ("memory_recall", {"query": long_text}),
                       ("memory_save", {"content": long_text, "category": "project"})):
        t = time.perf_counter()
        result = await session.call_tool(tool, args)
        assert time.perf_counter() - t < 10.0, tool
        assert result.is_error or result.structured_content, tool
        if tool == "memory_save" and not result.is_error:  # kept out of the later counts
            assert _data(await session.call_tool("memory_forget", {
                "id": result.structured_content["saved"]["id"]}))["ok"]

    # invalid arguments: MCP tool errors, and the server keeps serving
    assert "category" in _error(await session.call_tool(
        "memory_save", {"content": "x", "category": "bogus"}))
    assert "content" in _error(await session.call_tool("memory_save", {"category": "preference"}))
    assert "max_results" in _error(await session.call_tool(
        "memory_recall", {"query": "x", "max_results": 0}))
    assert "query" in _error(await session.call_tool("memory_recall", {"query": ["not", "str"]}))
    assert "no memory" in _error(await session.call_tool("memory_forget", {"id": "nope"}))
    assert "exactly one" in _error(await session.call_tool("memory_get", {}))
    unknown = await session.call_tool("no_such_tool", {})
    assert unknown.is_error
    temp = _data(await session.call_tool("memory_save", {"content": "temporary note",
                                                         "category": "user"}))["saved"]
    assert temp["category"] == "user_fact"
    assert _data(await session.call_tool("memory_forget", {"id": temp["id"]}))["ok"]
    rec = _data(await session.call_tool("memory_recall", {"query": "dark mode"}))
    assert rec["results"][0]["id"] == mid
    return {"id": mid}


# ---------------------------------------------------------------------- stdio
def test_stdio(tmp_path):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    home = tmp_path / "home"
    ws = _workspace(tmp_path)
    cmd = _serve("--workspace", str(ws), "--catalog", CATALOG)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_env(home), cwd=str(tmp_path))

    async def main() -> dict:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out = await _exercise(session, workspace=True)
                t = time.perf_counter()
                await asyncio.gather(*[session.call_tool("memory_recall", {"query": "dark"})
                                       for _ in range(20)])
                out["gather_s"] = time.perf_counter() - t
                return out

    out = asyncio.run(asyncio.wait_for(main(), 60))
    # no --store: the per-user default location ($MACLAW_HOME/memory), closed cleanly
    with MemoryStore.open(home / "memory", embedder="hash") as store:
        entry = store.get(out["id"])
        assert entry.pinned and len(store) == 2
    # the workspace index lives under $MACLAW_HOME, nothing is written into the user's folder
    assert not (ws / ".maclaw").exists() and any((home / "workspaces").iterdir())


def test_stdio_sigterm_closes_store(tmp_path):
    store_dir = tmp_path / "store"
    proc = subprocess.Popen(_serve("--store", str(store_dir)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(tmp_path / "home"))
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())  # the server is up once it answers
        assert reply["id"] == 1 and "serverInfo" in reply["result"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (store_dir / "snapshot.arrow").exists()  # closed: final snapshot written
    MemoryStore.open(store_dir, embedder="hash").close()  # and the lock released


# ---------------------------------------------------------------------- HTTP
def _wait_port(proc: subprocess.Popen, port: int, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("HTTP server did not come up")


def test_http(tmp_path):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port, store_dir = _free_port(), tmp_path / "store"
    proc = subprocess.Popen(
        _serve("--transport", "http", "--port", str(port), "--store", str(store_dir),
               "--catalog", CATALOG),
        env=dict(_env(tmp_path / "home"), MACLAW_MCP_TOKEN=TOKEN), stderr=subprocess.PIPE,
        text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_port(proc, port)

        async def main() -> None:
            async with httpx2.AsyncClient(timeout=10) as anon:
                r = await anon.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
                r = await anon.post(url, json={}, headers={"Authorization": "Bearer wrong"})
                assert r.status_code == 401
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
                async with streamable_http_client(url, http_client=client) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
                        mid = (await _exercise(session, workspace=False))["id"]
                        assert "no workspace" in _error(await session.call_tool(
                            "memory_get", {"path": "MEMORY.md"}))
                        results = await asyncio.gather(*[
                            session.call_tool("memory_recall", {"query": f"dark mode {i}"})
                            for i in range(200)])
                        assert all(not r.is_error for r in results)
                        assert all(r.structured_content["results"][0]["id"] == mid
                                   for r in results)

        asyncio.run(asyncio.wait_for(main(), 75))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0  # graceful: the store was closed, so it opens again at once
    with MemoryStore.open(store_dir, embedder="hash") as store:
        assert len(store) == 2


def test_http_refuses_public_bind_without_token(tmp_path):
    env = _env(tmp_path / "home")
    env.pop("MACLAW_MCP_TOKEN", None)
    proc = subprocess.run(_serve("--transport", "http", "--host", "0.0.0.0", "--port", "1"),
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "refusing to bind 0.0.0.0" in proc.stderr and "token" in proc.stderr
    assert not (tmp_path / "home").exists()  # refused before the store was opened


def test_bind_rules_and_bearer_middleware():
    assert is_loopback("127.0.0.1") and is_loopback("127.5.0.1") and is_loopback("::1")
    assert is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("example.com")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(ValidationError, match="bearer token"):
        check_bind("10.0.0.1", None)
    with pytest.raises(ValidationError, match="at least 8"):
        check_bind("127.0.0.1", "short")

    seen, sent = [], []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    async def send(msg):
        sent.append(msg)

    auth = BearerAuth(app, TOKEN)

    async def go():
        await auth({"type": "lifespan"}, None, send)
        await auth({"type": "http", "headers": [(b"authorization", b"Bearer nope")]}, None, send)
        await auth({"type": "http", "headers": [(b"authorization",
                                                  f"Bearer {TOKEN}".encode())]}, None, send)
    asyncio.run(go())
    assert seen == ["lifespan", "http"] and sent[0]["status"] == 401
