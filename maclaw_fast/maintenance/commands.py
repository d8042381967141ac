"""Maintenance subcommands of ``maclaw-fast``: maintain, gc, archive list|restore, extract."""

from __future__ import annotations

import argparse
import json

from maclaw_fast.memory.commands import _open, _store_arg


def _llm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm-url", help="LLM base URL (default: $MACLAW_LLM_BASE_URL)")
    p.add_argument("--model", help="LLM model (default: $MACLAW_LLM_MODEL)")
    p.add_argument("--protocol", choices=["openai", "anthropic"],
                   help="wire protocol (default: $MACLAW_LLM_PROTOCOL or openai)")
    p.add_argument("--api-key", help="API key (default: $MACLAW_LLM_API_KEY)")
    p.add_argument("--llm-timeout", type=float, help="seconds per LLM request")


def _llm(args):
    """An LLMClient from the flags, else from the environment, else None (no LLM)."""
    from maclaw_fast.errors import ValidationError
    from maclaw_fast.llm import LLMClient, LLMConfig

    env = LLMConfig.from_env()
    url = args.llm_url or (env.base_url if env else None)
    model = args.model or (env.model if env else None)
    if not url and not model:
        return None
    if not url or not model:
        raise ValidationError("an LLM needs both --llm-url and --model")
    kwargs = {"base_url": url, "model": model,
              "protocol": args.protocol or (env.protocol if env else "openai"),
              "api_key": args.api_key or (env.api_key if env else "")}
    if args.llm_timeout:
        kwargs["timeout_s"] = args.llm_timeout
    return LLMClient(LLMConfig(**kwargs))


def _print(obj) -> None:
    import msgspec

    print(json.dumps(msgspec.to_builtins(obj), indent=2, ensure_ascii=False))


def cmd_maintain(args) -> int:
    from maclaw_fast.maintenance.pipeline import Maintenance
    from maclaw_fast.maintenance.records import last_maintenance, seconds_until_due

    llm = _llm(args)
    try:
        with _open(args) as store:
            m = Maintenance(store, llm)
            left = 0.0 if args.now else seconds_until_due(store, m.config.interval_h,
                                                           float(m.clock()))
            if left > 0:
                last = last_maintenance(store)
                _print({"skipped": f"not due for {left / 3600:.1f} h (every "
                                   f"{m.config.interval_h:g} h; --now runs it anyway)",
                        "due_in_s": round(left, 1), "last": last})
                return 0
            _print(m.run_once())
    finally:
        if llm is not None:
            llm.close()
    return 0


def cmd_gc(args) -> int:
    with _open(args) as store:
        _print(store.gc())
    return 0


def cmd_archive(args) -> int:
    with _open(args) as store:
        if args.action == "list":
            for e in store.archive.list()[: args.limit]:
                text = e.content.replace("\n", " ")
                print(f"{e.id}  [{e.category}] {text[:90]}")
            print(f"{len(store.archive)} archived")
        else:
            e = store.restore(args.id)
            print(json.dumps({"restored": e.id, "category": e.category,
                              "access_count": e.access_count}, ensure_ascii=False))
    return 0


def cmd_extract(args) -> int:
    from maclaw_fast.errors import ValidationError
    from maclaw_fast.maintenance.extractor import KnowledgeExtractor

    try:
        with open(args.conversation, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read {args.conversation}: {exc}") from None
    messages = data.get("messages") if isinstance(data, dict) else data
    llm = _llm(args)
    try:
        with _open(args) as store:
            _print(KnowledgeExtractor(store, llm).extract(messages, project=args.project))
    finally:
        if llm is not None:
            llm.close()
    return 0


def register(sub) -> None:
    p = sub.add_parser("maintain", help="run the maintenance pipeline when due (every 6 h) "
                                        "and print the report",
                       description="Backup, GC, decay, compress, promote, reflect. Runs when "
                                   "6 h have passed since the last run (recorded in the store), "
                                   "or at once with --now; the LLM steps need an LLM.")
    _store_arg(p)
    _llm_args(p)
    p.add_argument("--now", action="store_true",
                   help="run now even when the last run was less than 6 h ago")
    p.set_defaults(func=cmd_maintain)

    p = sub.add_parser("gc", help="archive least-used memories below the GC threshold")
    _store_arg(p)
    p.set_defaults(func=cmd_gc)

    p = sub.add_parser("archive", help="list or restore archived memories")
    asub = p.add_subparsers(dest="action", required=True)
    q = asub.add_parser("list", help="archived memories, newest first")
    _store_arg(q)
    q.add_argument("--limit", type=int, default=50)
    q = asub.add_parser("restore", help="move an archived memory back")
    _store_arg(q)
    q.add_argument("id")
    p.set_defaults(func=cmd_archive)

    p = sub.add_parser("extract", help="extract knowledge from a conversation (needs an LLM)")
    _store_arg(p)
    _llm_args(p)
    p.add_argument("--conversation", required=True,
                   help="JSON file: a list of {role, content} messages (or {messages: [...]})")
    p.add_argument("--project", help="tag extracted project knowledge with this project")
    p.set_defaults(func=cmd_extract)
