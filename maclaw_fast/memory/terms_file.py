"""The BM25 postings of a store's snapshot, saved beside it (``terms.bin``) so a reopen loads
the mirror's arrays instead of tokenising the store again (~70 % of a 500-entry reopen) and
counting and sorting its postings (``index/bm25_persist.py``).

The file holds the vocabulary the term ids refer to, each snapshot row's distinct terms with their
counts and token count, and the same postings by term: one msgspec MessagePack record (the arrays
as raw little-endian bytes) followed by a checksum trailer like the snapshot's. It is a cache,
never a source of truth: it is used only when its checksum holds and it was made from the same
snapshot file (its sequence number, row count and identity: the snapshot's own length and
checksum) by the same tokenizer (:data:`TOKENIZER_VERSION`); anything else, and any read error,
means "tokenise" (and the file is written again on close).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import msgspec
import numpy as np

from maclaw_fast.index.bm25_persist import Postings
from maclaw_fast.persist.checksum import crc32
from maclaw_fast.text.tokenizer import TOKENIZER_VERSION

FILE_NAME = "terms.bin"
OLD_FILE_NAME = "terms.arrow"  # the Arrow layout of older builds: removed when this one is written
LAYOUT = 3
_TRAILER = struct.Struct("<8sQI")
_MAGIC = b"MCLWTRM3"
# the arrays and their dtypes, in file order
_ARRAYS = (("terms", "<i4"), ("tfs", "<f4"), ("offsets", "<i8"), ("lengths", "<i8"),
           ("indptr", "<i8"), ("docs", "<i4"), ("doc_tfs", "<f4"))


class TermsMeta(msgspec.Struct, kw_only=True):
    seq: int
    rows: int
    snapshot: str  # the snapshot file's identity (persist.snapshot.open_snapshot)
    tokenizer: str  # the analysis that made the term ids (its rules, stop list and stemmer)
    layout: int = LAYOUT


def terms_meta(seq: int, rows: int, snapshot_id: str, documents: str = "") -> TermsMeta:
    """What a ``terms.bin`` must match: the snapshot at ``seq`` of ``rows`` rows whose checksum
    is ``snapshot_id``, this tokenizer and what the documents hold beside their text
    (``documents``, e.g. the replies' questions)."""
    tokenizer = f"{TOKENIZER_VERSION}; {documents}" if documents else TOKENIZER_VERSION
    return TermsMeta(seq=seq, rows=rows, snapshot=snapshot_id, tokenizer=tokenizer)


class _TermsFile(msgspec.Struct, kw_only=True):
    meta: TermsMeta
    words: str  # the vocabulary, newline-separated: one string splits far faster than a list
    arrays: list[bytes]  # _ARRAYS' bytes in order


def write_terms(directory: Path, bm25, keys: np.ndarray, meta: TermsMeta) -> None:
    """Save the postings of ``keys`` (the snapshot's rows, in its order) from ``bm25``
    (:meth:`~maclaw_fast.index.bm25.Bm25Index.postings`); written by temp file + rename,
    without fsync: a lost or stale file only costs a tokenising reopen."""
    p = bm25.postings(keys)
    words = "\n".join(p.words)
    if words.count("\n") != max(len(p.words) - 1, 0):
        return  # a token holding a newline (the tokenizer makes none): no file, reopens tokenise
    arrays = [np.ascontiguousarray(getattr(p, name), dtype).tobytes() for name, dtype in _ARRAYS]
    body = msgspec.msgpack.encode(_TermsFile(meta=meta, words=words, arrays=arrays))
    path = directory / FILE_NAME
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(body)
        fh.write(_TRAILER.pack(_MAGIC, len(body), crc32(body)))
    os.replace(tmp, path)
    (directory / OLD_FILE_NAME).unlink(missing_ok=True)


def read_terms(directory: Path, meta: TermsMeta) -> Postings | None:
    """The postings saved for exactly ``meta``, their checksum verified, else None (their
    consistency is checked where they are loaded, :meth:`Bm25Index.load_postings`)."""
    try:
        data = (directory / FILE_NAME).read_bytes()
        size = len(data) - _TRAILER.size
        if size < 0:
            return None
        magic, length, crc = _TRAILER.unpack_from(data, size)
        body = memoryview(data)[:size]
        if magic != _MAGIC or length != size or crc32(body) != crc:
            return None  # damaged, or written by another layout
        saved = msgspec.msgpack.decode(body, type=_TermsFile)
        if saved.meta != meta or len(saved.arrays) != len(_ARRAYS):
            return None
        arrays = {name: np.frombuffer(raw, dtype) for (name, dtype), raw in zip(_ARRAYS,
                                                                               saved.arrays)}
        return Postings(words=saved.words, **arrays)  # split only if ever needed
    except (OSError, msgspec.DecodeError, ValueError):
        return None

