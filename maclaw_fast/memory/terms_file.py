"""The BM25 terms of a store's snapshot, saved beside it (``terms.arrow``) so a reopen loads
every entry's term ids instead of tokenising the store again (~70 % of a 500-entry reopen).

The file holds the vocabulary the ids refer to and one list of term ids per snapshot row (each id
repeated by its count). It is a cache, never a source of truth: it is used only when it was made
from the same snapshot (sequence number and a digest of the ids, contents and tags) by the same
tokenizer (:data:`tokenizer_version`); anything else, and any read error, means "tokenise".
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


def write_terms(directory: Path, bm25, keys: np.ndarray, meta: TermsMeta) -> None:
    """Save the terms of ``keys`` (the snapshot's rows, in its order) from ``bm25``; written by
    temp file + rename, without fsync: a lost or stale file only costs a tokenising reopen."""
    flat, lengths = bm25.doc_term_ids(keys)
    used, local = np.unique(flat, return_inverse=True)  # only the terms still in use
    words = bm25.vocab.tokens
    vocab = pa.array([words[i] for i in used.tolist()], pa.string())
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    terms = pa.ListArray.from_arrays(pa.array(offsets), pa.array(local.astype(np.int32)))
    # one row: the vocabulary and the per-row term lists side by side, so one file holds both
    table = pa.table({
        "vocab": pa.ListArray.from_arrays(pa.array([0, len(vocab)], pa.int32()), vocab),
        "terms": pa.ListArray.from_arrays(pa.array([0, len(terms)], pa.int32()), terms),
    }).replace_schema_metadata({"maclaw_terms": msgspec.json.encode(meta)})
    path = directory / FILE_NAME
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def read_terms(directory: Path, meta: TermsMeta) -> tuple[list[str], np.ndarray,
                                                           np.ndarray] | None:
    """(vocabulary, flat term ids, per-row lengths) saved for exactly ``meta``, else None."""
    path = directory / FILE_NAME
    try:
        with ipc.open_file(str(path)) as reader:
            table = reader.read_all()
        raw = (table.schema.metadata or {}).get(b"maclaw_terms")
        if raw is None or msgspec.json.decode(raw, type=TermsMeta) != meta:
            return None
        vocab = table.column("vocab").combine_chunks().values.to_pylist()
        terms = table.column("terms").combine_chunks().values
        offsets = terms.offsets.to_numpy()
        flat = terms.values.to_numpy().astype(np.int64)
        if (offsets.shape[0] != meta.rows + 1 or (flat.size and (
                int(flat.min()) < 0 or int(flat.max()) >= len(vocab)))):
            return None
        return vocab, flat, np.diff(offsets).astype(np.int64)
    except (OSError, pa.ArrowException, msgspec.DecodeError, KeyError, ValueError):
        return None
