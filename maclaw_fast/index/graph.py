"""The memory graph (design §4) as flat arrays: ``nbr[row, slot]`` (-1 = empty) and ``weight``,
plus the conversation links (design R5) ``prev[row]`` / ``next[row]`` (-1 = none).

Edges are directed slots; ``link`` applies the design rule to each direction separately, so a full
node can refuse its half of an edge. Conversation links are separate from the ≤ 5 edges: each
row has at most one predecessor and one successor, and each thread (a name; "" for saves
without one) remembers its last row.
"""

from __future__ import annotations

import numpy as np


class MemoryGraph:
    """Fixed-width adjacency keyed by row.

    Examples
    --------
    >>> g = MemoryGraph(max_edges=5)
    >>> g.link(0, 1, 0.9)
    >>> g.neighbours(1)
    [(0, 0.9)]
    """

    def __init__(self, max_edges: int = 5, capacity: int = 64) -> None:
        self.max_edges = int(max_edges)
        self.nbr = np.full((capacity, self.max_edges), -1, dtype=np.int64)
        self.weight = np.zeros((capacity, self.max_edges), dtype=np.float64)
        self.prev = np.full(capacity, -1, dtype=np.int64)
        self.next = np.full(capacity, -1, dtype=np.int64)
        self.tails: dict[str, int] = {}  # thread -> its last row
        self._thread_of: dict[int, str] = {}  # a thread's last row -> the thread

    def reserve(self, n: int) -> None:
        cap = self.nbr.shape[0]
        if n <= cap:
            return
        new_cap = max(n, 2 * cap)
        nbr = np.full((new_cap, self.max_edges), -1, dtype=np.int64)
        w = np.zeros((new_cap, self.max_edges), dtype=np.float64)
        nbr[:cap] = self.nbr
        w[:cap] = self.weight
        self.nbr, self.weight = nbr, w
        for name in ("prev", "next"):
            links = np.full(new_cap, -1, dtype=np.int64)
            links[:cap] = getattr(self, name)
            setattr(self, name, links)

    # ------------------------------------------------------------------ conversation links
    def append_to_thread(self, thread: str, row: int, continues: bool) -> int:
        """Make ``row`` the last row of ``thread``, linked after the previous last row when
        ``continues`` (and there is one); returns that previous row or -1."""
        self.reserve(row + 1)
        before = self.tails.get(thread, -1)
        if not continues or before == row:
            before = -1
        if before >= 0:
            self.next[before] = row
            self.prev[row] = before
        self._set_tail(thread, row)
        return before

    def link_adjacent(self, a: int, b: int) -> None:
        """Restore the link a → b as persisted (without touching the threads' last rows)."""
        self.reserve(max(a, b) + 1)
        self.next[a] = b
        self.prev[b] = a

    def splice(self, row: int, before: int, after: int) -> None:
        """Put ``row`` back between ``before`` and ``after`` (-1 = none) in their conversation
        (an entry restored from the archive), without touching the threads' last rows."""
        self.reserve(max(row, before, after) + 1)
        if before >= 0:
            self.next[before] = row
            self.prev[row] = before
        if after >= 0:
            self.prev[after] = row
            self.next[row] = after

    def set_tail(self, thread: str, row: int) -> None:
        """Restore a thread's last row as persisted."""
        self.reserve(row + 1)
        self._set_tail(thread, row)

    def _set_tail(self, thread: str, row: int) -> None:
        old = self.tails.get(thread)
        if old is not None:
            self._thread_of.pop(old, None)
        other = self._thread_of.get(row)  # a row ends at most one thread
        if other is not None:
            self.tails.pop(other, None)
        self.tails[thread] = row
        self._thread_of[row] = thread

    def tail(self, thread: str) -> int:
        """The last row of ``thread`` (-1 when none)."""
        return self.tails.get(thread, -1)

    def adjacent(self, row: int) -> tuple[int, int]:
        """(previous row, next row) of ``row`` in its conversation (-1 when none)."""
        if row >= self.prev.shape[0]:
            return -1, -1
        return int(self.prev[row]), int(self.next[row])

    def _link_one(self, a: int, b: int, s: float) -> bool:
        # rows hold 5 slots: plain lists beat NumPy calls at this size
        targets = self.nbr[a].tolist()
        weights = self.weight[a].tolist()
        if b in targets:  # an existing edge keeps the stronger strength
            slot = targets.index(b)
            self.weight[a, slot] = max(weights[slot], s)
            return True
        if -1 in targets:
            slot = targets.index(-1)
        else:
            slot = min(range(len(weights)), key=weights.__getitem__)
            if weights[slot] >= s:
                return False
        self.nbr[a, slot] = b
        self.weight[a, slot] = s
        return True

    def link(self, a: int, b: int, strength: float) -> None:
        """Add the edge a↔b; a full side replaces its weakest edge only if it is weaker."""
        if a == b:
            return
        self.reserve(max(a, b) + 1)
        self._link_one(a, b, float(strength))
        self._link_one(b, a, float(strength))

    def set_edges(self, row: int, targets: list[int], strengths: list[float]) -> None:
        """Restore one node's outgoing edges as persisted."""
        self.reserve(row + 1)
        self.nbr[row] = -1
        self.weight[row] = 0.0
        for i, (t, s) in enumerate(zip(targets[: self.max_edges], strengths)):
            self.nbr[row, i] = t
            self.weight[row, i] = s

    def load_edges(self, indptr: np.ndarray, targets: np.ndarray, strengths: np.ndarray
                   ) -> None:
        """Restore the edges of rows ``0..n-1`` as persisted, in CSR form (row ``r``'s targets
        and strengths at ``indptr[r]:indptr[r + 1]``); a target < 0 (gone) is skipped and each
        row keeps its first ``max_edges`` others, as :meth:`set_edges` row by row would.

        >>> g = MemoryGraph(max_edges=2)
        >>> g.load_edges(np.array([0, 3, 4]), np.array([1, -1, 1, 0]), np.array([.5, .4, .3, .5]))
        >>> g.neighbours(0), g.neighbours(1)
        ([(1, 0.5), (1, 0.3)], [(0, 0.5)])
        """
        n = indptr.shape[0] - 1
        self.reserve(n)
        row_of = np.repeat(np.arange(n), np.diff(indptr))
        keep = targets >= 0
        row_of, targets, strengths = row_of[keep], targets[keep], strengths[keep]
        # each kept edge's slot: its rank among its row's kept edges
        first = np.searchsorted(row_of, np.arange(n))
        slot = np.arange(row_of.shape[0]) - first[row_of]
        fits = slot < self.max_edges
        row_of, slot = row_of[fits], slot[fits]
        self.nbr[:n] = -1
        self.weight[:n] = 0.0
        self.nbr[row_of, slot] = targets[fits]
        self.weight[row_of, slot] = strengths[fits]

    def neighbours(self, row: int) -> list[tuple[int, float]]:
        if row >= self.nbr.shape[0]:
            return []
        targets = self.nbr[row].tolist()
        if max(targets) < 0:  # (most rows: a recall asks for every hit's edges)
            return []
        return [(t, w) for t, w in zip(targets, self.weight[row].tolist()) if t >= 0]

    def has_edges(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of ``rows`` (int64) has an edge: one gather instead of a
        :meth:`neighbours` call per row."""
        inside = rows < self.nbr.shape[0]
        out = np.zeros(rows.shape[0], np.bool_)
        out[inside] = (self.nbr[rows[inside]] >= 0).any(axis=1)
        return out

    def remove_node(self, row: int) -> list[int]:
        """Drop ``row`` and every edge into it; returns the rows whose edges changed. Its
        conversation neighbours are joined to each other (the order of a conversation stays),
        and a thread it ended ends at its predecessor."""
        if row >= self.nbr.shape[0]:
            return []
        before, after = int(self.prev[row]), int(self.next[row])
        if before >= 0:
            self.next[before] = after
        if after >= 0:
            self.prev[after] = before
        self.prev[row] = self.next[row] = -1
        thread = self._thread_of.pop(row, None)
        if thread is not None:
            del self.tails[thread]
            if before >= 0:
                self._set_tail(thread, before)
        hit_rows, hit_slots = np.nonzero(self.nbr == row)
        self.nbr[hit_rows, hit_slots] = -1
        self.weight[hit_rows, hit_slots] = 0.0
        self.nbr[row] = -1
        self.weight[row] = 0.0
        return sorted(set(hit_rows.tolist()))
