"""Attach the MCP servers of a configuration file to a tool registry (``chat`` and ``serve``
``--mcp-config``): start them, register their tools, and say what happened in plain lines.

A server that cannot be reached does not stop the others: its tools stay out (status
``unavailable``) and the periodic health check reconnects it later.
"""

from __future__ import annotations

import os

from maclaw_fast.tools.mcp import McpManager, McpServerConfig, api_name
from maclaw_fast.tools.mcp_config import load_mcp_config

__all__ = ["attach_mcp_servers", "connect_mcp_servers", "report_lines"]


def connect_mcp_servers(config: str | os.PathLike | list[McpServerConfig], *,
                        health_interval_s: float | None = 60.0) -> McpManager:
    """Begin starting the servers of ``config`` in the background and return at once (``chat``
    and ``serve`` open the store and load the model meanwhile); :func:`attach_mcp_servers`
    with ``manager=`` then registers their tools. Close the manager when done.

    Examples
    --------
    >>> from maclaw_fast.tools import ToolRegistry
    >>> early = connect_mcp_servers("mcp.json")                          # doctest: +SKIP
    >>> mcp = attach_mcp_servers(ToolRegistry(), None, manager=early)   # doctest: +SKIP
    """
    from maclaw_fast.tools.mcp_servers import import_sdk
    from maclaw_fast.tools.registry import ToolRegistry

    configs = config if isinstance(config, list) else load_mcp_config(config)
    import_sdk([c for c in configs if c.enabled])  # then the processes start at once
    manager = McpManager(ToolRegistry(), configs, health_interval_s=health_interval_s)
    manager.connect_early()
    return manager


def attach_mcp_servers(registry, config: str | os.PathLike | list[McpServerConfig] | None, *,
                       health_interval_s: float | None = 60.0,
                       manager: McpManager | None = None) -> McpManager:
    """Start the servers of ``config`` (a file path or parsed configs) and register their tools
    in ``registry``; returns the running manager (close it when done). With ``manager`` (from
    :func:`connect_mcp_servers`; ``config`` is then ignored) its connections are awaited and
    their tools registered in ``registry``.

    Examples
    --------
    >>> from maclaw_fast.tools import ToolRegistry
    >>> mcp = attach_mcp_servers(ToolRegistry(), "mcp.json")   # doctest: +SKIP
    >>> print("\\n".join(report_lines(mcp)))                   # doctest: +SKIP
    MCP server 'orders' (stdio): 2 tools: query_orders, slow_report
    >>> mcp.close()                                            # doctest: +SKIP
    """
    if manager is None:
        configs = config if isinstance(config, list) else load_mcp_config(config)
        manager = McpManager(registry, configs, health_interval_s=health_interval_s)
    else:
        manager.registry = registry  # nothing is registered before start()
    try:
        manager.start()
    except BaseException:
        manager.close()
        raise
    return manager


def report_lines(manager: McpManager) -> list[str]:
    """One line per server (its tools, or why it is unavailable) and one per renamed tool."""
    lines = []
    for st in manager.status():
        if st.healthy:
            names = ", ".join(st.tools[:12]) + (", ..." if len(st.tools) > 12 else "")
            lines.append(f"MCP server {st.name!r} ({st.transport}): {len(st.tools)} tools"
                         f"{': ' + names if names else ''}")
        else:
            lines.append(f"MCP server {st.name!r} ({st.transport}): unavailable - "
                         f"{st.last_error or 'not connected'}; its tools are left out until "
                         "it answers")
    for server, tool, registered in manager.renamed():
        why = "the name was taken" if api_name(tool) == tool else "not a valid function name"
        if api_name(tool) != tool and registered != api_name(tool):
            why += ", and taken"
        lines.append(f"  {server}: tool {tool!r} registered as {registered!r} ({why})")
    for server, name in manager.replaced():
        lines.append(f"  {server}: tool {name!r} takes the place of the catalog entry "
                     "without a handler")
    for server, tool in manager.skipped():
        lines.append(f"  {server}: tool {tool!r} left out (its name and "
                     f"{api_name(server + '_' + tool)!r} are taken)")
    return lines
