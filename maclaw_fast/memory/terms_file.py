"""The BM25 postings of a store's snapshot, saved beside it (``terms.arrow``) so a reopen loads
the mirror's arrays instead of tokenising the store again (~70 % of a 500-entry reopen) and
counting and sorting its postings (``index/bm25_persist.py``).

The file holds the vocabulary the term ids refer to, each snapshot row's distinct terms with their
counts and token count, and the same postings by term. It is a cache, never a source of truth: it
is used only when it was made from the same snapshot (sequence number and a digest of the ids,
contents and tags) by the same tokenizer (:data:`tokenizer_version`); anything else, and any read
error, means "tokenise".
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from maclaw_fast.index.bm25_persist import Postings
from maclaw_fast.text.tokenizer import TOKENIZER_VERSION

FILE_NAME = "terms.arrow"


def tokenizer_version() -> str:
    """What decides whether saved term ids still hold: the analysis that made them (its rules,
    stop list and stemmer, :data:`~maclaw_fast.text.tokenizer.TOKENIZER_VERSION`)."""
    return TOKENIZER_VERSION


class TermsMeta(msgspec.Struct, kw_only=True):
    seq: int
    rows: int
    digest: str
    tokenizer: str
    layout: int = 1  # what the file holds: 2 = the postings arrays (``Postings``)


LAYOUT = 2


def _feed(h, arr) -> None:
    """Hash an Arrow string or list-of-string array: its lengths, then its bytes (zero-copy)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_list(arr.type):
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)  # NaN: a null list
        h.update(np.nan_to_num(lengths).astype(np.int32).tobytes())
        _feed(h, arr.flatten())
        return
    if arr.null_count:
        arr = arr.fill_null("")
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset: arr.offset + len(arr) + 1]
    h.update(np.diff(offsets).tobytes())
    if len(arr) and offsets[-1] > offsets[0]:
        h.update(memoryview(arr.buffers()[2])[offsets[0]:offsets[-1]])


def digest(ids, content, tags) -> str:
    """A digest of what the term ids were made from: the ids, contents and tags in row order,
    as Arrow arrays (string, string, list of string)."""
    h = hashlib.blake2b(digest_size=16)
    for arr in (ids, content, tags):
        _feed(h, arr)
    return h.hexdigest()


def _one_row(values: pa.Array) -> pa.ListArray:
    """``values`` as the single row of a list column."""
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)


def _values(table: pa.Table, name: str, dtype) -> np.ndarray:
    return np.asarray(table.column(name).combine_chunks().values.to_numpy(
        zero_copy_only=False), dtype)


def write_terms(directory: Path, bm25, keys: np.ndarray, meta: TermsMeta) -> None:
    """Save the postings of ``keys`` (the snapshot's rows, in its order) from ``bm25``
    (:meth:`~maclaw_fast.index.bm25.Bm25Index.postings`); written by temp file + rename,
    without fsync: a lost or stale file only costs a tokenising reopen."""
    p = bm25.postings(keys)
    words = "\n".join(p.words)  # one string: a reopen splits it, far cheaper than a list
    if words.count("\n") != max(len(p.words) - 1, 0):
        return  # a token holding a newline (the tokenizer makes none): no file, reopens tokenise
    # one row: the vocabulary and every array side by side, so one file holds them all
    columns = {"vocab": pa.array([words], pa.large_string()), "terms": pa.array(p.terms),
               "tfs": pa.array(p.tfs), "offsets": pa.array(p.offsets),
               "lengths": pa.array(p.lengths), "indptr": pa.array(p.indptr),
               "docs": pa.array(p.docs), "doc_tfs": pa.array(p.doc_tfs)}
    table = pa.table({k: _one_row(v) for k, v in columns.items()}).replace_schema_metadata(
        {"maclaw_terms": msgspec.json.encode(meta)})
    path = directory / FILE_NAME
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def read_terms(directory: Path, meta: TermsMeta) -> Postings | None:
    """The postings saved for exactly ``meta`` (checked consistent), else None."""
    path = directory / FILE_NAME
    try:
        # the file's bytes in one read: cheaper than pyarrow opening and mapping the path
        with ipc.open_file(pa.py_buffer(path.read_bytes())) as reader:
            table = reader.read_all()
        raw = (table.schema.metadata or {}).get(b"maclaw_terms")
        if raw is None or msgspec.json.decode(raw, type=TermsMeta) != meta:
            return None
        words = table.column("vocab").combine_chunks().values[0].as_py()
        p = Postings(words=words.split("\n") if words else [],
                     terms=_values(table, "terms", np.int32),
                     tfs=_values(table, "tfs", np.float32),
                     offsets=_values(table, "offsets", np.int64),
                     lengths=_values(table, "lengths", np.int64),
                     indptr=_values(table, "indptr", np.int64),
                     docs=_values(table, "docs", np.int32),
                     doc_tfs=_values(table, "doc_tfs", np.float32))
        return p if p.lengths.shape[0] == meta.rows and p.check() else None
    except (OSError, pa.ArrowException, msgspec.DecodeError, KeyError, ValueError, TypeError):
        return None
