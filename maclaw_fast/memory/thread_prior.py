"""The thread prior of recall (``RecallConfig.thread_bm25_weight`` / ``thread_cos_weight``).

Each conversation thread (a chain of the conversation links, SPEC R5) is scored as one document
against the query: BM25 of its active rows' text together and the cosine of its rows' centroid
(:mod:`maclaw_kernels.thread_prior`). A row's score gains ``weight_relevance`` × its thread's
weighted, normalised score, *after* the graph walk: the prior orders conversations, it is not
relevance passed along the links. It applies once the active rows hold two conversations
(threads of two or more rows); every thread, single rows included, is then scored, and recall
takes this path (BM25 and cosines first, then the ranking kernel) instead of the fused kernel.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.memory.columns import CATEGORY_CODE, STATUS_CODE
from maclaw_fast.memory.revival import mark_revived, revival_masks
from maclaw_kernels.bm25 import bm25_query
from maclaw_kernels.revival import terms_idf_total
from maclaw_kernels.thread_prior import (recall_with_prior, thread_bm25, thread_labels,
                                         thread_prior, thread_vector_norms)


class ThreadPlan:
    """The threads of one plan (cached with it: a save, delete or update makes a new plan).
    A thread's members are its active and dormant rows (in the plan's category): a dormant
    turn the query revives keeps its conversation's prior, and a conversation is scored on
    everything it holds, not only on what is still active."""

    __slots__ = ("member", "n_conversations", "n_threads", "thread_of", "vnorm")

    def __init__(self, store, static) -> None:
        g, t, n = store._graph, store._table, static.n
        self.thread_of = np.empty(n, np.int64)
        self.n_threads = int(thread_labels(g.prev[:n], g.next[:n], self.thread_of))
        member = t.alive[:n] & (t.status[:n] != STATUS_CODE["superseded"])
        if static.category is not None:
            member &= t.category[:n] == CATEGORY_CODE[static.category]
        self.member = active = np.ascontiguousarray(member)
        size = np.bincount(self.thread_of[active], minlength=self.n_threads)
        self.n_conversations = int((size >= 2).sum())
        self.vnorm = np.zeros(self.n_threads)
        if store.dim and self.n_threads:
            vec = store._vectors
            thread_vector_norms(vec.matrix[:n], vec.has_vec[:n], active, self.thread_of,
                                self.n_threads, self.vnorm)


def thread_plan(store, static) -> ThreadPlan | None:
    """The plan's threads when the prior applies, else None: a weight above 0 and at least
    two conversations (threads of two or more members) to tell apart. A store of separate
    notes (every save its own thread) keeps the fused single-kernel path."""
    rc = store.config.recall
    if rc.thread_bm25_weight <= 0.0 and rc.thread_cos_weight <= 0.0:
        return None
    plan = static.threads
    if plan is None:
        plan = static.threads = ThreadPlan(store, static)
    if plan.n_conversations < 2:
        return None
    return plan


def query_prior(store, plan: ThreadPlan, args: tuple, cos, has_query_vector: bool,
                out: np.ndarray) -> np.ndarray:
    """Every row's thread prior for one query into ``out`` (0 for rows that are no thread's
    members). ``args``: the index's ``query_args(tokens)``; ``cos``: every row's cosine
    with the query (ignored without a vector)."""
    rc = store.config.recall
    # query_args: term ids, df, n_live, indptr, post_docs, post_tfs, main_upto, n_docs,
    # doc_start, doc_nterms, fwd_terms, fwd_tfs, doc_norm, doc_live, doc_key, ...
    tb = np.zeros(plan.n_threads)
    thread_bm25(args[0], args[1], *args[3:15], plan.thread_of, plan.member, plan.n_threads,
                rc.thread_k1, rc.thread_b, tb)
    use_cos = bool(has_query_vector and store.dim and rc.thread_cos_weight > 0.0)
    thread_prior(tb, cos, store._vectors.has_vec, use_cos, plan.member, plan.thread_of,
                 plan.n_threads, plan.vnorm, rc.thread_bm25_weight, rc.thread_cos_weight, out)
    return out


def rank_with_prior(static, now: float, prior: np.ndarray, bm25, cos, affinity, eligible,
                    scored) -> int:
    """``recall_single`` with every row's base score raised by ``weight_relevance × prior``
    (:func:`maclaw_kernels.thread_prior.recall_with_prior`): the selected rows and parts into
    ``static.single``; returns their count."""
    rows, parts, work, _, _ = static.single
    return recall_with_prior(*static.recency_args, now, *static.recency_knobs, prior, bm25, cos,
                             affinity, eligible, scored, *static.kernel_args, work, rows, parts)


def threaded_scores(store, static, threads: ThreadPlan, tokens: list[str],
                    qvec) -> tuple[np.ndarray, float]:
    """The thread-prior path's scores: BM25 and cosine of every row into ``static.single``
    (cosines 0 without a query vector); returns every row's prior and the query's
    ``idf_total`` (the scale of its cue strengths, :mod:`maclaw_fast.memory.revival`).
    ``qvec`` is normalised already (or None). :func:`rank_with_prior` then ranks with them."""
    n = static.n
    _, _, _, bm25, cos = static.single
    bm25[:n] = 0.0
    index = store._bm25
    args = index.query_args(tokens)
    if index.is_large:
        index.scores(tokens, n, out=bm25)
    else:
        bm25_query(*args, bm25)
    if qvec is not None:
        store._vectors.scores(qvec, n, cos)
    else:
        cos[:n] = 0.0
    prior = query_prior(store, threads, args, cos, qvec is not None, np.empty(n))
    return prior, terms_idf_total(args[0], args[1], args[2])


def recall_threaded(store, static, threads: ThreadPlan, tokens: list[str], qvec, now: float,
                    project, dynamic: bool = False,
                    category: str | None = None) -> tuple[int, np.ndarray]:
    """One recall on the thread prior's path: every row's scores and prior
    (:func:`threaded_scores`), the dormant rows the query cues added to the masks
    (:func:`maclaw_fast.memory.revival.revival_masks`), then one ranking into
    ``static.single``. Returns (the count of selected rows, the prior)."""
    prior, idf_total = threaded_scores(store, static, threads, tokens, qvec)
    eligible, affinity, scored, _ = static.scope_masks(store, project)
    _, _, _, bm25, cos = static.single
    n = static.n
    eligible, scored, widened = revival_masks(store, project, bm25[:n], cos[:n],
                                              qvec is not None, idf_total, eligible, scored,
                                              dynamic=dynamic, category=category)
    m = rank_with_prior(static, now, prior, bm25[:n], cos[:n], affinity, eligible, scored)
    if widened:
        mark_revived(store, static, m, project, dynamic=dynamic, category=category)
    return m, prior
