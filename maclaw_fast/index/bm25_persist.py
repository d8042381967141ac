"""Saving and loading a :class:`~maclaw_fast.index.bm25.Bm25Index`'s postings as arrays, so a
reopen fills the mirror with array copies instead of counting terms and sorting postings again
(what ``memory/terms_file.py`` writes beside a store's snapshot)."""

from __future__ import annotations

import msgspec
import numpy as np
from maclaw_kernels.bm25 import build_csr

from maclaw_fast.index.fieldnorm import encode_length


class Postings(msgspec.Struct, kw_only=True):
    """Documents ``0..n-1`` of an index as arrays, term ids local to ``words``.

    ``terms``/``tfs``: each document's distinct terms and their counts, one document after
    another (``offsets``, n + 1 entries); ``lengths``: tokens per document; ``indptr``,
    ``docs``, ``doc_tfs``: the same postings by term (CSR over ``len(words)`` terms)."""

    words: list[str] | str  # or one string, the words joined by newlines (as a file holds them)
    terms: np.ndarray
    tfs: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    indptr: np.ndarray
    docs: np.ndarray
    doc_tfs: np.ndarray

    @property
    def n_words(self) -> int:
        w = self.words
        if isinstance(w, str):
            return w.count("\n") + 1 if w else 0
        return len(w)

    def check(self, df_out: np.ndarray | None = None) -> bool:
        """Whether the arrays are consistent (a damaged file must never reach a kernel);
        ``df_out`` (int64, at least ``max(n_words, 1)`` entries): each term's document count,
        filled on the way."""
        n, v, nnz = self.lengths.shape[0], self.n_words, self.terms.shape[0]
        if not (self.offsets.shape[0] == n + 1 and self.tfs.shape[0] == nnz
                and self.docs.shape[0] == nnz and self.doc_tfs.shape[0] == nnz
                and self.indptr.shape[0] == v + 1):
            return False
        if df_out is None:
            df_out = np.empty(max(v, 1), np.int64)
        df_out[:] = 0
        off, ptr, terms, docs = self.offsets, self.indptr, self.terms, self.docs
        if (off[0] != 0 or off[n] != nnz or ptr[0] != 0 or ptr[v] != nnz
                or (np.diff(off) < 0).any() or (np.diff(ptr) < 0).any()
                or (self.lengths < 0).any()):
            return False
        if nnz and (terms.min() < 0 or terms.max() >= v or docs.min() < 0 or docs.max() >= n):
            return False
        df_out[:v] = np.bincount(terms, minlength=v)
        return True


def _distinct(keys: np.ndarray) -> bool:
    if keys.shape[0] < 2 or bool((keys[1:] > keys[:-1]).all()):
        return True  # increasing (a reopen's 0..n-1): no sort
    return np.unique(keys).shape[0] == keys.shape[0]


class Bm25Persist:
    """Postings out of and into a :class:`~maclaw_fast.index.bm25.Bm25Index` (a mixin over its
    forward store, CSR mirror and vocabulary)."""

    def postings(self, keys) -> Postings:
        """The documents of ``keys`` (in that order, numbered from 0) as :class:`Postings`,
        with only the terms they use.

        Examples
        --------
        >>> from maclaw_fast.index.bm25 import Bm25Index
        >>> ix = Bm25Index(tantivy_index=False)
        >>> ix.add(3, ["tea", "green", "tea"]); ix.add(5, ["coffee"])
        >>> p = ix.postings([5, 3])
        >>> p.words, p.lengths.tolist()
        (['tea', 'green', 'coffee'], [1, 3])
        >>> back = Bm25Index(tantivy_index=False)
        >>> back.load_postings([0, 1], p)
        True
        >>> back.scores(["tea"], 2).tolist() == ix.scores(["tea"], 6)[[5, 3]].tolist()
        True
        """
        with self._lock:
            docs = np.fromiter((self._key_doc[int(k)] for k in keys), np.int64)
            counts = self._doc_nterms[docs].astype(np.int64)
            offsets = np.zeros(docs.shape[0] + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            pos = (np.repeat(self._doc_start[docs] - offsets[:-1], counts)
                   + np.arange(int(offsets[-1]), dtype=np.int64))
            used, local = np.unique(self._fwd_terms[pos], return_inverse=True)
            terms = local.astype(np.int32)
            tfs = self._fwd_tfs[pos].copy()
            words = self.vocab.tokens
            indptr, post_docs, post_tfs = build_csr(
                used.shape[0], terms, np.repeat(np.arange(docs.shape[0], dtype=np.int32),
                                                counts), tfs)
            return Postings(words=[words[i] for i in used.tolist()], terms=terms, tfs=tfs,
                            offsets=offsets, lengths=self._doc_len[docs].copy(),
                            indptr=indptr, docs=post_docs, doc_tfs=post_tfs)

    def load_postings(self, keys, p: Postings) -> bool:
        """Fill this empty index with ``p`` under ``keys`` (one per document, distinct); returns
        False, changing nothing, when the index is not empty or ``p`` is inconsistent."""
        keys = np.array(keys, np.int64)
        df = np.empty(max(p.n_words, 1), np.int64)
        with self._lock:
            if (self._n_docs or len(self.vocab) or keys.shape[0] != p.lengths.shape[0]
                    or not _distinct(keys) or not p.check(df)
                    or not self.vocab.fill(p.words)):  # ids 0..len-1, as saved
                return False
            n, nnz = keys.shape[0], p.terms.shape[0]
            self._args = self._tail_args = None
            # owned, writable copies: later edits write into these arrays in place
            self._fwd_terms = np.array(p.terms, np.int32)
            self._fwd_tfs = np.array(p.tfs, np.float32)
            self._fwd_used = nnz
            self._doc_start = np.array(p.offsets[:-1], np.int64)
            self._doc_nterms = np.diff(p.offsets).astype(np.int32)
            self._doc_len = np.array(p.lengths, np.int64)
            self._doc_norm = encode_length(self._doc_len)
            self._doc_key = keys
            self._doc_live = np.ones(n, np.bool_)
            self._n_docs = n
            self._key_doc = dict(zip(keys.tolist(), range(n)))
            self._df = df  # counted by the check
            self._total_len = int(self._doc_len.sum())
            self._main = (np.array(p.indptr, np.int64), np.array(p.docs, np.int32),
                          np.array(p.doc_tfs, np.float32))
            self._main_upto, self._main_nnz = n, nnz
            self._tail_work = self._dead_in_main = 0
            return True
