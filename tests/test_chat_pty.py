"""``maclaw-fast chat`` driven through a real pseudo-terminal, as a user would: the local LLM
protocol server (tests/llm_server.py) plays the model, one stdio and one streamable-HTTP MCP
server (tests/mcp_orders_server.py, MCP SDK) are attached with ``--mcp-config``, and every
check reads what the terminal shows."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.config import RouterConfig
from tests.llm_server import Reply, call

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")]

ROOT = Path(__file__).resolve().parents[1]
ORDERS = str(Path(__file__).with_name("mcp_orders_server.py"))
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
FACT = "The November order audit is owned by Kai"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Terminal:
    """A child process on a pty; :meth:`expect` waits until the screen shows a pattern."""

    def __init__(self, argv: list[str], env: dict, cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, start_new_session=True, close_fds=True)
        os.close(slave)
        self.screen = ""   # everything shown so far, escape sequences removed
        self.pos = 0       # where the next expect starts looking

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.screen += ANSI.sub("", data.decode("utf-8", errors="replace")).replace("\r", "")
        return bool(data)

    def expect(self, pattern: str, timeout: float = 30.0) -> str:
        """Wait for ``pattern`` (a regex) after the last match; returns the text up to it."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.screen, self.pos)
            if m:
                seen, self.pos = self.screen[self.pos:m.end()], m.end()
                return seen
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.5)) and self.proc.poll() is not None):
                raise AssertionError(f"the screen never showed {pattern!r}; it shows:\n"
                                     f"{self.screen[-3000:]}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        os.close(self.master)


def _model(body: dict) -> Reply:
    """The scripted model: answers from what it is sent, like a (very small) real one."""
    messages = body.get("messages", [])
    system = " ".join(m["content"] for m in messages
                      if m.get("role") == "system" and isinstance(m.get("content"), str))
    if "extract durable knowledge" in system:  # the knowledge extractor at /new
        return Reply(text=json.dumps([{"content": FACT, "category": "project_knowledge"}]))
    last = messages[-1]
    if last.get("role") == "tool":
        first_line = str(last.get("content", "")).splitlines()[0]
        return Reply(text=f"Last month: {first_line}.")
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    text = str(last.get("content", ""))
    if "orders" in text and "query_orders" in offered:
        return Reply(tool_calls=[call("query_orders", id="q1", month="2026-11")])
    if text.startswith("Who owns"):
        return Reply(text="Kai owns it (I remembered)." if FACT in system
                     else "I do not know who owns it.")
    return Reply(text="Noted.")


def test_chat_in_a_terminal_with_mcp_servers(tmp_path, llm_server):
    port = _free_port()
    billing = subprocess.Popen([sys.executable, ORDERS, "--transport", "http", "--port",
                                str(port), "--name", "billing"])
    # stdio: the sample catalog's non-core tools, served for real (routing must choose among
    # them); HTTP: the order database. The chat's own catalog keeps only the core tools.
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "catalog": {"command": sys.executable, "args": [str(ROOT / "tests" /
                                                            "mcp_catalog_server.py")],
                    "env": {"PYTHONPATH": str(ROOT)}},
        "billing": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}}), encoding="utf-8")
    data = json.loads((ROOT / "data" / "tools.json").read_text(encoding="utf-8"))
    tools = data if isinstance(data, list) else data["tools"]
    core = tmp_path / "core.json"
    core.write_text(json.dumps([t for t in tools if t["name"] in RouterConfig().core_tools]),
                    encoding="utf-8")
    llm_server.default = _model
    env = dict(os.environ, PYTHONPATH=str(ROOT), MACLAW_HOME=str(tmp_path / "home"),
               TERM="xterm", COLUMNS="120")
    store = tmp_path / "store"
    with MemoryStore.open(store, embedder="hash") as s:  # not empty: maintenance is due
        s.save("The user's name is Lin", category="user_fact")
    deadline = time.monotonic() + 20
    while True:  # the HTTP server must be listening before chat connects
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert billing.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    term = Terminal([sys.executable, "-m", "maclaw_fast.cli", "chat", "--llm-url",
                     llm_server.url + "/v1", "--model", "test-model", "--embedder", "hash",
                     "--store", str(store), "--catalog", str(core), "--mcp-config", str(cfg)],
                    env, tmp_path)
    try:
        start = term.expect(r"you> ", timeout=90)
        assert re.search(r"MCP server 'catalog' \(stdio\): 5\d tools: ", start)
        assert "MCP server 'billing' (http): 5 tools: crash, freeze, query_orders" in start
        assert "billing: tool 'report.monthly' registered as 'report_monthly'" in start

        # routed to the MCP tool, called, its result and the answer shown
        term.send("How many orders did we have last month? 查询订单")
        turn = term.expect(r"you> ")
        routed = re.search(r"routed (\d+) tools: (.*)", turn)
        assert routed and "query_orders" in routed.group(2).split(", ")
        assert int(routed.group(1)) <= 28  # chosen from more than 60 runnable tools
        assert "-> query_orders: ok 2 orders in 2026-11, total 130.25 A-1002 Kai 88.00" in turn
        assert "assistant> Last month: 2 orders in 2026-11, total 130.25." in turn

        # a fact the extractor saves at /new, recalled in the next conversation
        term.send("Remember that Kai owns the November order audit")
        term.expect(r"assistant> Noted\.")
        term.expect(r"you> ")
        term.send("/new")
        term.expect(r"\(new conversation\)")
        term.expect(r"you> ")
        term.send("Who owns the order audit?")
        turn = term.expect(r"you> ")
        assert f"[project_knowledge] {FACT}" in turn
        assert "assistant> Kai owns it (I remembered)." in turn
        term.send("/exit")
        term.proc.wait(timeout=30)
        assert term.proc.returncode == 0
    finally:
        term.close()
        billing.kill()
        billing.wait(timeout=10)
    # the route log and the maintenance run of the session show up in stats
    stats = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", "stats", "--store",
                            str(store)], capture_output=True, text=True, timeout=60, env=env)
    assert stats.returncode == 0, stats.stderr
    assert re.search(r"route log +3 decisions", stats.stdout), stats.stdout
    assert re.search(r"maintained +20\d\d-", stats.stdout), stats.stdout
    extract = [r for r in llm_server.requests if "extract durable knowledge"
               in json.dumps(r.json)]
    assert len(extract) == 1 and "Kai owns the November order audit" in json.dumps(
        extract[0].json)
