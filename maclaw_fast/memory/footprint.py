"""What an open store holds in memory, estimated cheaply enough to ask after every pool call.

Arrays are counted exactly (``nbytes`` of every NumPy array the store's parts hold); text and
the Python objects around each row are estimated per row (measured with ``tracemalloc`` on
stores of 500 memories: ~0.4 KiB of dict entries, id strings and tuples per row beyond the
content's own characters).
"""

from __future__ import annotations

import numpy as np

PER_ROW_OBJECTS = 400  # id string, id/content dict entries, tag tuple, list slots
PER_CACHED_ENTRY = 300  # an Entry struct kept in the table's entry cache
PER_TERM = 120  # a vocabulary token string, its dict entry and list slot


def array_bytes(obj, owned: bool = False) -> int:
    """``nbytes`` of the NumPy arrays among ``obj``'s attributes (and in tuples there);
    ``owned``: only arrays that own their memory (not views of others)."""
    values = list(getattr(obj, "__dict__", {}).values())
    values += [v for value in values if isinstance(value, tuple) for v in value]
    return sum(v.nbytes for v in values
               if isinstance(v, np.ndarray) and (not owned or v.base is None))


def footprint_key(store) -> tuple:
    """What :func:`store_bytes` depends on, cheap to read: equal keys, equal estimates."""
    t, bm25 = store.table, store.bm25
    plans = tuple((id(v), _plan_bytes(v)) for v in store.plans.values())
    return (t.version, t.n_rows, t.is_packed, t.n_cached, len(bm25),
            bm25.vocab.resident_estimate(PER_TERM), store.vectors.matrix.shape[0], plans)


def _plan_bytes(plan) -> int:
    """A recall plan's own buffers (views of the columns are counted with them)."""
    return plan.nbytes() if callable(getattr(plan, "nbytes", None)) else array_bytes(plan, True)


def store_bytes(store) -> int:
    """Estimated resident bytes of ``store`` (caller holds its lock)."""
    t = store.table
    total = array_bytes(t) + array_bytes(store.vectors) + array_bytes(store.graph)
    bm25 = store.bm25
    total += array_bytes(bm25) + bm25.vocab.resident_estimate(PER_TERM)
    total += t.text_bytes() + (0 if t.is_packed else t.n_rows * PER_ROW_OBJECTS)
    total += t.n_cached * PER_CACHED_ENTRY
    for plan in store.plans.values():  # recall plans: masks and score buffers
        total += _plan_bytes(plan)
    return total
