"""A small real MCP server, written with the MCP Python SDK, for ``tests/test_mcp_tools.py``.

Run it over stdio (the client spawns it) or over streamable HTTP on 127.0.0.1::

    python tests/mcp_fixture_server.py --transport stdio
    python tests/mcp_fixture_server.py --transport http --port 8765

``--pid-file PATH`` writes the server's process id there once it is up, so a test can SIGKILL the
process that the SDK's stdio client spawned (the client does not expose it).
"""

from __future__ import annotations

import argparse
import os
from typing import Annotated, Any

from pydantic import Field

from mcp.server.mcpserver import MCPServer

server = MCPServer("fixture", log_level="WARNING")


@server.tool()
def add(
    a: Annotated[int, Field(description="First addend")],
    b: Annotated[int, Field(description="Second addend")],
) -> str:
    """Add two integers and return the sum."""
    return str(a + b)


@server.tool(description="执行 SQL 语句查询数据库并返回结果行 (query the database with SQL)")
def query_database(sql: Annotated[str, Field(description="要执行的 SQL 语句")]) -> str:
    # A canned answer is enough: the tests check the round trip, not a database.
    return f"rows for: {sql}"


@server.tool()
def echo(text: Any) -> str:  # Any on purpose: the schema has no "type", the body shows "any"
    """Echo the text back unchanged."""
    return str(text)


@server.tool()
def read_file(path: str) -> str:
    """Read a file from the fixture's pretend file system."""
    # Same name as a builtin tool, so the client must rename it <server>_read_file.
    return f"contents of {path}"


@server.tool()
def server_time() -> str:
    """Report a fixed server time (a tool without parameters)."""
    return "2024-01-01T00:00:00Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--pid-file", default=None)
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "w", encoding="utf-8") as fh:
            fh.write(str(os.getpid()))
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
