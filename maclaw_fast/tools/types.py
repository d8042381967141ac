"""Records returned by the router."""

from __future__ import annotations

import msgspec
import numpy as np


class ToolScore(msgspec.Struct, frozen=True, kw_only=True):
    """One selected tool with its score breakdown.

    ``reason``: ``core`` (configured core tool), ``session`` (activated for the session),
    ``all`` (catalog within budget), ``group`` (keyword group), ``rerank`` (moved up by the
    reranker), ``ranked`` (retrieval hit), ``fill`` (no retrieval hit, taken to fill the budget),
    ``hint`` (skill recommendation). ``retrieval`` is ``minmax(fused)``; ``bm25`` and ``cosine``
    are the raw signals.
    """

    name: str
    reason: str
    score: float = 0.0
    retrieval: float = 0.0
    experience: float = 0.0
    priority: float = 0.0
    bm25: float = 0.0
    cosine: float = 0.0
    group: bool = False


class RouteResult(msgspec.Struct, frozen=True, kw_only=True):
    """The tools chosen for one message, in order, plus what led there.

    Examples
    --------
    >>> r = RouteResult(tools=[ToolScore(name="bash", reason="core")])
    >>> r.names
    ['bash']
    """

    tools: list[ToolScore]
    groups: tuple[str, ...] = ()
    total: int = 0
    n_core: int = 0
    n_candidates: int = 0
    hybrid: bool = False
    reranked: tuple[str, ...] = ()
    hint: str = ""

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def get(self, name: str) -> ToolScore | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None


class RouteState:
    """Masks and budgets that depend only on the catalog and the session, cached between
    messages (recomputed when either changes)."""

    __slots__ = ("core", "routable", "cand", "total", "slots", "nb_slots", "core_list", "all",
                 "n_cand", "tie", "uid", "prio", "nonbuiltin")


class RouteBatch:
    """Kernel outputs for a batch of messages (rows ``q`` of every 2-D array)."""

    __slots__ = ("st", "tokens", "bm", "cos", "tags", "group", "out_idx", "out_n", "out_cand",
                 "hit", "ret", "exp", "score")


def arrow_columns(b, names: np.ndarray, prio: np.ndarray) -> dict:
    """Columns of ``route_batch_arrow`` from the kernel arrays: per message the core tools, then
    the selected rows in order."""
    core = b.st.core_list
    nq, k = b.out_idx.shape
    qs, pos = np.nonzero(np.arange(k)[None, :] < b.out_n[:, None])
    rows = b.out_idx[qs, pos]
    nc = len(core)
    qc, rc = np.repeat(np.arange(nq), nc), np.tile(np.arange(nc), nq)
    zeros = np.zeros(nq * nc)
    grp = b.group[qs, rows]
    reason = np.where(grp, "group", np.where(b.hit[qs, rows], "ranked", "fill")).astype(object)

    def cat(core_part, sel_part):
        return np.concatenate([core_part, sel_part])
    cols = {"message": cat(qc, qs), "rank": cat(rc, pos + nc),
            "name": cat(np.array([t.name for t in core] * nq, dtype=object), names[rows]),
            "reason": cat(np.array([t.reason for t in core] * nq, dtype=object), reason),
            "score": cat(zeros, b.score[qs, rows]), "retrieval": cat(zeros, b.ret[qs, rows]),
            "experience": cat(zeros, b.exp[qs, rows]), "priority": cat(zeros, prio[rows]),
            "bm25": cat(zeros, b.bm[qs, rows]),
            "cosine": cat(zeros, b.cos[qs, rows].astype(np.float64)),
            "group": cat(np.zeros(nq * nc, np.bool_), grp)}
    order = np.lexsort((cols["rank"], cols["message"]))
    return {key: v[order] for key, v in cols.items()}


def results_columns(results: list[RouteResult]) -> dict:
    """Columns of ``route_batch_arrow`` from finished results."""
    cols: dict[str, list] = {k: [] for k in ("message", "rank", *ToolScore.__struct_fields__)}
    for m, res in enumerate(results):
        for rank, t in enumerate(res.tools):
            cols["message"].append(m)
            cols["rank"].append(rank)
            for f in ToolScore.__struct_fields__:
                cols[f].append(getattr(t, f))
    return cols
