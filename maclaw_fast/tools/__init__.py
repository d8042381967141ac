"""Tool routing (design §12): registry, hybrid router, usage experience, groups, enrichment,
reranker, selector and route log. MCP tool definitions live in :mod:`maclaw_fast.tools.mcp`.

Examples
--------
>>> from maclaw_fast.tools import ToolRegistry, ToolRouter, load_catalog
>>> router = ToolRouter(ToolRegistry(load_catalog("data/tools.json")))   # doctest: +SKIP
>>> router.route("我要查询数据库").names                                  # doctest: +SKIP
"""

from maclaw_fast.tools.enrichment import EnrichmentStore
from maclaw_fast.tools.groups import GroupActivator
from maclaw_fast.tools.registry import (BODY_SUMMARY_CHARS, Platform, RegisteredTool, ToolRegistry,
                                        body_from_schema, load_catalog, tool_from_dict,
                                        truncate_body)
from maclaw_fast.tools.rerank import LLMReranker
from maclaw_fast.tools.routelog import RouteLog
from maclaw_fast.tools.router import ToolRouter
from maclaw_fast.tools.selector import AgentProfile, Selection, Selector
from maclaw_fast.tools.types import RouteResult, ToolScore
from maclaw_fast.tools.usage import UsageTracker

__all__ = ["BODY_SUMMARY_CHARS", "AgentProfile", "EnrichmentStore", "GroupActivator",
           "LLMReranker", "Platform", "RegisteredTool", "RouteLog", "RouteResult", "Selection",
           "Selector", "ToolRegistry", "ToolRouter", "ToolScore", "UsageTracker",
           "body_from_schema", "load_catalog", "tool_from_dict", "truncate_body"]


def __getattr__(name):  # the MCP layer imports the MCP SDK: load it only when asked for
    if name in ("McpManager", "mcp"):
        import importlib

        module = importlib.import_module("maclaw_fast.tools.mcp")
        return module if name == "mcp" else getattr(module, name)
    raise AttributeError(name)
