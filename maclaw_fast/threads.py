"""Thread counts for the kernels that release the GIL and the BLAS product around them.

On 2 cores a parallel region waits for its slowest thread and OpenMP workers keep spinning after
it, taking the second core from the serial Python around the kernels: while another job holds a
core, one thread is faster for a batch of 1,000 recalls (44k vs 21k q/s) and for routing. On an
idle machine both cores pay (recall_batch_arrow 66k → 88k q/s, the list form 43k → 53k). So the
batch recall's default (``"auto"``) uses every core only while no other thread is runnable
(:func:`spare_core`), as the workspace search does. The setting is per calling thread. The
batch's one BLAS product runs on one thread (:func:`blas_threads`) for the same reason.
"""

from __future__ import annotations

import os
import threading
import time

from maclaw_fast.errors import ValidationError

_SPARE = {"at": -1.0, "spare": False}
_POOL: list = []


def pool():
    """The process's one thread pool for kernels that release the GIL (a batch's blocks, a
    large store's row ranges), one worker per core, started on first use."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                        thread_name_prefix="maclaw"))
    return _POOL[0]


def in_ranges(n: int, run, parts: int = 0) -> None:
    """``run(lo, hi)`` over ``0..n`` cut into ``parts`` contiguous ranges (0: one per core) on
    :func:`pool` (one range: on the caller's thread). ``run`` must release the GIL to gain
    anything.

    Examples
    --------
    >>> seen = []
    >>> in_ranges(10, lambda lo, hi: seen.append((lo, hi)))
    >>> sorted(seen)[0][0], sorted(seen)[-1][1], sum(hi - lo for lo, hi in seen)
    (0, 10, 10)
    """
    parts = max(1, min(parts or os.cpu_count() or 1, n))
    cuts = [n * i // parts for i in range(parts + 1)]
    if parts == 1:
        run(0, n)
        return
    for f in [pool().submit(run, cuts[i], cuts[i + 1]) for i in range(parts)]:
        f.result()


def spare_core() -> bool:
    """Whether the cores beyond the caller's are idle right now.

    ``/proc/loadavg``'s count of runnable threads (which includes the caller) below the number
    of cores, sampled at most every 0.1 s; without it the last minute's load average decides.
    Measured for the workspace scan over 20k chunks: the thread pair scans in 0.6 ms against
    1.1 ms serial on an idle machine, but waking it cost ~10 ms per search while other jobs held
    the cores.

    Examples
    --------
    >>> spare_core() in (True, False)
    True
    """
    now = time.monotonic()
    if now - _SPARE["at"] < 0.1:
        return _SPARE["spare"]
    cores = os.cpu_count() or 1
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            running = int(fh.read().split()[3].split("/")[0])
        spare = running < cores  # ``running`` counts us: the others plus our two threads fit
    except (OSError, ValueError, IndexError):
        try:
            spare = os.getloadavg()[0] + 1.0 <= cores
        except OSError:  # no load average on this platform
            spare = False
    _SPARE.update(at=now, spare=spare)
    return spare


def batch_threads(setting) -> int:
    """numba threads for a batch kernel: ``setting`` itself, or for ``"auto"`` every core while
    :func:`spare_core` says they are idle and one otherwise (0 = every core).

    Examples
    --------
    >>> batch_threads(1), batch_threads("auto") in (0, 1)
    (1, True)
    """
    if setting == "auto":
        return 0 if spare_core() else 1
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 0:
        raise ValidationError(f'batch_threads must be "auto" or an integer ≥ 0, got {setting!r}')
    return setting


_BLAS: dict = {"depth": 0}
_BLAS_LOCK = threading.Lock()


class blas_threads:
    """A context in which the BLAS behind NumPy's ``matmul`` runs ``n`` threads (threadpoolctl;
    ~7 µs a call once the libraries are known).

    The batch recall's one matrix product takes 1: OpenBLAS's workers keep spinning after a
    product, and on 2 cores they took the second core from the numba ranking kernel and the
    hit building that follow (1,000 × 500 list form 21.8 → 16.7 ms, Arrow 14.1 → 11.5 ms;
    the product itself 1.3 → 2.4 ms). The limit is process-wide, so overlapping contexts (two
    threads' batches) share one: the first sets it, the last one out restores the user's.

    Examples
    --------
    >>> import numpy as np
    >>> with blas_threads(1):
    ...     float((np.ones((2, 2)) @ np.ones(2))[0])
    2.0
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __enter__(self) -> blas_threads:
        with _BLAS_LOCK:
            if _BLAS["depth"] == 0:
                controller = _BLAS.get("controller")
                if controller is None:
                    from threadpoolctl import ThreadpoolController

                    controller = _BLAS["controller"] = ThreadpoolController()
                _BLAS["limiter"] = controller.limit(limits=self.n, user_api="blas")
            _BLAS["depth"] += 1
        return self

    def __exit__(self, *exc) -> None:
        with _BLAS_LOCK:
            _BLAS["depth"] -= 1
            if _BLAS["depth"] == 0:
                _BLAS.pop("limiter").restore_original_limits()
