"""Snapshots: the store's columns as one Arrow IPC file, written by temp file + fsync + atomic
rename; the previous snapshot is kept as ``<name>.prev`` so a corrupt newest one has a fallback."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from maclaw_fast.errors import CorruptStoreError
from maclaw_fast.records import Entry

ENTRY_SCHEMA_FIELDS = [
    ("id", pa.string()), ("content", pa.string()), ("category", pa.string()),
    ("tags", pa.list_(pa.string())), ("created_at", pa.float64()), ("updated_at", pa.float64()),
    ("access_count", pa.int64()), ("related_ids", pa.list_(pa.string())),
    ("related_strengths", pa.list_(pa.float64())), ("strength", pa.float64()),
    ("status", pa.string()), ("scope", pa.string()), ("pinned", pa.bool_()),
    ("compact_form", pa.string()),
]


class SnapshotMeta(msgspec.Struct, kw_only=True):
    """What a snapshot says about itself (stored as JSON in the Arrow schema metadata)."""

    format: int = 1
    seq: int = 0  # last journal sequence number included
    fingerprint: str = ""
    dim: int = 0
    meta: dict[str, str] = {}
    # conversation links (SPEC R5): [prev id, next id] pairs and thread -> last id
    adjacency: list[list[str]] = []
    threads: dict[str, str] = {}


def entries_table(entries: list[Entry], vectors: np.ndarray | None, dim: int,
                  meta: SnapshotMeta | None = None) -> pa.Table:
    """Entries (+ optional ``(n, dim)`` vectors with NaN rows for none) as an Arrow table."""
    cols = {name: [] for name, _ in ENTRY_SCHEMA_FIELDS}
    for e in entries:
        for name, _ in ENTRY_SCHEMA_FIELDS:
            v = getattr(e, name)
            cols[name].append(list(v) if isinstance(v, tuple) else v)
    arrays = [pa.array(cols[name], type=t) for name, t in ENTRY_SCHEMA_FIELDS]
    names = [name for name, _ in ENTRY_SCHEMA_FIELDS]
    if vectors is not None and dim > 0:
        flat = pa.array(np.ascontiguousarray(vectors, np.float32).reshape(-1))
        has = ~np.isnan(vectors[:, 0]) if len(entries) else np.zeros(0, bool)
        vec = pa.FixedSizeListArray.from_arrays(flat, dim, mask=pa.array(~has))
        arrays.append(vec)
        names.append("embedding")
    metadata = {"maclaw": msgspec.json.encode(meta or SnapshotMeta())}
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(metadata)


def table_entries(table: pa.Table) -> tuple[list[Entry], np.ndarray | None]:
    """The inverse of :func:`entries_table`: entries and vectors (NaN rows where none)."""
    data = {name: table.column(name).to_pylist() for name, _ in ENTRY_SCHEMA_FIELDS}
    entries = []
    for i in range(table.num_rows):
        kw = {name: data[name][i] for name, _ in ENTRY_SCHEMA_FIELDS}
        for name in ("tags", "related_ids", "related_strengths"):
            kw[name] = tuple(kw[name] or ())
        entries.append(Entry(**kw))
    vectors = None
    if "embedding" in table.column_names:
        col = table.column("embedding").combine_chunks()
        dim = col.type.list_size
        flat = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
        vectors = np.full((table.num_rows, dim), np.nan, dtype=np.float32)
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        # flatten() skips null slots, so valid rows are packed in order
        vectors[valid] = flat.reshape(-1, dim)[: valid.sum()] if valid.any() else vectors[valid]
    return entries, vectors


def snapshot_meta(table: pa.Table) -> SnapshotMeta:
    raw = (table.schema.metadata or {}).get(b"maclaw")
    if raw is None:
        raise CorruptStoreError("snapshot has no maclaw metadata")
    return msgspec.json.decode(raw, type=SnapshotMeta)


def write_snapshot(path: str | os.PathLike, table: pa.Table) -> None:
    """Atomically replace the snapshot at ``path`` (the old one becomes ``.prev``)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if path.exists():
        os.replace(path, path.with_name(path.name + ".prev"))
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _read(path: Path) -> pa.Table:
    with ipc.open_file(str(path)) as reader:
        table = reader.read_all()
    snapshot_meta(table)
    missing = {n for n, _ in ENTRY_SCHEMA_FIELDS} - set(table.column_names)
    if missing:
        raise CorruptStoreError(f"snapshot lacks columns {sorted(missing)}")
    return table


def read_snapshot(path: str | os.PathLike) -> tuple[pa.Table | None, list[str]]:
    """The newest readable snapshot and what happened on the way (for the caller to report).

    A snapshot that cannot be read is moved aside as ``<name>.corrupt.<timestamp>``; then the
    ``.prev`` one is tried. ``(None, notes)`` means no valid snapshot exists.
    """
    path = Path(path)
    notes: list[str] = []
    for candidate in (path, path.with_name(path.name + ".prev")):
        if not candidate.exists():
            continue
        try:
            return _read(candidate), notes
        except (OSError, pa.ArrowException, CorruptStoreError, msgspec.DecodeError,
                ValueError) as exc:
            aside = candidate.with_name(f"{candidate.name}.corrupt.{time.strftime('%Y%m%d%H%M%S')}")
            os.replace(candidate, aside)
            note = f"snapshot {candidate.name} unreadable ({exc}); moved to {aside.name}"
            notes.append(note)
            warnings.warn(note, RuntimeWarning, stacklevel=3)
    return None, notes
