"""A large store's single recall reads int8 codes first (:mod:`maclaw_kernels.pruned`).

From :data:`PRUNE_ROWS` rows a query's cosine scan would read the whole float32 matrix (150 MB
at 100k × 384) for the few hundred rows whose cosine can change the answer. Instead the vector
column's int8 codes bound every row's cosine (a quarter of the bytes), the rows that may matter
are scored exactly, and the one ranking pipeline runs on that column; :func:`is_exact` proves
the ranking equals the dense scan's, and the caller reruns the dense scan when it cannot.
"""

from __future__ import annotations

import numpy as np

from maclaw_kernels.bm25 import Postings, bm25_query
from maclaw_kernels.pruned import mark_contenders, optimistic_column, ranking_is_exact
from maclaw_kernels.recall import PART_REASON, base_scores
from maclaw_kernels.thread_prior import thread_prior

# from this many rows a single recall with a query vector reads int8 codes first: at 5,000 ×
# 384 the int8 pass already costs less than the float32 scan it replaces
PRUNE_ROWS = 5_000
_NO_MEMBERS = (np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0))


def prunes(store, plan, qvec) -> bool:
    """Whether a single recall over ``plan`` scores its cosines through the int8 codes."""
    return qvec is not None and plan.n >= PRUNE_ROWS and store.dim > 0


def optimistic_cosines(store, plan, scope, term_ids: np.ndarray, query: np.ndarray,
                       bm25: np.ndarray, work, now: float) -> tuple[np.ndarray, np.ndarray]:
    """The cosine column a pruned recall ranks on (f4[1, n]) and the rows scored exactly
    (b1[n]; :mod:`maclaw_kernels.pruned`). ``bm25``: every row's, exact; ``work``: the plan's
    scratch (its vocabulary scratch for the threads' BM25); the plan's base scores are brought
    to ``now`` on the way (the ranking then reuses them)."""
    vec, n = store.vectors, plan.n
    vec.keep_codes()  # the first large recall quantizes the column once; kept in step after
    query = np.ascontiguousarray(query, np.float32)
    lo, hi = vec.bounds(query, n)
    if plan.base.at[0] != now:
        base_scores(plan.rows, plan.knobs, now, plan.base.values)
        plan.base.at[0] = now
    threads = plan.threads(store)
    prior = threads.n_threads > 0
    members = ((threads.thread_of, threads.member, threads.vnorm)
               if prior and threads.w_cos > 0.0 else _NO_MEMBERS)
    eligible, dormant = scope.eligible[0], scope.dormant[0]
    cos, low = np.empty((1, n), np.float32), np.empty(n, np.float32)
    exact = np.zeros(n, np.bool_)
    args = (vec.matrix, vec.has_vec, query, exact, cos[0], low)
    optimistic_column(lo, hi, eligible, dormant, members, *args)
    prior_hi = prior_lo = _zeros(plan)
    if prior:  # the thread prior between its values on the two columns
        tb = np.zeros(int(threads.n_threads))
        bm25_query(term_ids, Postings(*threads.postings[:17], work.term_weight), tb)
        prior_hi, prior_lo = np.empty(n), np.empty(n)
        # at least its BM25 part (the centroid-cosine part is ≥ 0), at most its value here
        for use_cos, out in ((members[0].shape[0] > 0, prior_hi), (False, prior_lo)):
            thread_prior(tb, cos[0], vec.has_vec, use_cos, threads.member, threads.thread_of,
                         int(threads.n_threads), threads.vnorm, threads.w_bm25, threads.w_cos,
                         out)
    rows = plan.rows
    mark_contenders(cos[0], low, bm25, plan.base.values, prior_hi, prior_lo, eligible,
                    scope.affinity[0], scope.user_fact, tuple(plan.knobs),
                    (rows.nbr, rows.prev, rows.nxt), members, *args[:-2])
    return cos, exact


def _zeros(plan) -> np.ndarray:
    return np.zeros(plan.n)


def is_exact(plan, scope, exact: np.ndarray, work, out) -> bool:
    """Whether the ranking just run on :func:`optimistic_cosines`' column (its scratch in
    ``work``, its selection in ``out``) is the one the dense cosines give."""
    return bool(ranking_is_exact(exact, scope.scored[0], scope.user_fact, work.mat, out.rows[0],
                                 out.parts[0, PART_REASON], int(out.count[0]),
                                 tuple(plan.knobs)))
