"""Write-path policies of the store: graph auto-linking on save (SPEC §4) and capacity
overflow into the archive (SPEC §9). Functions over a MemoryStore, called under its lock."""

from __future__ import annotations

import numpy as np

from maclaw_fast.persist.journal import DeleteOp, LinkOp
from maclaw_fast.records import Entry
from maclaw_kernels.graph import link_candidates


def auto_link(store, row: int) -> list[LinkOp]:
    """Link a new entry to its top-3 related ones (SPEC §4); returns the journal op that replays
    it (the link rule is deterministic, so one op restores both directions)."""
    t, g = store._table, store.config.graph
    n = t.n_rows
    if len(t) <= 1:
        return []
    bm25 = store._bm25.scores(store._last_tokens, n)  # the tokens _insert just indexed
    use_cos = bool(store.dim and store._vectors.has_vec[row])
    cos = (store._vectors.scores(store._vectors.matrix[row], n) if use_cos
           else np.zeros(n, np.float32))
    rows, strengths = link_candidates(bm25, cos, t.alive[:n], t.seq[:n], row, use_cos,
                                      g.link_min_cos, g.link_bm25_weight, g.link_cos_weight,
                                      g.link_top)
    touched, weights = rows.tolist(), strengths.tolist()
    for other, s in zip(touched, weights):
        store._graph.link(row, other, s)
    t.touched(touched + [row])
    if not touched:
        return []
    return [LinkOp(t.ids[row], [t.ids[r] for r in touched], weights)]


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
