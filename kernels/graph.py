"""Memory-graph walks over fixed-width adjacency (``nbr[row, slot]``, -1 = empty)."""

import numpy as np
from numba import njit


@njit(cache=True)
def propagate_relevance(seeds, seed_values, nbr, edge_w, hops, hop_factor, eligible):
    """Breadth-first from ``seeds``: a node reached gets ``value · edge · hop_factor`` per hop,
    compounding, keeping the maximum when reached twice; seeds are never re-added. Returns a dense
    array (0 where nothing arrived) over ``eligible`` rows only."""
    n = nbr.shape[0]
    best = np.zeros(n, dtype=np.float64)
    is_seed = np.zeros(n, dtype=np.bool_)
    for s in seeds:
        is_seed[s] = True
    frontier = seeds.copy()
    values = seed_values.astype(np.float64).copy()
    for _ in range(hops):
        nxt = np.empty(frontier.shape[0] * nbr.shape[1], dtype=np.int64)
        nval = np.empty(nxt.shape[0], dtype=np.float64)
        m = 0
        for f in range(frontier.shape[0]):
            node = frontier[f]
            for e in range(nbr.shape[1]):
                t = nbr[node, e]
                if t < 0 or is_seed[t] or not eligible[t]:
                    continue
                v = values[f] * edge_w[node, e] * hop_factor
                if v > best[t]:
                    best[t] = v
                    nxt[m] = t
                    nval[m] = v
                    m += 1
        frontier = nxt[:m]
        values = nval[:m]
        if m == 0:
            break
    return best
