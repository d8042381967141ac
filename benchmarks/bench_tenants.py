"""Many tenants in one process: N stores × M memories on disk, random recalls through a
StorePool, and what one open idle store costs.

    python benchmarks/bench_tenants.py                       # 10,000 stores × 500, pool 1,000
    python benchmarks/bench_tenants.py --stores 500 --pool 100 --recalls 2000   # a quick run

Stores are generated without a model: random unit vectors (384-d) and text drawn from a
Zipf-distributed synthetic vocabulary, written as snapshots through the persistence module, then
opened once as a store (which writes its ``terms.bin``). ``--templates`` distinct stores are
made and the others hard-link their files (a store never writes into a file in place: snapshots
and term files are replaced by rename), so 10,000 stores take ~150 MB instead of ~8 GB.

Figures, written to ``benchmarks/results/tenants.md`` (and printed):
- recall latency through the pool, p50/p99, for hits (store already open) and misses (opened on
  demand, the least recently used idle store closed first), with ``query_vector`` given (no
  embedding) and ``reinforce=False`` unless ``--reinforce``;
- RSS, open file descriptors (peak, sampled), opens per second;
- memory per open idle store: RSS growth while the pool fills, divided by the stores opened,
  beyond the vectors' own bytes; and a breakdown of one store by part;
- reopen + first recall of one store (``MemoryStore.open`` + ``recall``), p50/p99.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from maclaw_fast import MemoryStore, StorePool  # noqa: E402
from maclaw_fast.config import CATEGORIES, CATEGORY_TABLE  # noqa: E402
from maclaw_fast.embedding import HashEmbedder  # noqa: E402
from maclaw_fast.memory.footprint import PER_TERM, array_bytes  # noqa: E402
from maclaw_fast.persist.snapshot import SnapshotMeta, entries_table, write_snapshot  # noqa: E402
from maclaw_fast.records import Entry  # noqa: E402

DIM = 384
COPIED = ("snapshot.arrow", "terms.bin")


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def vocabulary(rng, size: int) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = set()
    while len(words) < size:
        n = int(rng.integers(3, 11))
        words.add("".join(rng.choice(letters, n)))
    return sorted(words)


def zipf_words(rng, words: list[str], n: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.2, n), len(words)) - 1
    return [words[i] for i in ranks]


def template(path: Path, rng, words, n_memories: int, embedder) -> None:
    """One store of ``n_memories`` written as a snapshot, then opened once as a store."""
    now = time.time()
    entries = []
    for i in range(n_memories):
        cat = CATEGORIES[int(rng.integers(1, len(CATEGORIES)))]  # no self_identity
        text = " ".join(zipf_words(rng, words, int(rng.integers(8, 30))))
        t = now - float(rng.uniform(0, 90 * 86400))
        entries.append(Entry(id=f"{int(t * 1e9)}-{i:04x}", content=f"{text} #{i}",
                             category=cat, tags=(f"p{int(rng.integers(0, 5))}",),
                             created_at=t, updated_at=t, access_count=int(rng.integers(1, 9)),
                             strength=1.0, status="active", scope=CATEGORY_TABLE[cat][1]))
    vecs = rng.standard_normal((n_memories, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    path.mkdir(parents=True)
    meta = SnapshotMeta(seq=0, fingerprint=embedder.fingerprint, dim=DIM)
    write_snapshot(path / "snapshot.arrow", entries_table(entries, vecs, DIM, meta))
    MemoryStore.open(path, embedder=embedder).close()  # validates it; writes terms.bin


def generate(root: Path, n_stores: int, n_templates: int, n_memories: int, words,
             embedder, seed: int) -> float:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    tdir = root / ".templates"
    for k in range(n_templates):
        template(tdir / f"t{k}", rng, words, n_memories, embedder)
    for s in range(n_stores):
        d = root / f"tenant{s:05d}"
        d.mkdir()
        src = tdir / f"t{s % n_templates}"
        for name in COPIED:
            os.link(src / name, d / name)
    return time.perf_counter() - t0


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values), q)) if len(values) else float("nan")


def ms(x: float) -> str:
    return f"{x * 1e3:.2f} ms"


def breakdown(store) -> dict[str, int]:
    """Bytes of one open store by part (arrays exactly, text and objects estimated)."""
    t, bm = store.table, store.bm25
    return {
        "vectors (384-d float32 + mask)": array_bytes(store.vectors),
        "BM25 mirror arrays": array_bytes(bm),
        "BM25 vocabulary (strings, dict, word table)": bm.vocab.resident_estimate(PER_TERM)
        + sum(a.nbytes for a in bm.vocab.term_arrays()),
        "entry columns (numeric)": array_bytes(t),
        "graph": array_bytes(store.graph),
        # a reopened store keeps its text packed (bytes + offsets) until a write
        "text (ids, content, tags; packed)" if t.is_packed else "text (content characters)":
        t.text_bytes(),
        "ids, dict entries, tuples (est.)": 0 if t.is_packed else t.n_rows * 400,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=500)
    ap.add_argument("--pool", type=int, default=1_000)
    ap.add_argument("--recalls", type=int, default=20_000)
    ap.add_argument("--templates", type=int, default=100)
    ap.add_argument("--reopens", type=int, default=300)
    ap.add_argument("--reinforce", action="store_true", help="recalls reinforce (write)")
    ap.add_argument("--root", default=None, help="where to generate (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated stores")
    ap.add_argument("--out", default=str(HERE / "results" / "tenants.md"))
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    import tempfile

    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="tenants-"))
    embedder = HashEmbedder(DIM)
    rng = np.random.default_rng(args.seed)
    words = vocabulary(rng, 30_000)
    lines = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    try:
        if not any(root.glob("tenant*")):
            took = generate(root, args.stores, args.templates, args.memories, words, embedder,
                            args.seed)
            say(f"generated {args.stores:,} stores × {args.memories} memories "
                f"({args.templates} distinct, hard-linked) in {took:.1f} s")
        names = sorted(p.name for p in root.glob("tenant*"))[: args.stores]
        du = sum(f.stat().st_size for f in (root / ".templates").rglob("*") if f.is_file())
        say(f"disk: {du / 2**20:.0f} MiB of distinct files")
        qrng = np.random.default_rng(args.seed + 1)
        queries = [" ".join(zipf_words(qrng, words, 3)) for _ in range(1024)]
        qvecs = qrng.standard_normal((1024, DIM)).astype(np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)

        # warm the kernels (and the tokenizer) on a throwaway copy
        warm = root / ".warm"
        shutil.copytree(root / names[0], warm)
        with MemoryStore.open(warm, embedder=embedder) as w:
            w.recall(queries[0], query_vector=qvecs[0], reinforce=False)
        shutil.rmtree(warm)
        gc.collect()

        # --- reopen + first recall, one store at a time (nothing else open)
        reopen, reopen_cpu, first, close = [], [], [], []
        for i in range(min(args.reopens, len(names))):
            name = names[(i * 7919) % len(names)]
            c0, t0 = time.thread_time(), time.perf_counter()
            s = MemoryStore.open(root / name, embedder=embedder)
            t1 = time.perf_counter()
            s.recall(queries[i % 1024], query_vector=qvecs[i % 1024], reinforce=False)
            t2, c2 = time.perf_counter(), time.thread_time()
            s.close()
            t3 = time.perf_counter()
            reopen.append(t2 - t0)
            reopen_cpu.append(c2 - c0)
            first.append(t2 - t1)
            close.append(t3 - t2)
        say(f"reopen + first recall ({len(reopen)} stores of {args.memories}): "
            f"p50 {ms(pct(reopen, 50))}, p99 {ms(pct(reopen, 99))}; CPU time p50 "
            f"{ms(pct(reopen_cpu, 50))} (the recall alone p50 {ms(pct(first, 50))}; "
            f"a clean close p50 {ms(pct(close, 50))})")
        gc.collect()

        # --- fill the pool: memory per open idle store
        pool = StorePool(root, max_open=args.pool, embedder=embedder)
        base_rss, base_fds = rss(), open_fds()
        fill = names[: args.pool]
        t0 = time.perf_counter()
        for i, name in enumerate(fill):
            pool.recall(name, queries[i % 1024], query_vector=qvecs[i % 1024], reinforce=False)
        fill_s = time.perf_counter() - t0
        gc.collect()
        full_rss, full_fds = rss(), open_fds()
        per_store = (full_rss - base_rss) / len(fill)
        vec_bytes = args.memories * DIM * 4
        say(f"pool filled with {len(fill):,} stores in {fill_s:.1f} s "
            f"({len(fill) / fill_s:,.0f} opens/s with a recall each)")
        say(f"memory per open idle store: {per_store / 2**20:.2f} MiB RSS, of which vectors "
            f"{vec_bytes / 2**20:.2f} MiB → {(per_store - vec_bytes) / 2**20:.2f} MiB beyond "
            f"them; fds per open store {(full_fds - base_fds) / len(fill):.2f}")
        with pool.store(fill[-1]) as s:
            parts = breakdown(s)
            estimate = s.resident_bytes()
        say("one open store by part (KiB): " + "; ".join(
            f"{k} {v / 1024:.0f}" for k, v in parts.items())
            + f" — StorePool's estimate {estimate / 1024:.0f}")

        # --- random recalls across every store
        rrng = np.random.default_rng(args.seed + 2)
        hits, misses, peak_fds, peak_rss = [], [], full_fds, full_rss
        hits_cpu, misses_cpu = [], []
        t0 = time.perf_counter()
        opens0 = pool.stats()["opens"]
        for i in range(args.recalls):
            name = names[int(rrng.integers(0, len(names)))]
            before = pool.opens
            q = i % 1024
            c1, t1 = time.thread_time(), time.perf_counter()
            pool.recall(name, queries[q], query_vector=qvecs[q], reinforce=args.reinforce)
            dt, dc = time.perf_counter() - t1, time.thread_time() - c1
            (misses if pool.opens != before else hits).append(dt)
            (misses_cpu if pool.opens != before else hits_cpu).append(dc)
            if i % 500 == 0:
                peak_fds, peak_rss = max(peak_fds, open_fds()), max(peak_rss, rss())
        run_s = time.perf_counter() - t0
        opens = pool.stats()["opens"] - opens0
        peak_fds, peak_rss = max(peak_fds, open_fds()), max(peak_rss, rss())
        say(f"{args.recalls:,} random recalls over {len(names):,} stores, pool {args.pool:,}"
            f"{' (reinforcing)' if args.reinforce else ''}: {run_s:.1f} s")
        say(f"  hits   {len(hits):6,}: p50 {ms(pct(hits, 50))}, p99 {ms(pct(hits, 99))}; "
            f"CPU p50 {ms(pct(hits_cpu, 50))}")
        say(f"  misses {len(misses):6,}: p50 {ms(pct(misses, 50))}, p99 {ms(pct(misses, 99))}; "
            f"CPU p50 {ms(pct(misses_cpu, 50))} (an open, and the close of the least recently "
            f"used store)")
        say(f"  opens/s {opens / run_s:,.0f}; RSS peak {peak_rss / 2**30:.2f} GiB; "
            f"open fds peak {peak_fds:,} (pool {args.pool:,})")
        t0 = time.perf_counter()
        pool.close()
        say(f"pool closed in {time.perf_counter() - t0:.1f} s")
        with open("/proc/loadavg") as fh:
            say(f"machine: {os.cpu_count()} cores, load average at the end "
                f"{' / '.join(fh.read().split()[:3])} (latencies are wall-clock; CPU = the "
                f"calling thread's CPU time)")
    finally:
        if not args.keep and not args.root:
            shutil.rmtree(root, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# Many tenants (`benchmarks/bench_tenants.py`)\n\n```\n$ python "
                   f"benchmarks/bench_tenants.py {' '.join(argv or sys.argv[1:])}\n"
                   + "\n".join(lines) + "\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
