"""An append-only journal of MessagePack records framed by length + CRC32 (design §8).

A record is written whole before the mutating call returns. On open every intact record is
found even past damage: a record that fails its checksum (a flipped bit, an overwritten range,
a torn write) is skipped and the reader resynchronises on the next offset where a frame's
length and CRC agree, so one bad record never takes the later ones with it. After a snapshot
the journal is rotated to ``<name>.prev`` (it holds the records between the previous snapshot
and this one), so a damaged newest snapshot can be rebuilt from ``snapshot.prev`` plus both
journals without losing anything.

Records are tagged msgspec unions: a new operation is a new tag, and readers of older files
never see it; a new field with a default is read from older records unchanged.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from pathlib import Path

import msgspec
import numpy as np

from maclaw_fast.records import Entry
from maclaw_fast.timers import Timer, later

_FRAME = struct.Struct("<II")  # payload length, crc32(payload)
_MAX_RECORD = 1 << 30
_MAX_TORN = 1 << 26  # an unfinished last write declares at most this many payload bytes
_RECORD_START = 0x92  # msgpack: an array of two (a record's seq and ops) starts every payload


class PutOp(msgspec.Struct, tag="put", array_like=True):
    """Insert or replace an entry; its vector as raw float32 bytes when ``vector_set`` (None =
    no vector), else the stored vector stays."""

    entry: Entry
    vector: bytes | None = None
    vector_set: bool = True


class EdgesOp(msgspec.Struct, tag="edges", array_like=True):
    """One node's outgoing graph edges after a link changed them."""

    id: str
    related_ids: list[str]
    related_strengths: list[float]


class LinkOp(msgspec.Struct, tag="link", array_like=True):
    """``graph.link(id, other, strength)`` for each other: replayed in order on the same state it
    reproduces both directions' edges (the link rule is deterministic)."""

    id: str
    others: list[str]
    strengths: list[float]


class DeleteOp(msgspec.Struct, tag="del", array_like=True):
    id: str


class TouchOp(msgspec.Struct, tag="touch", array_like=True):
    """Reinforcement / touch of many entries at once (recall returns up to 20)."""

    ids: list[str]
    access_add: int = 1
    strength_add: float = 0.0
    updated_at: float | None = None


class MetaOp(msgspec.Struct, tag="meta", array_like=True):
    key: str
    value: str


class AdjacentOp(msgspec.Struct, tag="adj", array_like=True):
    """Entry ``id`` became the last of conversation ``thread`` ("" = saves without a thread),
    linked after ``prev`` when not "" (design R5)."""

    id: str
    thread: str
    prev: str = ""


class ConversationOp(msgspec.Struct, tag="conv", array_like=True):
    """The conversation neighbours (ids, "" = none) an archived entry had in the store when it
    was archived (the archive's journal; design R5 links, walked by archive search)."""

    id: str
    prev: str = ""
    next: str = ""


Op = PutOp | EdgesOp | LinkOp | DeleteOp | TouchOp | MetaOp | AdjacentOp | ConversationOp


class JournalRecord(msgspec.Struct, array_like=True):
    seq: int
    ops: list[Op]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JournalRecord)


class Journal:
    """The write-ahead journal of one store.

    Parameters
    ----------
    path : the journal file.
    fsync : ``always`` (fsync every record), ``interval`` (at most ``interval_s`` of exposure: a
        background flush follows a write) or ``never``.
    """

    def __init__(self, path: str | os.PathLike, fsync: str = "interval",
                 interval_s: float = 1.0) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.interval_s = float(interval_s)
        self._fh = None
        self._lock = threading.Lock()
        self._last_sync = 0.0
        self._pending = False
        self._unsynced = False  # appended since the last fsync
        self._timer: Timer | None = None
        self.size = 0
        self._appended = False  # records since the last reset (the header is none)
        self._header_seq: int | None = None  # the header this process last wrote

    # ------------------------------------------------------------------ reading
    def read(self) -> JournalScan:
        """Every intact record of the journal file (see :func:`scan_journal`)."""
        return scan_journal(self.path)

    # ------------------------------------------------------------------ writing
    def open_for_append(self, valid_length: int) -> None:
        """Get ready to append after ``valid_length`` bytes, cutting anything beyond (a torn
        tail). The file itself is opened by the first append and closed again by
        :meth:`reset`: an idle store holds no journal descriptor, and opening one without a
        torn tail costs no fsync."""
        try:  # (no directory made here: the first append makes it, _handle)
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            size = 0
        if size > valid_length:
            with open(self.path, "rb+") as fh:
                fh.truncate(valid_length)
                os.fsync(fh.fileno())
        self.size = valid_length

    def _handle(self):
        """The open journal file (opened on demand, appending; lock held)."""
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab+")
        return self._fh

    def append(self, record: JournalRecord) -> None:
        payload = _encoder.encode(record)
        frame = _FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        with self._lock:
            # straight to the descriptor (opened O_APPEND): the file object's buffer would only
            # be flushed at once, and each layer costs ~1 µs of a 2 µs append
            fd = self._handle().fileno()
            view = memoryview(frame)
            while view:
                view = view[os.write(fd, view):]
            self.size += len(frame)
            self._appended = True
            self._unsynced = True
            if self.fsync == "always":
                os.fsync(fd)
                self._unsynced = False
            elif self.fsync == "interval":
                now = time.monotonic()
                if now - self._last_sync >= self.interval_s:
                    os.fsync(fd)
                    self._last_sync = now
                    self._pending = self._unsynced = False
                elif not self._pending:
                    self._pending = True
                    self._timer = later(self.interval_s, self.sync)  # the shared timer thread

    def sync(self) -> None:
        """fsync what was appended since the last fsync (nothing to do: no system call)."""
        with self._lock:
            if self._fh is not None and not self._fh.closed and self._unsynced:
                os.fsync(self._fh.fileno())
                self._last_sync = time.monotonic()
                self._unsynced = False
            self._pending = False

    def reset(self, base_seq: int, force: bool = False) -> None:
        """Start a new journal after a snapshot that holds everything up to ``base_seq``, and
        close it; the records move to ``<name>.prev``, the bridge from the previous snapshot (a
        damaged newest snapshot is rebuilt from ``.prev`` plus both journals). The new journal
        starts with a header record (seq ``base_seq``, no operations): a journal that lacks it
        or ends before the snapshot was deleted, emptied or replaced (recovery checks)."""
        with self._lock:
            if not self._appended and not force and self._has_header(base_seq):
                return  # nothing was appended since the header was written
            if self._fh is not None:
                os.fsync(self._fh.fileno())
                self._fh.close()
                self._fh = None
            if force and not self.path.exists():
                self.path.touch()  # an empty bridge replaces a damaged .prev
            # the new journal is complete on disk before it replaces the old one: a crash
            # leaves either journal in place (recovery finishes an interrupted swap)
            fresh = new_path(self.path)
            payload = _encoder.encode(JournalRecord(base_seq, []))
            with open(fresh, "wb") as fh:
                fh.write(_FRAME.pack(len(payload), zlib.crc32(payload)) + payload)
                fh.flush()
                os.fsync(fh.fileno())
            if self.path.exists():
                os.replace(self.path, prev_path(self.path))
            os.replace(fresh, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            self._unsynced = self._appended = False
            self.size = self.path.stat().st_size
            self._header_seq = base_seq

    def _has_header(self, base_seq: int) -> bool:
        return self._header_seq == base_seq and self.path.exists()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.sync()
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def prev_path(path: Path) -> Path:
    return path.with_name(path.name + ".prev")


def new_path(path: Path) -> Path:
    """Where :meth:`Journal.reset` writes the next journal before it takes the old one's place."""
    return path.with_name(path.name + ".new")


def finish_reset(path: Path) -> None:
    """Complete a :meth:`Journal.reset` a crash interrupted: a new journal written but not yet
    in place replaces a missing one; beside an existing one it is stale (the old journal still
    reaches the snapshot) and goes."""
    fresh = new_path(path)
    if fresh.is_file():
        if path.exists():
            fresh.unlink()
        else:
            os.replace(fresh, path)


class JournalScan(msgspec.Struct):
    """What :func:`scan_journal` found: intact records in file order, where the last one ends,
    and the byte ranges it had to skip (``torn``: the only damage is an unfinished last
    frame, or zero bytes after the last record, which a crash mid-write leaves)."""

    records: list[JournalRecord]
    end: int
    skipped: list[tuple[int, int]]
    size: int = 0
    torn: bool = False

    @property
    def damaged(self) -> bool:
        return bool(self.skipped) and not self.torn


def _frame_at(data: bytes, pos: int) -> tuple[JournalRecord, int] | None:
    if pos + _FRAME.size > len(data):
        return None
    length, crc = _FRAME.unpack_from(data, pos)
    end = pos + _FRAME.size + length
    if length == 0 or length > _MAX_RECORD or end > len(data):
        return None
    payload = memoryview(data)[pos + _FRAME.size:end]
    if zlib.crc32(payload) != crc:
        return None
    try:
        return _decoder.decode(payload), end
    except msgspec.DecodeError:
        return None


def _plausible_starts(data: bytes) -> np.ndarray:
    """Every offset whose little-endian u32 length field is non-zero and fits in the rest of
    the file: the only places a frame can start (a resync visits these, not every byte)."""
    n = len(data) - _FRAME.size + 1
    if n <= 0:
        return np.zeros(0, np.int64)
    raw = np.frombuffer(data, np.uint8).astype(np.uint32)
    lengths = raw[:n] | raw[1:n + 1] << 8 | raw[2:n + 2] << 16 | raw[3:n + 3] << 24
    room = len(data) - _FRAME.size - np.arange(n, dtype=np.int64)
    return np.flatnonzero((lengths > 0) & (lengths <= room))


def scan_journal(path: Path) -> JournalScan:
    """Every intact record of the file at ``path``, resynchronising past damage.

    A frame is accepted only when its length fits, its CRC32 matches and the payload decodes,
    so a random offset inside damage is taken for a record with odds of about 2^-32.
    """
    if not path.is_file():
        return JournalScan([], 0, [])
    data = path.read_bytes()
    records: list[JournalRecord] = []
    skipped: list[tuple[int, int]] = []
    pos = end = 0
    bad_from = -1
    starts = None  # offsets whose length field fits the file, computed at the first damage
    while pos + _FRAME.size <= len(data):
        found = _frame_at(data, pos)
        if found is None:
            if bad_from < 0:
                bad_from = pos
            if starts is None:
                starts = _plausible_starts(data)
            k = int(np.searchsorted(starts, pos, side="right"))
            pos = int(starts[k]) if k < len(starts) else len(data)
            continue
        if bad_from >= 0:
            skipped.append((bad_from, pos))
            bad_from = -1
        records.append(found[0])
        pos = end = found[1]
    if end < len(data):
        if bad_from < 0 or bad_from > end:
            bad_from = end
        skipped.append((bad_from, len(data)))
    torn = False
    if len(skipped) == 1 and skipped[0][1] == len(data) and skipped[0][0] == end:
        tail = data[end:]
        if len(tail) < _FRAME.size or not tail.strip(b"\0"):
            torn = True
        else:  # the start of one frame whose write did not finish, not bytes of another kind
            length = _FRAME.unpack_from(tail)[0]
            torn = (0 < length <= _MAX_TORN and _FRAME.size + length > len(tail)
                    and (len(tail) == _FRAME.size or tail[_FRAME.size] == _RECORD_START))
    return JournalScan(records, end, skipped, len(data), torn)
