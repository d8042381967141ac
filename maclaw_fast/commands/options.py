"""Options that several subcommands declare alike: the LLM connection, and everything
``chat`` and ``serve`` have in common (one declaration, so the two cannot drift apart)."""

from __future__ import annotations

import argparse


def add_llm_args(p: argparse.ArgumentParser, *, needed: bool = False) -> None:
    """``--llm-url``, ``--model``, ``--protocol``, ``--api-key``, ``--llm-timeout``;
    ``needed``: the command cannot run without an LLM (else its LLM steps are skipped)."""
    without = "" if needed else "; without one the LLM steps are skipped"
    p.add_argument("--llm-url", metavar="URL",
                   help="LLM base URL, e.g. http://127.0.0.1:8080/v1 (default: "
                        f"$MACLAW_LLM_BASE_URL{without})")
    p.add_argument("--model", metavar="NAME", help="LLM model (default: $MACLAW_LLM_MODEL)")
    p.add_argument("--protocol", choices=["openai", "anthropic"],
                   help="wire protocol (default: $MACLAW_LLM_PROTOCOL or openai)")
    p.add_argument("--api-key", metavar="KEY",
                   help="API key (better: $MACLAW_LLM_API_KEY, not visible in ps)")
    p.add_argument("--llm-timeout", type=float, metavar="SECONDS",
                   help="seconds per LLM request (default: the client's)")


def add_agent_args(p: argparse.ArgumentParser, *, workspace: str, mcp_config: str, off: str,
                   llm_needed: bool) -> None:
    """The options of ``chat`` and ``serve``: store, workspace, catalog, embedder, project, MCP
    servers, LLM, features and progress. The arguments are each command's own help for the
    options whose meaning differs between them."""
    from maclaw_fast.config import FeaturesConfig
    from maclaw_fast.embedding.options import add_embedder_args
    from maclaw_fast.progress import add_progress_args

    p.add_argument("--store", default=None, metavar="DIR",
                   help="memory store directory (default: $MACLAW_HOME/memory or "
                        "~/.maclaw_fast/memory)")
    p.add_argument("--workspace", default=None, metavar="DIR", help=workspace)
    p.add_argument("--catalog", default=None, metavar="FILE",
                   help="tool catalog JSON (default: the bundled sample catalog)")
    add_embedder_args(p)
    p.add_argument("--project", default=None, metavar="NAME",
                   help="default project of the recall scope filter")
    p.add_argument("--mcp-config", default=None, metavar="FILE",
                   help="attach the MCP servers of FILE: the mcpServers map of "
                        "claude_desktop_config.json, .cursor/mcp.json or .mcp.json (stdio "
                        "entries with command/args/env, HTTP entries with url/headers); "
                        + mcp_config)
    add_llm_args(p, needed=llm_needed)
    p.add_argument("--off", action="append", default=None, metavar="FEATURE",
                   choices=[n.replace("_", "-") for n in FeaturesConfig.names()],
                   help="turn a feature off (repeat for several): %(choices)s. " + off)
    add_progress_args(p)
