"""String columns of a snapshot checked and coded by Arrow's compute functions: what a reopen
needs of its ``id``, ``category``, ``status`` and ``scope`` columns without making a Python
string per row.

Examples
--------
>>> value_codes(pa.array(["b", "a", "b"]), ("a", "b")).tolist()
[1, 0, 1]
>>> distinct_nonempty(pa.array(["x", "y"])), distinct_nonempty(pa.array(["x", "x"]))
(True, False)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.errors import CorruptStoreError
from maclaw_fast.persist.arrow_numpy import numpy_of, one_array, strings_of


def value_codes(column: pa.ChunkedArray | pa.Array, allowed: tuple[str, ...],
                name: str = "") -> np.ndarray:
    """Each value's index in ``allowed`` (int8, at most 127 values), or
    :class:`CorruptStoreError` for a null or a value not in it."""
    arr = one_array(column)
    if arr.null_count:
        raise CorruptStoreError(f"snapshot column {name!r} has missing values")
    codes = pc.index_in(arr, value_set=strings_of(allowed))
    if codes.null_count:
        bad = {v for v, c in zip(arr.to_pylist(), codes.to_pylist()) if c is None}
        raise CorruptStoreError(f"snapshot column {name!r} holds unknown values "
                                f"{sorted(bad)[:3]}")
    return numpy_of(codes).astype(np.int8)


def distinct_nonempty(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether every string of a null-free column is non-empty and different from the others."""
    arr = one_array(column)
    return len(arr) == 0 or (pc.min(pc.binary_length(arr)).as_py() > 0
                             and pc.count_distinct(arr).as_py() == len(arr))
