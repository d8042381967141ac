"""Memory subcommands of ``maclaw-fast``: demo, save, recall, recall-batch, import, export,
stats, warmup."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

DEFAULT_STORE = Path(os.environ.get("MACLAW_HOME", Path.home() / ".maclaw_fast")) / "memory"


def store_option(p: argparse.ArgumentParser, *, create: bool = True) -> None:
    """``--store DIR`` alone (commands that open a store with the model it was made with)."""
    p.add_argument("--store", default=str(DEFAULT_STORE), metavar="DIR",
                   help="memory store directory" + (", created when absent" if create else ""))


def store_arg(p: argparse.ArgumentParser) -> None:
    from maclaw_fast.embedding.options import add_embedder_args

    store_option(p)
    add_embedder_args(p)


def open_store(args, embedder=None, *, read_only: bool = False):
    """The store of ``--store`` with ``--embedder`` (or ``embedder`` when given); ``read_only``
    (or ``--read-only``): read it as it is, even while a server holds it."""
    from maclaw_fast import MemoryStore
    from maclaw_fast.embedding.options import embedder_from_args

    emb = embedder_from_args(args) if embedder is None else embedder
    read_only = read_only or getattr(args, "read_only", False)
    return MemoryStore.open(args.store, embedder=emb, read_only=read_only)


def _open_as_stored(args):
    """The store read-only with the model its vectors were made with (nothing re-embedded,
    nothing written: it works while another process holds the store)."""
    from maclaw_fast.commands.report import store_embedder
    from maclaw_fast.errors import ValidationError

    if not Path(args.store).is_dir():
        raise ValidationError(f"no store at {args.store} (--store names its directory)")
    return open_store(args, embedder=store_embedder(args.store) or "none", read_only=True)


LEADING = ("self_identity", "user_fact")  # recall's always-on block, ahead of the ranking


def split_hits(hits, limit: int | None = None):
    """``(leading, ranked)``: the always-on block (self-identity, user facts) recall puts
    first whatever their scores, and the ranked hits, at most ``limit`` of them."""
    n = 0
    while n < len(hits) and hits[n].reason in LEADING:
        n += 1
    ranked = hits[n:]
    return hits[:n], ranked if limit is None else ranked[:limit]


def _print_hits(hits, out=print, limit: int | None = None) -> None:
    from maclaw_fast.commands.display import one_line

    leading, ranked = split_hits(hits, limit)
    if leading:
        out("  always recalled (self-identity and user facts, not ranked):")
        for h in leading:
            out(f"    - [{h.entry.category}] {one_line(h.entry.content, 90)}")
    if ranked:
        out("  ranked, best first:")
    for i, h in enumerate(ranked, 1):
        b = h.breakdown
        why = "" if h.reason == "scored" else f"  ({h.reason})"
        out(f"  {i:2d}. [{h.entry.category}] {one_line(h.entry.content, 90)}")
        # the parts, not a sum: score = recency + importance + 10 x relevance, and relevance
        # weighs bm25 and cos (docs/design.md)
        out(f"      score {h.score:.3f} | recency {b.recency:.3f} | importance {b.importance:.3f}"
            f" | relevance: bm25 {b.bm25:.3f}, cos {b.cos:.3f}, project {b.affinity:.1f},"
            f" graph {b.graph:.3f}{why}")


def compile_kernels(args, parts) -> None:
    """Compile (or load from the disk cache) the kernels of ``parts``, each part a timed
    status line while progress shows (the per-kernel notices then stay quiet: the line says
    it), else the warmup's own lines."""
    from maclaw_fast import progress
    from maclaw_fast.warmup import warmup

    if not progress.enabled(args):
        warmup(parts)
        return
    quiet = os.environ.get("MACLAW_QUIET_COMPILE")
    os.environ["MACLAW_QUIET_COMPILE"] = "1"
    try:
        for part in parts:
            with progress.activity(args, f"compiling the {part} kernels (first run only: "
                                         "cached on disk)", delay=0):
                warmup((part,), out=None)
    finally:
        if quiet is None:
            os.environ.pop("MACLAW_QUIET_COMPILE", None)
        else:
            os.environ["MACLAW_QUIET_COMPILE"] = quiet


def cmd_demo(args) -> int:
    from maclaw_fast import MemoryStore, progress
    from maclaw_fast.datafiles import load_json, sample_records
    from maclaw_fast.warmup import PARTS

    t0 = time.perf_counter()
    # every part up front, each with its line: the times below are then the engine's, and no
    # later step compiles in silence
    compile_kernels(args, PARTS)
    print(f"numba kernels ready in {time.perf_counter() - t0:.1f} s (compiled once, then cached)",
          flush=True)
    t0 = time.perf_counter()
    from maclaw_fast.embedding.options import embedder_from_args

    emb = embedder_from_args(args)
    store = MemoryStore.in_memory(embedder=emb)
    report, close = progress.counter(args, "demo store", unit="memories")
    try:
        store.import_records(sample_records(time.time()), progress=report)
    finally:
        close()
    print(f"demo store: {len(store)} memories from data/memories.json "
          f"(embedder {store.embedder.fingerprint if store.embedder else 'none'}), "
          f"built in {time.perf_counter() - t0:.2f} s")
    print("recall() leads with at most 3 self-identity entries and the user facts relevant to"
          " the query, then ranks everything else; below, the first hits it returns.")
    for q in load_json("demo_queries.json")[: args.queries]:
        t = time.perf_counter()
        hits = store.recall(q["query"], project=q.get("project"), reinforce=False)
        ms = (time.perf_counter() - t) * 1e3
        kinds = {r: sum(h.reason == r for h in hits) for r in ("self_identity", "user_fact")}
        n_ranked = len(split_hits(hits)[1])
        print(f"\nrecall {q['query']!r} (project={q.get('project')}): {len(hits)} hits in"
              f" {ms:.2f} ms ({kinds['self_identity']} self-identity, {kinds['user_fact']} user"
              f" facts leading, {n_ranked} ranked; the first {min(args.top, n_ranked)} shown):")
        _print_hits(hits, limit=args.top)
    for module, func in (("maclaw_fast.commands.tools", "demo_route"),
                         ("maclaw_fast.commands.workspace", "demo_search")):
        try:
            mod = __import__(module, fromlist=[func])
        except ModuleNotFoundError:
            continue
        if hasattr(mod, func):
            print()
            getattr(mod, func)(print, embedder=emb)
    store.close()
    return 0


def cmd_save(args) -> int:
    from maclaw_fast import progress

    with progress.activity(args, "saving (the model loads on first use)"), \
            open_store(args) as store:
        e = store.save(args.content, category=args.category, tags=args.tag or (),
                       pinned=args.pinned, thread=args.thread)
    print(json.dumps({"id": e.id, "category": e.category, "tags": list(e.tags)},
                     ensure_ascii=False))
    return 0


def cmd_recall(args) -> int:
    import msgspec

    from maclaw_fast import progress

    with progress.activity(args, "recalling (the model loads on first use)"), \
            open_store(args) as store:
        if args.dynamic or args.category:
            hits = store.recall_dynamic(args.query, category=args.category,
                                        project=args.project, reinforce=not args.no_reinforce)
        else:
            hits = store.recall(args.query, project=args.project,
                                reinforce=not args.no_reinforce)
    leading, ranked = split_hits(hits, args.max)
    if args.json:
        print(msgspec.json.encode([*leading, *ranked]).decode())
    elif not hits:
        print("no memories matched", file=sys.stderr)
    else:
        _print_hits(hits, limit=args.max)
    return 0


def _read_queries(path: str) -> list[str]:
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        col = "query" if "query" in table.column_names else table.column_names[0]
        return [str(x) for x in table.column(col).to_pylist()]
    from maclaw_fast.errors import ValidationError

    try:
        with open(path, encoding="utf-8") as fh:
            return [line.rstrip("\n") for line in fh if line.strip()]
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}")\
            from None


def cmd_recall_batch(args) -> int:
    import numpy as np
    import pyarrow.parquet as pq

    from maclaw_fast import progress
    from maclaw_fast.persist.arrow_numpy import arrow_of, numpy_of

    queries = _read_queries(args.input)
    with open_store(args) as store:
        writer = None
        try:
            with progress.bar(args, len(queries), "recall-batch", unit="q") as bar:
                for start in range(0, len(queries), args.chunk):
                    part = queries[start:start + args.chunk]
                    table = store.recall_batch_arrow(part, projects=args.project,
                                                     reinforce=not args.no_reinforce)
                    idx = numpy_of(table.column("query_index")) + np.int32(start)
                    table = table.set_column(0, "query_index", arrow_of(idx))
                    if writer is None:
                        writer = pq.ParquetWriter(args.output, table.schema)
                    writer.write_table(table)
                    bar.update(len(part))
        finally:
            if writer is not None:
                writer.close()
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_import(args) -> int:
    from maclaw_fast import progress

    report, close = progress.counter(args, "import", unit="memories")
    try:
        with progress.activity(args, "opening the store"):
            store = open_store(args)
        try:
            added = store.import_maclaw(args.path, progress=report)
        finally:
            close()
            with progress.activity(args, "writing the store"):
                store.close()
    finally:
        close()
    print(f"imported {added} entries")
    return 0


def cmd_export(args) -> int:
    from maclaw_fast import progress

    with progress.activity(args, "exporting"), _open_as_stored(args) as store:
        n = store.export_maclaw(args.path)
    print(f"exported {n} entries")
    return 0


def cmd_stats(args) -> int:
    from maclaw_fast import progress
    from maclaw_fast.commands.report import format_report, store_report

    with progress.activity(args, "reading the store"), _open_as_stored(args) as store:
        report = store_report(store)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print("\n".join(format_report(report)))
    return 0


def cmd_recover(args) -> int:
    """Open a store that refuses to open (its journal lost or cut short) accepting the loss: the
    warnings say what may be lost, damaged files are kept aside, a fresh snapshot is written."""
    from maclaw_fast import MemoryStore
    from maclaw_fast.commands.report import store_embedder
    from maclaw_fast.errors import ValidationError

    if not Path(args.store).is_dir():
        raise ValidationError(f"no store at {args.store} (--store names its directory)")
    with MemoryStore.open(args.store, embedder=store_embedder(args.store) or "none",
                          recover=True) as store:
        store.flush()
        n = len(store)
    print(f"{args.store}: opened accepting any loss; {n} memories kept (warnings above name "
          "what may be lost and where damaged files were put)")
    return 0


def cmd_warmup(args) -> int:
    from maclaw_fast.warmup import PARTS

    t = time.perf_counter()
    compile_kernels(args, PARTS)
    print(f"compiled the {', '.join(PARTS)} kernels in {time.perf_counter() - t:.1f} s "
          "(cached on disk: later processes load them)")
    from maclaw_fast.embedding.e5 import prepare

    print(prepare(), flush=True)  # e5's onnxruntime graph, built once into the model cache
    return 0


def query_text(text: str) -> str:
    """A query or message argument: some text besides white space."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _bounded(text: str, cast, lo, hi, what: str):
    """``text`` as ``cast`` within ``lo..hi`` (``hi`` None: no upper bound), else an argparse
    error that says why."""
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
    return value


def unit_float(text: str) -> float:
    """A score bound in 0..1."""
    return _bounded(text, float, 0, 1, "a number")


def port_number(text: str) -> int:
    """A TCP port, 1..65535."""
    return _bounded(text, int, 1, 65535, "a port number")


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    return _bounded(text, int, 1, None, "an integer")


def _categories_help() -> str:
    from maclaw_fast.config import CATEGORY_ALIASES, CATEGORY_TABLE

    cats = ", ".join(CATEGORY_TABLE)
    aliases = ", ".join(f"{a}={c}" for a, c in CATEGORY_ALIASES.items())
    return f"one of: {cats} (aliases: {aliases})"


def _category_choices() -> list[str]:
    from maclaw_fast.config import CATEGORY_ALIASES, CATEGORY_TABLE

    return [*CATEGORY_TABLE, *CATEGORY_ALIASES]


SAVE_EXAMPLES = """\
examples:
  maclaw-fast save "deploy.sh needs AWS_REGION set" --category project_knowledge --tag atlas
  maclaw-fast save "Always answer in English" --category instruction --pinned
  maclaw-fast save "Lin asked about the Q3 report" --category conversation_summary \\
      --thread lin-2026-05
"""

RECALL_EXAMPLES = """\
examples:
  maclaw-fast recall "how do I deploy"
  maclaw-fast recall "deploy" --project atlas --max 5
  maclaw-fast recall "tea" --category preference --json
  maclaw-fast recall "what does Lin like" --dynamic --no-reinforce
"""

BATCH_EXAMPLES = """\
examples:
  maclaw-fast recall-batch --in queries.txt --out hits.parquet
  maclaw-fast recall-batch --in queries.parquet --out hits.parquet --chunk 256 --quiet

The output has one row per hit: query_index, rank, id, score and its parts.
"""

IMPORT_EXAMPLES = """\
examples:
  maclaw-fast import memories.json
  maclaw-fast import data/memories.json --store /tmp/demo --embedder e5 --progress

The file is a JSON array of memories with content and category (and optionally tags, pinned,
access_count, created_at/updated_at as RFC 3339 times, or age_hours: how many hours ago the
memory was made). Memories already in the store (same id or same content) are skipped; a bad
record stops the import before anything is added.
"""


def register(sub) -> None:
    from maclaw_fast.embedding.options import add_embedder_args
    from maclaw_fast.progress import add_progress_args

    p = sub.add_parser(
        "demo", help="recall and route on the bundled sample data",
        description="Build an in-memory store from data/memories.json, recall the sample "
                    "queries, route sample messages over data/tools.json and search the sample "
                    "workspace; nothing is written.",
        epilog="examples:\n  maclaw-fast demo\n  maclaw-fast demo --embedder hash --queries 3\n")
    add_embedder_args(p)
    p.add_argument("--queries", type=positive_int, default=6, metavar="N",
                   help="how many sample queries to recall")
    p.add_argument("--top", type=positive_int, default=8, metavar="N",
                   help="ranked hits shown per query (after the always-recalled block)")
    add_progress_args(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "save", help="remember one memory",
        description="Save one memory (an existing identical text is updated, not duplicated) "
                    "and print its id, category and tags as JSON.",
        epilog=SAVE_EXAMPLES)
    store_arg(p)
    p.add_argument("content", help="the text to remember")
    p.add_argument("--category", required=True, choices=_category_choices(),
                   metavar="CATEGORY", help=_categories_help())
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="a tag; repeat for several (--tag atlas --tag deploy); a project name "
                        "as a tag scopes project memories to that project")
    p.add_argument("--pinned", action="store_true",
                   help="never forgotten, archived or compressed")
    p.add_argument("--thread", metavar="NAME",
                   help="conversation name: links this memory after the previous one saved "
                        "with the same name")
    add_progress_args(p)
    p.set_defaults(func=cmd_save)

    p = sub.add_parser(
        "recall", help="recall memories for a query",
        description="The memories for a query, best first: self-identity and relevant user "
                    "facts lead, then every other memory by relevance, recency and importance.",
        epilog=RECALL_EXAMPLES)
    store_arg(p)
    p.add_argument("query", type=query_text, help="what to recall memories for")
    p.add_argument("--project", metavar="NAME",
                   help="only this project's project memories (global ones always count)")
    p.add_argument("--category", choices=_category_choices(), metavar="CATEGORY",
                   help="only memories of this category (implies --dynamic); "
                        + _categories_help())
    p.add_argument("--dynamic", action="store_true",
                   help="the agent tool's recall: up to 15 memories / 1500 tokens, user facts "
                        "ranked like any other memory (default: up to 20 / 2000 tokens, with "
                        "self-identity and user facts first)")
    p.add_argument("--max", type=positive_int, metavar="N",
                   help="show at most N ranked memories (the always-recalled self-identity and "
                        "user facts come on top)")
    p.add_argument("--read-only", action="store_true",
                   help="read the store as it is (works while a server holds it; no reinforcement)")
    p.add_argument("--no-reinforce", action="store_true",
                   help="look without strengthening the recalled memories")
    p.add_argument("--json", action="store_true",
                   help="print the hits (entry, score, score breakdown, reason) as JSON")
    add_progress_args(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("recall-batch", help="recall many queries into a Parquet file",
                       description="Recall every query of a file in batches and write all "
                                   "hits to one Parquet file.", epilog=BATCH_EXAMPLES)
    store_arg(p)
    p.add_argument("--in", dest="input", required=True, metavar="FILE",
                   help="queries: a text file (one per line) or a Parquet file (its 'query' "
                        "column, else its first)")
    p.add_argument("--out", dest="output", required=True, metavar="FILE",
                   help="Parquet file to write the hits to")
    p.add_argument("--project", metavar="NAME", help="project scope for every query")
    p.add_argument("--chunk", type=positive_int, default=1024, metavar="N",
                   help="queries recalled per batch: bigger is faster, smaller uses less "
                        "memory and updates the progress bar more often")
    p.add_argument("--no-reinforce", action="store_true",
                   help="look without strengthening the recalled memories")
    add_progress_args(p)
    p.set_defaults(func=cmd_recall_batch)

    p = sub.add_parser("import", help="import a memories.json (progress bar, age_hours)",
                       description="Add the memories of a JSON file to the store.",
                       epilog=IMPORT_EXAMPLES)
    store_arg(p)
    p.add_argument("path", help="the memories.json to import")
    add_progress_args(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", help="export every memory to a memories.json",
                       description="Write every memory (with its vector) to a JSON file in the "
                                   "format import reads; the store keeps its own model.",
                       epilog="examples:\n  maclaw-fast export backup.json\n")
    store_option(p, create=False)
    p.add_argument("path", help="the JSON file to write (replaced atomically)")
    add_progress_args(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "stats", help="what a store holds: model, counts, disk, maintenance, route log",
        description="Report the store's embedding model (read from the store), memories per "
                    "category and status, bytes on disk per file, the last maintenance run and "
                    "the route log's decisions.",
        epilog="examples:\n  maclaw-fast stats\n  maclaw-fast stats --store /tmp/demo --json\n")
    store_option(p, create=False)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_progress_args(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser(
        "recover", help="open a store whose journal was lost or cut short, accepting the loss",
        description="A store refuses to open when its journal does not reach its last snapshot "
                    "(deleted, emptied or damaged: what was saved since may be gone). This opens "
                    "it anyway, says what may be lost, keeps damaged files aside as "
                    "*.corrupt.<time> and writes a fresh snapshot.",
        epilog="examples:\n  maclaw-fast recover --store ~/.maclaw_fast/memory\n")
    store_option(p, create=False)
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("warmup", help="compile and cache every numba kernel",
                       description="Compile every numba kernel into the on-disk cache, so the "
                                   "first real call does not pay for it.",
                       epilog="examples:\n  maclaw-fast warmup\n")
    add_progress_args(p)
    p.set_defaults(func=cmd_warmup)
