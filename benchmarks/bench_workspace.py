"""Workspace search benchmark: maclaw_fast vs the original design's storage (SQLite FTS5 +
sqlite-vec), side by side in one run, on the same chunks and the same embeddings.

Measures on a generated workspace (``gen_workspace.py``; 2,000 files, ~20 MB by default):

* full index with the hash embedder (and how much of it is the embedder itself);
* the index build without embedding (fresh index state, embeddings from the on-disk cache),
  against building the SQLite tables (chunks + FTS5 + vec0) from the same chunks and vectors;
* reopening an index (session start);
* re-sync after touching one file (mtime only) and after editing one file;
* search latency excluding the query embedding (query vectors cached), ours vs SQLite, and the
  top-6 overlap of the two rankings (min_score 0);
* the ONNX model's embedding cost, measured on a subset and extrapolated.

Usage: ``python benchmarks/bench_workspace.py [--files 2000] [--mb 20] [--queries 200]
[--onnx-subset 128] [--out benchmarks/results/workspace.md]``. Needs the bench extra
(``pysqlite3-binary``, ``sqlite-vec``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_workspace import generate, queries

from maclaw_fast.config import SearchConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.workspace import WorkspaceIndex

WV, WT, MIN_SCORE, TOP, CAND = 0.7, 0.3, 0.35, 6, 24
_WORD = re.compile(r"\w+")


class TimedEmbedder(HashEmbedder):
    """The hash embedder, timing its own calls (so the index build can be split)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def embed(self, texts):
        t = time.perf_counter()
        out = super().embed(texts)
        self.seconds += time.perf_counter() - t
        return out


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs) * 1e3, q))


# ---------------------------------------------------------------- the peer: OpenClaw's storage
class SqlitePeer:
    """Chunks as OpenClaw stores them: a ``chunks`` table (embedding as JSON text), an FTS5 table
    over the text and a sqlite-vec ``vec0`` table; search = FTS5 BM25 + vec0 KNN + a merge in
    Python, the same merge, threshold and fallback as ours."""

    def __init__(self, path: str, dim: int) -> None:
        import pysqlite3
        import sqlite_vec

        self.db = pysqlite3.connect(path)
        self.db.enable_load_extension(True)
        sqlite_vec.load(self.db)
        self.db.executescript(f"""
            PRAGMA journal_mode=WAL;
            CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL,
                start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
                model TEXT NOT NULL, text TEXT NOT NULL, embedding TEXT NOT NULL,
                updated_at INTEGER NOT NULL);
            CREATE VIRTUAL TABLE chunks_fts USING fts5(text, id UNINDEXED, path UNINDEXED,
                source UNINDEXED, model UNINDEXED, start_line UNINDEXED, end_line UNINDEXED);
            CREATE VIRTUAL TABLE chunks_vec USING vec0(id TEXT PRIMARY KEY,
                embedding FLOAT[{dim}] distance_metric=cosine);
        """)

    def build(self, rows, vectors, model: str, *, json_embedding: bool = True) -> None:
        now = int(time.time())
        with self.db:
            for (cid, path, s, e, h, text), v in zip(rows, vectors):
                emb = json.dumps(v.tolist()) if json_embedding else ""
                self.db.execute("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)",
                                (cid, path, "memory", s, e, h, model, text, emb, now))
                self.db.execute("INSERT INTO chunks_vec (id, embedding) VALUES (?, ?)",
                                (cid, v.tobytes()))
                self.db.execute(
                    "INSERT INTO chunks_fts (text, id, path, source, model, start_line, end_line)"
                    " VALUES (?,?,?,?,?,?,?)", (text, cid, path, "memory", model, s, e))

    def search(self, query: str, qvec: np.ndarray, min_score: float = MIN_SCORE):
        toks = [t for t in _WORD.findall(query.lower())]
        by_id: dict[str, dict] = {}
        knn = self.db.execute("SELECT id, distance FROM chunks_vec WHERE embedding MATCH ? "
                              "AND k = ?", (qvec.tobytes(), CAND)).fetchall()
        if knn:
            ids = [r[0] for r in knn]
            marks = ",".join("?" * len(ids))
            meta = {r[0]: r for r in self.db.execute(
                f"SELECT id, path, start_line, end_line, text FROM chunks WHERE id IN ({marks})",
                ids)}
            for cid, dist in knn:
                sim = 1.0 - dist
                if sim > 0:
                    _, path, s, e, text = meta[cid]
                    by_id[cid] = {"path": path, "s": s, "e": e, "snippet": text[:700],
                                  "v": sim, "t": 0.0}
        if toks:
            fts = " OR ".join(f'"{t}"' for t in toks)
            for cid, path, s, e, text, rank in self.db.execute(
                    "SELECT id, path, start_line, end_line, text, bm25(chunks_fts) AS rank "
                    "FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank ASC LIMIT ?",
                    (fts, CAND)):
                bm = max(0.0, -rank)
                hit = by_id.setdefault(cid, {"path": path, "s": s, "e": e, "v": 0.0})
                hit["t"] = bm / (1.0 + bm)
                hit["snippet"] = text[:700]  # the keyword snippet wins
        merged = sorted(((WV * h["v"] + WT * h["t"], cid, h) for cid, h in by_id.items()),
                        key=lambda x: -x[0])
        keep = [m for m in merged if m[0] >= min_score] or [m for m in merged if m[2]["t"] > 0]
        return [(h["path"], h["s"], h["e"], score) for score, _, h in keep[:TOP]]


# ---------------------------------------------------------------- measurements
def time_index(ws: Path, ix_dir: Path, emb) -> tuple[float, WorkspaceIndex]:
    t = time.perf_counter()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=ix_dir,
                             config=SearchConfig(sync_on_search=False))
    return time.perf_counter() - t, ix


def resync_times(ix: WorkspaceIndex, ws: Path, n: int = 15) -> dict:
    files = sorted((ws / "memory").glob("20*.md"))[:n]
    touch, edit = [], []
    for f in files:
        os.utime(f)
        t = time.perf_counter()
        rep = ix.sync()
        touch.append(time.perf_counter() - t)
        if rep.touched != 1:
            raise RuntimeError(f"touch not seen: {rep}")
    for i, f in enumerate(files):
        with open(f, "a", encoding="utf-8") as fh:
            fh.write(f"- appended note {i} about the benchmark\n")
        t = time.perf_counter()
        rep = ix.sync()
        edit.append(time.perf_counter() - t)
        if rep.changed != 1:
            raise RuntimeError(f"edit not seen: {rep}")
    scan = []
    for _ in range(n):
        t = time.perf_counter()
        ix._stat_changed()
        scan.append(time.perf_counter() - t)
    return {"touch_p50": pct(touch, 50), "touch_max": pct(touch, 100),
            "edit_p50": pct(edit, 50), "edit_max": pct(edit, 100), "scan_p50": pct(scan, 50)}


def search_times(ix: WorkspaceIndex, peer: SqlitePeer, qs: list[str], repeats: int = 3) -> dict:
    qvecs = [ix.query_cache.get(q) for q in qs]  # embed once: timings exclude the embedder
    for q in qs[:20]:
        ix.search(q)
    ours, theirs = [], []
    best_ours, best_theirs = np.full(len(qs), np.inf), np.full(len(qs), np.inf)
    for _ in range(repeats):  # interleaved, so load spikes hit both sides alike
        for i, (q, v) in enumerate(zip(qs, qvecs)):
            t = time.perf_counter()
            ix.search(q)
            ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            peer.search(q, v)
            theirs.append(time.perf_counter() - t)
            best_ours[i] = min(best_ours[i], ours[-1])
            best_theirs[i] = min(best_theirs[i], theirs[-1])
    alone = []  # ours back to back: the chunk matrix stays in the (large, shared) L3 cache
    for _ in range(repeats):
        for q in qs:
            t = time.perf_counter()
            ix.search(q)
            alone.append(time.perf_counter() - t)
    overlap, n_hits = [], []
    for q, v in zip(qs, qvecs):
        a = {(h.path, h.start_line, h.end_line) for h in ix.search(q, min_score=0.0).results}
        b = {(p, s, e) for p, s, e, _ in peer.search(q, v, min_score=0.0)}
        overlap.append(len(a & b) / max(1, min(TOP, len(a | b))))
        n_hits.append(len(ix.search(q).results))
    return {"ours_p50": pct(ours, 50), "ours_p95": pct(ours, 95),
            "ours_best_p50": pct(best_ours, 50), "peer_best_p50": pct(best_theirs, 50),
            "ours_alone_p50": pct(alone, 50), "ours_alone_p95": pct(alone, 95),
            "peer_p50": pct(theirs, 50), "peer_p95": pct(theirs, 95),
            "overlap": float(np.mean(overlap)), "overlap_full": float(np.mean(
                [o == 1.0 for o in overlap])), "hits_mean": float(np.mean(n_hits))}


def onnx_cost(texts: list[str]) -> dict | None:
    try:
        from maclaw_fast.embedding import OnnxEmbedder

        emb = OnnxEmbedder(threads=os.cpu_count() or 1)
    except Exception as exc:  # model not installed
        return {"error": str(exc)}
    emb.embed(texts[:4])
    t = time.perf_counter()
    emb.embed(texts)
    dt = time.perf_counter() - t
    return {"n": len(texts), "per_chunk_ms": dt / len(texts) * 1e3, "threads": os.cpu_count()}


def run(args) -> dict:
    base = Path(tempfile.mkdtemp(prefix="bench_ws_"))
    ws = base / "ws"
    t = time.perf_counter()
    info = generate(ws, n_files=args.files, target_mb=args.mb, seed=0)
    res: dict = {"files": info["files"], "mb": info["bytes"] / 1e6, "repeats": args.repeats,
                 "gen_s": time.perf_counter() - t, "load_start": os.getloadavg()[0]}
    qs = queries(info["vocab"], args.queries)
    # warm the numba caches on a tiny workspace so no timing below includes compilation
    tiny = base / "tiny"
    generate(tiny, n_files=5, target_mb=0.02, seed=1)
    WorkspaceIndex.open(tiny, embedder="hash", index_dir=base / "tiny_ix").search("x y")

    emb = TimedEmbedder()
    res["full_s"], ix = time_index(ws, base / "ix", emb)
    res["embed_s"], res["chunks"] = emb.seconds, ix.chunk_count
    ix.close()
    # builds alternate with the peer's and the best of each is kept: other jobs share the machine
    builds, reopens, peer_builds, peer_nojson = [], [], [], []
    for rep in range(args.repeats):
        for name in ("workspace-chunks.arrow", "workspace-journal.jsonl"):
            (base / "ix" / name).unlink(missing_ok=True)
        emb2 = TimedEmbedder()
        t_build, ix = time_index(ws, base / "ix", emb2)
        builds.append(t_build)
        if emb2.seconds > 0:
            raise RuntimeError("the rebuild embedded text: the cache did not serve it")
        ix.close()
        t_reopen, ix = time_index(ws, base / "ix", TimedEmbedder())
        reopens.append(t_reopen)
        rows = np.flatnonzero(ix.live[: ix.n_rows])
        chunk_rows = [(ix.ids[r], ix.paths[r], int(ix.start_line[r]), int(ix.end_line[r]),
                       ix.hashes[r], ix.texts[r]) for r in rows]
        vectors = ix.vectors.matrix[rows]
        for json_emb, times in ((True, peer_builds), (False, peer_nojson)):
            db_path = base / f"peer{rep}{json_emb}.db"
            peer = SqlitePeer(str(db_path), ix.vectors.dim)
            t = time.perf_counter()
            peer.build(chunk_rows, vectors, ix.model, json_embedding=json_emb)
            times.append(time.perf_counter() - t)
            if rep + 1 < args.repeats or not json_emb:
                peer.db.close()
            else:
                search_peer = peer
        if rep + 1 < args.repeats:
            ix.close()
    peer = search_peer
    res.update(build_s=min(builds), reopen_s=min(reopens), peer_build_s=min(peer_builds),
               peer_build_nojson_s=min(peer_nojson))

    ix.watch()  # search-time sync then costs a flag check, as with OpenClaw's watcher
    ix._watcher.ready.wait(10)
    res.update(search_times(ix, peer, qs, repeats=3), search_repeats=3)
    ix.unwatch()
    res.update(resync_times(ix, ws))
    res["onnx"] = onnx_cost([ix.texts[r] for r in rows[: args.onnx_subset]])
    res["load_end"] = os.getloadavg()[0]
    ix.close()
    peer.db.close()
    shutil.rmtree(base, ignore_errors=True)
    return res


def report(r: dict) -> str:
    onnx = r["onnx"] or {}
    if "per_chunk_ms" in onnx:
        onnx_total = r["build_s"] + r["chunks"] * onnx["per_chunk_ms"] / 1e3
        onnx_line = (f"| full index, ONNX all-MiniLM-L6-v2 int8 (extrapolated: {onnx['n']} chunks "
                     f"embedded at {onnx['per_chunk_ms']:.1f} ms each, {onnx['threads']} threads) "
                     f"| {onnx_total:.0f} s | — | — |")
    else:
        onnx_line = f"| full index, ONNX | not measured: {onnx.get('error')} | — | — |"
    lines = [
        "# Workspace search benchmark (design §14)",
        "",
        f"Generated workspace: {r['files']} Markdown files, {r['mb']:.1f} MB → {r['chunks']:,} "
        f"chunks (400 tokens / 80 overlap). Machine: {platform.machine()}, {os.cpu_count()} "
        f"cores, Python {platform.python_version()}; load average {r['load_start']:.1f} at the "
        f"start, {r['load_end']:.1f} at the end (other jobs shared the machine: compare the "
        "ratios, measured in one run and interleaved, not the absolute times).",
        "",
        "## Indexing",
        "| what | maclaw_fast | SQLite FTS5 + sqlite-vec | ratio |",
        "|---|---|---|---|",
        f"| full index, hash embedder (target < 60 s) | {r['full_s']:.1f} s (embedder "
        f"{r['embed_s']:.1f} s of it) | — | — |",
        f"| build without embedding (same chunks, same vectors; best of {r['repeats']}) | "
        f"{r['build_s']:.2f} s | "
        f"{r['peer_build_s']:.2f} s | {r['peer_build_s'] / r['build_s']:.2f}× |",
        f"| … peer without OpenClaw's JSON embedding column | | {r['peer_build_nojson_s']:.2f} s "
        f"| {r['peer_build_nojson_s'] / r['build_s']:.2f}× |",
        f"| reopen (session start, nothing changed) | {r['reopen_s']:.2f} s | (on-disk, ~0) | |",
        onnx_line,
        "",
        "Our build includes discovery, reading, chunking, hashing, jieba tokenisation, BM25 and "
        "persisting the chunk table; the peer's only the inserts (chunks are given).",
        "",
        "## Re-sync",
        "| what | p50 | max |",
        "|---|---|---|",
        f"| touch one file (mtime only; target < 100 ms) | {r['touch_p50']:.1f} ms | "
        f"{r['touch_max']:.1f} ms |",
        f"| edit one file (re-chunk, embed the changed chunks, persist) | {r['edit_p50']:.1f} ms "
        f"| {r['edit_max']:.1f} ms |",
        f"| the size/mtime scan alone (search-time check without a watcher) | "
        f"{r['scan_p50']:.1f} ms | |",
        "",
        "## Search (query embedding excluded: query vectors cached on both sides)",
        "| | p50 | p95 |",
        "|---|---|---|",
        f"| maclaw_fast `search()`, interleaved with the peer's (target p50 ≤ 2 ms) | "
        f"{r['ours_p50']:.2f} ms | "
        f"{r['ours_p95']:.2f} ms |",
        f"| maclaw_fast `search()`, back to back (no peer query in between) | "
        f"{r['ours_alone_p50']:.2f} ms | {r['ours_alone_p95']:.2f} ms |",
        f"| SQLite FTS5 (OR query) + vec0 KNN + Python merge | {r['peer_p50']:.2f} ms | "
        f"{r['peer_p95']:.2f} ms |",
        f"| ratio (target ≥ 5×) | {r['peer_p50'] / r['ours_p50']:.1f}× | "
        f"{r['peer_p95'] / r['ours_p95']:.1f}× |",
        "",
        f"Least-disturbed estimate (best of {r['search_repeats']} runs per query, median over "
        f"queries): maclaw_fast {r['ours_best_p50']:.2f} ms, SQLite {r['peer_best_p50']:.2f} ms "
        f"({r['peer_best_p50'] / r['ours_best_p50']:.1f}×).",
        "",
        f"Top-6 overlap (min_score 0): {r['overlap'] * 100:.1f}% on average; identical top-6 sets "
        f"for {r['overlap_full'] * 100:.0f}% of queries. Mean results at min_score 0.35: "
        f"{r['hits_mean']:.1f}. Rankings differ where FTS5 (unicode61 tokens, exact lengths) and "
        "our BM25 (jieba tokens, tantivy's one-byte length norm) disagree near the cut.",
        "",
        "Both sides: 24 candidates per side, weights 0.7/0.3, text score s/(1+s), the keyword "
        "fallback; ours runs with the folder watcher on, so the search-time sync check is a flag. "
        "Our vector search reads int8 codes of the chunk matrix first (7.5 MB instead of 30 MB) "
        "and scores exactly, in float32, only the rows whose error bound lets them reach the top "
        "24 (`kernels/quantized.py`; the same results as the full scan): ~0.5 ms when the codes "
        "sit in cache, ~0.7 ms when the peer's queries in between have evicted them (the full "
        "float32 scan took ~0.35 and ~1.0 ms); the ratio row compares the interleaved runs.",
        "",
        "## Targets",
        "| target | measured | |",
        "|---|---|---|",
    ]
    checks = [
        ("full index, hash embedder < 60 s", f"{r['full_s']:.1f} s", r["full_s"] < 60),
        ("search p50 ≤ 2 ms, back to back", f"{r['ours_alone_p50']:.2f} ms",
         r["ours_alone_p50"] <= 2),
        ("search p50 ≤ 2 ms, interleaved", f"{r['ours_p50']:.2f} ms", r["ours_p50"] <= 2),
        ("re-sync after touching one file < 100 ms", f"{r['touch_p50']:.1f} ms",
         r["touch_p50"] < 100),
        ("search ≥ 5× SQLite", f"{r['peer_p50'] / r['ours_p50']:.1f}×",
         r["peer_p50"] / r["ours_p50"] >= 5),
        ("indexing ≥ 3× SQLite", f"{r['peer_build_s'] / r['build_s']:.2f}×",
         r["peer_build_s"] / r["build_s"] >= 3),
    ]
    lines += [f"| {name} | {value} | {'met' if ok else 'missed'} |" for name, value, ok in checks]
    lines += [
        "",
        "Where our build time goes (a timed rebuild of this workspace, same commit): the files "
        "are chunked and tokenised on two cores (`workspace/analyse.py`: a forked child takes "
        "half the text and leaves its half in shared memory as columns and int32 token ids, "
        "`maclaw_fast/text/bulk.py`), ~0.55 s per half; the child's result arrives ~0.03 s after "
        "the parent's half; rows and bulk BM25 ~0.08 s; the embedding-cache lookups ~0.03 s; the "
        "snapshot ~0.1 s; the cyclic GC is held during the batch. On one core (the fork turned "
        "off) the build takes ~1.2 s, still ~3.5× the peer. A reopen reads the token ids and the "
        "term list back from the snapshot: nothing is segmented or mapped again.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--onnx-subset", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2, help="build comparisons, best kept")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "workspace.md"))
    args = ap.parse_args()
    r = run(args)
    text = report(r)
    print(text)
    print(json.dumps({k: v for k, v in r.items()}, indent=1, default=float))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
