"""Reopening a store from its snapshot in bulk: columns straight from Arrow into the entry table,
vectors and text kept in the buffer the snapshot was read into, BM25 from the saved term ids
(``terms_file``) when they match, the graph from the persisted edges. The result equals inserting
the entries one by one (the tests compare both), at a fraction of the cost: a 500-entry store
reopens in ~3.5 ms instead of ~30.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.config import CATEGORIES
from maclaw_fast.memory.columns import SCOPE, STATUS
from maclaw_fast.memory.packed import PackedText, offsets
from maclaw_fast.memory.terms_file import read_terms, terms_meta, write_terms
from maclaw_fast.persist.arrow_numpy import numpy_of, one_array, valid_of
from maclaw_fast.persist.strings import value_codes
from maclaw_fast.text.tokenizer import analysed_text, tokenize


def _numpy(table: pa.Table, name: str, dtype) -> np.ndarray:
    return numpy_of(table.column(name)).astype(dtype, copy=False)


def load_snapshot(store, table: pa.Table, *, vectors: bool, seq: int, directory=None,
                  snapshot_id: str = "") -> bool:
    """Fill the empty ``store`` from snapshot ``table`` (``vectors``: its embedding column may be
    used; ``seq``, ``snapshot_id``: the snapshot's, which ``terms.bin`` in ``directory`` must
    match). Returns whether those saved term ids were used (else the entries were tokenised)."""
    n = table.num_rows
    t = store.table
    text = [one_array(table.column(name))
            for name in ("id", "content", "tags", "compact_form")]
    # budget tokens: utf-8 bytes // 4 of compact_form, else content (design §6)
    compact_len = np.diff(offsets(text[3])).astype(np.int64)
    shown_len = np.where(compact_len > 0, compact_len, np.diff(offsets(text[1])))
    numeric = {  # codes = positions in these tuples (columns.CATEGORY_CODE, STATUS_CODE...)
        "category": value_codes(table.column("category"), CATEGORIES, "category"),
        "status": value_codes(table.column("status"), STATUS, "status"),
        "scope": value_codes(table.column("scope"), SCOPE, "scope"),
        "access": _numpy(table, "access_count", np.int64),
        "created_at": _numpy(table, "created_at", np.float64),
        "updated_at": _numpy(table, "updated_at", np.float64),
        "strength": _numpy(table, "strength", np.float64),
        "pinned": _numpy(table, "pinned", np.bool_),
        "tokens": shown_len // 4,
    }
    # the vectors first: kept in the buffer the snapshot was read into, they keep all of it
    # alive, and the text then needs no copy either
    adopted = False
    if vectors and store.dim and "embedding" in table.column_names:
        adopted = _load_vectors(store, one_array(table.column("embedding")), n)
    if PackedText.packable(*text):  # the text stays packed until a use needs Python lists
        t.load_packed(PackedText(*text, share=adopted), numeric)
    else:
        t.load_rows(text[0].to_pylist(), text[1].to_pylist(),
                    [tuple(x) if x else () for x in text[2].to_pylist()], text[3].to_pylist(),
                    numeric)
    store.graph.reserve(n)
    loaded = _load_bm25(store, text[:3], seq, directory, snapshot_id)
    _load_edges(store, table)
    return loaded


def _load_vectors(store, col: pa.FixedSizeListArray, n: int) -> bool:
    """Returns whether the snapshot's buffer was adopted (kept alive by the vector column)."""
    held = writable_values(col, store.dim)
    if held is not None:  # the snapshot's own bytes, read into a writable buffer: no copy
        store.vectors.adopt(held)
        return True
    valid = valid_of(col)
    flat = numpy_of(col.flatten())  # the valid rows' values, in order
    if col.type.list_size != store.dim or not valid.any():
        return False
    rows = np.flatnonzero(valid)
    store.vectors.reserve(n)
    store.vectors.set_rows(rows, flat.reshape(-1, store.dim))
    return False


def writable_values(col: pa.FixedSizeListArray, dim: int) -> np.ndarray | None:
    """The ``(n, dim)`` float32 values of a null-free embedding column as a writable view of
    the buffer the snapshot was read into (``persist.snapshot.read_snapshot`` reads into a
    writable one), or None (nulls, another size, an immutable source, or a file much larger
    than its vectors: keeping all of it alive for them would cost more than the copy)."""
    n = len(col)
    if n == 0 or col.null_count or col.type.list_size != dim:
        return None
    values = col.values
    buf = values.buffers()[1]
    if buf is None or values.null_count:
        return None
    root = buf
    while root.parent is not None:
        root = root.parent
    nbytes = n * dim * 4
    if not root.is_mutable or root.size > nbytes + nbytes // 4:
        return None
    start = buf.address + (values.offset + col.offset * dim) * 4 - root.address
    if start < 0 or start + nbytes > root.size or start % 4:
        return None
    return np.frombuffer(root, np.uint8)[start:start + nbytes].view(np.float32).reshape(n, dim)


def _load_bm25(store, columns, seq: int, directory, snapshot_id: str) -> bool:
    n = len(columns[0])
    keys = np.arange(n)
    bm25 = store.bm25
    if directory is not None and snapshot_id:
        saved = read_terms(directory, terms_meta(seq, n, snapshot_id, _documents(store)))
        if saved is not None and bm25.load_postings(keys, saved):
            return True
    # the replies' questions are added once the conversation links are back (memory.replies)
    bm25.add_many(keys, [tokenize(analysed_text(c, tuple(tg) if tg else ()))
                         for c, tg in zip(columns[1].to_pylist(), columns[2].to_pylist())])
    return False


def _documents(store) -> str:
    """What the BM25 documents hold beside the text (a terms.bin made otherwise is not used)."""
    w = store.config.graph.reply_weight
    return f"replies {w!r}" if w else ""


def _load_edges(store, table: pa.Table) -> None:
    col = one_array(table.column("related_ids"))
    off = offsets(col)
    if off[-1] == off[0]:  # no edges (nulls have empty ranges)
        return
    strengths = one_array(table.column("related_strengths"))
    if (strengths.null_count or col.values.null_count or strengths.values.null_count
            or not np.array_equal(off - off[0], (s_off := offsets(strengths)) - s_off[0])):
        _load_edges_by_id(store, table)  # not as this build writes them: entry by entry
        return
    ids = one_array(table.column("id"))
    targets = col.values.slice(int(off[0]), int(off[-1] - off[0]))
    # each target id's row (-1: not in the store), in C: no id → row dict for a reopen
    rows = numpy_of(pc.index_in(targets, value_set=ids), fill=-1).astype(np.int64)
    weights = numpy_of(strengths.values.slice(int(s_off[0]), int(s_off[-1] - s_off[0])))
    store.graph.load_edges(off - off[0], rows, weights)


def _load_edges_by_id(store, table: pa.Table) -> None:
    t = store.table
    row_of = t.row_of
    related = table.column("related_ids").to_pylist()
    strengths = table.column("related_strengths").to_pylist()
    for row, (others, weights) in enumerate(zip(related, strengths)):
        if not others:
            continue
        pairs = [(row_of[o], w) for o, w in zip(others, weights or ()) if o in row_of]
        store.graph.set_edges(row, [p[0] for p in pairs], [p[1] for p in pairs])


def save_terms(store, directory, seq: int, snapshot_id: str) -> None:
    """Write ``terms.bin`` for the snapshot just written at ``seq`` (store order) whose
    checksum is ``snapshot_id``."""
    rows = store.table.live_rows()
    write_terms(directory, store.bm25, rows,
                terms_meta(seq, int(rows.shape[0]), snapshot_id, _documents(store)))
