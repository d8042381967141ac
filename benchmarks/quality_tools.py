"""Tool-retrieval quality on public data sets (retrieval stage only, no core tools).

    python benchmarks/quality_tools.py --data ../shared/data [--embedder default|hash]
                                       [--max-queries N] [--out benchmarks/results/quality_tools.md]

Protocols (``../shared/data/README.md``):

* MetaTool: catalog ``plugin_des.json`` (199 tools), queries ``all_clean_data.csv`` (single tool);
  Hit@1, Hit@5.
* Seal-Tools: catalog ``tool.jsonl`` (4,076 tools; body from the parameters), queries
  ``test_in_domain.jsonl`` + ``test_out_domain.jsonl``, gold = every ``calling[*].api``;
  Recall@5 and COMP@5 (all gold in the top 5).
* HammerBench zh: catalog = union of ``multiple_tools`` and ``single_tool`` over the four files
  (941 functions); queries = first user message of ``HammerBench_IS`` and of
  ``ir_ST_External`` (text after ``query:``), gold = first ``function call``; queries whose gold
  is not in the catalog are dropped. Hit@1, Hit@5.

Each set is ranked by ``ToolRouter.retrieve`` in three modes: BM25 only, vector only and the hybrid
fusion of SPEC §12 (``0.4·minmax(bm25) + 0.6·cos``). Query vectors are embedded in batches up front.
The data is read in place and never copied into the repository.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import DiskEmbeddingCache
from maclaw_fast.tools import Platform, RegisteredTool, ToolRegistry, ToolRouter

MODES = ("bm25", "vector", "hybrid")


def metatool(root: Path):
    des = json.loads((root / "plugin_des.json").read_text(encoding="utf-8"))
    tools = [RegisteredTool(name=n, description=d) for n, d in des.items()]
    with open(root / "all_clean_data.csv", encoding="utf-8") as fh:
        queries = [(r["Query"], {r["Tool"]}) for r in csv.DictReader(fh) if r["Tool"] in des]
    return tools, queries


def seal_tools(root: Path):
    tools = []
    for line in (root / "tool.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            params = t.get("parameters") or {}
            tools.append(RegisteredTool(name=t["api_name"], description=t.get("api_description", ""),
                                        category="mcp", input_schema={"properties": params}))
    names = {t.name for t in tools}
    queries = []
    for split in ("test_in_domain.jsonl", "test_out_domain.jsonl"):
        for line in (root / split).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                gold = {c["api"] for c in q.get("calling", [])} & names
                if gold:
                    queries.append((q["query"], gold))
    return tools, queries


def hammerbench(root: Path):
    files = sorted((root / "zh").rglob("*.json"))
    catalog: dict[str, RegisteredTool] = {}
    data = {}
    for f in files:
        items = json.loads(f.read_text(encoding="utf-8"))
        data[f.name] = items
        for it in items:
            for t in (it.get("multiple_tools") or []) + (it.get("single_tool") or []):
                if t["name"] not in catalog:
                    catalog[t["name"]] = RegisteredTool(
                        name=t["name"], description=t.get("description", ""), category="mcp",
                        input_schema=t.get("parameters") or {})
    queries = []
    for fname in ("HammerBench_IS.json", "ir_ST_External.json"):
        for it in data.get(fname, []):
            msgs = it["messages"]
            user = next(m["content"] for m in msgs if m["role"] == "user")
            if "query:" in user:
                user = user.split("query:", 1)[1]
            gold = next(m["content"]["name"] for m in msgs if m["role"] == "function call")
            if gold in catalog:
                queries.append((user.strip(), {gold}))
    return list(catalog.values()), queries


def evaluate(name, tools, queries, embedder, max_queries, cfg, cache_dir=None, seed=0,
             modes=MODES):
    n_all = len(queries)
    if max_queries and len(queries) > max_queries:
        queries = random.Random(seed).sample(queries, max_queries)
    cdir = Path(cache_dir) / name if cache_dir else None
    t0 = time.perf_counter()
    router = ToolRouter(ToolRegistry(tools), embedder=embedder, config=cfg, platform=Platform(),
                        cache_dir=cdir)
    router.retrieve("warm up", 5)  # embeds the catalog
    router.close()
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    qvecs = None
    if router.embedder is not None:
        texts = [q for q, _ in queries]
        if cdir is not None:  # query vectors reused across runs (outside the repository)
            qcache = DiskEmbeddingCache(cdir / "queries.arrow", router.embedder)
            qvecs = qcache.embed(texts)
            qcache.save()
        else:
            qvecs = router.embedder.embed(texts)
    t_embed = time.perf_counter() - t0
    rows = {}
    for mode in modes:
        t0 = time.perf_counter()
        hit1 = hit5 = rec5 = comp5 = 0.0
        for i, (q, gold) in enumerate(queries):
            top = [t.name for t in router.retrieve(
                q, 5, mode=mode, query_vector=None if qvecs is None else qvecs[i])]
            hit1 += bool(top[:1]) and top[0] in gold
            found = len(gold & set(top))
            hit5 += found > 0
            rec5 += found / len(gold)
            comp5 += found == len(gold)
        n = len(queries)
        rows[mode] = {"Hit@1": hit1 / n, "Hit@5": hit5 / n, "Recall@5": rec5 / n,
                      "COMP@5": comp5 / n, "us_per_query": (time.perf_counter() - t0) / n * 1e6}
    return {"set": name, "tools": len(tools), "queries": len(queries), "queries_all": n_all,
            "index_s": t_index, "embed_s": t_embed, "rows": rows}


def table(results, embedder_name, weights) -> str:
    lines = [f"Embedder: `{embedder_name}`; hybrid = {weights[0]}·minmax(bm25) + "
             f"{weights[1]}·cos, except that a mostly-Chinese query with this English-only "
             "embedder fuses as 0.7/0.3 (RouterConfig.foreign_query_bm25_weight, [D]; so the "
             "HammerBench rows of the sweep below do not move). Retrieval stage only (no core "
             "tools, no experience, priority or groups).", "",
             "| set | tools | queries | metric | BM25 only | vector only | hybrid |",
             "|---|---|---|---|---|---|---|"]
    metrics = {"MetaTool": ("Hit@1", "Hit@5"), "Seal-Tools": ("Recall@5", "COMP@5"),
               "HammerBench-zh": ("Hit@1", "Hit@5")}
    for r in results:
        q = f"{r['queries']:,}" + ("" if r["queries"] == r["queries_all"]
                                    else f" (sample of {r['queries_all']:,})")
        for m in metrics[r["set"]]:
            vals = [r["rows"][mode][m] for mode in MODES]
            best = max(vals)
            cells = [f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in vals]
            lines.append(f"| {r['set']} | {r['tools']:,} | {q} | {m} | " + " | ".join(cells) + " |")
    lines += ["", "Timings (this run; near 0 s of embedding when ``--cache-dir`` already held the "
              "vectors; µs/query excludes embedding):", "",
              "| set | index + embed catalog (s) | embed queries (s) | µs/query bm25 | "
              "µs/query vector | µs/query hybrid |", "|---|---|---|---|---|---|"]
    for r in results:
        us = [f"{r['rows'][m]['us_per_query']:.0f}" for m in MODES]
        lines.append(f"| {r['set']} | {r['index_s']:.1f} | {r['embed_s']:.1f} | "
                     + " | ".join(us) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--embedder", default="default", choices=["default", "onnx", "hash"])
    ap.add_argument("--max-queries", type=int, default=0, help="subsample each set (0 = all)")
    ap.add_argument("--sets", default="metatool,seal,hammer")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "quality_tools.md"))
    ap.add_argument("--cache-dir", default="/tmp/maclaw_quality_cache",
                    help="embedding cache (outside the repository); '' disables it")
    ap.add_argument("--bm25-weight", type=float, default=RouterConfig().bm25_weight)
    ap.add_argument("--cos-weight", type=float, default=RouterConfig().cos_weight)
    ap.add_argument("--sweep", default="0.5,0.6,0.7",
                    help="extra bm25 weights (cos = 1 − w) for a hybrid-only table; '' = none")
    args = ap.parse_args(argv)
    root = Path(args.data)
    if args.embedder in ("default", "onnx"):
        from maclaw_fast.embedding import OnnxEmbedder
        embedder = OnnxEmbedder(threads=2, batch_size=64)
    else:
        embedder = "hash"
    loaders = {"metatool": ("MetaTool", metatool, root / "metatool"),
               "seal": ("Seal-Tools", seal_tools, root / "seal-tools"),
               "hammer": ("HammerBench-zh", hammerbench, root / "hammerbench-zh")}
    results, sweep = [], []
    weights = [float(w) for w in args.sweep.split(",") if w.strip()]
    for key in args.sets.split(","):
        name, loader, path = loaders[key]
        tools, queries = loader(path)
        print(f"{name}: {len(tools)} tools, {len(queries)} queries", file=sys.stderr, flush=True)
        cfg = RouterConfig(core_tools=(), bm25_weight=args.bm25_weight,
                           cos_weight=args.cos_weight, embedding_cache_size=100_000)
        results.append(evaluate(name, tools, queries, embedder, args.max_queries, cfg,
                                args.cache_dir or None))
        print(json.dumps(results[-1]["rows"]), file=sys.stderr, flush=True)
        for w in weights:
            cfg = RouterConfig(core_tools=(), bm25_weight=w, cos_weight=round(1 - w, 6),
                               embedding_cache_size=100_000)
            r = evaluate(name, tools, queries, embedder, args.max_queries, cfg,
                         args.cache_dir or None, modes=("hybrid",))
            sweep.append((name, w, r["rows"]["hybrid"]))
    md = table(results, getattr(embedder, "fingerprint", embedder),
               (args.bm25_weight, args.cos_weight))
    if sweep:
        md += ("\nHybrid with other fusion weights (bm25 w, cos 1 − w; same vectors):\n\n"
               "| set | w | Hit@1 | Hit@5 | Recall@5 | COMP@5 |\n|---|---|---|---|---|---|\n")
        md += "".join(f"| {n} | {w} | {r['Hit@1']:.3f} | {r['Hit@5']:.3f} | "
                      f"{r['Recall@5']:.3f} | {r['COMP@5']:.3f} |\n" for n, w, r in sweep)
    print(md)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# Tool retrieval quality\n\nGenerated by `benchmarks/quality_tools.py`.\n\n" + md,
                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
