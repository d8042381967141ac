"""A second real MCP server (MCP Python SDK) for the ``--mcp-config`` and terminal chat tests:
an order database with tools that misbehave on request.

    python tests/mcp_orders_server.py --transport stdio
    python tests/mcp_orders_server.py --transport http --port 8766 [--name billing]

``query_orders`` answers from a small in-memory table; ``slow_report`` sleeps without blocking
the server (a slow tool on a live server), ``freeze`` blocks the whole process (a hung server:
pings go unanswered too) and ``crash`` ends the process (a dead server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import MCPServer

ORDERS = [
    {"id": "A-1001", "month": "2026-10", "customer": "Lin", "total": 120.5},
    {"id": "A-1002", "month": "2026-11", "customer": "Kai", "total": 88.0},
    {"id": "A-1003", "month": "2026-11", "customer": "Lin", "total": 42.25},
]


def build(name: str) -> MCPServer:
    server = MCPServer(name, log_level="WARNING")

    @server.tool(description="查询订单数据库: list the orders of a month from the order "
                             "database (SQL-free order lookup)")
    def query_orders(month: Annotated[str, Field(description="month as YYYY-MM")]) -> str:
        rows = [o for o in ORDERS if o["month"] == month]
        total = sum(o["total"] for o in rows)
        lines = [f"{o['id']} {o['customer']} {o['total']:.2f}" for o in rows]
        return f"{len(rows)} orders in {month}, total {total:.2f}\n" + "\n".join(lines)

    @server.tool(name="report.monthly",
                 description="Monthly order totals (a dotted name, as MCP allows).")
    def report_monthly() -> str:
        months = sorted({o["month"] for o in ORDERS})
        return "; ".join(f"{m}: {sum(o['total'] for o in ORDERS if o['month'] == m):.2f}"
                         for m in months)

    @server.tool(description="Build a slow sales report (takes the given number of seconds).")
    async def slow_report(seconds: float = 5.0) -> str:
        await asyncio.sleep(seconds)
        return "report ready"

    @server.tool(description="Freeze the order server for a while (blocks the whole process).")
    async def freeze(seconds: float = 60.0) -> str:
        time.sleep(seconds)  # blocking inside the event loop: nothing else is answered
        return "thawed"

    @server.tool(description="Crash the order server process.")
    def crash() -> str:
        os._exit(3)

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--name", default="orders")
    args = parser.parse_args()
    server = build(args.name)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
