"""``maclaw-fast serve`` over stdio (the MCP SDK's server in a real subprocess) answers every
malformed line with a JSON-RPC error within a second, a lone-surrogate escape included, and
keeps serving. The client side writes raw lines: the SDK's own client cannot even encode a
lone surrogate."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maclaw_fast.server.stdio import INVALID_REQUEST, PARSE_ERROR

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]

SAVE = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"memory_save",' \
       '"arguments":{"content":"%s"}}}'
MALFORMED = [  # (line, the id the reply must carry, the error code)
    (SAVE % (2, "\\ud800"), 2, PARSE_ERROR),                 # lone high surrogate
    (SAVE % ('"s3"', "tea \\udfff"), "s3", PARSE_ERROR),     # lone low surrogate, string id
    ('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_\\udc80"}}',
     4, PARSE_ERROR),                                        # in the tool's name
    ('{"jsonrpc":"2.0","id":5,"method":"tools/list"', None, PARSE_ERROR),  # cut short
    ("garbage \xe9", None, PARSE_ERROR),                    # not JSON
    ('{"id":6,"method":"tools/list"}', 6, INVALID_REQUEST),  # not JSON-RPC 2.0
    ("[1, 2]", None, INVALID_REQUEST),
]


class Client:
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.buf = proc, b""

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    store = tmp_path_factory.mktemp("mcp") / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "maclaw_fast.cli", "serve", "--store", str(store),
         "--embedder", "none"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)))
    c = Client(proc)
    c.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fault", "version": "1"}}}))
    assert c.reply(90)["id"] == 1
    c.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield c
    proc.terminate()
    proc.wait(30)


def test_every_malformed_request_gets_an_error_within_a_second(client, fault_stats):
    slowest = 0.0
    for line, rid, code in MALFORMED:
        t = time.monotonic()
        client.send(line)
        got = client.reply(1.0)
        slowest = max(slowest, time.monotonic() - t)
        assert got is not None, f"no reply within 1 s to {line!r}"
        assert got["id"] == rid and got["error"]["code"] == code, (line, got)
        assert "surrogate" in got["error"]["message"] or "\\u" not in line[:60]
    # a malformed notification gets no reply (JSON-RPC answers requests only); the next
    # request is answered, so the server kept serving through all of the above
    client.send('{"jsonrpc":"2.0","method":"notifications/\\ud800"}')
    client.send(SAVE % (7, "kept serving"))
    got = client.reply(10)
    assert got["id"] == 7 and "kept serving" in got["result"]["content"][0]["text"]
    fault_stats["mcp_malformed"] = {"requests": len(MALFORMED), "answered": len(MALFORMED),
                                    "slowest_s": round(slowest, 3)}
