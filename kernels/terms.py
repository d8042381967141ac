"""Query words to term ids inside a kernel, so an ASCII query goes from its bytes to BM25 without
a Python token list, dict lookups and a NumPy array per query (~3 µs of a ~46 µs recall in the
real loop, measured).

The kernel does not stem: it reads a table of words already seen (lower-cased word runs as
``maclaw_fast.text.tokenize`` splits ASCII), each mapped to the term id the Python tokenizer gives
it, stop words marked. A query holding any word the table lacks is reported unknown and the caller
tokenizes it in Python, so this path can never give other terms than the tokenizer.

The table (``maclaw_fast.text.term_table.WordTable``): the words as flat UTF-8 bytes and offsets;
one int64 array whose first half is an open-addressing hash table of word numbers (FNV-1a over
the bytes, linear probing, -1 empty, load ≤ ½) and whose second half holds each word's term id
(``STOP_ID`` for a stop word, -1 for a word whose term the vocabulary lacks: it scores
nothing, as the tokenizer's term would; the vocabulary fills the id in when it adds the term).
"""

import numpy as np
from numba import njit

STOP_ID = -2


@njit(cache=True)
def term_hash(data, start, end):
    """64-bit FNV-1a of ``data[start:end]``."""
    h = np.uint64(0xCBF29CE484222325)
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
    return h


@njit(cache=True)
def insert_terms(data, offsets, lo, hi, table):
    """Put words ``lo..hi`` (word ``t`` is ``data[offsets[t]:offsets[t + 1]]``) into the hash
    half of ``table`` (a power-of-two half, -1 = empty, with room to spare)."""
    last = table.shape[0] // 2 - 1
    for t in range(lo, hi):
        slot = np.int64(term_hash(data, offsets[t], offsets[t + 1]) & np.uint64(last))
        while table[slot] >= 0:
            slot = (slot + 1) & last
        table[slot] = t


@njit(cache=True)
def find_term(text, start, end, data, offsets, table):
    """The number of the word whose bytes are ``text[start:end]``, -1 when there is none."""
    last = table.shape[0] // 2 - 1
    slot = np.int64(term_hash(text, start, end) & np.uint64(last))
    length = end - start
    while table[slot] >= 0:
        t = table[slot]
        first = offsets[t]
        if offsets[t + 1] - first == length:
            j = 0
            while j < length and data[first + j] == text[start + j]:
                j += 1
            if j == length:
                return t
        slot = (slot + 1) & last
    return -1


@njit(cache=True)
def ascii_query_terms(query, data, offsets, table):
    """``(term ids, known)`` of an ASCII ``query`` (bytes): its maximal runs of letters and
    digits, lower-cased, each mapped through the word table, stop words left out, in order.
    ``known`` is False (and the ids empty) when a word is not in the table: the caller must
    tokenize the query itself."""
    n = len(query)
    half = table.shape[0] // 2
    lowered = np.empty(n, np.uint8)
    out = np.empty(n // 2 + 1, np.int64)
    k = 0
    start = -1
    for i in range(n + 1):
        c = np.int64(query[i]) if i < n else 32
        if 65 <= c <= 90:
            c += 32
        if 97 <= c <= 122 or 48 <= c <= 57:
            lowered[i] = c
            if start < 0:
                start = i
        elif start >= 0:
            w = find_term(lowered, start, i, data, offsets, table)
            if w < 0:
                return out[:0], False
            tid = table[half + w]
            if tid != STOP_ID:
                out[k] = tid
                k += 1
            start = -1
    return out[:k], True


def warmup() -> None:
    """Compile this module's kernels for the types the word table uses."""
    data, offsets, table = np.frombuffer(b"ab", np.uint8).copy(), np.array([0, 1, 2]), np.full(
        16, -1, np.int64)
    insert_terms(data, offsets, 0, 2, table)
    ascii_query_terms(b"A b", data, offsets, table)
