"""Typed recall results: :class:`RecallHit` lists and Arrow tables from the kernels' selected
rows and score parts (the last step of :mod:`maclaw_fast.memory.recall`)."""

from __future__ import annotations

from itertools import repeat

import numpy as np

from maclaw_fast.memory.columns import gather
from maclaw_fast.records import RecallHit, ScoreBreakdown

REASONS = ("scored", "graph", "self_identity", "user_fact", "revived", "archived")
REASON_OF = {float(code): name for code, name in enumerate(REASONS)}  # the kernels' codes
REASON_NAMES = np.array(REASONS, dtype=object)  # a take maps a batch's codes at once


def hits_from_parts(store, rows, parts, has_affinity: bool) -> list[RecallHit]:
    """Typed hits from the kernel's rows and their part rows (score, bm25, rel, graph, recency,
    importance, cos, affinity, reason code); ``has_affinity``: whether any row has a project
    affinity in this recall."""
    # leave NumPy once per part row: per-element NumPy scalars cost ~100 ns each
    reason = parts[8].tolist()
    if any(reason):  # a fixed or leading row, or one the graph walk raised
        total, bm25, _rel, graph, recency, importance, cos, affinity, _ = parts.tolist()
        names = map(REASON_OF.__getitem__, reason)
    else:  # every hit ranked by its own score, so no graph part: two part rows fewer to convert
        total, bm25 = parts[:2].tolist()
        recency, importance, cos = parts[4:7].tolist()
        graph = [0.0] * len(reason)
        affinity = parts[7].tolist() if has_affinity else graph
        names = repeat(REASONS[0])
    return make_hits(store, rows.tolist(), names, graph, total, bm25, recency, importance, cos,
                     affinity)


def floats_of(column: np.ndarray) -> list[float]:
    """``column.tolist()``; an all-zero column (affinity without a project, most graph parts)
    as one shared 0.0: 20k float objects fewer per 1,000-query batch."""
    if not column.any():
        return [0.0] * column.shape[0]
    return column.tolist()


def make_hits(store, rows: list[int], reasons, graph: list, total: list, bm25: list,
              recency: list, importance: list, cos: list, affinity: list) -> list[RecallHit]:
    """One :class:`RecallHit` per row from plain-list columns (``reasons``: an iterable of
    names). The structs are built by ``map`` over the columns, in C: ~0.1 µs a hit."""
    entries = store._table.cached_entries(rows)
    if not all(entries):  # (``None in`` would call Entry.__eq__ on every hit)
        entries = store._entries(rows, entries)
    breakdowns = map(ScoreBreakdown, recency, importance, bm25, cos, affinity, graph, total)
    return list(map(RecallHit, entries, total, breakdowns, reasons))


def batch_hits(store, plan, rows, parts, counts, cos_sel, affinity,
               scope_of) -> list[list[RecallHit]]:
    """Every query's hits, built in one pass over columns gathered for the whole batch."""
    col = hit_columns(rows, parts, counts, cos_sel, affinity, scope_of)
    reason = REASON_NAMES[col["reason"].astype(np.int64)]
    hit_rows = col["row"].tolist()
    # a row's recency and importance are the same in every query: one float object per row
    # (~40 hits per row in a 1,000 × 500 batch: 40k float objects fewer)
    columns = ([floats_of(col[k]) for k in ("graph", "score", "bm25")]
               + [gather(plan.recency.tolist(), hit_rows),
                  gather(plan.importance.tolist(), hit_rows)]
               + [floats_of(col[k]) for k in ("cos", "affinity")])
    flat = make_hits(store, hit_rows, reason.tolist(), *columns)
    out, start = [], 0
    for c in counts.tolist():
        out.append(flat[start: start + c])
        start += c
    return out


def hit_columns(rows, parts, counts, cos_sel, affinity, scope_of) -> dict:
    """Every selected hit of a batch, query by query in rank order, as NumPy columns: query
    index, rank, row and the score breakdown but recency and importance (per row, in the plan:
    each caller takes them in its own form)."""
    valid = np.arange(rows.shape[1])[None, :] < counts[:, None]
    q_index, rank = np.nonzero(valid)
    sel = rows[q_index, rank]
    score, bm25n, _rel, graph, reason = parts
    return {"query_index": q_index, "rank": rank, "row": sel, "score": score[q_index, rank],
            "reason": reason[q_index, rank],
            "bm25": bm25n[q_index, rank],
            "cos": np.maximum(cos_sel[q_index, rank], 0.0).astype(np.float64),
            "affinity": affinity[scope_of[q_index], sel], "graph": graph[q_index, rank]}


def ids_array(store):
    """Every row's id as one Arrow array (cached per table version), so hits are a ``take``."""
    t = store._table
    cached = store._plan_cache.get("ids")  # the cache is emptied whenever the table changes
    if cached is None or len(cached) != t.n_rows:
        cached = store._plan_cache["ids"] = t.id_array()
    return cached


def arrow_hits(store, plan, rows, parts, counts, cos_sel, affinity, scope_of):
    import pyarrow as pa

    col = hit_columns(rows, parts, counts, cos_sel, affinity, scope_of)
    table = {"query_index": pa.array(col["query_index"].astype(np.int32)),
             "rank": pa.array(col["rank"].astype(np.int32)),
             "id": ids_array(store).take(pa.array(col["row"]))}
    col["recency"], col["importance"] = plan.recency[col["row"]], plan.importance[col["row"]]
    for name in ("score", "recency", "importance", "bm25", "cos", "affinity", "graph"):
        table[name] = pa.array(col[name])
    table["reason"] = pa.DictionaryArray.from_arrays(  # RecallHit.reason, dictionary-encoded
        pa.array(col["reason"].astype(np.int8)), pa.array(REASONS))
    return pa.table(table)
