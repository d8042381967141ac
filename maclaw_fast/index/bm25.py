"""BM25 (design §2): tantivy as the inverted index of record, plus a columnar mirror of the same
postings that numba scores.

Why two: tantivy-py has no multi-query call and costs ~40 µs per query from Python before the doc
ids are even mapped back; the mirror scores one query in a few µs and a batch in parallel. Both see
the same pre-tokenised terms and the same one-byte length encoding, and ``tests/test_bm25.py``
checks they agree to 1e-4. Which serves what: ``scores``/``scores_batch`` (every recall path, the
router, the workspace search) use the mirror; ``tantivy_scores`` answers from tantivy and is what
the parity tests and the hand-glue benchmark use.

Mirror layout: documents get an append-only doc number; a *main* CSR (term → docs) covers the
docs up to ``main_upto`` and a small *delta* CSR the ones added since. Deletes only clear
``doc_live`` and adjust df / lengths, so every edit is O(document) and statistics are always those
of the live set — scores equal a fresh build after any edit sequence. The delta folds into the main
CSR once it holds an eighth of the postings; dead docs are dropped when they reach a quarter.
"""


from __future__ import annotations

import threading
from bisect import bisect_right
from contextlib import contextmanager
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
from maclaw_kernels.bm25 import build_csr, count_terms

from maclaw_fast import compile_notice
from maclaw_fast.config import Bm25Config
from maclaw_fast.index.arrays import grow
from maclaw_fast.index.bm25_persist import Bm25Persist
from maclaw_fast.index.bm25_query import Bm25Queries
from maclaw_fast.index.fieldnorm import FIELDNORM_TABLE, FIELDNORMS, encode_length
from maclaw_fast.text.vocabulary import Vocabulary

if TYPE_CHECKING:  # tantivy is imported where a mirror is first made
    from maclaw_fast.index.tantivy_mirror import TantivyMirror

__all__ = ["FIELDNORM_TABLE", "PARALLEL_POSTINGS", "Bm25Index", "encode_length"]

# above this many postings one query splits its documents across the thread pool: ~100k
# memories of 15 terms score in 0.35 ms serially, half of that on two cores
PARALLEL_POSTINGS = 500_000

compile_notice.register()  # every engine part builds a Bm25Index before its first kernel call


class Bm25Index(Bm25Queries, Bm25Persist):
    """Incremental BM25 over integer keys (the caller's row ids).

    Parameters
    ----------
    config : k1 and b.
    tantivy_index : keep the tantivy index of record (default), built on the first
        :meth:`tantivy_scores` call and kept in step from then on. ``False`` keeps only the
        mirror (used where nothing asks tantivy, e.g. throw-away evaluation indexes).

    Examples
    --------
    >>> idx = Bm25Index()
    >>> idx.add(0, ["deploy", "script"]); idx.add(1, ["green", "tea"])
    >>> s = idx.scores(["deploy"], n_keys=2)
    >>> bool(s[0] > 0), float(s[1])
    (True, 0.0)
    """

    def __init__(self, config: Bm25Config = Bm25Config(), *, tantivy_index: bool = True) -> None:
        self.k1 = float(config.k1)
        self.b = float(config.b)
        self.vocab = Vocabulary()
        self._lock = threading.RLock()
        # forward store, by doc number
        self._fwd_terms = np.zeros(1024, np.int32)
        self._fwd_tfs = np.zeros(1024, np.float32)
        self._fwd_used = 0
        self._doc_start = np.zeros(64, np.int64)
        self._doc_nterms = np.zeros(64, np.int32)
        self._doc_len = np.zeros(64, np.int64)
        self._doc_norm = np.zeros(64, np.float32)
        self._doc_key = np.zeros(64, np.int64)
        self._doc_live = np.zeros(64, np.bool_)
        self._n_docs = 0
        self._key_doc: dict[int, int] = {}
        self._df = np.zeros(1024, np.int64)
        self._total_len = 0
        # CSR mirrors
        self._main = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
        self._main_upto = 0
        self._main_nnz = 0
        self._tail_work = 0  # tail postings scanned by queries since the last rebuild
        self._bulk_depth = 0  # inside bulk(): adds leave the postings rebuild to its end
        self._dead_in_main = 0
        # the tantivy index is built from the forward store the first time it is asked
        # (tantivy_scores), then kept in step: an index nobody queries through tantivy (every
        # store, router and search path scores from the mirror) never pays for its writer's
        # heap and thread (~1.5 MiB and a thread per index, measured)
        self._keep_tantivy = bool(tantivy_index)
        self._tantivy: TantivyMirror | None = None
        self._args = None  # the postings record; every change resets it first
        self._tail_args = None  # the same while a tail is scanned; reset with ``_args``

    # ------------------------------------------------------------------ edits
    def __len__(self) -> int:
        return len(self._key_doc)

    def __contains__(self, key: int) -> bool:
        return int(key) in self._key_doc

    def add(self, key: int, tokens: list[str], extra: list[str] = (),
            extra_weight: float = 0.0) -> None:
        """Index ``tokens`` under ``key`` (replacing what the key held); ``extra`` tokens count
        ``extra_weight`` each, in the term frequencies and in the length (rounded). Weighted
        extras live in the mirror only (every scoring path): tantivy, which counts whole
        tokens, holds ``tokens`` (a reply's question, ``memory.replies``, is the one user)."""
        key = int(key)
        with self._lock:
            self._args = self._tail_args = None
            if key in self._key_doc:
                self._remove(key)
            counts: dict[int, float] = {}  # a dict beats np.unique on a few dozen tokens
            vocab_add = self.vocab.add
            for tok in tokens:
                tid = vocab_add(tok)
                counts[tid] = counts.get(tid, 0) + 1
            if extra and extra_weight > 0.0:
                for tok in extra:
                    tid = vocab_add(tok)
                    counts[tid] = counts.get(tid, 0) + extra_weight
                # the length the extras add, rounded half up, as the recall oracle counts it
                length = len(tokens) + int(extra_weight * len(extra) + 0.5)
            else:
                length = len(tokens)
            terms = np.fromiter(counts.keys(), np.int32, len(counts))
            tfs = np.fromiter(counts.values(), np.float32, len(counts))
            d = self._n_docs
            if d + 1 > self._doc_live.shape[0]:
                self._ensure_docs(d + 1)
            start = self._fwd_used
            need = start + terms.size
            self._fwd_terms = grow(self._fwd_terms, need)
            self._fwd_tfs = grow(self._fwd_tfs, need)
            self._fwd_terms[start:need] = terms
            self._fwd_tfs[start:need] = tfs
            self._fwd_used = need
            self._doc_start[d] = start
            self._doc_nterms[d] = terms.size
            self._doc_len[d] = length
            self._doc_norm[d] = FIELDNORMS[bisect_right(FIELDNORMS, length) - 1]
            self._doc_key[d] = key
            self._doc_live[d] = True
            self._n_docs = d + 1
            self._key_doc[key] = d
            self._df = grow(self._df, len(self.vocab))
            self._df[terms] += 1
            self._total_len += length
            if self._tantivy is not None:
                self._tantivy.add(key, tokens, replace=False)  # _remove deleted any old copy
            if need - self._main_nnz > max(1024, self._main_nnz // 8):
                self._rebuild_main()

    def add_many(self, keys, token_lists: list[list[str]]) -> None:
        """:meth:`add` for many documents at once (bulk indexing: one pass over all tokens, one
        forward-array append); the result is the same as adding them one by one."""
        keys = self._bulk_keys(keys, len(token_lists))
        if not keys:
            return
        with self._lock:
            flat = self.vocab.add_all(list(chain.from_iterable(token_lists)))
            lengths = np.fromiter((len(t) for t in token_lists), np.int64, len(keys))
            self._add_flat(keys, flat, lengths, token_lists)

    def add_many_ids(self, keys, term_ids: np.ndarray, lengths: np.ndarray) -> None:
        """:meth:`add_many` for documents already mapped to this index's :attr:`vocab`:
        ``term_ids`` holds every document's term ids, one document after another, and
        ``lengths`` how many belong to each."""
        lengths = np.asarray(lengths, np.int64)
        term_ids = np.asarray(term_ids, np.int64)
        keys = self._bulk_keys(keys, lengths.shape[0])
        if int(lengths.sum()) != term_ids.shape[0] or (lengths < 0).any() or (
                term_ids.size and not 0 <= int(term_ids.min()) <= int(term_ids.max())
                < len(self.vocab)):
            raise ValueError("term ids do not match the lengths or the vocabulary")
        if not keys:
            return
        with self._lock:
            self._add_flat(keys, term_ids, lengths, None)

    @staticmethod
    def _bulk_keys(keys, n_docs: int) -> list[int]:
        keys = [int(k) for k in keys]
        if len(keys) != n_docs or len(set(keys)) != len(keys):
            raise ValueError("bulk adds need one document per distinct key")
        return keys

    def _add_flat(self, keys: list[int], flat: np.ndarray, lengths: np.ndarray,
                  token_lists) -> None:
        self._args = self._tail_args = None
        for key in keys:
            if key in self._key_doc:
                self._remove(key)
        offsets = np.zeros(len(keys) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        start = self._fwd_used
        self._fwd_terms = grow(self._fwd_terms, start + flat.size)
        self._fwd_tfs = grow(self._fwd_tfs, start + flat.size)
        nterms = np.zeros(len(keys), np.int32)
        used = count_terms(flat, offsets, len(self.vocab), self._fwd_terms[start:],
                           self._fwd_tfs[start:], nterms)
        d0, d1 = self._n_docs, self._n_docs + len(keys)
        self._ensure_docs(d1)
        self._doc_start[d0:d1] = start + np.cumsum(nterms) - nterms
        self._doc_nterms[d0:d1] = nterms
        self._doc_len[d0:d1] = lengths
        self._doc_norm[d0:d1] = encode_length(lengths)
        self._doc_key[d0:d1] = keys
        self._doc_live[d0:d1] = True
        self._n_docs, self._fwd_used = d1, start + used
        self._key_doc.update(zip(keys, range(d0, d1)))
        self._df = grow(self._df, len(self.vocab))
        new_terms = self._fwd_terms[start:start + used]
        self._df[: len(self.vocab)] += np.bincount(new_terms, minlength=len(self.vocab))
        self._total_len += int(lengths.sum())
        if self._tantivy is not None:
            words = self.vocab.tokens
            for i, key in enumerate(keys):
                toks = (token_lists[i] if token_lists is not None
                        else [words[t] for t in flat[offsets[i]:offsets[i + 1]].tolist()])
                self._tantivy.add(key, toks, replace=False)
        if not self._bulk_depth:
            self._rebuild_if_tail_large()

    def doc_term_ids(self, keys) -> tuple[np.ndarray, np.ndarray]:
        """The indexed terms of ``keys`` as :meth:`add_many_ids` takes them back: every key's
        term ids (each repeated by its count, in id order), one key after another, and how many
        belong to each key. What a reopen reloads instead of tokenising again.

        Examples
        --------
        >>> ix = Bm25Index(tantivy_index=False)
        >>> ix.add(7, ["tea", "green", "tea"])
        >>> ids, lengths = ix.doc_term_ids([7])
        >>> [ix.vocab.tokens[i] for i in ids.tolist()], lengths.tolist()
        (['tea', 'tea', 'green'], [3])
        """
        with self._lock:
            docs = np.fromiter((self._key_doc[int(k)] for k in keys), np.int64)
            counts = self._doc_nterms[docs].astype(np.int64)
            offs = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
                np.cumsum(counts) - counts, counts)
            pos = np.repeat(self._doc_start[docs], counts) + offs
            tfs = self._fwd_tfs[pos].astype(np.int64)
            return np.repeat(self._fwd_terms[pos], tfs), self._doc_len[docs].copy()

    def _rebuild_if_tail_large(self) -> None:
        if self._fwd_used - self._main_nnz > max(1024, self._main_nnz // 8):
            self._rebuild_main()

    @contextmanager
    def bulk(self):
        """Hold the postings rebuild that large adds trigger until the block ends (one rebuild
        for several bulk adds); the index answers queries correctly throughout.

        Examples
        --------
        >>> ix = Bm25Index()
        >>> with ix.bulk():
        ...     ix.add_many([1, 2], [["a"], ["b"]]); ix.add_many([3], [["a", "c"]])
        >>> [round(float(s), 3) for s in ix.scores(["a"], 4)]
        [0.0, 0.524, 0.0, 0.39]
        """
        with self._lock:
            self._bulk_depth += 1
            try:
                yield self
            finally:
                self._bulk_depth -= 1
                if not self._bulk_depth:
                    self._rebuild_if_tail_large()

    def remove(self, key: int) -> None:
        """Forget ``key``; unknown keys are ignored."""
        with self._lock:
            if int(key) in self._key_doc:
                self._remove(int(key))

    def _remove(self, key: int) -> None:
        self._args = self._tail_args = None
        d = self._key_doc.pop(key)
        self._doc_live[d] = False
        lo = self._doc_start[d]
        self._df[self._fwd_terms[lo: lo + self._doc_nterms[d]]] -= 1
        self._total_len -= int(self._doc_len[d])
        if d < self._main_upto:
            self._dead_in_main += 1
            if self._dead_in_main * 4 > max(len(self._key_doc), 64):
                self._compact()
        if self._tantivy is not None:
            self._tantivy.remove(key)

    def clear(self) -> None:
        with self._lock:
            self.__init__(Bm25Config(k1=self.k1, b=self.b), tantivy_index=self._keep_tantivy)

    def _ensure_docs(self, n: int) -> None:
        for name in ("_doc_start", "_doc_nterms", "_doc_len", "_doc_norm", "_doc_key",
                     "_doc_live"):
            setattr(self, name, grow(getattr(self, name), n))

    def _coo(self, lo: int, hi: int):
        """COO postings of docs ``lo..hi`` that are live."""
        docs = np.arange(lo, hi, dtype=np.int32)
        docs = docs[self._doc_live[lo:hi]]
        counts = self._doc_nterms[docs].astype(np.int64)
        starts = self._doc_start[docs]
        total = int(counts.sum())
        rep_docs = np.repeat(docs, counts)
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        pos = np.repeat(starts, counts) + offs
        return self._fwd_terms[pos], rep_docs, self._fwd_tfs[pos]

    def _rebuild_main(self) -> None:
        self._args = self._tail_args = None
        terms, docs, tfs = self._coo(0, self._n_docs)
        self._main = build_csr(len(self.vocab), terms, docs, tfs)
        self._main_upto = self._n_docs
        self._main_nnz = self._fwd_used
        self._tail_work = 0
        self._dead_in_main = 0

    def _compact(self) -> None:
        """Renumber the live docs densely and drop the dead ones' postings."""
        live = np.flatnonzero(self._doc_live[: self._n_docs])
        counts = self._doc_nterms[live].astype(np.int64)
        starts = self._doc_start[live]
        total = int(counts.sum())
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        pos = np.repeat(starts, counts) + offs
        self._fwd_terms = np.ascontiguousarray(self._fwd_terms[pos])
        self._fwd_tfs = np.ascontiguousarray(self._fwd_tfs[pos])
        self._fwd_used = total
        new_start = np.cumsum(counts) - counts
        n = live.size
        for name in ("_doc_nterms", "_doc_len", "_doc_norm", "_doc_key"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name)[live]))
        self._doc_start = new_start.astype(np.int64)
        self._doc_live = np.ones(n, np.bool_)
        self._n_docs = n
        self._key_doc = {int(k): i for i, k in enumerate(self._doc_key[:n])}
        self._rebuild_main()

    @property
    def is_large(self) -> bool:
        """Enough postings for the parallel query kernel to pay off."""
        return self._fwd_used >= PARALLEL_POSTINGS
