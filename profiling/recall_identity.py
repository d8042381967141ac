"""Record every recall's rows and scores on a set of stores, to show that a speed change keeps
them bit for bit (run it with the old build, then the new one, and compare).

    PYTHONPATH=/path/to/old python profiling/recall_identity.py record /tmp/old.pkl
    python profiling/recall_identity.py record /tmp/new.pkl
    python profiling/recall_identity.py compare /tmp/old.pkl /tmp/new.pkl

Stores: notes (300 and 1,200 entries), conversation threads, a mix with user facts and
self-identity entries, each again after decay (dormant entries) and archiving every 11th row;
a store without an embedder; the design §6 reference scoring; the min-max, spread and floor
cosine scales; 11,000 notes (the large-store path). Queries: Zipf words, Chinese, named times,
speakers, empty and unknown words; with and without projects; ``recall``, ``recall_dynamic``,
``recall_batch``, ``recall_batch_arrow``, then reinforcing recalls that change the store.
Recorded per hit: content, reason, score, the score breakdown, access count and status.
"""

from __future__ import annotations

import pickle
import random
import sys

import msgspec
import numpy as np

from maclaw_fast import MemoryStore
from maclaw_fast.config import CapacityConfig, MemoryConfig, RecallConfig
from maclaw_fast.memory.lifecycle import decay

H = 3600.0
WORDS = [f"w{i}" for i in range(400)] + ["deploy", "pipeline", "tea", "kettle", "sailing",
                                          "rust", "compiler", "garden", "roses", "tax",
                                          "piano", "bike", "vault", "token"]
ZH = ["部署", "脚本", "数据库", "服务器", "配置", "日志", "用户", "测试"]
TAGS = ["atlas", "zeus", "hermes", "infra"]
CATS = ["instruction", "preference", "project_knowledge", "session_checkpoint",
        "conversation_summary"]


class Clock:
    def __init__(self, t: float = 1.8e9) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def hits_rec(hits) -> list:
    return [(h.entry.content, h.reason, h.score, tuple(msgspec.structs.astuple(h.breakdown)),
             h.entry.access_count, h.entry.status) for h in hits]


def build(kind: str, seed: int, n: int, embedder="hash", cfg=None):
    rng = random.Random(seed)
    vr = np.random.default_rng(seed)
    clock = Clock()
    cfg = cfg or MemoryConfig()
    cfg = msgspec.structs.replace(cfg, capacity=CapacityConfig(
        store_capacity=4 * n + 50, gc_threshold=4 * n, archive_capacity=4 * n))
    s = MemoryStore.in_memory(embedder=embedder, clock=clock, config=cfg)
    for i in range(n):
        words = [rng.choice(WORDS[:60] if rng.random() < 0.5 else WORDS)
                 for _ in range(rng.randint(5, 18))]
        if rng.random() < 0.1:
            words.insert(rng.randint(0, len(words)), rng.choice(ZH) + rng.choice(ZH))
        text = " ".join(words) + f" {i}"
        vec = None
        if embedder is not None and rng.random() < 0.8:
            v = vr.standard_normal(s.dim or 384).astype(np.float32)
            vec = v / np.linalg.norm(v)
        tags = [rng.choice(TAGS)] if rng.random() < 0.4 else []
        if kind == "conversation" or (kind == "mixed" and i % 3 == 0):
            s.save(f"speaker {['alice', 'bob'][i % 2]}: {text}", category="conversation_summary",
                   thread=f"s{i // 8}", vector=vec, tags=tags)
        else:
            cat = CATS[i % 5]
            if kind == "mixed" and i % 17 == 0:
                cat = "user_fact"
            if kind == "mixed" and i % 29 == 0:
                cat = "self_identity"
            s.save(text, category=cat, tags=tags, vector=vec)
        clock.t += rng.random() * 5 * H
    return s, clock


def queries(seed: int, k: int) -> list[str]:
    rng = random.Random(seed + 99)
    out = []
    for _ in range(k):
        q = " ".join(rng.choice(WORDS[:60] if rng.random() < 0.6 else WORDS)
                     for _ in range(rng.randint(1, 6)))
        r = rng.random()
        if r < 0.1:
            q += " " + rng.choice(ZH)
        elif r < 0.15:
            q = rng.choice(ZH) + rng.choice(ZH)
        elif r < 0.2:
            q += " two days ago"
        elif r < 0.23:
            q += " in May 2023"
        elif r < 0.28:
            q = "what did alice say about " + q
        elif r < 0.3:
            q = ""
        elif r < 0.32:
            q = "zzzunknown qqq"
        out.append(q)
    return out


def run(s, clock, qs: list[str], res: list, tag: str, dim: int) -> None:
    vr = np.random.default_rng(7)
    vecs = None
    if dim:
        vecs = vr.standard_normal((len(qs), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    projs = [None, "atlas", None, "zeus"]
    for i, q in enumerate(qs):
        qv = vecs[i] if vecs is not None else None
        res.append((tag, "r", i, hits_rec(s.recall(q, project=projs[i % 4], reinforce=False,
                                                   query_vector=qv))))
        if i % 5 == 0:
            res.append((tag, "d", i, hits_rec(s.recall_dynamic(
                q, category=["preference", None][i % 2], reinforce=False))))
    pl = [projs[i % 4] for i in range(len(qs))]
    b = s.recall_batch(qs, projects=pl, reinforce=False, query_vectors=vecs)
    res.append((tag, "b", [hits_rec(h) for h in b]))
    t = s.recall_batch_arrow(qs, projects=pl, reinforce=False, query_vectors=vecs).to_pydict()
    ids = {e.id: e.content for e in s.entries()}
    t["id"] = [ids.get(x, "archived") for x in t["id"]]
    res.append((tag, "a", t))
    for i, q in enumerate(qs[:40]):  # reinforcing: the store changes between calls
        clock.t += 600
        qv = vecs[i] if vecs is not None else None
        res.append((tag, "R", i, hits_rec(s.recall(q, project=projs[i % 4], query_vector=qv))))
    clock.t += 3600
    b = s.recall_batch(qs[:60], projects=pl[:60],
                       query_vectors=None if vecs is None else vecs[:60])
    res.append((tag, "B", [hits_rec(h) for h in b]))
    for i, q in enumerate(qs[:20]):
        res.append((tag, "r2", i, hits_rec(s.recall(q, reinforce=False))))


def record() -> list:
    res = []
    for kind, seed, n in (("notes", 1, 300), ("conversation", 2, 240), ("mixed", 3, 320),
                          ("notes", 4, 1200)):
        s, clock = build(kind, seed, n)
        run(s, clock, queries(seed, 120), res, f"{kind}{n}", s.dim)
        # again with dormant entries and every 11th row archived
        clock.t += 900 * H
        decay(s)
        rows = [r for r in range(0, s.table.n_rows, 11)]
        s.archive_rows(rows)
        run(s, clock, queries(seed + 10, 80), res, f"{kind}{n}-aged", s.dim)
        s.close()
    s, clock = build("mixed", 5, 200, embedder=None)
    run(s, clock, queries(5, 80), res, "bm25only", 0)
    cfg = MemoryConfig(recall=RecallConfig(bm25_norm="raw", cos_norm="raw", weight_relevance=1.0,
                       bm25_weight=0.4, cos_weight=0.6, adjacency_hops=0))
    s, clock = build("notes", 6, 300, cfg=cfg)
    run(s, clock, queries(6, 80), res, "reference", s.dim)
    cfg = MemoryConfig(recall=RecallConfig(bm25_norm="minmax", cos_norm="minmax"))
    s, clock = build("mixed", 7, 200, cfg=cfg)
    run(s, clock, queries(7, 60), res, "minmax", s.dim)
    cfg = MemoryConfig(recall=RecallConfig(cos_norm="spread"))
    s, clock = build("conversation", 8, 200, cfg=cfg)
    run(s, clock, queries(8, 60), res, "spread", s.dim)
    cfg = MemoryConfig(recall=RecallConfig(cos_norm="floor"))
    s, clock = build("notes", 9, 200, cfg=cfg)
    run(s, clock, queries(9, 60), res, "floor", s.dim)
    s, clock = build("notes", 11, 11000)
    run(s, clock, queries(11, 30), res, "large", s.dim)
    return res


def compare(a: list, b: list) -> int:
    """How many records differ (the first few printed)."""
    if len(a) != len(b):
        print(f"{len(a)} records against {len(b)}")
        return max(len(a), len(b))
    bad = [(x, y) for x, y in zip(a, b) if x != y]
    for x, y in bad[:5]:
        print("differs:", x[:3], "\n  ", str(x)[:300], "\n  ", str(y)[:300])
    print("identical" if not bad else f"{len(bad)} of {len(a)} records differ")
    return len(bad)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[0] == "record":
        res = record()
        with open(argv[1], "wb") as f:
            pickle.dump(res, f)
        print(len(res), "records")
        return 0
    with open(argv[1], "rb") as fa, open(argv[2], "rb") as fb:
        return 1 if compare(pickle.load(fa), pickle.load(fb)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
