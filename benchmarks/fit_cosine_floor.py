"""Fit a model's cosine floor: the cosine below which its vectors say nothing about relatedness.

    python benchmarks/fit_cosine_floor.py --data DIR [--models e5,bge] [--zh]

On LoCoMo conversations 0-4 (the first 40 questions and 40 turns of each; questions embedded as
queries, turns as passages), the median cosine of pairs from different conversations is the
model's "unrelated" level. The floor ``f`` maps it onto MiniLM's: ``(m - f) / (1 - f) = m_minilm``,
so ``f = (m - m_minilm) / (1 - m_minilm)``. The 95th percentile and the same-conversation median,
mapped, are printed beside MiniLM's as a check.

``--zh``: e5's floor for Chinese (``cosine_floor_cjk``), the same fit on HammerBench-zh's
multi-turn dialogues (40 drawn with seed 0 from each file; the first user message as the query,
the other user and assistant turns, up to 40, as passages), mapped onto MiniLM's English level.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from locomo_eval import load_locomo  # noqa: E402

from maclaw_fast.embedding import embed_checked, resolve_embedder  # noqa: E402


def cosines(name: str, convs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(different-conversation cosines, same-conversation cosines) of question × turn pairs,
    and each question's best cosine among its own conversation's turns."""
    emb = resolve_embedder(name)
    q_vecs, t_vecs = [], []
    for c in convs:
        q_vecs.append(embed_checked(emb, [q["question"] for q in c["questions"][:40]], query=True))
        t_vecs.append(embed_checked(emb, [t[2] for t in c["turns"][:40]]))
    same, diff, best = [], [], []
    for i, q in enumerate(q_vecs):
        for j, t in enumerate(t_vecs):
            (same if i == j else diff).append((q @ t.T).ravel())
        best.append((q @ t_vecs[i].T).max(axis=1))
    return np.concatenate(diff), np.concatenate(same), np.concatenate(best)


def dialogue_cosines(data: Path, part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """e5's (different-dialogue, same-dialogue, each query's best same-dialogue) cosines on 40
    HammerBench-zh dialogues of ``part``: the first user message as the query, the other turns
    (up to 40) as passages."""
    path = data / "hammerbench-zh" / "zh" / "multi-turn" / f"HammerBench_{part}.json"
    dialogues = []
    for ex in json.loads(path.read_text(encoding="utf-8")):
        texts = [m["content"] for m in ex["messages"]
                 if m["role"] in ("user", "assistant") and isinstance(m["content"], str)]
        if len(texts) >= 4:
            dialogues.append(texts)
    rng = np.random.default_rng(0)
    dialogues = [dialogues[i] for i in rng.choice(len(dialogues), 40, replace=False)]
    emb = resolve_embedder("e5")
    q = [embed_checked(emb, [d[0]], query=True) for d in dialogues]
    p = [embed_checked(emb, d[1:41]) for d in dialogues]
    same, diff = [], []
    for i, qv in enumerate(q):
        for j, pv in enumerate(p):
            (same if i == j else diff).append((qv @ pv.T).ravel())
    best = np.array([(qv @ pv.T).max() for qv, pv in zip(q, p)])
    return np.concatenate(diff), np.concatenate(same), best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path, help="folder holding locomo/locomo10.json")
    ap.add_argument("--models", default="e5,bge")
    ap.add_argument("--zh", action="store_true", help="e5 on HammerBench-zh dialogues")
    args = ap.parse_args()
    convs = load_locomo(args.data)[:5]
    base_diff, base_same, base_best = cosines("minilm", convs)
    m0, b0 = float(np.median(base_diff)), float(np.median(base_best))
    print(f"minilm: different-conversation median {m0:.3f}, 95th {np.percentile(base_diff, 95):.3f}"
          f", same-conversation median {np.median(base_same):.3f}, best-match median {b0:.3f}")
    runs = [(name, lambda name=name: cosines(name, convs)) for name in args.models.split(",")]
    if args.zh:
        runs = [(f"e5 zh {part}", lambda part=part: dialogue_cosines(args.data, part))
                for part in ("mQsA", "IS", "External")]
    reaches = []
    for name, fit in runs:
        diff, same, best = fit()
        m = float(np.median(diff))
        f = (m - m0) / (1 - m0)

        def mapped(x):
            return (x - f) / (1 - f)

        print(f"{name}: different-conversation median {m:.3f} -> floor {f:.3f}; mapped 95th "
              f"{mapped(np.percentile(diff, 95)):.3f} (minilm {np.percentile(base_diff, 95):.3f}),"
              f" mapped same-conversation median {mapped(np.median(same)):.3f} "
              f"(minilm {np.median(base_same):.3f}), mapped best-match median "
              f"{mapped(np.median(best)):.3f} -> reach {mapped(np.median(best)) / b0:.3f}")
        reaches.append(mapped(np.median(best)) / b0)
    print(f"median reach {np.median(reaches):.3f}")


if __name__ == "__main__":
    main()
