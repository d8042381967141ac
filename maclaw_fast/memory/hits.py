"""Typed recall results: :class:`RecallHit` lists and Arrow tables from the kernels' selected
rows and score parts (the last step of :mod:`maclaw_fast.memory.recall`)."""

from __future__ import annotations

from itertools import repeat

import numpy as np
import pyarrow as pa

from maclaw_fast.persist.arrow_numpy import arrow_of, strings_of
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
        total, bm25 = parts[:2].tolist()  # not rel, nor the reasons again
        graph, recency, importance, cos, affinity = parts[3:8].tolist()
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
    entries = store.table.cached_entries(rows)
    if not all(entries):  # (``None in`` would call Entry.__eq__ on every hit)
        entries = store.entries_at(rows, entries)
    breakdowns = map(ScoreBreakdown, recency, importance, bm25, cos, affinity, graph, total)
    return list(map(RecallHit, entries, total, breakdowns, reasons))


def batch_hits(store, rows, parts, counts, has_affinity: bool) -> list[list[RecallHit]]:
    """Every query's hits (``parts``: the batch kernel's (query, part, rank) array), built in
    one pass over columns gathered for the whole batch."""
    col = hit_columns(rows, parts, counts)
    reason = REASON_NAMES[col["reason"].astype(np.int64)]
    columns = [floats_of(col[k]) for k in ("graph", "score", "bm25", "recency", "importance",
                                           "cos")]
    columns.append(floats_of(col["affinity"]) if has_affinity else [0.0] * len(columns[0]))
    flat = make_hits(store, col["row"].tolist(), reason.tolist(), *columns)
    ends = np.cumsum(counts).tolist()
    return [flat[a:b] for a, b in zip([0, *ends], ends)]


_PART_NAMES = ("score", "bm25", "rel", "graph", "recency", "importance", "cos", "affinity",
               "reason")  # the kernels' part rows (maclaw_kernels.recall.PART_*)


def hit_columns(rows, parts, counts) -> dict:
    """Every selected hit of a batch, query by query in rank order, as NumPy columns: query
    index, rank, row and each score part."""
    valid = np.arange(rows.shape[1])[None, :] < counts[:, None]
    q_index, rank = np.nonzero(valid)
    out = {"query_index": q_index, "rank": rank, "row": rows[valid]}
    out.update(zip(_PART_NAMES, parts.transpose(1, 0, 2)[:, valid]))  # one gather, not nine
    return out


def ids_array(store):
    """Every row's id as one Arrow array (cached per table version), so hits are a ``take``."""
    t = store.table
    cached = store.plans.get("ids")  # the cache is emptied whenever the table changes
    if cached is None or len(cached) != t.n_rows:
        cached = store.plans["ids"] = t.id_array()
    return cached


def arrow_hits(store, rows, parts, counts):
    col = hit_columns(rows, parts, counts)
    table = {"query_index": arrow_of(col["query_index"].astype(np.int32)),
             "rank": arrow_of(col["rank"].astype(np.int32)),
             "id": ids_array(store).take(arrow_of(col["row"]))}
    for name in ("score", "recency", "importance", "bm25", "cos", "affinity", "graph"):
        table[name] = arrow_of(col[name])
    table["reason"] = pa.DictionaryArray.from_arrays(  # RecallHit.reason, dictionary-encoded
        arrow_of(col["reason"].astype(np.int8)), strings_of(REASONS))
    return pa.table(table)
