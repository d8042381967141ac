"""Maintenance subcommands of ``maclaw-fast``: maintain, gc, archive list|restore, extract."""

from __future__ import annotations

import json

from maclaw_fast.commands.memory import open_store, positive_int, store_arg
from maclaw_fast.commands.options import add_llm_args


def llm_from_args(args):
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
    from maclaw_fast import progress
    from maclaw_fast.maintenance.pipeline import Maintenance
    from maclaw_fast.maintenance.records import last_maintenance, seconds_until_due

    llm = llm_from_args(args)
    try:
        with open_store(args) as store:
            m = Maintenance(store, llm)
            left = 0.0 if args.now else seconds_until_due(store, m.config.interval_h,
                                                          float(m.clock()))
            if left > 0:
                last = last_maintenance(store)
                _print({"skipped": f"not due for {left / 3600:.1f} h (every "
                                   f"{m.config.interval_h:g} h; --now runs it anyway)",
                        "due_in_s": round(left, 1), "last": last})
                return 0
            with progress.activity(args, "maintenance: backup, gc, decay, compress, promote, "
                                         "reflect"):
                report = m.run_once()
            _print(report)
    finally:
        if llm is not None:
            llm.close()
    return 0


def cmd_gc(args) -> int:
    from maclaw_fast import progress

    with progress.activity(args, "garbage collection"), open_store(args) as store:
        report = store.gc()
    _print(report)
    return 0


def cmd_archive(args) -> int:
    with open_store(args) as store:
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
    from maclaw_fast import progress
    from maclaw_fast.errors import ValidationError
    from maclaw_fast.maintenance.extractor import KnowledgeExtractor

    try:
        with open(args.conversation, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read {args.conversation}: {exc}") from None
    messages = data.get("messages") if isinstance(data, dict) else data
    llm = llm_from_args(args)
    try:
        with open_store(args) as store:
            with progress.activity(args, "extracting knowledge (LLM)"):
                result = KnowledgeExtractor(store, llm).extract(messages, project=args.project)
            _print(result)
    finally:
        if llm is not None:
            llm.close()
    return 0


MAINTAIN_EXAMPLES = """\
examples:
  maclaw-fast maintain                         when due: backup, GC, decay, exact dedup (no LLM)
  maclaw-fast maintain --now                   at once, even if the last run was recent
  maclaw-fast maintain --now --llm-url http://127.0.0.1:8080/v1 --model qwen2.5
                                               also merge, compress, promote and reflect
"""

EXTRACT_EXAMPLES = """\
examples:
  maclaw-fast extract --conversation chat.json --llm-url http://127.0.0.1:8080/v1 --model qwen2.5
  maclaw-fast extract --conversation chat.json --project atlas

The conversation file is a JSON list of {"role": "user"|"assistant", "content": "..."} messages,
or an object with such a list under "messages".
"""


def register(sub) -> None:
    from maclaw_fast.progress import add_progress_args

    p = sub.add_parser(
        "maintain", help="run the maintenance pipeline when due (every 6 h) and print the report",
        description="Back up the store, archive least-used memories (GC), let faded memories "
                    "go dormant (decay), remove exact duplicates and, with an LLM, merge "
                    "near-duplicates, compress, promote and reflect; prints what each step did "
                    "as JSON. Runs when 6 h have passed since the last run (recorded in the "
                    "store), or at once with --now.", epilog=MAINTAIN_EXAMPLES)
    store_arg(p)
    add_llm_args(p)
    p.add_argument("--now", action="store_true",
                   help="run now even when the last run was less than 6 h ago")
    add_progress_args(p)
    p.set_defaults(func=cmd_maintain)

    p = sub.add_parser("gc", help="archive least-used memories below the GC threshold",
                       description="Move the least-used memories past the store's capacity or "
                                   "below the GC threshold to the archive (restorable) and "
                                   "print the report as JSON.",
                       epilog="examples:\n  maclaw-fast gc\n  maclaw-fast archive list\n")
    store_arg(p)
    add_progress_args(p)
    p.set_defaults(func=cmd_gc)

    p = sub.add_parser("archive", help="list or restore archived memories",
                       description="Archived memories are out of recall but kept on disk.",
                       epilog="examples:\n  maclaw-fast archive list --limit 10\n"
                              "  maclaw-fast archive restore 01J9Z3K4V6\n")
    asub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = asub.add_parser("list", help="archived memories, newest first",
                        description="Print id, category and text of archived memories.",
                        epilog="examples:\n  maclaw-fast archive list --limit 10\n")
    store_arg(q)
    q.add_argument("--limit", type=positive_int, default=50, metavar="N",
                   help="show at most N archived memories")
    q = asub.add_parser("restore", help="move an archived memory back",
                        description="Bring an archived memory back into recall (re-indexed, "
                                    "access count reset to 1).",
                        epilog="examples:\n  maclaw-fast archive restore 01J9Z3K4V6\n")
    store_arg(q)
    q.add_argument("id", help="the archived memory's id (see: maclaw-fast archive list)")
    p.set_defaults(func=cmd_archive)

    p = sub.add_parser("extract", help="extract knowledge from a conversation (needs an LLM)",
                       description="Ask the LLM for the lasting knowledge in a conversation "
                                   "and save it as memories; prints what was saved.",
                       epilog=EXTRACT_EXAMPLES)
    store_arg(p)
    add_llm_args(p)
    p.add_argument("--conversation", required=True, metavar="FILE",
                   help="JSON file: a list of {role, content} messages (or {messages: [...]})")
    p.add_argument("--project", metavar="NAME",
                   help="tag extracted project knowledge with this project")
    add_progress_args(p)
    p.set_defaults(func=cmd_extract)
