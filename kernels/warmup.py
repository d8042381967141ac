"""Compile (and cache) every kernel on tiny inputs, writable and read-only alike, so the first
real call of a process pays no JIT time. Modules may add a ``warmup()`` of their own."""

import importlib
import pkgutil

import numpy as np


def _ro(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def _memory_kernels():
    from maclaw_kernels import bm25, decay, recall, vectors, views

    n, d = 4, 3
    f64 = np.zeros(n)
    i64 = np.arange(n, dtype=np.int64)
    bools = np.ones(n, np.bool_)
    ip, pd, pt = bm25.build_csr(2, np.array([0, 1], np.int32), np.array([0, 1], np.int32),
                                np.array([1.0, 2.0], np.float32))
    args = (np.array([0], np.int32), np.ones(1), ip, pd, pt, np.ones(n, np.float32), bools, i64,
            1.2, 0.75, 1.0)
    bm25.bm25_scores(*args, np.zeros(n))
    query_args = (np.array([0, -1], np.int64), np.ones(2, np.int64), n, ip, pd, pt, 1, 2,
                  np.zeros(2, np.int64), np.ones(2, np.int32), np.zeros(2, np.int32),
                  np.ones(2, np.float32), *args[5:], np.zeros(4), np.zeros(n))
    bm25.bm25_query(*query_args)
    saved = (np.array([0], np.int32), np.array([0], np.int32), np.array([0, 1], np.int64),
             np.ones(1, np.int64), np.array([0, 1], np.int64))
    for arrays in (saved, tuple(_ro(a) for a in saved)):  # a file's arrays are read-only
        bm25.check_postings(*arrays, 1, np.zeros(1, np.int64))
    bm25.bm25_query_parallel(*query_args, 2)
    bm25.bm25_scores_batch(np.array([0, 1], np.int64), np.array([0], np.int64), *args[1:],
                           np.zeros((1, n)))
    bm25.query_terms_batch(np.array([0, -1], np.int64), np.array([0, 2], np.int64),
                           np.ones(2, np.int64), n, np.zeros(4), np.zeros(2, np.int64),
                           np.zeros(2, np.int64), np.zeros(2))
    m = np.ones((n, d), np.float32)
    for mat in (m, _ro(m)):
        vectors.dot_scores(mat, n, bools, np.ones(d, np.float32), np.zeros(n, np.float32))
        vectors.dot_scores_parallel(mat, n, bools, np.ones(d, np.float32), np.zeros(n, np.float32))
        vectors.dot_scores_batch(mat, n, bools, np.ones((2, d), np.float32),
                                 np.zeros((2, n), np.float32))
    decay.touch_rows(np.zeros(1, np.int64), np.zeros(n, np.int64), f64.copy(), f64.copy(), 1,
                     0.1, True, 0.0, np.zeros((3, 1)))
    for kern in (decay.decay_pass, decay.decay_pass_batch):
        kern(f64 + 1, f64, ~bools, bools, 0.0, 0.003, 0.1, np.zeros(n), np.zeros(n, np.bool_))
    nbr = np.full((n, 5), -1, np.int64)
    links = np.full(n, -1, np.int64)
    # the plan's arguments, in the order of recall.KERNEL_ARGS
    common = (i64, i64, i64, np.zeros(0, np.int64), ~bools, 1, 1, 0.4, 0.6, 1.0, 5, nbr,
              np.zeros((n, 5)), 1, 0.5, links, links, 2, 0.8, 0.3, 3, 3, 5, 3, 100)
    rec, imp, base = np.zeros(n), np.zeros(n), np.zeros(n)
    # recency knobs: decay, weights, the recency memo (key, updated_at seen, factors), log table
    knobs = (0.005, 1.0, 1.0, np.full(2, np.nan), np.full(n, np.nan), np.zeros(n), np.zeros(64))
    recall.base_scores(f64, f64, i64, 0.0, *knobs, rec, imp, base)
    outs = [np.zeros(8, np.int64)] + [np.zeros(8) for _ in range(5)]
    recall.recall_one(base, f64, np.zeros(n, np.float32), f64, bools, bools, f64, *common,
                      np.zeros((4, n)), *outs)
    recall.recall_single(f64, f64, 0.0, *knobs, f64, np.zeros(n, np.float32), f64, bools, bools,
                         *common, np.zeros((7, n)), np.zeros(8, np.int64), np.zeros((9, 8)))
    for mat in (m, _ro(m)):
        rest = (np.zeros(4, np.uint8), np.zeros(3, np.int64), np.full(4, -1, np.int64),
                *query_args[1:-1], mat, bools, f64, f64, *knobs, f64, bools, bools, *common,
                np.zeros(n), np.zeros(n, np.float32), np.zeros((7, n)), np.zeros(8, np.int64),
                np.zeros((9, 8)), bools, 0.3, 1.0, 0.0, np.zeros(1))
        for text in (b"a b", b""):  # an ASCII query split in the kernel; term ids given
            recall.recall_query(text, query_args[0], np.ones(d, np.float32), True, 0.0, *rest)
        if mat is m:  # (a store's arrays are writeable)
            recall.recall_viewed(b"a b", query_args[0], np.ones(d, np.float32), True, 0.0,
                                 *views.view_table(rest, recall.VIEWED_ARGS))
    from maclaw_kernels import recall_large

    recall_large.recall_large(m, np.zeros((n, d), np.int8), np.zeros(n, np.float32), f64, 2e-4,
                              bools, np.ones(d, np.float32), f64, f64, 0.0, *knobs,
                              f64, f64, bools, bools, *common, 2048, np.zeros(n, np.float32),
                              np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(8, np.int64),
                              np.zeros((9, 8)))
    outs_b = [np.zeros((1, 8), np.int64)] + [np.zeros((1, 8)) for _ in range(5)]
    recall.recall_batch(base, f64[None], np.zeros((1, n), np.float32), f64[None], bools[None],
                        bools[None], np.zeros(1, np.int64), f64, *common, *outs_b,
                        np.zeros(1, np.int64), bools[None], np.ones(1), True, True, 0.0, 0.3,
                        np.zeros((0, 0)))
    return ["bm25", "vectors", "decay", "recall", "recall_large"]


def warmup() -> list[str]:
    """Compile every kernel; returns the names of the modules warmed."""
    import maclaw_kernels

    names = _memory_kernels()
    for info in pkgutil.iter_modules(maclaw_kernels.__path__):
        if info.name in ("warmup",) or info.name in names:
            continue
        module = importlib.import_module(f"maclaw_kernels.{info.name}")
        if hasattr(module, "warmup"):
            module.warmup()
            names.append(info.name)
    return names
