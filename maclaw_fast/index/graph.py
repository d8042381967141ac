"""The memory graph (SPEC §4) as flat arrays: ``nbr[row, slot]`` (-1 = empty) and ``weight``.

Edges are directed slots; ``link`` applies the SPEC rule to each direction separately, so a full
node can refuse its half of an edge.
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

    def neighbours(self, row: int) -> list[tuple[int, float]]:
        if row >= self.nbr.shape[0]:
            return []
        return [(t, w) for t, w in zip(self.nbr[row].tolist(), self.weight[row].tolist())
                if t >= 0]

    def remove_node(self, row: int) -> list[int]:
        """Drop ``row`` and every edge into it; returns the rows whose edges changed."""
        if row >= self.nbr.shape[0]:
            return []
        hit_rows, hit_slots = np.nonzero(self.nbr == row)
        self.nbr[hit_rows, hit_slots] = -1
        self.weight[hit_rows, hit_slots] = 0.0
        self.nbr[row] = -1
        self.weight[row] = 0.0
        return sorted(set(hit_rows.tolist()))
