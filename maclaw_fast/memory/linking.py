"""Write-path policies of the store: graph auto-linking on save (SPEC §4) and capacity
overflow into the archive (SPEC §9). Functions over a MemoryStore, called under its lock."""

from __future__ import annotations

import numpy as np

from maclaw_fast.persist.journal import DeleteOp
from maclaw_fast.records import Entry


def auto_link(store, row: int) -> list[int]:
    """Link a new entry to its top-3 related ones (SPEC §4); returns rows whose edges changed."""
    t, g = store._table, store.config.graph
    n = t.n_rows
    if len(t) <= 1:
        return []
    bm25 = store._bm25.scores(store._last_tokens, n)  # the tokens _insert just indexed
    bm25[row] = 0.0
    bm25[~t.alive[:n]] = 0.0
    has_vec = store.dim and store._vectors.has_vec[row]
    if has_vec:
        cos = store._vectors.scores(store._vectors.matrix[row], n).astype(np.float64)
        cos[row] = 0.0
        cos[~t.alive[:n]] = 0.0
        cand = np.flatnonzero(cos >= g.link_min_cos)
        rank = g.link_bm25_weight * bm25[cand] + g.link_cos_weight * cos[cand]
        strength = cos[cand]
    else:
        cand = np.flatnonzero(bm25 > 0)
        best = bm25[cand].max() if cand.size else 1.0
        rank = bm25[cand]
        strength = np.minimum(1.0, bm25[cand] / best)
    order = np.lexsort((t.seq[cand], -rank))[: g.link_top]
    for i in order:
        store._graph.link(row, int(cand[i]), float(strength[i]))
    touched = [int(cand[i]) for i in order]
    t.touched(touched + [row])
    return touched


def enforce_capacity(store) -> list[Entry]:
    """Move the least-used unprotected entries to the archive beyond capacity (SPEC §9)."""
    t = store._table
    excess = len(t) - store.config.capacity.store_capacity
    if excess <= 0:
        return []
    rows = t.live_rows()
    protected = (t.category[rows] == 0) | t.pinned[rows]  # 0 = self_identity
    rows = rows[~protected]
    order = np.lexsort((t.updated_at[rows], t.access[rows]))[:excess]
    return archive_rows(store, [int(rows[i]) for i in order])


def archive_rows(store, rows: list[int]) -> list[Entry]:
    """Move ``rows`` to the archive: archived first, then deleted from the store, so a crash in
    between leaves a copy in both (reconciled on open), never in neither."""
    moved = []
    for row in rows:
        entry = store._entry(row)
        vec = store._vectors.get(row) if store.dim else None
        store.archive.add(entry, vec)
        store._remove_row(row)
        store._log(DeleteOp(entry.id))
        moved.append(entry)
    return moved
