"""The thread prior of recall (``RecallConfig.thread_bm25_weight`` / ``thread_cos_weight``).

Each conversation thread (a chain of the conversation links) is scored as one document against
the query: BM25 of its rows' text together and the cosine of its rows' centroid
(:mod:`maclaw_kernels.thread_prior`). A row's base score gains ``weight_relevance`` × its
thread's weighted, normalised score, *after* the graph walk: the prior orders conversations, it
is not relevance passed along the links. It applies once the rows hold two conversations
(threads of two or more rows); a store of separate notes never pays for it.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.memory.columns import CATEGORY_CODE, STATUS_CODE
from maclaw_kernels.thread_prior import thread_bm25, thread_labels, thread_prior, thread_vector_norms


class ThreadPlan:
    """The threads of one recall plan. A thread's members are its active and dormant rows (in
    the plan's category): a dormant turn the query revives keeps its conversation's prior, and
    a conversation is scored on everything it holds, not only on what is still active."""

    __slots__ = ("member", "n_conversations", "n_threads", "thread_of", "vnorm")

    def __init__(self, store, n: int, category: str | None) -> None:
        g, t = store.graph, store.table
        self.thread_of = np.empty(n, np.int64)
        self.n_threads = int(thread_labels(g.prev[:n], g.next[:n], self.thread_of))
        member = t.alive[:n] & (t.status[:n] != STATUS_CODE["superseded"])
        if category is not None:
            member &= t.category[:n] == CATEGORY_CODE[category]
        self.member = np.ascontiguousarray(member)
        size = np.bincount(self.thread_of[self.member], minlength=self.n_threads)
        self.n_conversations = int((size >= 2).sum())
        self.vnorm = np.zeros(self.n_threads)
        if store.dim and self.n_threads:
            vec = store.vectors
            thread_vector_norms(vec.matrix[:n], vec.has_vec[:n], self.member, self.thread_of,
                                self.n_threads, self.vnorm)

    def prior(self, store, term_ids: np.ndarray, cos: np.ndarray, has_vector: bool,
              out: np.ndarray) -> np.ndarray:
        """Every row's thread prior for one query into ``out`` (0 for the rows that are no
        thread's members); ``cos``: every row's cosine with the query."""
        rc = store.config.recall
        tb = np.zeros(self.n_threads)
        thread_bm25(term_ids, store.bm25.query_postings(), self.thread_of, self.member,
                    self.n_threads, float(rc.thread_k1), float(rc.thread_b), tb)
        use_cos = bool(has_vector and store.dim and rc.thread_cos_weight > 0.0)
        thread_prior(tb, cos, store.vectors.has_vec, use_cos, self.member, self.thread_of,
                     self.n_threads, self.vnorm, float(rc.thread_bm25_weight),
                     float(rc.thread_cos_weight), out)
        return out
