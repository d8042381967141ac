"""Snapshots: the store's columns as one Arrow IPC file followed by a checksum trailer, written by
temp file + fsync + atomic rename; the previous snapshot is kept as ``<name>.prev``.

File layout (format 2): the Arrow IPC file bytes, then 20 bytes ``b"MCLWSUM2"``, the IPC
length (u64 LE) and ``crc32`` of those bytes (u32 LE). The checksum is verified before pyarrow
parses a single offset: a flipped bit or overwritten range is caught here instead of being
served, or crashing the reader. Format 1 files (no trailer) are still read, with full
validation. Snapshot metadata is a msgspec Struct stored as JSON in the schema metadata, so new
fields (and new columns) can be added without breaking older files.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
import warnings
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from maclaw_fast.errors import CorruptStoreError
from maclaw_fast.persist.arrow_numpy import arrow_of, column_of, numpy_of, valid_of
from maclaw_fast.persist.checksum import crc32
from maclaw_fast.persist.strings import distinct_nonempty, value_codes
from maclaw_fast.records import Entry

ENTRY_SCHEMA_FIELDS = [
    ("id", pa.string()), ("content", pa.string()), ("category", pa.string()),
    ("tags", pa.list_(pa.string())), ("created_at", pa.float64()), ("updated_at", pa.float64()),
    ("access_count", pa.int64()), ("related_ids", pa.list_(pa.string())),
    ("related_strengths", pa.list_(pa.float64())), ("strength", pa.float64()),
    ("status", pa.string()), ("scope", pa.string()), ("pinned", pa.bool_()),
    ("compact_form", pa.string()),
]
# the columns every snapshot must have (the bulk reload reads them all); a column added later
# goes into ENTRY_SCHEMA_FIELDS only, with a default for older snapshots that lack it
REQUIRED_COLUMNS = tuple(name for name, _ in ENTRY_SCHEMA_FIELDS)
_TRAILER = struct.Struct("<8sQI")
_MAGIC = b"MCLWSUM2"
FORMAT = 2
MAX_DIM = 1 << 16  # no embedder has more dimensions; a larger number is damage


class SnapshotMeta(msgspec.Struct, kw_only=True):
    """What a snapshot says about itself (stored as JSON in the Arrow schema metadata)."""

    format: int = FORMAT
    seq: int = 0  # last journal sequence number included
    fingerprint: str = ""
    dim: int = 0
    meta: dict[str, str] = {}
    # conversation links (design R5): [prev id, next id] pairs and thread -> last id
    adjacency: list[list[str]] = []
    threads: dict[str, str] = {}
    # the journal written after this snapshot starts with a header of its seq (Journal.reset):
    # recovery can then tell a deleted or emptied journal from one with nothing new in it
    journal_headed: bool = False


def entries_table(entries: list[Entry], vectors: np.ndarray | None, dim: int,
                  meta: SnapshotMeta | None = None) -> pa.Table:
    """Entries (+ optional ``(n, dim)`` vectors with NaN rows for none) as an Arrow table."""
    cols = {name: [] for name, _ in ENTRY_SCHEMA_FIELDS}
    for e in entries:
        for name, _ in ENTRY_SCHEMA_FIELDS:
            v = getattr(e, name)
            cols[name].append(list(v) if isinstance(v, tuple) else v)
    arrays = [column_of(cols[name], t) for name, t in ENTRY_SCHEMA_FIELDS]
    names = [name for name, _ in ENTRY_SCHEMA_FIELDS]
    if vectors is not None and dim > 0:
        flat = arrow_of(np.ascontiguousarray(vectors, np.float32).reshape(-1))
        has = ~np.isnan(vectors[:, 0]) if len(entries) else np.zeros(0, bool)
        vec = pa.FixedSizeListArray.from_arrays(flat, dim, mask=arrow_of(~has))
        arrays.append(vec)
        names.append("embedding")
    metadata = {"maclaw": msgspec.json.encode(meta or SnapshotMeta())}
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(metadata)


def table_entries(table: pa.Table) -> tuple[list[Entry], np.ndarray | None]:
    """The inverse of :func:`entries_table`: entries and vectors (NaN rows where none).

    Only call it on a table that passed :func:`check_table`."""
    data = {name: table.column(name).to_pylist() for name, _ in ENTRY_SCHEMA_FIELDS
            if name in table.column_names}
    tuples = [n for n in ("tags", "related_ids", "related_strengths") if n in data]
    entries = []
    for i in range(table.num_rows):
        kw = {name: col[i] for name, col in data.items()}
        for name in tuples:
            kw[name] = tuple(kw[name] or ())
        if "compact_form" in kw:
            kw["compact_form"] = kw["compact_form"] or ""
        entries.append(Entry(**{k: v for k, v in kw.items() if v is not None}))
    vectors = None
    if "embedding" in table.column_names:
        col = table.column("embedding").combine_chunks()
        dim = col.type.list_size
        vectors = np.full((table.num_rows, dim), np.nan, dtype=np.float32)
        valid = valid_of(col)
        # flatten() skips null slots, so valid rows are packed in order
        flat = numpy_of(col.flatten()).astype(np.float32)
        if flat.size != int(valid.sum()) * dim:
            raise CorruptStoreError("snapshot embedding column has the wrong number of values")
        if valid.any():
            vectors[valid] = flat.reshape(-1, dim)
    return entries, vectors


def snapshot_meta(table: pa.Table | pa.Schema) -> SnapshotMeta:
    """The metadata of a snapshot table (or of its schema alone)."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    raw = (schema.metadata or {}).get(b"maclaw")
    if raw is None:
        raise CorruptStoreError("snapshot has no maclaw metadata")
    try:
        return msgspec.json.decode(raw, type=SnapshotMeta)
    except msgspec.DecodeError as exc:
        raise CorruptStoreError(f"snapshot metadata unreadable: {exc}") from None


def check_table(table: pa.Table, known: dict[str, tuple[str, ...]] | None = None) -> SnapshotMeta:
    """Refuse a table whose columns, sizes or values are not what :func:`entries_table` writes
    (``known`` maps a text column to its allowed values). Returns its metadata."""
    meta = snapshot_meta(table)
    if meta.seq < 0 or not 0 <= meta.dim <= MAX_DIM:
        raise CorruptStoreError(f"snapshot metadata out of range (seq {meta.seq}, dim {meta.dim})")
    types = dict(zip(table.schema.names, table.schema.types))
    for name, typ in ENTRY_SCHEMA_FIELDS:
        if name not in types:
            if name in REQUIRED_COLUMNS:
                raise CorruptStoreError(f"snapshot lacks column {name!r}")
            continue  # written before the column existed: the Entry default applies
        if not types[name].equals(typ):
            raise CorruptStoreError(f"snapshot column {name!r} has type {types[name]}, "
                                    f"expected {typ}")
    if "embedding" in types:
        typ = types["embedding"]
        if (not pa.types.is_fixed_size_list(typ) or not typ.value_type.equals(pa.float32())
                or typ.list_size != meta.dim):
            raise CorruptStoreError(f"snapshot embedding column has type {typ}, expected "
                                    f"{meta.dim} float32 values")
    try:
        table.validate(full=True)  # offsets, lengths, UTF-8
    except (pa.ArrowException, ValueError) as exc:
        raise CorruptStoreError(f"snapshot columns inconsistent: {exc}") from None
    for name in ("id", "content", "category", "status", "scope"):
        if name in types and table.column(name).null_count:
            raise CorruptStoreError(f"snapshot column {name!r} has missing values")
    if not distinct_nonempty(table.column("id")):
        raise CorruptStoreError("snapshot ids are empty or repeated")
    for name, allowed in (known or {}).items():
        if name in types:
            value_codes(table.column(name), allowed, name)
    return meta


def encode_snapshot(table: pa.Table) -> bytes:
    """The file bytes of ``table``: Arrow IPC + checksum trailer."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    body = sink.getvalue().to_pybytes()
    return body + _TRAILER.pack(_MAGIC, len(body), crc32(body))


def decode_snapshot(data: bytes, known: dict[str, tuple[str, ...]] | None = None) -> pa.Table:
    """Verify and parse snapshot bytes; :class:`CorruptStoreError` when damaged."""
    return open_snapshot(data, known)[0]


def open_snapshot(data: bytes, known: dict[str, tuple[str, ...]] | None = None
                  ) -> tuple[pa.Table, str]:
    """:func:`decode_snapshot`, and the file's identity: ``"<length>:<crc32>"`` of its Arrow
    bytes, what files derived from this snapshot (``terms.bin``) name it by."""
    body, crc, legacy = _checked_body(data)
    try:
        with ipc.open_file(pa.py_buffer(body)) as reader:
            table = reader.read_all()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptStoreError(f"snapshot not readable as Arrow: {exc}") from None
    meta = check_table(table, known)
    if legacy and meta.format >= FORMAT:
        raise CorruptStoreError("snapshot lost its checksum trailer")
    return table, _identity(len(body), crc)


def _checked_body(data: bytes) -> tuple[memoryview, int, bool]:
    """The Arrow bytes of a snapshot file once its trailer's checksum holds, their CRC-32, and
    whether the file is format 1 (no trailer: the whole file, its CRC computed here)."""
    size = len(data)
    if size >= _TRAILER.size and data[size - _TRAILER.size:size - _TRAILER.size + 8] == _MAGIC:
        _, length, crc = _TRAILER.unpack_from(data, size - _TRAILER.size)
        if length != size - _TRAILER.size:
            raise CorruptStoreError(f"snapshot length {size} does not match its trailer")
        body = memoryview(data)[:length]
        if crc32(body) != crc:
            raise CorruptStoreError("snapshot checksum mismatch")
        return body, crc, False
    body = memoryview(data)
    return body, crc32(body), True


def _identity(length: int, crc: int) -> str:
    return f"{length}:{crc:08x}"


def peek_meta(path: str | os.PathLike) -> SnapshotMeta | None:
    """The metadata of the snapshot at ``path`` once its checksum holds (None: no snapshot, or
    a damaged one, which opening the store will deal with)."""
    try:
        body, _, legacy = _checked_body(Path(path).read_bytes())
        with ipc.open_file(pa.py_buffer(body)) as reader:  # the schema only: no columns read
            meta = snapshot_meta(reader.schema)
        if legacy and meta.format >= FORMAT:
            return None
        return meta
    except (OSError, CorruptStoreError, MemoryError, pa.ArrowException, ValueError):
        return None


def write_snapshot(path: str | os.PathLike, table: pa.Table) -> str:
    """Atomically replace the snapshot at ``path`` (the old one becomes ``.prev``); returns its
    identity (see :func:`open_snapshot`)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    data = encode_snapshot(table)
    length, crc = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)[1:]
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    if path.exists():
        # the old snapshot becomes .prev through a second name, so there is no moment without
        # a snapshot at ``path`` (a crash between two renames would look like a lost file)
        link = path.with_name(path.name + ".prev.tmp")
        link.unlink(missing_ok=True)
        try:
            os.link(path, link)
            os.replace(link, path.with_name(path.name + ".prev"))
        except OSError:  # no hard links here: fall back to the copy
            shutil.copyfile(path, link)
            os.replace(link, path.with_name(path.name + ".prev"))
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return _identity(length, crc)


def fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def aside_name(path: Path) -> Path:
    """``<name>.corrupt.<timestamp>``, unique within this directory."""
    stamp = time.strftime("%Y%m%d%H%M%S")
    candidate = path.with_name(f"{path.name}.corrupt.{stamp}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.corrupt.{stamp}.{n}")
        n += 1
    return candidate


def _read_writable(path: Path) -> memoryview:
    """The file's bytes in a writable buffer, so a reopen can keep the embedding values where
    they were read instead of copying them (``memory.reload.writable_values``)."""
    with open(path, "rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = np.empty(size, np.uint8)
        got = fh.readinto(buf) if size else 0
        while got < size:  # a short read (a file still growing, a signal): finish it
            more = fh.readinto(memoryview(buf)[got:])
            if not more:
                raise CorruptStoreError(f"snapshot shorter than its size ({got} of {size} bytes)")
            got += more
    return memoryview(buf)


def read_snapshot(path: str | os.PathLike, known: dict[str, tuple[str, ...]] | None = None,
                  move: bool = True) -> tuple[pa.Table | None, list[str], str | None, str]:
    """The newest valid snapshot, what happened on the way, which file it came from and that
    file's identity (:func:`open_snapshot`).

    A snapshot that fails its checksum or cannot be read is moved aside as
    ``<name>.corrupt.<timestamp>`` (with a warning); then the ``.prev`` one is tried.
    ``(None, notes, None, "")`` means no valid snapshot exists. ``move=False`` (a read-only
    open) leaves a damaged file where it is and only reports it.
    """
    path = Path(path)
    notes: list[str] = []
    for candidate in (path, path.with_name(path.name + ".prev")):
        if not candidate.exists():
            continue
        try:
            if not candidate.is_file():
                raise CorruptStoreError("not a regular file")
            table, identity = open_snapshot(_read_writable(candidate), known)
            return table, notes, candidate.name, identity
        except (OSError, CorruptStoreError, MemoryError) as exc:
            if move:
                aside = aside_name(candidate)
                os.replace(candidate, aside)
                note = f"snapshot {candidate.name} unreadable ({exc}); moved to {aside.name}"
            else:
                note = f"snapshot {candidate.name} unreadable ({exc}); left in place (read-only)"
            notes.append(note)
            warnings.warn(note, RuntimeWarning, stacklevel=3)
    return None, notes, None, ""
