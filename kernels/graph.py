"""Memory-graph walks over fixed-width adjacency (``nbr[row, slot]``, -1 = empty)."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def propagate_reached(seeds, seed_values, nbr, edge_w, hops, hop_factor, eligible):
    """Breadth-first from ``seeds``: a node reached gets ``value · edge · hop_factor`` per hop,
    compounding, keeping the maximum when reached twice; seeds are never re-added. Returns the
    dense values over the ``eligible`` rows (0 where nothing arrived) and the rows raised above 0,
    each once, in the order they were first reached (a caller visits those, not every row)."""
    n = nbr.shape[0]
    best = np.empty(n)
    is_seed = np.empty(n, np.bool_)
    for i in range(n):
        best[i] = 0.0
        is_seed[i] = False
    for s in seeds:
        is_seed[s] = True
    reached = np.empty(n, np.int64)
    n_reached = 0
    frontier = np.empty(seeds.shape[0], np.int64)
    values = np.empty(seeds.shape[0])
    for j in range(seeds.shape[0]):
        frontier[j] = seeds[j]
        values[j] = seed_values[j]
    for _ in range(hops):
        nxt = np.empty(frontier.shape[0] * nbr.shape[1], np.int64)
        nval = np.empty(nxt.shape[0])
        m = 0
        for f in range(frontier.shape[0]):
            node = frontier[f]
            for e in range(nbr.shape[1]):
                t = nbr[node, e]
                if t < 0 or is_seed[t] or not eligible[t]:
                    continue
                v = values[f] * edge_w[node, e] * hop_factor
                if v > best[t]:
                    if best[t] == 0.0:
                        reached[n_reached] = t
                        n_reached += 1
                    best[t] = v
                    nxt[m] = t
                    nval[m] = v
                    m += 1
        frontier = nxt[:m]
        values = nval[:m]
        if m == 0:
            break
    return best, reached[:n_reached]


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def propagate_linked(seeds, seed_values, nbr, edge_w, hops, hop_factor, prev, nxt, adj_hops,
                     adj_factor, eligible):
    """:func:`propagate_reached` over the similarity edges, then along the conversation links
    (design R5): from each seed, ``prev`` and ``nxt`` (row → row, -1 = none) are followed for up to
    ``adj_hops`` steps, the ``h``-th step giving ``value · adj_factor^h``; a walk stops at a
    missing link, a seed or a row not ``eligible`` (a seed ranks on its own match). Every row keeps the best value each kind of walk gave it; returns
    (similarity values, link values, rows raised above 0 by either, in the order first
    reached): recall combines the two differently (:func:`maclaw_kernels.recall.linked_relevance`).
    """
    best, reached = propagate_reached(seeds, seed_values, nbr, edge_w, max(hops, 0), hop_factor,
                                      eligible)
    n = nbr.shape[0]
    linked = np.empty(n)
    is_seed = np.empty(n, np.bool_)
    for i in range(n):
        linked[i] = 0.0
        is_seed[i] = False
    if adj_hops <= 0 or seeds.shape[0] == 0:
        return best, linked, reached
    for s in seeds:
        is_seed[s] = True
    more = np.empty(reached.shape[0] + 2 * seeds.shape[0] * adj_hops, np.int64)
    for m in range(reached.shape[0]):  # a loop, not a slice copy (no shape-error formatter)
        more[m] = reached[m]
    m = reached.shape[0]
    for j in range(seeds.shape[0]):
        for direction in range(2):
            links = prev if direction == 0 else nxt
            node = seeds[j]
            v = np.float64(seed_values[j])
            for _ in range(adj_hops):
                node = links[node]
                if node < 0 or is_seed[node] or not eligible[node]:
                    break
                v = v * adj_factor
                if v > linked[node]:
                    if best[node] == 0.0 and linked[node] == 0.0:
                        more[m] = node
                        m += 1
                    linked[node] = v
    return best, linked, more[:m]
