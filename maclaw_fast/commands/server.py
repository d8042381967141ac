"""``maclaw-fast serve``: the MCP server over stdio or streamable HTTP.

The MCP SDK is imported inside the handler (it takes over a second), so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from maclaw_fast.commands.memory import port_number

SERVE_EXAMPLES = """\
examples:
  maclaw-fast serve                                      stdio, for an MCP client to spawn
  maclaw-fast serve --transport http --port 8765         http://127.0.0.1:8765/mcp
  MACLAW_MCP_TOKEN=secret maclaw-fast serve --transport http --host 0.0.0.0
  maclaw-fast serve --transport http --stores /srv/stores --users users.json
  maclaw-fast serve --transport http --stores /srv/stores --users users.json --workers 4

a client's MCP config (Claude Desktop, Cursor, .mcp.json):
  {"mcpServers": {"memory": {"command": "maclaw-fast", "args": ["serve"]}}}
"""


def register(subparsers) -> None:
    """Add ``serve`` to the ``maclaw-fast`` parser."""
    p = subparsers.add_parser(
        "serve", help="run the MCP server (memory and tool routing for any agent)",
        description="Expose memory_save, memory_recall, memory_search, memory_get, "
                    "memory_forget, memory_pin, route_tools and discover_tool over MCP.",
        epilog=SERVE_EXAMPLES)
    from maclaw_fast.commands.options import add_agent_args

    add_agent_args(
        p, workspace="workspace whose MEMORY.md and memory/*.md memory_search covers",
        mcp_config="their tools join route_tools, and the call_tool and mcp_servers tools "
                   "reach them",
        off="With an LLM: route_tools reranks, memory_save detects conflicts, memory_recall "
            "filters, memory_extract extracts; select_coding_agent, the route log and "
            "6-hourly maintenance need none", llm_needed=False)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (spawned by the client) or streamable HTTP")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                   help="HTTP bind address (default 127.0.0.1; others need a token)")
    p.add_argument("--port", type=port_number, default=8765, metavar="PORT",
                   help="HTTP port (default 8765)")
    p.add_argument("--token", default=None, metavar="TOKEN",
                   help="bearer token HTTP clients must send (or set MACLAW_MCP_TOKEN)")
    p.add_argument("--stores", default=None, metavar="DIR",
                   help="HTTP only: a root directory of per-user stores (with --users)")
    p.add_argument("--users", default=None, metavar="FILE",
                   help='JSON file {"users": {"<token>": "<store name>"}}: each HTTP '
                        "request's bearer token picks its user's store under --stores")
    p.add_argument("--pool-size", type=int, default=1000, metavar="N",
                   help="per-user stores kept open at once (default 1000, per worker)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="with --stores/--users: N server processes behind this address, each "
                        "user's store owned by one of them (default 1)")
    p.set_defaults(func=cmd_serve, own_interrupt=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from maclaw_fast.embedding.options import embedder_from_args
    from maclaw_fast.server.http import TOKEN_ENV, check_bind
    from maclaw_fast.server.mcp_server import Backend, ServerConfig, build_server

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    users = None
    if args.stores or args.users:
        from maclaw_fast.errors import ValidationError
        from maclaw_fast.server.users import load_users

        if not (args.stores and args.users) or args.transport != "http" or args.store:
            raise ValidationError("per-user stores need --transport http, --stores DIR and "
                                  "--users FILE (and no --store)")
        if args.pool_size < 1:
            raise ValidationError("--pool-size must be ≥ 1")
        users = load_users(args.users)
        token = None  # the users' tokens authenticate every request
    if args.workers != 1:
        from maclaw_fast.errors import ValidationError

        if users is None or args.workers < 2:
            raise ValidationError("--workers N (N >= 2) needs per-user stores: --transport "
                                  "http, --stores DIR and --users FILE")
        from maclaw_fast.server.workers import serve_workers

        argv = list(getattr(args, "argv", None) or sys.argv[1:])
        serve_workers(argv[argv.index("serve") + 1:] if "serve" in argv else argv,
                      workers=args.workers, host=args.host, port=args.port, users=users)
        return 0
    if args.transport == "http" and users is None:
        check_bind(args.host, token)  # before opening (and locking) the store
    mcp_servers = None
    if args.mcp_config:  # checked before the store opens: a bad entry changes nothing
        from maclaw_fast.tools.mcp_config import load_mcp_config

        mcp_servers = load_mcp_config(args.mcp_config)
    from maclaw_fast.commands.maintenance import llm_from_args
    from maclaw_fast.config import FeaturesConfig

    features_cfg = FeaturesConfig().without(args.off or ())
    llm = llm_from_args(args)
    cfg = ServerConfig(store=args.store, workspace=args.workspace, catalog=args.catalog,
                       embedder=embedder_from_args(args) or "none", project=args.project,
                       stores=args.stores, pool_size=args.pool_size)
    from maclaw_fast.warmup import warm_in_background

    warm_in_background()  # an MCP client's first call waits only for what is left to compile
    with contextlib.ExitStack() as stack:
        if llm is not None:
            stack.callback(llm.close)
        early = None
        if mcp_servers:  # the servers start while the store opens and the catalog loads
            from maclaw_fast.tools.mcp_attach import connect_mcp_servers

            early = connect_mcp_servers(mcp_servers)
            stack.callback(early.close)
        backend = stack.enter_context(Backend.open(cfg))
        gateway = None
        if early is not None:
            from maclaw_fast.server.mcp_gateway import attach_to_backend

            gateway = attach_to_backend(backend, mcp_servers, cfg.embedder
                                        if cfg.embedder != "none" else None, manager=early)
            stack.callback(gateway.close)  # before the store closes (close is idempotent)
            from maclaw_fast.tools.mcp_attach import report_lines

            for line in report_lines(gateway):
                print(line, file=sys.stderr, flush=True)  # stdout carries the protocol
        from maclaw_fast.server.features import ServeFeatures, add_feature_tools

        # after the gateway: its servers' tools are routed (and reranked) too
        backend.features = ServeFeatures(backend, llm, features_cfg).start()
        stack.callback(backend.features.close)
        mcp = build_server(backend)
        if gateway is not None:
            from maclaw_fast.server.mcp_gateway import add_gateway_tools

            add_gateway_tools(mcp, gateway)
        add_feature_tools(mcp, backend, backend.features)
        if args.transport == "stdio":
            # The SDK reads stdin in a worker thread that no exception can interrupt, so on
            # SIGTERM close the store here (its lock lets in-flight calls finish) and leave.
            def stop(signum, frame) -> None:
                backend.close()
                os._exit(0)

            signal.signal(signal.SIGTERM, stop)
            from maclaw_fast.server.stdio import serve_stdio

            serve_stdio(mcp)  # every unreadable line gets a JSON-RPC error reply
        else:
            from maclaw_fast.server.http import serve_http

            serve_http(mcp, host=args.host, port=args.port, token=token, users=users)
    return 0
