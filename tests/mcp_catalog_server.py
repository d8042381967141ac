"""A real MCP server (MCP Python SDK, stdio) that serves the non-core tools of the sample catalog
(``data/tools.json``) under their names and descriptions, each answering with what it was asked:
an attached server with enough tools that routing has to choose among them (and the LLM
reranker gets candidates).

    python tests/mcp_catalog_server.py
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from maclaw_fast.config import RouterConfig

CATALOG = Path(__file__).resolve().parents[1] / "data" / "tools.json"


def build() -> MCPServer:
    server = MCPServer("catalog", log_level="WARNING")
    data = json.loads(CATALOG.read_text(encoding="utf-8"))
    tools = data if isinstance(data, list) else data["tools"]
    core = set(RouterConfig().core_tools)
    for tool in tools:
        if tool["name"] not in core:
            server.add_tool(_answerer(tool["name"]), name=tool["name"],
                            description=tool.get("description", ""))
    return server


def _answerer(name: str):
    def answer(request: str = "") -> str:
        return f"{name} done: {request}"
    return answer


if __name__ == "__main__":
    build().run("stdio")
