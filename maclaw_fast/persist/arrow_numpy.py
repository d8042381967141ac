"""NumPy arrays and Python strings to and from Arrow arrays, through the arrays' buffers.

pyarrow's ``pa.array``, ``Array.to_numpy``, ``pa.scalar`` and ``fill_null`` import pandas on
their first call in a process whenever pandas is installed: ~0.26 s of CPU and ~80 MiB, a third of
a command-line recall. Opening a store, saving, recalling and routing use these instead, so a
process that never asks for pandas never loads it (``tests/test_arrow_numpy.py`` holds this).

Examples
--------
>>> numpy_of(arrow_of(np.array([True, False, True]))).tolist()
[True, False, True]
>>> strings_of(["a", "bc"]).to_pylist()
['a', 'bc']
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pyarrow as pa

_DTYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
           pa.int64(): np.int64, pa.uint8(): np.uint8, pa.uint16(): np.uint16,
           pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
           pa.float64(): np.float64}


def one_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column as one array: its only chunk as it is (``combine_chunks`` copies even one
    chunk, which would also take a reopen's vectors out of the snapshot's buffer)."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 0:  # (combining no chunks goes through pandas)
            return pa.nulls(0, column.type)
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def _bits(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    """``n`` bits of an Arrow bitmap from bit ``offset`` as booleans (a missing one: all set)."""
    if buffer is None:
        return np.ones(n, np.bool_)
    bits = np.unpackbits(np.frombuffer(buffer, np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].view(np.bool_)


def numpy_of(column: pa.Array | pa.ChunkedArray, fill=None) -> np.ndarray:
    """The values of a boolean or fixed-width numeric column as a 1-D NumPy array (a read-only
    view of the Arrow buffer for numbers; booleans unpacked). A null becomes ``fill``; with no
    ``fill``, a column holding one raises ``ValueError``."""
    arr = one_array(column)
    n, offset = len(arr), arr.offset
    validity, data = arr.buffers()[:2] if arr.type.num_buffers >= 2 else (None, None)
    if arr.type == pa.bool_():
        out = _bits(data, offset, n)
    else:
        dtype = _DTYPES.get(arr.type)
        if dtype is None:
            raise TypeError(f"numpy_of takes numbers or booleans, not {arr.type}")
        out = (np.frombuffer(data, dtype, count=n, offset=offset * np.dtype(dtype).itemsize)
               if n else np.zeros(0, dtype))
    if arr.null_count:
        if fill is None:
            raise ValueError(f"a column of {arr.type} holds {arr.null_count} nulls")
        out = out.copy()
        out[~_bits(validity, offset, n)] = fill
    return out


def valid_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whether each slot of ``column`` holds a value (not null), as booleans."""
    arr = one_array(column)
    if not arr.null_count:
        return np.ones(len(arr), np.bool_)
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def arrow_of(values: np.ndarray) -> pa.Array:
    """A null-free Arrow array of a 1-D NumPy array of numbers (sharing its memory) or booleans
    (packed into bits)."""
    a = np.ascontiguousarray(values)
    if a.ndim != 1:
        raise ValueError(f"arrow_of takes a 1-D array, not {a.ndim}-D")
    if a.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(a),
                                     [None, pa.py_buffer(np.packbits(a, bitorder="little"))])
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [None, pa.py_buffer(a)])


def strings_of(values: list[str | None] | tuple[str | None, ...]) -> pa.StringArray:
    """An Arrow string array of Python strings (None: a null)."""
    valid = None if None not in values else np.fromiter(
        (v is not None for v in values), np.bool_, len(values))
    encoded = [v.encode() if v is not None else b"" for v in values]
    ends = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=ends[1:])
    if ends[-1] >= 2 ** 31:
        raise ValueError("strings_of takes under 2 GiB of text")
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(len(encoded), pa.py_buffer(ends.astype(np.int32)),
                                       pa.py_buffer(b"".join(encoded)), bitmap)


def column_of(values: list, type_: pa.DataType) -> pa.Array:
    """A null-free Arrow array of ``type_`` from Python values: strings, numbers, booleans, or
    lists of one of those."""
    if pa.types.is_list(type_):
        ends = np.zeros(len(values) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, values), np.int64, len(values)), out=ends[1:])
        inner = column_of(list(chain.from_iterable(values)), type_.value_type)
        return pa.ListArray.from_arrays(arrow_of(ends.astype(np.int32)), inner)
    if type_ == pa.string():
        return strings_of(values)
    if type_ == pa.bool_():
        return arrow_of(np.array(values, np.bool_))
    dtype = _DTYPES.get(type_)
    if dtype is None:
        raise TypeError(f"column_of takes strings, numbers, booleans or lists, not {type_}")
    return arrow_of(np.array(values, dtype))
