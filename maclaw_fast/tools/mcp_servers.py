"""MCP server connections through the MCP Python SDK (stdio and streamable HTTP).

This is the transport half of :mod:`maclaw_fast.tools.mcp`: server configuration, one
:class:`McpConnection` per server (async, SDK ``ClientSession`` over ``stdio_client`` or
``streamable_http_client``) and the background event-loop thread that lets synchronous code use
them. Nothing here knows about the tool registry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any, Literal, TextIO, TypeVar

import msgspec

from maclaw_fast.errors import MaclawError, ValidationError

log = logging.getLogger(__name__)

T = TypeVar("T")

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
# stdio shutdown in the SDK is bounded (stdin close, SIGTERM, SIGKILL: ~6.5 s worst case); this
# leaves it room before we cancel the owner task outright.
_CLOSE_TIMEOUT_S = 8.0


_NOT_API = re.compile(r"[^A-Za-z0-9_-]")


def api_name(name: str) -> str:
    """``name`` as LLM APIs accept a function name (``^[A-Za-z0-9_-]{1,64}$``): other
    characters become ``_``, the rest is cut at 64. One bad name would fail every request.

    Examples
    --------
    >>> api_name("files/read.text"), api_name("x" * 70) == "x" * 64
    ('files_read_text', True)
    """
    return _NOT_API.sub("_", name)[:64] or "_"


class McpServerError(MaclawError):
    """An MCP server could not be reached, timed out, or dropped the connection."""


class McpToolError(MaclawError):
    """The server answered, but the tool call failed (``isError`` result or a JSON-RPC error)."""


class McpServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How to reach one MCP server.

    Parameters
    ----------
    name : str
        Server name (letters, digits, ``_ . -``); used for ``<server>_<tool>`` renames.
    transport : {"stdio", "http"}
        ``stdio`` spawns ``command args`` as a subprocess; ``http`` is streamable HTTP at ``url``.
    command, args, env, cwd
        The stdio process; ``env`` is merged over the SDK's safe default environment.
    url, headers
        The streamable-HTTP endpoint (``http://`` or ``https://``) and extra request headers.
    enabled : bool
        Disabled servers are skipped entirely.
    timeout_s : float
        Bound on listing, pinging and (by default) each tool call.
    startup_timeout_s : float
        Bound on starting the server and the MCP handshake (at least ``timeout_s``): a stdio
        server that has to start an interpreter or download a package needs longer than a
        tool call should take.

    Examples
    --------
    >>> McpServerConfig(name="db", transport="http", url="http://127.0.0.1:8000/mcp").timeout_s
    30.0
    """

    name: str
    transport: Literal["stdio", "http"] = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = {}
    enabled: bool = True
    timeout_s: float = 30.0
    startup_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.name or not _NAME_RE.match(self.name):
            raise ValidationError(f"MCP server name {self.name!r} must match {_NAME_RE.pattern}")
        if self.transport not in ("stdio", "http"):
            raise ValidationError(f"MCP server {self.name!r}: unknown transport {self.transport!r}")
        if self.transport == "stdio" and not self.command:
            raise ValidationError(f"MCP server {self.name!r}: stdio transport needs a command")
        if self.transport == "http" and not self.url.startswith(("http://", "https://")):
            raise ValidationError(f"MCP server {self.name!r}: http transport needs an http(s) url")
        if not self.timeout_s > 0 or not self.startup_timeout_s > 0:
            raise ValidationError(f"MCP server {self.name!r}: timeout_s and startup_timeout_s "
                                  "must be > 0")

    @property
    def connect_timeout_s(self) -> float:
        """How long starting and the handshake may take."""
        return max(self.timeout_s, self.startup_timeout_s)


class McpServerStatus(msgspec.Struct, frozen=True, kw_only=True):
    """Health of one configured server as last observed.

    ``tools`` are the registered (possibly renamed) names; ``last_error`` the latest failure.
    """

    name: str
    transport: str
    healthy: bool
    tools: list[str]
    last_error: str | None = None


class McpToolInfo(msgspec.Struct, frozen=True):
    """One tool as listed by a server: its own name, description and JSON input schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


def result_text(result: Any) -> str:
    """Text of a ``CallToolResult``: text blocks joined by newlines, placeholders for the rest.

    Falls back to the JSON of ``structured_content`` when there is no content block at all.
    """
    parts = []
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        elif kind == "resource_link":
            parts.append(f"[resource: {block.uri}]")
        else:  # image / audio / blob: the LLM gets a marker, not base64
            parts.append(f"[{kind or 'unknown'} content: {getattr(block, 'mime_type', '')}]")
    if not parts and getattr(result, "structured_content", None) is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def describe(exc: BaseException) -> str:
    """A short message for ``exc``, looking inside the ExceptionGroups anyio task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _errlog() -> TextIO:
    # The SDK hands errlog to the child as its stderr, which needs a real file descriptor;
    # under capture (pytest capsys, notebooks) sys.stderr may have none.
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        if sys.__stderr__ is not None:
            return sys.__stderr__
        return open(os.devnull, "w")  # noqa: SIM115  # lives as long as the process


def import_sdk(configs) -> None:
    """Import the parts of the MCP SDK that ``configs`` need, in the calling thread (seconds
    on a busy machine): a caller about to start servers in the background does it first, so
    their processes start at once rather than after an import that competes with its own
    work for the interpreter."""
    import mcp  # noqa: F401 - ClientSession and stdio_client

    if any(c.transport != "stdio" for c in configs):
        import mcp.client.streamable_http  # noqa: F401


class McpConnection:
    """One live SDK ``ClientSession`` to one server; all methods run on a single event loop.

    The transport and session context managers are entered and exited by one owner task,
    because anyio cancel scopes must close in the task that opened them; requests from other
    tasks go through the session's streams.

    Examples
    --------
    >>> import asyncio, sys
    >>> async def demo():
    ...     cfg = McpServerConfig(name="fx", command=sys.executable,
    ...                           args=("tests/mcp_fixture_server.py",))
    ...     conn = McpConnection(cfg)
    ...     await conn.connect()
    ...     try:
    ...         return [t.name for t in await conn.list_tools()][:2]
    ...     finally:
    ...         await conn.close()
    >>> asyncio.run(demo())  # doctest: +SKIP
    ['add', 'query_database']
    """

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    @property
    def connected(self) -> bool:
        """Whether the handshake completed and the connection was not closed since."""
        return self._session is not None and self._task is not None and not self._task.done()

    # The SDK is imported inside the methods: it takes ~1.4 s to import, and most programs that
    # import maclaw_fast.tools never open an MCP connection.
    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        cfg = self.config
        if cfg.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
            )
            async with stdio_client(params, errlog=_errlog()) as streams:
                yield streams
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # Connect/write bounded by the server timeout; reads stay long because the GET
            # event stream is held open between messages (requests are bounded by the session).
            timeout = httpx2.Timeout(cfg.timeout_s, read=max(300.0, cfg.timeout_s))
            async with httpx2.AsyncClient(headers=dict(cfg.headers), timeout=timeout) as client:
                async with streamable_http_client(cfg.url, http_client=client) as streams:
                    yield streams

    async def _own(self, ready: asyncio.Future[None]) -> None:
        from mcp import ClientSession

        stop = self._stop
        session = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                # the handshake waits for the server to start; later requests carry their
                # own bounds (call_tool's read timeout, _bounded's wait_for)
                timeout = self.config.connect_timeout_s
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], read_timeout_seconds=timeout)
                )
                await session.initialize()
                self._session = session
                ready.set_result(None)
                await stop.wait()  # type: ignore[union-attr]
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.warning("MCP server %r connection ended: %s", self.config.name, describe(exc))
        except BaseException:
            if not ready.done():
                ready.set_exception(McpServerError(f"MCP server {self.config.name!r}: cancelled"))
            raise
        finally:
            if self._session is session:  # not a newer connection's session
                self._session = None

    async def connect(self) -> None:
        """Open the transport, run the MCP handshake; bounded by ``connect_timeout_s``.

        Raises
        ------
        McpServerError
            The process could not start, the URL did not answer, or the handshake timed out.
        """
        if self.connected:
            return
        if self._task is not None:  # a dead connection's owner may still be winding down
            await self.close()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout_s)
        except BaseException as exc:
            await self.close()
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: no "exception was never retrieved" noise
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
                raise
            what = "timed out" if isinstance(exc, TimeoutError) else f"failed: {describe(exc)}"
            raise McpServerError(f"MCP server {self.config.name!r}: connect {what}") from exc

    def _require(self) -> Any:
        if not self.connected:
            raise McpServerError(f"MCP server {self.config.name!r} is not connected")
        return self._session

    async def _bounded(self, what: str, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        # Transport failures surface as SDK errors, anyio stream errors or ExceptionGroups;
        # all of them mean "this server is not usable right now".
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        try:
            return await asyncio.wait_for(coro, timeout)
        except TimeoutError as exc:
            raise McpServerError(f"MCP server {self.config.name!r}: {what} timed out") from exc
        except MCPError as exc:
            if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                raise McpServerError(f"MCP server {self.config.name!r}: {what}: {exc}") from exc
            raise McpToolError(f"MCP server {self.config.name!r}: {what}: {exc.message}") from exc
        except (McpServerError, McpToolError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise McpServerError(
                f"MCP server {self.config.name!r}: {what} failed: {describe(exc)}"
            ) from exc

    async def ping(self) -> None:
        """Round-trip a ``ping`` request; raises :class:`McpServerError` when the server is gone."""
        session = self._require()
        await self._bounded("ping", session.send_ping(), self.config.timeout_s)

    async def list_tools(self) -> list[McpToolInfo]:
        """All tools of the server, following pagination cursors."""
        import mcp_types

        session = self._require()
        tools: list[McpToolInfo] = []
        cursor = None
        for _ in range(1000):  # a server that never stops paginating cannot hang us
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._bounded(
                "tools/list", session.list_tools(params=params), self.config.timeout_s
            )
            tools.extend(
                McpToolInfo(t.name, t.description or "", dict(t.input_schema or {}))
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout_s: float | None = None
    ) -> str:
        """Call ``name`` with ``arguments``; return the text of the result.

        Raises
        ------
        McpToolError
            The tool reported an error (``isError``) or the server rejected the request.
        McpServerError
            The connection failed or the call timed out.
        """
        session = self._require()
        timeout = timeout_s if timeout_s is not None else self.config.timeout_s
        result = await self._bounded(
            f"tools/call {name!r}",
            session.call_tool(name, dict(arguments or {}), read_timeout_seconds=timeout),
            timeout + 1.0,  # the session's own timeout fires first; this is the backstop
        )
        text = result_text(result)
        if result.is_error:
            raise McpToolError(f"MCP tool {name!r} on {self.config.name!r} failed: {text}")
        return text

    async def close(self) -> None:
        """Close the session and transport (stops a stdio process); idempotent, bounded."""
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        if task is None or task is asyncio.current_task():
            return
        done, _ = await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=2.0)
        self._session = None


class BackgroundLoop:
    """An asyncio event loop on a daemon thread, so synchronous callers can drive async SDK code.

    Examples
    --------
    >>> async def two():
    ...     return 2
    >>> bg = BackgroundLoop()
    >>> bg.run(two(), timeout=5)
    2
    >>> bg.stop()
    """

    def __init__(self, name: str = "maclaw-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def running(self) -> bool:
        """Whether the loop thread is alive and accepting work."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def in_loop(self) -> bool:
        """Whether the caller is running on the loop thread itself."""
        return threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for it (at most ``timeout`` seconds)."""
        if self.in_loop():
            coro.close()
            raise MaclawError("blocking MCP call from the MCP loop thread; use the async variant")
        if not self.running:
            coro.close()
            raise McpServerError("the MCP manager is closed")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError as exc:
            fut.cancel()
            raise McpServerError(f"MCP operation timed out after {timeout} s") from exc

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the loop from any event loop (directly when already on it)."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is self.loop:
            return await coro
        if not self.running:
            coro.close()
            raise McpServerError("the MCP manager is closed")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join the thread; idempotent."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
