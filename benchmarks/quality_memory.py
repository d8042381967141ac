"""Retrieval quality of the memory engine on public data (LoCoMo, BEIR SciFact).

    python benchmarks/quality_memory.py --data ../shared/data [--embedder onnx|hash|none]
                                        [--limit N] [--out benchmarks/results/quality_memory.md]

The data is read by path and never copied. Protocols: ``<data>/README.md``.

**LoCoMo** — one store per conversation; every turn of every session is a memory
``"{speaker}: {text}"`` (+ ``" [image: {blip_caption}]"``) saved through ``MemoryStore.save`` with
the session date as its time (a settable clock) and its precomputed vector; category
``conversation_summary`` for every turn (no self-identity / user-fact pinning; equal importance);
``max_entries`` = every turn and an unlimited token budget so the store ranks everything;
``reinforce=False``; ``now`` = the last session's date of the conversation. Questions of a
conversation are recalled in that conversation's store with ``recall_batch_arrow`` (the same
ranking as ``recall``) and precomputed query vectors. Identical turn texts in one conversation
are one memory (``save`` de-duplicates); its rank stands for all its turns. Gold: ``evidence``
split on ``;`` and whitespace, ``D:?(\\d+):0*(\\d+)`` → ``D{s}:{t}``, ids absent from the
conversation dropped, questions left without gold dropped. Metrics: turn Recall@5/@10, Hit@10,
nDCG@10, session Recall@10 (turns mapped to sessions, ranking de-duplicated), over categories 1–4
together and per category; category 5 (adversarial) separately.

Modes: BM25-only (a store without an embedder), vector-only (``bm25_weight = 0``), hybrid with
each BM25 normalisation (``raw``, ``max``, ``minmax``), and hybrid without the graph (auto-link
off). Each is run with recency **on** (SPEC weight 1.0, now = end of the conversation) and
recency **off** (``weight_recency = 0``).

**SciFact** — ``Bm25Index`` alone over ``title + " " + " ".join(abstract)`` tokenised with
``maclaw_fast.text.tokenize``; nDCG@10 (binary gain) and Recall@100 over the 300 test claims; plus
the first build's analysis and a plain split for comparison (all variants:
``benchmarks/quality_tokenizer.py``).
"""

from __future__ import annotations

import argparse
import ast
import csv
import gzip
import io
import json
import math
import re
import sys
import time
import zipfile
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from maclaw_fast.config import Bm25Config, CapacityConfig, MemoryConfig, RecallConfig
from maclaw_fast.index.bm25 import Bm25Index
from maclaw_fast.memory.store import MemoryStore
from maclaw_fast.text.tokenizer import Analyzer, tokenize

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
GOLD_RE = re.compile(r"D:?(\d+):0*(\d+)")


# --------------------------------------------------------------------------- LoCoMo data
def _session_date(text: str) -> float:
    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return dt.replace(tzinfo=timezone.utc).timestamp()


def load_locomo(path: Path, limit: int | None = None) -> list[dict]:
    """Conversations as ``{turns: [(dia_id, session, text, ts)], questions: [...]}``."""
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
        # --limit N: the first N questions of each conversation (quick runs)
        for c in convs:
            c["questions"] = c["questions"][:limit]
    return convs


# --------------------------------------------------------------------------- metrics
def _dcg(rels) -> float:
    return sum(r / math.log2(i + 2) for i, r in enumerate(rels))


def turn_metrics(ranking: list[str], gold: list[str]) -> dict:
    g = set(gold)
    out = {}
    for k in (5, 10):
        top = ranking[:k]
        out[f"R@{k}"] = len(g & set(top)) / len(g)
    out["Hit@10"] = float(bool(g & set(ranking[:10])))
    ideal = _dcg([1.0] * min(len(g), 10))
    out["nDCG@10"] = _dcg([1.0 if t in g else 0.0 for t in ranking[:10]]) / ideal
    return out


def session_recall(ranking: list[str], gold: list[str], k: int = 10) -> float:
    def sess(t):
        return t.split(":")[0]
    seen, order = set(), []
    for t in ranking:
        s = sess(t)
        if s not in seen:
            seen.add(s)
            order.append(s)
        if len(order) >= k:
            break
    g = {sess(t) for t in gold}
    return len(g & set(order)) / len(g)


# --------------------------------------------------------------------------- LoCoMo run
class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def mode_list(has_vectors: bool) -> list[tuple[str, dict]]:
    """(label, options) of every mode; options: vectors, recall (RecallConfig kwargs), graph."""
    modes = [("BM25-only", {"vectors": False, "recall": {}, "graph": True}),
             ("BM25-only, no graph", {"vectors": False, "recall": {}, "graph": False}),
             # the data README's reference BM25 uses k1 0.9, b 0.4: is the gap the parameters?
             ("BM25-only, k1 0.9 b 0.4, no graph",
              {"vectors": False, "recall": {}, "graph": False, "bm25": (0.9, 0.4)})]
    if has_vectors:
        modes.append(("vector-only", {"vectors": True, "recall": {"bm25_weight": 0.0},
                                      "graph": True}))
        for norm in ("raw", "max", "minmax"):
            modes.append((f"hybrid {norm}", {"vectors": True, "recall": {"bm25_norm": norm},
                                             "graph": True}))
        for norm in ("raw", "max", "minmax"):
            modes.append((f"hybrid {norm}, no graph",
                          {"vectors": True, "recall": {"bm25_norm": norm}, "graph": False}))
        # is a bounded (normalised) relevance merely out-weighed by recency/importance?
        for w in (3.0, 10.0):
            modes.append((f"hybrid max, weight_relevance {w:g}",
                          {"vectors": True, "recall": {"bm25_norm": "max",
                                                       "weight_relevance": w}, "graph": True}))
    return modes


def run_conversation(conv: dict, turn_vecs: np.ndarray | None, q_vecs: np.ndarray | None,
                     embedder, opts: dict, recency: bool) -> list[list[str]]:
    """Rank every turn for every question of ``conv``; returns turn-id rankings."""
    n = len(conv["turns"])
    rc = dict(opts["recall"])
    rc.update(max_entries=n + 8, token_budget=10**12)
    if not recency:
        rc["weight_recency"] = 0.0
    k1, b = opts.get("bm25", (1.2, 0.75))
    cfg = MemoryConfig(recall=RecallConfig(**rc), bm25=Bm25Config(k1=k1, b=b),
                       capacity=CapacityConfig(store_capacity=n + 10, gc_threshold=n + 10),
                       auto_link=opts["graph"])
    clock = Clock()
    use_vec = opts["vectors"] and turn_vecs is not None
    store = MemoryStore.in_memory(embedder=embedder if use_vec else None, config=cfg, clock=clock)
    id_turns: dict[str, list[str]] = defaultdict(list)
    for i, (dia_id, _s, text, ts) in enumerate(conv["turns"]):
        clock.t = ts
        e = store.save(text, category="conversation_summary",
                       vector=turn_vecs[i] if use_vec else None)
        id_turns[e.id].append(dia_id)
    clock.t = max(t[3] for t in conv["turns"])  # now = the end of the conversation
    queries = [q["question"] for q in conv["questions"]]
    table = store.recall_batch_arrow(queries, reinforce=False,
                                     query_vectors=q_vecs if use_vec else None)
    qi = table.column("query_index").to_numpy()
    rank = table.column("rank").to_numpy()
    ids = table.column("id").to_pylist()
    order = np.lexsort((rank, qi))
    rankings: list[list[str]] = [[] for _ in queries]
    for j in order.tolist():
        rankings[qi[j]].extend(id_turns[ids[j]])
    store.close()
    return rankings


def evaluate_locomo(convs, turn_vecs, q_vecs, embedder, log) -> dict:
    """{(mode, recency): {"cat": {c: [metric dicts]}}}"""
    results = {}
    for label, opts in mode_list(turn_vecs is not None):
        for recency in (True, False):
            t0 = time.perf_counter()
            per_cat: dict[int, list[dict]] = defaultdict(list)
            for ci, conv in enumerate(convs):
                tv = turn_vecs[ci] if turn_vecs is not None else None
                qv = q_vecs[ci] if q_vecs is not None else None
                rankings = run_conversation(conv, tv, qv, embedder, opts, recency)
                for q, ranking in zip(conv["questions"], rankings):
                    m = turn_metrics(ranking, q["gold"])
                    m["S@10"] = session_recall(ranking, q["gold"])
                    per_cat[q["category"]].append(m)
            results[(label, recency)] = per_cat
            log(f"  {label:24s} recency {'on ' if recency else 'off'} "
                f"{time.perf_counter() - t0:6.1f} s")
    return results


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


# --------------------------------------------------------------------------- SciFact
def load_scifact(path: Path):
    root = path / "beir-scifact"
    with zipfile.ZipFile(root / "scifact.zip") as z:
        name = next(n for n in z.namelist() if n.endswith("corpus_train.csv"))
        text = z.read(name).decode("utf-8")
    csv.field_size_limit(1 << 30)
    docs = []
    for row in csv.DictReader(io.StringIO(text)):
        abstract = row["abstract"]
        try:
            sents = ast.literal_eval(abstract)
        except (ValueError, SyntaxError):
            sents = [abstract]
        docs.append((str(row["doc_id"]), row["title"] + " " + " ".join(sents)))
    with gzip.open(root / "topics.beir-v1.0.0-scifact.test.tsv.gz", "rt", encoding="utf-8") as fh:
        topics = [line.rstrip("\n").split("\t", 1) for line in fh if line.strip()]
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "qrels.beir-v1.0.0-scifact.test.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and int(parts[3]) > 0:
            qrels[parts[0]].add(parts[2])
    return docs, topics, qrels


_SIMPLE_RE = re.compile(r"\w+", re.UNICODE)


def simple_tokenize(text: str) -> list[str]:
    return _SIMPLE_RE.findall(text.lower())


def scifact_eval(docs, topics, qrels, tok, *, k1=1.2, b=0.75) -> dict:
    idx = Bm25Index(Bm25Config(k1=k1, b=b), tantivy_index=False)
    for i, (_, text) in enumerate(docs):
        idx.add(i, tok(text))
    doc_ids = [d[0] for d in docs]
    nd, r100 = [], []
    for qid, text in topics:
        gold = qrels.get(qid)
        if not gold:
            continue
        s = idx.scores(tok(text), len(docs))
        top = np.argsort(-s, kind="stable")[:100]
        top = [doc_ids[i] for i in top.tolist() if s[i] > 0]
        ideal = _dcg([1.0] * min(len(gold), 10))
        nd.append(_dcg([1.0 if d in gold else 0.0 for d in top[:10]]) / ideal)
        r100.append(len(gold & set(top[:100])) / len(gold))
    return {"nDCG@10": float(np.mean(nd)), "R@100": float(np.mean(r100)), "queries": len(nd)}


# --------------------------------------------------------------------------- report
def recommendation(res) -> list[str]:
    """The default-normalisation recommendation, with the figures of this run."""
    def r10(label, rec):
        per_cat = res.get((label, rec))
        if per_cat is None:
            return float("nan")
        return _mean([m for c in (1, 2, 3, 4) for m in per_cat.get(c, [])], "R@10")

    raw_off, max_off, mm_off = (r10(f"hybrid {n}", False) for n in ("raw", "max", "minmax"))
    raw_on, max_on, mm_on = (r10(f"hybrid {n}", True) for n in ("raw", "max", "minmax"))
    w10_on, w10_off = (r10("hybrid max, weight_relevance 10", r) for r in (True, False))
    bm_off, vec_off = r10("BM25-only", False), r10("vector-only", False)
    return [
        "### Which BM25 normalisation should be the default?", "",
        f"- With recency off, normalising wins: turn R@10 `max` {max_off:.3f} ≈ `minmax` "
        f"{mm_off:.3f} vs `raw` {raw_off:.3f}. Raw BM25 (single digits to ~15 here) drowns the "
        f"cosine term (≤ 0.6), so `raw` hybrid is barely better than BM25 alone ({bm_off:.3f}) "
        f"and the vectors ({vec_off:.3f} alone) hardly help; normalised, the two signals mix.",
        f"- With the SPEC's score as it stands (recency, importance and relevance all weighted "
        f"1.0), `max`/`minmax` collapse: R@10 {max_on:.3f} / {mm_on:.3f} vs `raw` {raw_on:.3f}. A "
        "normalised relevance is at most 0.4 + 0.6 = 1.0 — the same range as recency (0–1) and "
        "smaller than the category-importance gaps (1.0–4.0) — so the newest session wins "
        "whatever the query. Raw BM25 survives only because its scale is large by accident.",
        f"- Normalising *and* weighting relevance to match recovers the gain: `max` with "
        f"`weight_relevance = 10` gives {w10_on:.3f} with recency on ({w10_off:.3f} off) "
        f"against `raw`'s {raw_on:.3f}.", "",
        "**Recommendation.** Keep **`raw`** as the default while the SPEC weights stay 1/1/1: on "
        "this evidence it is the only normalisation that is not swamped by recency and "
        "importance. The better configuration is **`max` together with a relevance weight of "
        "about 10** (`RecallConfig(bm25_norm=\"max\", weight_relevance=10.0)`): +0.06–0.07 turn "
        "R@10 over `raw` with recency on or off. Prefer `max` over `minmax`: equal quality here, "
        "and `max` keeps a weak hit's proportion instead of mapping the weakest hit to 0 (same as "
        "no hit) and a lone hit to 1. Changing the default normalisation alone, without the "
        "weight, would make recall much worse (the collapse above).", ""]


def write_report(out: Path, res, convs, sci, meta) -> str:
    lines = ["# Memory retrieval quality", ""]
    lines += [f"Generated by `python benchmarks/quality_memory.py {meta['argv']}` "
              f"({meta['date']}, {meta['seconds']:.0f} s). Embedder: {meta['embedder']}.", ""]
    if res is not None:
        n_q = sum(len(c["questions"]) for c in convs)
        n_q14 = sum(1 for c in convs for q in c["questions"] if q["category"] in (1, 2, 3, 4))
        n_t = sum(len(c["turns"]) for c in convs)
        lines += ["## LoCoMo (conversation memory recall)", "",
                  f"{len(convs)} conversations, {n_t} turns saved as memories (one store per "
                  f"conversation), {n_q} questions with gold evidence ({n_q14} in categories 1–4). "
                  "Turn-level metrics count gold evidence turns in the top k; session-level "
                  "Recall@10 maps turns to sessions and de-duplicates the ranking. Protocol: "
                  "`../shared/data/README.md`; details in the script's docstring.", ""]
        cats = (1, 2, 3, 4)
        for recency in (False, True):
            title = ("recency **off** (`weight_recency = 0`)" if not recency else
                     "recency **on** (SPEC default weight 1.0, now = the conversation's last "
                     "session date)")
            lines += [f"### Categories 1–4, {title}", "",
                      "| mode | turn R@5 | turn R@10 | Hit@10 | nDCG@10 | session R@10 | "
                      "R@10 multi-hop (1) | R@10 temporal (2) | R@10 open-domain (3) | "
                      "R@10 single-hop (4) | R@10 adversarial (5) | session R@10 (5) |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for (label, rec), per_cat in res.items():
                if rec != recency:
                    continue
                rows14 = [m for c in cats for m in per_cat.get(c, [])]
                row = [label] + [f"{_mean(rows14, k):.3f}"
                                 for k in ("R@5", "R@10", "Hit@10", "nDCG@10", "S@10")]
                row += [f"{_mean(per_cat.get(c, []), 'R@10'):.3f}" for c in cats]
                row += [f"{_mean(per_cat.get(5, []), 'R@10'):.3f}",
                        f"{_mean(per_cat.get(5, []), 'S@10'):.3f}"]
                lines.append("| " + " | ".join(row) + " |")
            lines.append("")
        counts = {c: len(next(iter(res.values())).get(c, [])) for c in (1, 2, 3, 4, 5)}
        lines += ["Questions per category: " + ", ".join(
            f"{c} {CATEGORY_NAMES[c]} {counts[c]}" for c in counts) + ".", "",
            "Reference (`../shared/data/README.md`, a plain Okapi BM25 k1 0.9 b 0.4 with a simple "
            "tokeniser, categories 1–4): turn R@5 0.513, R@10 0.592, nDCG@10 0.462; session R@10 "
            "0.891. Our BM25-only row is below it; a bare `Bm25Index` over the same turn texts "
            "ranks identically (turn R@10 0.519 with k1 1.2 b 0.75, 0.543 with k1 0.9 b 0.4, the "
            "same with a `\\w+` tokeniser), so the store adds nothing and loses nothing: 0.024 "
            "of the gap is the SPEC's k1/b, the rest lies in how the reference built its texts or "
            "queries (not reproduced here).", ""]
    if res is not None:
        lines += recommendation(res)
    if sci is not None:
        lines += ["## BEIR SciFact (BM25 index alone)", "",
                  "`Bm25Index` (k1 1.2, b 0.75, tantivy's length encoding) over "
                  "`title + \" \" + \" \".join(abstract)`, 5,183 abstracts, 300 test claims. "
                  "Published BM25: 0.665 (BEIR), 0.679 (Anserini). Target ≥ 0.68.", "",
                  "| tokeniser | nDCG@10 | Recall@100 |", "|---|---|---|"]
        for label, r in sci.items():
            lines.append(f"| {label} | {r['nDCG@10']:.3f} | {r['R@100']:.3f} |")
        vals = list(sci.values())
        shipped, first = vals[0]["nDCG@10"], vals[1]["nDCG@10"]
        lines += ["", f"**Finding.** The shipped tokenizer scores {shipped:.3f} "
                  f"({'meets' if shipped >= 0.68 else 'misses'} the 0.68 target) against "
                  f"{first:.3f} without stop words and stemming. Every analysis variant (stop "
                  "lists, stemming on/off, both BM25 settings, LoCoMo BM25 as well): "
                  "`benchmarks/quality_tokenizer.py` → `results/quality_tokenizer.md`.", ""]
    text = "\n".join(lines) + meta.get("extra", "")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return text


def embed_cached(embedder, texts: list[str], cache: Path | None) -> np.ndarray:
    """Embed ``texts`` in batches, cached on disk by (fingerprint, texts) outside the repo."""
    import hashlib

    if cache is None:
        return embedder.embed(texts)
    h = hashlib.sha256(embedder.fingerprint.encode())
    for t in texts:
        h.update(t.encode("utf-8") + b"\x00")
    path = cache / f"{h.hexdigest()[:24]}.npy"
    if path.exists():
        return np.load(path)
    vecs = embedder.embed(texts)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"))
    ap.add_argument("--embedder", choices=("onnx", "hash", "none"), default="onnx")
    ap.add_argument("--limit", type=int, default=None,
                    help="first N questions per conversation (quick runs)")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"),
                    help="embedding cache directory (outside the repository); '' disables it")
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"
                                         / "quality_memory.md"))
    args = ap.parse_args(argv)
    data = Path(args.data)
    t_start = time.perf_counter()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    embedder = None
    emb_desc = "none (BM25 only)"
    if args.embedder == "onnx":
        from maclaw_fast.embedding.onnx import OnnxEmbedder

        embedder = OnnxEmbedder(threads=2, batch_size=64)
        emb_desc = f"ONNX `{embedder.fingerprint}` (all-MiniLM-L6-v2 int8)"
    elif args.embedder == "hash":
        from maclaw_fast.embedding import HashEmbedder

        embedder = HashEmbedder()
        emb_desc = f"HashEmbedder `{embedder.fingerprint}` (no semantics: a control)"

    res = convs = None
    if not args.skip_locomo:
        convs = load_locomo(data, args.limit)
        turn_vecs = q_vecs = None
        if embedder is not None:
            t0 = time.perf_counter()
            cache = Path(args.cache) if args.cache else None
            turn_vecs = [embed_cached(embedder, [t[2] for t in c["turns"]], cache) for c in convs]
            q_vecs = [embed_cached(embedder, [q["question"] for q in c["questions"]], cache)
                      for c in convs]
            log(f"embedded {sum(len(c['turns']) for c in convs)} turns and "
                f"{sum(len(c['questions']) for c in convs)} questions in "
                f"{time.perf_counter() - t0:.1f} s")
        res = evaluate_locomo(convs, turn_vecs, q_vecs, embedder, log)

    sci = None
    if not args.skip_scifact:
        docs, topics, qrels = load_scifact(data)
        sci = {}
        variants = [
            ("`maclaw_fast.text.tokenize` (stop words + Snowball stemmer) — as shipped",
             tokenize),
            ("no stop words, no stemming (the first build)",
             Analyzer(stop_words=(), stemmer=None).tokenize),
            ("lower-cased `\\w+` words", simple_tokenize),
        ]
        for label, tok in variants:
            t0 = time.perf_counter()
            sci[label] = scifact_eval(docs, topics, qrels, tok)
            log(f"  SciFact {label}: {sci[label]} ({time.perf_counter() - t0:.1f} s)")

    meta = {"argv": " ".join(sys.argv[1:] if argv is None else argv),
            "date": time.strftime("%Y-%m-%d"), "embedder": emb_desc,
            "seconds": time.perf_counter() - t_start}
    text = write_report(Path(args.out), res, convs, sci, meta)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
