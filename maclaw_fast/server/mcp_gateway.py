"""``serve --mcp-config``: the served MCP server as a gateway to other MCP servers.

The attached servers' tools join the routing registry (``route_tools`` and ``discover_tool``
choose among them, alongside a ``--catalog``), and two more tools reach them: ``call_tool``
runs one by its routed name, ``mcp_servers`` reports each server's health and tools.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from maclaw_fast.errors import MaclawError

__all__ = ["attach_to_backend", "add_gateway_tools"]


def attach_to_backend(backend, servers, embedder, *, manager=None):
    """Start ``servers`` (parsed configs; or finish ``manager``, from
    :func:`~maclaw_fast.tools.mcp_attach.connect_mcp_servers`) and register their tools in
    ``backend``'s routing registry, creating the router when no catalog was loaded; returns the
    running manager."""
    from maclaw_fast.tools import ToolRegistry, ToolRouter
    from maclaw_fast.tools.mcp_attach import attach_mcp_servers

    if backend.router is not None:
        return attach_mcp_servers(backend.router.registry, servers, manager=manager)
    from maclaw_fast.embedding.auto import catalog_embedder

    registry = ToolRegistry()
    manager = attach_mcp_servers(registry, servers, manager=manager)
    try:  # the servers' own tool texts pick the embedder ("auto" reads their language)
        backend.router = ToolRouter(registry, embedder=catalog_embedder(embedder,
                                                                        registry.list()))
    except BaseException:
        manager.close()
        raise
    return manager


def add_gateway_tools(mcp, manager) -> None:
    """Add ``call_tool`` and ``mcp_servers`` to the ``MCPServer`` ``mcp``.

    Examples
    --------
    >>> add_gateway_tools(build_server(backend), manager)     # doctest: +SKIP
    """
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    @mcp.tool(description="Call a tool of an attached MCP server by the name route_tools "
                          "gave it, with its arguments; returns the tool's text result.",
              annotations=ToolAnnotations(openWorldHint=True))
    def call_tool(
        name: Annotated[str, Field(min_length=1, description="the routed tool name")],
        arguments: Annotated[dict[str, Any] | None,
                             Field(description="the tool's arguments")] = None,
    ) -> dict[str, Any]:
        try:
            text = manager.call_tool(name, arguments or {})
        except MaclawError as exc:  # unknown tool, server down, tool failed: say which
            raise ToolError(str(exc)) from exc
        return {"ok": True, "name": name, "result": text}

    @mcp.tool(description="Health of the attached MCP servers and the names of their tools.",
              annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    def mcp_servers() -> dict[str, Any]:
        return {"ok": True, "servers": [
            {"name": s.name, "transport": s.transport,
             "status": "available" if s.healthy else "unavailable",
             "tools": s.tools, "error": s.last_error} for s in manager.status()],
            "renamed": [{"server": srv, "tool": tool, "registered_as": reg}
                        for srv, tool, reg in manager.renamed()]}
