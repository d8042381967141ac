"""MCP tool definitions against a real SDK server (tests/mcp_fixture_server.py), stdio and HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.tools.mcp import (
    McpManager,
    McpServerConfig,
    McpServerError,
    McpToolError,
    parse_mcp_servers,
)
from maclaw_fast.tools.registry import Platform, RegisteredTool, ToolRegistry
from maclaw_fast.tools.router import ToolRouter

pytestmark = pytest.mark.timeout(60)

FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))
HEADLESS = Platform(display=False, clipboard=False)
FIXTURE_TOOLS = {"add", "query_database", "echo", "read_file", "server_time"}


def _stdio(name: str = "fx", pid_file: Path | None = None, **kw) -> McpServerConfig:
    args = (FIXTURE, "--transport", "stdio") + (("--pid-file", str(pid_file)) if pid_file else ())
    return McpServerConfig(name=name, command=sys.executable, args=args, timeout_s=10, **kw)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _spawn_http(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, FIXTURE, "--transport", "http", "--port", str(port)])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"fixture HTTP server did not come up on port {port}")


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _builtin_registry() -> ToolRegistry:
    return ToolRegistry([RegisteredTool(name="read_file", description="Read a local file"),
                         RegisteredTool(name="bash", description="Run a shell command")])


def _available(reg: ToolRegistry) -> set[str]:
    return {t.name for t in reg.available(HEADLESS)}


@pytest.fixture(scope="module")
def http_server():
    port = _free_port()
    proc = _spawn_http(port)
    yield port
    _kill(proc)


@pytest.fixture(scope="module")
def both(http_server):
    """One manager over the stdio server ``fx`` and the HTTP server ``web`` (same tools)."""
    reg = _builtin_registry()
    web = McpServerConfig(name="web", transport="http", url=f"http://127.0.0.1:{http_server}/mcp",
                          headers={"X-Client": "maclaw-test"}, timeout_s=10)
    mgr = McpManager(reg, [_stdio(), web])
    assert mgr.start() == {"fx": True, "web": True}
    yield reg, mgr
    mgr.close()


def test_tools_registered_with_schema_bodies(both):
    reg, _ = both
    add = reg.get("add")
    assert (add.category, add.server, add.status) == ("mcp", "fx", "available")
    assert "mcp" in add.tags and "fx" in add.tags
    assert add.body == "Parameters:\n- a (integer): First addend\n- b (integer): Second addend"
    assert add.body_summary == add.body
    assert add.input_schema["required"] == ["a", "b"]
    assert reg.get("echo").body == "Parameters:\n- text (any)"  # no type in the schema
    assert reg.get("server_time").body == ""  # no properties
    q = reg.get("query_database")
    assert q.description.startswith("执行 SQL 语句查询数据库")
    assert q.body == "Parameters:\n- sql (string): 要执行的 SQL 语句"
    assert q.to_definition()["function"]["parameters"]["properties"]["sql"]["type"] == "string"


def test_name_clashes_renamed(both):
    reg, mgr = both
    # read_file clashes with the builtin; every "web" tool clashes with the "fx" tool before it.
    assert reg.get("read_file").category == "builtin"
    assert reg.get("fx_read_file").server == "fx"
    web_names = {f"web_{n}" for n in FIXTURE_TOOLS}
    assert {t.name for t in reg.list() if t.server == "web"} == web_names
    status = {s.name: s for s in mgr.status()}
    assert status["fx"].tools == sorted(FIXTURE_TOOLS - {"read_file"} | {"fx_read_file"})
    assert status["web"].healthy and status["web"].transport == "http"


def test_handlers_call_through_sdk(both):
    reg, mgr = both
    assert reg.get("add").handler(a=2, b=3) == "5"
    assert reg.get("web_add").handler({"a": 40, "b": 2}) == "42"
    assert reg.get("fx_read_file").handler(path="/etc/x") == "contents of /etc/x"
    assert reg.get("web_query_database").handler(sql="select 1") == "rows for: select 1"
    assert mgr.call_tool("echo", {"text": "你好"}) == "你好"
    assert mgr.call_tool("read_file", {"path": "p"}, server="web") == "contents of p"


def test_tool_errors_are_clear(both):
    reg, mgr = both
    with pytest.raises(McpToolError, match="add"):
        reg.get("add").handler(a="not a number", b=1)
    with pytest.raises(McpToolError, match="nope"):
        mgr.call_tool("nope", {}, server="fx")
    with pytest.raises(NotFoundError):
        mgr.call_tool("not_registered")
    with pytest.raises(NotFoundError):
        mgr.call_tool("add", server="no_such_server")
    # A failed tool call says nothing about the server's health.
    assert mgr.check_health() == {"fx": True, "web": True}


def test_async_api(both):
    reg, mgr = both

    async def go():
        a = await mgr.acall_tool("add", {"a": 1, "b": 1})
        b = await reg.get("web_echo").handler.acall(text="hi")
        return a, b, await mgr.acheck_health()

    assert asyncio.run(go()) == ("2", "hi", {"fx": True, "web": True})


def test_stdio_kill_marks_unavailable_then_respawns(tmp_path):
    reg = _builtin_registry()
    # More tools than the 28-tool budget, so the router has to choose.
    reg.register_many(RegisteredTool(name=f"util_{i}", description=f"format text snippet {i}")
                      for i in range(40))
    builtins = {t.name for t in reg.list()}
    router = ToolRouter(reg, embedder=None)
    sql = "run a SQL query against the database"
    pid_file = tmp_path / "fx.pid"
    with McpManager(reg, [_stdio(pid_file=pid_file)]) as mgr:
        assert {"add", "fx_read_file"} <= _available(reg)
        routed = router.route(sql)
        assert "query_database" in routed.names and routed.get("query_database").bm25 > 0
        assert "query_database" in router.route("我要查询数据库").names
        events: list[tuple[str, str]] = []
        reg.on_change(lambda event, name, tool: events.append((event, name)))
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert mgr.check_health() == {"fx": False}
        assert reg.get("add").status == "unavailable"
        assert _available(reg) == builtins  # only the builtins are left
        assert "query_database" not in router.route(sql).names
        with pytest.raises(McpServerError, match="unavailable"):
            reg.get("add").handler(a=1, b=2)
        # The next check reconnects, which spawns the stdio server again.
        assert mgr.check_health() == {"fx": True}
        assert {"add", "fx_read_file", "query_database"} <= _available(reg)
        assert "query_database" in router.route(sql).names
        assert reg.get("add").handler(a=1, b=2) == "3"
        # Unchanged tools only flip status (down, then up): no re-registration to re-index.
        assert {e for e, _ in events} == {"status"} and len(events) == 2 * len(FIXTURE_TOOLS)
    # close() unregisters the manager's tools and leaves the builtins alone.
    assert {t.name for t in reg.list()} == builtins


def test_http_kill_and_restart():
    port = _free_port()
    proc = _spawn_http(port)
    reg = ToolRegistry()
    cfg = McpServerConfig(name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp",
                          timeout_s=5)
    try:
        with McpManager(reg, [cfg]) as mgr:
            assert reg.get("query_database").status == "available"
            _kill(proc)
            assert mgr.check_health() == {"remote": False}
            assert _available(reg) == set()
            assert "Connect" in (mgr.status()[0].last_error or "")
            assert mgr.check_health() == {"remote": False}  # still down: reconnect fails fast
            proc = _spawn_http(port)
            assert mgr.check_health() == {"remote": True}
            assert _available(reg) == FIXTURE_TOOLS
            assert reg.get("query_database").handler(sql="select 2") == "rows for: select 2"
    finally:
        _kill(proc)


def test_periodic_health_checks(tmp_path):
    reg = ToolRegistry()
    pid_file = tmp_path / "fx.pid"
    with McpManager(reg, [_stdio(pid_file=pid_file)], health_interval_s=0.2) as mgr:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        deadline = time.monotonic() + 10
        seen_down = False
        while time.monotonic() < deadline:
            seen_down = seen_down or reg.get("add").status == "unavailable"
            if seen_down and reg.get("add").status == "available":
                break
            time.sleep(0.02)
        assert seen_down, "the background check never marked the killed server down"
        assert reg.get("add").status == "available"  # and a later round respawned it
        assert mgr.call_tool("add", {"a": 2, "b": 2}) == "4"


def test_unreachable_server_does_not_block_others(http_server):
    reg = ToolRegistry()
    dead_url = f"http://127.0.0.1:{_free_port()}/mcp"
    dead = McpServerConfig(name="dead", transport="http", url=dead_url, timeout_s=3)
    bad_cmd = McpServerConfig(name="nocmd", command="/nonexistent/mcp-server", timeout_s=3)
    # Starts but never speaks MCP: the handshake times out and the process is stopped.
    mute = McpServerConfig(name="mute", command=sys.executable,
                           args=("-c", "import time; time.sleep(60)"), timeout_s=1,
                           startup_timeout_s=1)
    live = McpServerConfig(name="live", transport="http",
                           url=f"http://127.0.0.1:{http_server}/mcp", timeout_s=5)
    off = McpServerConfig(name="off", transport="http", url="http://127.0.0.1:1/mcp", enabled=False)
    t0 = time.monotonic()
    with McpManager(reg, [dead, bad_cmd, mute, live, off]) as mgr:
        assert time.monotonic() - t0 < 10
        status = {s.name: s for s in mgr.status()}
        assert set(status) == {"dead", "nocmd", "mute", "live"}
        assert "timed out" in (status["mute"].last_error or "")
        assert not status["dead"].healthy and "dead" in (status["dead"].last_error or "")
        assert not status["nocmd"].healthy and status["nocmd"].tools == []
        assert {t.name for t in reg.list()} == FIXTURE_TOOLS
        with pytest.raises(McpServerError):
            mgr.call_tool("add", {"a": 1, "b": 1}, server="dead")
    mgr.close()  # idempotent
    with pytest.raises(McpServerError, match="closed"):
        mgr.check_health()


def test_config_validation_and_parsing():
    with pytest.raises(ValidationError):
        McpServerConfig(name="", command="x")
    with pytest.raises(ValidationError):
        McpServerConfig(name="bad name", command="x")
    with pytest.raises(ValidationError):
        McpServerConfig(name="s", transport="stdio")
    with pytest.raises(ValidationError):
        McpServerConfig(name="s", transport="http", url="ftp://x")
    with pytest.raises(ValidationError):
        McpServerConfig(name="s", command="x", timeout_s=0)
    with pytest.raises(ValidationError, match="duplicate"):
        McpManager(ToolRegistry(), [_stdio(), _stdio()])
    cfgs = parse_mcp_servers('{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["/tmp"]},'
                             ' "gh": {"url": "https://x/mcp", "headers": {"A": "b"},'
                             ' "disabled": true}}}')
    assert [(c.name, c.transport, c.enabled) for c in cfgs] == [("fs", "stdio", True),
                                                                ("gh", "http", False)]
    assert cfgs[1].headers == {"A": "b"}
    with pytest.raises(ValidationError):
        parse_mcp_servers("not json")

