"""MCP servers attached from a configuration file (``chat``/``serve --mcp-config``), against
real SDK servers (tests/mcp_orders_server.py, tests/mcp_fixture_server.py) over stdio and
streamable HTTP: validation, registration with renames, routing, calls, dead and hung servers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.agent import Agent, AgentConfig
from maclaw_fast.errors import MaclawError, ValidationError
from maclaw_fast.tools import (RegisteredTool, ToolRegistry, ToolRouter, UsageTracker,
                               load_catalog)
from maclaw_fast.tools.mcp_attach import attach_mcp_servers, report_lines
from maclaw_fast.tools.mcp_config import load_mcp_config, parse_mcp_servers
from tests.llm_server import Reply, call

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[1]
ORDERS = str(Path(__file__).with_name("mcp_orders_server.py"))
CATALOG = ROOT / "data" / "tools.json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def billing_url():
    """The orders server over streamable HTTP, named "billing"."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, ORDERS, "--transport", "http", "--port", str(port),
                             "--name", "billing"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert proc.poll() is None, "the HTTP MCP server exited"
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait(timeout=10)


def _write(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def _orders_stdio(**extra) -> dict:
    return {"command": sys.executable, "args": [ORDERS, "--transport", "stdio"], **extra}


# ---------------------------------------------------------------------- the file format
def test_config_formats_users_have(tmp_path, monkeypatch):
    (tmp_path / "srv").mkdir()
    monkeypatch.setenv("ORDERS_TOKEN", "t0k")
    monkeypatch.delenv("MACLAW_UNSET_VAR", raising=False)
    cfg = _write(tmp_path / "claude_desktop_config.json", {
        "files": {"command": "npx", "args": ["-y", "server-fs", "${MACLAW_UNSET_VAR:-.}"],
                  "env": {"DEBUG": "0"}, "cwd": "srv", "autoApprove": ["read"]},
        "orders": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                   "headers": {"Authorization": "Bearer ${ORDERS_TOKEN}"}, "timeout": 5},
        "old": {"command": "x", "disabled": True},
    })
    files, orders, old = load_mcp_config(cfg)
    assert (files.transport, files.command, files.args) == ("stdio", "npx",
                                                            ("-y", "server-fs", "."))
    assert files.env == {"DEBUG": "0"} and files.cwd == str(tmp_path / "srv")
    assert (orders.transport, orders.headers, orders.timeout_s) == (
        "http", {"Authorization": "Bearer t0k"}, 5.0)
    assert files.enabled and orders.enabled and not old.enabled
    # VS Code's .vscode/mcp.json names the map "servers"
    vs = parse_mcp_servers({"servers": {"db": {"type": "streamable-http",
                                               "url": "https://x/mcp"}}})
    assert [(c.name, c.transport) for c in vs] == [("db", "http")]
    assert load_mcp_config(_write(tmp_path / "empty.json", {})) == []


@pytest.mark.parametrize("entry, message", [
    ("npx", "server 'bad': must be an object"),
    ({"args": ["x"]}, "server 'bad': needs \"command\" (stdio) or \"url\" (HTTP)"),
    ({"command": "x", "url": "http://h/mcp"}, "not both"),
    ({"command": ""}, "server 'bad': command is empty"),
    ({"command": "x", "args": "--flag"}, "server 'bad': args must be a list of strings"),
    ({"command": "x", "args": ["a", 3]}, "server 'bad': args[1] must be a string, got int"),
    ({"command": "x", "env": {"A": 1}}, "server 'bad': env.A must be a string"),
    ({"command": "x", "env": ["A=1"]}, "server 'bad': env must be an object"),
    ({"url": "ftp://h/mcp"}, "server 'bad'"),
    ({"url": "http://h/mcp", "headers": {"X": None}}, "server 'bad': headers.X must be a string"),
    ({"type": "sse", "url": "http://h/sse"}, "SSE transport is not supported"),
    ({"type": "websocket", "url": "ws://h"}, "unknown type 'websocket'"),
    ({"type": "http", "command": "x"}, "type 'http' does not fit a command"),
    ({"command": "x", "timeout": 0}, "timeout must be a number of seconds > 0"),
    ({"command": "x", "timeout": "30"}, "timeout must be a number"),
    ({"command": "x", "disabled": "yes"}, "disabled must be true or false"),
    ({"command": "x", "cwd": "no/such/dir"}, "is not a directory"),
    ({"command": "${MACLAW_SURELY_UNSET}"}, "environment variable MACLAW_SURELY_UNSET is not set"),
])
def test_bad_entries_are_named(tmp_path, entry, message):
    path = _write(tmp_path / "mcp.json", {"good": {"command": "x"}, "bad": entry})
    with pytest.raises(ValidationError) as err:
        load_mcp_config(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_bad_files(tmp_path):
    with pytest.raises(ValidationError, match="no such file"):
        load_mcp_config(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text('{"mcpServers": {', encoding="utf-8")
    with pytest.raises(ValidationError, match="broken.json: not valid JSON"):
        load_mcp_config(tmp_path / "broken.json")
    (tmp_path / "list.json").write_text('{"mcpServers": []}', encoding="utf-8")
    with pytest.raises(ValidationError, match="must be an object of name -> server"):
        load_mcp_config(tmp_path / "list.json")
    with pytest.raises(ValidationError, match="bad name"):
        parse_mcp_servers({"mcpServers": {"bad name": {"command": "x"}}})


def test_chat_and_serve_refuse_a_bad_config_before_opening_anything(tmp_path):
    bad = _write(tmp_path / "mcp.json", {"broken": {"command": "x", "args": [1]}})
    env = dict(os.environ, PYTHONPATH=str(ROOT), MACLAW_HOME=str(tmp_path / "home"))
    for argv in (["chat", "--llm-url", "http://127.0.0.1:9/v1", "--model", "m"], ["serve"]):
        store = tmp_path / f"store-{argv[0]}"
        proc = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *argv, "--embedder",
                               "hash", "--store", str(store), "--mcp-config", str(bad)],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "server 'broken': args[0] must be a string" in lines[0]
        assert not store.exists()


# ---------------------------------------------------------------------- attached servers
def _agent(tmp_path, llm, registry=None, **cfg):
    store = MemoryStore.in_memory(embedder="hash")
    registry = registry if registry is not None else ToolRegistry(load_catalog(CATALOG))
    usage = UsageTracker()
    router = ToolRouter(registry, embedder="hash", usage=usage)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config = AgentConfig(sandbox_dir=str(ws), **cfg)
    return Agent(store, registry, router, llm, usage=usage, config=config, extractor=None)


def test_stdio_and_http_servers_are_routed_and_called(tmp_path, llm_server, billing_url):
    cfg = _write(tmp_path / "mcp.json", {
        "orders": _orders_stdio(timeout=20),
        "billing": {"type": "http", "url": billing_url, "timeout": 20},
    })
    agent = _agent(tmp_path, llm_server.client())
    # both names billing's crash could have are taken: it is left out, and the report says so
    agent.registry.register(RegisteredTool(name="billing_crash", description="mine",
                                           handler=lambda a: "mine"))
    mcp = attach_mcp_servers(agent.registry, cfg, health_interval_s=None)
    try:
        lines = report_lines(mcp)
        assert lines[0] == ("MCP server 'orders' (stdio): 5 tools: crash, freeze, "
                            "query_orders, report_monthly, slow_report")
        assert lines[1] == ("MCP server 'billing' (http): 4 tools: billing_freeze, "
                            "billing_query_orders, billing_report_monthly, billing_slow_report")
        # the same tool names on the second server are renamed, and the report says so
        assert "  billing: tool 'query_orders' registered as 'billing_query_orders' " \
               "(the name was taken)" in lines
        # a name LLM APIs refuse (one would fail every request) is made valid
        assert "  orders: tool 'report.monthly' registered as 'report_monthly' " \
               "(not a valid function name)" in lines
        assert "  billing: tool 'crash' left out (its name and 'billing_crash' are taken)" \
            in lines
        assert agent.registry.get("billing_crash").handler({}) == "mine"
        assert mcp.call_tool("report_monthly") == "2026-10: 120.50; 2026-11: 130.25"
        reg = agent.registry
        assert reg.get("query_orders").server == "orders"
        assert reg.get("billing_query_orders").server == "billing"

        llm_server.script(Reply(tool_calls=[call("query_orders", id="q1", month="2026-11"),
                                            call("billing_query_orders", id="q2",
                                                 month="2026-10")]),
                          Reply(text="Two orders last month."))
        turn = agent.run("查询订单数据库里上个月的订单 (list last month's orders)")
        assert "query_orders" in turn.routed and "billing_query_orders" in turn.routed
        offered = {t["function"]["name"] for t in llm_server.requests[0].json["tools"]}
        assert {"query_orders", "billing_query_orders"} <= offered
        # withheld: catalog entries nothing here implements are neither routed nor offered
        assert "db_query" not in turn.routed and "db_query" not in offered
        assert [(c.name, c.ok) for c in turn.tool_calls] == [("query_orders", True),
                                                            ("billing_query_orders", True)]
        assert turn.tool_calls[0].result.startswith("2 orders in 2026-11, total 130.25")
        assert turn.tool_calls[1].result.startswith("1 orders in 2026-10, total 120.50")
        # call_mcp_tool reaches a server's tool by the server's own name
        llm_server.script(Reply(tool_calls=[call("call_mcp_tool", id="c", server="billing",
                                                 tool="query_orders",
                                                 arguments={"month": "2026-11"})]), "ok")
        turn = agent.run("ask the billing server for the november orders")
        res = json.loads(turn.tool_calls[0].result)
        assert res["ok"] and res["result"].startswith("2 orders in 2026-11")
    finally:
        mcp.close()
    assert "query_orders" not in agent.registry  # closing takes the tools away


def test_dead_and_hung_servers_leave_the_rest_working(tmp_path, llm_server, billing_url):
    cfg = _write(tmp_path / "mcp.json", {
        "orders": _orders_stdio(timeout=3),
        "stuck": _orders_stdio(timeout=2),
        "billing": {"url": billing_url, "timeout": 10},
        "gone": {"url": f"http://127.0.0.1:{_free_port()}/mcp", "timeout": 2},
    })
    agent = _agent(tmp_path, llm_server.client())
    t0 = time.monotonic()
    mcp = attach_mcp_servers(agent.registry, cfg, health_interval_s=None)
    try:
        assert time.monotonic() - t0 < 60  # the unreachable one does not hold the rest up
        gone = [line for line in report_lines(mcp) if line.startswith("MCP server 'gone'")]
        assert gone and "unavailable - " in gone[0] and "connect" in gone[0]
        reg = agent.registry
        llm_server.script(Reply(tool_calls=[call("crash", id="x"),
                                            call("stuck_freeze", id="f", seconds=60),
                                            call("billing_query_orders", id="b",
                                                 month="2026-11")]),
                          Reply(text="Some servers failed."))
        t1 = time.monotonic()
        turn = agent.run("query the order database")
        elapsed = time.monotonic() - t1
        res = {c.id: (c.ok, c.result) for c in turn.tool_calls}
        assert not res["x"][0] and "MCP server 'orders'" in res["x"][1]
        assert not res["f"][0] and "MCP server 'stuck'" in res["f"][1] \
            and "timed out" in res["f"][1]
        assert res["b"] == (True, res["b"][1]) and res["b"][1].startswith("2 orders")
        assert turn.stop_reason == "done" and elapsed < 40
        # the dead and the hung server's tools are unavailable: no longer routed or offered
        assert reg.get("query_orders").status == "unavailable"
        assert reg.get("stuck_query_orders").status == "unavailable"
        assert reg.get("billing_query_orders").status == "available"
        status = {s.name: s.healthy for s in mcp.status()}
        assert status == {"orders": False, "stuck": False, "billing": True, "gone": False}
        llm_server.script(Reply(text="fine"))
        turn = agent.run("query the order database for november orders")
        assert "billing_query_orders" in turn.routed
        assert not {"query_orders", "stuck_query_orders"} & set(turn.routed)
        # a later health check respawns the dead stdio server and brings its tools back
        assert mcp.check_health()["orders"] is True
        assert reg.get("query_orders").status == "available"
    finally:
        mcp.close()


def test_serve_is_a_gateway_to_attached_servers(tmp_path, billing_url):
    from maclaw_fast.tools.mcp import McpManager, McpServerConfig

    cfg = _write(tmp_path / "mcp.json", {"orders": _orders_stdio(timeout=20),
                                         "billing": {"url": billing_url}})
    serve = McpServerConfig(
        name="maclaw", command=sys.executable, timeout_s=60,
        args=("-m", "maclaw_fast.cli", "serve", "--embedder", "hash", "--store",
              str(tmp_path / "store"), "--mcp-config", str(cfg)),
        env={"PYTHONPATH": str(ROOT), "MACLAW_HOME": str(tmp_path / "home")})
    client = ToolRegistry()
    with McpManager(client, [serve]) as mgr:
        assert {"route_tools", "call_tool", "mcp_servers", "memory_save"} <= {
            t.name for t in client.list()}
        routed = json.loads(mgr.call_tool("route_tools", {"message": "list the orders of "
                                                                     "november"}))
        names = [t["name"] for t in routed["tools"]]
        assert "query_orders" in names and "billing_query_orders" in names
        out = json.loads(mgr.call_tool("call_tool", {"name": "billing_query_orders",
                                                     "arguments": {"month": "2026-11"}}))
        assert out["ok"] and out["result"].startswith("2 orders in 2026-11")
        servers = json.loads(mgr.call_tool("mcp_servers"))
        assert [(s["name"], s["status"]) for s in servers["servers"]] == [
            ("orders", "available"), ("billing", "available")]
        with pytest.raises(MaclawError, match="no MCP tool registered as 'nope'"):
            mgr.call_tool("call_tool", {"name": "nope"})


def test_a_catalog_entry_without_a_handler_gives_way(tmp_path, llm_server):
    cfg = _write(tmp_path / "mcp.json", {"orders": _orders_stdio(timeout=20)})
    agent = _agent(tmp_path, llm_server.client())
    reg = agent.registry
    placeholder = RegisteredTool(name="query_orders", category="mcp", description="orders (doc)")
    reg.register(placeholder)
    reg.set_status("query_orders", "unavailable")  # withheld: nothing here runs it
    mcp = attach_mcp_servers(reg, cfg, health_interval_s=None)
    try:
        assert ("  orders: tool 'query_orders' takes the place of the catalog entry without "
                "a handler") in report_lines(mcp)
        tool = reg.get("query_orders")  # the real tool, under its own name
        assert tool.server == "orders" and tool.status == "available"
        assert tool.handler({"month": "2026-10"}).startswith("1 orders in 2026-10")
    finally:
        mcp.close()
    back = reg.get("query_orders")  # the tool went, the catalog entry is back as it was
    assert back is placeholder and back.handler is None and back.status == "unavailable"


def _orders_children() -> set[int]:
    """Live child processes of this one running the orders server (from /proc)."""
    out = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, ...
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"mcp_orders_server" in cmd:
            out.add(int(d.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_servers_start_early_and_register_only_when_attached(tmp_path):
    from maclaw_fast.tools.mcp_attach import connect_mcp_servers

    configs = load_mcp_config(_write(tmp_path / "mcp.json", {"orders": _orders_stdio(
        timeout=20)}))
    before = _orders_children()
    early = connect_mcp_servers(configs, health_interval_s=None)
    try:
        deadline = time.monotonic() + 60
        while not _orders_children() - before:  # spawned while the caller does other work
            assert time.monotonic() < deadline, "the server was not started in the background"
            time.sleep(0.05)
        reg = ToolRegistry([RegisteredTool(name="memory", category="builtin",
                                           description="the agent's own", handler=lambda a: 1)])
        assert [t.name for t in reg.list()] == ["memory"]  # nothing registered yet
        mcp = attach_mcp_servers(reg, None, manager=early)
        assert mcp is early and "query_orders" in reg
        assert reg.get("query_orders").handler({"month": "2026-11"}).startswith(
            "2 orders in 2026-11")
        assert report_lines(mcp)[0].startswith("MCP server 'orders' (stdio): 5 tools")
    finally:
        early.close()
    assert "query_orders" not in reg
    # closed before it was ever attached (the store failed to open): the server is stopped
    spare = connect_mcp_servers(configs, health_interval_s=None)
    deadline = time.monotonic() + 60
    while not _orders_children() - before:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    spare.close()
    deadline = time.monotonic() + 30
    while _orders_children() - before:
        assert time.monotonic() < deadline, "the server outlived its manager"
        time.sleep(0.05)
