"""Tool definitions from MCP servers (design §12 "Definitions").

:class:`McpManager` connects to the configured servers through the MCP Python SDK (stdio servers
are spawned as subprocesses, streamable-HTTP servers are reached by URL), lists their tools and
registers them in a :class:`~maclaw_fast.tools.registry.ToolRegistry` as ``category="mcp"`` tools
whose body is built from the input schema. A tool whose name is already taken (a builtin, another
server's tool) is renamed ``<server>_<name>``. Health checks ping every server: a server that fails
has its tools marked ``unavailable`` (so ``ToolRegistry.available()`` leaves them out) and is
reconnected (a stdio server respawned) by a later check, which brings its tools back.

The SDK is async; the manager runs it on its own event-loop thread so the plain methods work
from synchronous code, and every method has an ``a``-prefixed async twin usable from any loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.tools.mcp_servers import (BackgroundLoop, McpConnection, McpServerConfig,
                                           McpServerError, McpServerStatus, McpToolError,
                                           McpToolInfo, api_name)
from maclaw_fast.tools.mcp_config import load_mcp_config, parse_mcp_servers
from maclaw_fast.tools.registry import (BODY_SUMMARY_CHARS, RegisteredTool, ToolRegistry,
                                        body_from_schema, truncate_body)

__all__ = ["McpManager", "McpServerConfig", "McpServerError", "McpServerStatus", "McpToolError",
           "load_mcp_config", "parse_mcp_servers"]

log = logging.getLogger(__name__)

# Room a blocking call leaves beyond the servers' own timeouts for closing a dead connection
# (the SDK's bounded stdio shutdown) before the caller gives up waiting.
_SLACK_S = 12.0


class _McpToolHandler:
    """The ``handler`` of a registered MCP tool: calls it through the SDK, returns its text.

    Takes the arguments as one mapping and/or keywords: ``h({"a": 1})`` or ``h(a=1)``.
    """

    __slots__ = ("manager", "server", "tool")

    def __init__(self, manager: McpManager, server: str, tool: str) -> None:
        self.manager, self.server, self.tool = manager, server, tool

    @staticmethod
    def _merge(arguments: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        merged = dict(arguments or {})
        merged.update(kwargs)
        return merged

    def __call__(self, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> str:
        return self.manager.call_tool(self.tool, self._merge(arguments, kwargs), server=self.server)

    async def acall(self, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> str:
        """Async form of calling the handler."""
        return await self.manager.acall_tool(
            self.tool, self._merge(arguments, kwargs), server=self.server
        )

    def __repr__(self) -> str:
        return f"<MCP tool {self.tool!r} on server {self.server!r}>"


class _Server:
    """Per-server state; touched only on the manager's loop thread (reads excepted)."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.conn = McpConnection(config)
        self.healthy = False
        self.last_error: str | None = None
        # server's tool name -> registered name; replaced wholesale (see _sync_tools)
        self.names: dict[str, str] = {}
        self.lock: asyncio.Lock | None = None  # created on the loop that uses it
        self.skipped: list[str] = []  # listed tools left out: every name for them was taken


class McpManager:
    """Registers the tools of MCP servers in a registry and keeps their status current.

    Parameters
    ----------
    registry : ToolRegistry
        Where the tools go (``category="mcp"``, ``server=<server name>``, tags ``mcp`` and the
        server name).
    servers : iterable of McpServerConfig
        Servers to use; disabled ones are ignored. Names must be unique.
    health_interval_s : float, optional
        When set, :meth:`check_health` also runs in the background every this many seconds.
    priority : int
        Priority given to the registered tools.

    Examples
    --------
    >>> import sys
    >>> from maclaw_fast.tools.registry import ToolRegistry
    >>> reg = ToolRegistry()
    >>> cfg = McpServerConfig(name="fx", command=sys.executable,
    ...                       args=("tests/mcp_fixture_server.py",))
    >>> with McpManager(reg, [cfg]) as mcp:               # doctest: +SKIP
    ...     print(reg.get("add").body)
    ...     print(reg.get("add").handler(a=2, b=3))
    Parameters:
    - a (integer): First addend
    - b (integer): Second addend
    5
    """

    def __init__(
        self,
        registry: ToolRegistry,
        servers: Iterable[McpServerConfig] = (),
        *,
        health_interval_s: float | None = None,
        priority: int = 0,
    ) -> None:
        configs = list(servers)
        for cfg in configs:
            if not isinstance(cfg, McpServerConfig):
                raise ValidationError(f"expected McpServerConfig, got {type(cfg).__name__}")
        names = [c.name for c in configs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationError(f"duplicate MCP server names: {dupes}")
        if health_interval_s is not None and not health_interval_s > 0:
            raise ValidationError("health_interval_s must be > 0")
        self.registry = registry
        self.health_interval_s = health_interval_s
        self.priority = priority
        self._servers = {c.name: _Server(c) for c in configs if c.enabled}
        self._bg = BackgroundLoop()
        self._health_task: asyncio.Task[None] | None = None
        # registered name -> (server, the catalog entry without a handler it replaced)
        self._placeholders: dict[str, tuple[str, RegisteredTool]] = {}
        self._closed = False
        self._early: concurrent.futures.Future | None = None  # see connect_early
        longest = max((c.connect_timeout_s for c in configs), default=1.0)
        self._op_timeout = 3 * longest + _SLACK_S  # connect + list + close, servers in parallel

    # ----------------------------------------------------------------- sync API
    def connect_early(self) -> None:
        """Begin connecting to (spawning) every server in the background and return at once,
        so the servers start while the caller loads other things; :meth:`start` then waits for
        them and registers their tools (nothing is registered before)."""
        if self._early is None and not self._closed:
            self._early = asyncio.run_coroutine_threadsafe(self._open_all(), self._bg.loop)

    def start(self) -> dict[str, bool]:
        """Connect to every server in parallel (or finish :meth:`connect_early`) and register
        their tools.

        A server that cannot be reached is reported ``False`` and retried by
        :meth:`check_health`; it never raises for one bad server.
        """
        return self._bg.run(self._start(), self._op_timeout)

    def check_health(self) -> dict[str, bool]:
        """Ping connected servers, reconnect the others; update tool statuses.

        A failed ping marks the server's tools ``unavailable`` and drops the connection; a later
        check reconnects (respawns a stdio server) and marks them ``available`` again.
        Returns ``{server: healthy}``.
        """
        return self._bg.run(self._check_all(), self._op_timeout)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout_s: float | None = None,
    ) -> str:
        """Call a tool and return its text result.

        ``name`` is the registered name, or the server's own tool name when ``server`` is given.

        Raises
        ------
        NotFoundError
            No such tool or server.
        McpToolError
            The tool reported an error.
        McpServerError
            The server is unavailable, dropped the connection, or the call timed out.
        """
        server_timeout = self._call_timeout(name, server)
        # The call, then (on a transport error) one ping and a bounded close.
        wait = (timeout_s or server_timeout) + server_timeout + _SLACK_S
        return self._bg.run(self._call(name, arguments, server, timeout_s), wait)

    def status(self) -> list[McpServerStatus]:
        """Health and registered tool names of every enabled server."""
        return [
            McpServerStatus(name=s.config.name, transport=s.config.transport, healthy=s.healthy,
                            tools=sorted(s.names.values()), last_error=s.last_error)
            for s in list(self._servers.values())
        ]

    def renamed(self) -> list[tuple[str, str, str]]:
        """``(server, tool, registered name)`` of every tool registered under another name
        because its own name was taken (design §12: ``<server>_<name>``)."""
        return [(s.config.name, o, r) for s in list(self._servers.values())
                for o, r in s.names.items() if o != r]

    def replaced(self) -> list[tuple[str, str]]:
        """``(server, name)`` of catalog entries without a handler that a server's tool of the
        same name replaced (they come back when the tool goes)."""
        return [(srv, name) for name, (srv, _) in list(self._placeholders.items())]

    def skipped(self) -> list[tuple[str, str]]:
        """``(server, tool)`` of every listed tool left out because both its name and
        ``<server>_<name>`` were taken."""
        return [(s.config.name, t) for s in list(self._servers.values()) for t in s.skipped]

    def server_of(self, name: str) -> tuple[str, str] | None:
        """``(server, the server's own tool name)`` of a registered MCP tool, else None."""
        try:
            s, tool = self._resolve(name, None)
        except NotFoundError:
            return None
        return s.config.name, tool

    def close(self) -> None:
        """Stop health checks, unregister the tools, close every connection; idempotent."""
        if self._closed:
            return
        try:
            if self._bg.running:
                self._bg.run(self._close(), self._op_timeout)
        finally:
            self._closed = True
            self._bg.stop()

    def __enter__(self) -> McpManager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- async API
    async def astart(self) -> dict[str, bool]:
        """Async :meth:`start`."""
        return await self._bg.arun(self._start())

    async def acheck_health(self) -> dict[str, bool]:
        """Async :meth:`check_health`."""
        return await self._bg.arun(self._check_all())

    async def acall_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout_s: float | None = None,
    ) -> str:
        """Async :meth:`call_tool`."""
        return await self._bg.arun(self._call(name, arguments, server, timeout_s))

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._closed:
            return
        try:
            if self._bg.running:
                await self._bg.arun(self._close())
        finally:
            self._closed = True
            # Joining the loop thread blocks briefly; keep it off the caller's loop.
            await asyncio.to_thread(self._bg.stop)

    async def __aenter__(self) -> McpManager:
        await self.astart()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----------------------------------------------------- loop-thread internals
    def _lock(self, s: _Server) -> asyncio.Lock:
        if s.lock is None:
            s.lock = asyncio.Lock()
        return s.lock

    def _call_timeout(self, name: str, server: str | None) -> float:
        try:
            return self._resolve(name, server)[0].config.timeout_s
        except NotFoundError:
            return 1.0  # resolution fails again on the loop, with the error

    async def _open(self, s: _Server) -> list[McpToolInfo] | None:
        """Connect and list; ``None`` (connection dropped, error recorded) on failure."""
        try:
            await s.conn.connect()
            return await s.conn.list_tools()
        except (McpServerError, McpToolError) as exc:
            s.last_error = str(exc)
            log.warning("%s", exc)
            await s.conn.close()
            return None

    async def _open_all(self) -> list:
        return await asyncio.gather(*(self._open(s) for s in self._servers.values()))

    async def _start(self) -> dict[str, bool]:
        if self._closed:
            raise McpServerError("the MCP manager is closed")
        servers = list(self._servers.values())
        early, self._early = self._early, None
        listed = await (asyncio.wrap_future(early) if early is not None else self._open_all())
        # Registered in configuration order, so which server keeps a clashing name is stable.
        for s, tools in zip(servers, listed):
            if tools is not None:
                self._sync_tools(s, tools)
            self._mark(s, tools is not None)
        if self.health_interval_s and self._health_task is None:
            self._health_task = asyncio.create_task(self._health_loop())
        return {s.config.name: s.healthy for s in servers}

    async def _check(self, s: _Server) -> bool:
        async with self._lock(s):
            if s.conn.connected:
                try:
                    await s.conn.ping()
                    healthy = True
                except McpServerError as exc:
                    s.last_error = str(exc)
                    log.warning("%s; its tools are unavailable until it recovers", exc)
                    await s.conn.close()
                    healthy = False
            else:
                tools = await self._open(s)
                if tools is not None:
                    self._sync_tools(s, tools)
                healthy = tools is not None
            self._mark(s, healthy)
            return healthy

    async def _check_all(self) -> dict[str, bool]:
        if self._closed:
            raise McpServerError("the MCP manager is closed")
        servers = list(self._servers.values())
        results = await asyncio.gather(*(self._check(s) for s in servers))
        return {s.config.name: ok for s, ok in zip(servers, results)}

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(self.health_interval_s or 60.0)
            try:
                await self._check_all()
            except Exception:  # a failed round must not end the periodic checks
                log.exception("MCP health check round failed")

    def _resolve(self, name: str, server: str | None) -> tuple[_Server, str]:
        if server is not None:
            s = self._servers.get(server)
            if s is None:
                raise NotFoundError(f"no enabled MCP server named {server!r}")
            return s, name
        for s in self._servers.values():
            for original, registered in s.names.items():
                if registered == name:
                    return s, original
        raise NotFoundError(f"no MCP tool registered as {name!r}")

    async def _call(
        self, name: str, arguments: Mapping[str, Any] | None, server: str | None,
        timeout_s: float | None,
    ) -> str:
        if self._closed:
            raise McpServerError("the MCP manager is closed")
        s, tool = self._resolve(name, server)
        if not s.conn.connected:
            raise McpServerError(
                f"MCP server {s.config.name!r} is unavailable ({s.last_error or 'not connected'})"
            )
        try:
            return await s.conn.call_tool(tool, arguments, timeout_s)
        except McpServerError:
            # A slow tool is not a dead server: only a failed ping takes the tools out.
            await self._check(s)
            raise

    def _owned(self, name: str, s: _Server) -> bool:
        """Whether the registry's ``name`` is still the tool this manager registered for ``s``."""
        try:
            h = self.registry.get(name).handler
        except NotFoundError:
            return False
        return isinstance(h, _McpToolHandler) and h.manager is self and h.server == s.config.name

    def _pick_name(self, s: _Server, tool: str) -> str | None:
        def taken(candidate: str) -> bool:
            if any(candidate in o.names.values() for o in self._servers.values() if o is not s):
                return True
            try:
                other = self.registry.get(candidate)
            except NotFoundError:
                return False
            # a catalog entry nothing implements (no handler, not a built-in) gives way
            return not (self._owned(candidate, s) or _placeholder(other))

        for candidate in (api_name(tool), api_name(f"{s.config.name}_{tool}")):
            if not taken(candidate):
                return candidate
        return None

    def _sync_tools(self, s: _Server, tools: list[McpToolInfo]) -> None:
        """Register the listed tools (keeping earlier names), drop the ones no longer listed.

        ``s.names`` is replaced, never mutated, so other threads always read a whole snapshot.
        """
        names: dict[str, str] = {}
        skipped: list[str] = []
        fresh: list[RegisteredTool] = []
        for info in tools:
            if info.name in names:
                continue
            registered = s.names.get(info.name) or self._pick_name(s, info.name)
            if registered is None:
                log.warning("MCP tool %r of %r skipped: both %r and %r are taken", info.name,
                            s.config.name, api_name(info.name),
                            api_name(f"{s.config.name}_{info.name}"))
                skipped.append(info.name)
                continue
            names[info.name] = registered
            if self._owned(registered, s):
                old = self.registry.get(registered)
                if (old.description, old.input_schema) == (info.description, info.input_schema):
                    continue  # unchanged: re-registering would make the router re-index it
            body = body_from_schema(info.input_schema)
            fresh.append(RegisteredTool(
                name=registered, description=info.description, category="mcp",
                tags=["mcp", s.config.name], priority=self.priority, status="available",
                input_schema=info.input_schema, body=body,
                body_summary=truncate_body(body, BODY_SUMMARY_CHARS), server=s.config.name,
                handler=_McpToolHandler(self, s.config.name, info.name),
            ))
        gone = [r for o, r in s.names.items() if o not in names]
        s.names, s.skipped = names, skipped
        for t in fresh:
            old = self.registry.get(t.name) if t.name in self.registry else None
            if old is not None and _placeholder(old):
                self._placeholders[t.name] = (s.config.name, old)
        self.registry.register_many(fresh)
        for registered in gone:
            self._release(registered, s)

    def _release(self, name: str, s: _Server) -> None:
        """Unregister ``s``'s tool ``name``, putting back the catalog entry it replaced."""
        if self._owned(name, s):
            self.registry.unregister(name)
            held = self._placeholders.pop(name, None)
            if held is not None and name not in self.registry:
                self.registry.register(held[1])

    def _mark(self, s: _Server, healthy: bool) -> None:
        s.healthy = healthy
        if healthy:
            s.last_error = None
        status = "available" if healthy else "unavailable"
        for registered in list(s.names.values()):
            if self._owned(registered, s):
                self.registry.set_status(registered, status)

    async def _close(self) -> None:
        early, self._early = self._early, None
        if early is not None:  # let the connections finish (each bounded), then close them
            await asyncio.gather(asyncio.wrap_future(early), return_exceptions=True)
        if self._health_task is not None:
            self._health_task.cancel()
            await asyncio.wait({self._health_task}, timeout=2.0)
            self._health_task = None
        servers = list(self._servers.values())
        await asyncio.gather(*(s.conn.close() for s in servers), return_exceptions=True)
        for s in servers:
            names, s.names, s.healthy = s.names, {}, False
            for registered in names.values():
                self._release(registered, s)


def _placeholder(tool: RegisteredTool) -> bool:
    return tool.handler is None and tool.category != "builtin"
