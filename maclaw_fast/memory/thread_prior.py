"""The thread prior of recall (``RecallConfig.thread_bm25_weight`` / ``thread_cos_weight``).

Each conversation thread (a chain of the conversation links) is scored as one document against
the query: BM25 of its rows' text together (:func:`thread_postings`, scored by the rows' own
BM25 kernel) and the cosine of its rows' centroid (:mod:`maclaw_kernels.thread_prior`). A row's base score gains ``weight_relevance`` × its
thread's weighted, normalised score, *after* the graph walk: the prior orders conversations, it
is not relevance passed along the links. It applies once the rows hold two conversations
(threads of two or more rows); a store of separate notes never pays for it.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.memory.columns import CATEGORY_CODE, STATUS_CODE
from maclaw_kernels.bm25 import Postings
from maclaw_kernels.thread_prior import thread_labels, thread_vector_norms


def thread_postings(p: Postings, thread_of: np.ndarray, member: np.ndarray, n_threads: int,
                    k1: float, b: float) -> Postings:
    """The threads as the documents of a BM25 index of their own, from the rows' postings
    ``p`` (CSR and forward-listed tail): a thread holds the terms of its live ``member`` rows
    with their counts summed, its length is the sum of theirs, N counts the threads of some
    length and df the threads holding a term. Thread ``t`` scores into ``out[t]``."""
    n_main, width = p.indptr.shape[0] - 1, max(n_threads, 1)
    n_terms = p.df.shape[0]  # the vocabulary: the tail may hold terms the CSR has not seen
    nnz = int(p.indptr[-1])
    tail = np.arange(p.main_upto, p.n_docs)
    counts = p.doc_nterms[tail].astype(np.int64)
    starts = np.repeat(p.doc_start[tail] - np.cumsum(counts) + counts, counts)
    pos = starts + np.arange(int(counts.sum()), dtype=np.int64)
    terms = np.concatenate([np.repeat(np.arange(n_main), np.diff(p.indptr)),
                            p.fwd_terms[pos].astype(np.int64)])
    docs = np.concatenate([p.post_docs[:nnz].astype(np.int64), np.repeat(tail, counts)])
    tfs = np.concatenate([p.post_tfs[:nnz], p.fwd_tfs[pos]]).astype(np.float64)
    thread = _thread_of_docs(p, thread_of, member)
    keep = thread[docs] >= 0
    pair = terms[keep] * width + thread[docs[keep]]
    uniq, inverse = np.unique(pair, return_inverse=True)
    tf = np.bincount(inverse, weights=tfs[keep], minlength=uniq.shape[0])
    per_term = np.bincount(uniq // width, minlength=n_terms)[:n_terms]
    indptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(per_term, out=indptr[1:])
    sized = (thread >= 0) & (p.doc_norm[:p.n_docs] > 0.0)
    length = np.bincount(thread[sized], weights=p.doc_norm[:p.n_docs][sized].astype(np.float64),
                         minlength=n_threads)
    has_doc = np.bincount(thread[sized], minlength=n_threads) > 0
    n_with = int(has_doc.sum())
    df = np.zeros(n_terms, np.int64)
    if n_with:  # no thread of any length: every thread scores 0
        df[:] = per_term
    total = float(np.cumsum(length[has_doc])[-1]) if n_with else 0.0  # summed in thread order
    return Postings(df, n_with, indptr, (uniq % width).astype(np.int32),
                    tf.astype(np.float32), n_threads, n_threads, np.zeros(n_threads, np.int64),
                    np.zeros(n_threads, np.int32), _NO_TERMS, _NO_TFS,
                    length.astype(np.float32), has_doc, np.arange(n_threads, dtype=np.int64),
                    float(k1), float(b), max(total / max(n_with, 1), 1e-9), p.term_weight)


def _thread_of_docs(p: Postings, thread_of: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Each document's thread: its row's, or -1 for a dead document or one of no member row."""
    key = p.doc_key[:p.n_docs]
    ok = p.doc_live[:p.n_docs] & (key >= 0) & (key < member.shape[0])
    ok[ok] = member[key[ok]]
    out = np.full(p.n_docs, -1, np.int64)
    out[ok] = thread_of[key[ok]]
    return out


_NO_TERMS, _NO_TFS = np.zeros(0, np.int32), np.zeros(0, np.float32)


def empty_postings() -> Postings:
    """No thread (the prior does not apply), typed like :func:`thread_postings`' result."""
    return Postings(np.zeros(1, np.int64), 0, np.zeros(1, np.int64), _NO_TERMS, _NO_TFS, 0, 0,
                    np.zeros(0, np.int64), _NO_TERMS, _NO_TERMS, _NO_TFS, _NO_TFS,
                    np.zeros(0, np.bool_), np.zeros(0, np.int64), 0.0, 0.0, 1.0, np.zeros(1))


class ThreadPlan:
    """The threads of one recall plan. A thread's members are its active and dormant rows (in
    the plan's category): a dormant turn the query revives keeps its conversation's prior, and
    a conversation is scored on everything it holds, not only on what is still active."""

    __slots__ = ("member", "n_conversations", "n_threads", "postings", "thread_of", "vnorm")

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
        rc = store.config.recall
        self.postings = None if self.n_conversations < 2 else thread_postings(store.bm25.query_postings(), self.thread_of, self.member,
                                        self.n_threads, rc.thread_k1, rc.thread_b)
        self.vnorm = np.zeros(self.n_threads)
        if store.dim and self.n_conversations >= 2:  # else the prior does not apply
            vec = store.vectors
            thread_vector_norms(vec.matrix[:n], vec.has_vec[:n], self.member, self.thread_of,
                                self.n_threads, self.vnorm)
