"""Workspace search quality on public data: LoCoMo conversations and SciFact abstracts as
Markdown workspaces.

    python benchmarks/quality_workspace.py [--embedder onnx|bge|minilm+bge] [--skip-scifact]
                                           [--out benchmarks/results/quality_workspace.md]

The data is read by path and never copied into the repository: each conversation becomes a
temporary workspace with one file per session (``memory/session-NN.md``: the session date, then
one line per turn ``"{speaker}: {text}"`` (+ image caption)), indexed by ``WorkspaceIndex`` with
the default chunking (400 tokens, 80 overlap) and MiniLM (chunk vectors cached on disk outside the
repository). Each question of categories 1–4 is searched with ``max_results=10, min_score=0``;
a gold turn counts as found when a returned chunk covers its line. Metrics: turn Recall@5 and
@10 over the returned chunks in order. Conversations 0–4 are the tuning half, 5–9 held out;
every configuration is reported on both halves and the whole.

SciFact (BEIR test split): one file per abstract (``memory/scifact/<doc_id>.md``), each claim
with judgements searched with ``max_results=30``; nDCG@10 of the distinct files in the order
their first chunk came. The first half of the claims tunes, the second is held out.

The fusion default is chosen on the two tuning halves together (LoCoMo R@10 + SciFact nDCG@10).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_eval import load_locomo  # noqa: E402

from maclaw_fast.config import SearchConfig  # noqa: E402
from maclaw_fast.text import Analyzer  # noqa: E402
from maclaw_fast.workspace import WorkspaceIndex  # noqa: E402


def write_workspace(conv: dict, root: Path) -> dict[tuple[str, int], str]:
    """Session files; returns (path, line) → turn id."""
    by_session: dict[int, list] = {}
    for dia_id, s, text, _ts in conv["turns"]:
        by_session.setdefault(s, []).append((dia_id, text))
    where = {}
    for s, turns in by_session.items():
        path = f"memory/session-{s:02d}.md"
        lines = [f"# Session {s}", ""]
        for dia_id, text in turns:
            lines.append(text)
            where[(path, len(lines))] = dia_id
        (root / "memory").mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def _swap_tokenizer(tokenizer):
    import maclaw_fast.workspace.analyse as analyse_mod
    import maclaw_fast.workspace.search as search_mod

    saved = analyse_mod.tokenize, search_mod.tokenize
    if tokenizer is not None:
        analyse_mod.tokenize = search_mod.tokenize = tokenizer
    return lambda: setattr(analyse_mod, "tokenize", saved[0]) or setattr(
        search_mod, "tokenize", saved[1])


def _open(root: Path, embedder, cfg: SearchConfig, ix_dir: Path, tmp: str, own_state: bool):
    if own_state:
        # another analysis must not load this state; the chunk vectors it may reuse
        own = Path(tmp) / "ix"
        own.mkdir()
        for f in ix_dir.glob("embeddings-*.arrow"):
            shutil.copy(f, own / f.name)
        ix_dir = own
    return WorkspaceIndex.open(root, embedder=embedder, config=cfg, index_dir=ix_dir)


def evaluate(convs, cfgs: list[SearchConfig], embedder, cache: Path,
             tokenizer=None) -> list[list[list]]:
    """Per config, per conversation, per question: (R@5, R@10). One index per conversation
    (BM25 k1/b of the first config) serves every config: only the search settings change."""
    restore = _swap_tokenizer(tokenizer)
    try:
        out = [[] for _ in cfgs]
        for ci, conv in enumerate(convs):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp) / "ws"
                where = write_workspace(conv, root)
                ix = _open(root, embedder, cfgs[0], cache / f"conv{ci}", tmp, tokenizer is not None)
                questions = [q for q in conv["questions"] if q["category"] in (1, 2, 3, 4)]
                for k, cfg in enumerate(cfgs):
                    ix.config = cfg
                    rows = []
                    for q in questions:
                        hits = ix.search(q["question"], max_results=10, min_score=0.0).results
                        found = [{where.get((h.path, ln)) for ln in
                                  range(h.start_line, h.end_line + 1)} for h in hits]
                        gold = set(q["gold"])
                        rows.append([len(gold & (set().union(*found[:n]) if found else set()))
                                     / len(gold) for n in (5, 10)])
                    out[k].append(rows)
                ix.close()
        return out
    finally:
        restore()


def evaluate_scifact(data: Path, cfgs: list[SearchConfig], embedder, cache: Path) -> list[list]:
    """SciFact (BEIR test claims) over one Markdown file per abstract (``# title`` then the
    abstract): per config, per claim with judgements, nDCG@10 of the distinct files returned
    (binary gain). The first half of the claims (file order) is the tuning half."""
    from quality_memory import _dcg, load_scifact

    docs, topics, qrels = load_scifact(data)
    out = [[] for _ in cfgs]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / "memory" / "scifact").mkdir(parents=True)
        for doc_id, text in docs:
            path = root / "memory" / "scifact" / f"{doc_id}.md"
            path.write_text(f"# {text}\n", encoding="utf-8")
        ix = WorkspaceIndex.open(root, embedder=embedder, config=cfgs[0],
                                 index_dir=cache / "scifact")
        claims = [(qid, text) for qid, text in topics if qrels.get(qid)]
        for k, cfg in enumerate(cfgs):
            ix.config = cfg
            for qid, text in claims:
                hits = ix.search(text, max_results=30, min_score=0.0).results
                seen = list(dict.fromkeys(Path(h.path).stem for h in hits))
                gold = qrels[qid]
                ideal = _dcg([1] * min(len(gold), 10))
                out[k].append(_dcg([d in gold for d in seen[:10]]) / ideal)
        ix.close()
    return out


def _avg(rows, k: int) -> float:
    flat = [r[k] for c in rows for r in c]
    return float(np.mean(flat)) if flat else float("nan")


def _halves(xs) -> tuple[float, float, float]:
    h = len(xs) // 2
    return float(np.mean(xs[:h])), float(np.mean(xs[h:])), float(np.mean(xs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"
                                           / "workspace"))
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--embedder", choices=("onnx", "bge", "minilm+bge"), default="onnx")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"
                                         / "quality_workspace.md"))
    args = ap.parse_args(argv)
    from maclaw_fast.embedding.onnx import OnnxEmbedder
    from maclaw_fast.workspace.search import FUSION_WEIGHTS

    embedder = OnnxEmbedder(threads=2, batch_size=32)
    if args.embedder == "bge":
        from maclaw_fast.embedding.bge import make_bge

        embedder = make_bge(threads=2)
    elif args.embedder == "minilm+bge":
        from maclaw_fast.embedding.pair import make_minilm_bge

        embedder = make_minilm_bge(threads=2)
    convs = load_locomo(Path(args.data))
    cache = Path(args.cache)
    default = SearchConfig()
    configs = [
        (f"default: {default.fusion} {_w(default)}", default),
        ("OpenClaw merge 0.7/0.3 (`fusion=\"openclaw\"`)", SearchConfig(fusion="openclaw")),
        ("OpenClaw merge 0.5/0.5", SearchConfig(fusion="openclaw", vector_weight=0.5,
                                                text_weight=0.5)),
        ("text only (BM25)", SearchConfig(vector_weight=0.0, text_weight=1.0)),
        ("vector only", SearchConfig(vector_weight=1.0, text_weight=0.0)),
    ]
    for fusion in ("normalised", "calibrated"):
        for wv in (0.7, 0.6, 0.5, 0.4, 0.3, 0.2):
            configs.append((f"{fusion} {wv:.1f}/{1 - wv:.1f}",
                            SearchConfig(fusion=fusion, vector_weight=wv,
                                         text_weight=round(1 - wv, 2))))
    labels, cfgs = [c[0] for c in configs], [c[1] for c in configs]
    t0 = time.perf_counter()
    res = evaluate(convs, cfgs, embedder, cache)
    old_tok = Analyzer(stop_words=(), stemmer=None).tokenize
    plain = evaluate(convs, [default], embedder, cache, old_tok)[0]
    print(f"LoCoMo done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    sci = None if args.skip_scifact else evaluate_scifact(Path(args.data), cfgs, embedder, cache)
    print(f"SciFact done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    lines = ["# Workspace search quality (LoCoMo sessions and SciFact abstracts as Markdown "
             "files)", "",
             f"`python benchmarks/quality_workspace.py` ({time.strftime('%Y-%m-%d')}), "
             f"embedder `{embedder.fingerprint}`, `min_score` 0, default chunking and BM25 "
             "(k1 1.2, b 0.75).", "",
             "- **LoCoMo**: one workspace per conversation, one file per session, one line per "
             "turn; categories 1–4, turn recall of the returned chunks (max_results 10). "
             "Tuning half: conversations 0–4; held-out: 5–9.",
             "- **SciFact** (BEIR test claims with judgements, 5,183 abstracts, one file each): "
             "nDCG@10 of the distinct files among the first 30 chunks. Tuning half: the first "
             "half of the claims; held-out: the second.", "",
             "| configuration | LoCoMo R@5 tuning / held-out / all | LoCoMo R@10 tuning | "
             "R@10 held-out | R@10 all | SciFact nDCG@10 tuning | held-out | all |",
             "|---|---|---|---|---|---|---|---|"]
    r10, nd = {}, {}
    for i, label in enumerate(labels):
        r10[label] = (_avg(res[i][:5], 1), _avg(res[i][5:], 1), _avg(res[i], 1))
        nd[label] = _halves(sci[i]) if sci else (float("nan"),) * 3
        lines.append(f"| {label} | {_avg(res[i][:5], 0):.3f} / {_avg(res[i][5:], 0):.3f} / "
                     f"{_avg(res[i], 0):.3f} | {r10[label][0]:.3f} | {r10[label][1]:.3f} | "
                     f"{r10[label][2]:.3f} | {nd[label][0]:.3f} | {nd[label][1]:.3f} | "
                     f"{nd[label][2]:.3f} |")
    lines.append(f"| default, tokenizer without stop words/stemming | {_avg(plain[:5], 0):.3f} / "
                 f"{_avg(plain[5:], 0):.3f} / {_avg(plain, 0):.3f} | {_avg(plain[:5], 1):.3f} | "
                 f"{_avg(plain[5:], 1):.3f} | {_avg(plain, 1):.3f} | | | |")
    # the choice: mean of the two tuning halves (LoCoMo R@10, SciFact nDCG@10)
    swept = [x for x in labels if x.startswith(("normalised", "calibrated"))]
    best = max(swept, key=lambda x: r10[x][0] + (nd[x][0] if sci else 0.0))
    parts = [x for x in labels if x in ("text only (BM25)", "vector only")]
    lines += ["", f"Chosen on the tuning halves (mean of LoCoMo R@10 and SciFact nDCG@10): "
              f"**{best}** (LoCoMo {r10[best][0]:.3f}, SciFact {nd[best][0]:.3f}); held-out "
              f"LoCoMo {r10[best][1]:.3f} and SciFact {nd[best][1]:.3f}, against the better part "
              f"alone {max(r10[p][1] for p in parts):.3f} and {max(nd[p][1] for p in parts):.3f}"
              f", and OpenClaw's merge {r10[labels[1]][1]:.3f} and {nd[labels[1]][1]:.3f}. "
              f"Fusion weights shipped: {FUSION_WEIGHTS}.", ""]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


def _w(cfg: SearchConfig) -> str:
    from maclaw_fast.workspace.search import normalise_weights

    wv, wt = normalise_weights(cfg.vector_weight, cfg.text_weight, cfg.fusion)
    return f"{wv:.1f}/{wt:.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
