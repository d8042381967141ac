"""A reopened store's text columns kept as UTF-8 bytes and offsets (copied out of the snapshot)
until something needs them as Python lists: a recall reads only its hits' rows, so a reopen need
not make 2,000 strings, 500 tuples and three dicts (~2 ms of a 500-entry reopen).

:class:`~maclaw_fast.memory.columns.EntryTable` holds a :class:`PackedText` right after a reopen
and turns it into its lists on the first use that needs them (a write, a listing, a lookup by id).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from maclaw_fast.persist.arrow_numpy import arrow_of


def offsets(arr: pa.Array) -> np.ndarray:
    """A string or list array's n + 1 value offsets (int32, read-only view of its buffer): no
    compute kernel (a ``pyarrow.compute`` call costs more than a whole column here)."""
    return np.frombuffer(arr.buffers()[1], np.int32, len(arr) + 1, arr.offset * 4)


class PackedStrings:
    """``n`` strings as one ``bytes`` and n + 1 byte offsets."""

    __slots__ = ("offsets", "data")

    def __init__(self, offsets: np.ndarray, data: bytes | memoryview) -> None:
        self.offsets = offsets
        self.data = data

    @classmethod
    def of(cls, arr: pa.Array, share: bool = False) -> PackedStrings:
        """A null-free Arrow string array's text: a copy (nothing of the source buffer is
        kept), or with ``share`` a view of its buffer (for a source kept alive anyway)."""
        off = offsets(arr)
        start, end = int(off[0]), int(off[-1])
        if end <= start:
            data = b""
        else:
            data = memoryview(arr.buffers()[2])[start:end]
            data = data if share else bytes(data)
        return cls(off - np.int32(start), data)

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def __getitem__(self, i: int) -> str:
        o = self.offsets
        return str(self.data[o[i]:o[i + 1]], "utf-8")

    def take(self, rows: np.ndarray) -> list[str]:
        """The strings of ``rows`` (an int64 array): one gather of their offsets, then a
        slice and decode each (indexing the offsets per string costs more than the decode)."""
        o, data = self.offsets, self.data
        return [str(data[a:b], "utf-8") for a, b in zip(o[rows].tolist(),
                                                         o[rows + 1].tolist())]

    def to_arrow(self) -> pa.StringArray:
        return pa.StringArray.from_buffers(len(self), pa.py_buffer(self.offsets),
                                           pa.py_buffer(self.data))

    def tolist(self) -> list[str]:
        return self.to_arrow().to_pylist()

    @property
    def nbytes(self) -> int:
        return len(self.data) + self.offsets.nbytes


class PackedLists:
    """``n`` tuples of strings: list offsets over one :class:`PackedStrings`."""

    __slots__ = ("offsets", "values")

    def __init__(self, arr: pa.ListArray, share: bool = False) -> None:
        off = offsets(arr)
        start, end = int(off[0]), int(off[-1])
        self.values = PackedStrings.of(arr.values.slice(start, end - start), share)
        self.offsets = off - np.int32(start)

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def __getitem__(self, i: int) -> tuple[str, ...]:
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        values = self.values
        return tuple(values[j] for j in range(lo, hi))

    def take(self, rows: np.ndarray) -> list[tuple[str, ...]]:
        """The tuples of ``rows`` (an int64 array)."""
        o, vo, data = self.offsets, self.values.offsets, self.values.data
        out = []
        for lo, hi in zip(o[rows].tolist(), o[rows + 1].tolist()):
            if lo == hi:
                out.append(())
                continue
            ends = vo[lo:hi + 1].tolist()  # the row's values' byte offsets
            out.append(tuple(str(data[a:b], "utf-8") for a, b in zip(ends, ends[1:])))
        return out

    def tolist(self) -> list[tuple[str, ...]]:
        arr = pa.ListArray.from_arrays(arrow_of(self.offsets), self.values.to_arrow())
        return [tuple(x) if x else () for x in arr.to_pylist()]

    @property
    def nbytes(self) -> int:
        return self.offsets.nbytes + self.values.nbytes


class PackedText:
    """A snapshot's ``id``, ``content``, ``tags`` and ``compact_form`` columns, packed."""

    __slots__ = ("ids", "content", "tags", "compact")

    def __init__(self, ids: pa.Array, content: pa.Array, tags: pa.ListArray,
                 compact: pa.Array, share: bool = False) -> None:
        # ``share``: views of the columns' buffers instead of copies (a reopen whose vector
        # column keeps the buffer the snapshot was read into alive anyway)
        self.ids = PackedStrings.of(ids, share)
        self.content = PackedStrings.of(content, share)
        self.tags = PackedLists(tags, share)
        self.compact = PackedStrings.of(compact, share)

    @staticmethod
    def packable(*columns: pa.Array) -> bool:
        """Whether the columns (string, string, list of string, string) hold no null: what
        :class:`PackedText` requires (a null reads back as None from a list, never here)."""
        return not any(c.null_count for c in columns) and not columns[2].values.null_count

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, i: int) -> tuple[str, str, tuple[str, ...], str]:
        return self.ids[i], self.content[i], self.tags[i], self.compact[i]

    def rows(self, rows: np.ndarray) -> tuple[list[str], list[str], list[tuple[str, ...]],
                                               list[str]]:
        """:meth:`row` of many rows (an int64 array) at once: ids, contents, tags, compacts."""
        return (self.ids.take(rows), self.content.take(rows), self.tags.take(rows),
                self.compact.take(rows))

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.content.nbytes + self.tags.nbytes + self.compact.nbytes
