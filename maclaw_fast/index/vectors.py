"""Exact vector scores over a growable float32 matrix keyed by row (SPEC §3).

Rows are L2-normalised at insertion; similarity is the inner product. One query runs a serial
numba kernel (500 × 384 in ~20 µs, under FAISS's ~35 µs per-call overhead; measured in
``benchmarks/bench_pieces.py``); many queries use one BLAS matrix product. FAISS ``IndexFlatIP`` is
the oracle the tests compare with.
"""

from __future__ import annotations

import numpy as np

from maclaw_kernels.vectors import dot_scores, dot_scores_parallel

# above this many matrix elements one query streams the matrix from both cores: at 100k × 384
# a serial pass is bound by one core's bandwidth (~2× the two-core floor)
PARALLEL_ELEMENTS = 4_000_000


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

    def __init__(self, dim: int, capacity: int = 64) -> None:
        self.dim = int(dim)
        self.matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self.has_vec = np.zeros(capacity, dtype=np.bool_)

    def reserve(self, n: int) -> None:
        cap = self.matrix.shape[0]
        if n <= cap:
            return
        new_cap = max(n, 2 * cap)
        m = np.zeros((new_cap, self.dim), dtype=np.float32)
        m[:cap] = self.matrix
        h = np.zeros(new_cap, dtype=np.bool_)
        h[:cap] = self.has_vec
        self.matrix, self.has_vec = m, h

    def set(self, row: int, vector: np.ndarray | None) -> None:
        """Store an L2-normalised vector at ``row`` (None clears it)."""
        self.reserve(row + 1)
        if vector is None:
            self.matrix[row] = 0.0
            self.has_vec[row] = False
        else:
            # rows arrive normalised (embed_checked / check_vectors); normalising again would
            # perturb the last bits and make a reopened store score differently
            self.matrix[row] = np.asarray(vector, np.float32)
            self.has_vec[row] = True

    def get(self, row: int) -> np.ndarray | None:
        return self.matrix[row].copy() if self.has_vec[row] else None

    def move(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Copy rows ``src`` to rows ``dst`` (compaction)."""
        self.matrix[dst] = self.matrix[src]
        self.has_vec[dst] = self.has_vec[src]

    def truncate(self, n: int) -> None:
        self.matrix[n:] = 0.0
        self.has_vec[n:] = False

    def scores(self, query: np.ndarray, n_rows: int, out: np.ndarray | None = None) -> np.ndarray:
        """Inner products of the first ``n_rows`` rows with one normalised query (0 without a
        vector)."""
        if out is None:
            out = np.empty(n_rows, dtype=np.float32)
        if n_rows * self.dim >= PARALLEL_ELEMENTS:
            dot_scores_parallel(self.matrix, n_rows, self.has_vec, query, out)
        else:
            dot_scores(self.matrix, n_rows, self.has_vec, query, out)
        return out

    def scores_batch(self, queries: np.ndarray, n_rows: int,
                     out: np.ndarray | None = None) -> np.ndarray:
        """``(n_queries, n_rows)`` float32 inner products by one BLAS product (into ``out``, a
        C-contiguous float32 array of that shape, when given)."""
        if out is None:
            out = np.empty((queries.shape[0], n_rows), np.float32)
        np.matmul(queries, self.matrix[:n_rows].T, out=out)
        missing = ~self.has_vec[:n_rows]
        if missing.any():
            out[:, missing] = 0.0
        return out
