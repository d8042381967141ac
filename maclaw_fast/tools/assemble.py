"""Result assembly for :class:`ToolRouter`: the kernels' arrays → :class:`ToolScore` lists.

The fields of every selected (message, row) pair are gathered in one kernel pass
(``selected_fields``) and turned into Python lists at once, so building a result costs one object
per tool and no NumPy scalar access (``float(a[q, r])`` per field was most of ``route_batch``'s
Python time; a fancy index per field, ~30 µs of a single ``route``).
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.tools.types import ToolScore
from maclaw_kernels.routing import selected_fields


def gather(b, prio: np.ndarray, qs: np.ndarray, rows: np.ndarray) -> tuple[list, ...]:
    """Fields of the pairs ``(qs[i], rows[i])`` as lists: score, retrieval, experience,
    priority, bm25, cosine, group, hit."""
    return (b.score[qs, rows].tolist(), b.ret[qs, rows].tolist(), b.exp[qs, rows].tolist(),
            prio[rows].tolist(), b.bm[qs, rows].tolist(), b.cos[qs, rows].tolist(),
            b.group[qs, rows].tolist(), b.hit[qs, rows].tolist())


def selected(b, prio: np.ndarray):
    """Every message's selected rows, flattened in order, with their gathered fields (as
    :func:`gather` gives them, group and hit as 1.0/0.0) and the offsets ``starts`` (message
    ``q`` owns ``starts[q]:starts[q + 1]``)."""
    counts = b.out_n.tolist()
    starts = [0]
    for c in counts:
        starts.append(starts[-1] + c)
    rows = np.empty(starts[-1], np.int64)
    fields = np.empty((8, starts[-1]))
    selected_fields(b.out_idx, b.out_n, b.score, b.ret, b.exp, prio, b.bm, b.cos, b.group, b.hit,
                    rows, fields)
    return rows.tolist(), fields.tolist(), starts


def tool_scores(names: list, rows: list, cols: tuple, lo: int, hi: int,
                reranked=()) -> list[ToolScore]:
    """:class:`ToolScore` of ``rows[lo:hi]`` from gathered ``cols`` (see :func:`gather`)."""
    sc, rt, ex, pr, bm, co, gr, hit = cols
    out = []
    for j in range(lo, hi):
        name = names[rows[j]]
        g = bool(gr[j])
        out.append(ToolScore(
            name=name, reason="rerank" if reranked and name in reranked else "group" if g
            else "ranked" if hit[j] else "fill", score=sc[j], retrieval=rt[j], experience=ex[j],
            priority=pr[j], bm25=bm[j], cosine=co[j], group=g))
    return out
