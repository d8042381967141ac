"""On-disk state of a workspace index: an Arrow snapshot of the chunk table plus a journal.

``workspace-chunks.arrow`` holds every chunk (path, lines, hash, text and the analysed tokens as
int32 ids into a term list, so a reopen neither segments nor maps a token) and, in its schema
metadata, the term list, the tokenizer's version (a state made by another analysis is rebuilt),
the per-file records (size, mtime, sha256) and a generation number. Each later sync that changed something appends one line to
``workspace-journal.jsonl`` (msgspec JSON: updated file records, removed files, and the new chunks
of re-chunked files), so editing one file costs a few kilobytes, not a rewrite of the table. When
the journal outgrows a quarter of the snapshot, or a sync changes a large part of the workspace,
a new snapshot replaces both (temp file + rename, then the journal is truncated). Journal lines
carry the generation of the snapshot they follow: after a crash between the rename and the
truncation, stale lines are recognised and skipped; a torn last line is ignored.

The state is derived from the files, so any damage only costs a rebuild (and chunk vectors come
back from the embedding cache).
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import msgspec
import pyarrow as pa
from pyarrow import ipc

from maclaw_fast.persist.snapshot import aside_name
from maclaw_fast.text.tokenizer import TOKENIZER_VERSION

STATE_VERSION = 3  # 3: tokens stored as ids into the metadata's term list
CHUNKS_FILE = "workspace-chunks.arrow"
JOURNAL_FILE = "workspace-journal.jsonl"


class FileRecord(msgspec.Struct):
    """What the index knows about one file: stat data for the cheap check, sha256 for the real one."""

    path: str
    size: int
    mtime_ns: int
    hash: str


class ChunkRow(msgspec.Struct, array_like=True):
    """One persisted chunk; ``tokens`` are the analysed tokens joined by newlines."""

    path: str
    start_line: int
    end_line: int
    hash: str
    text: str
    tokens: str


class JournalEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One sync's changes: file records set or removed, and files whose chunks were replaced."""

    g: int
    files: list[FileRecord] = []
    removed: list[str] = []
    rechunked: list[str] = []
    chunks: list[ChunkRow] = []


class _Meta(msgspec.Struct):
    version: int
    generation: int
    chunking: tuple[int, int, int]
    files: list[FileRecord]
    vocab: list[str] = []
    tokenizer: str = ""  # TOKENIZER_VERSION of the tokens: another one means a rebuild


class LoadedChunks(msgspec.Struct):
    """The chunks of a loaded state, as columns. A chunk from the snapshot has its tokens as an
    int32 array of ids into ``vocab`` (``tokens`` None); one from the journal has them joined by
    newlines in ``tokens`` (``token_ids`` None)."""

    path: list[str]
    start_line: list[int]
    end_line: list[int]
    hash: list[str]
    text: list[str]
    token_ids: list
    tokens: list
    vocab: list[str]


_PLAIN_FIELDS = ("path", "start_line", "end_line", "hash", "text")
_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(JournalEntry)


def _arrow(values, type_: pa.DataType) -> pa.Array:
    if isinstance(values, pa.Array):
        return values if values.type == type_ else values.cast(type_)
    return pa.array(values, type_)


class IndexState:
    """Reads and writes the snapshot and journal under ``index_dir``.

    Examples
    --------
    >>> import tempfile
    >>> st = IndexState(tempfile.mkdtemp(), (400, 80, 4))
    >>> cols = {"path": ["a.md"], "start_line": [1], "end_line": [2], "hash": ["h"],
    ...         "text": ["some text"], "token_ids": [[0, 1]]}
    >>> st.write_snapshot(cols, [FileRecord("a.md", 4, 0, "x")], ["some", "text"])
    >>> files, chunks = st.load()
    >>> chunks.text, chunks.token_ids[0].tolist(), chunks.vocab
    (['some text'], [0, 1], ['some', 'text'])
    >>> st.append(JournalEntry(g=st.generation, removed=["a.md"]))
    >>> files, chunks = st.load()
    >>> files, chunks.text
    ({}, [])
    """

    def __init__(self, index_dir: str | os.PathLike, chunking: tuple[int, int, int]) -> None:
        self.dir = Path(index_dir)
        self.chunking = tuple(chunking)
        self.generation = 0
        self.snapshot_bytes = 0
        self.journal_bytes = 0
        self.has_snapshot = False  # a usable one: loaded, or written by this process
        self.unread_from: int | None = None  # where the journal stopped decoding, if it did

    @property
    def chunks_path(self) -> Path:
        return self.dir / CHUNKS_FILE

    @property
    def journal_path(self) -> Path:
        return self.dir / JOURNAL_FILE

    @property
    def synced_at(self) -> float | None:
        """When the state was last written (epoch seconds), ``None`` without state."""
        times = [p.stat().st_mtime for p in (self.chunks_path, self.journal_path) if p.exists()]
        return max(times) if times else None

    def load(self) -> tuple[dict[str, FileRecord], LoadedChunks] | None:
        """Files and chunks as of the last sync, or ``None`` when there is no usable state."""
        try:
            with ipc.open_file(str(self.chunks_path)) as reader:
                table = reader.read_all()
            meta = msgspec.json.decode((table.schema.metadata or {}).get(b"meta", b""),
                                       type=_Meta)
        except (OSError, pa.ArrowException, msgspec.DecodeError, ValueError):
            return None
        if (meta.version != STATE_VERSION or tuple(meta.chunking) != self.chunking
                or meta.tokenizer != TOKENIZER_VERSION):  # never mix two analyses' terms
            return None
        self.generation = meta.generation
        self.has_snapshot = True
        self.snapshot_bytes = self.chunks_path.stat().st_size
        files = {f.path: f for f in meta.files}
        cols = [table.column(n).to_pylist() for n in _PLAIN_FIELDS]
        ids = table.column("token_ids").combine_chunks()
        flat = ids.values.to_numpy(zero_copy_only=False)
        offsets = ids.offsets.to_numpy()
        # a chunk is (columns..., token_ids, tokens): snapshot ones by index, journal ones whole
        by_path: dict[str, list] = {}
        for i, path in enumerate(cols[0]):
            by_path.setdefault(path, []).append(i)
        for entry in self._journal():
            for rel in entry.removed:
                files.pop(rel, None)
                by_path.pop(rel, None)
            for rec in entry.files:
                files[rec.path] = rec
            for rel in entry.rechunked:
                by_path[rel] = []
            for row in entry.chunks:
                by_path.setdefault(row.path, []).append(row)
        out = LoadedChunks([], [], [], [], [], [], [], list(meta.vocab))
        plain = (out.path, out.start_line, out.end_line, out.hash, out.text)
        for rel, chunks in by_path.items():
            if rel not in files:
                continue
            for c in chunks:
                if isinstance(c, int):
                    for column, values in zip(plain, cols):
                        column.append(values[c])
                    out.token_ids.append(flat[offsets[c]:offsets[c + 1]])
                    out.tokens.append(None)
                else:
                    for column, name in zip(plain, _PLAIN_FIELDS):
                        column.append(getattr(c, name))
                    out.token_ids.append(None)
                    out.tokens.append(c.tokens)
        return files, out

    def _journal(self):
        try:
            data = self.journal_path.read_bytes()
        except OSError:
            return
        self.journal_bytes = len(data)
        self.unread_from = None
        at = 0
        for line in data.splitlines(keepends=True):
            try:
                entry = _DEC.decode(line)
            except msgspec.DecodeError:
                # cut short or damaged: everything before it stands, nothing after it is
                # applied (a later line may build on this one's changes)
                self.unread_from = at
                return
            at += len(line)
            if entry.g == self.generation:
                yield entry

    def _set_aside_unread(self) -> None:
        """Copy the journal's undecodable tail aside and cut it off (before anything is written
        after it)."""
        start, self.unread_from = self.unread_from, None
        path = self.journal_path
        try:
            size = path.stat().st_size
        except OSError:
            return
        if start is None or start >= size:
            return
        aside = aside_name(path)
        with open(path, "rb") as src, open(aside, "wb") as dst:
            src.seek(start)
            shutil.copyfileobj(src, dst)
        with open(aside, "rb") as fh:
            tail = fh.read()
        if b"\n" in tail:  # more than one unfinished last line: damage
            warnings.warn(f"workspace index: {len(tail)} bytes of {path} did not decode "
                          f"(damaged); a copy is in {aside.name}. The files they covered are "
                          "read again by the next sync.", RuntimeWarning, stacklevel=4)
        os.truncate(path, start)
        self.journal_bytes = start

    def append(self, entry: JournalEntry) -> None:
        """Append one sync's changes (flushed, not fsynced: the state can always be rebuilt)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.unread_from is not None:
            self._set_aside_unread()
        line = _ENC.encode(entry) + b"\n"
        with open(self.journal_path, "ab") as fh:
            fh.write(line)
        self.journal_bytes += len(line)

    def needs_snapshot(self) -> bool:
        return self.journal_bytes > max(1 << 20, self.snapshot_bytes // 4)

    def write_snapshot(self, columns: dict, files: list[FileRecord], vocab: list[str]) -> None:
        """Replace the snapshot by the chunk ``columns`` (``path``, ``start_line``,
        ``end_line``, ``hash``, ``text`` and ``token_ids``: lists of ids into ``vocab``, or an
        Arrow list array) and ``files``, and empty the journal."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.generation += 1
        meta = _Meta(STATE_VERSION, self.generation, self.chunking, files, vocab,
                     TOKENIZER_VERSION)
        big = pa.large_string()
        types = {"path": pa.string(), "start_line": pa.int32(), "end_line": pa.int32(),
                 "hash": pa.string(), "text": big, "token_ids": pa.list_(pa.int32())}
        table = pa.table({name: _arrow(columns[name], types[name]) for name in types},
                         metadata={"meta": msgspec.json.encode(meta)})
        tmp = self.chunks_path.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, self.chunks_path)
        self.has_snapshot = True
        self.snapshot_bytes = self.chunks_path.stat().st_size
        if self.unread_from is not None:
            self._set_aside_unread()
        with open(self.journal_path, "wb"):
            pass  # lines of the previous generation are now in the snapshot
        self.journal_bytes = 0
