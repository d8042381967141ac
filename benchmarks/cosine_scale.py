"""The cosine's scale in recall fusion (``RecallConfig.cos_norm`` / ``cos_spread``): each mode on
LoCoMo, the Chinese sample and the two weak-cue cases of the design (R3, R9).

    python benchmarks/cosine_scale.py [--data DIR] [--out benchmarks/results/quality_memory.md]

Writes the ``## Cosine scale`` section of the results file (replaced when present, else
appended; run it after ``benchmarks/quality_memory.py``, which rewrites the file):

* **LoCoMo** turn and session R@10, the protocol of ``benchmarks/locomo_eval.py`` (MiniLM,
  both clocks), tuning half 0–4 (the choice is made there), held-out 5–9, all 10;
* **Chinese sample** (``data/memories_zh.json``, 60 memories of six categories, 44 queries,
  multilingual-e5-small): MRR and the share of answers in the top 1 on the tuning half (even
  queries), the held-out half (odd) and all, top 3 / 7 on all; with the model's floor and reach
  for Chinese queries, other reaches, and, as a control, its English floor for every query;
* **weak cue** (180 daily summaries of one topic, a decay pass a day; the queries "billing" and
  "what did I work on about billing recently"): revived entries among the top 10 and whether the
  5 newest days come first (hashing embedder: within the 7 newest);
* **rare identifier** (40 memories about invoice refunds, one holding the identifier; 4 wordings
  × 4 identifier shapes × 3 filler texts): queries whose identifier memory misses the top 3.

MiniLM and e5 vectors come from the installed model packages (LoCoMo's from the cache of
``quality_memory.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from locomo_eval import HELD_OUT, TUNING, evaluate, load_locomo, summary, variant  # noqa: E402
from quality_memory import embed_cached, replace_section  # noqa: E402

from maclaw_fast.config import MemoryConfig, RecallConfig  # noqa: E402

SECTION = "## Cosine scale"
DAY = 86400.0
HOUR = 3600.0
MODES = [("floor_best, spread 0.6 (default)", {}),
         ("floor_best, spread 0", {"cos_norm": "floor_best", "cos_spread": 0.0}),
         ("floor_best, spread 0.5", {"cos_norm": "floor_best", "cos_spread": 0.5}),
         ("floor_best, spread 0.75", {"cos_norm": "floor_best", "cos_spread": 0.75}),
         ("minmax (min-max over the candidates)", {"cos_norm": "minmax"}),
         ("floor ((cos − f)/(1 − f))", {"cos_norm": "floor"}),
         ("spread 0.6 (min-max over at least 0.6·(1 − f))", {"cos_norm": "spread"}),
         ("raw (max(cos, 0))", {"cos_norm": "raw"})]


def config(kw: dict) -> MemoryConfig:
    return MemoryConfig(recall=RecallConfig(**kw))


# --------------------------------------------------------------------------- LoCoMo
def locomo_rows(data: Path, cache: Path, log) -> list[str]:
    from maclaw_fast.embedding.onnx import OnnxEmbedder

    emb = OnnxEmbedder(threads=2, batch_size=64)
    convs = load_locomo(data)
    tv = [embed_cached(emb, [t[2] for t in c["turns"]], cache) for c in convs]
    qv = [embed_cached(emb, [q["question"] for q in c["questions"]], cache) for c in convs]
    vs = [variant(label, **kw) for label, kw in MODES]
    res = evaluate(convs, tv, qv, emb, vs, log=log)
    halves = (("tuning 0–4", TUNING), ("held-out 5–9", HELD_OUT), ("all 10", TUNING + HELD_OUT))
    lines = ["| cos_norm | " + " | ".join(f"R@10 {h} (a) / (b)" for h, _ in halves)
             + " | session R@10 all (a) / (b) |", "|---|---|---|---|---|"]
    for v in vs:
        cells = [" / ".join(f"{summary(res, v.label, c, ids, 'R@10'):.3f}"
                            for c in ("now", "dated")) for _, ids in halves]
        cells.append(" / ".join(f"{summary(res, v.label, c, TUNING + HELD_OUT, 'S@10'):.3f}"
                                for c in ("now", "dated")))
        lines.append(f"| {v.label} | " + " | ".join(cells) + " |")
    return lines


# --------------------------------------------------------------------------- Chinese sample
def chinese_rows(log) -> list[str]:
    from maclaw_fast.datafiles import load_json
    from maclaw_fast.embedding import resolve_embedder
    from maclaw_fast.memory import MemoryStore

    recs = load_json("memories_zh.json")
    queries = load_json("memories_zh_queries.json")
    content = {r["key"]: r["content"] for r in recs}
    e5 = resolve_embedder("e5")

    class Scaled:  # e5 with a given floor and reach for Chinese queries (None: none)
        dim, fingerprint, cosine_floor = e5.dim, e5.fingerprint, e5.cosine_floor

        def __init__(self, floor_cjk, reach_cjk):
            if floor_cjk is not None:
                self.cosine_floor_cjk = floor_cjk
            if reach_cjk is not None:
                self.cosine_reach_cjk = reach_cjk

        def embed(self, texts):
            return e5.embed(texts)

        def embed_queries(self, texts):
            return e5.embed_queries(texts)

    halves = (("tuning (even)", np.arange(len(queries)) % 2 == 0),
              ("held-out (odd)", np.arange(len(queries)) % 2 == 1),
              ("all 44", np.ones(len(queries), bool)))
    lines = ["| cos_norm | floor / reach of a Chinese query | "
             + " | ".join(f"MRR / top 1 {h}" for h, _ in halves) + " | top 3 / top 7 all |",
             "|---|---|---|---|---|---|"]
    fz, rz = e5.cosine_floor_cjk, e5.cosine_reach_cjk
    runs = [(label, kw, e5, f"{fz} / {rz} (default)") for label, kw in MODES]
    runs += [(MODES[0][0], {}, Scaled(fz, reach),
              f"{fz} / {reach}" + (" (no reach: before)" if reach == 1.0 else ""))
             for reach in (1.0, 0.9, 0.83, 0.75, 0.62, 0.5, 0.0)]
    runs += [(label, kw, Scaled(None, None), f"{e5.cosine_floor} / 1 (English, every query)")
             for label, kw in MODES[:1] + MODES[4:6]]
    for label, kw, emb, floor in runs:
        with MemoryStore.in_memory(embedder=emb, config=config(kw)) as store:
            store.import_records([{k: v for k, v in r.items() if k != "key"} for r in recs])
            ranks = []
            for q in queries:
                texts = [h.entry.content for h in store.recall(q["query"], reinforce=False)]
                want = content[q["expect"]]
                ranks.append(texts.index(want) + 1 if want in texts else 10**6)
        r = np.array(ranks, np.float64)
        cells = [f"{np.mean(1 / r[m]):.3f} / {np.mean(r[m] == 1):.3f}" for _, m in halves]
        lines.append(f"| {label} | {floor} | " + " | ".join(cells)
                     + f" | {np.mean(r <= 3):.3f} / {np.mean(r <= 7):.3f} |")
        log(f"  Chinese sample {label} / {floor}: {cells}")
    return lines


# --------------------------------------------------------------------------- weak-cue cases
class Clock:
    def __init__(self) -> None:
        self.t = 1.7e9

    def __call__(self) -> float:
        return self.t


def billing(emb, kw) -> tuple[int, bool]:
    """(most revived entries among a query's top 10, the newest days first for both queries)."""
    from maclaw_fast.memory import MemoryStore
    from maclaw_fast.memory.lifecycle import decay

    clock = Clock()
    with MemoryStore.in_memory(embedder=emb, clock=clock, config=config(kw)) as store:
        days = []
        for n in range(180):
            days.append(store.save(f"Day {n}: worked on ticket {n} about the billing dashboard",
                                   category="conversation_summary").id)
            clock.t += DAY
            decay(store)
        revived, first = 0, True
        newest = set(range(173, 180)) if emb == "hash" else set(range(175, 180))
        for q in ("billing", "what did I work on about billing recently"):
            top = store.recall(q, reinforce=False)[:10]
            revived = max(revived, sum(h.reason == "revived" for h in top))
            first &= {days.index(h.entry.id) for h in top[:5]} <= newest
    return revived, first


FILLERS = ["customer {i} asked about the refund of an invoice they were charged twice for",
           "customer {i} asked about the refund status of an invoice from last month",
           "customer {i} asked about the refund of invoice INV-{n} and when it would arrive"]
SHAPES = [("INV-20931 was settled by bank wire on Tuesday", "INV-20931"),
          ("invoice 20931 was settled by bank wire on Tuesday", "20931"),
          ("ACME-20931 was settled by bank wire on Tuesday", "ACME-20931"),
          ("INV20931 was settled by bank wire on Tuesday", "INV20931")]
QUERIES = ["refund status of invoice {id}", "what is the refund status of {id}?",
           "was {id} refunded", "{id} refund"]


def identifier_misses(emb, kw) -> int:
    from maclaw_fast.memory import MemoryStore

    misses = 0
    for filler in FILLERS:
        rng = np.random.default_rng(0)
        for text, ident in SHAPES:
            clock = Clock()
            with MemoryStore.in_memory(embedder=emb, clock=clock, config=config(kw)) as store:
                for i in range(40):
                    store.save(filler.format(i=i, n=rng.integers(10000, 99999)),
                               category="project_knowledge")
                    clock.t += HOUR
                target = store.save(text, category="project_knowledge").id
                for q in QUERIES:
                    top = [h.entry.id for h in store.recall(q.format(id=ident),
                                                            reinforce=False)[:3]]
                    misses += target not in top
    return misses


def case_rows(log) -> list[str]:
    from maclaw_fast.embedding import resolve_embedder

    models = (("MiniLM", resolve_embedder("minilm")), ("hashing", "hash"))
    lines = ["| cos_norm | " + " | ".join(
        f"{m}: revived in top 10 / newest first / identifier misses of 48" for m, _ in models)
        + " |", "|---|---|---|"]
    for label, kw in MODES:
        cells = []
        for _, emb in models:
            revived, first = billing(emb, kw)
            cells.append(f"{revived} / {'yes' if first else 'no'} / {identifier_misses(emb, kw)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        log(f"  cases {label}: {cells}")
    return lines


# --------------------------------------------------------------------------- report



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT / "data" / "eval"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quality_memory.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    intro = (f"Generated by `python benchmarks/cosine_scale.py` ({time.strftime('%Y-%m-%d')}). "
             "How recall fuses the cosine (`RecallConfig.cos_norm`; f is the model's cosine "
             "floor for the query's language: MiniLM 0, e5 0.71 English / 0.82 Chinese). "
             "`floor_best`: (cos − f)/(hi − f), hi the best candidate's cosine but at least "
             "f + `cos_spread`·(1 − f). Choice: on LoCoMo's tuning half the modes are within "
             "0.007 of each other, so the weak-cue cases decide: min-max turns the small "
             "cosine gaps of one-topic episodes and of a rare identifier into a full unit, and "
             "the floor scale keeps them small but ranks the mixed-category Chinese sample "
             "lower (category importance outweighs a relevance that no longer reaches 1); "
             "`floor_best` with spread 0.6 is the least spread tried that passes both (0.5 lets "
             "older days into the top 5 of 'what did I work on about billing recently'). That "
             "spread is in MiniLM's units; e5's best match of a Chinese query reaches less high "
             "on its floor-mapped scale: fitted as the floor was (`fit_cosine_floor.py --zh`: "
             "each query's best of up to 40 passages, HammerBench-zh dialogues against LoCoMo "
             "0–4), its median is 0.73 of MiniLM's (0.37 against 0.51), so a Chinese query's "
             "least range is `cos_spread` × e5's `cosine_reach_cjk` 0.73 (fitted without the "
             "sample; the best over all of a conversation's turns instead gives 0.62). On the "
             "Chinese sample's tuning half (even queries) every reach from 0 to 0.75 ties (MRR "
             "0.636, top 1 0.409, as min-max) above reach 1 (0.583 / 0.318, the scale without a "
             "reach); with 0.73 the held-out half (odd) gives 0.697 / 0.500 (0.674 / 0.455 "
             "without a reach and with min-max) and the whole 0.667 / 0.455 against 0.629 / "
             "0.386 without a reach and 0.655 / 0.432 with min-max. English queries (LoCoMo, "
             "the weak-cue cases) keep spread 0.6: their rows are unchanged.")
    lines = [SECTION, "", intro, "",
             "### LoCoMo turn R@10 (MiniLM; clocks (a) all saved now / (b) at session dates)", ""]
    lines += locomo_rows(Path(args.data), Path(args.cache), log)
    lines += ["", "### Chinese sample (`data/memories_zh.json`, multilingual-e5-small)", ""]
    lines += chinese_rows(log)
    lines += ["", "### The weak-cue cases (design R3, R9; `tests/test_recall_fusion.py`)", ""]
    lines += case_rows(log)
    lines += ["", f"({time.perf_counter() - t0:.0f} s)", ""]
    text = "\n".join(lines)
    replace_section(Path(args.out), SECTION, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
