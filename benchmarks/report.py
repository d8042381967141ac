"""Run the memory benchmarks (or read their pytest-benchmark JSON) and write
``benchmarks/results/memory.md``: one table per group, every ratio against a baseline measured in
the same run, sizes stated, targets checked.

    python benchmarks/report.py                      # runs benchmarks/bench_memory.py first
    python benchmarks/report.py --json run.json      # renders an existing pytest-benchmark JSON
    python benchmarks/report.py -k "recall and not 100k"   # a subset (pytest -k)
    python benchmarks/report.py --json run.json --plots    # and redraw docs/img/ (plots.py)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def run_suite(json_path: Path, keyword: str | None) -> None:
    cmd = [sys.executable, "-m", "pytest", str(HERE / "bench_memory.py"), "--benchmark-only",
           f"--benchmark-json={json_path}", "--benchmark-save-data", "-q",
           "--benchmark-disable-gc"]
    if keyword:
        cmd += ["-k", keyword]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc not in (0, 5) and not json_path.exists():
        raise SystemExit(f"benchmark run failed (exit {rc})")


# --------------------------------------------------------------------------- formatting
def _t(seconds: float) -> str:
    """A duration with a sensible unit."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:,.2f} ms"
    return f"{seconds:,.2f} s"


def _rate(x: float) -> str:
    return f"{x:,.0f}"


def _ratio(x: float) -> str:
    return f"{x:,.1f}×" if x < 100 else f"{x:,.0f}×"


def _ok(flag: bool) -> str:
    return "**met**" if flag else "**missed**"


def _pct(b: dict, q: float) -> float:
    data = b["stats"].get("data")
    if data:
        return float(np.percentile(np.asarray(data), q))
    return float("nan")


def _name(b: dict) -> str:
    return b["extra_info"].get("contender", b["name"])


def _groups(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for b in doc["benchmarks"]:
        out.setdefault(b["group"], []).append(b)
    return out


# --------------------------------------------------------------------------- sections
def section_recall500(rows: list[dict]) -> list[str]:
    eng = next((b for b in rows if b["extra_info"].get("role") == "engine"), None)
    if eng is None:
        return []
    e50 = eng["stats"]["median"]
    size = eng["extra_info"]["size"]
    out = ["## `recall`, one query, 500 entries", "",
           f"{size}; 384-d random unit query vectors precomputed; `reinforce=False`. "
           "Per-query times over cycling queries (p50 = median of single calls). "
           "“speed-up” = contender p50 / engine p50 (how many times faster the engine is). "
           "Every peer is checked to return the engine's top 20 before it is timed "
           "(agreement = mean top-20 overlap).", "",
           "| contender | p50 | mean | p90 | rounds | speed-up of maclaw_fast | agreement |",
           "|---|---|---|---|---|---|---|"]
    for b in sorted(rows, key=lambda r: r["stats"]["median"]):
        s = b["stats"]
        ratio = s["median"] / e50
        agree = b["extra_info"].get("agreement_top20")
        out.append(f"| {_name(b)} | {_t(s['median'])} | {_t(s['mean'])} | {_t(_pct(b, 90))} | "
                   f"{s['rounds']} | {'—' if b is eng else _ratio(ratio)} | "
                   f"{'—' if agree is None else f'{agree:.3f}'} |")
    oracle = [b for b in rows if b["extra_info"].get("role") == "baseline"]
    glue = [b for b in rows if b["extra_info"].get("role") == "glue"]
    out += ["", "Targets on these timings, one contender after the other (the "
                "interleaved section above judges them on ratios taken in turns):"]
    if oracle:
        r = oracle[0]["stats"]["median"] / e50
        out.append(f"- ≥ 100× the plain-Python oracle: {_ratio(r)} → {_ok(r >= 100)}")
    named = [b for b in glue if b["extra_info"].get("uses_faiss", True)]
    if named:
        best = min(named, key=lambda b: b["stats"]["median"])
        r = best["stats"]["median"] / e50
        out.append(f"- ≥ 3× the fastest hand-glue with faiss (tantivy or bm25s + faiss + "
                   f"NumPy fusion; {_name(best)}): {_ratio(r)} → {_ok(r >= 3)}")
    if glue and len(named) < len(glue):
        best = min(glue, key=lambda b: b["stats"]["median"])
        r = best["stats"]["median"] / e50
        out.append(f"- against the fastest hand-glue measured ({_name(best)}, no faiss): "
                   f"{_ratio(r)} → {_ok(r >= 3)}")
    out.append(f"- p50 ≤ 100 µs (aim ≤ 40 µs): {_t(e50)} → {_ok(e50 <= 100e-6)}")
    return out + [""]


def section_batch(rows: list[dict]) -> list[str]:
    engines = [b for b in rows if b["extra_info"].get("role") == "engine"]
    if not engines:
        return []
    ref = min(engines, key=lambda b: b["stats"]["median"])
    size = ref["extra_info"]["size"]
    out = ["## `recall_batch`, 1,000 queries × 500 entries", "",
           f"{size}, top 20 each, same data and query vectors as above. One call = the whole "
           "batch (median of the rounds). “× hand-glue” = the contender's time / this row's "
           "time, against the fastest hand-glue.", "",
           "| contender | per batch (p50) | queries/s | per query | speed-up vs fastest hand-glue | "
           "agreement |", "|---|---|---|---|---|---|"]
    glue = [b for b in rows if b["extra_info"].get("role") == "glue"]
    gbest = min(glue, key=lambda b: b["stats"]["median"])["stats"]["median"] if glue else None
    for b in sorted(rows, key=lambda r: r["stats"]["median"]):
        s = b["stats"]
        n = b["extra_info"]["per_call"]
        agree = b["extra_info"].get("agreement_top20")
        rel = "—" if gbest is None else _ratio(gbest / s["median"])
        out.append(f"| {_name(b)} | {_t(s['median'])} | {_rate(n / s['median'])} | "
                   f"{_t(s['median'] / n)} | {rel} | "
                   f"{'—' if agree is None else f'{agree:.3f}'} |")
    out += ["", "Target, judged here (the engine's batches back to back, steady "
                "state): ≥ 50,000 queries/s (aim ≥ 150,000):"]
    for b in engines:
        qps = b["extra_info"]["per_call"] / b["stats"]["median"]
        out.append(f"- {_name(b)}: {_rate(qps)} q/s → {_ok(qps >= 50_000)}")
    return out + [""]


def section_100k(rows: list[dict]) -> list[str]:
    engines = [b for b in rows if b["extra_info"].get("role") == "engine"]
    eng = min(engines, key=lambda b: b["stats"]["median"]) if engines else None
    floors = [b for b in rows if b["extra_info"].get("role") == "floor"]
    if eng is None and not floors:
        return []
    size = (eng or floors[0])["extra_info"]["size"]
    out = ["## `recall`, one query, 100,000 entries, vs the memory-bandwidth floor", "",
           f"{size}. The floor is measured in the same run: a numba streaming read (sum) of "
           "the whole float32 matrix — the least work of any scorer that reads every vector in "
           "float32 — with 2 numba threads and with 1, and NumPy `E @ q` (BLAS gemv); the engine "
           "at 1 and 2 numba threads; “engine / this” uses the faster engine row. The engine "
           "scores every row's cosine in float32 (in row ranges on the thread pool) and BM25, "
           "then ranks every row: its time is the floor's plus the ranking passes "
           "(profiling/recall_large.py). Store built "
           "with auto-link off (100k saves with linking would take an hour).", "",
           "| contender | p50 | mean | GB/s of the matrix | engine / this |", "|---|---|---|---|---|"]
    nbytes = 100_000 * 384 * 4
    e50 = eng["stats"]["median"] if eng else None
    for b in sorted(rows, key=lambda r: r["stats"]["median"]):
        s = b["stats"]
        rel = "—" if (e50 is None or b is eng) else _ratio(e50 / s["median"])
        out.append(f"| {_name(b)} | {_t(s['median'])} | {_t(s['mean'])} | "
                   f"{nbytes / s['median'] / 1e9:.1f} | {rel} |")
    if eng and floors:
        floor = min(floors, key=lambda b: b["stats"]["median"])
        r = e50 / floor["stats"]["median"]
        out += ["", f"Floor = {_name(floor)}: {_t(floor['stats']['median'])} "
                f"({nbytes / floor['stats']['median'] / 1e9:.1f} GB/s). Target: "
                f"within 1.5× of the floor: {r:.2f}× → {_ok(r <= 1.5)}"]
    return out + [""]


def section_save(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    base = {b["extra_info"]["contender"]: b for b in rows if b["extra_info"]["role"] == "baseline"}
    out = ["## `save` throughput", "",
           f"{rows[0]['extra_info']['size'].split(' (')[0]}; each round opens a fresh store in a "
           "temporary directory (journal: msgspec records appended before `save` returns; "
           "snapshots debounced). `vector` = a precomputed 384-d vector passed to `save` "
           "(no model time); `noembed` = a BM25-only store (embedder None). "
           "“vs in-memory” = throughput relative to the same saves into an in-memory store "
           "(no journal), measured in the same run.", "",
           "| variant | per 1,000 saves (p50) | entries/s | vs in-memory | target ≥ 5,000/s |",
           "|---|---|---|---|---|"]
    for b in sorted(rows, key=lambda r: r["stats"]["median"]):
        s = b["stats"]
        n = b["extra_info"]["per_call"]
        rate = n / s["median"]
        name = b["extra_info"]["contender"]
        twin = base.get("save (in-memory-vector)" if "vector" in name
                        else "save (in-memory-noembed)")
        rel = ("—" if twin is None or twin is b or "nolink" in name
               else f"{twin['stats']['median'] / s['median']:.2f}×")
        out.append(f"| {name} | {_t(s['median'])} | {_rate(rate)} | {rel} | "
                   f"{'—' if b['extra_info']['role'] == 'baseline' else _ok(rate >= 5000)} |")
    return out + [""]


def section_threads(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    paths: dict[str, dict[str, dict]] = {}
    settings: list[str] = []
    for b in rows:
        st = b["extra_info"]["setting"]
        key = f"numba {st['numba']} / BLAS {st['blas']} / OpenMP {st['omp']}"
        if key not in settings:
            settings.append(key)
        paths.setdefault(b["extra_info"]["contender"], {})[key] = b
    out = ["## Thread pools (2 cores)", "",
           "numba's pool (`numba.set_num_threads`), every BLAS (`threadpoolctl`: NumPy's "
           "OpenBLAS and faiss's) and faiss's OpenMP pool (`faiss.omp_set_num_threads`), set "
           "per row; the 1,000 × 500 batch (queries/s) and the single recall (p50). Best "
           "setting per path in bold.", "",
           "| path | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]
    for path, by in paths.items():
        vals = {}
        for k, b in by.items():
            n = b["extra_info"]["per_call"]
            vals[k] = (n / b["stats"]["median"]) if n > 1 else b["stats"]["median"]
        single = next(iter(by.values()))["extra_info"]["per_call"] == 1
        best = (min if single else max)(vals, key=vals.get)
        cells = []
        for k in settings:
            if k not in vals:
                cells.append("—")
                continue
            txt = _t(vals[k]) if single else f"{_rate(vals[k])} q/s"
            cells.append(f"**{txt}**" if k == best else txt)
        out.append(f"| {path} | " + " | ".join(cells) + " |")
    return out + [""]


def section_interleaved(rows: list[dict]) -> list[str]:
    """The round-robin groups (``benchmarks/interleaved.py``): ratios taken seconds apart."""
    from interleaved import ratio_summary

    out = []
    for b in rows:
        info = b["extra_info"]
        per_round, engine = info["per_round"], info["engine"]
        summary = ratio_summary(per_round, engine)
        faiss = info.get("uses_faiss", {})
        n = info.get("per_call", 1)
        batch = n > 1
        title = ("`recall_batch`, 1,000 queries × 500 entries" if batch
                 else "`recall`, one query, 500 entries")
        out += [f"## Interleaved: {title}", "",
                f"{info['size']}. {len(per_round[engine])} rounds; in each, every contender "
                "runs in turn (the order rotates) — "
                + ("one whole batch" if batch else "a chunk of calls (200; the oracle 3)")
                + " — and gives its median time; “÷ engine” = contender ÷ "
                f"{engine} in the same round: the median over the rounds and its range. The "
                "machine's drift (up to 1.6× within minutes) hits every contender alike here, "
                "so these are the ratios the targets are judged on.", "",
                "| contender | " + ("queries/s" if batch else "p50")
                + " (median of rounds) | ÷ engine (median) | range over rounds |",
                "|---|---|---|---|"]
        for name, r in sorted(summary.items(), key=lambda kv: kv[1]["p50"]):
            speed = f"{_rate(n / r['p50'])}" if batch else _t(r["p50"])
            rel = "—" if name == engine else f"{r['ratio']:.2f}×"
            rng = "—" if name == engine else f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f}×"
            out.append(f"| {name} | {speed} | {rel} | {rng} |")
        glues = {k: v for k, v in summary.items() if k in faiss}
        if batch:
            best = min(glues.items(), key=lambda kv: kv[1]["p50"]) if glues else None
            out += ["", "Each engine batch here starts right after another library's batch, "
                    "with the caches cold: a lower bound on its rate. The rate target "
                    "(≥ 50,000 q/s) is judged on the engine's own batches back to back, in the "
                    "`recall_batch` section below."]
            if best:
                out.append(f"The fastest hand-glue ({best[0]}) takes {best[1]['ratio']:.2f}× "
                           f"({best[1]['ratio_min']:.2f}–{best[1]['ratio_max']:.2f}×) as long "
                           "as the engine's list form.")
            out.append("")
            continue
        out += ["", "Targets, on these ratios:"]
        oracle = next((r for k, r in summary.items() if "oracle" in k), None)
        if oracle:
            out.append(f"- ≥ 100× the plain-Python oracle: {oracle['ratio']:.0f}× "
                       f"({oracle['ratio_min']:.0f}–{oracle['ratio_max']:.0f}×) → "
                       f"{_ok(oracle['ratio'] >= 100)}")
        named = {k: v for k, v in glues.items() if faiss[k]}
        for label, pool in (("the fastest hand-glue with faiss (tantivy or bm25s + faiss "
                             "+ NumPy fusion)", named),
                            ("the fastest hand-glue measured", glues)):
            if pool:
                k, r = min(pool.items(), key=lambda kv: kv[1]["p50"])
                out.append(f"- ≥ 3× {label}, {k}: {r['ratio']:.2f}× ({r['ratio_min']:.2f}–"
                           f"{r['ratio_max']:.2f}×) → {_ok(r['ratio'] >= 3)}")
        e50 = summary[engine]["p50"]
        out += [f"- p50 ≤ 100 µs (aim ≤ 40 µs): {_t(e50)} → {_ok(e50 <= 100e-6)}", ""]
    return out


def render(doc: dict) -> str:
    groups = _groups(doc)
    mi = doc.get("machine_info", {})
    cpu = mi.get("cpu", {})
    first = doc["benchmarks"][0]["extra_info"] if doc["benchmarks"] else {}
    threads = first.get("threads", {})
    lines = ["# Memory engine benchmarks", "",
             f"Generated by `python benchmarks/report.py` from one pytest-benchmark run of "
             f"`benchmarks/bench_memory.py` ({doc.get('datetime', '')[:19]}). Machine: "
             f"{cpu.get('brand_raw', mi.get('processor', '?'))}, {cpu.get('count', '?')} "
             f"logical cores, Python {mi.get('python_version', '?')}. Thread pools for the run: "
             f"numba {threads.get('numba', '?')}, BLAS {threads.get('blas', '?')}, faiss OpenMP "
             f"{threads.get('omp', '?')}; the engine's batch kernels run with their default "
             "`batch_threads=\"auto\"` (both cores while no other thread is runnable) except in "
             "the thread table. Absolute times on a shared 2-core machine are noisy "
             "(±30 %); compare the ratios, which come from one run on the same data.", "",
             "Data: synthetic memories (8–24 Zipf-distributed words, 10 % Chinese words, 1–2 "
             "tags, five scored categories, `updated_at` over 30 days, access counts 1–5) and "
             "384-d random unit vectors, identical for every contender; see the docstring of "
             "`benchmarks/bench_memory.py`.", ""]
    lines += section_interleaved(groups.get("interleaved", []))
    lines += section_recall500(groups.get("recall 500", []))
    lines += section_batch(groups.get("recall_batch 1000x500", []))
    lines += section_100k(groups.get("recall 100k", []))
    lines += section_save(groups.get("save", []))
    lines += section_threads(groups.get("threads", []))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="read this pytest-benchmark JSON instead of running")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression (a subset of the suite)")
    ap.add_argument("--out", default=str(HERE / "results" / "memory.md"))
    ap.add_argument("--append", default=None,
                    help="a markdown file whose text is appended (notes, findings)")
    ap.add_argument("--plots", action="store_true",
                    help="then redraw docs/img/*.png from the results files (benchmarks/plots.py)")
    args = ap.parse_args(argv)
    if args.json:
        path = Path(args.json)
    else:
        path = Path(tempfile.mkdtemp(prefix="bench-memory-")) / "run.json"
        run_suite(path, args.keyword)
        if not path.exists():  # pytest ran no benchmark (a -k that matches none of them)
            raise SystemExit(f"no benchmark ran{f' for -k {args.keyword!r}' if args.keyword else ''}"
                             "; nothing to report")
    doc = json.loads(path.read_text())
    text = render(doc)
    if args.append:
        text += "\n" + Path(args.append).read_text(encoding="utf-8")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwritten {out} (raw timings: {path})", file=sys.stderr)
    if args.plots:
        from plots import main as draw

        draw([])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
