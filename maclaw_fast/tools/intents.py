"""Multi-intent budget for the tool router: a message that asks for several things gets a tool
for each (``RouterConfig.clause_tools``).

The message's own ranking keeps its best tool first; each sentence clause (:mod:`text.clauses`)
is then ranked on its own (its BM25 and its vector, fused as the message is) and its best tool
gets a place among the chosen ones when the message's ranking has it in its first
``clause_within`` (a clause such as "Sure, I can help." names no tool, and its best one is far
down the message's list). The rest of the budget follows the message's ranking. A message
without clauses is ranked exactly as before. Measured in ``benchmarks/results/quality_tools.md``
(Seal-Tools COMP@5, section "Multi-intent budget").
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.text import tokenize
from maclaw_kernels.routing import fuse_scores, topk_where


def clause_bests(bm25_index, texts: list[str], clause_cos: np.ndarray | None, n: int,
                 cand: np.ndarray, tie: np.ndarray, n_vec: int, w_bm25: float,
                 w_cos: np.ndarray, norm: int) -> list[int]:
    """Each clause's best candidate row by its own fused BM25 and cosine (-1: no hit).

    ``bm25_index`` None: cosines alone; ``clause_cos``: ``(len(texts), n)`` cosines of each
    clause's vector (None: BM25 alone);
    ``w_cos[j]``: the cosine weight of clause ``j`` (its message's)."""
    # one serial query a clause: a message has few, and the batch kernel's threads cost more
    bm = np.zeros((len(texts), n))
    if bm25_index is not None:
        for j, t in enumerate(texts):
            bm25_index.scores(tokenize(t), n, out=bm[j])
    cos = np.zeros((len(texts), n)) if clause_cos is None else clause_cos.astype(np.float64)
    hit, fused = np.empty(n, np.bool_), np.empty(n)
    scratch, best = np.empty(max(n_vec, 1), np.int64), np.empty(1, np.int64)
    out = []
    for j in range(len(texts)):
        fuse_scores(bm[j], cos[j], cand, tie, n_vec, w_bm25, float(w_cos[j]), norm, hit, fused,
                    scratch)
        out.append(int(best[0]) if topk_where(fused, hit, hit, True, tie, 1, best) else -1)
    return out


def spread(order: list[int], bests: list[int], k: int, within: int) -> list[int]:
    """The ``k`` rows to keep from the message's ranking ``order`` (best first, at least its
    first ``within`` rows when there are that many): its best row, then the clauses' best rows
    found in its first ``within`` (in the message's order), then its order. The result keeps
    the message's order.

    Examples
    --------
    >>> spread([7, 3, 5, 9, 2], bests=[9, 7, 4], k=3, within=5)
    [7, 3, 9]
    >>> spread([7, 3, 5, 9, 2], bests=[2], k=3, within=4)  # 2 is past the first 4
    [7, 3, 5]
    """
    head = order[:within]
    keep = set(order[:1]) | (set(bests) & set(head))
    chosen = [r for r in head if r in keep][:k]
    taken = set(chosen)
    for r in order:
        if len(chosen) >= k:
            break
        if r not in taken:
            chosen.append(r)
            taken.add(r)
    rank = {r: i for i, r in enumerate(order)}
    return sorted(chosen, key=rank.__getitem__)


def message_rank(ret: np.ndarray, hit: np.ndarray, tie: np.ndarray, row: int) -> int:
    """``row``'s place in the message's retrieval ranking (hits by fused score, then ``tie``);
    -1 for a row that is no hit."""
    if not hit[row]:
        return -1
    v, t = ret[row], tie[row]
    return int(np.count_nonzero(hit & ((ret > v) | ((ret == v) & (tie < t)))))


def admit(selected: list[int], bests: list[int], key: np.ndarray, tie: np.ndarray,
          nonbuiltin: np.ndarray, nb_slots: int) -> list[int]:
    """The routed rows ``selected`` (by ``key`` descending, ties by ``tie``) with every row of
    ``bests`` in: one that is missing takes the place of the last selected row that is neither
    the first nor another best, a non-builtin one when the non-builtin budget ``nb_slots`` is
    full; re-sorted by ``key``. A best that finds no row to replace is left out."""
    sel = list(selected)
    protected = set(sel[:1]) | set(bests)
    for r in bests:
        if r in sel:
            continue
        nb_full = nonbuiltin[r] and sum(bool(nonbuiltin[s]) for s in sel) >= nb_slots
        for p in range(len(sel) - 1, 0, -1):
            s = sel[p]
            if s not in protected and (not nb_full or nonbuiltin[s]):
                sel[p] = r
                break
    return sorted(sel, key=lambda r: (-key[r], tie[r]))
