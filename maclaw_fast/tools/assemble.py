"""Result assembly for :class:`ToolRouter`: the kernels' arrays → :class:`ToolScore` lists.

The fields of every selected (message, row) pair are gathered with one fancy index per field and
turned into Python lists at once, so building a result costs one object per tool and no NumPy
scalar access (``float(a[q, r])`` per field was most of ``route_batch``'s Python time).
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.tools.types import ToolScore


def gather(b, prio: np.ndarray, qs: np.ndarray, rows: np.ndarray) -> tuple[list, ...]:
    """Fields of the pairs ``(qs[i], rows[i])`` as lists: score, retrieval, experience,
    priority, bm25, cosine, group, hit."""
    return (b.score[qs, rows].tolist(), b.ret[qs, rows].tolist(), b.exp[qs, rows].tolist(),
            prio[rows].tolist(), b.bm[qs, rows].tolist(), b.cos[qs, rows].tolist(),
            b.group[qs, rows].tolist(), b.hit[qs, rows].tolist())


def selected(b, prio: np.ndarray):
    """Every message's selected rows, flattened in order, with their gathered fields and the
    offsets ``starts`` (message ``q`` owns ``starts[q]:starts[q + 1]``)."""
    nq, k = b.out_idx.shape
    qs, pos = np.nonzero(np.arange(k)[None, :] < b.out_n[:, None])
    rows = b.out_idx[qs, pos]
    starts = np.zeros(nq + 1, np.int64)
    np.cumsum(b.out_n, out=starts[1:])
    return rows.tolist(), gather(b, prio, qs, rows), starts.tolist()


def tool_scores(names: list, rows: list, cols: tuple, lo: int, hi: int,
                reranked=()) -> list[ToolScore]:
    """:class:`ToolScore` of ``rows[lo:hi]`` from gathered ``cols`` (see :func:`gather`)."""
    sc, rt, ex, pr, bm, co, gr, hit = cols
    out = []
    for j in range(lo, hi):
        name = names[rows[j]]
        g = gr[j]
        out.append(ToolScore(
            name=name, reason="rerank" if reranked and name in reranked else "group" if g
            else "ranked" if hit[j] else "fill", score=sc[j], retrieval=rt[j], experience=ex[j],
            priority=pr[j], bm25=bm[j], cosine=co[j], group=g))
    return out
