"""Joint re-tune of the recall knobs on LoCoMo's tuning half (conversations 0–4) by coordinate
ascent; the held-out half is never read.

    python benchmarks/locomo_tune.py [--rounds 3] [--start '{"speaker_keep": 1}'] [--data DIR]

The stores are built once per (conversation, clock) as ``locomo_eval`` builds them (default
build: MiniLM vectors, each session a thread) and every setting is ranked on them by swapping
``store.config`` (a recall is some 0.1 s for a conversation's questions, so one setting of both
clocks costs about 1.5 s). Objective: the mean turn R@10 of both clocks over categories 1–4.
Each round tries every value of :data:`GRID` for one knob at a time, from the current setting;
a value is taken when it lifts the objective by more than ``--step`` and leaves the adversarial
category (5) of the tuning half no lower than the default's. The path is printed, then each
chosen change put back one at a time (its share of the gain). How the defaults were then picked
from that path: docs/evaluation.md ("The joint re-tune").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_eval import (CLOCKS, TUNING, _build, _rank, load_locomo,  # noqa: E402
                         question_metrics, variant)
from quality_memory import embed_cached  # noqa: E402

# the values each knob may take (RecallConfig fields)
GRID = {
    "bm25_weight": [0.3, 0.35, 0.4, 0.45, 0.5, 0.6],
    "cos_weight": [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8],
    "weight_relevance": [5.0, 10.0, 15.0, 20.0, 30.0],
    "recency_decay_per_hour": [0.001, 0.0025, 0.005, 0.01],
    "adjacency_factor": [0.6, 0.7, 0.8, 0.9, 1.0],
    "adjacency_hops": [1, 2, 3],
    "adjacency_mix": [0.2, 0.3, 0.4, 0.5, 0.6],
    "graph_seeds": [3, 4, 5, 6, 8],
    "graph_hops": [0, 1, 2],
    "graph_hop_factor": [0.3, 0.5, 0.7],
    "thread_bm25_weight": [0.1, 0.2, 0.3, 0.4, 0.5],
    "thread_cos_weight": [0.0, 0.05, 0.1, 0.15, 0.2],
    "thread_k1": [0.6, 0.9, 1.2, 1.5, 2.0],
    "thread_b": [0.3, 0.5, 0.75, 0.9, 1.0],
    "time_weight": [0.2, 0.4, 0.6, 0.8],
    "time_scale_days": [1.0, 3.0, 5.0, 10.0],
    "speaker_weight": [0.1, 0.15, 0.2, 0.25, 0.3],
    "speaker_keep": [1, 2, 3, 4],
    "cos_spread": [0.4, 0.5, 0.6, 0.7, 0.8],
}


class Tuner:
    """The tuning half's stores, built once; :meth:`score` ranks one setting on all of them."""

    def __init__(self, convs, turn_vecs, q_vecs, embedder) -> None:
        self.cases = []
        for ci in TUNING:
            qs = [(i, q) for i, q in enumerate(convs[ci]["questions"])]
            for clock in CLOCKS:
                store, id_turns, _ = _build(convs[ci], turn_vecs[ci], embedder,
                                            variant("default"), clock)
                self.cases.append((store, store.config, id_turns, [q for _, q in qs],
                                   q_vecs[ci][[i for i, _ in qs]]))

    def score(self, changes: dict) -> tuple[float, float, float]:
        """(turn R@10 of categories 1–4, of category 5, session R@10 of 1–4), both clocks."""
        r10, adv, s10 = [], [], []
        for store, base, id_turns, questions, qv in self.cases:
            store.config = msgspec.structs.replace(
                base, recall=msgspec.structs.replace(base.recall, **changes))
            for ranking, q in zip(_rank(store, id_turns, questions, qv, True), questions):
                m = question_metrics(ranking, q["gold"])
                (adv if q["category"] == 5 else r10).append(m["R@10"])
                if q["category"] != 5:
                    s10.append(m["S@10"])
            store.config = base
        return float(np.mean(r10)), float(np.mean(adv)), float(np.mean(s10))


def ascend(tuner: Tuner, start: dict, rounds: int, step: float, log=print) -> dict:
    best, adv0, s0 = tuner.score({})
    cur = dict(start)
    if cur:
        best = tuner.score(cur)[0]
    log(f"default: R@10 {tuner.score({})[0]:.4f}, category 5 {adv0:.4f}, session {s0:.4f}; "
        f"start {json.dumps(cur)}: {best:.4f}")
    for rnd in range(rounds):
        improved = False
        for knob, values in GRID.items():
            for value in values:
                trial = dict(cur, **{knob: value})
                if trial == cur:
                    continue
                r10, adv, s10 = tuner.score(trial)
                taken = r10 > best + step and adv >= adv0 - 1e-9
                if taken:
                    best, cur, improved = r10, trial, True
                log(f"  {knob} = {value}: R@10 {r10:.4f}, category 5 {adv:.4f}, session "
                    f"{s10:.4f}{'  (taken)' if taken else ''}")
        log(f"round {rnd}: R@10 {best:.4f} {json.dumps(cur)}")
        if not improved:
            break
    return cur


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--step", type=float, default=0.0005, help="least lift a change must give")
    ap.add_argument("--start", default="{}", help="RecallConfig changes to start from (JSON)")
    args = ap.parse_args(argv)
    from maclaw_fast.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(threads=2, batch_size=64)
    convs = load_locomo(Path(args.data))
    cache = Path(args.cache) if args.cache else None
    tv = [embed_cached(embedder, [t[2] for t in c["turns"]], cache) for c in convs]
    qv = [embed_cached(embedder, [q["question"] for q in c["questions"]], cache) for c in convs]
    tuner = Tuner(convs, tv, qv, embedder)
    chosen = ascend(tuner, json.loads(args.start), args.rounds, args.step,
                    log=lambda m: print(m, flush=True))
    full = tuner.score(chosen)[0]
    print("each change put back (turn R@10 of the tuning half without it):")
    for knob in chosen:
        rest = {k: v for k, v in chosen.items() if k != knob}
        print(f"  {knob}: {tuner.score(rest)[0]:.4f} (with it {full:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
