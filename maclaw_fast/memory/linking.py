"""Write-path policies of the store: graph auto-linking on save (design §4) and capacity
overflow into the archive (design §9). Functions over a MemoryStore, called under its lock."""

from __future__ import annotations

import numpy as np

from maclaw_fast.memory.columns import SELF_IDENTITY
from maclaw_fast.persist.journal import AdjacentOp, ConversationOp, DeleteOp, LinkOp
from maclaw_fast.records import Entry


def link_candidates(bm25: np.ndarray, cos: np.ndarray, alive: np.ndarray, seq: np.ndarray,
                    row: int, use_cos: bool, min_cos: float, w_bm25: float, w_cos: float,
                    top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``top`` entries a new ``row`` links to (design §4): with a vector, those with
    cos ≥ ``min_cos`` ranked by ``w_bm25·bm25 + w_cos·cos`` (strength = cos); without, those
    with BM25 > 0 ranked by BM25 (strength = bm25 / best, ≤ 1). Ties: older (lower seq) first.
    Returns ``(rows, strengths)``."""
    others = alive.copy()
    others[row] = False
    cos = cos.astype(np.float64)  # float64 ranks, as the store sums its scores
    if use_cos:
        ok, rank = others & (cos >= min_cos), w_bm25 * bm25 + w_cos * cos
    else:
        ok, rank = others & (bm25 > 0.0), bm25
    cand = np.flatnonzero(ok)
    if cand.size > top > 0:  # only rows at or above the top-th rank can win (ties kept)
        cand = cand[rank[cand] >= np.partition(rank[cand], cand.size - top)[cand.size - top]]
    picked = cand[np.lexsort((seq[cand], -rank[cand]))[:max(top, 0)]]
    if use_cos:
        return picked, cos[picked]
    best = bm25[others].max(initial=0.0)
    return picked, np.minimum(1.0, bm25[picked] / best) if picked.size else np.zeros(0)


def auto_link(store, row: int) -> list[LinkOp]:
    """Link a new entry to its top-3 related ones (design §4); returns the journal op that replays
    it (the link rule is deterministic, so one op restores both directions)."""
    t, g = store.table, store.config.graph
    n = t.n_rows
    if len(t) <= 1:
        return []
    bm25 = store.bm25.scores(store.last_tokens, n)  # the tokens _insert just indexed
    use_cos = bool(store.dim and store.vectors.has_vec[row])
    cos = (store.vectors.scores(store.vectors.matrix[row], n) if use_cos
           else np.zeros(n, np.float32))
    rows, strengths = link_candidates(bm25, cos, t.alive[:n], t.seq[:n], row, use_cos,
                                      g.link_min_cos, g.link_bm25_weight, g.link_cos_weight,
                                      g.link_top)
    touched, weights = rows.tolist(), strengths.tolist()
    for other, s in zip(touched, weights):
        store.graph.link(row, other, s)
    t.touched(touched + [row])
    if not touched:
        return []
    return [LinkOp(t.ids[row], [t.ids[r] for r in touched], weights)]


def link_adjacent(store, row: int, thread: str | None) -> list[AdjacentOp]:
    """Link a new row after the last one of its conversation (design R5): the same ``thread``
    always continues; without one, the previous save without a thread is continued when it was
    made within ``adjacency_gap_s`` of this one (by their ``created_at``). Returns the journal
    op that replays it."""
    g = store.config.graph
    if not g.adjacency:
        return []
    t = store.table
    key = thread or ""
    before = store.graph.tail(key)
    continues = before >= 0 and bool(t.alive[before])
    if continues and not thread:
        continues = abs(float(t.created_at[row]) - float(t.created_at[before])) <= g.adjacency_gap_s
    # in place: the recall plans hold views of the link arrays and see the change
    linked = store.graph.append_to_thread(key, row, continues)
    return [AdjacentOp(t.ids[row], key, t.ids[linked] if linked >= 0 else "")]


def replay_adjacent(store, op: AdjacentOp) -> None:
    """Apply a journalled :class:`AdjacentOp` (no rule is re-run: the op says what was done)."""
    t = store.table
    row = t.row_of.get(op.id)
    if row is None:
        return
    before = t.row_of.get(op.prev, -1) if op.prev else -1
    if before >= 0:
        store.graph.link_adjacent(before, row)
    store.graph.set_tail(op.thread, row)


def relink_restored(store, row: int, prev_id: str, next_id: str) -> list[ConversationOp]:
    """Put an entry restored from the archive back into its conversation (design R5): after the
    entry that preceded it when archived and before the one that followed it, each when still
    in the store with that side free or pointing at the other (so a reply restored after its
    question follows it again). Returns the journal op that replays it."""
    if not store.config.graph.adjacency:
        return []
    t, g = store.table, store.graph
    before = t.row_of.get(prev_id, -1) if prev_id else -1
    after = t.row_of.get(next_id, -1) if next_id else -1
    if before >= 0 and int(g.next[before]) not in (-1, after):
        before = -1  # its conversation moved on without this entry
    if after >= 0 and int(g.prev[after]) not in (-1, before):
        after = -1
    if before < 0 and after < 0:
        return []
    g.splice(row, before, after)  # in place: the recall plans hold views of these arrays
    return [ConversationOp(t.ids[row], t.ids[before] if before >= 0 else "",
                           t.ids[after] if after >= 0 else "")]


def replay_relink(store, op: ConversationOp) -> None:
    """Apply a journalled :func:`relink_restored` (the op says what was done)."""
    row_of = store.table.row_of
    row = row_of.get(op.id)
    if row is not None:
        store.graph.splice(row, row_of.get(op.prev, -1) if op.prev else -1,
                            row_of.get(op.next, -1) if op.next else -1)


def adjacency_state(store) -> tuple[list[list[str]], dict[str, str]]:
    """The conversation links as (``[prev id, next id]`` pairs, thread → last id), for a
    snapshot."""
    t, g = store.table, store.graph
    pairs = []
    for row in t.live_rows().tolist():
        nxt = int(g.next[row]) if row < g.next.shape[0] else -1
        if nxt >= 0:
            pairs.append([t.ids[row], t.ids[nxt]])
    tails = {name: t.ids[row] for name, row in g.tails.items() if t.alive[row]}
    return pairs, tails


def restore_adjacency(store, pairs: list[list[str]], tails: dict[str, str]) -> None:
    """Restore what :func:`adjacency_state` saved (ids no longer present are skipped)."""
    if not pairs and not tails:
        return
    names = list(tails)
    # one lookup for every id (a reopened table answers it without making its id dict)
    rows = store.table.rows_of([i for a, b in pairs for i in (a, b)]
                                + [tails[name] for name in names])
    g = store.graph
    for k in range(len(pairs)):
        a, b = rows[2 * k], rows[2 * k + 1]
        if a >= 0 and b >= 0:
            g.link_adjacent(a, b)
    for name, row in zip(names, rows[2 * len(pairs):]):
        if row >= 0:
            g.set_tail(name, row)


def least_used(store, count: int) -> list[int]:
    """The ``count`` rows capacity and GC archive first: unprotected (not self_identity, not
    pinned), fewest accesses, then oldest ``updated_at``, then store order (a stable sort)."""
    t = store.table
    rows = t.live_rows()
    rows = rows[~((t.category[rows] == SELF_IDENTITY) | t.pinned[rows])]
    return rows[np.lexsort((t.updated_at[rows], t.access[rows]))[:max(count, 0)]].tolist()


def enforce_capacity(store) -> list[Entry]:
    """Move the least-used unprotected entries to the archive beyond capacity (design §9)."""
    excess = len(store.table) - store.config.capacity.store_capacity
    return archive_rows(store, least_used(store, excess)) if excess > 0 else []


def archive_rows(store, rows: list[int]) -> list[Entry]:
    """Move ``rows`` to the archive: archived first, then deleted from the store, so a crash in
    between leaves a copy in both (reconciled on open), never in neither. Each keeps the ids of
    its conversation neighbours as they were before any of ``rows`` left."""
    t, g = store.table, store.graph
    links = {row: tuple(t.ids[r] if r >= 0 and t.alive[r] else "" for r in g.adjacent(row))
             for row in rows}
    moved = []
    for row in rows:
        entry = store.entry_at(row)
        vec = store.vectors.get(row) if store.dim else None
        store.archive.add(entry, vec, links[row])
        store.remove_row(row)
        store.journal(DeleteOp(entry.id))
        moved.append(entry)
    return moved
