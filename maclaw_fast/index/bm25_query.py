"""Querying a :class:`~maclaw_fast.index.bm25.Bm25Index`: the numba mirror's postings record
for one query or a batch, and tantivy's own scores for the parity checks."""

from __future__ import annotations

import numpy as np
from maclaw_kernels.bm25 import Postings, bm25_query, bm25_range, query_idf
from maclaw_kernels.revival import terms_idf_total

from maclaw_fast.threads import in_ranges as split_ranges

_NO_K = np.zeros(0)  # no documents' length terms given: the kernels compute them


class Bm25Queries:
    """The query side of :class:`~maclaw_fast.index.bm25.Bm25Index` (a mixin over its forward
    store, CSR postings and lock)."""

    # ------------------------------------------------------------------ scoring
    @property
    def avgdl(self) -> float:
        n = len(self._key_doc)
        return self._total_len / n if n else 1.0

    def scores(self, tokens: list[str], n_keys: int, out: np.ndarray | None = None,
               *, in_ranges: bool | None = None) -> np.ndarray:
        """BM25 of every key for one query, as a dense float64 array of ``n_keys`` (0 = no hit;
        added into ``out`` when given). ``in_ranges`` (default: :attr:`is_large`) scores
        document ranges on every core; the result is the same."""
        if out is None:
            out = np.zeros(n_keys, dtype=np.float64)
        with self._lock:
            term_ids, postings = self.term_ids(tokens), self.query_postings()
            if self.is_large if in_ranges is None else in_ranges:
                uniq, idf = query_idf(term_ids, postings.df, postings.n_live,
                                      postings.term_weight)
                try:
                    split_ranges(postings.n_docs,
                                 lambda lo, hi: bm25_range(uniq, idf, postings, _NO_K, out,
                                                           lo, hi))
                finally:
                    postings.term_weight[uniq] = 0.0
            else:
                bm25_query(term_ids, postings, out, _NO_K)
        return out

    def idf_total(self, tokens: list[str]) -> float:
        """Σ idf over the distinct query terms the index holds, plus ``idf(df = 0)`` for each
        word it does not (no document can match it): about the BM25 of a document holding each
        term once at the average length, the scale of an absolute cue strength."""
        p = self.query_postings()
        return float(terms_idf_total(self.term_ids(tokens), p.df, p.n_live))

    def term_ids(self, tokens: list[str]) -> np.ndarray:
        """The vocabulary ids of ``tokens`` (-1 for a token it lacks), as the kernels take them."""
        get = self.vocab.getter()
        return np.array([get(tok, -1) for tok in tokens], dtype=np.int64)

    def query_postings(self) -> Postings:
        """This index's arrays as the query kernels read them. They are the index's own: hold
        off changes to it until the kernel has run."""
        args = self._args  # kept while the index is unchanged and has no tail to scan
        if args is None or args.term_weight.shape[0] < len(self.vocab):
            with self._lock:
                args = self._query_postings()
        return args

    def _query_postings(self) -> Postings:
        tail = self._fwd_used - self._main_nnz
        if tail:
            # rent or buy: once queries have scanned as many tail postings as a rebuild
            # touches, rebuild, so scanning never costs more than twice the best policy
            self._tail_work += tail
            if self._tail_work >= self._fwd_used:
                self._rebuild_main()
            elif self._tail_args is not None:  # unchanged since made: every change resets it
                return self._tail_args
        ip, pd, pt = self._main
        args = Postings(self._df, len(self._key_doc), ip, pd, pt, self._main_upto, self._n_docs,
                        self._doc_start, self._doc_nterms, self._fwd_terms, self._fwd_tfs,
                        self._doc_norm, self._doc_live, self._doc_key, self.k1, self.b,
                        max(self.avgdl, 1e-9), self._term_weight_scratch())
        if self._fwd_used == self._main_nnz:
            self._args = args
        else:
            self._tail_args = args
        return args

    def _term_weight_scratch(self) -> np.ndarray:
        """A zeroed float64 array over the vocabulary, reused between queries (kept zero)."""
        scratch = getattr(self, "_scratch", None)
        if scratch is None or scratch.shape[0] < len(self.vocab):
            scratch = self._scratch = np.zeros(max(len(self.vocab) * 2, 1024))
        return scratch

    def scores_batch(self, token_lists: list[list[str]], n_keys: int,
                     out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`scores` for many queries at once: ``(n_queries, n_keys)`` float64 (into
        ``out`` when given: a reused buffer spares the page faults of a fresh one)."""
        if out is None:
            out = np.zeros((len(token_lists), n_keys), dtype=np.float64)
        else:
            out.fill(0.0)
        get = self.vocab.getter()
        with self._lock:
            postings = self.query_postings()
            for q, toks in enumerate(token_lists):
                bm25_query(np.fromiter((get(tok, -1) for tok in toks), np.int64, len(toks)),
                           postings, out[q], _NO_K)
        return out

    def tantivy_scores(self, tokens: list[str]) -> dict[int, float]:
        """Scores straight from the tantivy index of record (key → score, hits only).

        tantivy counts deleted documents in N, df and the average length until its segments
        merge, which tantivy-py cannot force; so after deletes the tantivy index is rebuilt
        from the live documents before it answers (only this path pays for it).
        """
        if not self._keep_tantivy:
            raise RuntimeError("this Bm25Index was built without tantivy")
        with self._lock:
            if self._tantivy is None or self._tantivy.deletes:
                from maclaw_fast.index.tantivy_mirror import TantivyMirror

                self._tantivy = TantivyMirror()
                for key, d in self._key_doc.items():
                    self._tantivy.add(key, self._doc_tokens(d), replace=False)
            return self._tantivy.scores(tokens)

    def _doc_tokens(self, d: int) -> list[str]:
        """A document's tokens back from the forward store (term order; length preserved)."""
        lo = self._doc_start[d]
        terms = self._fwd_terms[lo: lo + self._doc_nterms[d]].tolist()
        tfs = self._fwd_tfs[lo: lo + self._doc_nterms[d]].tolist()
        return [self.vocab.tokens[t] for t, n in zip(terms, tfs) for _ in range(int(n))]
