"""The core tools the agent runs itself (web_fetch, set_nickname, call_mcp_tool, the shell
session tools) and the rule that a tool without a handler is never offered."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.agent import Agent, AgentConfig
from maclaw_fast.agent.sessions import ShellSessions
from maclaw_fast.agent.toolbox import html_text
from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.tools import (RegisteredTool, ToolRegistry, ToolRouter, UsageTracker,
                               load_catalog)
from tests.llm_server import Reply, call

pytestmark = pytest.mark.timeout(60)
CATALOG = Path(__file__).resolve().parents[1] / "data" / "tools.json"
SESSION_TOOLS = {"create_session", "list_sessions", "send_and_observe", "get_session_output",
                 "get_session_events", "control_session"}


def make_agent(tmp_path, llm, **cfg):
    registry = ToolRegistry(load_catalog(CATALOG))
    usage = UsageTracker()
    router = ToolRouter(registry, embedder="hash", usage=usage)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return Agent(MemoryStore.in_memory(embedder="hash"), registry, router, llm, usage=usage,
                 config=AgentConfig(sandbox_dir=str(ws), **cfg), extractor=None)


class _Pages(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        if self.path == "/page":
            body = (b"<html><head><title>Orders</title><script>var x=1;</script></head>"
                    b"<body><h1>November</h1><p>2 orders, total 130.25</p></body></html>")
            ctype = "text/html; charset=utf-8"
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        else:
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"nothing here")
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def web():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


# ---------------------------------------------------------------------- what is offered
def test_only_runnable_tools_are_routed_and_offered(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client())
    reg = agent.registry
    runnable = {t.name for t in reg.list() if t.status != "unavailable"}
    assert runnable == {"memory", "discover_tool", "read_file", "write_file", "list_directory",
                        "web_fetch", "set_nickname"}
    assert all(reg.get(n).handler is not None for n in runnable)
    # the catalog's entries nothing here implements are withheld, bash with them (not enabled)
    for name in ("db_query", "screenshot", "web_search", "bash", "create_session"):
        assert reg.get(name).status == "unavailable" and reg.get(name).handler is None
    llm_server.script(Reply(text="ok"))
    turn = agent.run("我要查询数据库里上个月的订单")
    offered = {t["function"]["name"] for t in llm_server.requests[0].json["tools"]}
    assert offered == set(turn.routed) <= runnable
    # with bash enabled the shell and session tools join
    agent = make_agent(tmp_path, llm_server.client(), enable_bash=True)
    assert {"bash"} | SESSION_TOOLS <= {t.name for t in agent.registry.list()
                                        if t.status != "unavailable"}
    agent.toolbox.close()


# ---------------------------------------------------------------------- web_fetch
def test_web_fetch(tmp_path, llm_server, web):
    agent = make_agent(tmp_path, llm_server.client())
    fetch = agent.registry.get("web_fetch").handler
    page = fetch({"url": web + "/moved"})
    assert page["ok"] and page["status"] == 200 and page["url"] == web + "/page"
    assert page["title"] == "Orders" and page["text"] == "November\n2 orders, total 130.25"
    assert "var x" not in page["text"]
    cut = fetch({"url": web + "/page", "max_chars": 8})
    assert cut["text"] == "November" and cut["truncated"]
    missing = fetch({"url": web + "/missing"})
    assert not missing["ok"] and missing["status"] == 404 and missing["text"] == "nothing here"
    with socket_closed() as port:
        down = fetch({"url": f"http://127.0.0.1:{port}/"})
    assert not down["ok"] and down["error"].startswith("cannot reach 127.0.0.1 (")
    assert "ConnectError" in down["error"]
    for bad in ("file:///etc/passwd", "not a url", None):
        with pytest.raises(ValidationError, match="url must be"):
            fetch({"url": bad})
    assert html_text("<p>a&amp;b</p><br>c") == ("", "a&b\nc")


class socket_closed:
    """A port with nothing listening."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        pass


def test_offline_host_says_so(tmp_path, llm_server, monkeypatch):
    monkeypatch.setenv("MACLAW_OFFLINE", "1")
    agent = make_agent(tmp_path, llm_server.client())
    tool = agent.registry.get("web_fetch")
    assert tool.status == "degraded" and "No network on this host" in tool.description
    with socket_closed() as port:
        res = tool.handler({"url": f"http://127.0.0.1:{port}/"})
    assert not res["ok"] and res["error"].startswith("no network on this host")


# ---------------------------------------------------------------------- set_nickname, MCP
def test_set_nickname_keeps_one(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client())
    nick = agent.registry.get("set_nickname").handler
    first = nick({"nickname": "Claw"})
    second = nick({"nickname": "Pincer"})
    assert second["replaced"] == [first["id"]]
    ids = [e.id for e in agent.store.list(category="self_identity")]
    assert ids == [second["id"]] and agent.store.get(second["id"]).pinned
    assert "Pincer" in agent.store.get(second["id"]).content
    with pytest.raises(ValidationError):
        nick({"nickname": "  "})


def test_call_mcp_tool_only_with_mcp_tools(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client())
    reg = agent.registry
    assert reg.get("call_mcp_tool").status == "unavailable"  # nothing to call: not offered
    reg.register(RegisteredTool(name="q", category="mcp", server="db", handler=lambda a: "r"))
    assert reg.get("call_mcp_tool").status == "available"
    reg.set_status("q", "unavailable")  # its server went down
    assert reg.get("call_mcp_tool").status == "unavailable"
    reg.set_status("q", "available")
    assert reg.get("call_mcp_tool").handler({"server": "db", "tool": "q"})["result"] == "r"
    reg.unregister("q")
    assert reg.get("call_mcp_tool").status == "unavailable"
    with pytest.raises(NotFoundError, match="no attached MCP server 'db'; attached: none"):
        agent.registry.get("call_mcp_tool").handler({"server": "db", "tool": "q"})


# ---------------------------------------------------------------------- shell sessions
def test_shell_sessions(tmp_path):
    ss = ShellSessions(str(tmp_path), max_sessions=2)
    try:
        repl = ss.create({"command": "while read l; do echo \"<$l>\"; done"})["id"]
        out = ss.send_and_observe({"id": repl, "input": "one", "wait_s": 5})
        assert out["output"] == "<one>\n" and out["running"]
        out = ss.send_and_observe({"id": repl, "input": "two\n", "wait_s": 5})
        assert out["output"] == "<two>\n"
        assert ss.output({"id": repl})["output"] == "<one>\n<two>\n"
        assert ss.output({"id": repl, "tail_chars": 6})["output"] == "...<two>\n"
        job = ss.create({"command": "echo started; sleep 30"})["id"]
        with pytest.raises(ValidationError, match="2 sessions are running"):
            ss.create({"command": "true"})
        assert ss.send_and_observe({"id": job, "wait_s": 5})["output"] == "started\n"
        stopped = ss.control({"id": job, "action": "interrupt"})
        assert not stopped["running"] and stopped["exit_code"] is not None
        events = [e["event"] for e in ss.events({"id": job})["events"]]
        assert events == ["started", "interrupt", "exited"]
        done = ss.create({"command": "pwd; exit 3"})["id"]
        out = ss.send_and_observe({"id": done, "wait_s": 5})
        assert out["output"] == f"{os.path.realpath(tmp_path)}\n" and out["exit_code"] == 3
        with pytest.raises(ValidationError, match="has exited"):
            ss.send_and_observe({"id": done, "input": "x"})
        listed = {s["id"]: s["running"] for s in ss.list()["sessions"]}
        assert listed == {repl: True, job: False, done: False}
        with pytest.raises(NotFoundError, match="no session 's9'"):
            ss.output({"id": "s9"})
        with pytest.raises(ValidationError, match="action must be one of"):
            ss.control({"id": repl, "action": "pause"})
        pid = ss._sessions[repl].proc.pid
    finally:
        ss.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("a session outlived close()")


def test_sessions_through_the_agent(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client(), enable_bash=True)
    try:
        llm_server.script(Reply(tool_calls=[call("create_session", id="c",
                                                 command="read x; echo hello $x")]),
                          Reply(tool_calls=[call("send_and_observe", id="s", id_="unused")]),
                          "done")
        turn = agent.run("start an interactive greeter session")
        created = json.loads(turn.tool_calls[0].result)
        assert turn.tool_calls[0].ok and created["running"]
        # the model forgot the id: a clear error, the conversation goes on
        assert not turn.tool_calls[1].ok and "id must be a session id" in turn.tool_calls[1].result
        sid = created["id"]
        llm_server.script(Reply(tool_calls=[{"name": "send_and_observe", "id": "s2",
                                             "arguments": {"id": sid, "input": "Lin"}}]),
                          "said hello")
        turn = agent.run("greet Lin in the session")
        assert json.loads(turn.tool_calls[0].result)["output"] == "hello Lin\n"
    finally:
        agent.toolbox.close()
