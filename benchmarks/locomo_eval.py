"""LoCoMo recall evaluation of ``MemoryStore`` (used by ``benchmarks/quality_memory.py``).

One store per conversation; every turn is a memory ``"{speaker}: {text}"`` (+ ``" [image:
{caption}]"``) saved in order through ``MemoryStore.save`` (auto-link and the conversation links
as a user's saves make them) with its precomputed MiniLM vector, category
``conversation_summary`` and its session as its ``thread`` (as an agent passes its session);
``reinforce=False``; ``max_entries`` = every turn and no token budget,
so the store ranks everything. Two clocks:

* **(a) now** — every turn saved at one instant and recalled then (no recency differences);
* **(b) dated** — each turn saved at its session's date, recalled at the last session's date.

Questions (categories 1–4; the adversarial category 5 reported apart) are recalled in their
conversation's store with
``recall_batch_arrow`` (the same ranking as ``recall``, checked by the oracle tests). Identical
turn texts of one conversation are one memory; its rank stands for all its turns. Metrics: turn
Recall@5/@10, nDCG@10, session Recall@10 (turns mapped to sessions, ranking de-duplicated).
Conversations 0–4 are the tuning half (defaults are chosen there), 5–9 the held-out half.

A store is built once per (conversation, clock, build options) and every recall-only variant is
ranked on it by swapping ``store.config`` (its plans are cached per config object).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import numpy as np

from maclaw_fast.config import (Bm25Config, CapacityConfig, GraphConfig, MemoryConfig,
                                RecallConfig)
from maclaw_fast.memory.store import MemoryStore

GOLD_RE = re.compile(r"D:?(\d+):0*(\d+)")
TUNING, HELD_OUT = tuple(range(0, 5)), tuple(range(5, 10))
HALVES = (("tuning 0–4", TUNING), ("held-out 5–9", HELD_OUT), ("all 10", TUNING + HELD_OUT))
CLOCKS = ("now", "dated")
CLOCK_NAMES = {"now": "(a) all saved now", "dated": "(b) saved at session dates"}
METRICS = ("R@5", "R@10", "nDCG@10", "S@10")


# --------------------------------------------------------------------------- data
def _session_date(text: str) -> float:
    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return dt.replace(tzinfo=timezone.utc).timestamp()


def load_locomo(path: Path, limit: int | None = None) -> list[dict]:
    """Conversations as ``{turns: [(dia_id, session, text, ts)], questions: [...]}`` (gold
    normalised as the data sets' protocols (``benchmarks/data.py`` lists their sources) says)."""
    raw = json.loads((path / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    convs = []
    for conv in raw:
        c = conv["conversation"]
        turns = []
        s = 1
        while f"session_{s}" in c:
            ts = _session_date(c[f"session_{s}_date_time"])
            for t in c[f"session_{s}"]:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [image: {t['blip_caption']}]"
                turns.append((t["dia_id"], s, text, ts))
            s += 1
        turn_ids = {t[0] for t in turns}
        questions = []
        for q in conv["qa"]:
            gold = []
            for piece in re.split(r"[;\s]+", " ".join(map(str, q.get("evidence") or []))):
                m = GOLD_RE.fullmatch(piece.strip()) or GOLD_RE.search(piece)
                if m:
                    gid = f"D{int(m.group(1))}:{int(m.group(2))}"
                    if gid in turn_ids and gid not in gold:
                        gold.append(gid)
            if gold:
                questions.append({"question": str(q["question"]), "gold": gold,
                                  "category": int(q["category"])})
        convs.append({"id": conv.get("sample_id", str(len(convs))), "turns": turns,
                      "questions": questions})
    if limit:
        for c in convs:  # --limit N: the first N questions of each conversation (quick runs)
            c["questions"] = c["questions"][:limit]
    return convs


# --------------------------------------------------------------------------- metrics
def _dcg(rels) -> float:
    return sum(r / math.log2(i + 2) for i, r in enumerate(rels))


def question_metrics(ranking: list[str], gold: list[str]) -> dict:
    g = set(gold)
    out = {f"R@{k}": len(g & set(ranking[:k])) / len(g) for k in (5, 10)}
    out["nDCG@10"] = (_dcg([1.0 if t in g else 0.0 for t in ranking[:10]])
                      / _dcg([1.0] * min(len(g), 10)))
    seen, order = set(), []
    for t in ranking:
        s = t.split(":")[0]
        if s not in seen:
            seen.add(s)
            order.append(s)
        if len(order) >= 10:
            break
    gs = {t.split(":")[0] for t in gold}
    out["S@10"] = len(gs & set(order)) / len(gs)
    return out


# --------------------------------------------------------------------------- variants
@dataclass(frozen=True)
class Variant:
    """One configuration: ``recall`` (RecallConfig changes, applied to the store already built),
    ``build`` (what the store is built with: BM25 k1/b, GraphConfig changes, vectors,
    tokenizer) — variants with equal ``build`` share the stores."""

    label: str
    recall: tuple = ()
    bm25: tuple[float, float] | None = None  # None: the memory default
    graph: tuple = ()
    vectors: bool = True
    tokenizer: str | None = None  # None: the default; "plain": see analyzer()
    threads: bool = True  # each turn saved with its session as its thread

    @property
    def build(self) -> tuple:
        return (self.bm25, self.graph, self.vectors, self.tokenizer, self.threads)


def variant(label: str, *, bm25=None, graph=None, vectors=True, tokenizer=None, threads=True,
            **recall):
    return Variant(label, tuple(sorted(recall.items())), bm25,
                   tuple(sorted((graph or {}).items())), vectors, tokenizer, threads)


@contextmanager
def analyzer(name: str | None):
    """The process-wide tokenizer for a tokenizer ablation: ``"plain"`` = no stop words, no
    stemming (design R1 off). Every store built and queried inside uses it (the evaluation ranks
    through ``recall_batch_arrow``, which tokenizes queries with ``tokenize``)."""
    if name is None:
        yield
        return
    from maclaw_fast.text import tokenizer

    assert name == "plain", name
    saved = tokenizer.DEFAULT_ANALYZER
    tokenizer.DEFAULT_ANALYZER = tokenizer.Analyzer(stop_words=(), stemmer=None)
    try:
        yield
    finally:
        tokenizer.DEFAULT_ANALYZER = saved


class Clock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


NOW_A = 1_900_000_000.0  # clock (a): after every LoCoMo date


def _config(v: Variant, n: int) -> MemoryConfig:
    rc = dict(v.recall)
    rc.update(max_entries=n + 8, token_budget=10**12)
    kw = {"recall": RecallConfig(**rc),
          "capacity": CapacityConfig(store_capacity=n + 10, gc_threshold=n + 10),
          "graph": GraphConfig(**dict(v.graph))}
    if v.bm25 is not None:
        kw["bm25"] = Bm25Config(k1=v.bm25[0], b=v.bm25[1])
    return MemoryConfig(**kw)


def _build(conv: dict, vecs, embedder, v: Variant, clock_name: str):
    n = len(conv["turns"])
    clock = Clock(NOW_A)
    use_vec = v.vectors and vecs is not None
    store = MemoryStore.in_memory(embedder=embedder if use_vec else None, config=_config(v, n),
                                  clock=clock)
    id_turns: dict[str, list[str]] = defaultdict(list)
    for i, (dia_id, session, text, ts) in enumerate(conv["turns"]):
        if clock_name == "dated":
            clock.t = ts
        e = store.save(text, category="conversation_summary",
                       thread=f"session {session}" if v.threads else None,
                       vector=vecs[i] if use_vec else None)
        id_turns[e.id].append(dia_id)
    clock.t = NOW_A if clock_name == "now" else max(t[3] for t in conv["turns"])
    return store, id_turns, use_vec


def _rank(store, id_turns, questions, qvecs, use_vec) -> list[list[str]]:
    queries = [q["question"] for q in questions]
    table = store.recall_batch_arrow(queries, reinforce=False,
                                     query_vectors=qvecs if use_vec else None)
    qi = table.column("query_index").to_numpy()
    rank = table.column("rank").to_numpy()
    ids = table.column("id").to_pylist()
    rankings: list[list[str]] = [[] for _ in queries]
    for j in np.lexsort((rank, qi)).tolist():
        rankings[qi[j]].extend(id_turns[ids[j]])
    return rankings


def evaluate(convs, turn_vecs, q_vecs, embedder, variants, clocks=CLOCKS, conv_ids=None,
             categories=(1, 2, 3, 4), log=print) -> dict:
    """``{(label, clock): {conversation index: [question metric dicts]}}``."""
    conv_ids = range(len(convs)) if conv_ids is None else conv_ids
    by_build: dict[tuple, list[Variant]] = defaultdict(list)
    for v in variants:
        by_build[v.build].append(v)
    out: dict = defaultdict(dict)
    t0 = time.perf_counter()
    for ci in conv_ids:
        conv = convs[ci]
        qs = [(i, q) for i, q in enumerate(conv["questions"]) if q["category"] in categories]
        questions = [q for _, q in qs]
        for build_vs in by_build.values():
            for clock_name in clocks:
                vecs = turn_vecs[ci] if turn_vecs is not None else None
                with analyzer(build_vs[0].tokenizer):
                    store, id_turns, use_vec = _build(conv, vecs, embedder, build_vs[0],
                                                      clock_name)
                    base = store.config
                    qv = q_vecs[ci][[i for i, _ in qs]] if use_vec else None
                    for v in build_vs:  # the default recall config with the variant's changes
                        store.config = msgspec.structs.replace(
                            base, recall=_config(v, len(conv["turns"])).recall)
                        rankings = _rank(store, id_turns, questions, qv, use_vec)
                        out[(v.label, clock_name)][ci] = [
                            dict(question_metrics(r, q["gold"]), category=q["category"])
                            for r, q in zip(rankings, questions)]
                    store.close()
        log(f"  conversation {ci}: {time.perf_counter() - t0:.1f} s")
    return dict(out)


def summary(res: dict, label: str, clock: str, conv_ids, metric: str,
            categories=(1, 2, 3, 4)) -> float:
    """The mean of ``metric`` over the questions of ``categories`` (5, adversarial: apart)."""
    rows = [m for ci in conv_ids for m in res.get((label, clock), {}).get(ci, [])
            if m["category"] in categories]
    return float(np.mean([r[metric] for r in rows])) if rows else float("nan")


# --------------------------------------------------------------------------- tables
def results_table(res: dict, labels: list[str], clocks=CLOCKS) -> list[str]:
    """Turn R@5 / R@10 and session R@10 per half and clock, one row per variant."""
    head = ["| variant | clock |"]
    sep = ["|---|---|"]
    for name, _ in HALVES:
        head.append(f" R@5 {name} | R@10 {name} | session R@10 {name} |")
        sep.append("---|---|---|")
    lines = ["".join(head), "".join(sep)]
    for label in labels:
        for clock in clocks:
            cells = [f"| {label} | {CLOCK_NAMES[clock]} |"]
            for _, ids in HALVES:
                cells.append(" " + " | ".join(f"{summary(res, label, clock, ids, m):.3f}"
                                              for m in ("R@5", "R@10", "S@10")) + " |")
            lines.append("".join(cells))
    return lines


def sweep_table(res: dict, labels: list[str], clocks=CLOCKS, adversarial=False) -> list[str]:
    """Tuning half only: turn R@10, nDCG@10 and session R@10 per clock (and ``adversarial``:
    the adversarial category's turn R@10 per clock)."""
    adv = [f"adversarial R@10 {c}" for c in clocks] if adversarial else []
    lines = ["| variant | " + " | ".join([f"R@10 {c} | nDCG@10 {c} | session R@10 {c}"
                                           for c in clocks] + adv) + " |",
             "|---|" + "---|---|---|" * len(clocks) + "---|" * len(adv)]
    for label in labels:
        cells = []
        for c in clocks:
            cells += [f"{summary(res, label, c, TUNING, m):.3f}" for m in ("R@10", "nDCG@10",
                                                                            "S@10")]
        if adversarial:
            cells += [f"{summary(res, label, c, TUNING, 'R@10', (5,)):.3f}" for c in clocks]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


# the thread prior off (the single-signal rows: BM25 alone, vector alone)
NO_PRIOR = {"thread_bm25_weight": 0.0, "thread_cos_weight": 0.0}


def sweep_variants() -> dict[str, list[Variant]]:
    """The candidates the defaults were chosen from (tuning half), by question."""
    k1b = [variant(f"BM25 only, k1 {k1} b {b}", bm25=(k1, b), vectors=False, graph_hops=0,
                   adjacency_hops=0, **NO_PRIOR) for k1, b in ((1.2, 0.75), (0.9, 0.4), (1.2, 0.4),
                                                   (0.9, 0.75), (0.6, 0.3), (1.5, 0.5))]
    wrel = [variant(f"weight_relevance {w:g}", weight_relevance=w)
            for w in (1.0, 3.0, 5.0, 10.0, 20.0, 50.0)]
    wrel.append(variant("relevance only (recency and importance weight 0)", weight_recency=0.0,
                        weight_importance=0.0))
    mix = [variant(f"bm25_weight {bw:g} / cos_weight {1 - bw:g}", bm25_weight=bw,
                   cos_weight=round(1 - bw, 2)) for bw in (0.2, 0.3, 0.4, 0.5, 0.6)]
    norms = [variant(f"bm25_norm {b}, cos_norm {c}", bm25_norm=b, cos_norm=c)
             for b, c in (("max", "floor_best"), ("max", "floor"), ("max", "minmax"),
                          ("minmax", "minmax"), ("minmax", "floor_best"), ("max", "raw"),
                          ("raw", "minmax"))]
    adj = [variant(f"adjacency factor {f:g}, hops {h}", adjacency_factor=f, adjacency_hops=h)
           for f in (0.5, 0.7, 0.8, 0.9) for h in (1, 2, 3)]
    adj.append(variant("adjacency off", adjacency_hops=0))
    mixes = [variant(f"adjacency mix {m:g}, factor {f:g}", adjacency_mix=m, adjacency_factor=f)
             for m in (0.0, 0.2, 0.3, 0.4, 0.5) for f in (0.8, 1.0)]
    mixes += [variant("adjacency mix 0.3, no similarity walk", adjacency_mix=0.3, graph_hops=0),
              variant("adjacency mix 0 (the larger value), no similarity walk",
                      adjacency_mix=0.0, graph_hops=0)]
    seeds = [variant(f"graph_seeds {s}", graph_seeds=s) for s in (3, 5, 10)]
    times = [variant(f"time_weight {w:g}, time_scale_days {sc:g}", time_weight=w,
                     time_scale_days=sc)
             for w in (0.0, 0.2, 0.4, 0.8) for sc in (1.0, 3.0, 10.0) if w or sc == 3.0]
    speakers = [variant(f"speaker_weight {w:g}", speaker_weight=w)
                for w in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)]
    speakers += [variant(f"speaker_weight {w:g}, speaker_keep {k}", speaker_weight=w,
                         speaker_keep=k) for w in (0.15, 0.25) for k in (0, 1, 3)]
    speakers += [variant(f"speaker_weight {w:g}, replies off", speaker_weight=w,
                         speaker_replies=False) for w in (0.15, 0.25)]
    prior = [variant(f"thread prior BM25 {b:g} / cosine {c:g}", thread_bm25_weight=b,
                     thread_cos_weight=c)
             for b, c in ((0.0, 0.0), (0.1, 0.1), (0.2, 0.05), (0.2, 0.1), (0.3, 0.05),
                          (0.3, 0.1), (0.3, 0.15), (0.3, 0.2), (0.4, 0.1), (0.4, 0.15),
                          (0.5, 0.1), (0.3, 0.0), (0.0, 0.1))]
    combos = [variant("bm25 0.5 / cos 0.5, adjacency 0.9 × 2", bm25_weight=0.5, cos_weight=0.5,
                      adjacency_factor=0.9),
              variant("bm25 0.5 / cos 0.5, adjacency 0.9 × 2, weight_relevance 20",
                      bm25_weight=0.5, cos_weight=0.5, adjacency_factor=0.9,
                      weight_relevance=20.0),
              variant("bm25 0.5 / cos 0.5, adjacency 0.9 × 2, cos_norm raw", bm25_weight=0.5,
                      cos_weight=0.5, adjacency_factor=0.9, cos_norm="raw"),
              variant("bm25 0.5 / cos 0.5, adjacency 0.8 × 2, graph_seeds 3", bm25_weight=0.5,
                      cos_weight=0.5, graph_seeds=3)]
    return {"BM25 parameters (BM25 alone, no graph)": k1b, "relevance weight": wrel,
            "BM25 / cosine weights": mix, "normalisations": norms,
            "conversation links (factor, hops)": adj,
            "how a linked turn combines its own relevance with the walk's (mix, factor)": mixes,
            "graph seeds": seeds, "the time a question names (weight, scale in days)": times,
            "the speaker a question names (weight, of relevance)": speakers,
            "thread prior (BM25 weight, centroid cosine weight)": prior,
            "combinations of the best single changes": combos}


# the speaker order off, and its guards off one at a time (the category table of the results)
SPEAKER_ROWS = (
    variant("the speaker a question names off (speaker_weight 0)", speaker_weight=0.0),
    variant("speaker order without its guards (speaker_keep 0, replies off)", speaker_keep=0,
            speaker_replies=False),
    variant("speaker order without its guards, weight 0.25 (their best on 0–4)",
            speaker_weight=0.25, speaker_keep=0, speaker_replies=False),
    variant("the best other hits not kept (speaker_keep 0)", speaker_keep=0),
    variant("replies to the named speaker's questions not raised (speaker_replies off)",
            speaker_replies=False),
    # without threads there is no thread prior to hold the other speaker's lines up
    *(variant(f"saved without threads, {label}", threads=False, **change) for label, change in (
        ("speaker_weight 0", {"speaker_weight": 0.0}), ("speaker_keep 0", {"speaker_keep": 0}),
        ("speaker_keep 2", {"speaker_keep": 2}))))

# the previous defaults of the knobs the joint re-tune changed (docs/evaluation.md), one at a time
# and together, and the ascent's conversation-link factor that was not kept
FORMER = {"bm25_weight": 0.4, "cos_weight": 0.6, "time_scale_days": 3.0, "speaker_keep": 2}
RETUNE_ROWS = (
    variant("re-tune: the former fusion weights (BM25 0.4 / cosine 0.6)", bm25_weight=0.4,
            cos_weight=0.6),
    variant("re-tune: the former time scale (3 days)", time_scale_days=3.0),
    variant("re-tune: the former kept hits (speaker_keep 2)", speaker_keep=2),
    variant("re-tune off (the three former values: the previous default)", **FORMER),
    variant("re-tune: conversation links 0.6 per step (the ascent's, not kept)",
            adjacency_factor=0.6),
    variant("re-tune: conversation links 0.6 per step, saved without threads", threads=False,
            adjacency_factor=0.6),
    variant("re-tune off, saved without threads", threads=False, **FORMER))


def ablation_variants() -> list[Variant]:
    """The default configuration and each change off."""
    out = [variant("default"),
           variant("fusion off (raw BM25 + raw cosine)", bm25_norm="raw", cos_norm="raw"),
           variant("cosine min-max over the candidates, not floor to best", cos_norm="minmax"),
           variant("cosine from the floor to 1 (floor), not floor to best", cos_norm="floor"),
           variant("weights off (the weights 1/1/1)", weight_relevance=1.0),
           variant("adjacency off", adjacency_hops=0, graph={"adjacency": False}),
           variant("adjacency mix off (a linked turn takes the larger value)",
                   adjacency_mix=0.0),
           variant("thread prior off", **NO_PRIOR),
           variant("reply documents off (a reply's BM25 document without its question)",
                   graph={"reply_weight": 0.0}),
           variant("the time a question names off", time_weight=0.0),
           *SPEAKER_ROWS[:5],
           variant("saved without threads (links by the 30-minute gap alone)", threads=False),
           variant("BM25 k1 1.2 b 0.75 (long-document defaults)", bm25=(1.2, 0.75)),
           variant("relevance only (recency, importance weight 0)", weight_recency=0.0,
                   weight_importance=0.0),
           variant("BM25 alone", vectors=False, graph_hops=0, adjacency_hops=0, **NO_PRIOR),
           variant("vector alone", bm25_weight=0.0, cos_weight=1.0, graph_hops=0,
                   adjacency_hops=0, **NO_PRIOR)]
    out.insert(1, variant("tokenizer off (no stop words, no stemming)", tokenizer="plain"))
    return out + list(RETUNE_ROWS) + list(SPEAKER_ROWS[5:])


def category_table(res: dict, labels: list[str], clocks=CLOCKS) -> list[str]:
    """Turn R@10 per half and per question category, the adversarial category (5) with it."""
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    lines = ["| variant | clock | R@10 tuning 0–4 | R@10 held-out 5–9 | R@10 all 10 | "
             + " | ".join(names.values()) + " | adversarial (5) tuning / held-out / all |",
             "|---|---|---|---|---|" + "---|" * len(names) + "---|"]
    for label in labels:
        for clock in clocks:
            halves = [f"{summary(res, label, clock, ids, 'R@10'):.3f}" for _, ids in HALVES]
            cats = [f"{summary(res, label, clock, TUNING + HELD_OUT, 'R@10', (c,)):.3f}"
                    for c in names]
            adv = " / ".join(f"{summary(res, label, clock, ids, 'R@10', (5,)):.3f}"
                             for _, ids in HALVES)
            lines.append(f"| {label} | {CLOCK_NAMES[clock]} | " + " | ".join(halves + cats)
                         + f" | {adv} |")
    return lines
