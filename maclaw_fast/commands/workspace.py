"""Workspace subcommands of ``maclaw-fast``: ``index`` and ``search``, plus the demo section.

Heavy modules (numba kernels, tantivy, onnxruntime) load inside the handlers so ``--help`` stays
fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from maclaw_fast.commands.memory import positive_int, query_text, unit_float


def _common(p: argparse.ArgumentParser) -> None:
    from maclaw_fast.embedding.options import add_embedder_args

    p.add_argument("--workspace", required=True, metavar="DIR",
                   help="workspace folder (MEMORY.md, memory/)")
    add_embedder_args(p)
    p.add_argument("--index-dir", default=None, metavar="DIR",
                   help="index state folder (default: a folder of the workspace's own under "
                        "$MACLAW_HOME/workspaces, nothing written into the workspace; "
                        "WORKSPACE/.maclaw where an index was made there before)")


def _open(args, *, sync: bool = True):
    from maclaw_fast.embedding.options import embedder_from_args
    from maclaw_fast.workspace.index import WorkspaceIndex
    from maclaw_fast.workspace.location import default_index_dir

    emb = embedder_from_args(args)
    index_dir = args.index_dir or default_index_dir(args.workspace)
    return WorkspaceIndex.open(args.workspace, embedder=emb, index_dir=index_dir, sync=sync)


def _print_status(st, out=print) -> None:
    out(f"workspace {st.workspace}: {st.files} files, {st.chunks} chunks, mode {st.mode}, "
        f"model {st.model or 'none'}" + (f"; {st.last_error}" if st.last_error else ""))


SYNC_UNITS = {"reading files": "files", "chunking files": "files", "embedding chunks": "chunks"}


def cmd_index(args) -> int:
    from maclaw_fast import progress

    t0 = time.perf_counter()
    with progress.activity(args, "opening the index"):
        ix = _open(args, sync=False)
    report, close = progress.counter(args, "index", units=SYNC_UNITS)
    try:
        rep = ix.sync(force=args.force, progress=report)
    finally:
        close()
    print(f"synced in {time.perf_counter() - t0:.2f} s: +{rep.added} files, ~{rep.changed} changed,"
          f" -{rep.removed} removed; {rep.chunks_added} chunks added, {rep.embedded} embedded")
    _print_status(ix.status())
    if not args.watch:
        ix.close()
        return 0
    w = ix.watch()
    print(f"watching (debounce {w.debounce_s:g} s); Ctrl-C to stop")
    seen = 0
    try:
        while True:
            time.sleep(0.5)
            if w.syncs != seen and w.last_report is not None:
                seen = w.syncs
                r = w.last_report
                if r.added or r.changed or r.removed:
                    print(f"sync: +{r.added} ~{r.changed} -{r.removed} files, "
                          f"{r.chunks_added} chunks added in {r.seconds * 1e3:.0f} ms")
    finally:
        ix.close()


def format_hits(resp, out=print) -> None:
    """Print a search response for people."""
    notes = [f"mode {resp.mode}"]
    if resp.fallback:
        notes.append("nothing passed min_score: keyword matches shown")
    if resp.degraded:
        notes.append(resp.degraded)
    out(f"{len(resp.results)} result(s) for {resp.query!r} ({'; '.join(notes)})")
    if not resp.results and resp.reason:
        out(f"  {resp.reason}")
    from maclaw_fast.commands.display import one_line

    for i, h in enumerate(resp.results, 1):
        first = one_line(h.snippet, 110)
        out(f"  {i}. {one_line(h.citation)}  score {h.score:.3f} (vector {h.vector_score:.3f}, "
            f"text {h.text_score:.3f})")
        out(f"     {first}")


def cmd_search(args) -> int:
    import msgspec

    from maclaw_fast import progress

    with progress.activity(args, "opening the index"):
        ix = _open(args, sync=False)
    report, close = progress.counter(args, "index", units=SYNC_UNITS)
    try:
        ix.sync(progress=report)
    finally:
        close()
    try:
        resp = ix.search(args.query, max_results=args.max_results, min_score=args.min_score)
        if args.json:
            out = msgspec.to_builtins(resp)
            out["status"] = msgspec.to_builtins(ix.status())
            json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
            sys.stdout.write("\n")
        else:
            format_hits(resp)
    finally:
        ix.close()
    return 0


DEMO_QUERIES = ("deploy script missing env vars", "花生过敏", "who is on call in December",
                "zebra")


def demo_search(out=print, *, embedder="auto", queries=DEMO_QUERIES) -> None:
    """Show a workspace search over the bundled sample workspace (``data/workspace``).

    The index goes to a temporary folder, so the bundled data stays untouched.

    Examples
    --------
    >>> demo_search(out=lambda s: None, embedder="hash")
    """
    import tempfile

    from maclaw_fast.datafiles import data_dir
    from maclaw_fast.workspace.index import WorkspaceIndex

    ws = data_dir() / "workspace"
    if not ws.is_dir():
        out(f"workspace search: no sample workspace at {ws}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        from maclaw_fast import progress

        t0 = time.perf_counter()
        ix = WorkspaceIndex.open(ws, embedder=embedder, index_dir=tmp, sync=False)
        report, close = progress.counter(None, "indexing the sample workspace",
                                         units=SYNC_UNITS)
        try:
            ix.sync(progress=report)
        finally:
            close()
        st = ix.status()
        out(f"\nworkspace search over {ws.name}/: {st.files} Markdown files → {st.chunks} chunks "
            f"(mode {st.mode}, model {st.model or 'none'}), indexed in "
            f"{time.perf_counter() - t0:.2f} s")
        for q in queries:
            t = time.perf_counter()
            resp = ix.search(q)
            ms = (time.perf_counter() - t) * 1e3
            format_hits(resp, out=out)
            out(f"     ({ms:.1f} ms)")
        ix.close()


INDEX_EXAMPLES = """\
examples:
  maclaw-fast index --workspace ~/agent                  index MEMORY.md and memory/*.md
  maclaw-fast index --workspace ~/agent --watch          keep the index in step with edits
  maclaw-fast index --workspace ~/agent --force --progress

The index lives under $MACLAW_HOME/workspaces (default ~/.maclaw_fast/workspaces), not in the
workspace, or in --index-dir; unchanged files are skipped.
"""

SEARCH_EXAMPLES = """\
examples:
  maclaw-fast search "deploy script" --workspace ~/agent
  maclaw-fast search "花生过敏" --workspace ~/agent --max-results 3 --json
"""


def register(sub) -> None:
    from maclaw_fast.progress import add_progress_args

    p = sub.add_parser("index", help="index (sync) a workspace's Markdown memory files",
                       description="Bring the workspace index up to date: read new and "
                                   "changed Markdown files, chunk, tokenise and embed them.",
                       epilog=INDEX_EXAMPLES)
    _common(p)
    p.add_argument("--watch", action="store_true",
                   help="keep watching the files and re-sync on change (Ctrl-C stops)")
    p.add_argument("--force", action="store_true",
                   help="re-read and re-chunk every file, changed or not")
    add_progress_args(p)
    p.set_defaults(func=cmd_index)
    p = sub.add_parser("search", help="search a workspace's Markdown memory files",
                       description="Hybrid (BM25 + vector) search over the workspace's chunks; "
                                   "the index is synced first.", epilog=SEARCH_EXAMPLES)
    p.add_argument("query", type=query_text, help="what to search for")
    _common(p)
    p.add_argument("--json", action="store_true",
                   help="print the response and the index status as JSON")
    p.add_argument("--max-results", type=positive_int, default=None, metavar="N",
                   help="results to return (default: the search configuration's)")
    p.add_argument("--min-score", type=unit_float, default=None, metavar="SCORE",
                   help="drop results scoring below this, 0..1 (default: the search "
                        "configuration's)")
    add_progress_args(p)
    p.set_defaults(func=cmd_search)
