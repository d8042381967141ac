"""String columns of a snapshot checked and coded on their Arrow buffers
(:mod:`maclaw_kernels.strings`): what a reopen needs of its ``id``, ``category``, ``status`` and
``scope`` columns without making a Python string per row.

Examples
--------
>>> value_codes(pa.array(["b", "a", "b"]), ("a", "b")).tolist()
[1, 0, 1]
>>> distinct_nonempty(pa.array(["x", "y"])), distinct_nonempty(pa.array(["x", "x"]))
(True, False)
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
from maclaw_kernels.strings import distinct_nonempty as _distinct_kernel
from maclaw_kernels.strings import value_indices

from maclaw_fast.errors import CorruptStoreError

_EMPTY = np.zeros(0, np.uint8)


def string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, the ``n + 1`` offsets into them) of a string array, views of its buffers."""
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], np.int32, len(arr) + 1, arr.offset * 4) \
        if buffers[1] is not None else np.zeros(1, np.int32)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else _EMPTY
    return data, offsets


def one_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column as one array: its only chunk as it is (``combine_chunks`` copies even one
    chunk, which would also take a reopen's vectors out of the snapshot's buffer)."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


@functools.lru_cache(maxsize=16)
def _allowed(allowed: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [v.encode() for v in allowed]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded) or b"\0", np.uint8), offsets


def value_codes(column: pa.ChunkedArray | pa.Array, allowed: tuple[str, ...],
                name: str = "") -> np.ndarray:
    """Each value's index in ``allowed`` (int8, at most 127 values), or
    :class:`CorruptStoreError` for a null or a value not in it."""
    arr = one_array(column)
    if arr.null_count:
        raise CorruptStoreError(f"snapshot column {name!r} has missing values")
    data, offsets = string_buffers(arr)
    out = np.empty(len(arr), np.int8)
    if value_indices(data, offsets, *_allowed(tuple(allowed)), out):
        bad = {v for v, c in zip(arr.to_pylist(), out.tolist()) if c < 0}
        raise CorruptStoreError(f"snapshot column {name!r} holds unknown values "
                                f"{sorted(bad)[:3]}")
    return out


def distinct_nonempty(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether every string of a null-free column is non-empty and different from the others."""
    arr = one_array(column)
    data, offsets = string_buffers(arr)
    size = 2
    while size < 2 * len(arr):
        size *= 2
    return bool(_distinct_kernel(data, offsets, np.empty(size, np.int64)))
