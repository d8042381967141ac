"""``maclaw-fast serve --workers N``: N server processes behind one HTTP router, each user's store
owned by one of them.

Per-user stores (``--stores`` + ``--users``) are written by one process at a time (a store's
lock). The router authenticates each request's bearer token as the server does, and forwards it
to worker ``crc32(store name) % N``, a ``maclaw-fast serve`` of its own on a loopback port: a
store is only ever opened by its worker, so N processes serve many users without breaking the
one-writer rule, and an MCP session (bound to one token, so one store) stays on one worker. A
worker that exits is started again on its port; requests meanwhile get ``503`` (clients retry).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import zlib

from maclaw_fast.errors import ValidationError
from maclaw_fast.server.auth import authorization, send_unauthorized
from maclaw_fast.server.users import UserAuth

# a proxied exchange's own headers, not the request's or the response's (RFC 9110 §7.6.1)
_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade",
        b"te", b"trailer", b"host", b"content-length"}
_NAMED = {"--workers", "--port", "--host"}  # serve's options the router sets for its workers


def worker_of(store: str, workers: int) -> int:
    """The worker that owns ``store`` (stable across processes and restarts).

    Examples
    --------
    >>> worker_of("alice", 4) == worker_of("alice", 4) < 4
    True
    """
    return zlib.crc32(store.encode()) % workers


def worker_argv(argv: list[str], port: int) -> list[str]:
    """``argv`` of ``serve`` (after the command) without ``--workers``/``--port``/``--host``
    (whole or abbreviated, with ``=`` or a separate value), bound to loopback ``port``."""
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
            continue
        name, eq, _ = token.partition("=")
        if len(name) > 3 and name.startswith("--") and any(o.startswith(name) for o in _NAMED):
            skip = not eq
            continue
        out.append(token)
    return [*out, "--host", "127.0.0.1", "--port", str(port)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Workers:
    """The worker processes: started, watched (one that exits is started again) and stopped."""

    def __init__(self, argv: list[str], count: int) -> None:
        self.ports = [free_port() for _ in range(count)]
        self._argv = argv
        self._procs: list[subprocess.Popen | None] = [None] * count
        self._stopping = threading.Event()
        self.restarts = 0

    def _start(self, i: int) -> None:
        cmd = [sys.executable, "-m", "maclaw_fast.cli", "serve",
               *worker_argv(self._argv, self.ports[i])]
        self._procs[i] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)

    def start(self, timeout: float = 120.0) -> Workers:
        for i in range(len(self.ports)):
            self._start(i)
        deadline = time.monotonic() + timeout
        for i, port in enumerate(self.ports):
            while not _listening(port):
                proc = self._procs[i]
                if proc.poll() is not None:
                    self.stop()
                    raise ValidationError(f"worker {i} exited with {proc.returncode} at start")
                if time.monotonic() > deadline:
                    self.stop()
                    raise ValidationError(f"worker {i} did not listen within {timeout:.0f} s")
                time.sleep(0.1)
        threading.Thread(target=self._watch, name="maclaw-workers", daemon=True).start()
        return self

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            for i, proc in enumerate(self._procs):
                if proc is not None and proc.poll() is not None and not self._stopping.is_set():
                    print(f"maclaw-fast: worker {i} exited with {proc.returncode}; starting it "
                          "again", file=sys.stderr, flush=True)
                    self.restarts += 1
                    self._start(i)

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p is not None]

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM every worker (each closes its stores), then wait; kill one that hangs."""
        self._stopping.set()
        for proc in self._procs:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + timeout
        for proc in self._procs:
            if proc is None:
                continue
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


class Router:
    """ASGI app: a request with a known user's token goes to the worker owning the user's store,
    streamed both ways; an unknown token is answered 401 here."""

    def __init__(self, users: dict[str, str], ports: list[int]) -> None:
        self._auth = UserAuth(None, users)
        self._ports = ports
        self._client = None

    def _http(self):
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0),
                                             limits=httpx.Limits(max_connections=512))
        return self._client

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        given = authorization(scope)
        name = None if given is None else self._auth.store_of(given)
        if name is None:
            await send_unauthorized(send, "missing or unknown bearer token")
            return
        port = self._ports[worker_of(name, len(self._ports))]
        body = bytearray()
        while True:  # MCP requests are single JSON-RPC messages: read whole, then forward
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        import httpx

        query = scope.get("query_string") or b""
        url = f"http://127.0.0.1:{port}{scope['path']}" + (f"?{query.decode()}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP]
        client = self._http()
        try:
            resp = await client.send(client.build_request(scope["method"], url, headers=headers,
                                                          content=bytes(body)), stream=True)
        except httpx.TransportError:
            await _answer(send, 503, b'{"error": "worker unavailable, retry"}')
            return
        try:
            await send({"type": "http.response.start", "status": resp.status_code,
                        "headers": [(k, v) for k, v in resp.headers.raw if k.lower() not in _HOP]})
            async for chunk in resp.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except httpx.TransportError:  # the worker went away mid-answer: end the response
            await send({"type": "http.response.body", "body": b""})
        finally:
            await resp.aclose()

    async def aclose(self) -> None:
        """Close the connections to the workers (the server's shutdown does it)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _answer(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})


def serve_workers(argv: list[str], *, workers: int, host: str, port: int,
                  users: dict[str, str], log_level: str = "warning") -> None:
    """Start ``workers`` servers (``serve`` with ``argv`` on loopback ports) and route
    ``host:port`` to them until SIGINT / SIGTERM; then stop the workers (they close their
    stores)."""
    import uvicorn

    from maclaw_fast.server.http import check_listen, exit_on_sigterm

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 2:
        raise ValidationError("--workers must be at least 2 (1 is the plain server)")
    check_listen(host, port)  # a clear message before any worker starts
    procs = Workers(argv, workers).start()
    try:
        shown = f"[{host}]" if ":" in host else host
        print(f"maclaw-fast MCP server on http://{shown}:{port}/mcp (bearer token required; "
              f"{workers} workers, each store owned by one)", file=sys.stderr, flush=True)
        exit_on_sigterm()
        uvicorn.run(Router(users, procs.ports), host=host, port=port, log_level=log_level,
                    access_log=False)
    finally:
        procs.stop()


__all__ = ["Router", "Workers", "serve_workers", "worker_argv", "worker_of"]
