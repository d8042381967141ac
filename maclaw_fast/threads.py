"""Deliberate thread counts for the numba batch kernels.

On 2 cores a parallel region waits for its slowest thread and OpenMP workers keep spinning after
it, taking the second core from the serial Python around the kernels; measured, one thread is
faster for a batch of 1,000 recalls (44k vs 21k q/s) and for routing under load. Only streaming
a large matrix (100k × 384) gains from both cores. The setting is per calling thread.
"""

from __future__ import annotations


class numba_threads:
    """Run the enclosed numba parallel kernels with ``n`` threads (0 = leave as is).

    Examples
    --------
    >>> import numba
    >>> with numba_threads(1):
    ...     numba.get_num_threads()
    1
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.before = None

    def __enter__(self) -> numba_threads:
        if self.n > 0:
            import numba

            self.before = numba.get_num_threads()
            numba.set_num_threads(min(self.n, numba.config.NUMBA_NUM_THREADS))
        return self

    def __exit__(self, *exc) -> None:
        if self.before is not None:
            import numba

            numba.set_num_threads(self.before)
