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


def _store_arg(p: argparse.ArgumentParser) -> None:
    from maclaw_fast.embedding.options import add_embedder_args

    p.add_argument("--store", default=str(DEFAULT_STORE), help="store directory")
    add_embedder_args(p)


def _open(args):
    from maclaw_fast import MemoryStore

    from maclaw_fast.embedding.options import embedder_from_args

    return MemoryStore.open(args.store, embedder=embedder_from_args(args))


def _print_hits(hits, out=print) -> None:
    for i, h in enumerate(hits, 1):
        b = h.breakdown
        text = h.entry.content.replace("\n", " ")
        out(f"  {i:2d}. [{h.entry.category}] {text[:90]}")
        out(f"      score {h.score:.3f} = recency {b.recency:.3f} + importance {b.importance:.3f}"
            f" + rel(bm25 {b.bm25:.3f}, cos {b.cos:.3f}, affinity {b.affinity:.1f},"
            f" graph {b.graph:.3f})  [{h.reason}]")


def cmd_demo(args) -> int:
    from maclaw_fast import MemoryStore
    from maclaw_fast.datafiles import load_json, sample_records
    from maclaw_kernels.warmup import warmup

    t0 = time.perf_counter()
    warmup()  # so the times below are the engine's, not numba compiling on a fresh machine
    print(f"numba kernels ready in {time.perf_counter() - t0:.1f} s (compiled once, then cached)")
    t0 = time.perf_counter()
    from maclaw_fast.embedding.options import embedder_from_args

    emb = embedder_from_args(args)
    store = MemoryStore.in_memory(embedder=emb)
    store.import_records(sample_records(time.time()))
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
        print(f"\nrecall {q['query']!r} (project={q.get('project')}): {len(hits)} hits in"
              f" {ms:.2f} ms ({kinds['self_identity']} self-identity, {kinds['user_fact']} user"
              f" facts leading, {len(hits) - sum(kinds.values())} ranked); first"
              f" {min(args.top, len(hits))}:")
        _print_hits(hits[: args.top])
    for module, func in (("maclaw_fast.tools.commands", "demo_route"),
                         ("maclaw_fast.workspace.commands", "demo_search")):
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
    with _open(args) as store:
        e = store.save(args.content, category=args.category, tags=args.tag or (),
                       pinned=args.pinned, thread=args.thread)
        print(json.dumps({"id": e.id, "category": e.category, "tags": list(e.tags)},
                         ensure_ascii=False))
    return 0


def cmd_recall(args) -> int:
    import msgspec

    with _open(args) as store:
        hits = store.recall(args.query, project=args.project, reinforce=not args.no_reinforce)
        if args.json:
            print(msgspec.json.encode(hits).decode())
        else:
            _print_hits(hits)
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
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm

    queries = _read_queries(args.input)
    with _open(args) as store:
        writer = None
        try:
            with tqdm(total=len(queries), unit="q", disable=args.quiet, file=sys.stderr) as bar:
                for start in range(0, len(queries), args.chunk):
                    part = queries[start:start + args.chunk]
                    table = store.recall_batch_arrow(part, projects=args.project,
                                                     reinforce=not args.no_reinforce)
                    idx = pa.compute.add(table.column("query_index"), pa.scalar(start, pa.int32()))
                    table = table.set_column(0, "query_index", idx)
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
    with _open(args) as store:
        print(f"imported {store.import_maclaw(args.path)} entries")
    return 0


def cmd_export(args) -> int:
    with _open(args) as store:
        print(f"exported {store.export_maclaw(args.path)} entries")
    return 0


def cmd_stats(args) -> int:
    with _open(args) as store:
        print(json.dumps(store.stats(), indent=2, ensure_ascii=False))
    return 0


def cmd_warmup(args) -> int:
    from maclaw_kernels.warmup import warmup

    t = time.perf_counter()
    names = warmup()
    print(f"compiled {len(names)} kernels in {time.perf_counter() - t:.1f} s")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def register(sub) -> None:
    p = sub.add_parser("demo", help="recall and route on the bundled sample data")
    from maclaw_fast.embedding.options import add_embedder_args

    add_embedder_args(p)
    p.add_argument("--queries", type=_positive, default=6)
    p.add_argument("--top", type=_positive, default=8)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("save", help="remember one memory")
    _store_arg(p)
    p.add_argument("content")
    p.add_argument("--category", required=True)
    p.add_argument("--tag", action="append")
    p.add_argument("--pinned", action="store_true")
    p.add_argument("--thread", help="conversation name: links this memory after the previous "
                                    "one saved with the same name")
    p.set_defaults(func=cmd_save)

    p = sub.add_parser("recall", help="recall memories for a query")
    _store_arg(p)
    p.add_argument("query")
    p.add_argument("--project")
    p.add_argument("--no-reinforce", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("recall-batch", help="recall many queries into a Parquet file")
    _store_arg(p)
    p.add_argument("--in", dest="input", required=True, help="queries.txt or queries.parquet")
    p.add_argument("--out", dest="output", required=True, help="hits.parquet")
    p.add_argument("--project")
    p.add_argument("--chunk", type=_positive, default=1024, help="queries per batch (>= 1)")
    p.add_argument("--no-reinforce", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_recall_batch)

    for name, func, what in (("import", cmd_import, "import a reference memories.json"),
                             ("export", cmd_export, "export to the reference memories.json")):
        p = sub.add_parser(name, help=what)
        _store_arg(p)
        p.add_argument("path")
        p.set_defaults(func=func)

    p = sub.add_parser("stats", help="store statistics")
    _store_arg(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("warmup", help="compile and cache every numba kernel")
    p.set_defaults(func=cmd_warmup)
