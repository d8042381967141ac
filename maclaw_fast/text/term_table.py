"""The vocabulary in the form the term kernels read (``maclaw_kernels.terms``)."""

from __future__ import annotations

import numpy as np
from maclaw_kernels.terms import insert_terms

from maclaw_fast.index.arrays import grow


class TermTable:
    """A vocabulary's tokens as flat UTF-8 bytes, their offsets, and a hash table of their ids,
    appended to as the vocabulary grows (ids are never reused, so nothing is ever rewritten).

    Examples
    --------
    >>> from maclaw_kernels.terms import ascii_query_terms
    >>> table = TermTable()
    >>> ascii_query_terms(b"Deploy the SCRIPT, deploy!", *table.arrays(["deploy", "script"])).tolist()
    [0, -1, 1, 0]
    """

    def __init__(self) -> None:
        self.data = np.zeros(1024, np.uint8)
        self.offsets = np.zeros(64, np.int64)
        self.table = np.full(64, -1, np.int64)
        self.count = 0

    def arrays(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes, offsets, table) covering every token of ``tokens`` (the vocabulary's list, of
        which this table has seen a prefix)."""
        if len(tokens) > self.count:
            self._append(tokens[self.count:])
        return self.data, self.offsets, self.table

    def _append(self, new: list[str]) -> None:
        encoded = [t.encode("utf-8") for t in new]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        start = int(self.offsets[self.count])
        end = start + int(lengths.sum())
        self.data = grow(self.data, end)
        self.data[start:end] = np.frombuffer(b"".join(encoded), np.uint8)
        total = self.count + len(new)
        self.offsets = grow(self.offsets, total + 1)
        self.offsets[self.count + 1: total + 1] = start + np.cumsum(lengths)
        if 2 * total > self.table.shape[0]:  # keep the load at most ½: rebuild larger
            size = self.table.shape[0]
            while 2 * total > size:
                size *= 2
            self.table = np.full(size, -1, np.int64)
            insert_terms(self.data, self.offsets, 0, total, self.table)
        else:
            insert_terms(self.data, self.offsets, self.count, total, self.table)
        self.count = total
