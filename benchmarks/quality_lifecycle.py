"""Recall quality of long-term memory over a lifecycle: LoCoMo with forgetting and capacity.

    python benchmarks/quality_lifecycle.py [--embedder onnx|bge|minilm+bge|hash|none]
                                           [--out benchmarks/results/quality_lifecycle.md]

Protocol (the lifecycle protocol): one store per LoCoMo conversation; the turns of each session
are saved at the session's date (``"{speaker}: {text}"``, category ``conversation_summary``, its
precomputed vector, as ``benchmarks/quality_memory.py`` saves them); **before each session and
once after the last**, at that date, the maintenance pipeline's forgetting steps run in its
order: GC (``lifecycle.gc``) then the decay pass (``lifecycle.decay``). Capacity is either the
conversation's number of turns (GC never fires: decay alone) or the design default 500 (GC at 450,
overflow and GC into the archive). Questions (categories 1–4; 5 separately) are then recalled at
the last session's date with ``recall_batch_arrow(reinforce=False)`` and every turn ranked
(``max_entries`` = all turns, no token budget), so the evaluation never changes the store.
Metrics: turn R@5/R@10, session R@10, as in ``quality_memory.py``.

Rows: the clocks of the recall-quality protocol without forgetting — (a) every turn saved at
one time, (b) at its session date — then the lifecycle at both capacities with each of tiered
decay, cue-driven revival and archive search on and off, and the four base settings with the
speaker order (``RecallConfig.speaker_weight``) off. Conversations 0–4 tune the revival
and archive bars (the sweep table), 5–9 are held out; both halves and all ten are reported.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_eval import Clock, load_locomo, question_metrics  # noqa: E402
from quality_memory import embed_cached, eval_embedder  # noqa: E402

from maclaw_fast.config import (CATEGORIES, CapacityConfig, ForgettingConfig,  # noqa: E402
                                MemoryConfig)
from maclaw_fast.memory.lifecycle import decay, gc  # noqa: E402
from maclaw_fast.memory.store import MemoryStore  # noqa: E402

TUNE, HELD = range(0, 5), range(5, 10)
DEFAULT = ForgettingConfig()


def make_config(n_turns: int, *, capacity: int | None, forgetting: ForgettingConfig,
                base: MemoryConfig | None = None, recall: dict | None = None) -> MemoryConfig:
    """The store's configuration: every turn ranked (``max_entries`` = turns + 8, no token
    budget), with the ``recall`` changes; ``capacity`` None = room for every turn."""
    base = base or MemoryConfig()
    rc = msgspec.structs.replace(base.recall, max_entries=n_turns + 8, token_budget=10**12,
                                 **(recall or {}))
    if capacity is None:
        cap = CapacityConfig(store_capacity=n_turns + 10, gc_threshold=n_turns + 10)
    else:
        cap = CapacityConfig(store_capacity=capacity)  # gc_threshold: the design's 450
    return msgspec.structs.replace(base, recall=rc, capacity=cap, forgetting=forgetting)


def run_conversation(conv: dict, turn_vecs, q_vecs, embedder, *, lifecycle: bool,
                     capacity: int | None, forgetting: ForgettingConfig = DEFAULT,
                     same_time: bool = False, stats: dict | None = None,
                     recall: dict | None = None) -> list[list[str]]:
    """Save ``conv``'s turns session by session (forgetting between sessions when
    ``lifecycle``), then rank every turn for each question; returns turn-id rankings."""
    n = len(conv["turns"])
    cfg = make_config(n, capacity=capacity, forgetting=forgetting, recall=recall)
    clock = Clock()
    use_vec = turn_vecs is not None
    store = MemoryStore.in_memory(embedder=embedder if use_vec else None, config=cfg,
                                  clock=clock)
    id_turns: dict[str, list[str]] = defaultdict(list)
    last = max(t[3] for t in conv["turns"])
    session = None
    for i, (dia_id, s, text, ts) in enumerate(conv["turns"]):
        if s != session:
            session = s
            if lifecycle:
                gc(store, now=ts)
                decay(store, now=ts)
        clock.t = last if same_time else ts
        e = store.save(text, category="conversation_summary",
                       vector=turn_vecs[i] if use_vec else None)
        id_turns[e.id].append(dia_id)
    clock.t = last
    if lifecycle:
        gc(store, now=last)
        decay(store, now=last)
    if stats is not None:
        st = store.stats()
        for key in ("active", "dormant", "archived"):
            stats[key] = stats.get(key, 0) + st[key]
    rankings: list[list[str]] = []
    for qi, q in enumerate(conv["questions"]):
        # one recall per question: archive hits are not rows of the store, and the batch
        # call's Arrow form holds rows only
        hits = store.recall(q["question"], reinforce=False,
                            query_vector=q_vecs[qi] if use_vec else None)
        ranking = []
        for h in hits:
            ranking.extend(id_turns.get(h.entry.id, ()))
            if stats is not None and h.reason in ("revived", "archived"):
                stats[h.reason + "_hits"] = stats.get(h.reason + "_hits", 0) + 1
        rankings.append(ranking)
    store.close()
    return rankings


def evaluate(convs, turn_vecs, q_vecs, embedder, conv_ids, **opts) -> dict:
    """{category: [metric dicts]} over ``conv_ids``, plus ``"stats"``."""
    per_cat: dict = defaultdict(list)
    stats: dict = {}
    for ci in conv_ids:
        tv = turn_vecs[ci] if turn_vecs is not None else None
        qv = q_vecs[ci] if q_vecs is not None else None
        rankings = run_conversation(convs[ci], tv, qv, embedder, stats=stats, **opts)
        for q, ranking in zip(convs[ci]["questions"], rankings):
            m = question_metrics(ranking, q["gold"])  # R@5, R@10, nDCG@10, session S@10
            per_cat[q["category"]].append(m)
    per_cat["stats"] = stats
    return per_cat


def summary(per_cat: dict) -> dict:
    rows = [m for c in (1, 2, 3, 4) for m in per_cat.get(c, [])]
    out = {k: float(np.mean([m[k] for m in rows])) if rows else float("nan")
           for k in ("R@5", "R@10", "S@10")}
    adv = per_cat.get(5, [])
    out["R@10 (5)"] = float(np.mean([m["R@10"] for m in adv])) if adv else float("nan")
    out["n"] = len(rows)
    return out


def settings() -> list[tuple[str, dict]]:
    """(label, options) of every reported row."""
    f = DEFAULT
    no_tier = msgspec.structs.replace(f, dormant_categories=tuple(
        c for c in CATEGORIES if c != "self_identity"))
    no_rev = msgspec.structs.replace(f, revive=False)
    no_arch = msgspec.structs.replace(f, archive_search=False)
    none = msgspec.structs.replace(f, revive=False, archive_search=False)
    no_links = msgspec.structs.replace(f, archive_links=False)
    vector_cues = msgspec.structs.replace(f, revive_needs_term=False)
    rows = [("(a) all turns saved at one time, no forgetting", dict(lifecycle=False,
                                                                    capacity=None,
                                                                    same_time=True)),
            ("(b) saved at session dates, no forgetting", dict(lifecycle=False, capacity=None))]
    for cap, cap_label in ((None, "capacity = turns"), (500, "capacity 500")):
        rows += [
            (f"{cap_label}: lifecycle, all on (default)", dict(lifecycle=True, capacity=cap)),
            (f"{cap_label}: tiered decay off", dict(lifecycle=True, capacity=cap,
                                                     forgetting=no_tier)),
            (f"{cap_label}: revival off", dict(lifecycle=True, capacity=cap, forgetting=no_rev)),
            (f"{cap_label}: cues from the vector alone too (revive_needs_term off)",
             dict(lifecycle=True, capacity=cap, forgetting=vector_cues)),
            (f"{cap_label}: archive search off", dict(lifecycle=True, capacity=cap,
                                                       forgetting=no_arch)),
            (f"{cap_label}: revival and archive search off", dict(lifecycle=True,
                                                                   capacity=cap,
                                                                   forgetting=none)),
        ]
        if cap is not None:
            rows.append((f"{cap_label}: archived conversation links off",
                         dict(lifecycle=True, capacity=cap, forgetting=no_links)))
    rows.append(("capacity 500, no decay (GC and archive only)",
                 dict(lifecycle=False, capacity=500)))
    off = {"speaker_weight": 0.0}  # the speaker order (on by default) off: R@10 (5) above
    rows += [("(a), speaker order off", dict(lifecycle=False, capacity=None, same_time=True,
                                             recall=off)),
             ("(b), speaker order off", dict(lifecycle=False, capacity=None, recall=off)),
             ("capacity = turns, speaker order off", dict(lifecycle=True, capacity=None,
                                                          recall=off)),
             ("capacity 500, speaker order off", dict(lifecycle=True, capacity=500, recall=off))]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--embedder", choices=("onnx", "bge", "minilm+bge", "hash", "none"),
                    default="onnx")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"))
    ap.add_argument("--sweep", default="0.2,0.25,0.3,0.35,0.4,0.45,0.5",
                    help="revive_min_cue values tried on the tuning half ('' = none)")
    ap.add_argument("--only", default="", help="run only the rows whose label contains this")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"
                                         / "quality_lifecycle.md"))
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    embedder, emb_desc = eval_embedder(args.embedder)
    convs = load_locomo(Path(args.data))
    turn_vecs = q_vecs = None
    if embedder is not None:
        cache = Path(args.cache) if args.cache else None
        turn_vecs = [embed_cached(embedder, [t[2] for t in c["turns"]], cache) for c in convs]
        q_vecs = [embed_cached(embedder, [q["question"] for q in c["questions"]], cache)
                  for c in convs]
    log(f"data ready in {time.perf_counter() - t_start:.1f} s")

    halves = (("tune 0–4", TUNE), ("held-out 5–9", HELD))
    results = []
    for label, opts in settings():
        if args.only and args.only not in label:
            continue
        t0 = time.perf_counter()
        row = {h: evaluate(convs, turn_vecs, q_vecs, embedder, ids, **opts) for h, ids in halves}
        results.append((label, row))
        log(f"  {label:55s} {time.perf_counter() - t0:6.1f} s  "
            + "  ".join(f"{h}: {summary(r)['R@10']:.3f}" for h, r in row.items()))
    sweep = []
    for value in [float(v) for v in args.sweep.split(",") if v.strip()]:
        f = msgspec.structs.replace(DEFAULT, revive_min_cue=value)
        r = evaluate(convs, turn_vecs, q_vecs, embedder, TUNE, lifecycle=True, capacity=None,
                     forgetting=f)
        sweep.append((value, summary(r)))
        log(f"  sweep revive_min_cue {value}: {summary(r)['R@10']:.3f}")
    text = report(results, sweep, emb_desc, " ".join(sys.argv[1:] if argv is None else argv),
                  time.perf_counter() - t_start)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def _merge(row: dict) -> dict:
    merged: dict = defaultdict(list)
    for per_cat in row.values():
        for c, ms in per_cat.items():
            if c != "stats":
                merged[c].extend(ms)
    return merged


def findings(results) -> list[str]:
    """The targets, judged on this run's rows (all ten conversations)."""
    r10 = {label: summary(_merge(row))["R@10"] for label, row in results}
    base = r10.get("(b) saved at session dates, no forgetting")
    full = r10.get("capacity = turns: lifecycle, all on (default)")
    cap = r10.get("capacity 500: lifecycle, all on (default)")
    if base is None or full is None or cap is None:
        return []
    return ["", "Targets (all ten conversations; the run without forgetting is row (b)):",
            f"- decay between sessions, capacity = turns: R@10 {full:.3f} vs {base:.3f} "
            f"(difference {full - base:+.3f}; within 0.03: "
            f"**{'met' if abs(full - base) <= 0.03 else 'missed'}**)",
            f"- capacity 500 with GC and the archive: R@10 {cap:.3f} = {cap / base:.3f}× the "
            f"run without decay (≥ 0.9×: **{'met' if cap >= 0.9 * base else 'missed'}**)", "",
            "Reading the rows: every LoCoMo turn is a `conversation_summary` (episodic), so "
            "tiered decay changes nothing here (the 60-day and 180-day timelines in "
            "`tests/test_forgetting.py` cover the semantic categories). Without revival, decay "
            "leaves only the last month's turns recallable; with it, a dormant turn comes back "
            "when the question cues it (absolute cue strength ≥ `revive_min_cue`, and by default "
            "a term of the question in the turn: `revive_needs_term`) and its score "
            "earns a place. At capacity 500, GC moves about a third of each conversation to the "
            "archive; archive search brings those turns back when no returned turn is cued "
            "above `archive_below`, scored as the store's rows (BM25 and cosine normalised "
            "over the store's candidates), and with each the archived turns within "
            "`adjacency_hops` conversation links of it (the reply to an archived question). "
            "The last four rows turn the speaker order off (on by default: a question that "
            "names a speaker favours that speaker's lines, docs/evaluation.md); archived hits "
            "gain its bonus before they are merged with the store's, as the store's hits do."]


def report(results, sweep, emb_desc: str, argv: str, seconds: float) -> str:
    lines = ["# Long-term memory over a lifecycle (LoCoMo)", "",
             f"Generated by `python benchmarks/quality_lifecycle.py {argv}` "
             f"({time.strftime('%Y-%m-%d')}, {seconds:.0f} s). Embedder: {emb_desc}. "
             "Protocol: the script's docstring. Turn R@10 over categories 1–4 unless said "
             "otherwise; R@10 (5) = adversarial questions.", "",
             "| setting | R@10 all | R@10 tune 0–4 | R@10 held-out 5–9 | R@5 all | "
             "session R@10 all | R@10 (5) all | active / dormant / archived at the end | "
             "revived hits |", "|---|---|---|---|---|---|---|---|---|"]
    for label, row in results:
        a = summary(_merge(row))
        halves = [summary(r) for r in row.values()]
        st: dict = defaultdict(int)
        for r in row.values():
            for k, v in r["stats"].items():
                st[k] += v
        lines.append(f"| {label} | {a['R@10']:.3f} | {halves[0]['R@10']:.3f} | "
                     f"{halves[1]['R@10']:.3f} | {a['R@5']:.3f} | {a['S@10']:.3f} | "
                     f"{a['R@10 (5)']:.3f} | {st['active']} / {st['dormant']} / "
                     f"{st['archived']} | {st['revived_hits']} |")
    lines += findings(results)
    if sweep:
        lines += ["", "### Revival bar (`revive_min_cue`), tuning half only (conversations "
                  "0–4, capacity = turns)", "", "| revive_min_cue | turn R@10 | R@5 | "
                  "session R@10 |", "|---|---|---|---|"]
        for value, s in sweep:
            lines.append(f"| {value:g} | {s['R@10']:.3f} | {s['R@5']:.3f} | {s['S@10']:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
