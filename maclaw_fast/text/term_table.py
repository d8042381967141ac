"""Query words in the form the term kernels read (``maclaw_kernels.terms``)."""

from __future__ import annotations

import numpy as np
from maclaw_kernels.terms import insert_terms

from maclaw_fast.index.arrays import grow


class WordTable:
    """Lower-cased ASCII words as flat UTF-8 bytes and their offsets, with one int64 ``table``:
    its first half an open-addressing hash table of word numbers (FNV-1a, linear probing, -1
    empty, load ≤ ½), its second half each word's term id (``-2``: a stop word). Appended to,
    never rewritten: a word keeps its term for good.

    Examples
    --------
    >>> from maclaw_kernels.terms import ascii_query_terms
    >>> table = WordTable()
    >>> table.append(["deploy", "deploying", "the"], [0, 0, -2])
    >>> ids, known = ascii_query_terms(b"Deploying the SCRIPT", *table.arrays)
    >>> bool(known)
    False
    >>> ids, known = ascii_query_terms(b"Deploying the deploy!", *table.arrays)
    >>> ids.tolist(), bool(known)
    ([0, 0], True)
    """

    def __init__(self) -> None:
        self.data = np.zeros(1024, np.uint8)
        self.offsets = np.zeros(64, np.int64)
        self.table = np.full(128, -1, np.int64)
        self.count = 0
        self.known: set[str] = set()
        self.arrays = (self.data, self.offsets, self.table)

    def set_ids(self, numbers: list[int], tid: int) -> None:
        """Give the words ``numbers`` the term id ``tid`` (in place: the arrays stay)."""
        half = self.table.shape[0] // 2
        self.table[half + np.asarray(numbers, np.int64)] = tid

    def append(self, words: list[str], ids: list[int]) -> None:
        """Add ``words`` (new, ASCII, lower-case) with their term ids."""
        encoded = [w.encode("ascii") for w in words]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        start = int(self.offsets[self.count])
        end = start + int(lengths.sum())
        total = self.count + len(words)
        self.data = grow(self.data, end)
        self.data[start:end] = np.frombuffer(b"".join(encoded), np.uint8)
        self.offsets = grow(self.offsets, total + 1)
        self.offsets[self.count + 1: total + 1] = start + np.cumsum(lengths)
        size = self.table.shape[0] // 2
        if 2 * total > size:  # keep the load at most ½: rebuild larger
            while 2 * total > size:
                size *= 2
            table = np.full(2 * size, -1, np.int64)
            table[size: size + self.count] = self.table[self.table.shape[0] // 2:][:self.count]
            self.table = table
            table[size + self.count: size + total] = ids
            insert_terms(self.data, self.offsets, 0, total, self.table)
        else:
            self.table[size + self.count: size + total] = ids
            insert_terms(self.data, self.offsets, self.count, total, self.table)
        self.count = total
        self.known.update(words)
        if (self.arrays[0] is not self.data or self.arrays[1] is not self.offsets
                or self.arrays[2] is not self.table):
            self.arrays = (self.data, self.offsets, self.table)
