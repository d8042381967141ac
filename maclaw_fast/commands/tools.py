"""``maclaw-fast route`` and ``maclaw-fast tools list|import|discover``.

Heavy imports (numba kernels, embedders) happen inside the handlers so ``--help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from maclaw_fast.commands.memory import query_text

DEFAULT_CATALOG = Path(__file__).resolve().parents[2] / "data" / "tools.json"


def _catalog_arg(p) -> None:
    p.add_argument("--catalog", default=None, metavar="FILE",
                   help="tool catalog JSON (a list of tools; default: the bundled sample "
                        "data/tools.json)")
    from maclaw_fast.embedding.options import add_embedder_args

    add_embedder_args(p)


ROUTE_EXAMPLES = """\
examples:
  maclaw-fast route "commit my changes and open a pull request"
  maclaw-fast route "我要查询数据库里上个月的订单" --json
  maclaw-fast route "book a flight" --catalog my_tools.json --embedder hash
"""

TOOLS_EXAMPLES = """\
examples:
  maclaw-fast tools list
  maclaw-fast tools import vendor_tools.json --into my_tools.json
  maclaw-fast tools discover "send an email" --catalog my_tools.json
  maclaw-fast tools stats
"""


def register(subparsers) -> None:
    """Add the tool routing subcommands to the ``maclaw-fast`` parser."""
    from maclaw_fast.progress import add_progress_args

    p = subparsers.add_parser(
        "route", help="pick the tools for a message",
        description="Route one message over a tool catalog: the core tools plus the best "
                    "matches by BM25, embeddings, usage and priority.", epilog=ROUTE_EXAMPLES)
    p.add_argument("message", type=query_text, help="the user message to pick tools for")
    _catalog_arg(p)
    p.add_argument("--json", action="store_true", help="print the RouteResult as JSON")
    add_progress_args(p)
    p.set_defaults(func=_route)

    tools = subparsers.add_parser("tools", help="inspect and import tool catalogs",
                                  description="A catalog is a JSON list of tools (name, "
                                              "description, category, tags, priority, "
                                              "parameters).", epilog=TOOLS_EXAMPLES)
    sub = tools.add_subparsers(dest="tools_command", required=True, metavar="ACTION")
    p = sub.add_parser("list", help="list the tools of a catalog",
                       description="Name, category and description of every tool.",
                       epilog="examples:\n  maclaw-fast tools list --json\n")
    _catalog_arg(p)
    p.add_argument("--json", action="store_true",
                   help="print the tools (name, category, tags, priority, description) as JSON")
    p.set_defaults(func=_list)
    p = sub.add_parser("import", help="validate a catalog and merge it into another",
                       description="Check every tool of SOURCE and merge them into the "
                                   "catalog --into (a tool of the same name is replaced).",
                       epilog="examples:\n  maclaw-fast tools import vendor.json --into "
                              "my_tools.json\n")
    p.add_argument("source", help="catalog JSON to import")
    p.add_argument("--into", required=True, metavar="FILE",
                   help="catalog JSON to merge into (created if absent)")
    p.set_defaults(func=_import)
    p = sub.add_parser("stats", help="catalog statistics and the embedding model routing uses",
                       description="Tools, groups and the model routing embeds them with, "
                                   "as JSON.", epilog="examples:\n  maclaw-fast tools stats\n")
    _catalog_arg(p)
    p.set_defaults(func=_stats)
    p = sub.add_parser("discover", help="search the catalog's non-core tools (BM25)",
                       description="The discover_tool search: tools outside the core set "
                                   "whose name, description or tags match the query.",
                       epilog="examples:\n  maclaw-fast tools discover \"send an email\"\n")
    p.add_argument("query", type=query_text, help="words describing the tool you need")
    _catalog_arg(p)
    p.add_argument("--json", action="store_true", help="print the tool names as a JSON list")
    add_progress_args(p)
    p.set_defaults(func=_discover)


def _router(args):
    from maclaw_fast.embedding.options import embedder_from_args
    from maclaw_fast.tools import EnrichmentStore, ToolRegistry, ToolRouter, load_catalog

    tools = load_catalog(args.catalog or DEFAULT_CATALOG)
    # "auto" is decided by the router from the catalog's text (and said by `tools stats`)
    return ToolRouter(ToolRegistry(tools), embedder=embedder_from_args(args),
                      enrichment=EnrichmentStore())


def _route(args) -> int:
    import msgspec

    from maclaw_fast import progress

    with progress.activity(args, "routing (the model and the catalog's vectors load first)"):
        res = _router(args).route(args.message)
    if args.json:
        print(msgspec.json.encode(res).decode())
        return 0
    print(f"{len(res.tools)} of {res.total} tools; groups: {', '.join(res.groups) or '-'}")
    from maclaw_fast.commands.display import one_line

    for t in res.tools:
        extra = (f"  score {t.score:.3f} (retrieval {t.retrieval:.3f}, experience "
                 f"{t.experience:.3f}, priority {t.priority:.2f})" if t.reason != "core" else "")
        print(f"  {one_line(t.name):<28} {t.reason:<7}{extra}")
    return 0


def _list(args) -> int:
    from maclaw_fast.tools import load_catalog

    tools = load_catalog(args.catalog or DEFAULT_CATALOG)
    if args.json:
        print(json.dumps([{"name": t.name, "category": t.category, "tags": t.tags,
                           "priority": t.priority, "description": t.description}
                          for t in tools], ensure_ascii=False))
        return 0
    from maclaw_fast.commands.display import one_line

    for t in tools:
        print(f"{one_line(t.name):<28} {one_line(t.category):<8} {one_line(t.description, 70)}")
    print(f"{len(tools)} tools; embedder {_model_line(args.embedder, tools)}", file=sys.stderr)
    return 0


def _model_line(name: str, tools) -> str:
    """Which model routing would use for ``tools`` (without loading it)."""
    from maclaw_fast.embedding.auto import choose_model, cjk_share, tool_text
    from maclaw_fast.embedding.base import is_auto

    if not is_auto(name):
        return name
    texts = [tool_text(t) for t in tools]
    return f"auto: {choose_model(texts)} (catalog text {cjk_share(texts):.0%} Han characters)"


def _stats(args) -> int:
    print(json.dumps(_router(args).stats(), ensure_ascii=False, indent=1))
    return 0


def _import(args) -> int:
    import msgspec

    from maclaw_fast.tools import load_catalog

    new = load_catalog(args.source)
    target = Path(args.into)
    merged = {t.name: t for t in (load_catalog(target) if target.exists() else [])}
    replaced = [t.name for t in new if t.name in merged]
    for t in new:
        merged[t.name] = t
    items = [msgspec.to_builtins(t) for t in merged.values()]
    for item in items:
        item.pop("handler", None)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(target)
    print(f"imported {len(new)} tools into {target} ({len(merged)} in all)")
    if replaced:
        print(f"replaced {len(replaced)} tools of the same name: {', '.join(replaced)}")
    return 0


def _discover(args) -> int:
    from maclaw_fast import progress

    with progress.activity(args, "searching the catalog"):
        names = _router(args).discover(args.query, session="cli")
    if args.json:
        print(json.dumps(names))
    else:
        for n in names:
            print(n)
    return 0


DEMO_MESSAGES = (
    "我要查询数据库里上个月的订单",
    "commit my changes and open a pull request",
    "帮我登录网站然后下单",
    "what's the weather in Hangzhou tomorrow",
    "translate this PDF into English",
)


def demo_route(out=print, *, embedder="auto", top: int = 5) -> None:
    """Route a few English and Chinese messages over the bundled catalog (``maclaw-fast demo``)."""
    import time

    from maclaw_fast import progress
    from maclaw_fast.embedding.auto import catalog_embedder
    from maclaw_fast.tools import EnrichmentStore, ToolRegistry, ToolRouter, load_catalog

    t0 = time.perf_counter()
    tools = load_catalog(DEFAULT_CATALOG)
    with progress.activity(None, f"building the tool catalog: embedding {len(tools)} tools"):
        router = ToolRouter(ToolRegistry(tools), embedder=catalog_embedder(embedder, tools),
                            enrichment=EnrichmentStore())
        router.route("warm up")  # embeds the catalog once
    out(f"tool routing over data/tools.json: {len(router.registry.list())} tools, "
        f"ready in {time.perf_counter() - t0:.2f} s")
    for message in DEMO_MESSAGES:
        t = time.perf_counter()
        res = router.route(message)
        ms = (time.perf_counter() - t) * 1e3
        picked = [s for s in res.tools if s.reason not in ("core", "fill")][:top]
        out(f"\nroute {message!r}: {len(res.tools)} of {res.total} tools ({res.n_core} core) in"
            f" {ms:.2f} ms; groups: {', '.join(res.groups) or '-'}")
        for s in picked:
            out(f"   {s.name:<26} {s.reason:<6} score {s.score:.3f} (retrieval {s.retrieval:.3f},"
                f" bm25 {s.bm25:.2f}, cos {s.cosine:.2f}, priority {s.priority:.2f})")
