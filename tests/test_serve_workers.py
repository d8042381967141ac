"""``maclaw-fast serve --workers N``: N server processes behind one router, each user's store
owned by one worker. Concurrent clients save and recall through MCP sessions over many users;
afterwards every acknowledged save is in its user's store and no request failed: 4 workers, 8
clients x 60 s over 100 users, with ``--soak`` (``pytest tests/test_serve_workers.py --soak``);
the default run checks the router against two stand-in workers, the workers' arguments and the
refusal."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import time

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.server.workers import worker_argv, worker_of
from tests.test_mcp_server import _data, _env, _free_port, _serve, _wait_port

pytestmark = pytest.mark.timeout(400)


def test_worker_argv_drops_what_the_router_sets():
    argv = ["--transport", "http", "--workers", "4", "--port=9000", "--stores", "s",
            "--host", "0.0.0.0", "--work=2", "--users", "u.json", "--pool-size", "3"]
    assert worker_argv(argv, 5555) == ["--transport", "http", "--stores", "s", "--users",
                                       "u.json", "--pool-size", "3", "--host", "127.0.0.1",
                                       "--port", "5555"]
    assert {worker_of(f"user{i}", 4) for i in range(40)} == {0, 1, 2, 3}


def _fake_worker(index: int):
    """A uvicorn server on a free port answering what it received, as worker ``index``."""
    import threading

    import uvicorn

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = (await receive()).get("body", b"")
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        out = json.dumps({"worker": index, "path": scope["path"], "body": body.decode(),
                          "query": scope["query_string"].decode(), "headers": headers}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"x-worker", b"yes")]})
        await send({"type": "http.response.body", "body": out})

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(),
                                           log_level="error", lifespan="off"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return server


def test_router_sends_each_user_to_the_worker_of_their_store():
    import httpx

    from maclaw_fast.server.workers import Router

    tokens = {_token(i): f"user{i}" for i in range(8)}
    workers = [_fake_worker(0), _fake_worker(1)]
    router = Router(tokens, [w.config.port for w in workers])

    async def main():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router),
                                     base_url="http://router.example") as client:
            seen = {}
            for token, store in tokens.items():
                r = await client.post("/mcp?x=1", content=b'{"jsonrpc": "2.0"}', headers={
                    "Authorization": f"Bearer {token}", "Mcp-Session-Id": "s1"})
                got = r.json()
                assert r.status_code == 200 and r.headers["x-worker"] == "yes"
                assert got["path"] == "/mcp" and got["query"] == "x=1"
                assert got["body"] == '{"jsonrpc": "2.0"}'
                assert got["headers"]["mcp-session-id"] == "s1"
                assert got["headers"]["host"].startswith("127.0.0.1:")  # the worker's own name
                seen[store] = got["worker"]
            assert seen == {s: worker_of(s, 2) for s in tokens.values()}
            assert set(seen.values()) == {0, 1}
            for headers in ({}, {"Authorization": "Bearer unknown-token-0123456789"}):
                assert (await client.post("/mcp", headers=headers)).status_code == 401
            workers[1].should_exit = True  # a worker that is down: 503, retry later
            time.sleep(0.5)
            down = next(t for t, s in tokens.items() if worker_of(s, 2) == 1)
            r = await client.post("/mcp", headers={"Authorization": f"Bearer {down}"})
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
        await router.aclose()

    try:
        asyncio.run(main())
    finally:
        for w in workers:
            w.should_exit = True


def test_workers_need_per_user_stores(tmp_path):
    proc = subprocess.run(_serve("--transport", "http", "--workers", "2", "--port", "1"),
                          env=_env(tmp_path / "home"), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "--workers N (N >= 2) needs per-user stores" in proc.stderr


def _env_of(home):
    env = _env(home)  # the checkout first, then what the caller had (e.g. its kernels)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env["PYTHONPATH"],
                                                    os.environ.get("PYTHONPATH")) if p)
    return env


def _token(i: int) -> str:
    return f"user-token-{i:04d}-abcdefgh"


async def _load(url: str, users: int, clients: int, seconds: float) -> tuple[list, list]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    acked: list[tuple[int, str]] = []
    errors: list[str] = []

    async def client(c: int) -> None:
        rng = random.Random(c)
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            u = rng.randrange(users)
            try:
                async with httpx2.AsyncClient(
                        headers={"Authorization": f"Bearer {_token(u)}"}, timeout=60) as http:
                    async with streamable_http_client(url, http_client=http) as streams:
                        async with ClientSession(streams[0], streams[1]) as session:
                            await session.initialize()
                            for _ in range(3):  # a session's calls all go to one worker
                                text = f"user{u} fact from client {c} number {n}"
                                n += 1
                                _data(await session.call_tool("memory_save", {
                                    "content": text, "category": "project"}))
                                acked.append((u, text))
                                rec = _data(await session.call_tool("memory_recall", {
                                    "query": f"client {c} number {n - 1}"}))
                                if not any(r["content"] == text for r in rec["results"]):
                                    errors.append(f"recall missed {text!r}")
            except Exception as exc:  # counted, the load goes on
                errors.append(f"{type(exc).__name__}: {exc}")

    await asyncio.gather(*[client(c) for c in range(clients)])
    return acked, errors


def _run(tmp_path, *, workers: int, users: int, clients: int, seconds: float) -> None:
    users_file = tmp_path / "users.json"
    users_file.write_text(json.dumps({"users": {_token(i): f"user{i}" for i in range(users)}}))
    root, port = tmp_path / "stores", _free_port()
    log = open(tmp_path / "serve.log", "w+")  # the workers write here too: no pipe to fill
    proc = subprocess.Popen(
        _serve("--transport", "http", "--port", str(port), "--stores", str(root), "--users",
               str(users_file), "--workers", str(workers), "--off", "maintenance"),
        env=_env_of(tmp_path / "home"), stderr=log, text=True)
    try:
        t0 = time.monotonic()
        _wait_port(proc, port, timeout=180)
        started = time.monotonic() - t0
        acked, errors = asyncio.run(_load(f"http://127.0.0.1:{port}/mcp", users, clients,
                                          seconds))
        print(f"started in {started:.1f} s; {len(acked)} saves acknowledged")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    log.seek(0)
    assert not errors, (errors[:5], log.read()[-2000:])
    assert rc == 0 and len(acked) >= clients
    for u in sorted({u for u, _ in acked}):  # every acknowledged save, after a clean stop
        with MemoryStore.open(root / f"user{u}", embedder="hash") as st:
            assert {t for v, t in acked if v == u} <= {e.content for e in st.entries()}


def test_workers_serve_concurrent_clients_without_loss(tmp_path, request):
    if not request.config.getoption("--soak"):
        pytest.skip("starts 4 server processes (~30 s on 2 cores): run with --soak")
    _run(tmp_path, workers=4, users=100, clients=8, seconds=60)
