"""Fit a model's cosine floor: the cosine below which its vectors say nothing about relatedness.

    python benchmarks/fit_cosine_floor.py --data DIR [--models e5,bge]

On LoCoMo conversations 0-4 (the first 40 questions and 40 turns of each; questions embedded as
queries, turns as passages), the median cosine of pairs from different conversations is the
model's "unrelated" level. The floor ``f`` maps it onto MiniLM's: ``(m - f) / (1 - f) = m_minilm``,
so ``f = (m - m_minilm) / (1 - m_minilm)``. The 95th percentile and the same-conversation median,
mapped, are printed beside MiniLM's as a check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from locomo_eval import load_locomo  # noqa: E402

from maclaw_fast.embedding import embed_checked, resolve_embedder  # noqa: E402


def cosines(name: str, convs) -> tuple[np.ndarray, np.ndarray]:
    """(different-conversation cosines, same-conversation cosines) of question × turn pairs."""
    emb = resolve_embedder(name)
    q_vecs, t_vecs = [], []
    for c in convs:
        q_vecs.append(embed_checked(emb, [q["question"] for q in c["questions"][:40]], query=True))
        t_vecs.append(embed_checked(emb, [t[2] for t in c["turns"][:40]]))
    same, diff = [], []
    for i, q in enumerate(q_vecs):
        for j, t in enumerate(t_vecs):
            (same if i == j else diff).append((q @ t.T).ravel())
    return np.concatenate(diff), np.concatenate(same)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path, help="folder holding locomo/locomo10.json")
    ap.add_argument("--models", default="e5,bge")
    args = ap.parse_args()
    convs = load_locomo(args.data)[:5]
    base_diff, base_same = cosines("minilm", convs)
    m0 = float(np.median(base_diff))
    print(f"minilm: different-conversation median {m0:.3f}, 95th {np.percentile(base_diff, 95):.3f}"
          f", same-conversation median {np.median(base_same):.3f}")
    for name in args.models.split(","):
        diff, same = cosines(name, convs)
        m = float(np.median(diff))
        f = (m - m0) / (1 - m0)

        def mapped(x):
            return (x - f) / (1 - f)

        print(f"{name}: different-conversation median {m:.3f} -> floor {f:.3f}; mapped 95th "
              f"{mapped(np.percentile(diff, 95)):.3f} (minilm {np.percentile(base_diff, 95):.3f}),"
              f" mapped same-conversation median {mapped(np.median(same)):.3f} "
              f"(minilm {np.median(base_same):.3f})")


if __name__ == "__main__":
    main()
