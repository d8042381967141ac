"""Exact vector scores over a growable float32 matrix keyed by row (design §3).

Rows are L2-normalised at insertion; similarity is the inner product. One query runs a serial
numba kernel (500 × 384 in ~20 µs, under FAISS's ~35 µs per-call overhead; measured in
``benchmarks/bench_pieces.py``); many queries use one BLAS matrix product. FAISS ``IndexFlatIP`` is
the oracle the tests compare with.

A column made with ``quantized=True`` also keeps int8 codes, a scale and an error bound per row
(``kernels/quantized.py``), so :meth:`top_scores` finds a query's ``k`` best rows exactly while
reading a quarter of the bytes: what a search over a matrix larger than the cache waits for.
"""

from __future__ import annotations

import numpy as np
from maclaw_kernels.quantized import bound_rows, query_norm, rescore_candidates
from maclaw_kernels.vectors import dot_tile

from maclaw_fast.index.arrays import aligned_zeros
from maclaw_fast.threads import in_ranges

TILE = 16  # queries scored together: each matrix row read once per tile

# above this many matrix elements one query streams the matrix from both cores: at 100k × 384
# a serial pass is bound by one core's bandwidth (~2× the two-core floor)
PARALLEL_ELEMENTS = 4_000_000
# covers float32 rounding in the int8 pass and in the exact sum (each ≲ 2.3e-5 at 384-d)
BOUND_SLACK = 2e-4



def quantize_rows(vectors: np.ndarray, codes_out: np.ndarray, scale_out: np.ndarray,
                  err_out: np.ndarray) -> None:
    """int8 codes ``c``, float32 scale ``s = max|x| / 127`` and float64 error bound
    ``||x − s·c||₂`` of every row of ``vectors`` (``kernels/quantized.py`` reads them)."""
    x = vectors.astype(np.float64)
    scale = (np.abs(x).max(axis=1, initial=0.0) / 127.0).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        codes = np.clip(np.rint(vectors / scale[:, None]), -127.0, 127.0)
    codes[scale == 0] = 0.0
    diff = x - scale.astype(np.float64)[:, None] * codes
    codes_out[:] = codes
    scale_out[:] = scale
    # a hair above the computed root, so float64 rounding cannot make the bound too tight
    err_out[:] = np.sqrt((diff * diff).sum(axis=1)) * (1.0 + 1e-12) + 1e-12

class VectorColumn:
    """A dense ``(capacity, dim)`` float32 matrix plus a has-vector mask, indexed by row.

    Examples
    --------
    >>> from maclaw_fast.embedding import l2_normalise
    >>> vc = VectorColumn(dim=2)
    >>> vc.set(0, l2_normalise(np.array([[3.0, 4.0]]))[0]); vc.set(2, np.array([0.0, 1.0]))
    >>> [round(float(x), 2) for x in vc.scores(np.array([0.0, 1.0], np.float32), n_rows=3)]
    [0.8, 0.0, 1.0]
    """

    def __init__(self, dim: int, capacity: int = 64, *, quantized: bool = False) -> None:
        self.dim = int(dim)
        self.quantized = bool(quantized)
        # rows on cache-line boundaries: the dot kernels' loads then never straddle two
        self.matrix = aligned_zeros((capacity, self.dim), np.float32)
        self.has_vec = np.zeros(capacity, dtype=np.bool_)
        self.codes = aligned_zeros((capacity if quantized else 0, self.dim), np.int8)
        self.scale = np.zeros(capacity if quantized else 0, np.float32)
        self.err = np.zeros(capacity if quantized else 0)
        self._bounds = (np.empty(0), np.empty(0))

    def keep_codes(self) -> None:
        """Start keeping int8 codes (as ``quantized=True`` does from the start): every row is
        quantized now and kept in step from here on. A store calls it when it first grows large
        enough to use them, so small stores never pay for the codes."""
        if self.quantized:
            return
        cap = self.matrix.shape[0]
        self.codes = aligned_zeros((cap, self.dim), np.int8)
        self.scale = np.zeros(cap, np.float32)
        self.err = np.zeros(cap)
        quantize_rows(self.matrix, self.codes, self.scale, self.err)
        self.quantized = True

    def reserve(self, n: int) -> None:
        cap = self.matrix.shape[0]
        if n <= cap:
            return
        new_cap = max(n, 2 * cap)
        names = ("matrix", "has_vec") + (("codes", "scale", "err") if self.quantized else ())
        for name in names:
            old = getattr(self, name)
            grown = aligned_zeros((new_cap,) + old.shape[1:], old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)

    def adopt(self, matrix: np.ndarray) -> None:
        """Use ``matrix`` (``(n, dim)`` float32, writable, L2-normalised rows, every row with a
        vector) as the rows of this empty column without copying it: a reopen hands over the
        snapshot's embedding values read into a writable buffer. Rows are then 8-byte aligned
        instead of on cache lines (a few µs per 500 × 384 query, against the 0.5+ ms copy); the
        first growth copies them into an aligned matrix."""
        if (self.quantized or matrix.dtype != np.float32 or matrix.ndim != 2
                or matrix.shape[1] != self.dim or not matrix.flags.writeable
                or not matrix.flags.c_contiguous or self.has_vec.any()):
            raise ValueError("adopt takes a writable (n, dim) float32 matrix into an empty "
                             "column")
        self.matrix = matrix
        self.has_vec = np.ones(matrix.shape[0], np.bool_)

    def set(self, row: int, vector: np.ndarray | None) -> None:
        """Store an L2-normalised vector at ``row`` (None clears it)."""
        self.reserve(row + 1)
        if vector is None:
            self.matrix[row] = 0.0
            self.has_vec[row] = False
            if self.quantized:
                self.codes[row], self.scale[row], self.err[row] = 0, 0.0, 0.0
            return
        # rows arrive normalised (embed_checked / check_vectors); normalising again would
        # perturb the last bits and make a reopened store score differently
        self.matrix[row] = np.asarray(vector, np.float32)
        self.has_vec[row] = True
        if self.quantized:  # views of the one row: no fancy-index copies
            end = row + 1
            quantize_rows(self.matrix[row:end], self.codes[row:end], self.scale[row:end],
                          self.err[row:end])

    def set_rows(self, rows, vectors: np.ndarray) -> None:
        """Store L2-normalised ``vectors`` at ``rows`` (one per row, in order)."""
        idx = np.asarray(rows, np.int64)
        if idx.size == 0:
            return
        self.reserve(int(idx.max()) + 1)
        # rows arrive normalised (embed_checked / check_vectors); normalising again would
        # perturb the last bits and make a reopened store score differently
        vectors = np.ascontiguousarray(vectors, np.float32)
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        if hi - lo == idx.size and (idx.size < 2 or bool((np.diff(idx) == 1).all())):
            self.matrix[lo:hi] = vectors  # a run of rows (a reopen): one copy, no gather
            self.has_vec[lo:hi] = True
        else:
            self.matrix[idx] = vectors
            self.has_vec[idx] = True
        if self.quantized:
            codes = np.empty((idx.size, self.dim), np.int8)
            scale, err = np.empty(idx.size, np.float32), np.empty(idx.size)
            quantize_rows(vectors, codes, scale, err)
            self.codes[idx], self.scale[idx], self.err[idx] = codes, scale, err

    def get(self, row: int) -> np.ndarray | None:
        return self.matrix[row].copy() if self.has_vec[row] else None

    def move(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Copy rows ``src`` to rows ``dst`` (compaction)."""
        for name in ("matrix", "has_vec") + (("codes", "scale", "err") if self.quantized else ()):
            column = getattr(self, name)
            column[dst] = column[src]

    def truncate(self, n: int) -> None:
        for name in ("matrix", "has_vec") + (("codes", "scale", "err") if self.quantized else ()):
            getattr(self, name)[n:] = 0

    def scores(self, query: np.ndarray, n_rows: int, out: np.ndarray | None = None) -> np.ndarray:
        """Inner products of the first ``n_rows`` rows with one normalised query (0 without a
        vector)."""
        if out is None:
            out = np.empty(n_rows, dtype=np.float32)
        m, has, q = self.matrix, self.has_vec, query[None]
        if n_rows * self.dim >= PARALLEL_ELEMENTS:
            in_ranges(n_rows, lambda lo, hi: dot_tile(m[lo:hi], hi - lo, has[lo:hi], q, 0, 1,
                                                      out[lo:hi][None]))
        else:
            dot_tile(m, n_rows, has, q, 0, 1, out[None])
        return out

    def scores_batch(self, queries: np.ndarray, n_rows: int, out: np.ndarray,
                     parts: int = 0) -> np.ndarray:
        """Into ``out`` (``(n_queries, ≥ n_rows)`` float32, C-contiguous): :meth:`scores` of
        every query, bit for bit (the same row kernel; not BLAS, whose rounding changes with the
        batch), tiles of queries on ``parts`` threads (0: every core)."""
        m, has = self.matrix, self.has_vec
        q = np.ascontiguousarray(queries, np.float32)

        def run(lo: int, hi: int) -> None:
            for t0 in range(lo, hi, TILE):
                t1 = min(hi, t0 + TILE)
                dot_tile(m, n_rows, has, q, t0, t1, out[t0:t1])

        in_ranges(q.shape[0], run, parts)
        return out

    def top_scores(self, query: np.ndarray, n_rows: int, k: int, out: np.ndarray) -> int:
        """Into ``out[:n_rows]``: the exact score (as :meth:`scores` gives it) of every row that
        may be among the ``k`` best for ``query``, ``-inf`` for every other row; so the ``k``
        best of ``out``, ties included, are those of the full scan. Needs ``quantized=True``.
        Returns how many rows were scored exactly.

        Examples
        --------
        >>> vc = VectorColumn(dim=2, quantized=True)
        >>> vc.set_rows([0, 1, 2], np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], np.float32))
        >>> out = np.empty(3, np.float32)
        >>> vc.top_scores(np.array([0.0, 1.0], np.float32), 3, 1, out), out.tolist()
        (1, [-inf, 1.0, -inf])
        """
        if not self.quantized:
            raise ValueError("top_scores needs a column made with quantized=True")
        lo, hi = self._bounds
        if lo.shape[0] < n_rows:
            lo = np.empty(max(n_rows, 2 * lo.shape[0]))
            self._bounds = lo, hi = lo, np.empty(lo.shape[0])
        q_norm = query_norm(query)

        def bound(lo_row: int, hi_row: int) -> None:
            bound_rows(self.codes, self.scale, self.err, self.has_vec, query, q_norm, BOUND_SLACK,
                       lo_row, hi_row, lo, hi)

        if n_rows * self.dim >= PARALLEL_ELEMENTS:
            in_ranges(n_rows, bound)
        else:
            bound(0, n_rows)
        return rescore_candidates(lo, hi, n_rows, k, self.matrix, self.has_vec, query, out)
